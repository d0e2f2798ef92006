// The softmax backward's shift: dx_j = P_j ((dP_j - b) - sum_k P_k (dP_k - b)) for any b, since
// the P sum to 1. The core (norm/row.hpp) and the tiled backward (cpu/flash_backward.hpp) took b
// from the row's first key with P > 0; they now take it from the key of largest P, so the key
// that carries the row has dP - b = 0 and its dx sums only the other keys' small shares.
// With b from a key of tiny P and a dP far from the top key's, the top key's dx was the
// difference of two numbers of size |dP| and kept eps |dP| of error (in double too). Right
// values: 100-digit central differences of L = sum dO . O (mpmath), on the float inputs.
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/norm/row.hpp"
#include "qkscope/qkscope.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

TEST_CASE("softmax backward: a dominant key's dz beside a first key of tiny p (review, 2026-12-03)",
          "[faults][reliability][norm]") {
  // p = [e^-30, 1.0f], dp = [1e4, 0]: dz_1 = p_1 (dp_1 - p . dp) = -p_0 1e4 = -9.36e-10. Shifted
  // by dp_0, (dp_1 - dp_0) - p . (dp - dp_0) = -1e4 - (-1e4) gave 0 (the dense-bias gradient
  // of that key and dV carried it, in the float and the double core alike).
  auto check = [](auto one) {
    using T = decltype(one);
    const T p0 = T(std::exp(-30.0)), tau = T(0.5);
    const T z[2] = {T(0), T(30)}, p[2] = {p0, T(1) - p0}, dp[2] = {T(1e4), T(0)};
    T dz[2];
    norm::softmax_backward(z, p, dp, 2, tau, dz);
    const double want = -double(p0) * 1e4 * double(p[1]) / double(tau);
    CAPTURE(sizeof(T), dz[0], dz[1], want);
    CHECK(std::abs(double(dz[1]) - want) <= 1e-6 * std::abs(want));
    CHECK(std::abs(double(dz[0]) + want) <= 1e-6 * std::abs(want));
  };
  check(1.0f);
  check(1.0);
}

TEST_CASE("softmax backward: the top key's dx beside a first key of tiny P (fuzzer finding, 2026-12-04)",
          "[faults][reliability][tiled][norm]") {
  // Row 5: query 1 over keys -3, 1, -3 at tau = 0.1065: P = [5e-17, 1, 5e-17], dP = [0, -1.0e34,
  // -19.6]. With b = dP_0 = 0, key 1's dx = (dP_1 - 0) - P . dP rounded to 0 in double (the
  // double core, the harness's right value, gave dQ -2.78e19); it is -9.3e17 (dQ -3.71e19).
  // The tiled path's tied-key split (test_fuzz_dot_reference_key.cpp) reads the same dx.
  const Matrix Q = qktest::mat<float>({{4}, {3.96875f}, {4}, {3.99997044f}, {1}, {1}, {1}});
  const Matrix K = qktest::mat<float>({{-3}, {1}, {-3}});
  const Matrix V = qktest::mat<float>({{0, 0, 0}, {0, 0, 2.59614843e33f}, {3.99951172f, 0, 1}});
  const Matrix dO = qktest::mat<float>({{1, -1, 0}, {0, 0, 0}, {0, 0, 3.99215603f}, {3.84398699f, 0, 0},
                                        {-4, 0, -2.93873588e-39f}, {-3.9375f, 3.99951172f, -3.86715698f}, {0, 0, 0}});
  auto c = qktest::score_config("dot", 0.106524862);
  c.mask.causal = true;
  const double truth = -37122521170621246913.0;  // dL/dq_5
  const auto g64 = qktest::double_core_grads(Q, K, V, dO, {}, c);
  const auto f32 = attention_forward<float>(Q, K, V, {}, c);
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
  CHECK(std::abs(g64.dQ(5, 0) - truth) <= 1e-12 * std::abs(truth));
  CHECK(std::abs(double(g32.dQ(5, 0)) - truth) <= 1e-6 * std::abs(truth));
  for (const Eigen::Index block_k : {1, 2, 3}) {
    CAPTURE(block_k);
    const auto tg = qktest::tiled_matches(Q, K, V, dO, {}, c, block_k);
    CHECK(std::abs(double(tg.dQ(5, 0)) - truth) <= 1e-6 * std::abs(truth));
  }
}

