// native/cuda/gpu_backend.cu — the Backend that runs the kernels on CUDA device 0.
// Every CUDA failure becomes std::runtime_error("CUDA error in <what>: <cudaGetErrorString>").
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "backend.hpp"
#include "launch.hpp"

#ifndef QKSCOPE_CUDA_ARCHS  // set by CMakeLists.txt from CMAKE_CUDA_ARCHITECTURES
#define QKSCOPE_CUDA_ARCHS "?"
#endif

namespace qkscope::cuda::detail {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

// An empty kernel: if its sm_90a image cannot load on the device, nothing else can.
__global__ void qkscope_probe() {}

class GpuBackend final : public Backend {
 public:
  void* alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
  }
  void release(void* p) noexcept override { cudaFree(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)");
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
  }
  void convert(const float* x, void* out, long long n, kern::Elem e) override { kern::gpu::launch_convert(x, out, n, e); }
  void forward(int version, const kern::FwdParams& p) override {
    if (version <= 3) kern::gpu::launch_forward_v123(version, p);
    else kern::gpu::launch_forward_mma(version, p);
  }
  void backward(const kern::BwdParams& bp) override { kern::gpu::launch_backward_v3(bp); }
  void synchronize() override { check(cudaDeviceSynchronize(), "a kernel (cudaDeviceSynchronize)"); }
  std::size_t smem_limit() override {
    int v = 0;
    check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), "cudaDeviceGetAttribute");
    return std::size_t(v);
  }
};

}  // namespace

GpuInfo gpu_info() {
  GpuInfo info;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    info.reason = std::string("no usable CUDA driver or device: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error state
    return info;
  }
  if (n == 0) {
    info.reason = "no CUDA device";
    return info;
  }
  cudaDeviceProp prop{};
  e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess) {
    info.reason = std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorString(e);
    return info;
  }
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.smem_optin = prop.sharedMemPerBlockOptin;
  info.memory_bytes = prop.totalGlobalMem;
  cudaFuncAttributes attr{};
  e = cudaFuncGetAttributes(&attr, qkscope_probe);
  if (e != cudaSuccess) {
    info.reason = "device " + info.name + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
                  ") cannot run this build's kernels (built for CMAKE_CUDA_ARCHITECTURES " QKSCOPE_CUDA_ARCHS
                  "): " + cudaGetErrorString(e);
    cudaGetLastError();
    return info;
  }
  info.available = true;
  return info;
}

Backend& gpu_backend() {
  static const GpuInfo info = gpu_info();
  if (!info.available) throw std::runtime_error("CUDA backend unavailable: " + info.reason);
  static GpuBackend b;
  return b;
}

}  // namespace qkscope::cuda::detail
