// qkscope/cpu/temperature_grad.hpp — dL/dtau's share of one query tile in the tiled backward
// (flash_backward.hpp, pass B):
//   dL/dtau = -(1/tau) sum_ij p^_ij (dP_ij - D_i) (x_ij - x0_i),   p^ = P / sum_j P_ij,
// for any per-row shift x0 (sum_j p^_ij (dP_ij - D_i) = 0): the core's form, with dP - D formed
// first and x0 the row's largest visible logit, so that x - x0 = (z - z0) / tau is exact in
// double from the float z up to the division. (Expanding it into sums of P dP log P and
// P log P cancelled catastrophically where dP is large and the logits nearly equal: a tiny
// scale gave dtau 0 instead of 4e-3, fuzzer finding.)
// The sum rests on differences of logits, not on logits: where the keys that carry the row's
// weight are nearly tied, z_j - z0 is small beside the error of each float z. A row where that
// error, not the sum's own rounding, would set the result (temperature_rows_tile_logits) takes
// its differences again from the scorer's exact raw differences where it has them
// (`raw_differences`: the double additive scorer's, from tanh(b_j - b_r),
// cpu/additive_differences.hpp), through the modifiers in double (logit_difference). Additive keys tied at 0 beside one at 1
// with a value of -3e35 gave dL/dtau 9.7e-6 relative off, 1.015 times the fuzz harness's bar:
// the fused tanh's absolute error (~1.3 eps per unit) is ~2.3 times the core's direct tanh
// there (docs/RELIABILITY.md).
// The float additive scorer goes further: every row from its scores in double (double_logit_row),
// since rows whose bounds looked ordinary still left dL/dtau up to 2.4 times that bar.
#pragma once

#include <cmath>
#include <algorithm>
#include <concepts>
#include <limits>
#include <vector>

#include "qkscope/cpu/tile_ops.hpp"

