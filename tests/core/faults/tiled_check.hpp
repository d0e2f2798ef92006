// tests/core/faults/tiled_check.hpp — how the fuzzer-finding tests check the tiled CPU path:
// forward and backward (every gradient, the scoring function's parameters included) against
// the core in double, under the suite's one tolerance rule (CHECK_MATCHES_REFERENCE) with the
// core in float as the bar. One thread and small tiles, so that a row spans several blocks.
#pragma once

#include <catch2/catch.hpp>

#include <initializer_list>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"

namespace qktest {

/// A float vector from a list ({0.5f, -2} for a scoring function's v or w).
inline qkscope::Vector vec(std::initializer_list<float> x) {
  return Eigen::Map<const qkscope::Vector>(x.begin(), Eigen::Index(x.size()));
}

/// Additive (Bahdanau) parameters from literal rows: W_q, W_k (d_h, d), v and b (d_h).
inline qkscope::ScoreParams<float> additive_params(const qkscope::Matrix& W_q, const qkscope::Matrix& W_k,
                                                   std::initializer_list<float> v, std::initializer_list<float> b) {
  qkscope::ScoreParams<float> p;
  p.W_q = W_q;
  p.W_k = W_k;
  p.v = vec(v);
  p.b = vec(b);
  return p;
}

/// The core's gradients in double from the float inputs (the fuzz harness's right value).
inline qkscope::AttentionGrads<double> double_core_grads(const qkscope::Matrix& Q, const qkscope::Matrix& K,
                                                         const qkscope::Matrix& V, const qkscope::Matrix& dO,
                                                         const qkscope::ScoreParams<float>& p,
                                                         const qkscope::AttentionConfig<float>& c) {
  using namespace qkscope;
  const auto cd = config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  return attention_backward<double>(Qd, Kd, Vd, pd, cd, attention_forward<double>(Qd, Kd, Vd, pd, cd),
                                    dO.cast<double>());
}

inline qkscope::cpu::TiledOptions one_thread(Eigen::Index block_k = 2) {
  qkscope::cpu::TiledOptions o;
  o.threads = 1;
  o.block_q = 1;
  o.block_k = block_k;
  return o;
}

/// The tiled path's gradients at query tiles of 1 and key tiles of block_k, one thread (the
/// forward must not fall back to the core).
inline qkscope::AttentionGrads<float> tiled_grads(const qkscope::Matrix& Q, const qkscope::Matrix& K,
                                                  const qkscope::Matrix& V, const qkscope::Matrix& dO,
                                                  const qkscope::ScoreParams<float>& p,
                                                  const qkscope::AttentionConfig<float>& c, Eigen::Index block_k) {
  using namespace qkscope;
  const auto o = one_thread(block_k);
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
  REQUIRE_FALSE(t.fallback);
  return cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o);
}

/// The tiled path's forward and backward match the double core, with the float core as the
/// bar; returns the tiled gradients for further checks.
inline qkscope::AttentionGrads<float> tiled_matches(const qkscope::Matrix& Q, const qkscope::Matrix& K,
                                                    const qkscope::Matrix& V, const qkscope::Matrix& dO,
                                                    const qkscope::ScoreParams<float>& p,
                                                    const qkscope::AttentionConfig<float>& c,
                                                    Eigen::Index block_k = 2) {
  using namespace qkscope;
  const auto o = one_thread(block_k);
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o);
  const auto cd = config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, pd, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, pd, cd, f64, dO.cast<double>());
  const auto f32 = attention_forward<float>(Q, K, V, p, c);
  const auto g32 = attention_backward<float>(Q, K, V, p, c, f32, dO);
  CHECK_MATCHES_REFERENCE("tiled output", t.output, f32.output, f64.output);
  CHECK_MATCHES_REFERENCE("tiled logsumexp", t.logsumexp, f32.logsumexp, f64.logsumexp);
  CHECK_MATCHES_REFERENCE("tiled dQ", tg.dQ, g32.dQ, g64.dQ);
  CHECK_MATCHES_REFERENCE("tiled dK", tg.dK, g32.dK, g64.dK);
  CHECK_MATCHES_REFERENCE("tiled dV", tg.dV, g32.dV, g64.dV);
  const auto& dp = tg.dparams;
  const auto& dp32 = g32.dparams;
  const auto& dp64 = g64.dparams;
  for (const auto& [name, m, m32, m64] :
       {std::tuple{"tiled dW", &dp.W, &dp32.W, &dp64.W}, std::tuple{"tiled dW_q", &dp.W_q, &dp32.W_q, &dp64.W_q},
        std::tuple{"tiled dW_k", &dp.W_k, &dp32.W_k, &dp64.W_k}})
    if (m64->size()) CHECK_MATCHES_REFERENCE(name, *m, *m32, *m64);
  for (const auto& [name, v, v32, v64] :
       {std::tuple{"tiled dv", &dp.v, &dp32.v, &dp64.v}, std::tuple{"tiled db", &dp.b, &dp32.b, &dp64.b},
        std::tuple{"tiled dw", &dp.w, &dp32.w, &dp64.w}})
    if (v64->size()) CHECK_MATCHES_REFERENCE(name, *v, *v32, *v64);
  using S1 = Eigen::Matrix<double, 1, 1>;
  CHECK_MATCHES_REFERENCE("tiled dtemperature", S1(tg.dtemperature), S1(g32.dtemperature), S1(g64.dtemperature));
  return tg;
}

}  // namespace qktest
