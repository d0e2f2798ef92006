// qkscope/pipeline/softmax.hpp — the online softmax of one query row, visited one key block
// at a time (Milakov & Gimelshein 2018; FlashAttention, Dao et al. 2022, Alg. 1):
//   m' = max(m, max_j x_j);  alpha = e^{m - m'};  l' = alpha l + sum_j e^{x_j - m'};
//   acc' = alpha acc + sum_j e^{x_j - m'} v_j;   O = acc / l,  lse = m + log l.
// A row that has seen only -inf keeps m = -inf: it shifts by 0 instead (e^{-inf - 0} = 0,
// never -inf - -inf = NaN), and finishes with O = 0 and lse = -inf (attention.hpp's rule).
// Backward recomputes P from the saved lse (FlashAttention-2, Dao 2023, Alg. 2):
//   P_ij = e^{x_ij - lse_i},  D_i = sum_c dO_ic O_ic,  dx_ij = P_ij (dP_ij - D_i).
// A fully masked row (lse = -inf) shifts by +inf so that every P_ij is exactly 0.
#pragma once

#include "qkscope/merge/scales.hpp"
#include "qkscope/pipeline/host_device.hpp"

namespace qkscope::pipeline {

template <class T>
struct OnlineSoftmax {
  T m = neg_inf<T>();  // running max of the logits seen so far
  T l = 0;             // running sum of e^{x - shift}
  T shift = 0;         // m, or 0 while m = -inf

  /// Starts a key block whose largest logit in this row is `block_max`: updates m and l
  /// and returns alpha, the factor the row's accumulator must be multiplied by.
  /// The block's weights are taken relative to the merged max (merge_scales, the step of
  /// merge_attention_states), so only the running state needs its factor.
  QKSCOPE_HOST_DEVICE T rescale(T block_max) {
    const MergeScales<T> ms = merge_scales(m, block_max);  // m = -inf: alpha 0 (acc, l are 0)
    m = ms.m;
    shift = m == neg_inf<T>() ? T(0) : m;
    l *= ms.alpha_a;
    return ms.alpha_a;
  }
  /// Unnormalised weight of logit x in the current block (0 for x = -inf).
  QKSCOPE_HOST_DEVICE T p(T x) const { return exp_(x - shift); }
  /// Adds the block's row sum of p.
  QKSCOPE_HOST_DEVICE void add(T rowsum) { l += rowsum; }
  /// Merges another partial state of the same row (split-K, or threads that each saw part
  /// of the row): both states are expressed relative to the larger max.
  QKSCOPE_HOST_DEVICE void merge(const OnlineSoftmax& o, T* alpha_self, T* alpha_other) {
    const MergeScales<T> ms = merge_scales(m, o.m);
    *alpha_self = ms.alpha_a;
    *alpha_other = ms.alpha_b;
    l = l * ms.alpha_a + o.l * ms.alpha_b;
    m = ms.m;
    shift = m == neg_inf<T>() ? T(0) : m;
  }
  /// 1 / l, or 0 for a row with no visible key (output 0).
  QKSCOPE_HOST_DEVICE T inv_l() const { return l > T(0) ? T(1) / l : T(0); }
  /// log sum_j e^{x_j}; -inf for a fully masked row.
  QKSCOPE_HOST_DEVICE T logsumexp() const { return l > T(0) ? m + log_(l) : neg_inf<T>(); }
};

/// The shift that recomputes P from a saved logsumexp: P = e^{x - shift}, all 0 when the
/// row was fully masked.
template <class T>
QKSCOPE_HOST_DEVICE inline T recompute_shift(T lse) {
  return lse == neg_inf<T>() ? pos_inf<T>() : lse;
}

/// dL/dx of one softmax entry from P, dP = dL/dP and D = sum_c dO_c O_c of its row.
template <class T>
QKSCOPE_HOST_DEVICE inline T softmax_grad(T p, T dp, T D) {
  return p == T(0) ? T(0) : p * (dp - D);
}

/// Grouped-query attention by index mapping (Ainslie et al. 2023): query head h of sequence
/// b reads key/value head h / (heads / kv_heads) of the same sequence. Never copies heads.
struct Heads {
  int batch = 1, heads = 1, kv_heads = 1;
  QKSCOPE_HOST_DEVICE int count() const { return batch * heads; }
  QKSCOPE_HOST_DEVICE int kv_count() const { return batch * kv_heads; }
  QKSCOPE_HOST_DEVICE int batch_of(int bh) const { return bh / heads; }
  QKSCOPE_HOST_DEVICE int head_of(int bh) const { return bh % heads; }
  QKSCOPE_HOST_DEVICE int group() const { return heads / kv_heads; }
  /// Flat key/value head index of flat query head bh = b * heads + h.
  QKSCOPE_HOST_DEVICE int kv_of(int bh) const { return batch_of(bh) * kv_heads + head_of(bh) / group(); }
  /// The first flat query head that reads flat kv head g (the group is [first, first + group)).
  QKSCOPE_HOST_DEVICE int first_query_head(int g) const {
    return (g / kv_heads) * heads + (g % kv_heads) * group();
  }
};

}  // namespace qkscope::pipeline
