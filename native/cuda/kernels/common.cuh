// native/cuda/kernels/common.cuh — what every kernel file includes: the CUDA headers (or
// the CPU interpreter in their place), shared-memory and launch macros, warp reductions,
// element loads, and the per-head view of the launch parameters (GQA mapping, per-sequence
// key length, per-head ALiBi slope) built from the pipeline/ functors.
#pragma once

#if defined(QKSCOPE_CUDA_EMULATE)
#include "../emu/emu.hpp"
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#include <type_traits>

#include "params.hpp"

// Kernels live in kern::gpu (nvcc) or kern::interp (the CPU interpreter): both builds link
// into one library, and nvcc emits host-side launch functions named like the kernels.
#if defined(QKSCOPE_CUDA_EMULATE)
#define QK_IMPL interp
#else
#define QK_IMPL gpu
#endif

#define QK_DEVICE __device__ __forceinline__
#if defined(QKSCOPE_CUDA_EMULATE)
#define QK_SMEM(name) unsigned char* name = ::qkemu::dynamic_smem()
#define QK_UNROLL
#else
#define QK_SMEM(name) extern __shared__ __align__(16) unsigned char name[]
#define QK_UNROLL _Pragma("unroll")
#endif

namespace qkscope::cuda::kern::QK_IMPL {

using pipeline::offset_t;

constexpr unsigned kFull = 0xffffffffu;

/// Reductions over aligned groups of `width` lanes (1, 2, 4, 8, 16 or 32): every lane of the
/// group gets the result.
template <int width>
QK_DEVICE float group_max(float v) {
  QK_UNROLL
  for (int o = width / 2; o > 0; o /= 2) v = pipeline::max_(v, __shfl_xor_sync(kFull, v, o));
  return v;
}
template <int width>
QK_DEVICE float group_sum(float v) {
  QK_UNROLL
  for (int o = width / 2; o > 0; o /= 2) v += __shfl_xor_sync(kFull, v, o);
  return v;
}

/// Element e of an array of type E as float.
template <class E>
QK_DEVICE float to_float(E x);
template <>
QK_DEVICE float to_float<float>(float x) { return x; }
template <>
QK_DEVICE float to_float<__half>(__half x) { return __half2float(x); }
template <>
QK_DEVICE float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

/// float to E, rounding to nearest even.
template <class E>
QK_DEVICE E from_float(float x);
template <>
QK_DEVICE __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
QK_DEVICE __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

/// The launch parameters as seen by one flat query head bh = b * heads + h.
struct HeadView {
  pipeline::Mask mask;             // with the sequence's key length
  pipeline::ScoreMods<float> mods; // with the head's ALiBi slope
  offset_t q = 0, k = 0, v = 0, o = 0, row = 0;  // element offsets of q, k, v, o; row offset (lse)
};

QK_DEVICE HeadView head_view(const FwdParams& p, int bh) {
  HeadView h;
  const int kv = p.heads.kv_of(bh);
  h.mask = p.key_lengths ? p.mask.with_key_length(p.key_lengths[p.heads.batch_of(bh)]) : p.mask;
  h.mods = p.slopes ? p.mods.with_slope(p.slopes[p.heads.head_of(bh)]) : p.mods;
  h.q = offset_t(bh) * p.L_q * p.d;
  h.k = offset_t(kv) * p.L_k * p.d;
  h.v = offset_t(kv) * p.L_k * p.d_v;
  h.o = offset_t(bh) * p.L_q * p.d_v;
  h.row = offset_t(bh) * p.L_q;
  return h;
}

/// The classifier of a kernel with (Br x Bc) blocks, using the call's block map when there is one.
QK_DEVICE pipeline::BlockClassifier classifier(const FwdParams& p, const pipeline::Mask& m, int Br, int Bc) {
  pipeline::BlockClassifier c;
  c.mask = m;
  c.Br = Br;
  c.Bc = Bc;
  c.map = p.block_map;
  c.map_Br = kMapBr;
  c.map_Bc = kMapBc;
  return c;
}

/// 1 / x by the hardware approximation (__fdividef: MUFU.RCP, ~1 ulp; 0 when |x| > 2^126).
QK_DEVICE float fast_rcp(float x) {
#if defined(QKSCOPE_CUDA_EMULATE)
  return (x > 0x1p126f || x < -0x1p126f) ? 0.f : 1.f / x;
#else
  return __fdividef(1.f, x);
#endif
}

/// Raw score combiners: dot products and the additive (Bahdanau) tanh sum.
struct DotScore {
  static constexpr bool additive = false;
  QK_DEVICE static float combine(float acc, float q, float k, float) { return fmaf(q, k, acc); }
};
struct AdditiveScore {
  static constexpr bool additive = true;
  QK_DEVICE static float combine(float acc, float q, float k, float v) { return fmaf(v, pipeline::tanh_(q + k), acc); }
  /// The same term from ea = e^{2q}, eb = e^{2k}, p = ea eb and r = 1 / (p + 1), one
  /// reciprocal instead of a tanhf: tanh(q + k) = 1 - 2 r where p >= 1 and 2 p r - 1 below,
  /// mirrored so that t near -1 keeps its digits as near +1 (1 - 2 r alone left r's rounding,
  /// ~2 ulp of t, there: the CPU form, cpu/additive_pack.hpp, and native/bench/NOTES.md).
  /// Absolute error ~2e-7 for |q|, |k| <= kExpLimit (the product may overflow to inf there:
  /// the reciprocal is 0, tanh = 1, as it should be).
  static constexpr float kExpLimit = 40.f;  // e^{80} < FLT_MAX
  QK_DEVICE static float combine_exp(float acc, float ea, float eb, float v) {
    const float p = ea * eb, r = fast_rcp(p + 1.f);
    return fmaf(v, p < 1.f ? fmaf(2.f * p, r, -1.f) : fmaf(-2.f, r, 1.f), acc);
  }
};

}  // namespace qkscope::cuda::kern::QK_IMPL
