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

TEST_CASE("reference key rule: tied, of about the smallest norm, nearest the mean; else none",
          "[faults][reliability][tiled][score]") {
  using cpu::detail::reference_row;
  // No two keys equal: no reference (dQ = dS K as before).
  CHECK(reference_row<float>(qktest::mat<float>({{1}, {2}, {3}})) == -1);
  // Tied small keys are taken; the tied huge ones never are.
  CHECK(reference_row<float>(qktest::mat<float>({{1}, {-1}, {1e20f}, {1e20f}, {1}})) == 0);
  CHECK(reference_row<float>(qktest::mat<float>({{1}, {-1}, {1e20f}, {1e20f}, {1e20f}})) == -1);
  // A zero key sets the smallest norm: only zero keys qualify (and cost nothing).
  CHECK(reference_row<float>(qktest::mat<float>({{0, 0}, {1, 1}, {1, 1}})) == -1);
  // Unit keys (cosine's rows): the tied group nearest the mean.
  CHECK(reference_row<float>(qktest::mat<float>({{0, 1}, {1, 0}, {1, 0}, {1, 0}, {0, 1}})) == 1);
  // A non-finite key never qualifies and does not poison the mean's winner.
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(reference_row<float>(qktest::mat<float>({{inf}, {2}, {2}})) == 1);
  CHECK(reference_row<float>(Matrix(0, 3)) == -1);
}
