// qkscope/cpu/additive_f64.hpp — the additive scorer's tiles in double, for calls whose
// |scale| / tau passes score::Additive::refine_gain (cpu/additive.hpp, AdditiveScorer::scores).
//   S_ij = sum_h v_h tanh(A_ih + B_jh), rounded to T once
// (Bahdanau et al. 2015, A.1.2), with the projections A = Q W_q^T + b and B = K W_k^T in
// double too (from the T inputs; the products are exact, the sums round in double).
// Why: the softmax multiplies every score's error by |scale| / tau. The fused float tanh keeps
// ~1.3 eps of absolute error per unit, the core's own tanh a few ulp, so at tau ~ 1e-4 the two
// float paths disagreed by 1-3.4 times the fuzz harness's bar (44 inputs, most at tau 1e-4 to
// 1e-2: tests/fuzz/fixed/README.md), and the float rounding of A, B and of a + b (the core
// rounds them too, eps |B| each) moved each logit by as much. In double the tile carries only
// its final rounding (eps / 2 |S|), less than the core's. Memory: 16 (L_q + L_k) d_h bytes
// per head while the call runs.
// tanh(x), x = a + b in double, by one of two forms chosen per lane:
//   |x| >= 2^-8: 1 - 2 / (p + 1), p = e^{2a} e^{2b} (exponentials once per row: O(L d_h));
//     absolute error a few ulp of 1, relative < 1e-13 there. p = inf gives 1, p = 0 gives -1.
//   |x| <  2^-8: x - x^3 / 3 + 2 x^5 / 15 - 17 x^7 / 315 (Taylor), relative error < 1e-19:
//     the exp form's absolute error would be large next to a tiny x (the float path's small
//     units, cpu/additive.hpp, are the same problem at eps_f).
// A unit with some |A_ih| or |B_jh| past 350 (e^{2x} past double's range, where inf * 0 made
// a NaN) takes the same forms from x itself per element instead (tanh_far; scalar).
#pragma once

#include <cmath>
#include <algorithm>
#include <vector>

#include <Eigen/Core>

namespace qkscope::cpu::detail {

namespace ei = Eigen::internal;

/// X W^T + bias in double from T inputs (bias null or empty: none): (rows of X, rows of W).
/// The products of T inputs are exact in double; only the sums round, in the order k = 0, 1,
/// ... for every entry (bias first), so each entry is the same whatever lane forms it. Packets
/// over h from W^T in double (W read once); no Eigen GEMM: its double kernels took the tiled
/// wasm module ~8 KB gzipped past its guard, and the plain loop took ~2 ms of the backward at
/// L = 256, d = d_h = 64.
template <class MX, class MW, class VB>
Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> project_f64(const MX& X, const MW& W,
                                                                                   const VB* bias) {
  using P = ei::packet_traits<double>::type;
  constexpr Eigen::Index N = ei::packet_traits<double>::size;
  const Eigen::Index dh = W.rows(), d = X.cols(), ld = (dh + N - 1) / N * N;
  const std::size_t n = std::size_t(ld);
  std::vector<double> wt(std::size_t(d) * n, 0.0), b0(n, 0.0), x(n, 0.0);
  for (Eigen::Index k = 0; k < d; ++k)
    for (Eigen::Index h = 0; h < dh; ++h) wt[std::size_t(k * ld + h)] = double(W(h, k));
  for (Eigen::Index h = 0; bias && h < bias->size(); ++h) b0[std::size_t(h)] = double((*bias)(h));
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(X.rows(), dh);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    for (Eigen::Index h = 0; h < ld; h += N) {
      P acc = ei::ploadu<P>(b0.data() + h);
      for (Eigen::Index k = 0; k < d; ++k)
        acc = ei::padd(acc, ei::pmul(ei::pset1<P>(double(X(i, k))), ei::ploadu<P>(wt.data() + k * ld + h)));
      ei::pstoreu(x.data() + h, acc);
    }
    for (Eigen::Index h = 0; h < dh; ++h) out(i, h) = x[std::size_t(h)];
  }
  return out;
}

struct AdditiveF64 {
  using P = ei::packet_traits<double>::type;
  static constexpr Eigen::Index N = ei::packet_traits<double>::size;
  static constexpr double far = 350;  // 2 * 350 < log(DBL_MAX) ~ 709.8

  /// Row-major: A (L_q, d_h) and e^{2A} in double; B^T (d_h, ld) and e^{2B}^T, zeros past L_k
  /// (std::vector: plain indexing, as the kernel reads them).
  std::vector<double> a, ea, bt, ebt, v;
  std::vector<Eigen::Index> near_units, far_units;
  Eigen::Index dh = 0, ld = 0;