namespace qkscope::cpu::detail {

/// Does the scorer give exact raw differences S_ij - S_ir (with bounds of their own error) and a
/// bound on a raw score's error?
template <class Scorer>
concept RawDifferences = requires(const Scorer& s, const std::vector<Eigen::Index>& b, double* out) {
  s.raw_differences(Eigen::Index(0), Eigen::Index(0), b, Eigen::Index(1), out, out);
  { s.raw_error_bound() } -> std::convertible_to<double>;
};

/// Does the scorer form dL/dtau from a row's raw scores in double (the float additive scorer:
/// double_logit_row below)?
template <class Scorer>
concept DoubleScores = Scorer::double_logits && requires(const Scorer& s, const std::vector<Eigen::Index>& b,
                                                         double* out) {
  s.double_scores(Eigen::Index(0), b, Eigen::Index(1), out);
};

/// The biases' part of z_ij in double (ALiBi, relative and T5 tables, the dense bias): each
/// entry is a T, so differences of these parts are exact up to double's rounding.
template <class T>
double bias_part(const pipeline::ScoreMods<T>& m, int i, int j) {
  double b = 0;
  if (m.alibi) b -= double(m.slope) * double(pipeline::iabs(j - (i + m.offset)));
  if (m.relative) b += double(m.relative[m.relative_index(i, j)]);
  if (m.t5) b += double(m.t5[m.t5_index(i, j)]);
  if (m.dense) b += double(m.dense[pipeline::offset_t(i) * m.ld + j]);
  return b;
}

/// z_ij - z_ir in double from the raw score s_r and the exact raw difference ds, as the double
/// core forms it: z_r and z_j = z(s_r + ds) through the scale, the softcap and the biases
/// (pipeline::ScoreMods::z), each in double, then their difference. So a difference the double
/// core cannot see is 0 here too (both sides of a softcap saturated in double; a dense bias of
/// 1e-18 added to logits of 0.5): the fuzz harness's right value is that core, and an
/// addition-formula difference of 1e-17 beside a value of 1e30 put dL/dtau 6e9 where it has 0
/// (review; a dense-bias case the same, the seventh session's campaign).
template <class T>
[[gnu::noinline]] double logit_difference(const pipeline::ScoreMods<T>& m, int i, int j, int r, T s_r, double ds) {
  const double scale = double(m.scale);
  double z_r = scale * double(s_r), z_j = z_r + scale * ds;
  if (m.softcap) {
    const double cap = double(m.cap);  // as ScoreMods<double>::capped (review: a cap of 1e300)
    z_j = pipeline::ScoreMods<T>::softcapped(z_j, cap);
    z_r = pipeline::ScoreMods<T>::softcapped(z_r, cap);
  }
  if (!m.plain()) z_j += bias_part(m, i, j), z_r += bias_part(m, i, r);
  return z_j - z_r;
}

/// z_ij in double from a raw score s in double: scale, softcap, then the biases' sum
/// (pipeline::ScoreMods::z's order), each step in double on m's T values: the scale, cap and
/// ALiBi slope rounded to T as the float core has them, where the double core keeps the
/// config's doubles (its bias sum also runs in another order); the bar covers both (review).
template <class T>
double logit64(const pipeline::ScoreMods<T>& m, int i, int j, double s) {
  double z = double(m.scale) * s;
  if (m.softcap) z = pipeline::ScoreMods<T>::softcapped(z, double(m.cap));
  if (!m.plain()) z += bias_part(m, i, j);
  return z;
}

/// sum_j p^_j ((dP_j - dP_top) - D) x_j over the row's keys with P > 0, from x[c] = (z_j - z0) / tau
/// in double: p^ = e^x / sum e^x, D = sum p^ (dP - dP_top). dP is shifted by the top key's, as
/// RowShift (flash_backward.hpp): where the keys that carry the row share one huge dP, an
/// unshifted D rounds dP - D to 0 (review: 14 % off). each(c, g, x) sees each key's weight g.
template <class Scratch, class Each>
double row_from_differences(const Scratch& w, Eigen::Index r, Eigen::Index top, const std::vector<Eigen::Index>& blocks,
                            Eigen::Index block_k, Eigen::Index L_k, const std::vector<double>& x, Each&& each) {
  const double dp_top = double(w.rowdX(r, top));
  double e_sum = 0, e_dp = 0, full = 0;
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
      if (w.rowP(r, c) > 0) {
        const double p = std::exp(x[c]);
        e_sum += p;
        e_dp += p * (double(w.rowdX(r, c)) - dp_top);
      }
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
      if (w.rowP(r, c) > 0) {
        const double g = std::exp(x[c]) / e_sum * ((double(w.rowdX(r, c)) - dp_top) - e_dp / e_sum);
        full += g * x[c];
        each(c, g, x[c]);
      }
  return full;
}

/// One row's sum_j p^_ij (dP_ij - D_i) (x_ij - x0_i) (temperature_rows' row, divided by its
/// sum of p^) with every logit in double, from the scorer's raw scores in double (s64, by key):
/// x = (z_j - z0) / tau with z0 the largest z of the keys below, p^ = e^x / sum e^x, and D from the same
/// p^ over dP shifted by the top key's (as RowShift: a huge dP shared by the keys that carry the
/// row rounded dP - D to 0 unshifted, review). Only dP (rowdX) stays T's, as in the core. The
/// keys are those with P > 0 in the tile (the mask's and the underflow's choice, as the float
/// row). Why (the float additive backward): its float z carry the fused tanh's ~1.3 eps per
/// unit and each z's rounding, and rows whose bounds looked ordinary (0.9 to 67 times eps B
/// against random rows' 0.4 to 68) left dL/dtau 1.02-2.4 times the fuzz harness's bar on four
/// inputs at tau = 1, where the double core's logits, which the double tiles reproduce to
/// ~1e-13, pass them all (docs/RELIABILITY.md).
template <class T, class Scratch>
double double_logit_row(const pipeline::ScoreMods<T>& m, double tau, const double* s64, Eigen::Index r,
                        Eigen::Index i, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                        Eigen::Index L_k, const Scratch& w, std::vector<double>& x) {
  Eigen::Index top = -1;
  double z0 = 0;
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
      if (w.rowP(r, c) > 0) {
        x[c] = logit64(m, int(i), int(c), s64[c]);
        if (top < 0 || x[c] > z0) top = c, z0 = x[c];
      }
  if (top < 0) return 0;
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
      if (w.rowP(r, c) > 0) x[c] = (x[c] - z0) / tau;
  return row_from_differences(w, r, top, blocks, block_k, L_k, x, [](Eigen::Index, double, double) {});
}

/// dL/dtau's share of the query tile at i0 (bq rows), times -tau (the caller divides): per
/// row, sum_j p^_ij (dP_ij - D_i) (x_ij - x0_i) / sum_j p^_ij. w holds the tile's row of
/// blocks (rowS, rowX = z, rowP divided by its row sum, rowdX = dP) and w.rows[2 r] the sum
/// of p^; lse and inv_sum as flash_backward's.
template <class T, class Scorer, class Scratch, class Shift>
double temperature_rows_tile_logits(const Scorer& sc, const TileOps<T>& ops, const Shift& D, const Vec<T>& lse,
                        const Eigen::VectorXd& inv_sum, Eigen::Index i0, Eigen::Index bq,
                        const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, Eigen::Index L_k,
                        const Scratch& w) {
  const double tau = double(ops.tau), eps = double(std::numeric_limits<T>::epsilon());
  std::vector<double> exact, exact_err;  // a row's exact z_j - z0 and their own error bounds
  double raw_err = 0;         // the scorer's error bound for a raw score, times |scale|
  if constexpr (RawDifferences<Scorer>) raw_err = std::abs(double(ops.mods.scale)) * sc.raw_error_bound();
  double acc = 0;
  for (Eigen::Index r = 0; r < bq; ++r) {
    const double sum = w.rows[2 * r];
    if (!(sum > 0)) continue;  // fully masked row
    const Eigen::Index i = i0 + r;
    Eigen::Index top = -1;  // the key of the largest visible z (its value kept: no load chain)
    T best = -std::numeric_limits<T>::infinity();
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
        if (w.rowP(r, c) > 0 && (top < 0 || w.rowX(r, c) > best)) top = c, best = w.rowX(r, c);
    const double z0 = double(best);
    // A P below T's smallest normal number keeps only a few bits (3.7e-44 is 27 times the
    // least float: 1.7 % off); beside a value of 2.6e38 its term can be all of dL/dtau
    // (fuzzer finding). Such P are taken again in double from the same logit and shift.
    const double shift = double(lse(i)) * tau, scale_p = inv_sum(i);
    auto weight = [&](Eigen::Index c) {  // p^ (dP - D)
      return D.weight(w.rowP(r, c), w.rowX(r, c), D.exact(i) ? w.rowZ64(r, c) : 0.0, shift, tau, scale_p, i) *
             D.dp_minus_d(double(w.rowdX(r, c)), i);
    };
    // The row's sum from the float z, its size B (sum of |terms|) and bounds of what two kinds
    // of error in the z put into the terms that exact differences would change: E_fused, the
    // scorer's error beyond the core's (the fused tanh's), and E_round, each z's rounding to T
    // (the core's too). Those terms are the ones whose difference is small beside tau: P was
    // formed from the same float z, so an error delta in z_j - z0 moves g_j by ~ delta / tau
    // and the term by g delta (z_j - z0) / tau as well, and only where |z_j - z0| << tau is an
    // exact difference alone the better term (at z_j - z0 = 1.4 tau, keys far apart, it left
    // dL/dtau 4 times further off than the consistent float one, in a seeded sweep). Exact
    // differences where either bound would set the result: E_fused past 64 eps B (random
    // additive rows at d_h = 64 reach 31; the findings 339 to 2,100, a sweep's case 242), or
    // E_round past 64 eps B (random rows at most 5.7; the findings 70 to 159, and 6e5 to 1.5e6
    // for keys 1e-6 apart beside a unit whose bias gives z ~ 0.2). Measured: native/bench/NOTES.md.
    // (rowS holds raw scores: the scorers with raw differences never pre-scale their queries.)
    const double near = tau / 8;
    double row = 0, B = 0, G = 0, GZ = 0;  // G, GZ: sum |g| and sum |g| |z| over the near terms
    double E_all = 0;  // the float row's bound over every key, each z's error moving its weight too
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
        if (w.rowP(r, c) > 0) {
          const double g = weight(c), z = double(w.rowX(r, c)), d = z - z0;
          row += g * (d / tau);
          if constexpr (RawDifferences<Scorer>) {
            const double a = std::abs(g), a_near = a * double(std::abs(d) <= near);  // no branch
            B += a * std::abs(d);
            G += a_near;
            GZ += a_near * std::abs(z);
            E_all += a * (eps * (std::abs(z) + std::abs(z0)) + 2 * raw_err) * (1 + std::abs(d) / tau);
          }
        }
    if constexpr (RawDifferences<Scorer>) {
      const double E_fused = 2 * raw_err * G,
                   E_round = eps * (GZ + std::abs(z0) * G);
      if (E_fused > 64 * eps * B || E_round > 64 * eps * B) {
        // The exact differences are exact for the float projections; their rounding (err_j,
        // per key) is the exact pass's own error, and where it is not well below the float
        // z's, the row keeps the float sum (keys 1e-4 apart: B's rounding was as large as the
        // z's error it replaced, and dL/dtau 1.1 times the bar where it had passed: review).
        exact.assign(L_k, 0.0);
        exact_err.assign(L_k, 0.0);
        sc.raw_differences(i, top, blocks, block_k, exact.data(), exact_err.data());
        double E_exact = 0, exact_row = 0;
        for (const Eigen::Index j0 : blocks)
          for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
            if (w.rowP(r, c) > 0) {
              const double d = double(w.rowX(r, c)) - z0, g = weight(c);
              const bool take = std::abs(d) <= near;
              if (take) E_exact += std::abs(g) * std::abs(double(ops.mods.scale)) * exact_err[c];
              exact_row +=
                  g * ((take ? logit_difference(ops.mods, int(i), int(c), int(top), w.rowS(r, top), exact[c]) : d) / tau);
            }
        if (2 * E_exact < E_fused + E_round) row = exact_row;
        // The row again with every key's difference exact and its weights formed from them: a
        // float z's error moves P_j as much as z_j - z0, so a far key's term keeps it unless
        // both are taken anew (keys 1.15 tau from the top beside tied ones, z ~ 0.3, tau 1e-4:
        // dL/dtau 9.3e-4 relative off, 4.4 times the bar; fuzzer finding). Taken where its own
        // error bound (each exact_err moves its weight and its difference: (1 + |x|) / tau) is
        // under half the float row's for every key.
        for (const Eigen::Index j0 : blocks)
          for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c)
            if (w.rowP(r, c) > 0)
              exact[c] = logit_difference(ops.mods, int(i), int(c), int(top), w.rowS(r, top), exact[c]) / tau;
        double E_full = 0;
        const double full = row_from_differences(w, r, top, blocks, block_k, L_k, exact, [&](Eigen::Index c, double g,
                                                                                             double x) {
          E_full += std::abs(g) * std::abs(double(ops.mods.scale)) * exact_err[c] * (1 + std::abs(x));
        });
        // Against the float row's bound over every key (E_all): the near keys' bounds alone left a
        // row whose far keys' z (95.2 beside tau 1.7e-5, an ulp 0.44 tau) were 1.6 % off (review).
        if (2 * E_full < E_all) row = full * sum;  // divided by sum below, as the float row
      }
    }
    acc += row / sum;
  }
  return acc;
}

