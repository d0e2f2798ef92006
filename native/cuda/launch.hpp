// native/cuda/launch.hpp — the launchers of launch_*.cu, declared for both builds of the
// kernels: kern::gpu (nvcc) and kern::interp (the CPU interpreter, QKSCOPE_CUDA_EMULATE).
// Each runs asynchronously on the default stream (the interpreter: synchronously) and throws
// std::runtime_error for CUDA errors, std::invalid_argument for shapes no kernel covers.
#pragma once

#include "kernels/params.hpp"

#define QKSCOPE_DECLARE_LAUNCHERS(impl)                                                          \
  namespace qkscope::cuda::kern::impl {                                                          \
  void launch_forward_v123(int version, const FwdParams& p);                                     \
  void launch_forward_mma(int version, const FwdParams& p);                                      \
  void launch_backward_v3(const BwdParams& bp);                                                  \
  void launch_convert(const float* x, void* out, long long n, Elem e);                           \
  }

QKSCOPE_DECLARE_LAUNCHERS(gpu)
QKSCOPE_DECLARE_LAUNCHERS(interp)
