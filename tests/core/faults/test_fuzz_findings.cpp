// Findings of the libFuzzer harnesses (tests/fuzz, docs/RELIABILITY.md), each as a small
// input with its right value, computed by hand in exact arithmetic where stated.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/norm/row.hpp"
#include "qkscope/norm/sparsemax.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "reference/tolerance.hpp"
#include "support/convert.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

using qktest::one_thread_small_tiles;

}  // namespace

TEST_CASE("tiled dtemperature with a tiny scale and large dP: no cancellation (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dot, q = 1, keys 1, 2, 3, scale 1e-30, tau 1: logits x = [1, 2, 3] e-30, so P = 1/3 each
  // (to 1e-30). Values [1, 2, -1] e30, dO = 1: dP = V, D = mean dP = (2/3) e30,
  // dL/dtau = -sum_j P_j (dP_j - D) x_j = -(1/3)(1/3 + 8/3 - 15/3) = 2/3.
  // The tiled kernel expanded this into sums of P dP log P and P log P whose difference
  // cancelled to 0.
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{1}, {2}, {3}}),
               V = qktest::mat<float>({{1e30}, {2e30}, {-1e30}}), dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = 1e-30;
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  const auto g = attention_backward<float>(Q, K, V, {}, c, r, dO);
  CHECK_THAT(g.dtemperature, WithinRel(2.0 / 3.0, 1e-5));
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread_small_tiles());
  CHECK_THAT(tg.dtemperature, WithinRel(2.0 / 3.0, 1e-5));
}

TEST_CASE("tiled dK with large, close dP values: D is not rounded before dP - D (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dP = V = [1000, 1000.001, 1000.002] (as float): dP - D is ~1e-3 while float's spacing at
  // 1000 is 6e-5, so a D rounded to float cost dx (and dK) up to 3% here. Reference: the
  // core in double on the same float inputs.
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{0}, {0.1}, {0.2}}),
               V = qktest::mat<float>({{1000.0}, {1000.001}, {1000.002}}), dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = -1;
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread_small_tiles());
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto rd = attention_forward<double>(Qd, Kd, Vd, {}, cd);
  const auto gd = attention_backward<double>(Qd, Kd, Vd, {}, cd, rd, dO.cast<double>());
  for (Eigen::Index j = 0; j < 3; ++j) {
    INFO("key " << j);
    CHECK_THAT(double(tg.dK(j, 0)), WithinRel(gd.dK(j, 0), 1e-4));
  }
}

TEST_CASE("softmax backward at a denormal temperature with near-tied scores: dL/dtau is never NaN (fuzzer finding)",
          "[faults][reliability][norm]") {
  // tau = 1e-40 and z = [0, -3e-40, -6e-40] (float denormals): p ~ [0.95, 0.05, 0.0024],
  // dz = p (dp - p . dp) / tau is past FLT_MAX with both signs, and the per-term products
  // dz_j (z_j - max) / tau were +inf and -inf, summing to NaN. The sum is now formed before
  // the last division: one overflow (an infinity, which attention_backward reports).
  const float tau = 1e-40f;
  const std::vector<float> z = {0.0f, -3e-40f, -6e-40f}, dp = {0.0f, 1.0f, -1.0f};
  std::vector<float> p(3), dz(3);
  norm::stable_softmax(z.data(), 3, tau, nullptr, p.data());
  const float dtau = norm::softmax_backward(z.data(), p.data(), dp.data(), 3, tau, dz.data());
  CHECK_FALSE(std::isnan(dtau));
  // In double the same row has a finite dL/dtau: -(1/tau) sum_j p_j (dp_j - p . dp) (z_j / tau).
  const double taud = double(tau);
  std::vector<double> zd(z.begin(), z.end()), dpd(dp.begin(), dp.end()), pd(3), dzd(3);
  norm::stable_softmax(zd.data(), 3, taud, nullptr, pd.data());
  const double got = norm::softmax_backward(zd.data(), pd.data(), dpd.data(), 3, taud, dzd.data());
  double dot = 0, want = 0;
  for (int j = 0; j < 3; ++j) dot += pd[j] * dpd[j];
  for (int j = 0; j < 3; ++j) want -= pd[j] * (dpd[j] - dot) * (zd[j] / taud) / taud;
  CHECK(std::isfinite(got));
  CHECK_THAT(got, WithinRel(want, 1e-12));
  CHECK(std::isinf(dtau));  // float: |dL/dtau| ~ 1e40 is past FLT_MAX
}

