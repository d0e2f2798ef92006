// The fused additive form's first-pass split where its terms are mostly rounding
// (score/additive_rows.hpp, exact_units' keep_lossy). dA_h / v_h = sum_j dS_j (u_j - u_r) from
// the fused u = (p r) r, p = e^{2a} e^{2b} rounded to float: where a row's u lie within a few
// per mille of each other, each difference is eps u / |u_j - u_r| relative off (2e-5 on the
// finding below), yet the estimate still promised 12.9 bits and the unit skipped the exact
// second pass. Such splits (E_A past 16 times split_bound) must now keep 20 bits, which sends
// them to the exact differences. Right values: 60-digit mpmath evaluations of the definition
// (Bahdanau et al. 2015, A.1.2), which the double core matches.
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/score/additive_rows.hpp"

using namespace qkscope;

TEST_CASE("tiled additive dQ: one query over three keys whose units' u differ by 1e-3 (fuzzer, 2026-12-05)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/additive-dQ-tau1-dO-1e36-thirteenth-2026-12-05: unit 2 (a = 0.78,
  // u_r = 0.574) carries dQ; the tiled dQ was -9.38519e31, 2.0e-5 relative off, where the
  // fuzz harness's bar allows 3.7e-6 (the float core's own error, 1.5e-6, sets it).
  AttentionConfig<float> c;
  c.score = "additive";
  const auto p = qktest::additive_params(qktest::mat<float>({{0.806114316f}, {1.07440829f}, {0.0846764669f}}),
                                         qktest::mat<float>({{-0.222065434f}, {-0.583474755f}, {-0.0688623339f}}),
                                         {-0.35373196f, 0.0567548536f, 0.601951718f}, {0, 0, 0});
  const Matrix Q = qktest::mat<float>({{9.23999977f}}),
               K = qktest::mat<float>({{0.00999999978f}, {0.0299999993f}, {-0.0299999993f}}),
               V = qktest::mat<float>({{0}, {-3}, {0}}), dO = qktest::mat<float>({{1.33963271e36f}});
  const double exact = -9.38537864626098e+31;  // mpmath, 60 digits
  for (const Eigen::Index bq : {1, 2})
    for (const Eigen::Index bk : {1, 2, 3, 64}) {
      CAPTURE(bq, bk);
      auto o = qktest::one_thread(bk);
      o.block_q = bq;
      qktest::matches_under_harness_bar(Q, K, V, dO, p, c, o);
      const auto g = cpu::attention_backward<float>(Q, K, V, p, c, cpu::attention_forward<float>(Q, K, V, p, c, o), dO, o);
      CHECK(std::abs(double(g.dQ(0, 0)) - exact) <= 1e-6 * std::abs(exact));  // it was 2.0e-5 off
    }
}

TEST_CASE("additive row sums: a fused split that is mostly rounding takes the exact pass; the core's rule is unchanged",
          "[score][additive][reliability]") {
  // The finding's unit 2 after the first pass (float): split_bound 1.84e33, E_A 2.05e36, E_core
  // 1.52e36 (so not the 12-bit case: E_A < 4 E_core), dA / v = -1.84e33 with R = 0. Its
  // estimate eps (split_bound + E_A) keeps 12.9 bits: enough under the 6-bit rule alone.
  score::AdditiveRowSums<float> f;
  f.resize(1);
  f.zero();
  f.plain(0) = -1.9e33f;
  f.plain_bound(0) = 2.0e36f;
  f.split(0) = -1.84139511e33f;
  f.split_bound(0) = 1.84e33f;
  f.E_A(0) = 2.047e36f;
  f.E_core(0) = 1.524e36f;
  f.v_plain(0) = 1.0f;
  f.v_plain_bound(0) = 1.0f;
  f.u_r(0) = 0.5737f;
  f.t_r(0) = 0.6528f;
  f.c_r(0) = 0.3472f;
  REQUIRE(f.split_dA(0, true));
  CHECK(f.exact_units(true, 0.0, false)(0) == 0);  // the core's and the direct form's t^2 - t_r^2
  CHECK(f.exact_units(true, 0.0, true)(0) == 1);   // the fused form's rounded u
  // Terms that are not mostly rounding (E_A at 10 times split_bound) keep the 6-bit rule.
  f.E_A(0) = 10 * f.split_bound(0);
  f.E_core(0) = f.E_A(0);
  CHECK(f.exact_units(true, 0.0, true)(0) == 0);
  // Without an exact row sum the split is not taken, so no unit is flagged.
  f.E_A(0) = 2.047e36f;
  CHECK(f.exact_units(false, 0.0, true)(0) == 0);
}
