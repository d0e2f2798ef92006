// Rows whose dP - D cancels below float P's resolution (docs/RELIABILITY.md, "Fixed on
// 2026-12-08, twenty-seventh session"). The tiled backward formed D_i = sum_j P_ij dP_ij and
// dx = P (dP - D) from float P; where the keys' logits differ by less than float resolves near
// P ~ 0.2, some dP_ij - D_i rests on those differences alone and kept no correct bit. In the
// fuzz loop's most frequent finding (`additive-core-overflow-tiled-returns-2026-12-05`, `-aa2`)
// that difference times a key of -3.4e32 is dW_k = -1.9e58, past float: the float core refused
// ("gradient overflowed") and the tiled path returned -4.1e28. Such rows now take their P in
// double from the logits in double (cpu/row_shift.hpp, RowShift kind 2). Right values: the
// double core, whose P hold the differences (the logits are exact in double here and dP are
// exact: small integer values times a power of 2 or a single product).
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <random>

#include "faults/harness_bar.hpp"
#include "faults/tilings.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"

using namespace qkscope;
using Catch::Matchers::WithinRel;

namespace {

using Call = qktest::FaultCall;

// The fuzz inputs' additive parameters (d_h = 2): unit 0 reads the key, unit 1 the query.
Call additive_call(Matrix Q, Matrix K, Matrix dO) {
  Call a{std::move(Q), std::move(K), qktest::mat({{0}, {0}, {1}, {1}, {3}}), std::move(dO), {}, {}};
  a.c.score = "additive";
  a.p.W_q = qktest::mat({{0}, {0.0398233235}});
  a.p.W_k = qktest::mat({{-0.389546156}, {0}});
  a.p.v = qktest::vec({-0.0176569708, 0.155588239});
  a.p.b = qktest::vec({0, 0});
  return a;
}

// additive-core-overflow-tiled-returns-2026-12-05: row 0's logits 2.7e-8 apart (key 4 at
// -3.97e-6), dO_0 = 1.66e35 over values 0, 0, 1, 1, 3: dP_02 - D_0 = dO_0 (P_0 + P_1 - 2 P_4).
Call case_1205() {
  return additive_call(qktest::mat({{3.00000011e-06}, {9.99999997e-07}, {9.99999997e-07}, {9.99999997e-07},
                                    {-1.99999999e-06}, {0}}),
                       qktest::mat({{0}, {0}, {-3.39677052e+32}, {0}, {-3.96875021e-06}}),
                       qktest::mat({{1.66153499e+35}, {1}, {-2}, {-3}, {0}, {0}}));
}

// -aa2 (twenty-sixth session's loop): the same rows with logits 2.7e-10 apart, below the fused
// tanh's own error (~1e-8): only the scores in double hold them. A keep mask, relative and T5
// tables.
Call case_aa2() {
  Call a = additive_call(qktest::mat({{9.99999994e-09}, {1.66153498e+27}, {9.99999994e-09}, {9.99999994e-09},
                                      {-1.99999999e-08}, {0}}),
                         qktest::mat({{0}, {0}, {-3.38953121e+30}, {-3.61328589e-09}, {3.96874995e-08}}),
                         qktest::mat({{1.66153499e+35}, {1}, {-2}, {-3}, {0}, {0}}));
  a.c.mask.keep = KeepMask(6, 5);
  a.c.mask.keep << 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1;
  a.c.bias.relative = qktest::vec({3.53649235});
  a.c.bias.t5 = T5Buckets{false, 7, 2};
  a.c.bias.t5_table = qktest::vec({-3.74828434, 4.76837158e-07, 3.53302431, -1.99400258, 0, 4, 4});
  return a;
}

AttentionGrads<float> core_float(const Call& a) { return qktest::core_float_grads(a); }

template <class Fn>
void tiled_at_tilings(const Call& a, Fn&& fn) {
  qktest::tiled_forward_at_tilings(a, fn);
}

// Dot-product rows built to cancel: L_k = 5 keys with values 0, 0, 1, 1, 3 and one query of 1,
// keys 0 except key 4 at delta (exact floats), dO = 2^e. dP_j - D is then exact in the double
// core and dS_2 = -P_2 dO (2 (e^delta - 1) / (4 + e^delta)) ~ -0.4 delta dO P_2.
Call dot_call(float delta, float dO, Eigen::Index L_q = 1) {
  Call a{Matrix::Ones(L_q, 1), qktest::mat({{0}, {0}, {0}, {0}, {delta}}), qktest::mat({{0}, {0}, {1}, {1}, {3}}),
         Matrix::Constant(L_q, 1, dO), {}, {}};
  a.c.score = "dot";
  return a;
}

}  // namespace

