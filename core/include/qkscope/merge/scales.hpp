// qkscope/merge/scales.hpp — the two scalar steps of merging softmax states, as POD
// host/device functions (no Eigen), shared by merge_attention_states (merge.hpp), the tiled
// CPU kernels' online softmax (cpu/flash.hpp) and the CUDA kernels' (pipeline/softmax.hpp):
//   merge_scales(x_a, x_b):  m = max(x_a, x_b), alpha = e^{x - m} for each side;
//   merge_weights(lse_a, lse_b): the merged lse and the weight of each normalised output.
// (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax", §3.)
#pragma once

#include "qkscope/pipeline/host_device.hpp"

namespace qkscope {

/// Shared max and the factor that brings each of two log-domain values to it, for values
/// z = x * tau: m = max(z_a, z_b), alpha = e^{(z - m) inv_tau}. The difference is formed
/// before the division, so it is exact for close values (the core's order of operations:
/// attention.hpp subtracts the row maximum, then divides by tau). With both -inf the shift
/// is 0 (not -inf - -inf = NaN) and both factors are 0.
template <class T>
struct MergeScales {
  T m, alpha_a, alpha_b;
};

template <class T>
QKSCOPE_HOST_DEVICE inline MergeScales<T> merge_scales(T z_a, T z_b, T inv_tau) {
  const T m = pipeline::max_(z_a, z_b);
  const T s = m == pipeline::neg_inf<T>() ? T(0) : m;
  return {m, pipeline::exp_((z_a - s) * inv_tau), pipeline::exp_((z_b - s) * inv_tau)};
}

/// The same at tau = 1 (log-domain values x: alpha = e^{x - m}); one function, so the merge
/// of states and the kernels' online softmax share every operation (a product by 1 is exact).
template <class T>
QKSCOPE_HOST_DEVICE inline MergeScales<T> merge_scales(T x_a, T x_b) {
  return merge_scales(x_a, x_b, T(1));
}

/// Weights of the two normalised outputs and the merged lse of one row.
template <class T>
struct MergeWeights {
  T lse, w_a, w_b;
};

/// One row of the merge: lse = m + log(alpha_a + alpha_b), w = alpha / (alpha_a + alpha_b).
/// An empty side gets weight exactly 0 and the other exactly 1, with lse unchanged.
template <class T>
QKSCOPE_HOST_DEVICE inline MergeWeights<T> merge_weights(T lse_a, T lse_b) {
  if (lse_b == pipeline::neg_inf<T>()) return {lse_a, lse_a == pipeline::neg_inf<T>() ? T(0) : T(1), T(0)};
  if (lse_a == pipeline::neg_inf<T>()) return {lse_b, T(0), T(1)};
  const MergeScales<T> s = merge_scales(lse_a, lse_b);
  const T sum = s.alpha_a + s.alpha_b;  // in [1, 2]: no cancellation, no overflow
  return {s.m + pipeline::log_(sum), s.alpha_a / sum, s.alpha_b / sum};
}

}  // namespace qkscope
