// qkscope/cpu/row_shift.hpp — the tiled backward's D_i = sum_j P_ij dP_ij per query row
// (flash_backward.hpp, pass B), held as a shift and a centred sum, and the rows whose P are
// taken again in double where T's P cannot hold dP - D.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/cpu/tile_ops.hpp"

namespace qkscope::cpu::detail {

/// D_i = sum_j P_ij dP_ij held as b_i + c_i: b_i the dP of the row's key of largest P (the
/// lowest index among ties) and c_i = sum_j P_ij (dP_ij - b_i) (P summing to 1), as the core's
/// softmax_backward shifts dp (norm/row.hpp). dP - D = (dP - b) - c is then exact where dP are
/// tied (0) and keeps a difference that D alone would round away: dP = [-5e35, 0, -5e35] with
/// P = [1, 6e-38, 6e-38] has dP_0 - D = -5e35 * 6e-38 = -0.03, below double's spacing at 5e35
/// (fuzzer finding: dQ off by 67%). The key that carries the row has dP - b = 0, so c holds
/// only the other keys' small shares: b from the first key with P > 0 left every gradient 1e5
/// times the bar where that key's P underflowed beside dP = 4.6e34 (review). Both in double:
/// rounding D to T first cost dK 1e-5 relative with dP near 1e2 and dP - D near 1e-3 (an
/// earlier finding).
///
/// Which P the row's dx and D take in double (`p64`, per row): none (0); those below T's least
/// normal number (1: exact_weight); or every P > 0 (2), where some (dP_ij - b_i) - c_i of the row
/// lies within 2^-20 of sum_j P_ij |dP_ij - b_i| (cancelling_row): T's rounding of P (~2^-23 of each
/// term) then holds all the bits of that difference. Such a row's P are exp((z_j - top) / tau)
/// / (their sum) from its logits in double (z64: the scorer's raw scores in double through the
/// modifiers where it has them, else T's z), top the largest. dP_0j = 1.66e35 [0, 0, 1, 1, 3]
/// over additive logits 2.7e-8 apart has dP_02 - D = 1.66e35 (P_0 + P_1 - 2 P_4) = 1.8e27,
/// below float P's resolution near 0.2: the tiled dW_k was -4.1e28 where it is -1.9e58, past
/// float, while the core refused (fuzzer findings, `additive-core-overflow-tiled-returns`);
/// logits 2.7e-10 apart also needed the scores in double (the fused tanh's error is ~1e-8).
/// Random rows rarely have such an entry (none of 9,216 at L_k = 1024, tau 0.05 to 1:
/// native/bench/NOTES.md, "Rows taken in double").
struct RowShift {
  Eigen::VectorXd base, centred;  // b_i, c_i; (L_q)
  std::vector<unsigned char> p64;  // (L_q) 0, 1 or 2, as above (3: marked by row_shifts, pending)
  Eigen::VectorXd top64, inv64;    // (L_q) rows of kind 2: the largest z64, 1 / sum exp((z64 - top) / tau)
  double dp_minus_d(double dp, Eigen::Index i) const { return (dp - base(i)) - centred(i); }
  bool exact(Eigen::Index i) const { return p64[std::size_t(i)] == 2; }
  /// The weight P_ij as D took it, from the float P (p), its z, z64 (read in rows of kind 2
  /// only), shift = lse tau and the row's inverse sum of P (tile_ops.hpp).
  template <class T>
  double weight(T p, T z, double z64, double shift, double tau, double inv_sum, Eigen::Index i) const {
    if (exact(i)) return p > T(0) ? exact_p(z64, tau, i) : 0.0;
    return exact_weight(p, z, shift, tau, inv_sum);
  }
  /// A weight of a row of kind 2 (out of line: one copy, not one per caller).
  EIGEN_DONT_INLINE double exact_p(double z64, double tau, Eigen::Index i) const {
    return std::exp((z64 - top64(i)) / tau) * inv64(i);
  }
};

/// Does a visible dP_j of the row (P_j > 0) have (dP_j - b) - c within 2^-20 a of 0
/// (RowShift, kind 2)? b: the top key's dP; c: D - b from T's P; a: sum_j P_j |dP_j - b| /
/// sum_j P_j. In this shifted form, as dx takes it: b + c rounds to b where c is below b's last
/// bit (a peaked row at low temperature, P = [1, 1e-30]), which marked rows with nothing to
/// cancel (review: 18-38 % of random rows at tau 0.1 to 0.003), and b's rounding could hide
/// a row that does cancel. Vectorised per block (the test runs on every row).
template <class Row>
bool cancelling_row(const Row& P, const Row& dP, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                    Eigen::Index L_k, double b, double c, double a) {
  const double near = a * 0x1p-20;
  for (const Eigen::Index j0 : blocks) {
    const Eigen::Index n = std::min(j0 + block_k, L_k) - j0;
    const auto d = ((dP.segment(j0, n).template cast<double>().array() - b) - c).abs();
    if (((d < near) && (P.segment(j0, n).array() > typename Row::Scalar(0))).any()) return true;
  }
  return false;
}

/// Makes row i of kind 2: top64 and inv64 from z64 (the row's logits in double, by absolute
/// key index) over the keys with P > 0.
template <class Row>
void exact_row_scale(const Row& P, const double* z64, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                     Eigen::Index L_k, double tau, RowShift& D, Eigen::Index i) {
  double top = -std::numeric_limits<double>::infinity(), sum = 0;
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index k = j0, e = std::min(j0 + block_k, L_k); k < e; ++k)
      if (P(k) > 0) top = std::max(top, z64[k]);
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index k = j0, e = std::min(j0 + block_k, L_k); k < e; ++k)
      if (P(k) > 0) sum += std::exp((z64[k] - top) / tau);
  D.p64[std::size_t(i)] = 2;
  D.top64(i) = top;
  D.inv64(i) = sum > 0 ? 1.0 / sum : 0.0;
}

