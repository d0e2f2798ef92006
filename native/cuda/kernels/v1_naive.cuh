// native/cuda/kernels/v1_naive.cuh — ladder step 1: the textbook three-kernel attention.
//   v1_logits:  one thread per (i, j):  z_ij = mask ? mods(f(q_i, k_j)) : -inf  -> global (L_q, L_k)
//   v1_softmax: one thread per row:     P_i = softmax(x_i), lse_i              (in place)
//   v1_pv:      one thread per (i, c):  O_ic = sum_j P_ij V_jc
// Every scoring function (dot family and additive), fp32. Reads each q, k row L times from
// global memory and writes/reads the (L_q, L_k) matrix three times: the baseline the later
// versions remove. The mask/modifier/softmax math is the pipeline/ functors'.
#pragma once

#include "common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

template <class Score>
__global__ void v1_logits(FwdParams p) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int i = int(blockIdx.y * blockDim.y + threadIdx.y);
  const int bh = int(blockIdx.z);
  if (i >= p.L_q || j >= p.L_k) return;
  const HeadView h = head_view(p, bh);
  float x = pipeline::neg_inf<float>();
  if (h.mask(i, j)) {
    const float* q = static_cast<const float*>(p.q) + h.q + offset_t(i) * p.d;
    const float* k = static_cast<const float*>(p.k) + h.k + offset_t(j) * p.d;
    float s = 0;
    for (int c = 0; c < p.d; ++c) s = Score::combine(s, q[c], k[c], Score::additive ? p.add_v[c] : 0.f);
    x = h.mods.z(s, i, j);  // z = x tau: v1_softmax divides by tau after the row max
  }
  p.scores[(h.row + i) * p.L_k + j] = x;
}

__global__ void v1_softmax(FwdParams p) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int bh = int(blockIdx.y);
  if (i >= p.L_q) return;
  float* row = p.scores + (offset_t(bh) * p.L_q + i) * p.L_k;
  float m = pipeline::neg_inf<float>();
  for (int j = 0; j < p.L_k; ++j) m = pipeline::max_(m, row[j]);
  pipeline::OnlineSoftmax<float> st(head_view(p, bh).mods.inv_tau);  // one block holding the whole row
  st.rescale(m);
  float l = 0;
  for (int j = 0; j < p.L_k; ++j) l += st.p(row[j]);
  st.add(l);
  const float inv = st.inv_l();
  for (int j = 0; j < p.L_k; ++j) row[j] = st.p(row[j]) * inv;
  p.lse[offset_t(bh) * p.L_q + i] = st.logsumexp();
}

__global__ void v1_pv(FwdParams p) {
  const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
  const int i = int(blockIdx.y * blockDim.y + threadIdx.y);
  const int bh = int(blockIdx.z);
  if (i >= p.L_q || c >= p.d_v) return;
  const HeadView h = head_view(p, bh);
  const float* P = p.scores + (h.row + i) * p.L_k;
  const float* V = static_cast<const float*>(p.v) + h.v;
  float acc = 0;
  for (int j = 0; j < p.L_k; ++j) acc = fmaf(P[j], V[offset_t(j) * p.d_v + c], acc);
  p.o[h.o + offset_t(i) * p.d_v + c] = acc;
}

}  // namespace qkscope::cuda::kern::QK_IMPL
