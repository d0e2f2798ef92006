// native/cuda/kernels/v3_backward.cuh — backward of the flash forward (fp32, dot family),
// FlashAttention-2 style (Dao 2023, Alg. 2): P is recomputed from the saved logsumexp,
//   P = e^{z / tau - lse} (pipeline::Logits::weight),  D_i = sum_c dO_ic O_ic,  dx = P (dO V^T - D),  draw = pipeline::grad_raw(dx)
//   dV = P^T dO,  dK = draw^T Q,  dQ = draw K.
// Three kernels, no atomics, deterministic:
//   v3_bwd_delta: one thread per row computes D (in dP's summation order).
//   v3_bwd_dkdv:  one block per (key block of 64, kv head): loops over the query heads of its
//                 GQA group and the query blocks that can see it (BlockClassifier::query_blocks),
//                 accumulating dK, dV in registers (thread t owns key t/4, columns t%4 + 4m).
//   v3_bwd_dq:    one block per (query block of 64, head): loops over its key blocks,
//                 accumulating dQ (thread t owns row t/4, columns t%4 + 4m).
// FlashAttention-2 instead adds dQ with atomicAdd from the key-block loop; the second pass
// here recomputes S and dP once more (about 1.4x the work) for bitwise reproducibility.
// Template DM: the largest of d and d_v (64 or 128).
#pragma once

#include "common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

/// D_i = sum_c dO_ic O_ic, one thread per row, summed in the order p_and_ds sums
/// dP_ij = sum_c dO_ic V_jc: when a row sees a single key, O_i = V_j exactly and dP - D is
/// exactly 0, as in the reference (a lane-strided sum would leave rounding noise there).
__global__ void __launch_bounds__(256) v3_bwd_delta(BwdParams bp) {
  const FwdParams& p = bp.f;
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x), bh = int(blockIdx.y);
  if (i >= p.L_q) return;
  const offset_t row = offset_t(bh) * p.L_q + i;
  const float* o = p.o + row * p.d_v;
  const float* g = bp.dout + row * p.d_v;
  float s = 0.f;
  for (int c = 0; c < p.d_v; ++c) s = fmaf(g[c], o[c], s);
  bp.delta[row] = s;
}

namespace bwd {

/// Loads rows [r0, r0 + n) of a (L, w) matrix into a zero-padded [n][ld] tile.
QK_DEVICE void load_tile(float* dst, int ld, const float* src, int r0, int n, int L, int w, int tid) {
  for (int e = tid; e < n * w; e += 256) {
    const int r = e / w, c = e % w;
    dst[r * ld + c] = r0 + r < L ? src[offset_t(r0 + r) * w + c] : 0.f;
  }
}

/// The 64 x 64 tiles S = Q K^T and dP = dO V^T of threads (ty, tx), turned into P and
/// dL/draw (rows ty*4 + r, keys tx + 16 n), written to Ps (if given) and dSs.
QK_DEVICE void p_and_ds(const pipeline::Logits<float>& lg, pipeline::BlockKind kind, int i0, int j0, const float* Qs,
                        const float* Ks, int ldq, int d, const float* dOs, const float* Vs, int ldv, int dv,
                        const float* shift_s, const float* D_s, float* Ps, float* dSs, int tx, int ty) {
  constexpr int LDP = V3Bwd::LDP;
  float s[4][4], dp[4][4];
  QK_UNROLL
  for (int r = 0; r < 4; ++r)
    QK_UNROLL
    for (int n = 0; n < 4; ++n) s[r][n] = dp[r][n] = 0.f;
  for (int c = 0; c < d; ++c) {
    float a[4], b[4];
    QK_UNROLL
    for (int r = 0; r < 4; ++r) a[r] = Qs[(ty * 4 + r) * ldq + c];
    QK_UNROLL
    for (int n = 0; n < 4; ++n) b[n] = Ks[(tx + 16 * n) * ldq + c];
    QK_UNROLL
    for (int r = 0; r < 4; ++r)
      QK_UNROLL
      for (int n = 0; n < 4; ++n) s[r][n] = fmaf(a[r], b[n], s[r][n]);
  }
  for (int c = 0; c < dv; ++c) {
    float a[4], b[4];
    QK_UNROLL
    for (int r = 0; r < 4; ++r) a[r] = dOs[(ty * 4 + r) * ldv + c];
    QK_UNROLL
    for (int n = 0; n < 4; ++n) b[n] = Vs[(tx + 16 * n) * ldv + c];
    QK_UNROLL
    for (int r = 0; r < 4; ++r)
      QK_UNROLL
      for (int n = 0; n < 4; ++n) dp[r][n] = fmaf(a[r], b[n], dp[r][n]);
  }
  QK_UNROLL
  for (int r = 0; r < 4; ++r) {
    const int rr = ty * 4 + r;
    QK_UNROLL
    for (int n = 0; n < 4; ++n) {
      const int cc = tx + 16 * n;
      const float pr = lg.weight(lg(s[r][n], i0 + rr, j0 + cc, kind), shift_s[rr]);
      if (Ps) Ps[rr * LDP + cc] = pr;
      dSs[rr * LDP + cc] = lg.mods.grad_raw(pipeline::softmax_grad(pr, dp[r][n], D_s[rr]), s[r][n]);
    }
  }
}

}  // namespace bwd