/// sum_j P_ij (dP_ij - b), its sum of P (s) and of |terms| (a) over the keys with P > 0, P as
/// D takes them (RowShift::weight); small: some P is below T's least normal number.
struct RowTerms {
  double c = 0, s = 0, a = 0;
  bool small = false;
};
template <class T, class W>
EIGEN_DONT_INLINE RowTerms row_terms(const W& w, Eigen::Index r, Eigen::Index i, const std::vector<Eigen::Index>& blocks,
                   Eigen::Index block_k, Eigen::Index L_k, const Vec<T>& lse, T tau, const Eigen::VectorXd& inv_sum,
                   double b, const RowShift& D) {
  RowTerms t;
  if (!(w.rows[2 * r + 1] > 0)) return t;
  const double shift = double(lse(i)) * double(tau), inv = inv_sum(i);
  double c = 0, a = 0, s = 0;  // locals, not t's members: the sums stay in registers
  bool small = false;
  const auto add = [&](double p, Eigen::Index k) {
    const double d = double(w.rowdX(r, k)) - b;
    c += p * d;
    a += p * std::abs(d);
    s += p;
  };
  const bool exact = D.exact(i);
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index k = j0, e = std::min(j0 + block_k, L_k); k < e; ++k) {
      const T pt = w.rowP(r, k);
      if (!(pt > T(0))) continue;
      if (exact) {
        add(D.weight(pt, w.rowX(r, k), w.rowZ64(r, k), shift, double(tau), inv, i), k);
      } else if (pt < std::numeric_limits<T>::min()) {
        small = true;
        add(exact_weight(pt, w.rowX(r, k), shift, double(tau), inv), k);
      } else {
        add(double(pt), k);
      }
    }
  t.c = c;
  t.a = a;
  t.s = s;
  t.small = small;
  return t;
}

/// D_i = b + c / s from row_terms (0 for a fully masked row), and w.rows[2 r] = s (dL/dtau).
template <class W>
void set_row_shift(W& w, Eigen::Index r, Eigen::Index i, double b, const RowTerms& t, RowShift& D) {
  D.base(i) = t.s > 0 ? b : 0.0;
  D.centred(i) = t.s > 0 ? t.c / t.s : 0.0;
  w.rows[2 * r] = t.s;
}

