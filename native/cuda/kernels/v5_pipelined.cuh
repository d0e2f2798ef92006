// native/cuda/kernels/v5_pipelined.cuh — ladder step 5: version 4 with its K/V tiles
// double-buffered through cp.async (sm_80+; PTX ISA 9.7.9.25): while the warps compute on
// key block n in one stage, the copy engine fills the other stage with the next non-empty
// block, so global-memory latency hides behind the tensor-core work (FlashAttention-2 §3.3,
// CUTLASS multistage). 16-byte copies: d and d_v must be multiples of 8; rows past L_k are
// zero-filled by the copy itself (src-size 0), columns [d, D) once by plain stores.
//   prologue: cp.async Q and block b0 -> stage 0; commit
//   loop:     cp.async block b_{n+1} -> stage (n+1)%2; commit; wait_group 1 (b_n landed);
//             __syncthreads; compute on stage n%2; __syncthreads (stage n%2 free again)
// The compute step is MmaFlash::step of version 4, unchanged.
#pragma once

#include "v4_mma.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

QK_DEVICE void cp_async16(void* smem_dst, const void* gmem_src, bool valid) {
#if defined(QKSCOPE_CUDA_EMULATE)
  qkemu::cp_async(smem_dst, gmem_src, 16, valid);
#else
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  const int n = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(n));
#endif
}
QK_DEVICE void cp_async_commit() {
#if defined(QKSCOPE_CUDA_EMULATE)
  qkemu::cp_async_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
QK_DEVICE void cp_async_wait() {
#if defined(QKSCOPE_CUDA_EMULATE)
  qkemu::cp_async_wait(N);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/// cp.async of rows [r0, r0 + n) of a (L, w) E matrix (w % 8 == 0) into a [n][LD] tile.
template <class E, int D>
QK_DEVICE void copy_tile_async(E* dst, const E* src, int r0, int n, int L, int w, int tid) {
  constexpr int LD = MmaShape::ld(D);
  const int chunks = w / 8;  // 16-byte chunks per row
  for (int e = tid; e < n * chunks; e += MmaShape::THREADS) {
    const int r = e / chunks, c = (e % chunks) * 8;
    const bool valid = r0 + r < L;
    cp_async16(dst + r * LD + c, valid ? src + offset_t(r0 + r) * w + c : src, valid);
  }
}

/// Zeroes columns [w, D) of an [n][LD] tile (never touched by the copies).
template <class E, int D>
QK_DEVICE void zero_columns(E* dst, int n, int w, int tid) {
  constexpr int LD = MmaShape::ld(D);
  const int cols = D - w;
  if (cols <= 0) return;
  const E zero = from_float<E>(0.f);
  for (int e = tid; e < n * cols; e += MmaShape::THREADS) dst[(e / cols) * LD + w + e % cols] = zero;
}

template <class E, int D>
__global__ void __launch_bounds__(128) v5_forward(FwdParams p) {
  constexpr int BR = MmaShape::BR, BC = MmaShape::BC, LD = MmaShape::ld(D);
  const int tid = int(threadIdx.x), warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int qb = int(blockIdx.x), bh = int(blockIdx.y), i0 = qb * BR;
  const HeadView h = head_view(p, bh);
  const pipeline::Logits<float> lg{h.mask, h.mods};
  const pipeline::BlockClassifier bc = classifier(p, h.mask, BR, BC);
  const E* q = static_cast<const E*>(p.q) + h.q;
  const E* k = static_cast<const E*>(p.k) + h.k;
  const E* v = static_cast<const E*>(p.v) + h.v;
  QK_SMEM(smem);
  // Stage s: K at Ks0 + s * stride, V at Vs0 + s * stride (arithmetic, not a pointer array:
  // a run-time index into a local array would put it in local memory).
  E* Qs = reinterpret_cast<E*>(smem);  // [BR][LD]
  E* Ks0 = Qs + BR * LD;               // [2][BC][LD]
  E* Vs0 = Ks0 + 2 * BC * LD;          // [2][BC][LD]
  constexpr int stride = BC * LD;
  zero_columns<E, D>(Qs, BR, p.d, tid);
  for (int s = 0; s < 2; ++s) {
    zero_columns<E, D>(Ks0 + s * stride, BC, p.d, tid);
    zero_columns<E, D>(Vs0 + s * stride, BC, p.d_v, tid);
  }
  const pipeline::Range kbs = bc.key_blocks(qb);
  auto next_block = [&](int kb) {  // the next key block that is not fully masked
    for (++kb; kb < kbs.end; ++kb)
      if (bc(qb, kb) != pipeline::BlockKind::empty) break;
    return kb;
  };
  int cur = next_block(kbs.begin - 1);
  copy_tile_async<E, D>(Qs, q, i0, BR, p.L_q, p.d, tid);
  if (cur < kbs.end) {
    copy_tile_async<E, D>(Ks0, k, cur * BC, BC, p.L_k, p.d, tid);
    copy_tile_async<E, D>(Vs0, v, cur * BC, BC, p.L_k, p.d_v, tid);
  }
  cp_async_commit();
  MmaFlash<E, D> f;
  f.init(h.mods.inv_tau);
  bool have_q = false;
  for (int stage = 0; cur < kbs.end; stage ^= 1) {
    const int nxt = next_block(cur);
    if (nxt < kbs.end) {
      copy_tile_async<E, D>(Ks0 + (stage ^ 1) * stride, k, nxt * BC, BC, p.L_k, p.d, tid);
      copy_tile_async<E, D>(Vs0 + (stage ^ 1) * stride, v, nxt * BC, BC, p.L_k, p.d_v, tid);
    }
    cp_async_commit();  // possibly empty: keeps "all but the newest group" meaning block cur
    cp_async_wait<1>();
    __syncthreads();  // every thread's copies of block cur (and Q) are visible
    if (!have_q) {
      f.load_q(Qs, warp, g, t);
      have_q = true;
    }
    f.step(Qs, Ks0 + stage * stride, Vs0 + stage * stride, lg, bc(qb, cur), i0, cur * BC, warp, g, t);
    __syncthreads();  // stage is read by every warp before the next prefetch overwrites it
    cur = nxt;
  }
  cp_async_wait<0>();
  f.finish(p, h, i0, warp, g, t);
}

}  // namespace qkscope::cuda::kern::QK_IMPL