TEST_CASE("tiled backward: a row whose dP - D cancels below float P refuses with the core where the gradient is "
          "past float (fuzz 2026-12-05, -aa2)",
          "[faults][reliability][fuzz][tiled]") {
  for (const auto& entry : {std::pair{"2026-12-05", case_1205()}, {"aa2", case_aa2()}}) {
    const Call& a = entry.second;
    INFO(entry.first);
    // The double core: dW_k's unit 1 entry -1.897e58 (2026-12-05; the ninth session's triage)
    // and 1.893e54 (-aa2), past float either way, so refusing is the right float answer.
    const auto g64 = qktest::double_core_grads(a.Q, a.K, a.V, a.dO, a.p, a.c);
    CHECK(std::abs(g64.dparams.W_k(1, 0)) > 1e50);
    CHECK_THROWS_WITH(core_float(a), Catch::Contains("gradient overflowed: dL/dparams.W_k"));
    tiled_at_tilings(a, [&](const cpu::TiledResult<float>& t, const cpu::TiledOptions& o) {
      // Before: returned, dW_k(1, 0) = -4.1e28 (2026-12-05) and 2.1e28 (-aa2).
      CHECK_THROWS_WITH(cpu::attention_backward<float>(a.Q, a.K, a.V, a.p, a.c, t, a.dO, o),
                        Catch::Contains("gradient overflowed: dL/dparams.W_k"));
    });
  }
}

TEST_CASE("tiled backward: the same rows with a finite gradient match the double core", "[faults][reliability][fuzz][tiled]") {
  // 2026-12-05 and -aa2 with dO = (1, 0, ..., 0): the gradients are finite, and row 0 still cancels
  // (dP_02 - D_0 ~ 1e-8 and 1e-10 of dP); the other rows' dO 0.
  for (const auto& entry : {std::pair{"2026-12-05", case_1205()}, {"aa2", case_aa2()}}) {
    Call a = entry.second;
    INFO(entry.first);
    a.dO.setZero();
    a.dO(0, 0) = 1;
    const auto g64 = qktest::double_core_grads(a.Q, a.K, a.V, a.dO, a.p, a.c);
    tiled_at_tilings(a, [&](const cpu::TiledResult<float>& t, const cpu::TiledOptions& o) {
      const auto g = cpu::attention_backward<float>(a.Q, a.K, a.V, a.p, a.c, t, a.dO, o);
      // Unit 1's dW_k is dS_02 v_1 k_2 (k_2 = -3.4e32, -3.4e30), dS_02 resting on row 0's
      // cancellation. Double core -1.14192941e23 and 1.13949978e19; before, the tiled path gave
      // -2.5e-7 and 2.5e-9 (float P's noise) and the float core -6.2e23 and -6.2e21; now
      // -1.14192939e23 and 1.13949515e19 (-aa2's dP_02 - D_0 of 1e-10 of dP leaves double's own
      // rounding at ~1e-6 of it, in both the core and here).
      CHECK_THAT(double(g.dparams.W_k(1, 0)), WithinRel(g64.dparams.W_k(1, 0), 1e-4));
      qktest::matches_under_harness_bar(a.Q, a.K, a.V, a.dO, a.p, a.c, o);
    });
  }
}

