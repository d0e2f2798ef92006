// The dot family's reference key (cpu/scorers.hpp, reference_row): the tiled dQ may sum
// dS (k_j - k_ref) + R k_ref so that tied keys cancel exactly. A first version took k_ref
// from every key, nearest the mean: a huge key past key_length, causally hidden, or with
// P = 0 became the reference, and dQ was off by eps |k_ref| |dS| (reviewer, 2026-12-04: a
// padded key of 1e20 gave dQ off by 0.42 where the rule allows 1.5e-6). These cases pin the
// rule that replaced it: a reference must be tied and of about the smallest key norm.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "qkscope/cpu/attention.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;
using qktest::check_tiled_matches_reference;

namespace {

AttentionConfig<float> dot() {
  AttentionConfig<float> c;
  c.score = "dot";
  return c;
}

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

TEST_CASE("reference key rule: a tied, finite, non-zero key nearest the mean; else none",
          "[faults][reliability][tiled][score]") {
  using cpu::detail::reference_row;
  // No two keys equal: no reference (dQ = dS K as before).
  CHECK(reference_row<float>(qktest::mat<float>({{1}, {2}, {3}})) == -1);
  // Of two tied groups, the one nearest the mean (4e19 here): the keys of 1.
  CHECK(reference_row<float>(qktest::mat<float>({{1}, {-1}, {1e20f}, {1e20f}, {1}})) == 0);
  // Huge tied keys may be the reference (DotScorer then keeps the plain sum where the split's
  // bound is larger; the test case above checks dQ with them).
  CHECK(reference_row<float>(qktest::mat<float>({{1}, {-1}, {1e20f}, {1e20f}, {1e20f}})) == 2);
  // Tied zero keys would be a reference that changes nothing: none.
  CHECK(reference_row<float>(qktest::mat<float>({{0, 0}, {0, 0}, {1, 2}})) == -1);
  CHECK(reference_row<float>(qktest::mat<float>({{0, 0}, {1, 1}, {1, 1}})) == 1);
  // Unit keys (cosine's rows): the tied group nearest the mean, its lowest index.
  CHECK(reference_row<float>(qktest::mat<float>({{0, 1}, {1, 0}, {1, 0}, {1, 0}, {0, 1}})) == 1);
  // Ties are found wherever they sit (the keys are sorted, not compared with neighbours).
  CHECK(reference_row<float>(qktest::mat<float>({{3, 1}, {0, 2}, {5, 5}, {-1, 4}, {3, 1}})) == 0);
  // A non-finite key never qualifies, even when tied, and does not poison the mean's winner.
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(reference_row<float>(qktest::mat<float>({{inf}, {inf}, {2}, {2}})) == 2);
  CHECK(reference_row<float>(Matrix(0, 3)) == -1);
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
