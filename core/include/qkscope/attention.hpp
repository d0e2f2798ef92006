// qkscope/attention.hpp — single-head attention with every intermediate exposed.
//
// Pipeline (fixed order, as in PyTorch SDPA / FlexAttention):
//   raw   = f(Q, K)                      scoring function from score/registry.hpp   (L_q, L_k)
//   s     = scale * raw                  scale defaults to f's (1/sqrt(d_k) for scaled_dot)
//   s     = bias(s)                      softcap -> ALiBi -> relative -> T5 -> dense (bias/bias.hpp)
//   z     = mask(s)                      -inf where the mask says no (mask/mask.hpp)
//   (scale, biases and mask run through the one per-element implementation, pipeline/)
//   P     = normalizer(z / tau)          row-wise (norm/registry.hpp); tau = temperature
//   O     = P V                                                                        (L_q, d_v)
// Temperature is applied inside the normalizer, after the row max is subtracted, so
// tau -> 0 tends to the hard (argmax) limit instead of overflowing (fault case B13 in
// tests/data/fault_cases.json).
// A fully masked row has P = 0, O = 0, zero gradients, logsumexp = -inf, entropy 0.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "qkscope/bias/bias.hpp"
#include "qkscope/detail/check.hpp"
#include "qkscope/detail/compensated_sum.hpp"
#include "qkscope/detail/grad_guards.hpp"
#include "qkscope/detail/output_range.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/detail/row_table_shares.hpp"
#include "qkscope/mask/mask.hpp"
#include "qkscope/norm/registry.hpp"
#include "qkscope/score/registry.hpp"

