// The dot family's tiled dQ where keys tie (cpu/scorers.hpp, DotScorer; score/tied_keys.hpp,
// tied_groups): each entry is the plain sum dS K or the sum about a tied reference key,
// dS (K - k_ref) + R k_ref, whichever has the smaller rounding bound, with the reference per
// query row the tied group that carries the row's sum |dS|. Earlier rules, each broken by a
// reviewer (2026-12-04): a reference from every key, nearest the mean (a padded key of 1e20
// made dQ 0.42 off where the rule allows 1.5e-6); only tied keys of about the smallest norm,
// the split always (17 times the bar where the tied group has P ~ 0); one reference per call
// (5,893 times the bar with two tied groups); one per query tile (5,890 times the bar with
// rows of one tile leaning on different groups). Each case below fails under one of them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/cpu/attention.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;
using qktest::check_tiled_matches_reference;

namespace {

AttentionConfig<float> dot() { return qktest::score_config("dot"); }

}  // namespace

TEST_CASE("tiled dot: huge keys past key_length, causally hidden or never attended leave dQ exact (review, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  const Matrix Q = qktest::mat<float>({{1}});
  const Matrix dO = qktest::mat<float>({{1}});
  for (const float H : {1e6f, 1e20f}) {
    CAPTURE(H);
    // Three tied keys of H past key_length = 2: they are tied (the old rule's reference)
    // but far from the keys the row sees.
    const Matrix K = qktest::mat<float>({{1}, {-1}, {H}, {H}, {H}});
    const Matrix V = qktest::mat<float>({{1}, {-1}, {0}, {0}, {0}});
    auto padded = dot();
    padded.mask.key_length = 2;
    check_tiled_matches_reference(Q, K, V, dO, padded);
  }
  // Causal: query 0 sees key 0 only; later queries see the tied huge keys.
  const Matrix Qc = qktest::mat<float>({{1}, {0.5f}, {-0.25f}});
  const Matrix Kc = qktest::mat<float>({{1}, {-1}, {1e4f}, {1e4f}, {1e4f}});
  const Matrix Vc = qktest::mat<float>({{1}, {-1}, {0.5f}, {2}, {0}});
  const Matrix dOc = qktest::mat<float>({{1}, {-1}, {0.5f}});
  auto causal = dot();
  causal.mask.causal = true;
  causal.temperature = 1e3;  // keeps the logits 1e4 / 1e3 in range for every row
  check_tiled_matches_reference(Qc, Kc, Vc, dOc, causal);
  // No mask: tied keys of -1e3 get P = 0 beside 1 and -1.
  const Matrix Kn = qktest::mat<float>({{-1e3f}, {-1e3f}, {-1e3f}, {1}, {-1}});
  const Matrix Vn = qktest::mat<float>({{0}, {0}, {0}, {1}, {-1}});
  check_tiled_matches_reference(Q, Kn, Vn, dO, dot());
}

TEST_CASE("tied key groups: finite, non-zero keys equal to another, by their lowest index",
          "[faults][reliability][tiled][score]") {
  using score::tied_groups;
  using G = std::vector<Eigen::Index>;
  // No two keys equal: no groups (dQ = dS K as before).
  CHECK(tied_groups<float>(qktest::mat<float>({{1}, {2}, {3}})).empty());
  CHECK(tied_groups<float>(qktest::mat<float>({{1}, {-1}, {1e20f}, {1e20f}, {1}})) == G{0, -1, 2, 2, 0});
  // Tied zero keys would be a reference that changes nothing; -0 ties 0.
  CHECK(tied_groups<float>(qktest::mat<float>({{0, 0}, {0, 0}, {1, 2}})).empty());
  CHECK(tied_groups<float>(qktest::mat<float>({{-0.f, 1}, {0, 1}, {1, 2}})) == G{0, 0, -1});
  CHECK(tied_groups<float>(qktest::mat<float>({{3, 1}, {0, 2}, {5, 5}, {-1, 4}, {3, 1}})) == G{0, -1, -1, -1, 0});
  // A key with a non-finite entry is never in a group, even when tied.
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(tied_groups<float>(qktest::mat<float>({{inf}, {inf}, {2}, {2}})) == G{-1, -1, 2, 2});
  CHECK(tied_groups<float>(Matrix(0, 3)).empty());
  // Keys that differ only in the signs of their entries (+-1): a hash that folded whole words
  // without mixing them left these in neighbouring slots, and the probing took seconds here.
  Matrix S(16384, 16);
  for (Eigen::Index j = 0; j < S.rows(); ++j)
    for (Eigen::Index c = 0; c < S.cols(); ++c) S(j, c) = (j >> c) & 1 ? -1.f : 1.f;
  CHECK(tied_groups<float>(S).empty());
  S.row(9000) = S.row(7);
  const auto g = tied_groups<float>(S);
  REQUIRE(g.size() == 16384);
  CHECK(g[7] == 7);
  CHECK(g[9000] == 7);
  CHECK(std::count(g.begin(), g.end(), -1) == 16382);
}

