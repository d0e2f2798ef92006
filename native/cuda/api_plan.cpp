// native/cuda/api_plan.cpp — validation of a CUDA call with the core's own checks and
// messages, and the scoring function's form: found by visiting the score registry, prepared
// on the host by the function's prepare hook (core/include/qkscope/score/, forms.hpp) and
// turned into the kernels' rows: dot-product rows (the dot kernels) or the additive form
// (the fused tanh kernels). The form's type picks the kernels, never the score's name.
#include <algorithm>
#include <cmath>

#include "api_detail.hpp"
#include "qkscope/detail/logit_range.hpp"

namespace qkscope::cuda::detail {
namespace {

using kern::Elem;
using qkscope::detail::require;

const char* precision_name(Precision p) {
  return p == Precision::fp32 ? "fp32" : (p == Precision::fp16 ? "fp16" : "bf16");
}

}  // namespace

Backend& backend_for(const Options& o) { return o.interpret ? interpreter_backend() : gpu_backend(); }

Plan make_plan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
               const AttentionConfig<float>& cfg, const Options& opt, int version, bool backward, Backend& b) {
  // The order of the checks is the order of the error messages a caller sees.
  require(version >= 1 && version <= kVersions,
          "cuda: kernel version must be 1.." + std::to_string(kVersions) + ", got " + std::to_string(version));
  Plan pl;
  const int kv = opt.kv_heads ? opt.kv_heads : opt.heads;
  require(opt.batch >= 1 && opt.heads >= 1 && kv >= 1 && opt.heads % kv == 0,
          "cuda: batch and heads must be >= 1 and heads a multiple of kv_heads, got batch = " +
              std::to_string(opt.batch) + ", heads = " + std::to_string(opt.heads) +
              ", kv_heads = " + std::to_string(kv));
  require(Eigen::Index(opt.batch) * opt.heads <= 65535 && Eigen::Index(opt.batch) * kv <= 65535,
          "cuda: batch * heads must be <= 65535 (one grid dimension), got " +
              std::to_string(Eigen::Index(opt.batch) * opt.heads));
  pl.heads = {opt.batch, opt.heads, kv};
  qkscope::detail::require_nonempty(Q, "query");
  qkscope::detail::require_nonempty(K, "key");
  qkscope::detail::require_nonempty(V, "value");
  const Eigen::Index nq = Eigen::Index(opt.batch) * opt.heads, nkv = Eigen::Index(opt.batch) * kv;
  require(Q.rows() % nq == 0, "query must have batch * heads * L_q rows (batch * heads = " + std::to_string(nq) +
                                  "), got " + std::to_string(Q.rows()));
  require(K.rows() % nkv == 0, "key must have batch * kv_heads * L_k rows (batch * kv_heads = " +
                                   std::to_string(nkv) + "), got " + std::to_string(K.rows()));
  require(V.rows() == K.rows(), "value must have as many rows as key (" + std::to_string(K.rows()) + "), got shape " +
                                    qkscope::detail::shape_of(V));
  const Eigen::Index L_q = Q.rows() / nq, L_k = K.rows() / nkv;
  require(L_q <= pipeline::kMaxLength && L_k <= pipeline::kMaxLength && Q.cols() <= 65536 && K.cols() <= 65536 &&
              V.cols() <= 65536,
          "cuda: L_q, L_k must be <= 2^29 and widths <= 65536");
  qkscope::detail::require_finite(Q, "query");
  qkscope::detail::require_finite(K, "key");
  qkscope::detail::require_finite(V, "value");
  qkscope::detail::check_params_finite(params);
  pl.L_q = int(L_q);
  pl.L_k = int(L_k);
  pl.d_q = int(Q.cols());
  pl.d_k = int(K.cols());
  pl.d_v = int(V.cols());
  const ScoreShape shape{L_q, L_k, Q.cols(), K.cols()};
  visit_score(cfg.score, [&](auto f) {
    using F = decltype(f);
    F::validate(shape, params);
    pl.scale = cfg.scale.value_or(F::default_scale(shape));
  });
  // The core's order: mask, bias, then the scale (detail::check_scale_in), then the rest.
  pl.mask = resolve_mask(cfg.mask, L_q, L_k);
  qkscope::detail::validate_bias(cfg.bias, L_q, L_k);
  qkscope::detail::check_scale_in<float>(pl.scale);  // the kernels apply it in fp32
  require(online_normalizer(cfg.normalizer), "normalizer '" + cfg.normalizer +
                                           "' is not supported by the CUDA backend (softmax only; the core's "
                                           "attention_forward has every normalizer)");
  qkscope::detail::check_temperature_in<float>(cfg.temperature, true, cfg.normalizer);
  require(float(cfg.temperature) > 0.f && std::isfinite(float(1.0 / cfg.temperature)),
          "temperature " + qkscope::detail::num(cfg.temperature) + " underflows in fp32");
  if (!opt.alibi_slopes.empty()) {
    require(int(opt.alibi_slopes.size()) == opt.heads,
            "Options::alibi_slopes must have one slope per head (" + std::to_string(opt.heads) + "), got " +
                std::to_string(opt.alibi_slopes.size()));
    require(!cfg.bias.alibi_slope, "set either cfg.bias.alibi_slope or Options::alibi_slopes, not both");
    for (double s : opt.alibi_slopes)
      require(std::isfinite(s) && s >= 0, "Options::alibi_slopes must be finite and >= 0, got " + qkscope::detail::num(s));
  }
  if (!opt.key_lengths.empty()) {
    require(int(opt.key_lengths.size()) == opt.batch, "Options::key_lengths must have one entry per sequence (" +
                                                          std::to_string(opt.batch) + "), got " +
                                                          std::to_string(opt.key_lengths.size()));
    for (Eigen::Index n : opt.key_lengths)
      require(n >= 0 && n <= L_k, "Options::key_lengths entries must be in [0, L_k = " + std::to_string(L_k) +
                                      "], got " + std::to_string(n));
  }

  // The scoring function's form (its prepare hook), as the kernels' rows.
  // Version 5 copies 16-byte chunks: widths padded to multiples of 8 (zero columns add nothing).
  pl.rows = visit_score(cfg.score, [&](auto f) {
    return score::kernel_rows<decltype(f)>(Q, K, params, version == 5 ? 8 : 1, backward);
  });
  pl.additive = pl.rows.additive;
  pl.d = int(pl.rows.q.cols());
  // The kernels fold scale / tau into the logits before subtracting the row maximum: past
  // the float range a visible key would read as masked (docs/RELIABILITY.md). The core has
  // no such limit, so the call is refused with a pointer to it, as for other normalizers.
  auto bound = pl.additive ? qkscope::detail::additive_bound(pl.rows.q, pl.rows.k, pl.rows.add_v)
                           : qkscope::detail::dot_rows_bound(pl.rows.q, pl.rows.k);
  bound.cancellation = pl.rows.cancellation;
  double max_slope = 0;
  for (double s : opt.alibi_slopes) max_slope = std::max(max_slope, s);
  require(qkscope::detail::logits_fold_safe<float>(bound, pl.scale, cfg.temperature, cfg.bias, max_slope, L_q, L_k),
          "cuda: |scale * f(q, k) + bias| / temperature may exceed the float range for these inputs (temperature " +
              qkscope::detail::num(cfg.temperature) + "); use the core's attention_forward, which subtracts the "
              "row maximum before dividing by the temperature");
  const double v_max = qkscope::detail::max_abs(V);
  require(qkscope::detail::values_accumulate_safe<float>(v_max, L_k),
          "cuda: value holds " + qkscope::detail::num(v_max) + " (max |entry|), and L_k = " + std::to_string(L_k) +
              " such values may exceed the float accumulator's range; use the core's attention_forward, "
              "which normalises the weights before multiplying by value");

  // What the kernels support.
  const bool mma = version >= 4;
  if (mma) {
    require(opt.precision != Precision::fp32, "kernel version " + std::to_string(version) +
                                                  " runs on tensor cores: precision must be fp16 or bf16, got fp32");
    require(!pl.additive, "score '" + cfg.score + "' is not supported by kernel version " + std::to_string(version) +
                              " (tensor cores: dot-product forms only; use versions 1-3)");
    pl.elem = opt.precision == Precision::fp16 ? Elem::f16 : Elem::bf16;
  } else {
    require(opt.precision == Precision::fp32, "kernel version " + std::to_string(version) +
                                                  " takes fp32 inputs, got precision " +
                                                  precision_name(opt.precision) + " (fp16/bf16: versions 4-5)");
  }
  const std::string dims = "d = " + std::to_string(pl.d) + ", d_v = " + std::to_string(pl.d_v);
  std::size_t smem = 0;
  if (version == 2) smem = kern::v2_smem_bytes();
  if (version == 3) {
    require(kern::v3_variant(pl.additive, pl.d_v).rm != 0,
            "kernel version 3 supports d_v <= 512, got d_v = " + std::to_string(pl.d_v));
    smem = kern::v3_smem_bytes(pl.additive, pl.d, pl.d_v);
  }
  if (mma) {
    const int D = kern::padded_dim(pl.d, pl.d_v);
    require(D != 0, "kernel version " + std::to_string(version) + " supports head dims up to 128, got " + dims);
    if (version == 5)
      require(pl.d % 8 == 0 && pl.d_v % 8 == 0,
              "kernel version 5 copies 16-byte chunks: d and d_v must be multiples of 8, got " + dims);
    smem = kern::mma_smem_bytes(D, version == 5 ? 2 : 1);
  }
  const std::size_t limit = b.smem_limit();
  require(smem <= limit, "kernel version " + std::to_string(version) + " needs " + std::to_string(smem) +
                             " bytes of shared memory for " + dims + ", the device allows " + std::to_string(limit));
  return pl;
}

}  // namespace qkscope::cuda::detail
