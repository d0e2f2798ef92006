// native/cuda/kernels/v3_flash.cuh — ladder step 3: fused flash-style forward (fp32, SIMT).
// One block of 256 threads per (query block of BR = 16 RM rows, head); key blocks of 64:
//   for each key block the band allows (BlockClassifier::key_blocks), skipping empty ones:
//     S = Q K^T (additive: sum_h v_h tanh(A_ih + B_jh), d_h streamed in chunks of 32)
//     z = pipeline::Logits(S);  m, l, acc updated by pipeline::OnlineSoftmax;  acc += P V
//   O = acc / l,  lse = m / tau + log l   (saved for the backward, FlashAttention-2 style)
// Never stores the (L_q, L_k) matrix, nor the additive (L_q, L_k, d_h) tanh tensor.
// Threads form a 16 x 16 grid: thread (ty, tx) owns rows ty*RM + r and keys tx + 16 n of the
// score tile, and output columns tx + 16 c; a row's 16 owners are one half-warp, so row
// max/sum are 4 xor-shuffles and P only needs a __syncwarp before the P V product.
// Shared memory (floats): P [BR][BC+pad], V [BC][d_v], Q [BR][d|1], K [BC][d|1] (dot) or
// A [BR][33], B [BC][33], v [32], 8 warp maxima (additive); odd row strides keep column reads
// conflict-free.
// Additive: a d_h chunk whose |A|, |B| stay <= AdditiveScore::kExpLimit is turned into
// e^{2A}, e^{2B} in shared memory (O(BR + BC) exps per chunk), so that each (i, j, h) term is
// one FMA, one hardware reciprocal and two FMAs instead of a tanhf (the product-of-exponentials
// formula of the CPU kernel, docs in native/bench/NOTES.md); other chunks keep tanhf.
// Split-KV (p.kv_splits > 1, additive only, see v3_kv_splits): CTA z of a query block takes
// the z-th share of its key blocks and writes a partial (O, lse); v3_combine merges them.
// Template: Score (DotScore, AdditiveScore), RM (rows per thread), DV (max d_v, multiple of 16).
// Dao et al. 2022 (Alg. 1), Dao 2023 (FlashAttention-2, §3.1: loop order, lse output).
#pragma once

#include "common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

