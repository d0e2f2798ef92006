// qkscope/pipeline/host_device.hpp — the few primitives every pipeline functor is built from,
// compiled unchanged for the CPU (g++), for CUDA device code (nvcc) and by the CPU
// interpreter of the CUDA kernels (native/cuda/emu/). No Eigen, no std:: containers:
// only PODs, raw pointers and these scalar helpers, so the functors can run on the GPU.
//   exp_/log_/tanh_: precise float/double overloads (expf on the device, std::exp on the host)
//   neg_inf<T>():   -inf without <limits> (numeric_limits is host-only in device code)
#pragma once

#include <cmath>
#include <cstdint>

#ifndef QKSCOPE_HOST_DEVICE
#if defined(__CUDACC__)
#define QKSCOPE_HOST_DEVICE __host__ __device__
#else
#define QKSCOPE_HOST_DEVICE
#endif
#endif

namespace qkscope::pipeline {

/// Offsets into (heads, L, d) arrays can exceed 2^31; positions inside a sequence cannot.
using offset_t = long long;

QKSCOPE_HOST_DEVICE constexpr int imin(int a, int b) { return a < b ? a : b; }
QKSCOPE_HOST_DEVICE constexpr int imax(int a, int b) { return a > b ? a : b; }
QKSCOPE_HOST_DEVICE constexpr int iclamp(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }
QKSCOPE_HOST_DEVICE constexpr int iabs(int x) { return x < 0 ? -x : x; }
/// ceil(a / b) for a >= 0, b > 0.
QKSCOPE_HOST_DEVICE constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <class T>
QKSCOPE_HOST_DEVICE constexpr T neg_inf();
template <>
QKSCOPE_HOST_DEVICE constexpr float neg_inf<float>() { return -__builtin_huge_valf(); }
template <>
QKSCOPE_HOST_DEVICE constexpr double neg_inf<double>() { return -__builtin_huge_val(); }
template <class T>
QKSCOPE_HOST_DEVICE constexpr T pos_inf() { return -neg_inf<T>(); }

#if defined(__CUDA_ARCH__)
QKSCOPE_HOST_DEVICE inline float exp_(float x) { return expf(x); }
QKSCOPE_HOST_DEVICE inline double exp_(double x) { return ::exp(x); }
QKSCOPE_HOST_DEVICE inline float log_(float x) { return logf(x); }
QKSCOPE_HOST_DEVICE inline double log_(double x) { return ::log(x); }
QKSCOPE_HOST_DEVICE inline float tanh_(float x) { return tanhf(x); }
QKSCOPE_HOST_DEVICE inline double tanh_(double x) { return ::tanh(x); }
#else
QKSCOPE_HOST_DEVICE inline float exp_(float x) { return std::exp(x); }
QKSCOPE_HOST_DEVICE inline double exp_(double x) { return std::exp(x); }
QKSCOPE_HOST_DEVICE inline float log_(float x) { return std::log(x); }
QKSCOPE_HOST_DEVICE inline double log_(double x) { return std::log(x); }
QKSCOPE_HOST_DEVICE inline float tanh_(float x) { return std::tanh(x); }
QKSCOPE_HOST_DEVICE inline double tanh_(double x) { return std::tanh(x); }
#endif

/// max that ignores NaN in `b` like fmaxf, but spelled out so float and double agree.
template <class T>
QKSCOPE_HOST_DEVICE inline T max_(T a, T b) { return b > a ? b : a; }

}  // namespace qkscope::pipeline
