// native/cuda/kernels/v4_mma.cuh — ladder step 4: the flash forward on tensor cores,
// FlashAttention-2's warp layout (Dao 2023, §3.3) with mma.sync.m16n8k16 (PTX ISA 9.7.13):
// fp16 or bf16 inputs, fp32 accumulators, fp32 softmax. Dot family only.
//   4 warps x 16 query rows = BR 64; key blocks of BC 64; head dims d, d_v <= D (64 or 128,
//   zero-padded to D in shared memory).
//   Q fragments stay in registers for the whole loop. Per key block and warp:
//     S (16 x 64)  = 8 n-blocks x D/16 k-steps of mma(Q frag, K frag)
//     x = pipeline::Logits(S); row max/sum over the 4 lanes of a quad (2 xor-shuffles);
//     P is rounded to E and reused directly as the A fragments of P V (the C layout of two
//     m16n8 tiles is the A layout of one m16n8k16: no shared-memory round trip);
//     O (16 x D) += D/8 n-blocks x 4 k-steps of mma(P frag, V frag).
// Lane l of a warp: group g = l / 4, thread-in-group t = l % 4. Fragment layouts:
//   A (16x16, row): a0a1 (g, 2t..2t+1)  a2a3 (g+8, 2t..)  a4a5 (g, 2t+8..)  a6a7 (g+8, 2t+8..)
//   B (16x8, col):  b0b1 (k 2t..2t+1, n g)  b2b3 (k 2t+8.., n g)
//   C (16x8):       c0c1 (g, 2t..2t+1)  c2c3 (g+8, 2t..2t+1)
// Shared rows are D + 8 halves long, so the 32-bit fragment loads of a warp hit 32 different
// banks. V fragments are gathered with 16-bit loads (ldmatrix.trans would do it in one).
// Tile loads here are plain element loads; version 5 replaces them by cp.async pipelining.
#pragma once

#include "common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

template <class E>
struct MmaElem;
template <>
struct MmaElem<__half> {
  QK_DEVICE static std::uint32_t pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    std::uint32_t u;
    memcpy(&u, &h, 4);
    return u;
  }
};
template <>
struct MmaElem<__nv_bfloat16> {
  QK_DEVICE static std::uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    std::uint32_t u;
    memcpy(&u, &h, 4);
    return u;
  }
};

/// Two consecutive 16-bit elements as one 32-bit register (p 4-byte aligned).
template <class E>
QK_DEVICE std::uint32_t ld_pair(const E* p) {
#if defined(QKSCOPE_CUDA_EMULATE)
  std::uint32_t u;
  std::memcpy(&u, p, 4);
  return u;
#else
  return *reinterpret_cast<const std::uint32_t*>(p);
#endif
}
/// Two separate 16-bit elements (lo, hi) as one 32-bit register.
template <class E>
QK_DEVICE std::uint32_t ld_two(const E* lo, const E* hi) {
  std::uint16_t a, b;
  memcpy(&a, lo, 2);
  memcpy(&b, hi, 2);
  return std::uint32_t(a) | (std::uint32_t(b) << 16);
}