template <int DM>
__global__ void __launch_bounds__(256, 1) v3_bwd_dkdv(BwdParams bp) {
  constexpr int BR = V3Bwd::BR, BC = V3Bwd::BC, LDP = V3Bwd::LDP, M = DM / 4;
  const FwdParams& p = bp.f;
  const int tid = int(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const int kb = int(blockIdx.x), g = int(blockIdx.y), j0 = kb * BC;
  const int d = p.d, dv = p.d_v, ldq = odd_stride(d), ldv = odd_stride(dv);
  QK_SMEM(smem);
  float* Ks = reinterpret_cast<float*>(smem);  // [BC][ldq]
  float* Vs = Ks + BC * ldq;                   // [BC][ldv]
  float* Qs = Vs + BC * ldv;                   // [BR][ldq]
  float* dOs = Qs + BR * ldq;                  // [BR][ldv]
  float* Ps = dOs + BR * ldv;                  // [BR][LDP]
  float* dSs = Ps + BR * LDP;                  // [BR][LDP]
  float* shift_s = dSs + BR * LDP;             // [BR]
  float* D_s = shift_s + BR;                   // [BR]
  bwd::load_tile(Ks, ldq, static_cast<const float*>(p.k) + offset_t(g) * p.L_k * d, j0, BC, p.L_k, d, tid);
  bwd::load_tile(Vs, ldv, static_cast<const float*>(p.v) + offset_t(g) * p.L_k * dv, j0, BC, p.L_k, dv, tid);

  const int jj = tid / 4, c0 = tid % 4;  // this thread's key and first column
  float dk[M], dva[M];
  QK_UNROLL
  for (int m = 0; m < M; ++m) dk[m] = dva[m] = 0.f;

  const int first = p.heads.first_query_head(g);
  for (int bh = first; bh < first + p.heads.group(); ++bh) {
    const HeadView h = head_view(p, bh);
    const pipeline::Logits<float> lg{h.mask, h.mods};
    const pipeline::BlockClassifier bc = classifier(p, h.mask, BR, BC);
    const pipeline::Range qbs = bc.query_blocks(kb);
    for (int qb = qbs.begin; qb < qbs.end; ++qb) {
      const pipeline::BlockKind kind = bc(qb, kb);
      if (kind == pipeline::BlockKind::empty) continue;
      const int i0 = qb * BR;
      __syncthreads();  // the previous query block's tiles are consumed
      bwd::load_tile(Qs, ldq, static_cast<const float*>(p.q) + h.q, i0, BR, p.L_q, d, tid);
      bwd::load_tile(dOs, ldv, bp.dout + h.o, i0, BR, p.L_q, dv, tid);
      if (tid < BR) {
        const bool in = i0 + tid < p.L_q;
        shift_s[tid] = in ? lg.shift_of(p.lse[h.row + i0 + tid]) : pipeline::pos_inf<float>();
        D_s[tid] = in ? bp.delta[h.row + i0 + tid] : 0.f;
      }
      __syncthreads();
      bwd::p_and_ds(lg, kind, i0, j0, Qs, Ks, ldq, d, dOs, Vs, ldv, dv, shift_s, D_s, Ps, dSs, tx, ty);
      __syncthreads();
      for (int r = 0; r < BR; ++r) {
        const float pv = Ps[r * LDP + jj], ds = dSs[r * LDP + jj];
        QK_UNROLL
        for (int m = 0; m < M; ++m) {
          const int c = c0 + 4 * m;
          if (c < dv) dva[m] = fmaf(pv, dOs[r * ldv + c], dva[m]);
          if (c < d) dk[m] = fmaf(ds, Qs[r * ldq + c], dk[m]);
        }
      }
    }
  }
  if (j0 + jj < p.L_k) {
    const offset_t row = offset_t(g) * p.L_k + j0 + jj;
    QK_UNROLL
    for (int m = 0; m < M; ++m) {
      const int c = c0 + 4 * m;
      if (c < d) bp.dk[row * d + c] = dk[m];
      if (c < dv) bp.dv[row * dv + c] = dva[m];
    }
  }
}

template <int DM>
__global__ void __launch_bounds__(256, 1) v3_bwd_dq(BwdParams bp) {
  constexpr int BR = V3Bwd::BR, BC = V3Bwd::BC, LDP = V3Bwd::LDP, M = DM / 4;
  const FwdParams& p = bp.f;
  const int tid = int(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const int qb = int(blockIdx.x), bh = int(blockIdx.y), i0 = qb * BR;
  const int d = p.d, dv = p.d_v, ldq = odd_stride(d), ldv = odd_stride(dv);
  const HeadView h = head_view(p, bh);
  const pipeline::Logits<float> lg{h.mask, h.mods};
  const pipeline::BlockClassifier bc = classifier(p, h.mask, BR, BC);
  QK_SMEM(smem);
  float* Qs = reinterpret_cast<float*>(smem);  // [BR][ldq]
  float* dOs = Qs + BR * ldq;                  // [BR][ldv]
  float* Ks = dOs + BR * ldv;                  // [BC][ldq]
  float* Vs = Ks + BC * ldq;                   // [BC][ldv]
  float* dSs = Vs + BC * ldv;                  // [BR][LDP]
  float* shift_s = dSs + BR * LDP;             // [BR]
  float* D_s = shift_s + BR;                   // [BR]
  bwd::load_tile(Qs, ldq, static_cast<const float*>(p.q) + h.q, i0, BR, p.L_q, d, tid);
  bwd::load_tile(dOs, ldv, bp.dout + h.o, i0, BR, p.L_q, dv, tid);
  if (tid < BR) {
    const bool in = i0 + tid < p.L_q;
    shift_s[tid] = in ? lg.shift_of(p.lse[h.row + i0 + tid]) : pipeline::pos_inf<float>();
    D_s[tid] = in ? bp.delta[h.row + i0 + tid] : 0.f;
  }
  const int ii = tid / 4, c0 = tid % 4;  // this thread's row and first column
  float dq[M];
  QK_UNROLL
  for (int m = 0; m < M; ++m) dq[m] = 0.f;
  const pipeline::Range kbs = bc.key_blocks(qb);
  for (int kb = kbs.begin; kb < kbs.end; ++kb) {
    const pipeline::BlockKind kind = bc(qb, kb);
    if (kind == pipeline::BlockKind::empty) continue;
    const int j0 = kb * BC;
    __syncthreads();
    bwd::load_tile(Ks, ldq, static_cast<const float*>(p.k) + h.k, j0, BC, p.L_k, d, tid);
    bwd::load_tile(Vs, ldv, static_cast<const float*>(p.v) + h.v, j0, BC, p.L_k, dv, tid);
    __syncthreads();
    bwd::p_and_ds(lg, kind, i0, j0, Qs, Ks, ldq, d, dOs, Vs, ldv, dv, shift_s, D_s, nullptr, dSs, tx, ty);
    __syncthreads();
    for (int j = 0; j < BC; ++j) {
      const float ds = dSs[ii * LDP + j];
      QK_UNROLL
      for (int m = 0; m < M; ++m) {
        const int c = c0 + 4 * m;
        if (c < d) dq[m] = fmaf(ds, Ks[j * ldq + c], dq[m]);
      }
    }
  }
  if (i0 + ii < p.L_q)
    QK_UNROLL
    for (int m = 0; m < M; ++m) {
      const int c = c0 + 4 * m;
      if (c < d) bp.dq[(h.row + i0 + ii) * d + c] = dq[m];
    }
}

}  // namespace qkscope::cuda::kern::QK_IMPL
