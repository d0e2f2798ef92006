// native/cuda/launch_bwd.cu — launchers of the version 3 backward (kernels/v3_backward.cuh).
// Compiled by nvcc into kern::gpu and by g++ into kern::interp (see launch_v123.cu).
#include "launch.hpp"
#include "launch_common.inl"
#include "kernels/v3_backward.cuh"

namespace qkscope::cuda::kern::QK_IMPL {
namespace {

template <int DM>
void run_bwd(const BwdParams& bp) {
  const FwdParams& p = bp.f;
  auto dkdv = &v3_bwd_dkdv<DM>;
  auto dq = &v3_bwd_dq<DM>;
  const std::size_t s_kv = v3_bwd_smem_bytes(false, p.d, p.d_v), s_q = v3_bwd_smem_bytes(true, p.d, p.d_v);
  allow_smem(dkdv, s_kv, "v3_bwd_dkdv");
  allow_smem(dq, s_q, "v3_bwd_dq");
  QK_LAUNCH("v3_bwd_delta", v3_bwd_delta, dim3(blocks_for(p.L_q, 256), unsigned(p.heads.count())), dim3(256), 0, bp);
  QK_LAUNCH("v3_bwd_dkdv", dkdv, dim3(blocks_for(p.L_k, V3Bwd::BC), unsigned(p.heads.kv_count())), dim3(256), s_kv,
            bp);
  QK_LAUNCH("v3_bwd_dq", dq, dim3(blocks_for(p.L_q, V3Bwd::BR), unsigned(p.heads.count())), dim3(256), s_q, bp);
}

}  // namespace

void launch_backward_v3(const BwdParams& bp) {
  const FwdParams& p = bp.f;
  if (p.elem != Elem::f32 || p.additive) throw std::invalid_argument("the version 3 backward takes fp32 dot-family inputs");
  switch (padded_dim(p.d, p.d_v)) {
    case 64: run_bwd<64>(bp); break;
    case 128: run_bwd<128>(bp); break;
    default: throw std::invalid_argument("the version 3 backward needs d, d_v <= 128");
  }
}

}  // namespace qkscope::cuda::kern::QK_IMPL
