// native/cuda/launch_mma.cu — launchers of the tensor-core ladder steps 4 (mma.sync) and 5
// (mma.sync + cp.async double buffering). fp16 or bf16 inputs, D = 64 or 128.
// Compiled by nvcc into kern::gpu and by g++ into kern::interp (see launch_v123.cu).
#include "launch.hpp"
#include "launch_common.inl"
#include "kernels/v5_pipelined.cuh"

namespace qkscope::cuda::kern::QK_IMPL {
namespace {

template <class E, int D>
void run_mma(int version, const FwdParams& p) {
  const dim3 grid(blocks_for(p.L_q, MmaShape::BR), unsigned(p.heads.count())), block(MmaShape::THREADS);
  if (version == 4) {
    auto k = &v4_forward<E, D>;
    const std::size_t smem = mma_smem_bytes(D, 1);
    allow_smem(k, smem, "v4_forward");
    QK_LAUNCH("v4_forward", k, grid, block, smem, p);
  } else {
    auto k = &v5_forward<E, D>;
    const std::size_t smem = mma_smem_bytes(D, 2);
    allow_smem(k, smem, "v5_forward");
    QK_LAUNCH("v5_forward", k, grid, block, smem, p);
  }
}

}  // namespace

void launch_forward_mma(int version, const FwdParams& p) {
  if (version != 4 && version != 5) throw std::invalid_argument("launch_forward_mma: version " + std::to_string(version));
  if (p.additive) throw std::invalid_argument("kernel versions 4-5 cover the dot family only");
  if (version == 5 && (p.d % 8 || p.d_v % 8)) throw std::invalid_argument("kernel version 5 needs d, d_v multiples of 8");
  const int D = padded_dim(p.d, p.d_v);
  if (p.elem == Elem::f16 && D == 64) run_mma<__half, 64>(version, p);
  else if (p.elem == Elem::f16 && D == 128) run_mma<__half, 128>(version, p);
  else if (p.elem == Elem::bf16 && D == 64) run_mma<__nv_bfloat16, 64>(version, p);
  else if (p.elem == Elem::bf16 && D == 128) run_mma<__nv_bfloat16, 128>(version, p);
  else throw std::invalid_argument("kernel versions 4-5 take fp16/bf16 inputs with d, d_v <= 128");
}

}  // namespace qkscope::cuda::kern::QK_IMPL
