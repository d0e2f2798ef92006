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
