// native/cuda/bench_baseline.hpp — cuBLAS baseline and CUDA-event timing for qkscope_cuda_bench.
#pragma once

#include <functional>
#include <vector>

namespace qkbench {

struct BaselineResult {
  double ms = 0;           // warm median of the whole S -> softmax -> O sequence
  std::vector<float> out;  // O of every head, (heads * L, d) row-major
};

/// softmax(Q K^T / sqrt(d) [top-left causal]) V for `heads` heads of (L, d) fp32 host matrices
/// stacked by rows, with cuBLAS in fp32 (half = false) or fp16 tensor cores (half = true).
BaselineResult cublas_attention(const float* Q, const float* K, const float* V, int heads, int L, int d, bool causal,
                                bool half, int repeats);

/// Median over `repeats` runs of fn() between two CUDA events, after 3 warm-up runs (ms).
double time_median_ms(const std::function<void()>& fn, int repeats);

}  // namespace qkbench
