// native/cuda/kernels/prep.cuh — preprocessing that turns every scoring function into what
// the attention kernels consume (fp32, on the device, once per call):
//   cosine:        rows divided by max(|x|, 1e-8)  (|x| computed as m sqrt(sum (x/m)^2), m = max|x|,
//                  so huge rows do not overflow; score::Cosine's rule)
//   bilinear:      Q W                            (prep_matmul, W as given)
//   additive:      A = Q W_q^T + b, B = K W_k^T   (prep_matmul with a transposed stride)
//   linear_concat: [Q w_q, 1] and [1, K w_k]      (prep_matmul with (d, 2) weights and a bias):
//                  their dot product is a_i + c_j, so the dot kernels run it unchanged
//   fp16 / bf16:   round-to-nearest conversion for the tensor-core versions
#pragma once

#include "common.cuh"

namespace qkscope::cuda::kern::QK_IMPL {

__global__ void __launch_bounds__(256) prep_normalize_rows(const float* x, float* out, long long rows, int cols) {
  const int lane = int(threadIdx.x) % 32;
  const long long r = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  if (r >= rows) return;
  const float* in = x + r * cols;
  float m = 0.f;
  for (int c = lane; c < cols; c += 32) m = tile::max_(m, fabsf(in[c]));
  m = group_max<32>(m);
  float ss = 0.f;
  if (m > 0.f)
    for (int c = lane; c < cols; c += 32) {
      const float y = in[c] / m;
      ss = fmaf(y, y, ss);
    }
  ss = group_sum<32>(ss);
  const float n = tile::max_(m > 0.f ? m * sqrtf(ss) : 0.f, 1e-8f);
  for (int c = lane; c < cols; c += 32) out[r * cols + c] = in[c] / n;
}

/// out = x Y + bias with 16 x 16 shared-memory tiles; Y(k, n) = y[k * stride_k + n * stride_n].
__global__ void __launch_bounds__(256) prep_matmul(MatmulParams p) {
  constexpr int T = 16, LD = T + 1;
  QK_SMEM(smem);
  float* Xs = reinterpret_cast<float*>(smem);  // [T][LD]
  float* Ys = Xs + T * LD;                     // [T][LD]
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const long long r0 = (long long)blockIdx.x * T;  // rows on x: up to 2^31 - 1 blocks
  const int n0 = int(blockIdx.y) * T;
  float acc = 0.f;
  for (int k0 = 0; k0 < p.kdim; k0 += T) {
    Xs[ty * LD + tx] = (r0 + ty < p.m && k0 + tx < p.kdim) ? p.x[(r0 + ty) * p.kdim + k0 + tx] : 0.f;
    Ys[ty * LD + tx] = (k0 + ty < p.kdim && n0 + tx < p.n) ? p.y[(k0 + ty) * p.stride_k + (n0 + tx) * p.stride_n] : 0.f;
    __syncthreads();
    QK_UNROLL
    for (int kk = 0; kk < T; ++kk) acc = fmaf(Xs[ty * LD + kk], Ys[kk * LD + tx], acc);
    __syncthreads();
  }
  const long long r = r0 + ty;
  const int n = n0 + tx;
  if (r < p.m && n < p.n) p.out[r * p.n + n] = acc + (p.bias ? p.bias[n] : 0.f);
}

template <class E>
__global__ void __launch_bounds__(256) prep_convert(const float* x, E* out, long long n) {
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x)
    out[e] = from_float<E>(x[e]);
}

}  // namespace qkscope::cuda::kern::QK_IMPL
