// The one tolerance rule (core/reference/tolerance.hpp) and its Catch2 matcher
// (support/compare.hpp): the bar is 2x the naive error plus a floor, -inf must match -inf,
// NaN never passes, and the report names the first mismatching (i, j).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "reference/tolerance.hpp"
#include "support/compare.hpp"

using qkscope::MatrixD;
using qkscope::reference::compare;

namespace {
MatrixD m2x2(double a, double b, double c, double d) { return (MatrixD(2, 2) << a, b, c, d).finished(); }
}  // namespace

TEST_CASE("tolerance rule: at most twice the naive error plus a floor", "[tolerance]") {
  const MatrixD ref = m2x2(1, 2, 3, 4);
  const MatrixD naive = m2x2(1, 2, 3, 4.001);  // naive error 1e-3: bar 2e-3 + 5e-6
  const auto pass = compare("x", m2x2(1, 2, 3, 4.002), naive, ref);
  CHECK(pass.ok);
  CHECK(pass.tol == Approx(2e-3 + 1e-6 * 5));
  CHECK(pass.max_abs == Approx(2e-3));
  const auto fail = compare("x", m2x2(1, 2.0021, 3, 4), naive, ref);
  CHECK_FALSE(fail.ok);
  CHECK(fail.first_i == 0);
  CHECK(fail.first_j == 1);
  CHECK_THAT(fail.text, Catch::Contains("first mismatch at (0, 1)"));
  // With an exact naive result only the floor remains.
  CHECK_FALSE(compare("x", m2x2(1, 2, 3, 4.0001), ref, ref).ok);
  CHECK(compare("x", m2x2(1, 2, 3, 4.000001), ref, ref).ok);
}

TEST_CASE("tolerance rule: -inf must match exactly, NaN and shape mismatches never pass", "[tolerance]") {
  const double ninf = -std::numeric_limits<double>::infinity();
  const MatrixD ref = m2x2(1, ninf, 3, 4);
  CHECK(compare("x", ref, ref, ref).ok);
  CHECK_FALSE(compare("x", m2x2(1, -1e30, 3, 4), ref, ref).ok);
  CHECK_FALSE(compare("x", m2x2(1, ninf, std::nan(""), 4), ref, ref).ok);
  CHECK_FALSE(compare("x", MatrixD::Zero(2, 3), ref, ref).ok);
}

TEST_CASE("the Catch2 matcher applies the same rule to float paths", "[tolerance]") {
  const MatrixD ref = m2x2(1, 2, 3, 4);
  const qkscope::Matrix fast = ref.cast<float>();
  CHECK_THAT(fast, qktest::MatchesReference("x", fast, ref));
  const qkscope::Matrix off = (ref.array() + 0.01).matrix().cast<float>();
  CHECK_FALSE(qktest::MatchesReference("x", fast, ref).match(off));
}

TEST_CASE("tolerance rule: a float inf matches a reference within tol of rounding past FLT_MAX", "[tolerance]") {
  // A logsumexp of -3.4028235157957843e38 is within half an ulp of -FLT_MAX (float's overflow
  // point is FLT_MAX + 2^103 = 3.4028235677973366e38); a float path whose score rounded one
  // step larger gives -inf (fuzzer, 2026-12-06: tests/fuzz/fixed/neg-sq-logsumexp-...-a23).
  const float inf = std::numeric_limits<float>::infinity();
  const double near = -3.4028235157957843e38;
  MatrixD ref(1, 2), naive(1, 2);
  ref << near, 1;
  naive << near, 1;
  qkscope::Matrix fast(1, 2);
  fast << -inf, 1;
  // The floor alone (1e-6 (1 + 3.4e38)) reaches the overflow point: matches.
  CHECK(compare("lse", fast, naive, ref).ok);
  // The wrong sign, a double fast path (its own range), and a reference far from the edge do not.
  fast << inf, 1;
  CHECK_FALSE(compare("lse", fast, naive, ref).ok);
  MatrixD fast64(1, 2);
  fast64 << -std::numeric_limits<double>::infinity(), 1;
  CHECK_FALSE(compare("lse", fast64, naive, ref).ok);
  ref << -1e38, 1;
  naive << -1e38, 1;
  fast << -inf, 1;
  CHECK_FALSE(compare("lse", fast, naive, ref).ok);
  // A tol made large by another entry lets no small entry match inf (review): a visible row's
  // logsumexp of -5 is not -inf beside an entry of 1e45.
  MatrixD big(1, 2);
  big << 1e45, -5;
  qkscope::Matrix fast2(1, 2);
  fast2 << inf, -inf;
  CHECK_FALSE(compare("lse", fast2, big, big).ok);
  // The overflow point is FLT_MAX plus half an ulp: a reference just below it matches only
  // within the floor, which at 3.4e38 is far wider than an ulp.
  ref << 3.4028234663852886e38, 1;
  fast << inf, 1;
  CHECK(compare("lse", fast, ref, ref).ok);
}
