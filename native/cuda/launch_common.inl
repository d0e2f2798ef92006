// native/cuda/launch_common.inl — launching a kernel, for the GPU (<<<>>> + error check) or
// for the CPU interpreter (qkemu::launch), from the same launcher source (launch_*.cu).
#pragma once

#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels/common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

#if defined(QKSCOPE_CUDA_EMULATE)
template <class Kernel>
inline void allow_smem(Kernel, std::size_t, const char*) {}
#define QK_LAUNCH(name, kernel, grid, block, smem, ...) \
  ::qkemu::launch(grid, block, smem, [&] { kernel(__VA_ARGS__); }, name)
#else
/// Throws std::runtime_error("CUDA error in <what>: <CUDA's error string>").
inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
/// Raises the kernel's dynamic shared-memory limit past the 48 KiB default when needed (once
/// per kernel and size: the attribute call is a host round trip that must stay out of timings).
template <class Kernel>
inline void allow_smem(Kernel kernel, std::size_t bytes, const char* name) {
  if (bytes <= 48 * 1024) return;
  static std::mutex mu;
  static std::unordered_map<const void*, std::size_t> raised;
  const std::lock_guard<std::mutex> lock(mu);
  std::size_t& have = raised[reinterpret_cast<const void*>(kernel)];
  if (have >= bytes) return;
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)), name);
  have = bytes;
}
#define QK_LAUNCH(name, kernel, grid, block, smem, ...)        \
  do {                                                         \
    kernel<<<grid, block, smem>>>(__VA_ARGS__);                \
    ::qkscope::cuda::kern::QK_IMPL::check_cuda(cudaGetLastError(), name); \
  } while (0)
#endif

inline unsigned blocks_for(long long n, int per) { return unsigned((n + per - 1) / per); }

}  // namespace qkscope::cuda::kern::QK_IMPL