TEST_CASE("tiled backward: D shifted at the top key where the first key's P underflows (review, 2026-12-05)",
          "[faults][reliability][tiled]") {
  // Additive with a softcap at tau = 2e-4: the row's first key with P > 0 had P far below the
  // others beside a value of -2.1e34, and D's cancellation left every gradient 1e5 times the
  // bar (dL/dtau -9.2e11 where the double core has 1.07e10). The double core is right here to
  // the bar (the reference's own shift is at the top key as well).
  const Matrix Q = qktest::mat<float>({{-0.829114795f, -0.103576049f, -1.52761376f}});
  const Matrix K = qktest::mat<float>(
      {{0.621506035f, 0.968989491f, -0.598150015f}, {1.07034016f, -0.83349812f, -0.419316411f},
       {0.431354195f, -0.92999661f, -0.234533057f}, {1.46529925f, -0.0601723865f, 0.68727231f},
       {-1.92795098f, 0.32160455f, 0.221204147f}, {0.760377705f, 0.426183283f, 0.0647365451f},
       {-1.25051248f, 0.371203989f, 0.742715895f}, {0.956882834f, 0.567240059f, 0.111945197f},
       {0.505374134f, -0.032589972f, -2.07155752f}});
  const Matrix V = qktest::mat<float>({{0.162450537f}, {-2.07691874e34f}, {-2.47976255f}, {-2.27104807f}, {0.94686532f},
                                       {-0.996525347f}, {-2.96295691f}, {0.642790556f}, {3.40496254f}});
  const Matrix dO = qktest::mat<float>({{-2.21209621f}});
  const auto p = qktest::additive_params(
      qktest::mat<float>({{-0.0325844884f, 0.505147696f, -0.123074934f}, {-0.298318684f, -0.652909756f, -0.309491962f}}),
      qktest::mat<float>({{1.25258207f, 0.123422198f, 0.39786908f}, {0.215114713f, -0.72157222f, -0.866554439f}}),
      {0.556247413f, -0.283699065f}, {1, 2});
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.00020420904838929838;
  c.bias.softcap = 4.3854232566847742;
  // The harness's bar (harness_bar.hpp): with tau = 2e-4 each z's rounding moves P by 1e-4,
  // more than the float core's own run shows.
  for (const Eigen::Index block_k : {1, 2, 5}) {
    CAPTURE(block_k);
    auto o = qktest::one_thread(block_k);
    o.block_q = 3;
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, o);
  }
}

TEST_CASE("tiled backward: a subnormal P in dx taken in double, as D takes it (fuzzer finding, 2026-12-04)",
          "[faults][reliability][tiled]") {
  // tau = 1e-4: P_0 = 3.7e-44 (subnormal in float, 1.7 % off) beside a value of 2.6e38; key 1
  // carries the row, so both dx are +-P_0 (dP_0 - dP_1) and dQ is P_0's error alone. (With the
  // shift at the first key, key 1's dx rounded to 0 and the double core's dQ had the wrong
  // sign, -0.0096.) The tiled path takes such P again in double (cpu/tile_ops.hpp, exact_weight).
  const Matrix Q = qktest::mat<float>({{0.100000001f}}), K = qktest::mat<float>({{0.100000001f}, {0.200000003f}}),
               V = qktest::mat<float>({{-3.68200207f}, {2.57547031e38f}}), dO = qktest::mat<float>({{1}});
  const auto c = qktest::score_config("dot", 0.00010000000000000122);
  const double dq = 0.0095809168159736379444, dtau = -9.5809169587824797397;
  const auto g64 = qktest::double_core_grads(Q, K, V, dO, {}, c);
  CHECK(std::abs(g64.dQ(0, 0) - dq) <= 1e-10 * dq);
  CHECK(std::abs(g64.dtemperature - dtau) <= 1e-10 * std::abs(dtau));
  // The float logits 0.01 and 0.02 round by ~6e-10, which moves P_0 by 6e-6 at tau = 1e-4:
  // within 1e-5 of the value (the float P alone was 1.7e-2 off).
  for (const Eigen::Index block_k : {1, 2}) {
    CAPTURE(block_k);
    const auto tg = qktest::tiled_matches(Q, K, V, dO, {}, c, block_k);
    CHECK(std::abs(double(tg.dQ(0, 0)) - dq) <= 1e-5 * dq);
    CHECK(std::abs(tg.dtemperature - dtau) <= 1e-5 * std::abs(dtau));
  }
}