TEST_CASE("tiled backward: dot-product rows cancelling below float P match the double core",
          "[faults][reliability][tiled]") {
  // A seeded sweep over delta in [2^-40, 2^-21) and dO = 2^e: dK_2 = dS_2 (one query of 1) is
  // ~ -0.08 delta dO, below float P's noise (~1e-8 dO) for every delta here.
  std::mt19937_64 rng(20261208);
  std::uniform_int_distribution<int> de(-40, -22), dd(-20, 20);
  for (int n = 0; n < 200; ++n) {
    const float delta = std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, de(rng));
    const float dO = std::ldexp(1.0f, dd(rng));
    const Eigen::Index L_q = 1 + Eigen::Index(rng() % 3);
    const Call a = dot_call(rng() % 2 ? delta : -delta, dO, L_q);
    INFO("delta " << a.K(4, 0) << ", dO " << dO << ", L_q " << L_q);
    const auto g64 = qktest::double_core_grads(a.Q, a.K, a.V, a.dO, a.p, a.c);
    for (Eigen::Index bk : {1, 2, 5}) {
      cpu::TiledOptions o = qktest::one_thread(bk);
      o.block_q = 2;
      const auto t = cpu::attention_forward<float>(a.Q, a.K, a.V, a.p, a.c, o);
      REQUIRE_FALSE(t.fallback);
      const auto g = cpu::attention_backward<float>(a.Q, a.K, a.V, a.p, a.c, t, a.dO, o);
      // The double core's own rounding of dP - D is ~2^-52 of dP's size (2 |dO|); the rule
      // allows 1e-6 relative plus 2^-48 |dO|. Before: dK_2 and dK_3 were 0 (|delta| < ~2^-24)
      // or off by up to ~100 %.
      for (Eigen::Index j = 0; j < 5; ++j)
        CHECK(std::abs(double(g.dK(j, 0)) - g64.dK(j, 0)) <= 1e-6 * std::abs(g64.dK(j, 0)) + std::ldexp(dO, -48));
    }
  }
}

TEST_CASE("tiled backward: rows taken in double give bitwise the same gradients for any thread count",
          "[faults][reliability][tiled]") {
  // 300 queries over 40 keys, every third query's row built to cancel (keys 0 except one at
  // 2^-30, values 0, 0, 1, 1, 3 repeated), the rest random: threads 1, 2 and 4 agree bit for bit.
  std::mt19937_64 rng(7);
  std::normal_distribution<float> n01;
  const Eigen::Index L_q = 300, L_k = 40;
  Matrix Q(L_q, 1), K = Matrix::Zero(L_k, 1), V(L_k, 1), dO(L_q, 1);
  for (Eigen::Index j = 0; j < L_k; ++j) V(j, 0) = float(std::array{0, 0, 1, 1, 3}[std::size_t(j % 5)]);
  K(4, 0) = std::ldexp(1.0f, -30);
  for (Eigen::Index i = 0; i < L_q; ++i) {
    Q(i, 0) = i % 3 ? n01(rng) : 1.0f;
    dO(i, 0) = n01(rng);
  }
  AttentionConfig<float> c;
  c.score = "dot";
  const ScoreParams<float> p;
  const auto at = [&](int threads) {
    cpu::TiledOptions o;
    o.threads = threads;
    o.block_q = 16;
    o.block_k = 8;
    const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
    return cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o);
  };
  const auto g1 = at(1), g2 = at(2), g4 = at(4);
  CHECK(g1.dQ == g2.dQ);
  CHECK(g1.dK == g2.dK);
  CHECK(g1.dQ == g4.dQ);
  CHECK(g1.dK == g4.dK);
  CHECK(g1.dV == g4.dV);
  const auto g64 = qktest::double_core_grads(Q, K, V, dO, p, c);
  CHECK_THAT(double(g1.dK(4, 0)), WithinRel(g64.dK(4, 0), 1e-5));
}