  /// From A = Q W_q^T + bias (L_q, d_h) and B = K W_k^T (L_k, d_h) in double (project_f64) and
  /// v (d_h).
  template <class MA, class VV>
  void prepare(const MA& A, const MA& B, const VV& v_in) {
    const Eigen::Index L_q = A.rows(), L_k = B.rows();
    dh = v_in.size();
    ld = L_k + 4 * N;  // NC packets from any key stay inside
    a.assign(L_q * dh, 0.0);
    ea.assign(L_q * dh, 0.0);
    bt.assign(dh * ld, 0.0);
    ebt.assign(dh * ld, 0.0);
    v.assign(dh, 0.0);
    near_units.clear();
    far_units.clear();
    for (Eigen::Index h = 0; h < dh; ++h) {
      double m = 0;
      for (Eigen::Index i = 0; i < L_q; ++i) {
        a[i * dh + h] = A(i, h);
        ea[i * dh + h] = std::exp(2 * A(i, h));
        m = std::max(m, std::abs(A(i, h)));
      }
      for (Eigen::Index j = 0; j < L_k; ++j) {
        bt[h * ld + j] = B(j, h);
        ebt[h * ld + j] = std::exp(2 * B(j, h));
        m = std::max(m, std::abs(B(j, h)));
      }
      v[h] = double(v_in(h));
      // Finite: the products of float inputs stay far inside double's range.
      (m <= far ? near_units : far_units).push_back(h);
    }
  }

  /// tanh(x) for x = a + b, ea = e^{2a}, eb = e^{2b} (the header's two forms; the series only
  /// where some lane needs it: rare for projections of ordinary size). The test costs ~30 % of
  /// the forward, and one test per unit for four packets instead was no faster (NOTES).
  static P tanh_lanes(const P& a, const P& b, const P& ea, const P& eb) {
    const P x = ei::padd(a, b), one = ei::pset1<P>(1.0);
    const P t = ei::psub(one, ei::pdiv(ei::pset1<P>(2.0), ei::padd(ei::pmul(ea, eb), one)));
    const P small = ei::pcmp_lt(ei::pabs(x), ei::pset1<P>(1.0 / 256));
    if (!ei::predux_any(small)) return t;
    const P x2 = ei::pmul(x, x);
    P s = ei::pset1<P>(-17.0 / 315);
    s = ei::padd(ei::pmul(s, x2), ei::pset1<P>(2.0 / 15));
    s = ei::padd(ei::pmul(s, x2), ei::pset1<P>(-1.0 / 3));
    return ei::pselect(small, ei::padd(x, ei::pmul(ei::pmul(s, x2), x)), t);
  }

  /// S (bq x bk) = the scores of queries [i0, i0 + bq) and keys [j0, j0 + bk), rounded to T.
  template <class T, class Tile>
  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, Tile& S) const {
    for (Eigen::Index r = 0; r < bq; ++r) {
      Eigen::Index c = 0;
#if !defined(__EMSCRIPTEN__)  // four packets per unit's broadcasts; in wasm one (module size)
      for (; c + 4 * N <= bk; c += 4 * N) row_packets<T, 4>(i0 + r, j0 + c, S, r, c, bk);
#endif
      for (; c < bk; c += N) row_packets<T, 1>(i0 + r, j0 + c, S, r, c, bk);
    }
  }

 private:
  /// NC packets of keys from key j of query i, into S(r, c...) (keys past c + bk dropped).
  /// Every key takes the same lanes' arithmetic wherever it sits: the padding past L_k is read
  /// and dropped, so tied keys stay tied.
  template <class T, int NC, class Tile>
  void row_packets(Eigen::Index i, Eigen::Index j, Tile& S, Eigen::Index r, Eigen::Index c, Eigen::Index bk) const {
    const double* ar = a.data() + i * dh;
    const double* ear = ea.data() + i * dh;
    P acc[NC];
    for (int n = 0; n < NC; ++n) acc[n] = ei::pset1<P>(0.0);
    for (const Eigen::Index h : near_units) {
      const P ah = ei::pset1<P>(ar[h]), eah = ei::pset1<P>(ear[h]), vh = ei::pset1<P>(v[h]);
      const double *b = bt.data() + h * ld + j, *eb = ebt.data() + h * ld + j;
      for (int n = 0; n < NC; ++n)
        acc[n] = ei::padd(acc[n], ei::pmul(vh, tanh_lanes(ah, ei::ploadu<P>(b + n * N), eah, ei::ploadu<P>(eb + n * N))));
    }
    double lanes[NC * N];
    for (int n = 0; n < NC; ++n) ei::pstoreu(lanes + n * N, acc[n]);
    // Far units after the near ones, in the same order for every key; along the keys' row of
    // B^T (per key across h, each read was a cache line of its own: 19x the forward's time).
    const Eigen::Index w = std::min<Eigen::Index>(NC * N, bk - c);
    for (const Eigen::Index h : far_units)
      for (Eigen::Index k = 0; k < w; ++k) lanes[k] += v[h] * tanh_far(ar[h] + bt[h * ld + j + k]);
    for (Eigen::Index k = 0; k < w; ++k) S(r, c + k) = T(lanes[k]);
  }
  /// tanh(x) for one x of a far unit: +-1 past |x| = 20 (1 - tanh 20 = 8.5e-18 rounds to 1),
  /// else tanh_lanes' two forms with a = x, b = 0 (e^{2x} itself, times e^0 = 1).
  static double tanh_far(double x) {
    if (std::abs(x) > 20) return std::copysign(1.0, x);
    return ei::pfirst(tanh_lanes(ei::pset1<P>(x), ei::pset1<P>(0.0), ei::pset1<P>(std::exp(2 * x)), ei::pset1<P>(1.0)));
  }
};

}  // namespace qkscope::cpu::detail
