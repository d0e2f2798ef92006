// Fuzzer findings of 2026-12-04/05 (docs/RELIABILITY.md): additive scores, dL/dtau where the
// keys that carry a row's weight are nearly tied. dL/dtau = -(1/tau) sum_ij dx_ij (x_ij - x0_i)
// rests on differences of logits; the tiled path formed them from its float z, whose errors
// (the fused tanh's ~1.3 eps per unit, or each z's rounding beside a large common part) were
// most of each difference: dL/dtau 1.015 to 1.5 times the fuzz harness's bar, and 8% off where
// keys 1e-6 apart sat beside a unit whose bias gave z ~ 0.2. Such rows now take exact raw
// differences (cpu/temperature_grad.hpp, the additive scorer's raw_differences). The right
// value is the double core's (its logit differences keep ~13 digits here).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/temperature_grad.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"
#include "support/random.hpp"

using namespace qkscope;


TEST_CASE("additive dL/dtau over keys tied at 0 beside a value of -3.3e35 (fuzzer, fifth session)",
          "[faults][reliability][tiled][score]") {
  // z_5 - z_j ~ 5e-4 carries dL/dtau = 8.78998e31; the fused form's z made it 8.78989e31
  // (9.7e-6 relative, 1.015 times the bar). Exact differences (each in float): within 4e-7.
  AttentionConfig<float> c;
  c.score = "additive";
  const Matrix Q = qktest::mat<float>({{4}}), K = qktest::mat<float>({{-2.25f}, {0}, {0}, {0}, {0}, {1}, {0}}),
               V = qktest::mat<float>({{0}, {0}, {0}, {0}, {0}, {-3.32306999e+35f}, {1}}),
               dO = qktest::mat<float>({{1}});
  const auto p = qktest::additive_params(qktest::mat<float>({{-2.3999877f}, {-0.311219335f}}),
                                 qktest::mat<float>({{-0.416232675f}, {0.0192793366f}}), {-0.27999711f, 0.287239105f},
                                 {0, 0});
  qktest::check_dtau(Q, K, V, dO, p, c, 4e-7, {1, 2, 3, 7});
}

TEST_CASE("additive dL/dtau over keys 1e-6 apart beside a biased unit (fuzzer, sixth session)",
          "[faults][reliability][tiled][score]") {
  // Direct tanh (inputs near 1e-6). Unit 1's bias of 1 gives every z ~ -0.19, whose float
  // spacing (1.5e-8) is ~1% of the differences: dL/dtau was 8% off (1.05 times the bar).
  AttentionConfig<float> c;
  c.score = "additive";
  const Matrix Q = qktest::mat<float>({{0}, {-3.99999999e-06f}, {0}, {0}, {-3.96875021e-06f}, {-2.15576142e-06f},
                                       {2.24313681e-06f}}),
               K = qktest::mat<float>({{9.99999997e-07f}, {0}, {2.24609335e-06f}, {0}, {3.99240207e-06f},
                                       {2.24313726e-06f}, {2.24313726e-06f}, {2.24313726e-06f}, {2.24313726e-06f}}),
               V = qktest::mat<float>({{2.24313736f, 2.24313736f, 2.24313736f},
                                       {2.24313736f, 2.24987745f, 1},
                                       {1, 1, 1.66153499e+35f},
                                       {1, 1, -2},
                                       {1, 0, 2.24313736f},
                                       {2.24316359f, 1, 1},
                                       {1, 3, 1},
                                       {1, 1, 2.05490208f},
                                       {1, 1, 1}}),
               dO = qktest::mat<float>({{2, 0, 1}, {1, 0, -4}, {0, 0, -3.96875f}, {1, 1, 1}, {2.05490208f, 1, 1},
                                        {1, 2, 0}, {1, -2.00759792f, -3}});
  const auto p = qktest::additive_params(
      qktest::mat<float>({{-0.315206319f}, {1.89797843f}, {0.824119568f}, {0.454662681f}}),
      qktest::mat<float>({{-1.94539738f}, {-0.302695155f}, {0.117826529f}, {-1.07782149f}}),
      {0.104274228f, -0.24945195f, -0.316358864f, -0.488519341f}, {0, 1, 0, 0});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-5, {1, 4, 9});
}

