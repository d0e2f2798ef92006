// qkscope/cpu/wasm_exp.hpp — exp on four float lanes with WebAssembly SIMD (only compiled
// with -msimd128), for the softmax exponentials of the tiled kernels (tile_ops.hpp).
// Eigen 3.4 has no wasm backend; through Emscripten's SSE emulation its pexp spends as long
// as both GEMMs of a tile (native/bench/NOTES.md, issue 11). This is the classic Cephes expf
// (Moshier 1989), as in Eigen's own pexp_float: n = round(x log2 e); r = x - n ln 2 with ln 2
// in two parts (Cody & Waite 1980), |r| <= ln(2)/2; exp(r) by its degree-7 Taylor-like
// minimax polynomial; times 2^n built in the exponent bits.
// exp4 is accurate only for x in [-87, 88] and does not clamp: every caller tests its lanes and
// sends the others (and NaN) to std::exp, which also gives -inf -> 0 and the denormals.
// max_array and exp_shift_sum are the row max and the fused exp / sum of the forward.
// The range tests read one mask with i32x4.bitmask (movmskps on x86) instead of all_true
// (four instructions in V8), and exp_shift_sum tests only the low end, since its lanes are
// x - max <= 0 (native/bench/NOTES.md, issue 11, thirteenth session).
// Accuracy on [-87, 88], measured against exp in double (native/bench/wasm_profile.cpp, 2^20
// points): max relative error 7.9e-8 (under 1 ulp; Eigen's pexp: 1.2e-7).
#pragma once

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#include <cmath>
#include <cstddef>

namespace qkscope::cpu::detail {

/// exp of four lanes; a lane outside [-87, 88] or NaN gives an unspecified value (never a trap:
/// wasm SIMD arithmetic is total), which the callers replace.
inline v128_t exp4(v128_t x) {
  const v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)));
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t y = wasm_f32x4_splat(1.9875691500e-4f);
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    y = wasm_f32x4_add(wasm_f32x4_mul(y, r), wasm_f32x4_splat(c));
  y = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(wasm_f32x4_mul(y, r), r), r), wasm_f32x4_splat(1.0f));
  // 2^n: n in [-126, 127] for x in range, so (n + 127) << 23 is a normal float's bit pattern.
  // n + 127 is read off the low bits of n + 127 + 2^23 (exact) rather than by i32x4.trunc_sat,
  // whose saturation V8 spells out in several instructions; the shift drops 2^23's exponent bits.
  const v128_t e = wasm_i32x4_shl(wasm_f32x4_add(n, wasm_f32x4_splat(8388608.0f + 127.0f)), 23);
  return wasm_f32x4_mul(y, e);
}

/// out[k] = exp(in[k]) for k < n (in == out allowed), for every float: lanes outside
/// [-87, 88] (where exp leaves the normal range) and NaN go through std::exp, so -inf gives 0
/// exactly and very negative arguments give denormals or 0, as the core's scalar exp does.
inline void exp_array(const float* in, float* out, std::size_t n) {
  const v128_t lo = wasm_f32x4_splat(-87.0f), hi = wasm_f32x4_splat(88.0f);
  auto step = [&](const float* src, float* dst) {
    const v128_t x = wasm_v128_load(src), y = exp4(x);
    // Comparisons with NaN are false, so NaN lanes fail the range test too.
    if (wasm_i32x4_bitmask(wasm_v128_and(wasm_f32x4_ge(x, lo), wasm_f32x4_le(x, hi))) == 0xf) {
      wasm_v128_store(dst, y);
      return;
    }
    alignas(16) float xs[4], ys[4];
    wasm_v128_store(xs, x);
    wasm_v128_store(ys, y);
    for (int t = 0; t < 4; ++t) dst[t] = xs[t] >= -87.0f && xs[t] <= 88.0f ? ys[t] : std::exp(xs[t]);
  };
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) step(in + k, out + k);
  if (k < n) {  // the tail through one zero-padded step
    alignas(16) float buf[4] = {0, 0, 0, 0}, res[4];
    for (std::size_t t = 0; k + t < n; ++t) buf[t] = in[k + t];
    step(buf, res);
    for (std::size_t t = 0; k + t < n; ++t) out[k + t] = res[t];
  }
}