namespace qkscope {

/// Everything that configures one attention call besides Q, K, V and the parameters.
template <class T>
struct AttentionConfig {
  /// Scoring function name from ScoreFunctions ("dot", "scaled_dot", ...).
  std::string score = "scaled_dot";
  /// Multiplier of raw scores; default: the scoring function's (1/sqrt(d_k) or 1).
  /// Any explicit value, 0 included, is used as given (fault case B10).
  std::optional<double> scale;
  /// Temperature tau (dimensionless): P = normalizer(z / tau). > 0 for soft normalizers.
  double temperature = 1.0;
  MaskSpec mask;
  BiasSpec<T> bias;
  /// Normalizer name from Normalizers ("softmax", "hard", ...).
  std::string normalizer = "softmax";
  /// Each normalizer's own options; the one named above reads its entry, e.g.
  /// norm_options.get<norm::TopKSoftmax>().top_k (norm/registry.hpp).
  NormalizerOptions norm_options;
};

/// Every intermediate of a forward call.
template <class T>
struct AttentionResult {
  Mat<T> raw_scores;     // f(Q, K)                                   (L_q, L_k)
  Mat<T> scores;         // scale * raw after biases, before the mask (L_q, L_k)
  Mat<T> masked_scores;  // scores with -inf where masked             (L_q, L_k)
  Mat<T> weights;        // P                                         (L_q, L_k)
  Mat<T> output;         // P V                                       (L_q, d_v)
  Vec<T> logsumexp;      // log sum_j exp(z_ij / tau); -inf if fully masked  (L_q)
  Vec<T> entropy;        // -sum_j p log p in nats                    (L_q)
  Vec<T> max_weight;     // max_j p_ij                                (L_q)
  double scale = 1.0;    // the scale used
};

/// Gradients of a scalar loss L given dL/dO.
template <class T>
struct AttentionGrads {
  Mat<T> dQ, dK, dV;
  ScoreParams<T> dparams;   // of the scoring function's parameters
  Vec<T> drelative;         // of bias.relative (empty if unused)
  Vec<T> dt5_table;         // of bias.t5_table (empty if unused)
  Mat<T> ddense;            // of bias.dense (empty if unused)
  double dtemperature = 0;  // dL/dtau
};

namespace detail {

/// The shape checks of check_inputs alone, for callers whose readers already required finite
/// entries (wasm/src/convert.hpp): a second scan of Q, K and V costs more than it checks.
template <class T>
ScoreShape check_input_shapes(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V) {
  require_nonempty(Q, "query");
  require_nonempty(K, "key");
  require_nonempty(V, "value");
  require(V.rows() == K.rows(), [&] {
    return "value must have L_k = " + std::to_string(K.rows()) + " rows (one per key), got shape " + shape_of(V);
  });
  return {Q.rows(), K.rows(), Q.cols(), K.cols()};
}

template <class T>
ScoreShape check_inputs(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V) {
  check_input_shapes(Q, K, V);
  require_finite(Q, "query");
  require_finite(K, "key");
  require_finite(V, "value");
  return {Q.rows(), K.rows(), Q.cols(), K.cols()};
}

/// Every parameter the caller set must be finite (a NaN W would otherwise surface as a
/// misleading "scores overflowed", or vanish under a full mask).
template <class T>
void check_params_finite(const ScoreParams<T>& p) {
  require_finite(p.W, "params.W");
  require_finite(p.W_q, "params.W_q");
  require_finite(p.W_k, "params.W_k");
  require_finite(p.v, "params.v");
  require_finite(p.b, "params.b");
  require_finite(p.w, "params.w");
}

inline void check_temperature(double tau, bool soft, const std::string& normalizer) {
  if (soft)
    require(tau > 0 && std::isfinite(tau), [&] {
      return "temperature must be finite and > 0 for normalizer '" + normalizer + "', got " + num(tau) +
             " (use normalizer 'hard' for the tau -> 0 limit)";
    });
  else
    require(tau >= 0 && std::isfinite(tau), [&] { return "temperature must be finite and >= 0, got " + num(tau); });
}

/// The temperature as T: finite (1e39 is +inf in float, and (z - m) / inf would make a
/// soft normalizer uniform and its logsumexp NaN) and, for soft normalizers, not 0
/// (1e-46 is 0 in float: (z - max) / 0 = NaN).
template <class T>
void check_temperature_in(double tau, bool soft, const std::string& normalizer) {
  check_temperature(tau, soft, normalizer);
  require(std::isfinite(double(T(tau))), [&] {
    return "temperature " + num(tau) + " overflows to inf in this precision (largest finite value " +
           num(double(std::numeric_limits<T>::max())) + ")";
  });
  require(!soft || T(tau) > T(0), [&] {
    return "temperature " + num(tau) +
           " underflows to 0 in this precision; use normalizer 'hard' for the tau -> 0 limit";
  });
}

/// The scale as T: finite, and finite once cast to T (1e39 is +inf in float, and 0 * inf
/// is NaN). Every path calls this, in this order after the mask and bias checks, so that a
/// refusal reads the same on each (fuzzer finding: the tiled forward answered 1e39).
template <class T>
void check_scale_in(double scale) {
  require(std::isfinite(scale), [&] { return "scale must be finite, got " + num(scale); });
  require(std::isfinite(double(T(scale))), [&] {
    return "scale " + num(scale) + " overflows to inf in this precision (largest finite value " +
           num(double(std::numeric_limits<T>::max())) + ")";
  });
}

/// The normalizer's per-call noise, one (L_q, L_k) draw, when it samples; else empty.
template <class N, class T>
Mat<T> noise_of(const typename N::Options& o, Eigen::Index L_q, Eigen::Index L_k) {
  if constexpr (requires { N::template noise<T>(o, L_q, L_k); }) return N::template noise<T>(o, L_q, L_k);
  else return {};
}

template <class T, class O>
norm::Row<T, O> row_of(const Mat<T>& z, const Mat<T>& noise, Eigen::Index i, T tau, const O& opt) {
  return {z.row(i).data(), z.cols(), tau, noise.size() ? noise.row(i).data() : nullptr, &opt};
}

}  // namespace detail

/// Seeded parameters for scoring function `score` at widths d_q, d_k and hidden size
/// d_h (additive only). Same values on every platform for the same seed.
template <class T>
ScoreParams<T> init_params(const std::string& score, Eigen::Index d_q, Eigen::Index d_k,
                           Eigen::Index d_h, std::uint64_t seed) {
  detail::require(d_q > 0 && d_k > 0, "init_params: d_q and d_k must be >= 1, got d_q = " +
                                          std::to_string(d_q) + ", d_k = " + std::to_string(d_k));
  return visit_score(score, [&](auto f) {
    return decltype(f)::template init<T>(ScoreShape{0, 0, d_q, d_k}, d_h, seed);
  });
}

/// Single-head attention forward; returns every intermediate.
/// Q: (L_q, d_q), K: (L_k, d_k), V: (L_k, d_v); params as the scoring function needs.
/// Throws std::invalid_argument naming the argument for: empty or non-finite inputs,
/// L_k mismatch between K and V, d_q != d_k where the score needs equal widths,
/// parameter shapes, unknown score/normalizer names, bad temperature, mask or bias.
template <class T>
AttentionResult<T> attention_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                     const ScoreParams<T>& params, const AttentionConfig<T>& cfg) {
  const ScoreShape shape = detail::check_inputs(Q, K, V);
  AttentionResult<T> r;
  visit_score(cfg.score, [&](auto f) {
    using F = decltype(f);
    F::validate(shape, params);
    detail::check_params_finite(params);
    r.raw_scores = F::template forward<T>(Q, K, params);
    r.scale = cfg.scale.value_or(F::default_scale(shape));
  });
  const MaskFn mask = resolve_mask(cfg.mask, shape.L_q, shape.L_k);
  detail::validate_bias(cfg.bias, shape.L_q, shape.L_k);
  detail::check_scale_in<T>(r.scale);

  // The pipeline's functors (pipeline/), element by element; the temperature is applied
  // inside the normalizer, so the modifiers here stop at z.
  const auto mods = score_mods(cfg.bias, r.scale, 1.0, mask.offset);
  r.scores.resize(shape.L_q, shape.L_k);
  r.masked_scores.resize(shape.L_q, shape.L_k);
  for (int i = 0; i < mask.L_q; ++i)
    for (int j = 0; j < mask.L_k; ++j) {
      // A raw score past T's range is an overflow even where a softcap folds it back into
      // range, unless the cap saturates there: c tanh(scale raw / c) is +-c in T once
      // |scale raw / c| > 9, and |raw| > max(T). Without that (q.k = 3.7e68 at scale 1e-40 under
      // c = 3.4e38, a true logit of 3.7e28 / tau) tanh(inf) = 1 gave c / tau (fuzzer finding).
      if (!std::isfinite(double(r.raw_scores(i, j))) &&
          !(cfg.bias.softcap && std::abs(r.scale) * double(std::numeric_limits<T>::max()) >= 9 * std::abs(*cfg.bias.softcap)))
        detail::fail("scores overflowed at (" + std::to_string(i) + ", " + std::to_string(j) +
                     "): raw score " + detail::num(r.raw_scores(i, j)) + " before the scale and softcap" +
                     " (inputs too large for this precision)");
      const T s = mods.modified(r.raw_scores(i, j), i, j);
      // Before the dense bias (whose -inf entries mean "masked"), every score must be
      // finite: an overflow to -inf must not pass for a mask.
      if (!std::isfinite(double(s)))
        detail::fail("scores overflowed at (" + std::to_string(i) + ", " + std::to_string(j) +
                     "): " + detail::num(s) + " (scale or inputs too large for this precision)");
      const T z = mods.add_dense(s, i, j);
      // A finite bias entry plus a finite score can still overflow (-3e38 + -1e38): that
      // -inf is an overflow, not a mask (only -inf entries of the bias mask).
      if (!std::isfinite(double(z)) && cfg.bias.dense.size() && std::isfinite(double(cfg.bias.dense(i, j))))
        detail::fail("scores overflowed at (" + std::to_string(i) + ", " + std::to_string(j) +
                     ") after adding bias.dense " + detail::num(cfg.bias.dense(i, j)) +
                     " (scale or inputs too large for this precision)");
      r.scores(i, j) = z;
      r.masked_scores(i, j) = mask(i, j) ? z : -std::numeric_limits<T>::infinity();
    }

  r.weights.resize(shape.L_q, shape.L_k);
  visit_normalizer(cfg.normalizer, [&](auto n) {
    using N = decltype(n);
    detail::check_temperature_in<T>(cfg.temperature, N::soft, cfg.normalizer);
    const auto& opt = cfg.norm_options.template get<N>();
    norm::validate_options(N::name, opt);
    const Mat<T> noise = detail::noise_of<N, T>(opt, shape.L_q, shape.L_k);
    for (Eigen::Index i = 0; i < shape.L_q; ++i)
      N::forward(detail::row_of(r.masked_scores, noise, i, T(cfg.temperature), opt), r.weights.row(i).data());
  });
  r.output = r.weights * V;
  detail::settle_overflowed_output(r.output);  // weights summing to 1.00000004 over FLT_MAX

  // Diagnostics (docs/facts.md §9).
  r.logsumexp.resize(shape.L_q);
  r.entropy.resize(shape.L_q);
  r.max_weight = r.weights.rowwise().maxCoeff();
  const T tau = T(cfg.temperature);
  for (Eigen::Index i = 0; i < shape.L_q; ++i) {
    const auto z = r.masked_scores.row(i);
    const T m = z.maxCoeff();
    if (!norm::is_valid(m) || !(tau > 0)) {
      r.logsumexp(i) = norm::is_valid(m) ? std::numeric_limits<T>::infinity()
                                         : -std::numeric_limits<T>::infinity();
    } else {
      T sum = 0;
      for (Eigen::Index j = 0; j < shape.L_k; ++j)
        if (norm::is_valid(z(j))) sum += std::exp(norm::scaled_gap(z(j), m, tau));
      r.logsumexp(i) = m / tau + std::log(sum);
    }
    T h = 0;
    for (Eigen::Index j = 0; j < shape.L_k; ++j) {
      const T p = r.weights(i, j);
      if (p > 0) h -= p * std::log(p);
    }
    r.entropy(i) = h;
  }
  return r;
}

