// native/cuda/emu/emu.hpp — a CPU interpreter for this repository's CUDA kernels (in the
// spirit of TRITON_INTERPRET=1): the kernel source is compiled by g++ with this header in
// place of the CUDA runtime, and every thread of a block runs as a fiber on one OS thread.
// What it models faithfully enough to catch indexing and synchronisation bugs without a GPU:
//   - __syncthreads: a real block barrier; a thread that exits while others wait, or a
//     barrier that can never complete (divergent __syncthreads), is reported as an error;
//   - warp collectives (__shfl_*_sync, __syncwarp, mma.sync fragments): all 32 lanes must
//     arrive, values are exchanged with the lane rules of the PTX ISA;
//   - cp.async: the destination reads as NaN from the issue until the copy lands, at the
//     issuing thread's cp.async.wait_group (the latest moment allowed): a read before the wait
//     (or before the barrier that follows it, for other threads) poisons the result;
//   - dynamic shared memory starts as 0xFF bytes (NaN in fp32/fp16/bf16), so reading
//     shared memory nobody wrote turns the result into NaN.
// Threads switch only at synchronisation points. Which ready thread runs next is a policy
// (Schedule): the greedy orders let the lowest (or highest) warp run as far as it can before
// any other moves, which exposes a missing barrier between warps as a read of poisoned or
// stale shared memory; round robin keeps warps in lockstep. A race that needs an interleaving
// none of them produces is not found, and a warp collective (shuffle, mma) acts as a full
// memory fence here, while on the GPU only __syncwarp/__syncthreads order shared memory.
// Static __shared__ arrays are rejected (use QK_SMEM).
// Nothing here runs on a GPU or checks timing; it checks the algorithm as the kernels spell it.
#pragma once

#include <cuda_bf16.h>  // host-usable fp16/bf16 types; define __device__ etc. as nothing for g++
#include <cuda_fp16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>

#include "schedule.hpp"

#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#undef __shared__
#define __shared__ qkemu_static_shared_memory_is_not_interpreted_use_QK_SMEM

namespace qkemu {

const uint3& thread_idx();
const uint3& block_idx();
const dim3& block_dim();
const dim3& grid_dim();
/// The block's dynamic shared memory (0xFF-filled at block start).
unsigned char* dynamic_smem();
std::size_t dynamic_smem_bytes();

void syncthreads();
/// Every lane of the calling warp deposits `bytes` (<= 64) bytes and waits for the others;
/// returns the 32 deposits (lane l at offset 64 l), valid until the lane's next exchange.
const unsigned char* warp_exchange(const void* mine, std::size_t bytes, unsigned mask);
int lane_id();

/// Runs body() once per thread of every block, blocks in (z, y, x) order.
void launch(dim3 grid, dim3 block, std::size_t smem_bytes, const std::function<void()>& body,
            const char* name);

/// cp.async of `bytes` bytes (zero-filled when !valid), committed groups, wait_group n.
void cp_async(void* dst, const void* src, std::size_t bytes, bool valid);
void cp_async_commit();
void cp_async_wait(int pending_allowed);

/// Counters for tests: kernels launched, blocks run, fiber switches.
struct Stats {
  long long launches = 0, blocks = 0, switches = 0;
};
Stats& stats();
/// Shared-memory limit per block that launches are checked against (227 KiB, Hopper).
inline constexpr std::size_t kMaxSmem = 227 * 1024;

/// mma.sync.m16n8k16.row.col.f32.{f16,bf16}: fragments as in the PTX ISA
/// ("Matrix fragments for mma.m16n8k16 with floating point type").
template <class E>
void mma_m16n8k16(float d[4], const std::uint32_t a[4], const std::uint32_t b[2], const float c[4]) {
  struct Frag {
    std::uint32_t a[4], b[2];
    float c[4];
  } mine;
  std::memcpy(mine.a, a, sizeof mine.a);
  std::memcpy(mine.b, b, sizeof mine.b);
  std::memcpy(mine.c, c, sizeof mine.c);
  const unsigned char* all = warp_exchange(&mine, sizeof mine, 0xffffffffu);
  auto frag = [&](int lane) {
    Frag f;
    std::memcpy(&f, all + 64 * lane, sizeof f);
    return f;
  };
  auto half_of = [](std::uint32_t r, int hi) {
    E e;
    const std::uint16_t bits = std::uint16_t(hi ? r >> 16 : r & 0xffffu);
    std::memcpy(static_cast<void*>(&e), &bits, 2);
    return float(e);
  };
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const Frag f = frag(lane);
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 8; ++i) {  // a_i: rows g (i in 0,1,4,5) or g+8; cols 2t + (i&1) (+8 for i >= 4)
      const int row = g + ((i & 2) ? 8 : 0), col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
      A[row][col] = half_of(f.a[i / 2], i & 1);
    }
    for (int i = 0; i < 4; ++i) {  // b_i: rows 2t + (i&1) (+8 for i >= 2), col g
      const int row = 2 * t + (i & 1) + (i >= 2 ? 8 : 0);
      B[row][g] = half_of(f.b[i / 2], i & 1);
    }
  }
  const int lane = lane_id(), g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {  // c_i / d_i: row g (+8 for i >= 2), col 2t + (i&1)
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
    float s = c[i];
    for (int k = 0; k < 16; ++k) s += A[row][k] * B[k][col];
    d[i] = s;
  }
}

}  // namespace qkemu

#define threadIdx (::qkemu::thread_idx())
#define blockIdx (::qkemu::block_idx())
#define blockDim (::qkemu::block_dim())
#define gridDim (::qkemu::grid_dim())

inline void __syncthreads() { ::qkemu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)::qkemu::warp_exchange(nullptr, 0, mask); }

template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  static_assert(sizeof(T) <= 64, "shuffled value too large");
  const unsigned char* all = ::qkemu::warp_exchange(&v, sizeof(T), mask);
  const int lane = ::qkemu::lane_id();
  const int from = (lane / width) * width + (src % width);
  T r;
  std::memcpy(&r, all + 64 * from, sizeof(T));
  return r;
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const unsigned char* all = ::qkemu::warp_exchange(&v, sizeof(T), mask);
  const int lane = ::qkemu::lane_id();
  int from = lane ^ lane_mask;
  if (from / width != lane / width) from = lane;  // outside the segment: own value
  T r;
  std::memcpy(&r, all + 64 * from, sizeof(T));
  return r;
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const unsigned char* all = ::qkemu::warp_exchange(&v, sizeof(T), mask);
  const int lane = ::qkemu::lane_id();
  int from = lane + int(delta);
  if (from / width != lane / width) from = lane;
  T r;
  std::memcpy(&r, all + 64 * from, sizeof(T));
  return r;
}

inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
