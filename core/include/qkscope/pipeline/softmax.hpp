// qkscope/pipeline/softmax.hpp — the online softmax of one query row, visited one key block
// at a time (Milakov & Gimelshein 2018; FlashAttention, Dao et al. 2022, Alg. 1), on the
// values z = x tau that pipeline::Logits returns (the logit before the division by tau):
//   m' = max(m, max_j z_j);  alpha = e^{(m - m') / tau};  l' = alpha l + sum_j e^{(z_j - m') / tau};
//   acc' = alpha acc + sum_j e^{(z_j - m') / tau} v_j;   O = acc / l,  lse = m / tau + log l.
// The row maximum is subtracted before dividing by tau, as the core and the CPU tiled kernels
// do (FlashAttention-2 gets the same from one FMA, x scale - m scale): folding 1 / tau into the
// logits first rounds each to eps |x|, which for close keys at a small tau is the whole
// difference between them (tau 9.4e-4, logits near -2189: output 1.3e-5 off; fuzzer).
// A row that has seen only -inf keeps m = -inf: it shifts by 0 instead (e^{-inf - 0} = 0,
// never -inf - -inf = NaN), and finishes with O = 0 and lse = -inf (attention.hpp's rule).
// Backward recomputes P from the saved lse (FlashAttention-2, Dao 2023, Alg. 2):
//   P_ij = e^{z_ij / tau - lse_i},  D_i = sum_c dO_ic O_ic,  dx_ij = P_ij (dP_ij - D_i)
// (Logits::weight: z / tau rounds as the forward's m / tau, so a one-key row has P = 1).
// A fully masked row (lse = -inf) shifts by +inf so that every P_ij is exactly 0.
#pragma once

#include "qkscope/merge/scales.hpp"
#include "qkscope/pipeline/host_device.hpp"

namespace qkscope::pipeline {

template <class T>
struct OnlineSoftmax {
  T m = neg_inf<T>();  // running max of the values z seen so far
  T l = 0;             // running sum of e^{(z - shift) / tau}
  T shift = 0;         // m, or 0 while m = -inf
  T inv_tau = 1;       // 1 / tau (ScoreMods::inv_tau)

  OnlineSoftmax() = default;
  QKSCOPE_HOST_DEVICE explicit OnlineSoftmax(T inverse_tau) : inv_tau(inverse_tau) {}

  /// Starts a key block whose largest z in this row is `block_max`: updates m and l
  /// and returns alpha, the factor the row's accumulator must be multiplied by.
  /// The block's weights are taken relative to the merged max (merge_scales, the step of
  /// merge_attention_states), so only the running state needs its factor.
  QKSCOPE_HOST_DEVICE T rescale(T block_max) {
    const MergeScales<T> ms = merge_scales(m, block_max, inv_tau);  // m = -inf: alpha 0 (acc, l are 0)
    m = ms.m;
    shift = m == neg_inf<T>() ? T(0) : m;
    l *= ms.alpha_a;
    return ms.alpha_a;
  }
  /// Unnormalised weight of value z in the current block (0 for z = -inf).
  QKSCOPE_HOST_DEVICE T p(T z) const { return exp_((z - shift) * inv_tau); }
  /// Adds the block's row sum of p.
  QKSCOPE_HOST_DEVICE void add(T rowsum) { l += rowsum; }
  /// Merges another partial state of the same row (split-K, or threads that each saw part
  /// of the row): both states are expressed relative to the larger max.
  QKSCOPE_HOST_DEVICE void merge(const OnlineSoftmax& o, T* alpha_self, T* alpha_other) {
    const MergeScales<T> ms = merge_scales(m, o.m, inv_tau);
    *alpha_self = ms.alpha_a;
    *alpha_other = ms.alpha_b;
    l = l * ms.alpha_a + o.l * ms.alpha_b;
    m = ms.m;
    shift = m == neg_inf<T>() ? T(0) : m;
  }
  /// 1 / l, or 0 for a row with no visible key (output 0).
  QKSCOPE_HOST_DEVICE T inv_l() const { return l > T(0) ? T(1) / l : T(0); }
  /// log sum_j e^{x_j} (x = z / tau); -inf for a fully masked row.
  QKSCOPE_HOST_DEVICE T logsumexp() const { return l > T(0) ? m * inv_tau + log_(l) : neg_inf<T>(); }
};

/// The shift that recomputes P from a saved logsumexp: P = e^{x - shift} (x = z / tau),
/// all 0 when the row was fully masked.
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