/// Horizontal sum of four lanes, in a fixed order.
inline float hsum4(v128_t v) {
  return (wasm_f32x4_extract_lane(v, 0) + wasm_f32x4_extract_lane(v, 1)) +
         (wasm_f32x4_extract_lane(v, 2) + wasm_f32x4_extract_lane(v, 3));
}

/// max_k x[k] for n >= 1. pmax (a < b ? b : a) is one maxps on x86, where f32x4.max's NaN and
/// signed-zero rules cost several instructions (measured: the forward 10% slower with it).
/// A NaN may be skipped, as Eigen's maxCoeff may, and may hide larger entries of its lane: the
/// result is then not the max. Harmless in the forward: the NaN still reaches the row's sum
/// through exp (NaN logsumexp: the call throws), and logits_fold_safe keeps NaN and inf scores
/// out of the tiled kernels in the first place.
/// Four accumulators from 16 entries on, so that the loop is not one chain of pmax latencies.
[[gnu::noinline]] inline float max_array(const float* x, std::size_t n) {
  std::size_t k = 0;
  float m = x[0];
  if (n >= 4) {
    v128_t v = wasm_v128_load(x);
    k = 4;
    if (n >= 16) {
      v128_t v1 = wasm_v128_load(x + 4), v2 = wasm_v128_load(x + 8), v3 = wasm_v128_load(x + 12);
      for (k = 16; k + 16 <= n; k += 16) {
        v = wasm_f32x4_pmax(v, wasm_v128_load(x + k));
        v1 = wasm_f32x4_pmax(v1, wasm_v128_load(x + k + 4));
        v2 = wasm_f32x4_pmax(v2, wasm_v128_load(x + k + 8));
        v3 = wasm_f32x4_pmax(v3, wasm_v128_load(x + k + 12));
      }
      v = wasm_f32x4_pmax(wasm_f32x4_pmax(v, v1), wasm_f32x4_pmax(v2, v3));
    }
    for (; k + 4 <= n; k += 4) v = wasm_f32x4_pmax(v, wasm_v128_load(x + k));
    v = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    v = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
    m = wasm_f32x4_extract_lane(v, 0);
  }
  for (; k < n; ++k) m = m < x[k] ? x[k] : m;
  return m;
}

/// x[k] = exp((x[k] - m) inv_tau) in place for k < n, and returns their sum: the softmax row
/// pass of the tiled forward in one sweep (shift, exp_array's ranges, sum), where Eigen took
/// three. The difference is taken before the division by tau, as the core does.
/// Requires m >= every x[k] (the row's running max) and inv_tau > 0: every argument is then
/// <= 0 or NaN, so only the low end of exp4's range is tested. (A row holding NaN may break it,
/// see max_array; its sum is NaN either way.)
[[gnu::noinline]] inline float exp_shift_sum(float* x, std::size_t n, float m, float inv_tau) {
  const v128_t mv = wasm_f32x4_splat(m), iv = wasm_f32x4_splat(inv_tau);
  const v128_t lo = wasm_f32x4_splat(-87.0f);
  v128_t sum = wasm_f32x4_splat(0.0f);
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4) {
    const v128_t a = wasm_f32x4_mul(wasm_f32x4_sub(wasm_v128_load(x + k), mv), iv);
    v128_t y = exp4(a);
    if (wasm_i32x4_bitmask(wasm_f32x4_ge(a, lo)) != 0xf) {
      alignas(16) float as[4], ys[4];  // lanes below -87 or NaN: std::exp, as exp_array
      wasm_v128_store(as, a);
      wasm_v128_store(ys, y);
      for (int t = 0; t < 4; ++t)
        if (!(as[t] >= -87.0f && as[t] <= 88.0f)) ys[t] = std::exp(as[t]);
      y = wasm_v128_load(ys);
    }
    wasm_v128_store(x + k, y);
    sum = wasm_f32x4_add(sum, y);
  }
  float s = hsum4(sum);
  if (k < n) {  // the tail through exp_array's zero-padded step
    for (std::size_t t = k; t < n; ++t) x[t] = (x[t] - m) * inv_tau;
    exp_array(x + k, x + k, n - k);
    for (std::size_t t = k; t < n; ++t) s += x[t];
  }
  return s;
}

}  // namespace qkscope::cpu::detail
#endif
