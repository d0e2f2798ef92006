// qkscope/precision/mixed.hpp — mixed-precision attention: Q, K, V (and the scoring
// parameters) stored as Eigen::half or Eigen::bfloat16, every score, mask, bias and
// softmax computed in fp32, the output returned in fp32 and rounded once to storage.
//
//   O32 = attention_forward<float>(widen(Q), widen(K), widen(V)),   O_S = round_to<S>(O32)
//
// This is the recipe of mixed-precision training and of fused attention kernels
// (Micikevicius et al. 2018, "Mixed Precision Training", §3.2: products accumulated and
// reductions such as softmax done in fp32; FlashAttention keeps S and P in fp32 registers;
// docs/facts.md §10 "compute scores and softmax in fp32 even for fp16/bf16 inputs").
// Widening half/bfloat16 to float is exact, so the only rounding of the inputs is the one
// that already happened when they were stored.
// Masks never become numbers in the storage type: the core sets masked logits to -inf in
// fp32 and gives a row with no visible key zero weights, zero output and zero gradient
// (fault case B01 in tests/data/fault_cases.json). So no fill constant exists that could
// overflow (B03: fp16(-1e9) = -inf; B04: finfo(fp16).min + score <= -16 -> -inf;
// B05: bf16(finfo(fp32).min) = -inf): masks
// are booleans (MaskSpec), combined by AND, never by adding planes.
#pragma once

#include <string>
#include <type_traits>

#include "qkscope/attention.hpp"
#include "qkscope/norm/registry.hpp"
#include "qkscope/precision/diagnosis.hpp"
#include "qkscope/precision/finfo.hpp"

namespace qkscope::precision {

/// Result of attention_forward_mixed.
template <class S>
struct MixedResult {
  /// Every intermediate (raw scores, masked scores with -inf, weights, output, logsumexp,
  /// entropy, max weight), computed in fp32.
  AttentionResult<float> fp32;
  /// fp32.output rounded once (to nearest even) to S; empty when round_output = false.
  Mat<S> output;  // (L_q, d_v)
};

namespace detail {

/// The scoring parameters in fp32 (fields left empty stay empty).
template <class P>
ScoreParams<float> params_fp32(const ScoreParams<P>& p) {
  ScoreParams<float> q;
  q.W = widen<float>(p.W);
  q.W_q = widen<float>(p.W_q);
  q.W_k = widen<float>(p.W_k);
  q.v = widen<float>(p.v);
  q.b = widen<float>(p.b);
  q.w = widen<float>(p.w);
  return q;
}

/// The core checks tau > 0 in double, then computes with float(tau): a soft normalizer
/// with a tau that rounds to 0 in fp32 (below ~1.4e-45) would give (z - max) / 0 = NaN.
inline void check_fp32_temperature(const AttentionConfig<float>& cfg) {
  bool soft = false;
  visit_normalizer(cfg.normalizer, [&](auto n) { soft = decltype(n)::soft; });
  if (soft && std::isfinite(cfg.temperature) && cfg.temperature > 0)
    qkscope::detail::require(static_cast<float>(cfg.temperature) > 0,
                             "temperature " + qkscope::detail::num(cfg.temperature) +
                                 " rounds to 0 in float32 for normalizer '" + cfg.normalizer +
                                 "' (use normalizer 'hard' for the tau -> 0 limit)");
}

template <class S, class P>
void check_types() {
  static_assert(std::is_same_v<S, Eigen::half> || std::is_same_v<S, Eigen::bfloat16> ||
                    std::is_same_v<S, float>,
                "mixed precision: storage S must be Eigen::half, Eigen::bfloat16 or float");
  static_assert(std::is_same_v<P, S> || std::is_same_v<P, float>,
                "mixed precision: parameters must be stored as S or as float (fp32 master copy)");
}

}  // namespace detail

/// Mixed-precision single-head attention forward.
/// Q: (L_q, d_q), K: (L_k, d_k), V: (L_k, d_v) stored as S (Eigen::half, Eigen::bfloat16,
/// or float); params stored as S or float; cfg in fp32 (a dense bias is an fp32 plane).
/// Returns every fp32 intermediate and, if round_output, the output rounded to S.
/// Throws std::invalid_argument for everything attention_forward rejects (inputs that are
/// inf/NaN in storage included), for a soft-normalizer temperature that rounds to 0 in
/// float32, and when fp32 scores overflow (e.g. huge bfloat16 inputs).
template <class S, class P>
MixedResult<S> attention_forward_mixed(const Mat<S>& Q, const Mat<S>& K, const Mat<S>& V,
                                       const ScoreParams<P>& params,
                                       const AttentionConfig<float>& cfg, bool round_output = true) {
  detail::check_types<S, P>();
  detail::check_fp32_temperature(cfg);
  MixedResult<S> r;
  r.fp32 = attention_forward<float>(widen<float>(Q), widen<float>(K), widen<float>(V),
                                    detail::params_fp32(params), cfg);
  if (round_output) r.output = to_storage<S>(r.fp32.output);
  return r;
}

/// Backward of attention_forward_mixed for dO = dL/dO (L_q, d_v) in fp32. Gradients stay in
/// fp32 (they update an fp32 master copy; Micikevicius et al. 2018 §3.1). `fwd` must come
/// from attention_forward_mixed with the same arguments.
template <class S, class P>
AttentionGrads<float> attention_backward_mixed(const Mat<S>& Q, const Mat<S>& K, const Mat<S>& V,
                                               const ScoreParams<P>& params,
                                               const AttentionConfig<float>& cfg,
                                               const MixedResult<S>& fwd, const Mat<float>& dO) {
  detail::check_types<S, P>();
  return attention_backward<float>(widen<float>(Q), widen<float>(K), widen<float>(V),
                                   detail::params_fp32(params), cfg, fwd.fp32, dO);
}

/// The correct counterpart of naive::masked_fill_softmax, for side-by-side display:
/// scores (L_q, L_k) stored in S are widened to fp32, entries with keep = false become
/// -inf in fp32 (no fill constant exists), and each row goes through the core's softmax
/// (max subtracted; a row with no kept key gets zero weights). Never NaN for finite scores.
/// Throws std::invalid_argument when keep's shape differs from the scores' or when a
/// score is inf/NaN.
template <class S>
Outcome masked_softmax(const Mat<S>& scores, const KeepMask& keep) {
  qkscope::detail::require_shape(keep, scores.rows(), scores.cols(), "keep (L_q x L_k)");
  const Mat<float> s = widen<float>(scores);
  qkscope::detail::require_finite(s, "scores");
  Mat<float> z = s, p(s.rows(), s.cols());
  for (Eigen::Index i = 0; i < z.size(); ++i)
    if (!keep.data()[i]) z.data()[i] = -std::numeric_limits<float>::infinity();
  const norm::Softmax::Options opt;
  for (Eigen::Index i = 0; i < z.rows(); ++i)
    norm::Softmax::forward(norm::Row<float>{z.row(i).data(), z.cols(), 1.0f, nullptr, &opt},
                           p.row(i).data());
  Outcome o;
  o.logits = z.cast<double>();
  o.weights = p.cast<double>();
  detail::diagnose(o.diag, o.weights, o.logits, "masked scores (fp32, -inf = masked)");
  o.diag.summary = detail::summarize(o.diag, "fp32 masked softmax");
  return o;
}

}  // namespace qkscope::precision