TEST_CASE("sparsemax backward at a denormal temperature: dL/dtau is never NaN (fuzzer finding)",
          "[faults][reliability][norm]") {
  // tau = 1e-40, z = [0, -3e-41, -6e-41]: y = z / tau = [0, -0.3, -0.6], all three in the
  // support. dp = [0, 1, -1]: g = dp - mean = [0, 1, -1], dz = g / tau = [0, +inf, -inf] in
  // float, and the old per-term sum gave +inf - inf = NaN.
  // Exact: dL/dtau = -(1/tau) sum_j g_j (z_j - max) / tau.
  const float tau = 1e-40f;
  const std::vector<float> z = {0.0f, -3e-41f, -6e-41f}, dp = {0.0f, 1.0f, -1.0f};
  std::vector<float> p(3), dz(3);
  const norm::NoOptions none;
  const norm::Row<float, norm::NoOptions> row{z.data(), 3, tau, nullptr, &none};
  norm::Sparsemax::forward(row, p.data());
  REQUIRE(p[2] > 0);  // the whole row is in the support
  const float dtau = norm::Sparsemax::backward(row, p.data(), dp.data(), dz.data());
  CHECK_FALSE(std::isnan(dtau));
  CHECK(std::isinf(dtau));  // |dL/dtau| ~ 3e39 is past FLT_MAX
  const double taud = double(tau);
  std::vector<double> zd(z.begin(), z.end()), dpd(dp.begin(), dp.end()), pd(3), dzd(3);
  const norm::Row<double, norm::NoOptions> rowd{zd.data(), 3, taud, nullptr, &none};
  norm::Sparsemax::forward(rowd, pd.data());
  const double got = norm::Sparsemax::backward(rowd, pd.data(), dpd.data(), dzd.data());
  double want = 0;
  for (int j = 0; j < 3; ++j) want -= (dpd[j] - 0.0) * (zd[j] / taud) / taud;  // mean of dp is 0
  CHECK_THAT(got, WithinRel(want, 1e-12));
}

TEST_CASE("tiled backward with logits near 1e35: P is normalised by its recomputed row sum (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dot, q = 1.66e35, three keys 1 with key_length 2: two tied visible keys, P = [0.5, 0.5, 0].
  // The float lse is x itself (log 2 is below its spacing), so exp(x - lse) gave P = 1 for
  // both keys and dV = [1, 1, 0] instead of dV_j = P_j dO = [0.5, 0.5, 0].
  const Matrix Q = qktest::mat<float>({{1.66153499e35}}), K = qktest::mat<float>({{1}, {1}, {1}}),
               V = qktest::mat<float>({{0}, {0}, {1}}), dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.mask.key_length = 2;
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread_small_tiles());
  CHECK(tg.dV(0, 0) == 0.5f);
  CHECK(tg.dV(1, 0) == 0.5f);
  CHECK(tg.dV(2, 0) == 0.0f);
  // dP = V = [0, 0] on the visible keys: D = 0 and dx = 0, so dQ = dK = 0 exactly.
  CHECK(tg.dQ.isZero(0));
  CHECK(tg.dK.isZero(0));
}

