// native/cuda/bench_baseline.cu — the unfused baseline of qkscope_cuda_bench: per head
//   S = scale Q K^T (cuBLAS strided-batched GEMM) -> row softmax (+ top-left causal mask)
//   -> O = P V (cuBLAS), in fp32 (SGEMM) or fp16 (GemmEx, tensor cores, fp32 accumulate,
//   P rounded to fp16) — "matmul-softmax-matmul" as a framework without fused attention runs it.
// Row-major (L, d) matrices are column-major (d, L): S^T = K Q^T is gemm(T, N) on the raw
// buffers, O^T = V^T P^T is gemm(N, N) (the usual row-major trick).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "bench_baseline.hpp"

namespace qkbench {
namespace {

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
void ck(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string("cuBLAS error in ") + what + ": status " + std::to_string(int(s)));
}

/// One warp per row of S (rows = heads * L_q): z = scale s (-inf above the diagonal when
/// causal), P = softmax(z) written as float (in place) or half.
template <class P>
__global__ void softmax_rows(float* S, P* out, long long rows, int L_q, int L_k, float scale, bool causal) {
  const long long r = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const int i = int(r % L_q);
  float* s = S + r * L_k;
  const int jend = causal ? min(L_k, i + 1) : L_k;
  float m = -INFINITY;
  for (int j = lane; j < jend; j += 32) m = fmaxf(m, scale * s[j]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float l = 0.f;
  for (int j = lane; j < jend; j += 32) l += __expf(scale * s[j] - m);
  for (int o = 16; o > 0; o /= 2) l += __shfl_xor_sync(0xffffffffu, l, o);
  const float inv = l > 0.f ? 1.f / l : 0.f;
  P* po = out + r * L_k;
  for (int j = lane; j < L_k; j += 32) {
    const float p = j < jend ? __expf(scale * s[j] - m) * inv : 0.f;
    if constexpr (std::is_same_v<P, float>) po[j] = p;
    else po[j] = __float2half_rn(p);
  }
}

__global__ void to_half(const float* x, __half* y, long long n) {
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (long long)gridDim.x * blockDim.x)
    y[e] = __float2half_rn(x[e]);
}

template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(std::size_t n) { ck(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

}  // namespace

BaselineResult cublas_attention(const float* Q, const float* K, const float* V, int heads, int L, int d, bool causal,
                                bool half, int repeats) {
  const long long nq = (long long)heads * L * d, ns = (long long)heads * L * L;
  Dev<float> q(nq), k(nq), v(nq), o(nq), s(ns);
  ck(cudaMemcpy(q.p, Q, nq * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  ck(cudaMemcpy(k.p, K, nq * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  ck(cudaMemcpy(v.p, V, nq * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  Dev<__half> qh(half ? nq : 0), kh(half ? nq : 0), vh(half ? nq : 0), ph(half ? ns : 0);
  if (half) {
    to_half<<<1024, 256>>>(q.p, qh.p, nq);
    to_half<<<1024, 256>>>(k.p, kh.p, nq);
    to_half<<<1024, 256>>>(v.p, vh.p, nq);
    ck(cudaGetLastError(), "to_half");
  }
  cublasHandle_t h;
  ck(cublasCreate(&h), "cublasCreate");
  const float one = 1.f, zero = 0.f, scale = 1.f / std::sqrt(float(d));
  const long long sq = (long long)L * d, ss = (long long)L * L;
  const long long rows = (long long)heads * L;
  auto run = [&] {
    if (!half) {
      ck(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, L, L, d, &one, k.p, d, sq, q.p, d, sq, &zero, s.p, L, ss,
                                   heads),
         "cublasSgemmStridedBatched (S)");
      softmax_rows<float><<<unsigned((rows + 7) / 8), 256>>>(s.p, s.p, rows, L, L, scale, causal);
      ck(cudaGetLastError(), "softmax_rows");
      ck(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, d, L, L, &one, v.p, d, sq, s.p, L, ss, &zero, o.p, d, sq,
                                   heads),
         "cublasSgemmStridedBatched (O)");
    } else {
      ck(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, L, L, d, &one, kh.p, CUDA_R_16F, d, sq, qh.p,
                                    CUDA_R_16F, d, sq, &zero, s.p, CUDA_R_32F, L, ss, heads, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT),
         "cublasGemmStridedBatchedEx (S)");
      softmax_rows<__half><<<unsigned((rows + 7) / 8), 256>>>(s.p, ph.p, rows, L, L, scale, causal);
      ck(cudaGetLastError(), "softmax_rows");
      ck(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, d, L, L, &one, vh.p, CUDA_R_16F, d, sq, ph.p,
                                    CUDA_R_16F, L, ss, &zero, o.p, CUDA_R_32F, d, sq, heads, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT),
         "cublasGemmStridedBatchedEx (O)");
    }
  };
  BaselineResult r;
  r.ms = time_median_ms(run, repeats);
  r.out.resize(std::size_t(nq));
  ck(cudaMemcpy(r.out.data(), o.p, nq * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cublasDestroy(h);
  return r;
}

double time_median_ms(const std::function<void()>& fn, int repeats) {
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "cudaEventCreate");
  ck(cudaEventCreate(&b), "cudaEventCreate");
  for (int w = 0; w < 3; ++w) fn();  // warm: clocks, caches, lazy module loading
  ck(cudaDeviceSynchronize(), "warm-up");
  std::vector<float> t;
  for (int r = 0; r < repeats; ++r) {
    ck(cudaEventRecord(a), "cudaEventRecord");
    fn();
    ck(cudaEventRecord(b), "cudaEventRecord");
    ck(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    ck(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace qkbench