TEST_CASE("additive dL/dtau of one saturated unit at tau 0.033 (fuzzer, sixth session)",
          "[faults][reliability][tiled][score]") {
  // 1.49 times the bar before (tiled error 1.2e-5 at a value of 1.1).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.032638704335363353;
  const Matrix Q = qktest::mat<float>({{-3}}), K = qktest::mat<float>({{-2.08015251f}, {0.956473827f}, {1}}),
               V = qktest::mat<float>({{2}, {1}, {2}}), dO = qktest::mat<float>({{1}});
  const auto p = qktest::additive_params(qktest::mat<float>({{0.530450761f}}), qktest::mat<float>({{0.0961297825f}}),
                                 {0.411562175f}, {1});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-6, {1, 2, 3});
}

TEST_CASE("logit_difference: z_j - z_r through the scale, softcap and every bias, in double",
          "[tiled][score]") {
  // Against the difference of the modifiers' own z in double, at sizes where that difference
  // keeps its digits; and a pair where both sides of the softcap saturate in double, where it
  // is 0, as in the double core (the fuzz harness's right value).
  const double rel[5] = {0.25, -1, 0.5, 2, -0.125}, t5[4] = {0.5, -0.25, 1, 3};
  const double dense[2 * 4] = {0.1, -0.2, 0.3, 0.4, -1, 2, 0.5, 0.25};
  pipeline::ScoreMods<double> m;
  m.scale = 0.7;
  m.inv_tau = 2;
  m.softcap = true;
  m.cap = 5;
  m.alibi = true;
  m.slope = 0.125;
  m.R = 2;
  m.relative = rel;
  m.buckets = T5Buckets{true, 4, 8};
  m.t5 = t5;
  m.dense = dense;
  m.ld = 4;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int r = 0; r < 4; ++r) {
        const double s_j = 0.3 * j - 0.2 * i, s_r = 0.3 * r - 0.2 * i;
        const double want = m.z(s_j, i, j) - m.z(s_r, i, r);
        CHECK(cpu::detail::logit_difference(m, i, j, r, s_r, s_j - s_r) == Approx(want).epsilon(1e-12));
      }
  m.relative = nullptr;
  m.t5 = nullptr;
  m.dense = nullptr;
  m.alibi = false;
  const double s_r = 20 * 5 / 0.7;  // y = 20: tanh y is 1 in double
  CHECK(cpu::detail::logit_difference(m, 0, 1, 0, s_r, 0.01) == 0);
}

TEST_CASE("additive dL/dtau beside a softcap saturated in double: as the double core (review)",
          "[faults][reliability][tiled][score]") {
  // scale 30 and a softcap of 1 saturate both keys' z in double; a difference from the tanh
  // addition formula (1e-17 beside a value of 1e30) gave dL/dtau -6.4e9 where the double core
  // has 0, 6e15 times the bar. The difference is now that of two double tanh.
  AttentionConfig<float> c;
  c.score = "additive";
  c.scale = 30;
  c.bias.softcap = 1;
  const Matrix Q = qktest::mat<float>({{0.5f}}), K = qktest::mat<float>({{0.5f}, {0.600000024f}}),
               V = qktest::mat<float>({{0}, {1.00000002e+30f}}), dO = qktest::mat<float>({{1}});
  const auto p = qktest::additive_params(qktest::mat<float>({{1}}), qktest::mat<float>({{1}}), {1}, {0});
  qktest::check_dtau(Q, K, V, dO, p, c, 0, {1, 2});
}

