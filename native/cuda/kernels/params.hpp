// native/cuda/kernels/params.hpp — the plain-old-data arguments of every attention kernel,
// shared by the host API (g++), the kernels (nvcc) and the kernels' CPU interpreter.
// Layouts (row-major, heads stacked as row blocks, like mha/config.hpp):
//   q: (batch*heads,    L_q, d)     o: (batch*heads, L_q, d_v)    lse: (batch*heads, L_q)
//   k: (batch*kv_heads, L_k, d)     v: (batch*kv_heads, L_k, d_v)
// d is the width the kernel scores with: that of the scoring function's form (its prepare
// hook, score/forms.hpp) as dot-product rows, or d_h for the additive form
// (q = Q W_q^T + b, k = K W_k^T, add_v = v).
#pragma once

#include <cstddef>
#include <cstdint>

#include "qkscope/pipeline/pipeline.hpp"

namespace qkscope::cuda::kern {

/// Element type of q, k, v: fp32 for versions 1-3, fp16/bf16 for the tensor-core versions.
enum class Elem : std::uint8_t { f32 = 0, f16 = 1, bf16 = 2 };

/// Block shape of the block map (pipeline::build_block_map) that keep masks come with; every
/// flash kernel's blocks divide it (64 x 64, 16 x 64).
inline constexpr int kMapBr = 64, kMapBc = 64;

struct FwdParams {
  pipeline::Heads heads;
  int L_q = 0, L_k = 0, d = 0, d_v = 0;
  Elem elem = Elem::f32;
  bool additive = false;                 // S_ij = sum_h add_v[h] tanh(q_ih + k_jh)
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const float* add_v = nullptr;          // (d) when additive
  float* o = nullptr;
  float* lse = nullptr;
  float* scores = nullptr;               // versions 1-2: (batch*heads, L_q, L_k) logits, then P
  pipeline::Mask mask;                       // per head; mask.keep points to device bytes
  const int* key_lengths = nullptr;      // (batch) per-sequence key lengths, or nullptr
  const std::uint8_t* block_map = nullptr;  // (kMapBr x kMapBc) block kinds for keep masks
  pipeline::ScoreMods<float> mods;           // relative / dense point to device arrays
  const float* slopes = nullptr;         // (heads) ALiBi slope per head, or nullptr
  int kv_splits = 1;                     // version 3: CTAs sharing one query block's keys (gridDim.z)
  float* part_o = nullptr;               // kv_splits > 1: (kv_splits, batch*heads, L_q, d_v) partial O
  float* part_lse = nullptr;             //   and (kv_splits, batch*heads, L_q) their logsumexps
};

struct BwdParams {
  FwdParams f;                           // with f.o and f.lse from the forward (read only)
  const float* dout = nullptr;           // (batch*heads, L_q, d_v)
  float* delta = nullptr;                // (batch*heads, L_q) scratch: rowsum(dO * O)
  float* dq = nullptr;                   // (batch*heads, L_q, d)
  float* dk = nullptr;                   // (batch*kv_heads, L_k, d)
  float* dv = nullptr;                   // (batch*kv_heads, L_k, d_v)
};

// ---- Block shapes and shared memory of every kernel (the host checks them before launch) ----

/// Stride of a shared-memory row of n floats read column-wise by 16 or 32 lanes: odd, so that
/// lanes reading the same column of consecutive rows hit different banks.
QKSCOPE_HOST_DEVICE constexpr int odd_stride(int n) { return n | 1; }

constexpr int kV2Tile = 16;

/// Version 3 forward: 256 threads, query blocks of 16 RM rows, key blocks of BC, additive d_h
/// streamed in chunks of HC.
struct V3Shape {
  static constexpr int BC = 64, HC = 32;
  QKSCOPE_HOST_DEVICE static constexpr int ldp(int rm) { return BC + (rm == 1 ? 16 : 4); }
};
/// Version 3 backward: 256 threads, 64 x 64 blocks, d and d_v <= DM (64 or 128).
struct V3Bwd {
  static constexpr int BR = 64, BC = 64, LDP = BC + 4;
};
/// Versions 4 and 5: 4 warps, 64 x 64 blocks, rows of D + 8 halves (D = 64 or 128).
struct MmaShape {
  static constexpr int BR = 64, BC = 64, THREADS = 128;
  QKSCOPE_HOST_DEVICE static constexpr int ld(int D) { return D + 8; }
};

/// The (rows per thread, max d_v) instantiation version 3 uses for a problem; 0 = none.
struct V3Variant {
  int rm = 0, dv_max = 0;
};
inline V3Variant v3_variant(bool additive, int d_v) {
  if (additive) return d_v <= 512 ? V3Variant{1, 512} : V3Variant{};
  if (d_v <= 64) return {4, 64};
  if (d_v <= 128) return {4, 128};
  if (d_v <= 512) return {1, 512};
  return {};
}
/// Version 3, additive: how many CTAs split one query block's key blocks (split-KV, as in
/// flash-decoding; a combine kernel merges their (O, lse)). One head at L_q = 512 gives only
/// 32 query blocks of 16 rows: without a split, 32 of an H100/H200's 132 SMs work (measured on
/// an H200: 0.95 ms, slower than the unfused version 2). Aim at kV3TargetCtas CTAs, at most one
/// split per key block and kV3MaxSplits in all. The dot family keeps one CTA per query block.
inline constexpr int kV3TargetCtas = 264, kV3MaxSplits = 8;  // 264: two per SM of a 132-SM chip
inline int v3_kv_splits(bool additive, long long query_blocks, int L_k) {
  if (!additive || query_blocks < 1) return 1;
  const long long key_blocks = (L_k + V3Shape::BC - 1) / V3Shape::BC;
  long long s = (kV3TargetCtas + query_blocks - 1) / query_blocks;
  if (s > key_blocks) s = key_blocks;
  if (s > kV3MaxSplits) s = kV3MaxSplits;
  return s < 1 ? 1 : int(s);
}
/// Padded head dim of versions 4/5 and of the backward (64 or 128); 0 = unsupported.
inline int padded_dim(int d, int d_v) {
  const int m = d > d_v ? d : d_v;
  return m <= 64 ? 64 : (m <= 128 ? 128 : 0);
}

inline std::size_t v2_smem_bytes() { return sizeof(float) * (2 * kV2Tile * (kV2Tile + 1) + kV2Tile); }

inline std::size_t v3_smem_bytes(bool additive, int d, int d_v) {
  const V3Variant v = v3_variant(additive, d_v);
  const int BR = 16 * v.rm, BC = V3Shape::BC;
  const int ldq = additive ? V3Shape::HC + 1 : odd_stride(d);
  return sizeof(float) * (std::size_t(BR) * V3Shape::ldp(v.rm) + std::size_t(BC) * d_v +
                          std::size_t(BR + BC) * ldq + V3Shape::HC + 8);
}

/// v3_bwd_dkdv (dq = false) or v3_bwd_dq (dq = true).
inline std::size_t v3_bwd_smem_bytes(bool dq, int d, int d_v) {
  const std::size_t ldq = std::size_t(odd_stride(d)), ldv = std::size_t(odd_stride(d_v));
  const std::size_t tiles = std::size_t(V3Bwd::BR + V3Bwd::BC) * (ldq + ldv);
  return sizeof(float) * (tiles + (dq ? 1 : 2) * std::size_t(V3Bwd::BR) * V3Bwd::LDP + 2 * V3Bwd::BR);
}

/// Versions 4 (stages = 1) and 5 (stages = 2): Q tile plus stages x (K, V) tiles of 16-bit elements.
inline std::size_t mma_smem_bytes(int D, int stages) {
  return 2 * std::size_t(MmaShape::ld(D)) * (MmaShape::BR + 2 * stages * MmaShape::BC);
}

}  // namespace qkscope::cuda::kern
