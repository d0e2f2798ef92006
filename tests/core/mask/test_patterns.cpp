// Sparse patterns (mask/patterns.hpp): window + global tokens as defined by Longformer,
// BigBird's seeded random keys (count per row, reproducibility, uniformity), alignment,
// use through attention_forward, and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "qkscope/mask/patterns.hpp"
#include "qkscope/qkscope.hpp"
#include "support/random.hpp"

using namespace qkscope;

TEST_CASE("window + global pattern: |i - j| <= w, or i < g, or j < g", "[mask][patterns]") {
  for (const Eigen::Index L : {1, 5, 16})
    for (const Eigen::Index w : {0, 1, 3})
      for (const Eigen::Index g : {0, 1, 2}) {
        SparsePattern p;
        p.window = w;
        p.global = g;
        const KeepMask k = sparse_pattern_mask(L, L, p);
        for (Eigen::Index i = 0; i < L; ++i)
          for (Eigen::Index j = 0; j < L; ++j) {
            INFO("L = " << L << ", w = " << w << ", g = " << g << ", (i, j) = (" << i << ", " << j << ")");
            CHECK(k(i, j) == (std::abs(i - j) <= w || i < g || j < g));
          }
      }
}

TEST_CASE("window follows the causal alignment's diagonal for L_q != L_k", "[mask][patterns]") {
  SparsePattern p;
  p.window = 1;
  p.alignment = CausalAlignment::bottom_right;
  const KeepMask k = sparse_pattern_mask(2, 5, p);  // offset 3: query 0 sits at key 3
  KeepMask want(2, 5);
  want << false, false, true, true, true,  //
      false, false, false, true, true;
  CHECK(k == want);
}

TEST_CASE("global queries are the first g positions under either alignment: a decoding query is not global",
          "[mask][patterns]") {
  // Bottom-right, L_q = 2, L_k = 5: queries 0, 1 sit at positions 3, 4. With g = 1 neither is
  // a global token (only position 0 is), so each sees its window (w = 1) and key 0.
  SparsePattern p;
  p.window = 1;
  p.global = 1;
  p.alignment = CausalAlignment::bottom_right;
  KeepMask want(2, 5);
  want << true, false, true, true, true,  //
      true, false, false, true, true;
  CHECK(sparse_pattern_mask(2, 5, p) == want);
  // L_q > L_k bottom-right: queries 0, 1 sit before key 0 (positions -2, -1), query 2 is
  // position 0, the global token, and sees every key.
  p.window = 0;
  KeepMask want2(4, 2);
  want2 << true, false,  //
      true, false,       //
      true, true,        //
      true, true;
  CHECK(sparse_pattern_mask(4, 2, p) == want2);
  // Top-left: query i sits at position i, as before.
  p.alignment = CausalAlignment::top_left;
  KeepMask want3(2, 5);
  want3 << true, true, true, true, true,  //
      true, true, true, false, false;
  p.window = 1;
  CHECK(sparse_pattern_mask(2, 5, p) == want3);
}

TEST_CASE("bottom-right suffixes of queries get the bottom rows of the square pattern, random keys included",
          "[mask][patterns]") {
  // KV-cache decoding: the last n queries against all L keys must see what they see in the
  // full (L, L) pattern, so a model decoded step by step attends like the one run at once.
  for (const Eigen::Index random : {0, 2})
    for (const Eigen::Index g : {0, 2}) {
      SparsePattern p;
      p.window = 1;
      p.global = g;
      p.random = random;
      p.seed = 9;
      p.alignment = CausalAlignment::bottom_right;
      const Eigen::Index L = 12;
      const KeepMask full = sparse_pattern_mask(L, L, p);
      for (const Eigen::Index n : {1, 3, 12}) {
        INFO("random " << random << ", global " << g << ", last " << n << " queries");
        CHECK(sparse_pattern_mask(n, L, p) == full.bottomRows(n));
      }
    }
}

TEST_CASE("random keys: r new keys per row (fewer when fewer are left), seeded and uniform", "[mask][patterns]") {
  SparsePattern base;
  base.window = 1;
  base.global = 1;
  const Eigen::Index L = 16;
  const KeepMask fixed = sparse_pattern_mask(L, L, base);
  SparsePattern p = base;
  p.random = 3;
  p.seed = 7;
  const KeepMask k = sparse_pattern_mask(L, L, p);
  for (Eigen::Index i = 0; i < L; ++i) {
    const Eigen::Index left = L - fixed.row(i).count();
    INFO("row " << i);
    CHECK(k.row(i).count() - fixed.row(i).count() == std::min<Eigen::Index>(3, left));
    for (Eigen::Index j = 0; j < L; ++j) CHECK((!fixed(i, j) || k(i, j)));  // a superset
  }
  CHECK(k == sparse_pattern_mask(L, L, p));
  p.seed = 8;
  CHECK(k != sparse_pattern_mask(L, L, p));
  // Uniformity: one row with 10 free keys (0 window, 0 global), 2 picks, 5000 seeds:
  // each key is picked with probability 1/5; the count's sd is sqrt(5000 * 0.2 * 0.8) = 28.
  SparsePattern u;
  u.random = 2;
  std::vector<int> hits(10, 0);
  for (std::uint64_t s = 0; s < 5000; ++s) {
    u.seed = s;
    const KeepMask row = sparse_pattern_mask(1, 10, u);
    for (Eigen::Index j = 0; j < 10; ++j) hits[j] += row(0, j);
  }
  for (Eigen::Index j = 0; j < 10; ++j) {
    INFO("key " << j << " picked " << hits[j] << " times of 5000");
    CHECK(std::abs(hits[j] - 1000) < 5 * 28);
  }
}

TEST_CASE("a BigBird pattern runs through attention_forward: every row has a visible key", "[mask][patterns]") {
  qkscope::detail::Rng rng(3);
  const Matrix Q = qktest::randn<float>(rng, 9, 4), K = qktest::randn<float>(rng, 9, 4), V = qktest::randn<float>(rng, 9, 2);
  SparsePattern p;
  p.window = 1;
  p.global = 1;
  p.random = 2;
  p.seed = 5;
  AttentionConfig<float> cfg;
  cfg.mask.keep = sparse_pattern_mask(9, 9, p);
  const auto r = attention_forward<float>(Q, K, V, {}, cfg);
  CHECK(r.output.allFinite());
  for (Eigen::Index i = 0; i < 9; ++i) {
    CHECK(r.weights.row(i).sum() == Approx(1.0));
    for (Eigen::Index j = 0; j < 9; ++j)
      if (!cfg.mask.keep(i, j)) CHECK(r.weights(i, j) == 0.f);
  }
}

TEST_CASE("sparse_pattern_mask rejects negative sizes, naming the field", "[mask][patterns][errors]") {
  using Catch::Matchers::Contains;
  SparsePattern p;
  p.window = -1;
  CHECK_THROWS_WITH(sparse_pattern_mask(3, 3, p), Contains("pattern.window must be >= 0, got -1"));
  p.window = 1;
  p.global = -2;
  CHECK_THROWS_WITH(sparse_pattern_mask(3, 3, p), Contains("pattern.global must be >= 0, got -2"));
  p.global = 0;
  p.random = -1;
  CHECK_THROWS_WITH(sparse_pattern_mask(3, 3, p), Contains("pattern.random must be >= 0, got -1"));
  CHECK_THROWS_AS(sparse_pattern_mask(-1, 3, {}), std::invalid_argument);
}