TEST_CASE("tiled backward refuses a non-finite grad_output as the core does (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // linear_concat, L_q 2, L_k 1: with one key P = 1 whatever the scores, and the tiled
  // backward returned finite gradients for dO = -inf where the core names grad_output.
  const Matrix Q = qktest::mat<float>({{0}, {0}}), K = qktest::mat<float>({{0}}), V = qktest::mat<float>({{0}});
  AttentionConfig<float> c;
  c.score = "linear_concat";
  const ScoreParams<float> p = init_params<float>("linear_concat", 1, 1, 0, 0);
  const float bad[] = {-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (const float x : bad) {
    const Matrix dO = qktest::mat<float>({{x}, {0}});
    const auto r = attention_forward<float>(Q, K, V, p, c);
    CHECK_THROWS_WITH(attention_backward<float>(Q, K, V, p, c, r, dO),
                      Catch::Matchers::Contains("grad_output must be finite"));
    const auto t = cpu::attention_forward<float>(Q, K, V, p, c, one_thread_small_tiles());
    REQUIRE_FALSE(t.fallback);
    CHECK_THROWS_WITH(cpu::attention_backward<float>(Q, K, V, p, c, t, dO, one_thread_small_tiles()),
                      Catch::Matchers::Contains("grad_output must be finite"));
  }
}

TEST_CASE("tiled logsumexp of a cancelling form near 0 at small tau goes to the core (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // neg_sq_euclidean, tau 0.0326, q = 1, keys [-0.976, 1, 1]: the fast form centres on the
  // mean key 0.349, so the logits 0 of the two equal keys come from 2 qc kc - qc^2 - kc^2
  // with terms near 0.85, and 1 / tau amplifies their float rounding to ~2e-6, where the
  // rule's floor for lse = log 2 is 1.7e-6. That row's logsumexp is recomputed (cpu/exact_lse.hpp).
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{-0.976}, {1}, {1}}),
               V = qktest::mat<float>({{0.5}, {-1}, {2}});
  AttentionConfig<float> c;
  c.score = "neg_sq_euclidean";
  c.temperature = 0.0326;
  const auto core = attention_forward<float>(Q, K, V, {}, c);
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  const auto ref = reference::attention<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {},
                                                qktest::config_as<double>(c));
  const auto lse = reference::compare("tiled logsumexp", t.logsumexp, core.logsumexp, ref.logsumexp);
  INFO(lse.text);
  CHECK(lse.ok);
  CHECK_FALSE(t.fallback);  // the tiled kernel ran; only that row's logsumexp was recomputed
  CHECK(reference::compare("tiled output", t.output, core.output, ref.output).ok);
  // The exact row also under causal masking and a bias (the same pipeline's logits).
  c.mask.causal = true;
  c.bias.alibi_slope = 0.5;
  const Matrix Q3 = qktest::mat<float>({{1}, {1}, {0.99}});
  const auto core3 = attention_forward<float>(Q3, K, V, {}, c);
  const auto t3 = cpu::attention_forward<float>(Q3, K, V, {}, c, one_thread_small_tiles());
  const auto ref3 = reference::attention<double>(Q3.cast<double>(), K.cast<double>(), V.cast<double>(), {},
                                                 qktest::config_as<double>(c));
  const auto lse3 = reference::compare("tiled logsumexp", t3.logsumexp, core3.logsumexp, ref3.logsumexp);
  INFO(lse3.text);
  CHECK(lse3.ok);
}

TEST_CASE("values near FLT_MAX: the unnormalised accumulator of the tile kernels (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dot, q = 1, keys [1, 1, -2], values [1.134e38, 2.575e38, 0]: O = P v = 1.81e38 is
  // representable, but acc = e^0 v_0 + e^0 v_1 = 3.7e38 is not. The CPU tiled kernel hands
  // the call to the core; the CUDA host refuses it (values_accumulate_safe).
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{1}, {1}, {-2}}),
               V = qktest::mat<float>({{1.13427449e38}, {2.57547031e38}, {0}});
  AttentionConfig<float> c;
  c.score = "dot";
  const auto ref = reference::attention<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {},
                                                qktest::config_as<double>(c));
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  CHECK(std::isfinite(t.output(0, 0)));
  CHECK_THAT(double(t.output(0, 0)), WithinRel(ref.output(0, 0), 1e-6));
  CHECK_FALSE(detail::values_accumulate_safe<float>(2.57547031e38, 3));
  CHECK(detail::values_accumulate_safe<float>(1e30, 4096));
}