/// Backward of attention_forward for dO = dL/dO (L_q, d_v). `fwd` must be the result of
/// attention_forward with the same arguments. Gradients of masked entries and of fully
/// masked rows are exactly 0.
template <class T>
AttentionGrads<T> attention_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                     const ScoreParams<T>& params, const AttentionConfig<T>& cfg,
                                     const AttentionResult<T>& fwd, const Mat<T>& dO) {
  const ScoreShape shape = detail::check_inputs(Q, K, V);
  detail::require_shape(dO, shape.L_q, V.cols(), "grad_output (L_q x d_v)");
  detail::require_finite(dO, "grad_output");
  // fwd must come from attention_forward on these inputs (a default-constructed or
  // mismatched result would otherwise trip Eigen's size assertions).
  detail::require_shape(fwd.raw_scores, shape.L_q, shape.L_k, "fwd.raw_scores (L_q x L_k)");
  detail::require_shape(fwd.masked_scores, shape.L_q, shape.L_k, "fwd.masked_scores (L_q x L_k)");
  detail::require_shape(fwd.weights, shape.L_q, shape.L_k, "fwd.weights (L_q x L_k)");
  detail::require_shape(fwd.output, shape.L_q, V.cols(), "fwd.output (L_q x d_v)");
  visit_normalizer(cfg.normalizer, [&](auto n) {
    using N = decltype(n);
    detail::check_temperature_in<T>(cfg.temperature, N::soft, cfg.normalizer);
  });
  AttentionGrads<T> g;
  g.dV = fwd.weights.transpose() * dO;
  // dP = dO V^T (L_q, L_k) can overflow (1e20 * 1e20 in float) while the gradients it feeds
  // are representable (all 0 when every key has the same value). The normalizer backward is
  // linear in dP, so it then runs on dP 2^-e and dZ, dtau are scaled back by 2^e at the end.
  Mat<T> dP = dO * V.transpose();
  double grad_scale = detail::rescale_if_overflowed(dP, dO, V);

  // Through the normalizer, row by row: dZ = dL/dz on unmasked entries (0 elsewhere) divided
  // by row_scale(i). dL/dz = P (dP - D) / tau can overflow where the gradients after the scale
  // are representable (scale 1e-40, tau 5e-3, dP 2e38: fuzzer finding, where the tiled path,
  // which forms dL/draw in double, returned them): such a row reruns on dP 2^-e.
  Mat<T> dZ(shape.L_q, shape.L_k);
  Eigen::VectorXd row_scale = Eigen::VectorXd::Constant(shape.L_q, grad_scale);
  std::vector<double> dtau_rows(shape.L_q);
  bool shift_invariant = false;
  auto normalizer_rows = [&](const std::vector<Eigen::Index>& rows) {
    visit_normalizer(cfg.normalizer, [&](auto n) {
      using N = decltype(n);
      if constexpr (requires { N::shift_invariant; }) shift_invariant = N::shift_invariant;
      const auto& opt = cfg.norm_options.template get<N>();
      const Mat<T> noise = detail::noise_of<N, T>(opt, shape.L_q, shape.L_k);
      for (const Eigen::Index i : rows)
        dtau_rows[i] = N::backward(detail::row_of(fwd.masked_scores, noise, i, T(cfg.temperature), opt),
                                   fwd.weights.row(i).data(), dP.row(i).data(), dZ.row(i).data());
    });
  };
  std::vector<Eigen::Index> rows(shape.L_q);
  for (Eigen::Index i = 0; i < shape.L_q; ++i) rows[i] = i;
  normalizer_rows(rows);
  rows.clear();
  for (Eigen::Index i = 0; i < shape.L_q; ++i)
    if (const int e = detail::row_rescale_exponent(dZ.row(i).data(), dP.row(i).data(), shape.L_k, cfg.temperature)) {
      for (Eigen::Index j = 0; j < shape.L_k; ++j) dP(i, j) = T(double(dP(i, j)) * std::ldexp(1.0, -e));
      row_scale(i) *= std::ldexp(1.0, e);
      rows.push_back(i);
    }
  if (!rows.empty()) normalizer_rows(rows);
  double dtau = 0;  // in double: rows past T's range may cancel (review finding)
  for (Eigen::Index i = 0; i < shape.L_q; ++i) dtau += detail::unscale(dtau_rows[i], row_scale(i));
  g.dtemperature = dtau;

  // Through the biases (reverse order): dense, T5, relative, ALiBi (no parameters), softcap,
  // scale, with the pipeline's functor (tau is the normalizer's: 1 here). The relative
  // positions use the mask's diagonal offset, as in the forward pass. After a rescale the
  // chain runs in double (dL/dz itself may not fit T; dL/draw and the table sums may).
  const auto& b = cfg.bias;
  const auto mods = score_mods(b, fwd.scale, 1.0, resolve_mask(cfg.mask, shape.L_q, shape.L_k).offset);
  if (b.dense.size()) g.ddense.resize(shape.L_q, shape.L_k);
  // A table entry gathers dz of many pairs: tied keys of one row can carry dz of +-1e35 that
  // cancel while another row's 0.25 must survive, so the sums are compensated, as the tiled
  // backward's (detail/compensated_sum.hpp; fuzzer finding, 2026-12-05).
  const Eigen::Index n_rel = b.relative.size(), n_t5 = b.t5_table.size();
  Eigen::VectorXd drel = Eigen::VectorXd::Zero(2 * n_rel), dt5 = Eigen::VectorXd::Zero(2 * n_t5);  // sums; compensations
  // In double (the harness's reference) a row whose dz sum to 0 gives its tables' shares by
  // detail/row_table_shares.hpp's rule, as the tiled path does; the float core adds each dz
  // (kept out of it for the wasm module's size).
  const bool row_rule = std::is_same_v<T, double> && shift_invariant;
  Mat<T> dS(shape.L_q, shape.L_k);
  for (int i = 0; i < int(shape.L_q); ++i)
    for (int j = 0; j < int(shape.L_k); ++j) {
      const double dz = detail::unscale(double(dZ(i, j)), row_scale(i));
      if (b.dense.size()) g.ddense(i, j) = T(dz);
      if (mods.relative && !row_rule) {
        const int k = mods.relative_index(i, j);
        detail::compensated_add(drel(k), drel(n_rel + k), dz);
      }
      if (mods.t5 && !row_rule) {
        const int k = mods.t5_index(i, j);
        detail::compensated_add(dt5(k), dt5(n_t5 + k), dz);
      }
      if (row_scale(i) == 1) dS(i, j) = mods.grad_raw(dZ(i, j), fwd.raw_scores(i, j));
      else if (dz == 0) dS(i, j) = 0;
      else dS(i, j) = T(mods.grad_raw_from_z(dz, double(fwd.raw_scores(i, j))));
    }
  if constexpr (std::is_same_v<T, double>)
    if (row_rule && (mods.relative || mods.t5)) {
      detail::PositionRowShares rows_shares;
      rows_shares.resize(mods);
      for (int i = 0; i < int(shape.L_q); ++i) {
        for (int j = 0; j < int(shape.L_k); ++j) rows_shares.add(mods, i, j, detail::unscale(dZ(i, j), row_scale(i)));
        rows_shares.rel.flush(drel.data(), drel.data() + n_rel);
        rows_shares.t5.flush(dt5.data(), dt5.data() + n_t5);
      }
    }
  if (n_rel) g.drelative = (drel.head(n_rel) + drel.tail(n_rel)).cast<T>();
  if (b.t5) g.dt5_table = (dt5.head(n_t5) + dt5.tail(n_t5)).cast<T>();

  visit_score(cfg.score, [&](auto f) {
    using F = decltype(f);
    ScoreGrads<T> sg;
    // Scorers built on each row's sum of dL/draw take it exact (detail::row_sums_of_grad_raw).
    if constexpr (requires(const Eigen::VectorXd& R) { F::template backward<T>(Q, K, params, dS, sg, R); })
      F::template backward<T>(Q, K, params, dS, sg,
                              detail::row_sums_of_grad_raw(dZ, row_scale, fwd.raw_scores, fwd.weights, mods, shift_invariant));
    else
      F::template backward<T>(Q, K, params, dS, sg);
    g.dQ = std::move(sg.dQ);
    g.dK = std::move(sg.dK);
    g.dparams = std::move(sg.dparams);
  });
  detail::require_gradients_finite(g);
  return g;
}

}  // namespace qkscope
