// qkscope/score/tanh_difference.hpp — tanh(x_j) - tanh(x_r) without cancellation, for the
// additive score's dL/dv (score/additive.hpp, cpu/additive.hpp).
//
// Why: dL/dv_h = sum_ij dS_ij tanh(A_ih + B_jh), where sum_j dS_ij is the row's exact R_i
// (0 for softmax). Tied or saturated keys carry dS of 1e30 and more whose products with
// t = tanh(.) cancel: the float sums, and the double core's too, were off by many orders of
// magnitude (dv -0.54 where the value is -6e-18, docs/RELIABILITY.md). Split per row at a
// reference key r, sum_j dS_ij t_ij = t_ir R_i + sum_j dS_ij (t_ij - t_ir), the split is only as
// good as t_ij - t_ir: from two rounded tanh it is 0 for keys that tie in float and not in
// value (a float tanh is exactly -1 past |x| ~ 7.9; A + B rounds away a key's last bit).
// The tanh addition formula gives it from the keys' own difference instead:
//   tanh x - tanh y = tanh(x - y) (1 - tanh x tanh y),   x - y = B_jh - B_rh
// (no query term: it cancels exactly), and 1 - t_j t_r, which cancels where both saturate on
// one side, as c_j + c_r - c_j c_r with c = 1 - |t| (each formed without cancellation by its
// caller: 2 / (e^{2|x|} + 1), or the fused form's r and p r). Every factor is then accurate
// relative to itself, so the difference is within a few ulp of its own size given B_j - B_r,
// and tied keys give 0 exactly (tanh 0 = 0). The projections B = K W_k^T are rounded: for keys
// an ulp apart, B_j - B_r is that rounding's noise (a review's case: dQ 4.5 times its size, as
// in the float core), so the difference is exact for the float B, not for the keys.
#pragma once

#include <cmath>

namespace qkscope::score {

/// 1 - |tanh(x)| for t = tanh(x), accurate relative to itself: 2 / (e^{2|x|} + 1) where |t| is
/// past 1/2 (1 - |t| would keep only the ulp of 1 there), 1 - |t| below. (0 past |x| ~ 44 in
/// float, as the value underflows.)
template <class T>
T tanh_complement(T x, T t) {
  return std::abs(t) > T(0.5) ? T(2) / (std::exp(T(2) * std::abs(x)) + T(1)) : T(1) - std::abs(t);
}

/// tanh(x_j) - tanh(x_r) from tanh(x_j - x_r) (`tanh_delta`, the keys' own difference B_j - B_r),
/// t = tanh(x) and c = 1 - |t| (tanh_complement) of both: tanh_delta (1 - t_j t_r), with
/// 1 - t_j t_r = c_j + c_r - c_j c_r where both are past 1/2 on one side (the header).
/// Relative error: a few ulp, plus tanh_delta's and the c's own.
template <class T>
T tanh_difference(T tanh_delta, T t_j, T t_r, T c_j, T c_r) {
  const T m = t_j * t_r > T(0.5) ? c_j + c_r - c_j * c_r : T(1) - t_j * t_r;
  return tanh_delta * m;
}

/// tanh_difference for direct tanh (x_j = a + b_j, t = tanh(x)), from the keys' projections
/// b_j, b_r and the reference's t_r and c_r: the core's and the tiled direct form's exact pass.
template <class T>
T key_tanh_difference(T b_j, T b_r, T x_j, T t_j, T t_r, T c_r) {
  const T c_j = t_j * t_r > T(0.5) ? tanh_complement(x_j, t_j) : T(0);  // read only past 1/2
  return tanh_difference(std::tanh(b_j - b_r), t_j, t_r, c_j, c_r);
}

}  // namespace qkscope::score
