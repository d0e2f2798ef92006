// native/cuda/api_params.cpp — what a launch reads, on the device: the form's rows q, k and
// V (rounded to fp16/bf16 for the tensor-core versions), the resolved mask (keep mask and its
// block map uploaded), the score modifiers of the pipeline (relative and T5 tables and dense bias
// uploaded), per-head ALiBi slopes and per-sequence key lengths.
#include "api_detail.hpp"

namespace qkscope::cuda::detail {

kern::FwdParams make_params(Buffers& buf, const Plan& pl, const Matrix& V, const AttentionConfig<float>& cfg,
                            const Options& opt) {
  Backend& b = buf.backend();
  kern::FwdParams p;
  p.heads = pl.heads;
  p.L_q = pl.L_q;
  p.L_k = pl.L_k;
  p.d = pl.d;
  p.d_v = pl.d_v;
  p.elem = pl.elem;
  p.additive = pl.additive;
  const float* q32 = buf.upload(pl.rows.q.data(), std::size_t(pl.rows.q.size()));
  const float* k32 = buf.upload(pl.rows.k.data(), std::size_t(pl.rows.k.size()));
  const float* v32 = buf.upload(V.data(), std::size_t(V.size()));
  if (pl.additive) p.add_v = buf.upload(pl.rows.add_v.data(), std::size_t(pl.rows.add_v.size()));
  p.q = q32;
  p.k = k32;
  p.v = v32;
  if (pl.elem != kern::Elem::f32) {
    auto convert = [&](const float* x, std::size_t n) {
      void* out = buf.alloc<std::uint16_t>(n);
      b.convert(x, out, (long long)n, pl.elem);
      return static_cast<const void*>(out);
    };
    p.q = convert(q32, std::size_t(pl.rows.q.size()));
    p.k = convert(k32, std::size_t(pl.rows.k.size()));
    p.v = convert(v32, std::size_t(V.size()));
  }
  p.mask = pl.mask;
  if (p.mask.keep) {
    const std::size_t n = std::size_t(pl.L_q) * std::size_t(pl.L_k);
    pipeline::BlockClassifier bc{p.mask, kern::kMapBr, kern::kMapBc, nullptr};
    std::vector<std::uint8_t> map(std::size_t(bc.num_q_blocks()) * std::size_t(bc.num_k_blocks()));
    pipeline::build_block_map(p.mask, kern::kMapBr, kern::kMapBc, map.data());  // on the host keep mask
    p.block_map = buf.upload(map.data(), map.size());
    p.mask.keep = buf.upload(p.mask.keep, n);
  }
  p.mods = score_mods(cfg.bias, pl.scale, cfg.temperature, pl.mask.offset);
  if (p.mods.relative) p.mods.relative = buf.upload(p.mods.relative, std::size_t(2 * p.mods.R + 1));
  if (p.mods.t5) p.mods.t5 = buf.upload(p.mods.t5, std::size_t(p.mods.buckets.num_buckets));
  if (p.mods.dense) p.mods.dense = buf.upload(p.mods.dense, std::size_t(pl.L_q) * std::size_t(pl.L_k));
  if (!opt.alibi_slopes.empty()) {
    std::vector<float> s(opt.alibi_slopes.begin(), opt.alibi_slopes.end());
    p.slopes = buf.upload(s.data(), s.size());
  }
  if (!opt.key_lengths.empty()) {
    std::vector<int> kl(opt.key_lengths.begin(), opt.key_lengths.end());
    p.key_lengths = buf.upload(kl.data(), kl.size());
  }
  return p;
}

}  // namespace qkscope::cuda::detail
