// tests/core/faults/tilings.hpp — every tiling the fuzz harness draws for the tiled CPU path
// (tests/fuzz/fuzz_attention.cpp: block_q and block_k 1-4, one thread), for the fault tests
// that check an input at each.
#pragma once

#include <catch2/catch.hpp>

#include "faults/tiled_check.hpp"
#include "qkscope/cpu/attention.hpp"

namespace qktest {

/// fn(options) at each (block_q, block_k) in 1-4 x 1-4, one thread, each captured.
template <class Fn>
void at_fuzzer_tilings(Fn&& fn) {
  for (Eigen::Index bq = 1; bq <= 4; ++bq)
    for (Eigen::Index bk = 1; bk <= 4; ++bk) {
      INFO("block_q " << bq << ", block_k " << bk);
      qkscope::cpu::TiledOptions o = one_thread(bk);
      o.block_q = bq;
      fn(o);
    }
}

/// One call of a fault case: inputs, the upstream gradient dO, parameters and configuration.
struct FaultCall {
  qkscope::Matrix Q, K, V, dO;
  qkscope::ScoreParams<float> p;
  qkscope::AttentionConfig<float> c;
};

/// The float core's backward of a call (a FaultCall, or any type with its members) from its own
/// forward.
template <class Call>
qkscope::AttentionGrads<float> core_float_grads(const Call& a) {
  return qkscope::attention_backward<float>(a.Q, a.K, a.V, a.p, a.c,
                                            qkscope::attention_forward<float>(a.Q, a.K, a.V, a.p, a.c), a.dO);
}

/// fn(tiled forward, options) at every tiling the fuzzer draws (at_fuzzer_tilings); the forward
/// must run tiled (no fallback to the core).
template <class Call, class Fn>
void tiled_forward_at_tilings(const Call& a, Fn&& fn) {
  at_fuzzer_tilings([&](const qkscope::cpu::TiledOptions& o) {
    const auto t = qkscope::cpu::attention_forward<float>(a.Q, a.K, a.V, a.p, a.c, o);
    REQUIRE_FALSE(t.fallback);
    fn(t, o);
  });
}

}  // namespace qktest