TEST_CASE("tiled dot: a tied group at P ~ 0 beside attended keys whose dS cancel keeps dQ exact per entry (review, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // The tied keys [1, 0] have P ~ e^-10 while keys 3 and 4 take the row, with large dS of
  // opposite signs. Summed about k_ref, dQ's coordinate 0 carried eps |dS| |k_ref,0| (0.4999390
  // where the reference is 0.4999659: 17 times the rule's bar); the plain sum is nearly exact
  // there, because the attended keys are near 0 in that coordinate.
  const Matrix Q = qktest::mat<float>({{0, 10}});
  const Matrix K = qktest::mat<float>({{1, 0}, {1, 0}, {1, 0}, {0.001234f, 1}, {0.000234f, 1}});
  const Matrix V = qktest::mat<float>({{0}, {0}, {0}, {1}, {-1}});
  const Matrix dO = qktest::mat<float>({{1000}});
  check_tiled_matches_reference(Q, K, V, dO, dot());
  // The same where the tied group carries the row (the case the reference exists for): the
  // query leans on the tied keys, so their large dS must still cancel exactly.
  const Matrix Qt = qktest::mat<float>({{10, 0}});
  check_tiled_matches_reference(Qt, K, V, dO, dot());
  // Four tied keys take the last row (P = 1/4 each) at tau = 0.0094566: dQ is 0 (the untied key
  // has P ~ 1e-63), while the plain sum of dS of size 1e4 left 1.2e-4 (the sweep's case 149).
  const Matrix K4 = qktest::mat<float>({{0.000285642309f}, {0.285642296f}, {0.285642296f}, {0.285642296f}, {0.285642296f}});
  const Matrix V4 = qktest::mat<float>({{-1.13814545f, -0.422376633f}, {-0.337785512f, -1.57829928f},
                                        {0.39231804f, 1.11992085f}, {0.889033258f, 0.121189632f},
                                        {1.18911588f, -0.736646235f}});
  auto cool = dot();
  cool.temperature = 0.0094566019916615725;
  for (const auto block_k : {1, 2, 3}) {
    auto o = qktest::one_thread_small_tiles();
    o.block_k = block_k;
    check_tiled_matches_reference(qktest::mat<float>({{-13.3228598f}, {-9.98035049f}, {4.75336981f}}), K4, V4,
                                  qktest::mat<float>({{30.850523f, 171.602203f}, {63.9910927f, 140.15419f}, {-146.62706f, 9.67424583f}}),
                                  cool, o);
  }
}

TEST_CASE("tiled dot: with two tied groups, the one carrying the row is the reference (review, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // Cosine at tau = 1e-4: the query leans on the four keys [1, 0]; the three keys [0.3, 0.5]
  // sit nearer the mean of the keys. A reference fixed per call (nearest the mean) left dQ
  // [-0.00118, 0.00589] where it is 0 (5,893 times the rule's bar); the group that carries the
  // tile's sum |dS| cancels exactly.
  auto c = dot();
  c.score = "cosine";
  c.temperature = 1e-4;
  const Matrix Q = qktest::mat<float>({{1, 0.2f}});
  const Matrix K = qktest::mat<float>(
      {{1, 0}, {1, 0}, {1, 0}, {1, 0}, {0.3f, 0.5f}, {0.3f, 0.5f}, {0.3f, 0.5f}, {0.25f, 0.4f}, {0.35f, 0.45f}, {0.2f, 0.6f}});
  const Matrix V = qktest::mat<float>(
      {{-0.14341f}, {-1.871403f}, {-1.131296f}, {1.556167f}, {1.044668f}, {-1.113703f}, {2.476016f}, {-0.374286f}, {-1.219731f}, {-0.139622f}});
  check_tiled_matches_reference(Q, K, V, qktest::mat<float>({{300}}), c);
}