/// D = A B + C for one m16n8k16 tile of the warp.
template <class E>
QK_DEVICE void mma16816(float d[4], const std::uint32_t a[4], const std::uint32_t b[2], const float c[4]) {
#if defined(QKSCOPE_CUDA_EMULATE)
  qkemu::mma_m16n8k16<E>(d, a, b, c);
#else
  if constexpr (std::is_same_v<E, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
#endif
}

/// The per-warp state of the tensor-core flash forward and its per-key-block step,
/// shared by versions 4 and 5 (they differ only in how tiles reach shared memory).
template <class E, int D>
struct MmaFlash {
  static constexpr int LD = MmaShape::ld(D), KS = D / 16, ND = D / 8, NB = MmaShape::BC / 8;
  // Q fragments live in registers for D = 64; for D = 128 they are re-read from the resident
  // shared-memory Q tile at each k-step (32 registers fewer: no spills at 255 registers).
  static constexpr bool kQInRegs = D <= 64;
  std::uint32_t qa[kQInRegs ? KS : 1][4];
  float acc[ND][4];
  pipeline::OnlineSoftmax<float> st[2];  // rows g and g + 8 of the warp's 16

  QK_DEVICE void init(float inv_tau) {
    st[0] = st[1] = pipeline::OnlineSoftmax<float>(inv_tau);
    QK_UNROLL
    for (int n = 0; n < ND; ++n)
      QK_UNROLL
      for (int e = 0; e < 4; ++e) acc[n][e] = 0.f;
  }
  /// Q fragments of the warp's 16 rows from the [BR][LD] tile.
  /// A fragment of k-step ks from the warp's 16 rows of the [BR][LD] Q tile.
  QK_DEVICE static void q_frag(std::uint32_t a[4], const E* Qs, int ks, int warp, int g, int t) {
    const E* r0 = Qs + (warp * 16 + g) * LD + ks * 16 + 2 * t;
    const E* r1 = r0 + 8 * LD;
    a[0] = ld_pair(r0);
    a[1] = ld_pair(r1);
    a[2] = ld_pair(r0 + 8);
    a[3] = ld_pair(r1 + 8);
  }
  QK_DEVICE void load_q(const E* Qs, int warp, int g, int t) {
    if constexpr (kQInRegs)
      QK_UNROLL
      for (int ks = 0; ks < KS; ++ks) q_frag(qa[ks], Qs, ks, warp, g, t);
  }
  /// One key block: Ks, Vs are [BC][LD] tiles of keys j0.. (zero-padded); Qs the Q tile.
  QK_DEVICE void step(const E* Qs, const E* Ks, const E* Vs, const pipeline::Logits<float>& lg, pipeline::BlockKind kind,
                      int i0, int j0, int warp, int g, int t) {
    float s[NB][4];
    QK_UNROLL
    for (int nb = 0; nb < NB; ++nb)
      QK_UNROLL
      for (int e = 0; e < 4; ++e) s[nb][e] = 0.f;
    QK_UNROLL
    for (int ks = 0; ks < KS; ++ks) {
      std::uint32_t a[4];
      if constexpr (kQInRegs) {
        QK_UNROLL
        for (int e = 0; e < 4; ++e) a[e] = qa[ks][e];
      } else {
        q_frag(a, Qs, ks, warp, g, t);
      }
      QK_UNROLL
      for (int nb = 0; nb < NB; ++nb) {
        const E* krow = Ks + (nb * 8 + g) * LD + 2 * t + ks * 16;
        const std::uint32_t b[2] = {ld_pair(krow), ld_pair(krow + 8)};
        mma16816<E>(s[nb], a, b, s[nb]);
      }
    }
    const int row0 = i0 + warp * 16 + g;
    float mx[2] = {pipeline::neg_inf<float>(), pipeline::neg_inf<float>()};
    QK_UNROLL
    for (int nb = 0; nb < NB; ++nb)
      QK_UNROLL
      for (int e = 0; e < 4; ++e) {
        s[nb][e] = lg(s[nb][e], row0 + (e >> 1) * 8, j0 + nb * 8 + 2 * t + (e & 1), kind);
        mx[e >> 1] = pipeline::max_(mx[e >> 1], s[nb][e]);
      }
    float alpha[2], sum[2] = {0.f, 0.f};
    QK_UNROLL
    for (int r = 0; r < 2; ++r) alpha[r] = st[r].rescale(group_max<4>(mx[r]));
    std::uint32_t pa[NB / 2][4];
    QK_UNROLL
    for (int nb = 0; nb < NB; ++nb) {
      QK_UNROLL
      for (int e = 0; e < 4; ++e) {
        s[nb][e] = st[e >> 1].p(s[nb][e]);
        sum[e >> 1] += s[nb][e];
      }
      // C layout of n-block nb -> A fragment of k-step nb / 2 (keys nb*8 .. nb*8 + 7)
      pa[nb / 2][(nb & 1) * 2 + 0] = MmaElem<E>::pack(s[nb][0], s[nb][1]);
      pa[nb / 2][(nb & 1) * 2 + 1] = MmaElem<E>::pack(s[nb][2], s[nb][3]);
    }
    QK_UNROLL
    for (int r = 0; r < 2; ++r) st[r].add(group_sum<4>(sum[r]));
    QK_UNROLL
    for (int n = 0; n < ND; ++n) {
      acc[n][0] *= alpha[0];
      acc[n][1] *= alpha[0];
      acc[n][2] *= alpha[1];
      acc[n][3] *= alpha[1];
      const E* vcol = Vs + n * 8 + g;
      QK_UNROLL
      for (int kk = 0; kk < NB / 2; ++kk) {
        const E* v0 = vcol + (kk * 16 + 2 * t) * LD;
        const std::uint32_t b[2] = {ld_two(v0, v0 + LD), ld_two(v0 + 8 * LD, v0 + 9 * LD)};
        mma16816<E>(acc[n], pa[kk], b, acc[n]);
      }
    }
  }
  /// O rows and lse of the warp's 16 rows.
  QK_DEVICE void finish(const FwdParams& p, const HeadView& h, int i0, int warp, int g, int t) const {
    QK_UNROLL
    for (int r = 0; r < 2; ++r) {
      const int i = i0 + warp * 16 + g + 8 * r;
      if (i >= p.L_q) continue;
      const float inv = st[r].inv_l();
      float* o = p.o + h.o + offset_t(i) * p.d_v;
      QK_UNROLL
      for (int n = 0; n < ND; ++n)
        QK_UNROLL
        for (int e = 0; e < 2; ++e) {
          const int c = n * 8 + 2 * t + e;
          if (c < p.d_v) o[c] = acc[n][2 * r + e] * inv;
        }
      if (t == 0) p.lse[h.row + i] = st[r].logsumexp();
    }
  }
};

/// Loads rows [r0, r0 + n) of a (L, w) E matrix into a [n][LD] tile, zero-padded to D columns.
template <class E, int D>
QK_DEVICE void load_tile_e(E* dst, const E* src, int r0, int n, int L, int w, int tid) {
  constexpr int LD = MmaShape::ld(D);
  const E zero = from_float<E>(0.f);
  for (int e = tid; e < n * D; e += MmaShape::THREADS) {
    const int r = e / D, c = e % D;
    dst[r * LD + c] = (r0 + r < L && c < w) ? src[offset_t(r0 + r) * w + c] : zero;
  }
}

template <class E, int D>
__global__ void __launch_bounds__(128) v4_forward(FwdParams p) {
  constexpr int BR = MmaShape::BR, BC = MmaShape::BC, LD = MmaShape::ld(D);
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int qb = int(blockIdx.x), bh = int(blockIdx.y), i0 = qb * BR;
  const HeadView h = head_view(p, bh);
  const pipeline::Logits<float> lg{h.mask, h.mods};
  const pipeline::BlockClassifier bc = classifier(p, h.mask, BR, BC);
  QK_SMEM(smem);
  E* Qs = reinterpret_cast<E*>(smem);  // [BR][LD]
  E* Ks = Qs + BR * LD;                // [BC][LD]
  E* Vs = Ks + BC * LD;                // [BC][LD]
  load_tile_e<E, D>(Qs, static_cast<const E*>(p.q) + h.q, i0, BR, p.L_q, p.d, tid);
  __syncthreads();
  MmaFlash<E, D> f;
  f.init(h.mods.inv_tau);
  f.load_q(Qs, warp, g, t);
  const pipeline::Range kbs = bc.key_blocks(qb);
  for (int kb = kbs.begin; kb < kbs.end; ++kb) {
    const pipeline::BlockKind kind = bc(qb, kb);
    if (kind == pipeline::BlockKind::empty) continue;
    const int j0 = kb * BC;
    __syncthreads();  // the previous K, V tiles are consumed
    load_tile_e<E, D>(Ks, static_cast<const E*>(p.k) + h.k, j0, BC, p.L_k, p.d, tid);
    load_tile_e<E, D>(Vs, static_cast<const E*>(p.v) + h.v, j0, BC, p.L_k, p.d_v, tid);
    __syncthreads();
    f.step(Qs, Ks, Vs, lg, kind, i0, j0, warp, g, t);
  }
  f.finish(p, h, i0, warp, g, t);
}

}  // namespace qkscope::cuda::kern::QK_IMPL
