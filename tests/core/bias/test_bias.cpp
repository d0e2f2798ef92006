// Biases and score modifiers: ALiBi slopes for any head count, ALiBi and
// relative-position values, softcap bounds, graph adjacency masks.
#include <catch2/catch.hpp>

#include <cmath>

#include "qkscope/qkscope.hpp"

using namespace qkscope;
using Catch::Matchers::WithinRel;
using Catch::Matchers::WithinAbs;

TEST_CASE("ALiBi slopes for 8 heads are 1/2, 1/4, ..., 1/256", "[bias][alibi]") {
  const auto s = alibi_slopes(8);
  REQUIRE(s.size() == 8);
  for (int h = 0; h < 8; ++h) CHECK_THAT(s[h], WithinRel(std::pow(2.0, -(h + 1)), 1e-12));
}

TEST_CASE("ALiBi slopes for a non-power-of-two head count interleave the next power's slopes", "[bias][alibi]") {
  // 12 heads: the 8-head slopes 2^-1..2^-8, then 16-head slopes 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
  // (every other one of 2^(-k/2)), as in the ALiBi reference code, BLOOM and MPT.
  const auto s = alibi_slopes(12);
  REQUIRE(s.size() == 12);
  for (int h = 0; h < 8; ++h) CHECK_THAT(s[h], WithinRel(std::pow(2.0, -(h + 1)), 1e-12));
  for (int t = 0; t < 4; ++t) CHECK_THAT(s[8 + t], WithinRel(std::pow(2.0, -(0.5 + t)), 1e-12));
  CHECK(alibi_slopes(1) == std::vector<double>{std::pow(2.0, -8.0)});
  CHECK(alibi_slopes(3).size() == 3);
  CHECK_THROWS_WITH(alibi_slopes(0), Catch::Contains("head count"));
}

TEST_CASE("ALiBi subtracts slope times distance from the (aligned) diagonal", "[bias][alibi]") {
  Matrix Q = Matrix::Zero(2, 2), K = Matrix::Zero(3, 2), V = Matrix::Zero(3, 1);
  AttentionConfig<float> cfg;
  cfg.bias.alibi_slope = 0.5;
  auto r = attention_forward<float>(Q, K, V, {}, cfg);
  CHECK(r.scores == (Matrix(2, 3) << 0, -0.5, -1, -0.5, 0, -0.5).finished());
  cfg.mask.alignment = CausalAlignment::bottom_right;  // diagonal shifted by L_k - L_q = 1
  r = attention_forward<float>(Q, K, V, {}, cfg);
  CHECK(r.scores == (Matrix(2, 3) << -0.5, 0, -0.5, -1, -0.5, 0).finished());
}

TEST_CASE("relative-position bias looks up r[clip(j - i, -R, R) + R]", "[bias]") {
  Matrix Q = Matrix::Zero(3, 1), K = Matrix::Zero(3, 1), V = Matrix::Zero(3, 1);
  AttentionConfig<float> cfg;
  cfg.bias.relative = (Vector(3) << -1, 0, 1).finished();  // R = 1
  const auto r = attention_forward<float>(Q, K, V, {}, cfg);
  CHECK(r.scores == (Matrix(3, 3) << 0, 1, 1, -1, 0, 1, -1, -1, 0).finished());
}

TEST_CASE("softcap bounds logits to (-c, c) and is near identity for small logits", "[bias]") {
  Matrix Q(1, 1), K(3, 1), V = Matrix::Identity(3, 3);
  Q << 1;
  K << 1000, 0.01f, -1000;
  AttentionConfig<float> cfg;
  cfg.score = "dot";
  cfg.bias.softcap = 30;
  const auto r = attention_forward<float>(Q, K, V, {}, cfg);
  CHECK_THAT(r.scores(0, 0), WithinAbs(30, 1e-4));
  CHECK_THAT(r.scores(0, 2), WithinAbs(-30, 1e-4));
  CHECK_THAT(r.scores(0, 1), WithinAbs(0.01, 1e-6));
}

TEST_CASE("graph adjacency: edges become a keep mask, isolated nodes are fully masked rows", "[bias][graph]") {
  const KeepMask m = adjacency_mask(3, 3, {{0, 1}, {1, 0}, {1, 2}}, /*self_loops=*/false);
  CHECK(m(0, 1));
  CHECK(m(1, 2));
  CHECK_FALSE(m(0, 0));
  CHECK(m.row(2).count() == 0);
  CHECK(adjacency_mask(3, 3, {}, true).diagonal().all());
  CHECK_THROWS_WITH(adjacency_mask(3, 3, {{0, 3}}, false), Catch::Contains("edge (0, 3)"));

  Matrix X = Matrix::Random(3, 2);
  AttentionConfig<float> cfg;
  cfg.mask.keep = m;
  const auto r = attention_forward<float>(X, X, X, {}, cfg);
  CHECK(r.weights(0, 1) == 1);
  CHECK(r.output.row(2).isZero(0));
}