TEST_CASE("tiled gradients at small tau: the row maximum is subtracted before dividing by tau (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dot, tau 0.0983, q = 1, keys [3.988, 2.046, 1], values [-3, 0, -3], dO 1.66e35: keys 0
  // and 2 share a value, so dQ = P_1 (dP_1 - D) (k_1 - ...) / tau hinges on the small weight
  // P_1 = e^-19.8. Folding 1/tau into the query first rounded each logit (about 40) to
  // 2.4e-6, and dQ came out 1.47e-6 relative from the reference where the rule allows
  // 1.36e-6; the core forms z_j - max first (exact here) and then divides.
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{3.98818874}, {2.0457468}, {1}}),
               V = qktest::mat<float>({{-3}, {0}, {-3}}), dO = qktest::mat<float>({{1.66153499e35}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 0.0982862038;
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, f64, dO.cast<double>());
  const auto f32 = attention_forward<float>(Q, K, V, {}, c);
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread_small_tiles());
  for (const auto& [what, fast, naive, ref] :
       {std::tuple{"dQ", tg.dQ, g32.dQ, g64.dQ}, std::tuple{"dK", tg.dK, g32.dK, g64.dK},
        std::tuple{"dV", tg.dV, g32.dV, g64.dV}}) {
    const auto r = reference::compare(what, fast, naive, ref);
    INFO(r.text);
    CHECK(r.ok);
  }
  CHECK(reference::compare("output", t.output, f32.output, f64.output).ok);
  CHECK(reference::compare("logsumexp", t.logsumexp, f32.logsumexp, f64.logsumexp).ok);
}

TEST_CASE("tiled backward: D is held shifted by the row's first dP, as the core's softmax backward (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dot, tau 0.0983, q = -2.758, keys [-2.053, 1, 1], values [-3, 0, -3], dO 1.66e35:
  // P = [1, 6e-38, 6e-38], dP = [-5e35, 0, -5e35], so dP_0 - D = -5e35 * 6e-38 = -0.03,
  // which D = sum P dP in double (spacing 6e19 at 5e35) rounds away: dQ came out 0.315
  // where the reference gives 0.962.
  const Matrix Q = qktest::mat<float>({{-2.75759816}}), K = qktest::mat<float>({{-2.0534966}, {1}, {1}}),
               V = qktest::mat<float>({{-3}, {0}, {-3}}), dO = qktest::mat<float>({{1.66153499e35}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 0.0982862038;
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, f64, dO.cast<double>());
  const auto f32 = attention_forward<float>(Q, K, V, {}, c);
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
  for (const int bk : {1, 2, 3}) {  // the first visible key in the first or a later key tile
    cpu::TiledOptions o = one_thread_small_tiles();
    o.block_k = bk;
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
    REQUIRE_FALSE(t.fallback);
    const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
    for (const auto& [what, fast, naive, ref] :
         {std::tuple{"dQ", tg.dQ, g32.dQ, g64.dQ}, std::tuple{"dK", tg.dK, g32.dK, g64.dK},
          std::tuple{"dV", tg.dV, g32.dV, g64.dV}}) {
      const auto r = reference::compare(what, fast, naive, ref);
      INFO("block_k " << bk << ": " << r.text);
      CHECK(r.ok);
    }
    CHECK_THAT(tg.dtemperature, WithinRel(g64.dtemperature, 1e-4));
  }
}

TEST_CASE("tiled backward with logits near 1e9: no row of P underflows to zero gradients (reviewer finding)",
          "[faults][reliability][tiled]") {
  // dot, q = 9e8, keys [1, 1], values [1, 3], tau 0.3: x = 3e9 for both keys, so P = 1/2 each,
  // dV = [0.5, 0.5], dK = q (dP - D) / tau = [-1.5e9, 1.5e9]. The shift lse tau, rounded,
  // missed the row maximum by far more than exp's range and the tiled dV, dK came back 0.
  const Matrix Q = qktest::mat<float>({{9e8}}), K = qktest::mat<float>({{1}, {1}}), V = qktest::mat<float>({{1}, {3}}),
               dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 0.3;
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread_small_tiles());
  CHECK_THAT(double(tg.dV(0, 0)), WithinRel(0.5, 1e-5));
  CHECK_THAT(double(tg.dV(1, 0)), WithinRel(0.5, 1e-5));
  CHECK_THAT(double(tg.dK(0, 0)), WithinRel(-1.5e9, 1e-4));
  CHECK_THAT(double(tg.dK(1, 0)), WithinRel(1.5e9, 1e-4));
}