TEST_CASE("additive dL/dtau over near-tied keys: random shapes, biases, softcap and tau",
          "[faults][reliability][tiled][score]") {
  // One query over a cluster of near-tied keys (steps of 1e-8 to 1e-4 from 0, 0.0224 or 1)
  // and one far key, unit biases of 0 or 1, a value of 1e30-1e35 on a key of the cluster,
  // tau 0.1 .. 1, sometimes a softcap or a relative bias: the cluster's logits differ by far
  // less than their size. dL/dtau of the tiled path (with the output and dV) against the double
  // core under the fuzz harness's bar; on the code before, 3 of these 1,000 cases failed. Left
  // out, both open (docs/RELIABILITY.md): several query rows whose shares cancel one another
  // (100 times, where rounding A and B to float moves each row by 1e-5), and tau below 0.1 with
  // the cluster far below the top key, where P itself (exp of (z_j - z0) / tau) carries the
  // fused z's error; there 2 of 600 cases fail, 4 on the code before.
  detail::Rng rng(20261206);
  auto below = [&](int n) { return Eigen::Index(rng.uniform() * n); };  // 0 .. n - 1
  const float queries[] = {0.0f, 4.0f, -3.0f, 2.2e-6f, 0.0224f}, bases[] = {0.0f, 0.0224f, 1.0f},
              steps[] = {0.0f, 1e-8f, 1e-7f, 1e-6f, 1e-4f}, far[] = {-2.25f, 4.0f};
  for (int n = 0; n < 1000; ++n) {
    const Eigen::Index L_q = 1, L_k = 2 + below(8), d_h = 1 + below(4);
    Matrix Q(L_q, 1), K(L_k, 1);
    for (Eigen::Index i = 0; i < Q.size(); ++i) Q.data()[i] = queries[below(5)];
    const float base = bases[below(3)];
    for (Eigen::Index j = 0; j < L_k; ++j) K(j, 0) = base + float(below(3)) * steps[below(5)];
    const Eigen::Index far_key = below(int(L_k)), huge_key = (far_key + 1 + below(int(L_k) - 1)) % L_k;
    K(far_key, 0) = far[below(2)];
    Matrix V = qktest::randn<float>(rng, L_k, 1, 3.0);
    V(huge_key, 0) = float(std::ldexp(rng.uniform() < 0.5 ? 1.0 : -1.0, 100 + int(below(16))));
    const Matrix dO = qktest::randn<float>(rng, L_q, 1, 1.0);
    ScoreParams<float> p;
    p.W_q = qktest::randn<float>(rng, d_h, 1, 1.0);
    p.W_k = qktest::randn<float>(rng, d_h, 1, 1.0);
    p.v = qktest::randn_vec<float>(rng, d_h);
    p.b = Vector::Zero(d_h);
    for (Eigen::Index h = 0; h < d_h; ++h)
      if (rng.uniform() < 0.4) p.b(h) = 1;
    AttentionConfig<float> c;
    c.score = "additive";
    c.temperature = std::pow(10.0, -rng.uniform());
    if (rng.uniform() < 0.2) c.bias.softcap = 0.5 + 40 * rng.uniform();
    if (rng.uniform() < 0.2) c.bias.relative = qktest::randn_vec<float>(rng, 3);
    INFO("case " << n << ": L_q " << L_q << ", L_k " << L_k << ", d_h " << d_h << ", tau " << c.temperature);
    (void)qktest::sweep_case_under_bar(Q, K, V, dO, p, c, [&] { return qktest::one_thread(1 + below(4)); },
                                     {.dqk = false, .weights = false, .vectors = false});
  }
}