/// Pass B's per-row normalisation of one query tile (w's row of blocks, w.rows[2 r + 1] the sum
/// of P): inv_sum and rowP divided by it, then D = b + c (RowShift) and w.rows[2 r] = the sum of
/// the divided P. Rows that cancelling_row finds are marked 3 (p64) and the call returns true: the
/// caller takes their z in double and calls exact_row_shift. Depends on T only, not on the
/// scorer: one copy in the wasm module.
template <class T, class W>
bool row_shifts(W& w, Eigen::Index i0, Eigen::Index bq, const std::vector<Eigen::Index>& blocks,
                Eigen::Index block_k, Eigen::Index L_k, const Vec<T>& lse, T tau, Eigen::VectorXd& inv_sum, RowShift& D) {
  // P = exp(x - lse) sums to 1 only as far as lse kept log(sum): for logits near 1e35 the
  // float lse is x_max itself (log 2 is below its spacing), and two tied keys got P = 1 each
  // (dV doubled; fuzzer finding). Both passes use P divided by its recomputed row sum,
  // rounded to T (the same bits in both passes).
  for (Eigen::Index r = 0; r < bq; ++r) {
    const double sum = w.rows[2 * r + 1];
    inv_sum(i0 + r) = sum > 0 ? 1.0 / sum : 0.0;
    if (sum > 0) w.rowP.row(r) *= T(1.0 / sum);
  }
  // D_i = b_i + c_i from that very P (0 for a fully masked row): then sum_j dx_ij =
  // sum_j P_ij (dP_ij - D_i) is 0 up to double's rounding, and so are the gradients of a bias
  // entry every pair of a row reads (a relative table of one entry at tau = 1e-3 got 5e-5
  // where the right value is 0, when D came from P before its division: fuzzer finding).
  bool pending = false;
  for (Eigen::Index r = 0; r < bq; ++r) {
    double b = 0;  // the dP of the row's key of largest P (the lowest index among ties), as the core
    T top = 0;
    for (const Eigen::Index j0 : blocks) {  // a block's max first (vectorised), its index only if it is higher
      const Eigen::Index e = std::min(j0 + block_k, L_k);
      const T m = w.rowP.row(r).segment(j0, e - j0).maxCoeff();
      if (m > top) {
        Eigen::Index k = j0;
        while (w.rowP(r, k) != m) ++k;
        top = m;
        b = double(w.rowdX(r, k));
      }
    }
    const Eigen::Index i = i0 + r;
    D.p64[std::size_t(i)] = 0;
    const RowTerms t = row_terms(w, r, i, blocks, block_k, L_k, lse, tau, inv_sum, b, D);
    D.p64[std::size_t(i)] = t.small ? 1 : 0;
    set_row_shift(w, r, i, b, t, D);
    if (t.s > 0 && cancelling_row(w.rowP.row(r), w.rowdX.row(r), blocks, block_k, L_k, b, t.c / t.s, t.a / t.s))
      D.p64[std::size_t(i)] = 3, pending = true;  // kind 2 once the caller has its z in double (exact_row_shift)
  }
  return pending;
}

/// A row of kind 2 (RowShift), its z64 in w.rowZ64: D_i again from its P in double.
template <class T, class W>
void exact_row_shift(W& w, Eigen::Index r, Eigen::Index i, const std::vector<Eigen::Index>& blocks,
                     Eigen::Index block_k, Eigen::Index L_k, const Vec<T>& lse, T tau, const Eigen::VectorXd& inv_sum,
                     RowShift& D) {
  exact_row_scale(w.rowP.row(r), w.rowZ64.row(r).data(), blocks, block_k, L_k, double(tau), D, i);
  const double b = D.base(i);
  set_row_shift(w, r, i, b, row_terms(w, r, i, blocks, block_k, L_k, lse, tau, inv_sum, b, D), D);
}

}  // namespace qkscope::cpu::detail
