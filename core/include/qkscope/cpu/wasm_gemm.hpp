// qkscope/cpu/wasm_gemm.hpp — the tile products of the tiled kernels in float with
// WebAssembly SIMD (only compiled with -msimd128): C (m, n) (+)= A (m, k) B (k, n), all
// row-major; and cosine's tiles in double (gemm_f64_abt, at the end). Eigen 3.4 has no
// wasm backend; through Emscripten's SSE emulation its general GEMM packs both operands on
// every small tile product (native/bench/NOTES.md, issue 11).
// Here only B is packed, one k x 8 column panel at a time (transposed on the way for
// S = Q_t K_t^T, whose B is K_t^T); A's rows are read as they lie.
// Register blocking: 4 rows x 8 columns of C in eight f32x4 accumulators (wasm SIMD has no
// FMA, so each step is a multiply and an add; eight independent chains cover the add latency
// on two ports), B's two vectors loaded once per step, A's elements broadcast. Row and column
// remainders use the same kernel with fewer rows / one vector, then scalar columns.
// Every C entry sums its k products in increasing k from its start value, whatever the
// blocking, so results do not depend on tile position or thread count.
#pragma once

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#include <cstddef>
#include <vector>

namespace qkscope::cpu::detail {

/// C rows [0, MR) x columns [0, 4 NV) += A (MR, k) B (k, 4 NV) (C starts at 0 unless add).
template <int MR, int NV>
inline void gemm_micro(int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool add) {
  v128_t c[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) c[i][v] = add ? wasm_v128_load(C + i * ldc + 4 * v) : wasm_f32x4_splat(0.0f);
  for (int p = 0; p < k; ++p) {
    v128_t b[NV];
    for (int v = 0; v < NV; ++v) b[v] = wasm_v128_load(B + p * ldb + 4 * v);
    for (int i = 0; i < MR; ++i) {
      const v128_t a = wasm_v128_load32_splat(A + i * lda + p);
      for (int v = 0; v < NV; ++v) c[i][v] = wasm_f32x4_add(c[i][v], wasm_f32x4_mul(a, b[v]));
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) wasm_v128_store(C + i * ldc + 4 * v, c[i][v]);
}

/// Rows [0, mr) (mr <= 4) of one column panel of width 4 NV.
template <int NV>
inline void gemm_rows(int mr, int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool add) {
  switch (mr) {
    case 4: gemm_micro<4, NV>(k, A, lda, B, ldb, C, ldc, add); break;
    case 3: gemm_micro<3, NV>(k, A, lda, B, ldb, C, ldc, add); break;
    case 2: gemm_micro<2, NV>(k, A, lda, B, ldb, C, ldc, add); break;
    default: gemm_micro<1, NV>(k, A, lda, B, ldb, C, ldc, add); break;
  }
}

/// Copies the k x 4 NV panel of B at column 0 into `to`, rows contiguous. With `bt`, B is
/// given as B^T (n, k) and the panel is transposed in 4 x 4 blocks on the way. B's rows are
/// often a power of two of floats apart (L_k, d), which maps an unpacked panel's rows onto a
/// few L1 cache sets; every row block then reads the packed copy instead.
template <int NV>
inline void pack_panel(int k, const float* B, int ldb, bool bt, float* to) {
  constexpr int W = 4 * NV;
  if (!bt) {
    for (int p = 0; p < k; ++p)
      for (int v = 0; v < NV; ++v) wasm_v128_store(to + p * W + 4 * v, wasm_v128_load(B + p * ldb + 4 * v));
    return;
  }
  int p = 0;
  for (; p + 4 <= k; p += 4)
    for (int v = 0; v < NV; ++v) {
      const float* r = B + 4 * v * ldb + p;  // rows 4v..4v+3 of B^T, entries p..p+3
      const v128_t r0 = wasm_v128_load(r), r1 = wasm_v128_load(r + ldb), r2 = wasm_v128_load(r + 2 * ldb),
                   r3 = wasm_v128_load(r + 3 * ldb);
      const v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5),
                   t2 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7), t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);
      float* o = to + p * W + 4 * v;
      wasm_v128_store(o, wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5));
      wasm_v128_store(o + W, wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));
      wasm_v128_store(o + 2 * W, wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5));
      wasm_v128_store(o + 3 * W, wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7));
    }
  for (; p < k; ++p)
    for (int c = 0; c < W; ++c) to[p * W + c] = B[c * ldb + p];
}