TEST_CASE("tiled dot: rows of one query tile leaning on different tied groups each cancel their own (review, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // Cosine at tau = 1e-4 with two tied groups, [1, 0] x 4 and [0.3, 0.5] x 3, the other keys
  // far from both: a query leaning on either has dQ 0 (its P all on one group). One reference
  // per query tile (the group carrying most of the tile's sum |dS|) left the other group's
  // rows the plain sum: at the default block_q = 64 (block_k 2) query 0 got dQ
  // [-0.00118, 0.00589] where it is 0 (5,890 times the rule's bar: the float core is exact
  // here; at block_k 256 that plain sum happens to cancel). The reference is per row now.
  // The bar is the float core's (as every case here); the fuzz harness's (the farthest of
  // the core and of runs on inputs within rounding, which untie the keys) is never below it.
  auto c = dot();
  c.score = "cosine";
  c.temperature = 1e-4;
  const Matrix K = qktest::mat<float>(
      {{1, 0}, {1, 0}, {1, 0}, {1, 0}, {0.3f, 0.5f}, {0.3f, 0.5f}, {0.3f, 0.5f}, {-0.8f, 0.3f}, {0.9f, -0.7f}, {-0.2f, -1}});
  const Matrix V = qktest::mat<float>(
      {{-0.14341f}, {-1.871403f}, {-1.131296f}, {1.556167f}, {1.044668f}, {-1.113703f}, {2.476016f}, {-0.374286f}, {-1.219731f}, {-0.139622f}});
  for (const Eigen::Index block_k : {2, 256}) {  // block_q 64 (the default), block_k 256 the default
    CAPTURE(block_k);
    cpu::TiledOptions o;
    o.threads = 1;
    o.block_k = block_k;
    check_tiled_matches_reference(qktest::mat<float>({{1, 0.2f}, {0.25f, 0.5f}}), K, V,
                                  qktest::mat<float>({{300}, {300}}), c, o);
  }
  // Rows of both groups interleaved in query tiles of 5 (and one row on the untied key 7,
  // which no tied group carries: the plain sum): the tile's majority group left the others'
  // rows 0.179 off (7.6 times the bar).
  for (const char* rows : {"BABAABUBBAAB", "AAAABBBBBUUA"}) {
    Matrix Q(12, 2);
    for (Eigen::Index i = 0; i < Q.rows(); ++i) {
      if (rows[i] == 'A') Q.row(i) << 1, 0.2f;
      else if (rows[i] == 'B') Q.row(i) << 0.25f, 0.5f;
      else Q.row(i) << -0.8f, 0.3f;
    }
    for (const Eigen::Index block_k : {2, 256}) {
      CAPTURE(rows, block_k);
      cpu::TiledOptions o;
      o.threads = 2;
      o.block_q = 5;
      o.block_k = block_k;
      check_tiled_matches_reference(Q, K, V, Matrix::Constant(12, 1, 300), c, o);
    }
  }
}

TEST_CASE("tiled dot: the split only where the row's dS add up to R (fuzzer finding, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // Keys -3 and -3 tie beside 1; query 1 puts P = 1.0f on key 1, whose dS rounds to 0 while
  // the tied keys' dS (P ~ 1e-16 times dP ~ 1e34) do not. The split's bound was 0 (the tied
  // terms vanish, key 1's dS is 0), so it was taken and gave dQ 0 where it is -2.78e19.
  const Matrix Q = qktest::mat<float>({{4}, {3.96875f}, {4}, {3.99997044f}, {1}, {1}, {1}});
  const Matrix K = qktest::mat<float>({{-3}, {1}, {-3}});
  const Matrix V = qktest::mat<float>({{0, 0, 0}, {0, 0, 2.59614843e33f}, {3.99951172f, 0, 1}});
  const Matrix dO = qktest::mat<float>({{1, -1, 0}, {0, 0, 0}, {0, 0, 3.99215603f}, {3.84398699f, 0, 0},
                                        {-4, 0, -2.93873588e-39f}, {-3.9375f, 3.99951172f, -3.86715698f}, {0, 0, 0}});
  auto c = dot();
  c.temperature = 0.106524862;
  c.mask.causal = true;
  c.mask.key_length = 3;
  for (const auto block_k : {1, 2, 3}) {
    auto o = qktest::one_thread_small_tiles();
    o.block_k = block_k;
    check_tiled_matches_reference(Q, K, V, dO, c, o);
  }
}
