// qkscope/score/additive_rows.hpp — one query row's sums for the additive score's dA and dv,
// and the rule that picks among them: shared by the core (score/additive.hpp) and the tiled
// kernels (cpu/additive_rows.hpp), so that both take the same form of each sum.
//
// Per hidden unit h, with t_j = tanh(A_ih + B_jh), u_j = 1 - t_j^2, R = sum_j dS_ij exact:
//   dA_ih / v_h = sum_j dS_j u_j       (plain)  or  u_r R + sum_j dS_j (u_j - u_r)   (split)
//   dv's share  = sum_j dS_j t_j       (plain)  or  t_r R + sum_j dS_j (t_j - t_r)   (split)
// at the row's reference key r (largest |dS|). The plain sums are exact where the tanh
// saturates; the splits where the t of a row are near each other (tied keys, all near 0);
// each is taken where its bound is the smaller (sum |dS| |term|). A first pass forms dA's
// split from differences of the rounded u, with an estimate E of their own error (sum |dS|
// times the sizes each is rounded against), and dv's plain sum only. A unit whose chosen dA,
// or whose dv, keeps too few bits by its estimate (6 and 9 in float, 34 in double: exact_units)
// takes a second pass with exact differences (score/tanh_difference.hpp) for both splits:
// dS of 1e33 on tied keys, one key
// 2e-8 from another, or t rounded to exactly -1 past |x| ~ 7.9 left the float sums, and the
// double ones, without a correct digit (fuzzer findings; a dv split from rounded differences
// alone gave the core's dv 45 times the bar where rounded t tie and true ones do not, review).
// Only such units: exact differences cost a tanh per element, and everywhere the tiled
// backward was twice as slow (native/bench/NOTES.md).
#pragma once

#include <cmath>
#include <limits>

#include <Eigen/Core>

