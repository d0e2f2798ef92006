// native/cuda/launch_v123.cu — launchers of the fp32 ladder steps 1-3 (forward) and of the
// fp16/bf16 conversion. Compiled by nvcc into kern::gpu, and by g++ into kern::interp
// (interp_backend.cpp includes this file with QKSCOPE_CUDA_EMULATE defined).
#include "launch.hpp"
#include "launch_common.inl"
#include "kernels/prep.cuh"
#include "kernels/v1_naive.cuh"
#include "kernels/v2_tiled.cuh"
#include "kernels/v3_flash.cuh"

namespace qkscope::cuda::kern::QK_IMPL {
namespace {

template <class Score>
void run_v1(const FwdParams& p) {
  const unsigned bh = unsigned(p.heads.count());
  auto logits = &v1_logits<Score>;
  QK_LAUNCH("v1_logits", logits, dim3(blocks_for(p.L_k, 32), blocks_for(p.L_q, 8), bh), dim3(32, 8), 0, p);
  QK_LAUNCH("v1_softmax", v1_softmax, dim3(blocks_for(p.L_q, 128), bh), dim3(128), 0, p);
  QK_LAUNCH("v1_pv", v1_pv, dim3(blocks_for(p.d_v, 32), blocks_for(p.L_q, 8), bh), dim3(32, 8), 0, p);
}

template <class Score>
void run_v2(const FwdParams& p) {
  const unsigned bh = unsigned(p.heads.count());
  const std::size_t smem = v2_smem_bytes();
  auto logits = &v2_logits<Score>;
  QK_LAUNCH("v2_logits", logits, dim3(blocks_for(p.L_k, kV2Tile), blocks_for(p.L_q, kV2Tile), bh),
            dim3(kV2Tile, kV2Tile), smem, p);
  QK_LAUNCH("v2_softmax", v2_softmax, dim3(blocks_for(p.L_q, 8), bh), dim3(256), 0, p);
  QK_LAUNCH("v2_pv", v2_pv, dim3(blocks_for(p.d_v, kV2Tile), blocks_for(p.L_q, kV2Tile), bh),
            dim3(kV2Tile, kV2Tile), smem, p);
}

template <class Score, int RM, int DV>
void run_v3(const FwdParams& p) {
  auto k = &v3_forward<Score, RM, DV>;
  const std::size_t smem = v3_smem_bytes(Score::additive, p.d, p.d_v);
  allow_smem(k, smem, "v3_forward");
  if (p.kv_splits < 1 || p.kv_splits > kV3MaxSplits || (p.kv_splits > 1 && (!p.part_o || !p.part_lse)))
    throw std::invalid_argument("kernel version 3: kv_splits = " + std::to_string(p.kv_splits) +
                                " needs 1.." + std::to_string(kV3MaxSplits) + " and partial buffers");
  const unsigned heads = unsigned(p.heads.count());
  QK_LAUNCH("v3_forward", k, dim3(blocks_for(p.L_q, 16 * RM), heads, unsigned(p.kv_splits)), dim3(256), smem, p);
  if (p.kv_splits > 1) QK_LAUNCH("v3_combine", v3_combine, dim3(heads * unsigned(p.L_q)), dim3(128), 0, p);
}

}  // namespace

void launch_forward_v123(int version, const FwdParams& p) {
  if (p.elem != Elem::f32) throw std::invalid_argument("kernel versions 1-3 take fp32 inputs");
  if (version == 1) {
    p.additive ? run_v1<AdditiveScore>(p) : run_v1<DotScore>(p);
  } else if (version == 2) {
    p.additive ? run_v2<AdditiveScore>(p) : run_v2<DotScore>(p);
  } else if (version == 3) {
    const V3Variant v = v3_variant(p.additive, p.d_v);
    if (p.additive && v.dv_max == 512) run_v3<AdditiveScore, 1, 512>(p);
    else if (!p.additive && v.rm == 4 && v.dv_max == 64) run_v3<DotScore, 4, 64>(p);
    else if (!p.additive && v.rm == 4 && v.dv_max == 128) run_v3<DotScore, 4, 128>(p);
    else if (!p.additive && v.rm == 1 && v.dv_max == 512) run_v3<DotScore, 1, 512>(p);
    else throw std::invalid_argument("kernel version 3: d_v = " + std::to_string(p.d_v) + " is above 512");
  } else {
    throw std::invalid_argument("launch_forward_v123: version " + std::to_string(version));
  }
}

void launch_convert(const float* x, void* out, long long n, Elem e) {
  const dim3 grid(unsigned(n < 256 * 4096 ? blocks_for(n, 256) : 4096));
  if (e == Elem::f16) {
    auto k = &prep_convert<__half>;
    QK_LAUNCH("prep_convert", k, grid, dim3(256), 0, x, static_cast<__half*>(out), n);
  } else if (e == Elem::bf16) {
    auto k = &prep_convert<__nv_bfloat16>;
    QK_LAUNCH("prep_convert", k, grid, dim3(256), 0, x, static_cast<__nv_bfloat16*>(out), n);
  } else {
    throw std::invalid_argument("launch_convert: target must be fp16 or bf16");
  }
}

}  // namespace qkscope::cuda::kern::QK_IMPL