template <class Score, int RM, int DV>
__global__ void __launch_bounds__(256, DV == 64 ? 2 : 1) v3_forward(FwdParams p) {
  constexpr int BR = 16 * RM, BC = V3Shape::BC, CN = BC / 16, VN = DV / 16, HC = V3Shape::HC;
  constexpr int LDP = V3Shape::ldp(RM);
  static_assert(DV % 16 == 0, "DV must be a multiple of 16");
  const int tid = int(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const int qb = int(blockIdx.x), bh = int(blockIdx.y), split = int(blockIdx.z), i0 = qb * BR;
  const int d = p.d, dv = p.d_v;
  const HeadView h = head_view(p, bh);
  const pipeline::Logits<float> lg{h.mask, h.mods};
  const pipeline::BlockClassifier bc = classifier(p, h.mask, BR, BC);
  const float* q = static_cast<const float*>(p.q) + h.q;
  const float* k = static_cast<const float*>(p.k) + h.k;
  const float* v = static_cast<const float*>(p.v) + h.v;

  QK_SMEM(smem);
  const int ldq = Score::additive ? HC + 1 : odd_stride(d);
  float* Ps = reinterpret_cast<float*>(smem);  // [BR][LDP]
  float* Vs = Ps + BR * LDP;                   // [BC][dv]
  float* Qs = Vs + BC * dv;                    // [BR][ldq]
  float* Ks = Qs + BR * ldq;                   // [BC][ldq]
  float* vs = Ks + BC * ldq;                   // [HC] (additive)
  float* wmax = vs + HC;                       // [8] per-warp max |A|, |B| of a chunk (additive)

  if constexpr (!Score::additive)  // the query block stays in shared memory for every key block
    for (int e = tid; e < BR * d; e += 256) {
      const int r = e / d, c = e % d;
      Qs[r * ldq + c] = i0 + r < p.L_q ? q[offset_t(i0 + r) * d + c] : 0.f;
    }

  pipeline::OnlineSoftmax<float> st[RM];
  QK_UNROLL
  for (int r = 0; r < RM; ++r) st[r] = pipeline::OnlineSoftmax<float>(h.mods.inv_tau);
  float acc[RM][VN];
  QK_UNROLL
  for (int r = 0; r < RM; ++r)
    QK_UNROLL
    for (int c = 0; c < VN; ++c) acc[r][c] = 0.f;

  pipeline::Range kbs = bc.key_blocks(qb);
  if (p.kv_splits > 1) {  // this CTA's share of the key blocks
    const int n = kbs.end - kbs.begin, b0 = kbs.begin;
    kbs.begin = b0 + int((long long)n * split / p.kv_splits);
    kbs.end = b0 + int((long long)n * (split + 1) / p.kv_splits);
  }
  for (int kb = kbs.begin; kb < kbs.end; ++kb) {
    const pipeline::BlockKind kind = bc(qb, kb);  // the same for every thread of the block
    if (kind == pipeline::BlockKind::empty) continue;
    const int j0 = kb * BC;
    __syncthreads();  // every thread is done with the previous block's P, V, K
    for (int e = tid; e < BC * dv; e += 256) {
      const int r = e / dv, c = e % dv;
      Vs[r * dv + c] = j0 + r < p.L_k ? v[offset_t(j0 + r) * dv + c] : 0.f;
    }
    float s[RM][CN];
    QK_UNROLL
    for (int r = 0; r < RM; ++r)
      QK_UNROLL
      for (int n = 0; n < CN; ++n) s[r][n] = 0.f;
    if constexpr (!Score::additive) {
      for (int e = tid; e < BC * d; e += 256) {
        const int r = e / d, c = e % d;
        Ks[r * ldq + c] = j0 + r < p.L_k ? k[offset_t(j0 + r) * d + c] : 0.f;
      }
      __syncthreads();
      for (int c = 0; c < d; ++c) {
        float qv[RM], kv[CN];
        QK_UNROLL
        for (int r = 0; r < RM; ++r) qv[r] = Qs[(ty * RM + r) * ldq + c];
        QK_UNROLL
        for (int n = 0; n < CN; ++n) kv[n] = Ks[(tx + 16 * n) * ldq + c];
        QK_UNROLL
        for (int r = 0; r < RM; ++r)
          QK_UNROLL
          for (int n = 0; n < CN; ++n) s[r][n] = fmaf(qv[r], kv[n], s[r][n]);
      }
    } else {
      // Each thread's share of a chunk: QL values of A and KL of B, element e = tid + 256 u.
      // They are fetched into registers one chunk ahead, so the global-load latency of chunk
      // h0 + HC overlaps the terms of chunk h0 (H200, L 512, d_h 512: 0.192 -> 0.159 ms against
      // loading each chunk in a run-time loop just before it is used).
      constexpr int QL = BR * HC / 256, KL = BC * HC / 256;
      static_assert(BR * HC % 256 == 0 && BC * HC % 256 == 0, "chunk shares must be whole");
      float ra[QL], rb[KL];
      auto fetch = [&](int h) {
        const int n = pipeline::imin(HC, d - h);
        QK_UNROLL
        for (int u = 0; u < QL; ++u) {
          const int e = tid + 256 * u, r = e / HC, c = e % HC;
          ra[u] = (i0 + r < p.L_q && c < n) ? q[offset_t(i0 + r) * d + h + c] : 0.f;
        }
        QK_UNROLL
        for (int u = 0; u < KL; ++u) {
          const int e = tid + 256 * u, r = e / HC, c = e % HC;
          rb[u] = (j0 + r < p.L_k && c < n) ? k[offset_t(j0 + r) * d + h + c] : 0.f;
        }
      };
      fetch(0);
      for (int h0 = 0; h0 < d; h0 += HC) {
        const int hn = pipeline::imin(HC, d - h0);
        __syncthreads();  // the previous chunk (and its warp maxima) has been consumed
        float big = 0.f;  // largest |A|, |B| this thread stored
        QK_UNROLL
        for (int u = 0; u < QL; ++u) {
          const int e = tid + 256 * u;
          Qs[(e / HC) * ldq + e % HC] = ra[u];
          big = pipeline::max_(big, ra[u] < 0.f ? -ra[u] : ra[u]);
        }
        QK_UNROLL
        for (int u = 0; u < KL; ++u) {
          const int e = tid + 256 * u;
          Ks[(e / HC) * ldq + e % HC] = rb[u];
          big = pipeline::max_(big, rb[u] < 0.f ? -rb[u] : rb[u]);
        }
        if (h0 + HC < d) fetch(h0 + HC);  // in flight while this chunk is computed
        if (tid < HC) vs[tid] = tid < hn ? p.add_v[h0 + tid] : 0.f;
        big = group_max<32>(big);
        if (tid % 32 == 0) wmax[tid / 32] = big;
        __syncthreads();
        float chunk_max = 0.f;
        QK_UNROLL
        for (int w = 0; w < 8; ++w) chunk_max = pipeline::max_(chunk_max, wmax[w]);
        if (chunk_max <= AdditiveScore::kExpLimit) {  // the same decision in every thread
          // Each thread turns the values it stored into e^{2x}: no other thread touches them.
          for (int e = tid; e < BR * HC; e += 256) Qs[(e / HC) * ldq + e % HC] = pipeline::exp_(2.f * Qs[(e / HC) * ldq + e % HC]);
          for (int e = tid; e < BC * HC; e += 256) Ks[(e / HC) * ldq + e % HC] = pipeline::exp_(2.f * Ks[(e / HC) * ldq + e % HC]);
          __syncthreads();
          // All HC steps, unrolled: columns past hn hold e^0 = 1 and weight 0 (term 0), and a
          // compile-time trip count lets the loads and reciprocals of later steps overlap.
          QK_UNROLL
          for (int c = 0; c < HC; ++c) {
            float qv[RM], kv[CN];
            const float w = vs[c];
            QK_UNROLL
            for (int r = 0; r < RM; ++r) qv[r] = Qs[(ty * RM + r) * ldq + c];
            QK_UNROLL
            for (int n = 0; n < CN; ++n) kv[n] = Ks[(tx + 16 * n) * ldq + c];
            QK_UNROLL
            for (int r = 0; r < RM; ++r)
              QK_UNROLL
              for (int n = 0; n < CN; ++n) s[r][n] = AdditiveScore::combine_exp(s[r][n], qv[r], kv[n], w);
          }
        } else {
          for (int c = 0; c < hn; ++c) {
            float qv[RM], kv[CN];
            const float w = vs[c];
            QK_UNROLL
            for (int r = 0; r < RM; ++r) qv[r] = Qs[(ty * RM + r) * ldq + c];
            QK_UNROLL
            for (int n = 0; n < CN; ++n) kv[n] = Ks[(tx + 16 * n) * ldq + c];
            QK_UNROLL
            for (int r = 0; r < RM; ++r)
              QK_UNROLL
              for (int n = 0; n < CN; ++n) s[r][n] = Score::combine(s[r][n], qv[r], kv[n], w);
          }
        }
      }
    }
    // Logits, online softmax, P into shared memory (each half-warp writes its own rows).
    QK_UNROLL
    for (int r = 0; r < RM; ++r) {
      const int i = i0 + ty * RM + r;
      float mx = pipeline::neg_inf<float>();
      QK_UNROLL
      for (int n = 0; n < CN; ++n) {
        s[r][n] = lg(s[r][n], i, j0 + tx + 16 * n, kind);
        mx = pipeline::max_(mx, s[r][n]);
      }
      const float alpha = st[r].rescale(group_max<16>(mx));
      float sum = 0.f;
      QK_UNROLL
      for (int n = 0; n < CN; ++n) {
        const float pv = st[r].p(s[r][n]);
        Ps[(ty * RM + r) * LDP + tx + 16 * n] = pv;
        sum += pv;
      }
      st[r].add(group_sum<16>(sum));
      QK_UNROLL
      for (int c = 0; c < VN; ++c) acc[r][c] *= alpha;
    }
    __syncwarp();  // the half-warp's P rows are visible to the half-warp (V was synced above)
    const int bk = pipeline::imin(BC, p.L_k - j0);
    for (int j = 0; j < bk; ++j) {
      float vv[VN];
      QK_UNROLL
      for (int c = 0; c < VN; ++c) vv[c] = tx + 16 * c < dv ? Vs[j * dv + tx + 16 * c] : 0.f;
      QK_UNROLL
      for (int r = 0; r < RM; ++r) {
        const float pr = Ps[(ty * RM + r) * LDP + j];
        QK_UNROLL
        for (int c = 0; c < VN; ++c) acc[r][c] = fmaf(pr, vv[c], acc[r][c]);
      }
    }
  }
  // O and lse, or this split's partial O and lse (rows of the split's slab).
  float* o = p.o + h.o;
  float* lse = p.lse + h.row;
  if (p.kv_splits > 1) {
    const offset_t rows = offset_t(p.heads.count()) * p.L_q;
    o = p.part_o + offset_t(split) * rows * dv + h.o;
    lse = p.part_lse + offset_t(split) * rows + h.row;
  }
  QK_UNROLL
  for (int r = 0; r < RM; ++r) {
    const int i = i0 + ty * RM + r;
    if (i >= p.L_q) continue;
    const float inv = st[r].inv_l();
    QK_UNROLL
    for (int c = 0; c < VN; ++c)
      if (tx + 16 * c < dv) o[offset_t(i) * dv + tx + 16 * c] = acc[r][c] * inv;
    if (tx == 0) lse[i] = st[r].logsumexp();
  }
}

/// Split-KV combine: one CTA of 128 threads per row r (of batch*heads*L_q): with the splits'
/// logsumexps l_s and m = max_s l_s, O = sum_s e^{l_s - m} O_s / sum_s e^{l_s - m} and
/// lse = m + log sum_s e^{l_s - m}; a row no split saw (every l_s = -inf) gets O = 0, lse = -inf.
__global__ void __launch_bounds__(128) v3_combine(FwdParams p) {
  const offset_t rows = offset_t(p.heads.count()) * p.L_q, r = offset_t(blockIdx.x);
  const int dv = p.d_v;
  float m = pipeline::neg_inf<float>();
  for (int s = 0; s < p.kv_splits; ++s) m = pipeline::max_(m, p.part_lse[s * rows + r]);
  float w[kV3MaxSplits], l = 0.f;
  QK_UNROLL
  for (int s = 0; s < kV3MaxSplits; ++s) {
    w[s] = s < p.kv_splits && m != pipeline::neg_inf<float>() ? pipeline::exp_(p.part_lse[s * rows + r] - m) : 0.f;
    l += w[s];
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  for (int c = int(threadIdx.x); c < dv; c += 128) {
    float acc = 0.f;
    QK_UNROLL
    for (int s = 0; s < kV3MaxSplits; ++s)
      if (s < p.kv_splits) acc = fmaf(w[s], p.part_o[(s * rows + r) * dv + c], acc);
    p.o[r * dv + c] = acc * inv;
  }
  if (threadIdx.x == 0) p.lse[r] = l > 0.f ? m + pipeline::log_(l) : pipeline::neg_inf<float>();
}

}  // namespace qkscope::cuda::kern::QK_IMPL
