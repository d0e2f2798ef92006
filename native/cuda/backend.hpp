// native/cuda/backend.hpp — private: what the host API (api.cpp) needs from a place that runs
// kernels. Two implementations: the GPU (gpu_backend.cu: cudaMalloc, <<<>>>) and the CPU
// interpreter (interp_backend.cpp: host memory, qkemu fibers). No CUDA or Eigen types here.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/params.hpp"

namespace qkscope::cuda::detail {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual void* alloc(std::size_t bytes) = 0;  // throws std::runtime_error (out of memory, CUDA errors)
  virtual void release(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void convert(const float* x, void* out, long long n, kern::Elem e) = 0;
  virtual void forward(int version, const kern::FwdParams& p) = 0;
  virtual void backward(const kern::BwdParams& bp) = 0;
  virtual void synchronize() = 0;  // waits for the launches and reports their errors
  /// Largest dynamic shared memory one block may use, in bytes.
  virtual std::size_t smem_limit() = 0;
};

/// What the GPU backend found (filled without throwing).
struct GpuInfo {
  bool available = false;
  std::string reason;  // why not, when !available
  std::string name;    // device 0's name
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  std::size_t smem_optin = 0, memory_bytes = 0;
};

Backend& gpu_backend();          // throws std::runtime_error when no usable device
Backend& interpreter_backend();  // always available
GpuInfo gpu_info();

}  // namespace qkscope::cuda::detail