TEST_CASE("additive dL/dtau with a key 1.15 tau from the top beside nearly tied ones (fuzzer, eighteenth session)",
          "[faults][reliability][tiled][score]") {
  // Unit 0 saturates (bias -689); unit 1 puts keys 1 and 2 1.6e-6 apart and key 0 1.15e-4 below
  // them, with z ~ 0.32 at tau = 1e-4. Only the near keys took exact differences; key 0's float
  // z moved both its difference and its weight: dL/dtau -2.75126e34 where the 60-digit value
  // (tests/fuzz/mpmath_oracle.py) is -2.74870017381755e34, 9.3e-4 relative off, 4.4 times the
  // bar. The row is now taken whole from exact differences (weights included): within 1e-5.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.00010000000002576425;
  const Matrix Q = qktest::mat<float>({{1}, {2.05490208f}}),
               K = qktest::mat<float>({{3.36848974f}, {4}, {3.97641087f}}),
               V = qktest::mat<float>({{1.01412048e+31f}, {1}, {1}}), dO = qktest::mat<float>({{-2}, {0}});
  const auto p = qktest::additive_params(qktest::mat<float>({{0.384333402f}, {-1.16255617f}}),
                                         qktest::mat<float>({{-0.487097681f}, {-1.07495522f}}),
                                         {0.788139224f, -1.10721087f}, {-689, 0});
  const double mpmath = -2.74870017381755e34;  // read before 2026-12-08 from the printed decimals: -2.74870019160337e34
  CHECK(std::abs(qktest::double_core_grads(Q, K, V, dO, p, c).dtemperature - mpmath) <= 1e-6 * std::abs(mpmath));
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-5, {1, 2, 3});
}

TEST_CASE("additive dL/dtau's whole-row pass where the top keys share a huge dP (review, eighteenth session)",
          "[faults][reliability][tiled][score]") {
  // Keys 0 and 1 tie (dP = 1e35 each), key 2 (dP = 0) sits 0.0095 down with an ALiBi slope of
  // 1e-5 setting the near keys apart. The whole-row pass formed D = sum p dP unshifted, so
  // dP - D rounded to 0 on the tied keys: -5.239943e22 where the double core has -6.109055e22.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  c.bias.alibi_slope = 1e-5f;
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{0}, {0}, {-0.0095f}}),
               V = qktest::mat<float>({{1e35f}, {1e35f}, {0}}), dO = qktest::mat<float>({{1}});
  const auto p = qktest::additive_params(qktest::mat<float>({{1}, {0}}), qktest::mat<float>({{1}, {0}}), {1, 10},
                                         {0, 100});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-4, {1, 2, 3});
}

TEST_CASE("additive dL/dtau's exact differences take B_j - B_r from the keys in double (review, eighteenth session)",
          "[faults][reliability][tiled][score]") {
  // Keys -0.7669 and -0.7670 (and two near 0.76) at tau 7.3e-4, scale 6.93: the float
  // projections B = K W_k^T round at 6e-8, most of the near keys' difference, so the whole-row
  // pass (exact for the float B) gave dL/dtau 140.4311 where the double core has 140.5222
  // (6.5e-4 relative, 8 times the bar). With B_j - B_r from K and W_k in double: within 1e-6.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.00072553970082480615;
  c.scale = 6.93111;
  const Matrix Q = qktest::mat<float>({{0.290882319f}}),
               K = qktest::mat<float>({{-0.766929269f}, {0.759782076f}, {-0.761364281f}, {-0.76696831f}}),
               V = qktest::mat<float>({{-0.342432141f}, {1}, {-0.945716143f}, {1}}), dO = qktest::mat<float>({{-1}});
  const auto p = qktest::additive_params(qktest::mat<float>({{0.191893682f}}), qktest::mat<float>({{0.75624007f}}),
                                         {-1.22055674f}, {0.203803137f});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-6, {1, 2, 4});
}

TEST_CASE("additive dL/dtau's exact differences where t_j t_r rounds to 1/2 in float (review, eighteenth session)",
          "[faults][reliability][tiled][score]") {
  // x_r = 0.881372392, x_j = 0.881374776: t_j t_r is 0.5 + 2^-26, 0.5 in float. The saturated
  // form (c_j + c_r - c_j c_r) was chosen in double with c_j left 0 from the float test: the
  // difference 41 % off, dL/dtau 0.349155 where 0.596046238 (4.1 times the bar).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-3;
  const Matrix Q = qktest::mat<float>({{0}}), K = qktest::mat<float>({{0.881372392f}, {0.881374776f}, {-0.5f}}),
               V = qktest::mat<float>({{1}, {-1}, {0.3f}}), dO = qktest::mat<float>({{1}});
  const auto p = qktest::additive_params(qktest::mat<float>({{1}}), qktest::mat<float>({{1}}), {1}, {0});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-5, {1, 2, 3});
}
