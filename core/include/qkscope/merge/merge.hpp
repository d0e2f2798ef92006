// qkscope/merge/merge.hpp — mergeable attention states. Softmax attention of a query over
// two disjoint key sets A and B, given as (o_a, lse_a) and (o_b, lse_b) with
// lse = log sum_j e^{z_j} over the set and o = sum_j softmax_j v_j, combines exactly:
//   lse = log(e^{lse_a} + e^{lse_b}),   o = e^{lse_a - lse} o_a + e^{lse_b - lse} o_b.
// This is the operation behind split-KV decoding (Flash-Decoding, Dao et al. 2023),
// sequence/ring parallel attention (Liu et al. 2023) and FlashInfer's "attention states"
// (Ye et al. 2025, §2.2, the ⊕ operator); inside one kernel it is the online-softmax update
// (Milakov & Gimelshein 2018): the tiled CPU kernels and the CUDA kernels' online softmax
// call the same merge_scales() (merge/scales.hpp) that this merge is built on.
// Both exponents are taken relative to the larger lse, so nothing overflows. An empty
// partition (lse = -inf, o = 0: no visible key, attention.hpp's rule) is the identity, and
// is handled without arithmetic so the other state comes back bit for bit; two empty
// partitions give (0, -inf). The merge is commutative bit for bit.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/output_range.hpp"
#include "qkscope/merge/scales.hpp"
#include "qkscope/types.hpp"

namespace qkscope {

/// An attention result restricted to what merging needs.
template <class T>
struct AttentionState {
  Mat<T> output;     // (L_q, d_v)
  Vec<T> logsumexp;  // (L_q); -inf = no visible key
};

/// Merges the states of softmax attention over two disjoint key sets into the state over
/// their union (file comment). Both must come from the same queries, scale, temperature
/// and score modifiers, e.g. attention_forward() with two complementary keep masks.
/// o_a, o_b: (L_q, d_v); lse_a, lse_b: (L_q), entries finite or -inf (the logsumexp of
/// attention_forward / tiled forward). Throws std::invalid_argument naming the argument
/// for mismatched shapes, an empty o_a, a non-finite output, or an lse that is NaN or +inf.
template <class T>
AttentionState<T> merge_attention_states(const Mat<T>& o_a, const Vec<T>& lse_a, const Mat<T>& o_b,
                                         const Vec<T>& lse_b) {
  detail::require_nonempty(o_a, "o_a");
  const Eigen::Index L = o_a.rows(), dv = o_a.cols();
  detail::require_shape(o_b, L, dv, "o_b (shape of o_a)");
  detail::require(lse_a.size() == L, "lse_a must have L_q = " + std::to_string(L) +
                                         " entries (the rows of o_a), got " + std::to_string(lse_a.size()));
  detail::require(lse_b.size() == L, "lse_b must have L_q = " + std::to_string(L) +
                                         " entries (the rows of o_a), got " + std::to_string(lse_b.size()));
  detail::require_finite(o_a, "o_a");
  detail::require_finite(o_b, "o_b");
  for (Eigen::Index i = 0; i < L; ++i)
    for (const auto& [lse, name] : {std::pair{lse_a(i), "lse_a"}, std::pair{lse_b(i), "lse_b"}})
      detail::require(!std::isnan(double(lse)) && double(lse) != std::numeric_limits<double>::infinity(),
                      std::string(name) + " must be finite or -inf, got " + detail::num(double(lse)) +
                          " at " + std::to_string(i));
  AttentionState<T> r;
  r.output.resize(L, dv);
  r.logsumexp.resize(L);
  for (Eigen::Index i = 0; i < L; ++i) {
    const MergeWeights<T> w = merge_weights(lse_a(i), lse_b(i));
    r.logsumexp(i) = w.lse;
    if (w.w_b == T(0)) r.output.row(i) = w.w_a == T(0) ? Mat<T>::Zero(1, dv) : Mat<T>(o_a.row(i));
    else if (w.w_a == T(0)) r.output.row(i) = o_b.row(i);
    else r.output.row(i) = w.w_a * o_a.row(i) + w.w_b * o_b.row(i);
  }
  // w_a + w_b can round past 1: o_a = o_b = FLT_MAX merged to inf (review).
  detail::settle_overflowed_output(r.output);
  return r;
}

}  // namespace qkscope
