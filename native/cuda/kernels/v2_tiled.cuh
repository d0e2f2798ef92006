// native/cuda/kernels/v2_tiled.cuh — ladder step 2: the same three stages, with the two
// matrix products tiled through shared memory (16 x 16 tiles, Kirk & Hwu ch. 5) and a
// warp per row softmax:
//   v2_logits:  S tile = Q tile . K tile^T over d in steps of 16 (additive: the tanh sum over
//               d_h in steps of 16); 16 x 16 blocks of the mask that are fully masked are not
//               computed at all (pipeline::Mask::classify), only written as -inf.
//   v2_softmax: one warp per row: max, sum and normalise with warp shuffles.
//   v2_pv:      O tile = P tile . V tile over the key range the band allows (pipeline::keys_for).
// Each q/k element is read from global memory L/16 times instead of L times; the (L_q, L_k)
// matrix still goes through global memory (what version 3 removes).
#pragma once

#include "common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

template <class Score>
__global__ void __launch_bounds__(256) v2_logits(FwdParams p) {
  constexpr int T = kV2Tile, LD = T + 1;
  QK_SMEM(smem);
  float* As = reinterpret_cast<float*>(smem);  // [T][LD] query rows
  float* Bs = As + T * LD;                     // [T][LD] key rows
  float* vs = Bs + T * LD;                     // [T] additive v
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int j0 = int(blockIdx.x) * T, i0 = int(blockIdx.y) * T, bh = int(blockIdx.z);
  const HeadView h = head_view(p, bh);
  const int i = i0 + ty, j = j0 + tx;
  const pipeline::BlockKind kind =
      h.mask.classify(i0, pipeline::imin(i0 + T, p.L_q), j0, pipeline::imin(j0 + T, p.L_k));
  const float* q = static_cast<const float*>(p.q) + h.q;
  const float* k = static_cast<const float*>(p.k) + h.k;
  float s = 0;
  if (kind != pipeline::BlockKind::empty) {  // uniform over the block: the barriers stay convergent
    for (int k0 = 0; k0 < p.d; k0 += T) {
      As[ty * LD + tx] = (i0 + ty < p.L_q && k0 + tx < p.d) ? q[offset_t(i0 + ty) * p.d + k0 + tx] : 0.f;
      Bs[ty * LD + tx] = (j0 + ty < p.L_k && k0 + tx < p.d) ? k[offset_t(j0 + ty) * p.d + k0 + tx] : 0.f;
      if (Score::additive && ty == 0) vs[tx] = k0 + tx < p.d ? p.add_v[k0 + tx] : 0.f;
      __syncthreads();
      QK_UNROLL
      for (int kk = 0; kk < T; ++kk)
        s = Score::combine(s, As[ty * LD + kk], Bs[tx * LD + kk], Score::additive ? vs[kk] : 0.f);
      __syncthreads();
    }
  }
  if (i < p.L_q && j < p.L_k)
    p.scores[(h.row + i) * p.L_k + j] =
        kind == pipeline::BlockKind::empty ? pipeline::neg_inf<float>() : pipeline::Logits<float>{h.mask, h.mods}(s, i, j, kind);
}

__global__ void __launch_bounds__(256) v2_softmax(FwdParams p) {
  const int lane = int(threadIdx.x) % 32, w = int(threadIdx.x) / 32;
  const int i = int(blockIdx.x) * 8 + w, bh = int(blockIdx.y);
  if (i >= p.L_q) return;  // whole warps leave together; no block barrier follows
  float* row = p.scores + (offset_t(bh) * p.L_q + i) * p.L_k;
  float m = pipeline::neg_inf<float>();
  for (int j = lane; j < p.L_k; j += 32) m = pipeline::max_(m, row[j]);
  pipeline::OnlineSoftmax<float> st(head_view(p, bh).mods.inv_tau);
  st.rescale(group_max<32>(m));
  float l = 0;
  for (int j = lane; j < p.L_k; j += 32) l += st.p(row[j]);
  st.add(group_sum<32>(l));
  const float inv = st.inv_l();
  for (int j = lane; j < p.L_k; j += 32) row[j] = st.p(row[j]) * inv;
  if (lane == 0) p.lse[offset_t(bh) * p.L_q + i] = st.logsumexp();
}

__global__ void __launch_bounds__(256) v2_pv(FwdParams p) {
  constexpr int T = kV2Tile, LD = T + 1;
  QK_SMEM(smem);
  float* Ps = reinterpret_cast<float*>(smem);  // [T][LD]
  float* Vs = Ps + T * LD;                     // [T][LD]
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int c0 = int(blockIdx.x) * T, i0 = int(blockIdx.y) * T, bh = int(blockIdx.z);
  const HeadView h = head_view(p, bh);
  const float* P = p.scores + h.row * p.L_k;
  const float* V = static_cast<const float*>(p.v) + h.v;
  // Keys outside the band have P = 0: only the band's key range is multiplied.
  const pipeline::Range kr = h.mask.keys_for(i0, pipeline::imin(i0 + T, p.L_q));
  float acc = 0;
  if (!kr.empty())
    for (int j0 = (kr.begin / T) * T; j0 < kr.end; j0 += T) {
      Ps[ty * LD + tx] = (i0 + ty < p.L_q && j0 + tx < p.L_k) ? P[offset_t(i0 + ty) * p.L_k + j0 + tx] : 0.f;
      Vs[ty * LD + tx] = (j0 + ty < p.L_k && c0 + tx < p.d_v) ? V[offset_t(j0 + ty) * p.d_v + c0 + tx] : 0.f;
      __syncthreads();
      QK_UNROLL
      for (int jj = 0; jj < T; ++jj) acc = fmaf(Ps[ty * LD + jj], Vs[jj * LD + tx], acc);
      __syncthreads();
    }
  const int i = i0 + ty, c = c0 + tx;
  if (i < p.L_q && c < p.d_v) p.o[h.o + offset_t(i) * p.d_v + c] = acc;
}

}  // namespace qkscope::cuda::kern::QK_IMPL