TEST_CASE("tiled backward: the shift of dP comes from a key with weight, not a visible key with P = 0 (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dot, q = -1.945, keys [1.24e27, 2.708, 1.354], values [2.58e38, 0, 1]: key 0 is visible
  // but has P = 0 (logit -2.4e27) and dP = 2.58e38; shifting by it swallowed the other dP
  // (spacing 3e22) and dQ came back 0 where the reference gives -0.0846.
  const Matrix Q = qktest::mat<float>({{-1.94514966}}), K = qktest::mat<float>({{1.23794004e27}, {2.70833349}, {1.35416651}}),
               V = qktest::mat<float>({{2.57547031e38}, {0}, {1}}), dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "dot";
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, f64, dO.cast<double>());
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles());
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread_small_tiles());
  CHECK_THAT(double(tg.dQ(0, 0)), WithinRel(g64.dQ(0, 0), 1e-5));
  CHECK_THAT(double(tg.dK(1, 0)), WithinRel(g64.dK(1, 0), 1e-5));
  CHECK_THAT(double(tg.dK(2, 0)), WithinRel(g64.dK(2, 0), 1e-5));
}

TEST_CASE("a raw score past float's range is an overflow even under a softcap (fuzzer finding)",
          "[faults][reliability][tiled]") {
  // dot, q = -1.82e30, k = -2.01e38: q.k = 3.7e68 is inf in float. With scale 1e-40 and a
  // softcap of 3.4e38 the core took tanh(inf) = 1, a logit of 3.4e38 / tau, and a logsumexp of
  // inf, where the true value is 3.7e32. Both paths now refuse with the core's message.
  const Matrix Q = qktest::mat<float>({{-1.8215112e30f}}), K = qktest::mat<float>({{-2.01378021e38f}, {0}}),
               V = qktest::mat<float>({{0, 0}, {0, -2.43654371e38f}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 1e-4;
  c.scale = 1e-40;
  c.bias.softcap = 3.4e38;
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, c), Contains("scores overflowed at (0, 0): raw score inf"));
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q, K, V, {}, c, one_thread_small_tiles()),
                    Contains("scores overflowed at (0, 0): raw score inf"));
  // In double the same call has its finite answer: the larger logit q k scale / tau (the other
  // is 0, and the softcap of 3.4e38 leaves 3.7e28 as it is), e^0 beside it adding nothing.
  const auto d = attention_forward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, qktest::config_as<double>(c));
  CHECK_THAT(d.logsumexp(0), Catch::Matchers::WithinRel(double(Q(0, 0)) * double(K(0, 0)) * 1e-40 / 1e-4, 1e-6));
  // Where the cap saturates, its answer is exact in float and stays: q.k = -1e40 (and 1e40)
  // at scale 1 under c = 30 is the logit -30 (30) whatever q.k is past the range.
  AttentionConfig<float> cap;
  cap.score = "dot";
  cap.scale = 1;
  cap.bias.softcap = 30;
  const Matrix Qs = qktest::mat<float>({{1e20f}, {-1e20f}}), Ks = qktest::mat<float>({{-1e20f}, {1}}),
               Vs = qktest::mat<float>({{1}, {0}});
  const auto s = attention_forward<float>(Qs, Ks, Vs, {}, cap);
  CHECK(s.masked_scores(0, 0) == -30.0f);
  CHECK(s.masked_scores(1, 0) == 30.0f);
  const auto st = cpu::attention_forward<float>(Qs, Ks, Vs, {}, cap, one_thread_small_tiles());
  CHECK_THAT(double(st.output(1, 0)), Catch::Matchers::WithinAbs(1.0, 1e-6));
  CHECK_THAT(double(st.output(0, 0)), Catch::Matchers::WithinAbs(double(s.output(0, 0)), 1e-6));
}

