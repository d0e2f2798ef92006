// Fuzzer findings (docs/RELIABILITY.md): the gradient of a relative-position or T5 table
// entry gathers dL/dz of every pair that reads it. The tiled backward summed those per key
// tile in double and then added the tiles; where two tied keys of one row carry dz of +-1e37
// in different tiles, another row's -0.18 was added to one of them first and rounded away
// (T5 entry 0 where -0.182689), and where every pair reads one entry, the sum that is 0 came
// out -43959. The sums now carry a compensation (detail/compensated_sum.hpp, Neumaier 1974).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/detail/compensated_sum.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"
#include "support/random.hpp"

using namespace qkscope;

TEST_CASE("compensated_add keeps what a cancelling pair would round away", "[tiled]") {
  double s = 0, c = 0;
  for (const double x : {1e37, -0.18, -1e37}) detail::compensated_add(s, c, x);
  CHECK(s + c == -0.18);
  s = c = 0;
  for (const double x : {-0.18, 1e37, -1e37, 2.5}) detail::compensated_add(s, c, x);
  CHECK(s + c == 2.32);
}

TEST_CASE("tiled T5 table gradient beside dz of +-1e37 on tied keys (fuzzer, sixth session)",
          "[faults][reliability][tiled]") {
  // neg_sq_euclidean, unidirectional T5 buckets: row 1 reads bucket 0 through keys 1 and 2
  // (tied at 0, dz = -+1.06e37), row 2 through key 2 alone (dz = -0.182689). The tiled path gave
  // dt5_table(0) = 0 at block_k 1 and 2.
  AttentionConfig<float> c;
  c.score = "neg_sq_euclidean";
  c.bias.t5 = T5Buckets{false, 9, 14};
  c.bias.t5_table = qktest::vec({0, -1.66153499e+35f, -3, 0, 0, 0, 0, 0, 0});
  const Matrix Q = qktest::mat<float>({{1}, {2.0548768f}, {-3}}), K = qktest::mat<float>({{0}, {0}, {0}}),
               V = qktest::mat<float>({{-3}, {0}, {4}}), dO = qktest::mat<float>({{0}, {1.0633824e+37f}, {-0.577696085f}});
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, attention_forward<double>(Qd, Kd, Vd, {}, cd),
                                              dO.cast<double>());
  REQUIRE(g64.dt5_table(0) == Approx(-0.182689).epsilon(1e-5));
  for (const Eigen::Index bk : {1, 2, 3}) {
    INFO("block_k " << bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, qktest::one_thread(bk));
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, qktest::one_thread(bk));
    CHECK(double(g.dt5_table(0)) == Approx(g64.dt5_table(0)).epsilon(1e-6));
    qktest::matches_under_harness_bar(Q, K, V, dO, {}, c, qktest::one_thread(bk));
  }
}

TEST_CASE("tiled relative table of one entry read by every pair: its gradient is 0 (fuzzer, fifth session)",
          "[faults][reliability][tiled]") {
  // dot at tau = 1e-4 over keys tied at 0, dO of 5e30: each row's dz add up to 0, and the tiled
  // path gave -43959.4 (the rows' dz of ~1e34 added per key tile first).
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = 1;
  c.temperature = 1e-4;
  c.bias.relative = qktest::vec({1});
  c.mask.keep = KeepMask(2, 3);
  c.mask.keep << true, true, true, true, true, false;
  const Matrix Q = qktest::mat<float>({{-0.0396874994f}, {0}}), K = qktest::mat<float>({{0}, {0}, {0}}),
               V = qktest::mat<float>({{3.96875f}, {0}, {-3}}), dO = qktest::mat<float>({{3.96875f}, {5.0706024e+30f}});
  for (const Eigen::Index bk : {1, 2, 3}) {
    INFO("block_k " << bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, qktest::one_thread(bk));
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, qktest::one_thread(bk));
    CHECK(std::abs(double(g.drelative(0))) <= 1e-6);
  }
}

TEST_CASE("core relative table: a row's dz kept beside another row's tied dz of +-8e34 (fuzzer, ninth session)",
          "[faults][reliability]") {
  // Additive, bottom-right alignment (offset -1), a keep mask: row 3 reads entry 2 through
  // keys 3 and 4 (tied, dO 1.66e35: dz = -+8.3e34), row 2 through key 2 (dz 0.2469), row 4
  // through key 4 (0.3592). The core added dz pair by pair in plain double, so row 2's share
  // was rounded away into -8.3e34 (0.359 in the float and the double core; the tiled path,
  // compensated, had it right). Right values: 60-digit evaluation of sum P (dP - D) per entry.
  AttentionConfig<float> c;
  c.score = "additive";
  c.mask.alignment = CausalAlignment::bottom_right;
  c.mask.keep = KeepMask(6, 5);
  c.mask.keep << 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1;
  c.bias.relative = qktest::vec({2.9333334f, 2.91648769f, 2.93334961f});
  ScoreParams<float> p;
  p.W_q = qktest::mat<float>({{0.547394395f}, {1.22957897f}});
  p.W_k = qktest::mat<float>({{-0.36100316f}, {-0.394597113f}});
  p.v = qktest::vec({4.59177481e-41f, 0.461165309f});
  p.b = qktest::vec({0, 0});
  const Matrix Q = qktest::mat<float>({{9.99999997e-07f}, {1.66153499e+29f}, {9.99999997e-07f}, {9.99999997e-07f},
                                       {-1.99999999e-06f}, {0}}),
               K = qktest::mat<float>({{0}, {0}, {-3.39677748e+32f}, {0}, {0}}),
               V = qktest::mat<float>({{0}, {0}, {1}, {1}, {3}}),
               dO = qktest::mat<float>({{1.66153499e+35f}, {1}, {1}, {1.66153499e+35f}, {1}, {1}});
  const double truth[3] = {-0.83778733634234892, 0.23176514487324132, 0.6060221914691076};
  const auto cd = qktest::config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, pd, cd, attention_forward<double>(Qd, Kd, Vd, pd, cd),
                                              dO.cast<double>());
  const auto g32 = attention_backward<float>(Q, K, V, p, c, attention_forward<float>(Q, K, V, p, c), dO);
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k, g64.drelative(k), g32.drelative(k));
    CHECK(std::abs(g64.drelative(k) - truth[k]) <= 1e-9 * std::abs(truth[k]));
    CHECK(std::abs(double(g32.drelative(k)) - truth[k]) <= 1e-6 * std::abs(truth[k]));
  }
  for (const Eigen::Index bk : {1, 2, 3}) {
    const auto t = cpu::attention_forward<float>(Q, K, V, p, c, qktest::one_thread(bk));
    const auto g = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, qktest::one_thread(bk));
    for (int k = 0; k < 3; ++k) {
      CAPTURE(bk, k, g.drelative(k));
      CHECK(std::abs(double(g.drelative(k)) - truth[k]) <= 1e-6 * std::abs(truth[k]));
    }
  }
}