/// dL/dtau's share of the query tile at i0 (bq rows), times -tau (the caller divides): per
/// row, sum_j p^_ij (dP_ij - D_i) (x_ij - x0_i) / sum_j p^_ij, from logits in double where the
/// scorer gives them (double_logit_row), else from the tile's float z with exact differences
/// where their error bounds call for them (temperature_rows_tile_logits). Arguments as
/// temperature_rows_tile_logits's.
template <class T, class Scorer, class Scratch, class Shift>
double temperature_rows(const Scorer& sc, const TileOps<T>& ops, const Shift& D, const Vec<T>& lse,
                        const Eigen::VectorXd& inv_sum, Eigen::Index i0, Eigen::Index bq,
                        const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, Eigen::Index L_k,
                        const Scratch& w) {
  if constexpr (DoubleScores<Scorer>) {
    std::vector<double> s64(L_k), x(L_k);
    double acc = 0;
    for (Eigen::Index r = 0; r < bq; ++r)
      if (w.rows[2 * r] > 0) {  // not a fully masked row
        sc.double_scores(i0 + r, blocks, block_k, s64.data());
        acc += double_logit_row(ops.mods, double(ops.tau), s64.data(), r, i0 + r, blocks, block_k, L_k, w, x);
      }
    return acc;
  } else {
    return temperature_rows_tile_logits(sc, ops, D, lse, inv_sum, i0, bq, blocks, block_k, L_k, w);
  }
}

}  // namespace qkscope::cpu::detail
