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

}  // namespace qktest
