// tests/core/support/tiled_check.hpp — the fault tests' one check of the tiled CPU path on a
// small input: one thread, one query row per tile and two keys per block (so rows span key
// blocks), the output against the double reference and dQ, dK, dV against the double core
// under the suite's rule (compare.hpp), the float core setting the bar.
#pragma once

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"

namespace qktest {

/// One thread, block_q 1, block_k 2: a row spans two key tiles.
inline qkscope::cpu::TiledOptions one_thread_small_tiles() {
  qkscope::cpu::TiledOptions o;
  o.threads = 1;
  o.block_q = 1;
  o.block_k = 2;
  return o;
}

/// A float config for `score` at `temperature`, everything else the default (the fault tests' start).
inline qkscope::AttentionConfig<float> score_config(const char* score, double temperature = 1) {
  qkscope::AttentionConfig<float> c;
  c.score = score;
  c.temperature = temperature;
  return c;
}

/// The tiled output against the double reference (core/reference/), and dQ, dK, dV against
/// the double core (tiled kernels required, no fallback to the core); the float core is the bar.
inline void check_tiled_matches_reference(const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V,
                                          const qkscope::Matrix& dO, const qkscope::AttentionConfig<float>& c,
                                          const qkscope::cpu::TiledOptions& o = one_thread_small_tiles()) {
  using namespace qkscope;
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
  const auto cd = config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, f64, dO.cast<double>());
  const auto f32 = attention_forward<float>(Q, K, V, {}, c);
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
  CHECK_MATCHES_REFERENCE("tiled output", t.output, f32.output, reference::attention<double>(Qd, Kd, Vd, {}, cd).output);
  CHECK_MATCHES_REFERENCE("tiled dQ", tg.dQ, g32.dQ, g64.dQ);
  CHECK_MATCHES_REFERENCE("tiled dK", tg.dK, g32.dK, g64.dK);
  CHECK_MATCHES_REFERENCE("tiled dV", tg.dV, g32.dV, g64.dV);
}

}  // namespace qktest