namespace qkscope::score {

template <class T>
struct AdditiveRowSums {
  using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
  Row plain, plain_bound, split, split_bound, E_A;          // dA: sum dS u, sum dS (u - u_r)
  Row E_core;  // the core's E_A on the same row: sum |dS| (t^2 + t_r^2) (exact_units)
  Row v_plain, v_plain_bound, v_split, v_split_bound;       // dv: sum dS t, sum dS (t - t_r)
  Row u_r, t_r, c_r;  // 1 - t_r^2 (no cancellation), t_r, 1 - |t_r| (tanh_complement)
  // Sums in double over float dS only (cpu/additive_rows.hpp, mixed): T's own rounding of dv's
  // plain sum and of its first-pass split, apart from the bounds (the dS's part).
  Row v_plain_round, v_split_round;
  double mixed_k = 0;  // mixed: eps_T / eps_dS (the round rows' weight beside the bounds); else 0
  void resize(Eigen::Index dh) {
    for (Row* x : {&plain, &plain_bound, &split, &split_bound, &E_A, &E_core, &v_plain, &v_plain_bound, &v_split,
                   &v_split_bound, &u_r, &t_r, &c_r, &v_plain_round, &v_split_round})
      x->resize(dh);
  }
  /// Before a first pass: the sums at 0, dv's split not formed (an infinite bound: not taken).
  void zero() {
    for (Row* x : {&plain, &plain_bound, &split, &split_bound, &E_A, &v_plain, &v_plain_bound, &v_split,
                   &v_plain_round, &v_split_round})
      x->setZero();
    v_split_bound.setConstant(std::numeric_limits<T>::infinity());
  }
  /// Whether unit h's dA takes the split (exact_dS: the row's dS add up to R within their
  /// rounding, split_check.hpp).
  bool split_dA(Eigen::Index h, bool exact_dS) const { return exact_dS && split_bound(h) < plain_bound(h); }
  bool split_dv(Eigen::Index h, bool exact_dS) const {
    if (mixed_k == 0) return exact_dS && v_split_bound(h) < v_plain_bound(h);
    // Both parts, in units of the dS's eps: the exp form's t of a key 2e-19 from another are
    // all 0, and the plain sum's bound alone (0) beat the exact split (dv 1.6e-20 where 6.3e15).
    const double k = mixed_k;
    return exact_dS && double(v_split_bound(h)) + k * double(v_split_round(h)) <
                           double(v_plain_bound(h)) + k * (double(v_plain_round(h)) + double(v_plain_bound(h)));
  }
  /// dA_ih / v_h and dv_h's row share, as chosen.
  T dA(Eigen::Index h, bool exact_dS, double R) const {
    return split_dA(h, exact_dS) ? T(double(u_r(h)) * R + double(split(h))) : plain(h);
  }
  T dv(Eigen::Index h, bool exact_dS, double R) const {
    return split_dv(h, exact_dS) ? T(double(t_r(h)) * R + double(v_split(h))) : v_plain(h);
  }
  /// After the first pass: 1 for the units whose chosen dA keeps fewer than 6 bits (float) or
  /// 34 (double) under its error estimate eps (bound + E), or whose plain dv fewer than 9
  /// (float) or 34, else 0; none
  /// unless exact_dS. A dA split whose estimate passes 4 times the core's (E_core: the fused
  /// form's u near t ~ 0 keeps an ulp of 1 where the core's t^2 - t_r^2 is relative to t^2)
  /// must keep 12 bits: at 6, the core's error, which is the fuzz harness's bar, was 25 times
  /// smaller on plain inputs (review); at 17 bits with twice, random inputs took the (scalar)
  /// second pass so often that the tiled backward was 4-5 times slower.
  /// The fused form's split (`fused`: its u = (p r) r rounded; a small unit's E_A is its
  /// split_bound, never past 16 times it) whose terms are mostly their own rounding (E_A past 16
  /// times split_bound, i.e. the row's u within about an eighth of each other) takes the
  /// exact pass: its 20 bits cannot be met there when R = 0 (|dA| <= split_bound), and with a
  /// softcap's R rarely. Each of its terms is eps u / |u - u_r| relative off, and the core's
  /// t^2 - t_r^2, as lossy, sets the bar by its luck at two or three keys (a finding: E_A 1.3
  /// times E_core, estimate 12.9 bits, tiled dQ 2.0e-5 relative off, the core 1.5e-6, the bar
  /// 3.7e-6). Random inputs' rows of 64 keys or more spread u wider and do not take it; calls
  /// of two to four keys send 8-14 % of their units to the exact pass (4 % before).
  /// eps_dS: the dS's rounding, T's own or, where the sums are in double over float dS
  /// (cpu/additive.hpp, mixed), float's. Mixed, each estimate has two parts: the bounds (the
  /// dS's part) keep the float rules' bits at float's eps (at double's 34 bits the plain sum of
  /// float dS was kept where the float path took the split, whose exact R removes that
  /// rounding: dv 1.04 times the bar on a fixed input at tau 1e-4), and T's own rounding (E_A,
  /// the *_round rows) keeps double's 34 bits at T's eps: weighed at float's eps and 9 bits,
  /// differences of t 1e-12 apart kept 13 bits and passed, where the float core's own estimate
  /// failed and took the exact pass (dv 11.5 times the bar: review).
  Row exact_units(bool exact_dS, double R, bool fused = false,
                  double eps_dS = double(std::numeric_limits<T>::epsilon())) const {
    const Eigen::Index dh = plain.size();
    Row out = Row::Zero(dh);
    if (!exact_dS) return out;
    const double eps_T = double(std::numeric_limits<T>::epsilon());
    if (eps_dS > eps_T) return mixed_units(R, eps_dS, eps_T);
    const double eps = eps_T;
    // The double core is the fuzz harness's and the tests' right value: it keeps 34 bits (at 6,
    // dv was 1.5e-3 relative off on a corpus input where the float paths were exact); float 6
    // (at 12, random inputs took the second pass often enough to slow the tiled backward 35 %).
    const bool wide = std::numeric_limits<T>::digits >= 53;
    // dv's plain sum keeps 9 bits in float: at 6, keys 5e-5 apart beside ALiBi and a value of
    // 1.4e38 left dv and db 0.3-1.7 % off, 1.2-1.5 times the bar (two fuzzer findings); 9 costs
    // nothing measurable on random inputs, 12 cost 12-14 % (native/bench/NOTES.md).
    const double keep = wide ? 0x1p-34 : 0x1p-6, keep_worse = wide ? 0x1p-34 : 0x1p-12,
                 keep_v = wide ? 0x1p-34 : 0x1p-9, keep_lossy = wide ? 0x1p-34 : 0x1p-20;
    for (Eigen::Index h = 0; h < dh; ++h) {
      const bool takes_split = split_dA(h, true);
      const double a_err = takes_split ? double(split_bound(h)) + double(E_A(h)) : double(plain_bound(h));
      const double a_keep = !takes_split                                ? keep
                            : fused && E_A(h) > 16 * split_bound(h)     ? keep_lossy
                            : E_A(h) > 4 * E_core(h)                   ? keep_worse
                                                                        : keep;
      if (eps * a_err > a_keep * std::abs(double(dA(h, true, R))) ||
          eps * double(v_plain_bound(h)) > keep_v * std::abs(double(v_plain(h))))
        out(h) = 1;
    }
    return out;
  }
  /// exact_units over float dS (eps_dS) with sums in T: the dS's part of each chosen form keeps
  /// float's 6 (dA) and 9 (dv) bits, T's own rounding double's 34 (the rules above).
  Row mixed_units(double R, double eps_dS, double eps_T) const {
    const Eigen::Index dh = plain.size();
    Row out = Row::Zero(dh);
    for (Eigen::Index h = 0; h < dh; ++h) {
      const bool a_split = split_dA(h, true), v_split = split_dv(h, true);
      const double a = std::abs(double(dA(h, true, R))), v = std::abs(double(dv(h, true, R)));
      const double a_dS = a_split ? double(split_bound(h)) : double(plain_bound(h));
      const double a_T = a_split ? double(E_A(h)) : double(plain_bound(h));
      const double v_dS = v_split ? double(v_split_bound(h)) : double(v_plain_bound(h));
      const double v_T = v_split ? double(v_split_round(h)) : double(v_plain_round(h)) + double(v_plain_bound(h));
      if (eps_dS * a_dS > 0x1p-6 * a || eps_T * a_T > 0x1p-34 * a || eps_dS * v_dS > 0x1p-9 * v ||
          eps_T * v_T > 0x1p-34 * v)
        out(h) = 1;
    }
    return out;
  }
  /// Before a unit's second pass: its splits are formed again from exact differences.
  void reset_splits(Eigen::Index h) {
    split(h) = split_bound(h) = E_A(h) = v_split(h) = v_split_bound(h) = v_split_round(h) = 0;
  }
};

}  // namespace qkscope::score
