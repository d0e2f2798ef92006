// native/cuda/kernels/prep.cuh — the fp16 / bf16 round-to-nearest conversion of the kernels'
// inputs for the tensor-core versions. Each scoring function's own preparation (cosine's
// normalised rows, bilinear's Q W, additive's projections, linear concat's separable form)
// is its prepare hook (core/include/qkscope/score/), run on the host by the API.
#pragma once

#include "common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

template <class E>
__global__ void __launch_bounds__(256) prep_convert(const float* x, E* out, long long n) {
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x)
    out[e] = from_float<E>(x[e]);
}

}  // namespace qkscope::cuda::kern::QK_IMPL
