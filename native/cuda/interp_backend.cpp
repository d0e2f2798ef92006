// native/cuda/interp_backend.cpp — the Backend that runs the same kernel source on the CPU
// interpreter (emu/emu.hpp): host memory stands in for device memory, every launch runs to
// completion before returning. Slow (each CUDA thread is a fiber); for tests without a GPU.
#define QKSCOPE_CUDA_EMULATE 1

#include <cstdlib>
#include <cstring>
#include <new>

#include "backend.hpp"
// The launchers and kernels, compiled here into kern::interp.
#include "launch_v123.cu"
#include "launch_bwd.cu"
#include "launch_mma.cu"

namespace qkscope::cuda::detail {
namespace {

class InterpreterBackend final : public Backend {
 public:
  void* alloc(std::size_t bytes) override {
    void* p = std::aligned_alloc(256, ((bytes ? bytes : 1) + 255) / 256 * 256);  // cudaMalloc's alignment
    if (!p) throw std::runtime_error("CUDA interpreter: out of host memory");
    std::memset(p, 0xFF, bytes);  // like fresh device memory, not zero: reading it unwritten shows as NaN
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void convert(const float* x, void* out, long long n, kern::Elem e) override {
    kern::interp::launch_convert(x, out, n, e);
  }
  void forward(int version, const kern::FwdParams& p) override {
    if (version <= 3) kern::interp::launch_forward_v123(version, p);
    else kern::interp::launch_forward_mma(version, p);
  }
  void backward(const kern::BwdParams& bp) override { kern::interp::launch_backward_v3(bp); }
  void synchronize() override {}
  std::size_t smem_limit() override { return qkemu::kMaxSmem; }
};

}  // namespace

Backend& interpreter_backend() {
  static InterpreterBackend b;
  return b;
}

}  // namespace qkscope::cuda::detail
