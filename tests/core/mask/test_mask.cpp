// Mask semantics: one polarity (true = may attend), causal alignments for
// L_q != L_k both ways, sliding windows, key padding, AND-combination.
#include <catch2/catch.hpp>

#include "qkscope/qkscope.hpp"

using namespace qkscope;

namespace {
KeepMask resolve(const MaskSpec& s, Eigen::Index L_q, Eigen::Index L_k) {
  return dense_mask(resolve_mask(s, L_q, L_k));
}
KeepMask from(std::initializer_list<std::initializer_list<int>> rows) {
  KeepMask m(rows.size(), rows.begin()->size());
  int i = 0;
  for (auto& r : rows) {
    int j = 0;
    for (int x : r) m(i, j++) = x != 0;
    ++i;
  }
  return m;
}
}  // namespace

TEST_CASE("causal top-left with L_q < L_k: query i sees keys 0..i", "[mask]") {
  MaskSpec s;
  s.causal = true;
  CHECK(resolve(s, 2, 4) == from({{1, 0, 0, 0}, {1, 1, 0, 0}}));
}

TEST_CASE("causal bottom-right with L_q < L_k: the last query sees every key (KV-cache decoding)", "[mask]") {
  MaskSpec s;
  s.causal = true;
  s.alignment = CausalAlignment::bottom_right;
  CHECK(resolve(s, 2, 4) == from({{1, 1, 1, 0}, {1, 1, 1, 1}}));
}

TEST_CASE("causal bottom-right with L_q > L_k: the first queries see no key", "[mask]") {
  MaskSpec s;
  s.causal = true;
  s.alignment = CausalAlignment::bottom_right;
  CHECK(resolve(s, 4, 2) == from({{0, 0}, {0, 0}, {1, 0}, {1, 1}}));
  s.alignment = CausalAlignment::top_left;
  CHECK(resolve(s, 4, 2) == from({{1, 0}, {1, 1}, {1, 1}, {1, 1}}));
}

TEST_CASE("sliding window keeps a band around the diagonal", "[mask]") {
  MaskSpec s;
  s.window_left = 1;
  s.window_right = 0;
  CHECK(resolve(s, 4, 4) == from({{1, 0, 0, 0}, {1, 1, 0, 0}, {0, 1, 1, 0}, {0, 0, 1, 1}}));
  s.window_right = 1;
  CHECK(resolve(s, 3, 3) == from({{1, 1, 0}, {1, 1, 1}, {0, 1, 1}}));
}

TEST_CASE("key padding masks key columns, and parts combine by AND", "[mask]") {
  MaskSpec s;
  s.key_length = 2;
  CHECK(resolve(s, 3, 3) == from({{1, 1, 0}, {1, 1, 0}, {1, 1, 0}}));
  s.causal = true;
  s.keep = from({{1, 1, 1}, {0, 1, 1}, {1, 1, 1}});
  CHECK(resolve(s, 3, 3) == from({{1, 0, 0}, {0, 1, 0}, {1, 1, 0}}));
}

TEST_CASE("masked keys get exactly zero weight and -inf masked scores", "[mask]") {
  Matrix Q = Matrix::Random(3, 4), K = Matrix::Random(5, 4), V = Matrix::Random(5, 2);
  AttentionConfig<float> cfg;
  cfg.mask.key_length = 3;
  const auto r = attention_forward<float>(Q, K, V, {}, cfg);
  CHECK(r.weights.rightCols(2).isZero(0));
  CHECK((r.masked_scores.rightCols(2).array() == -std::numeric_limits<float>::infinity()).all());
  CHECK(r.scores.allFinite());  // the unmasked logits stay visible for the tutorial
}

TEST_CASE("fully masked row: zero weights, zero output, zero gradient, logsumexp -inf, entropy 0", "[mask]") {
  Matrix Q = Matrix::Random(2, 3), K = Matrix::Random(4, 3), V = Matrix::Random(4, 2);
  AttentionConfig<float> cfg;
  cfg.mask.key_length = 0;
  const auto r = attention_forward<float>(Q, K, V, {}, cfg);
  CHECK(r.weights.isZero(0));
  CHECK(r.output.isZero(0));
  CHECK((r.logsumexp.array() == -std::numeric_limits<float>::infinity()).all());
  CHECK(r.entropy.isZero(0));
  CHECK(r.max_weight.isZero(0));
  const auto g = attention_backward<float>(Q, K, V, {}, cfg, r, Matrix::Ones(2, 2));
  CHECK(g.dQ.isZero(0));
  CHECK(g.dK.isZero(0));
  CHECK(g.dV.isZero(0));
  CHECK(g.dtemperature == 0);
}