/// C (m, n) = A (m, k) B (k, n), or C += A B when add; row-major with leading dimensions
/// lda, ldb, ldc (in floats). With bt, B is passed as B^T, (n, k) with leading dimension ldb
/// (S = Q_t K_t^T reads the key rows as they lie). k = 0 leaves C (add) or zeroes it.
inline void gemm_f32(int m, int n, int k, const float* A, int lda, const float* B, int ldb, bool bt, float* C,
                     int ldc, bool add) {
  thread_local std::vector<float> panel;
  if (panel.size() < std::size_t(k) * 8) panel.resize(std::size_t(k) * 8);
  const int step = bt ? ldb : 1;  // from column j of B to column j + 1
  int j = 0;
  // Column panels outside, row blocks inside: one packed panel of B (k x 8) stays in L1
  // cache while every row block of A passes over it.
  for (; j + 8 <= n; j += 8) {
    pack_panel<2>(k, B + j * step, ldb, bt, panel.data());
    for (int i = 0; i < m; i += 4)
      gemm_rows<2>(m - i < 4 ? m - i : 4, k, A + i * lda, lda, panel.data(), 8, C + i * ldc + j, ldc, add);
  }
  if (j + 4 <= n) {
    pack_panel<1>(k, B + j * step, ldb, bt, panel.data());
    for (int i = 0; i < m; i += 4)
      gemm_rows<1>(m - i < 4 ? m - i : 4, k, A + i * lda, lda, panel.data(), 4, C + i * ldc + j, ldc, add);
    j += 4;
  }
  for (; j < n; ++j)  // the last n mod 4 columns, scalar, same summation order
    for (int i = 0; i < m; ++i) {
      float s = add ? C[i * ldc + j] : 0.0f;
      for (int p = 0; p < k; ++p) s += A[i * lda + p] * (bt ? B[j * ldb + p] : B[p * ldb + j]);
      C[i * ldc + j] = s;
    }
}

/// One entry of gemm_f64_abt: a . b over k in double, even p in one lane and odd p in the
/// other, then their sum, then the last product when k is odd (the vector kernel's order).
inline double dot_f64_pairs(int k, const double* a, const double* b) {
  double s0 = 0, s1 = 0;
  int p = 0;
  for (; p + 2 <= k; p += 2) s0 += a[p] * b[p], s1 += a[p + 1] * b[p + 1];
  double s = s0 + s1;
  if (p < k) s += a[p] * b[p];
  return s;
}

/// C (m, n) = float(clamp(A B^T, lo, hi)) for A (m, k) and B (n, k) in double, row-major
/// (cosine's tiles in double: score/cosine.hpp). With Eigen's double GEMM through the SSE
/// emulation, attention() at tau 0.1 took 2.3x its float time and the module 0.9 KB more
/// than with this kernel (1.6-1.7x: NOTES): 2 x 4 entries per step in f64x2 accumulators
/// over pairs of k. Each entry sums in dot_f64_pairs' order, whatever its position in the
/// tile.
inline void gemm_f64_abt(int m, int n, int k, const double* A, int lda, const double* B, int ldb, double lo,
                         double hi, float* C, int ldc) {
  auto put = [&](int i, int j, double x) { C[i * ldc + j] = float(x < lo ? lo : (x > hi ? hi : x)); };
  int i = 0;
  for (; i + 2 <= m; i += 2) {
    int j = 0;
    for (; j + 4 <= n; j += 4) {
      v128_t c[2][4];
      for (int r = 0; r < 2; ++r)
        for (int q = 0; q < 4; ++q) c[r][q] = wasm_f64x2_splat(0.0);
      int p = 0;
      for (; p + 2 <= k; p += 2) {
        const v128_t a0 = wasm_v128_load(A + i * lda + p), a1 = wasm_v128_load(A + (i + 1) * lda + p);
        for (int q = 0; q < 4; ++q) {
          const v128_t b = wasm_v128_load(B + (j + q) * ldb + p);
          c[0][q] = wasm_f64x2_add(c[0][q], wasm_f64x2_mul(a0, b));
          c[1][q] = wasm_f64x2_add(c[1][q], wasm_f64x2_mul(a1, b));
        }
      }
      for (int r = 0; r < 2; ++r)
        for (int q = 0; q < 4; ++q) {
          double x = wasm_f64x2_extract_lane(c[r][q], 0) + wasm_f64x2_extract_lane(c[r][q], 1);
          if (p < k) x += A[(i + r) * lda + p] * B[(j + q) * ldb + p];
          put(i + r, j + q, x);
        }
    }
    for (; j < n; ++j)
      for (int r = 0; r < 2; ++r) put(i + r, j, dot_f64_pairs(k, A + (i + r) * lda, B + j * ldb));
  }
  for (; i < m; ++i)
    for (int j = 0; j < n; ++j) put(i, j, dot_f64_pairs(k, A + i * lda, B + j * ldb));
}

}  // namespace qkscope::cpu::detail
#endif