TEST_CASE("gradients that are 0 where the core's float backward overflowed (fuzzer finding)",
          "[faults][reliability][tiled][norm]") {
  // Additive, dO = 1.66e35 on a row whose keys 0, 1 and 4 tie in P: dS of key 2 is exactly 0
  // (P_2 + P_3 + 3 P_4 = 1 there), and so is dL/dW_k (key 2 is 6e29). The core's float
  // p . dp, shifted by the first key's dp and taken as if the float P summed to 1, left
  // dS_2 = 1e28, and dL/dW_k overflowed ("gradient overflowed"); the tiled backward, which
  // divides by the row's sum of P in double, gave 0. Shifted by the dp of the key of largest P
  // (norm/row.hpp), the core's float backward gives the double core's gradients too.
  // (Dividing the core's p . dp by the float sum was tried and reverted: a reviewer's 6,000
  // cases had it more than 10 times worse than before on 48, better on 68.)
  const Matrix Q = qktest::mat<float>({{9.99999997e-07}, {1.66153499e+29}, {9.99999997e-07}, {9.99999997e-07},
                                       {-1.99999999e-06}, {0}}),
               K = qktest::mat<float>({{0}, {0}, {6.04577871e+29}, {3.99987812e-06}, {0}}),
               V = qktest::mat<float>({{0}, {0}, {1}, {1}, {3}}),
               dO = qktest::mat<float>({{1.66153499e+35}, {1}, {-2}, {-3}, {0}, {0}});
  ScoreParams<float> p;
  p.W_q = qktest::mat<float>({{0}, {-0.898918152f}});
  p.W_k = qktest::mat<float>({{-0.0397532359f}, {0}});
  p.v.resize(2);
  p.v << -0.106416568f, -0.220009282f;
  AttentionConfig<float> c;
  c.score = "additive";
  const auto g32 = attention_backward<float>(Q, K, V, p, c, attention_forward<float>(Q, K, V, p, c), dO);
  CHECK(g32.dparams.W_k.isZero(0));
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, one_thread_small_tiles());
  const auto tg = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, one_thread_small_tiles());
  CHECK(tg.dparams.W_k.isZero(0));
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, p.cast<double>(), cd,
                                              attention_forward<double>(Qd, Kd, Vd, p.cast<double>(), cd), dO.cast<double>());
  CHECK(g64.dparams.W_k.isZero(0));
  CHECK((g32.dK.cast<double>() - g64.dK).cwiseAbs().maxCoeff() <= 1e-6 * g64.dK.cwiseAbs().maxCoeff());
  CHECK((g32.dV.cast<double>() - g64.dV).cwiseAbs().maxCoeff() <= 1e-6 * g64.dV.cwiseAbs().maxCoeff());
}
