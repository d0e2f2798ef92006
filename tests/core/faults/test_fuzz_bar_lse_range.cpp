// The fuzz harness's logsumexp past float's range (tests/fuzz/lse_range.hpp; docs/RELIABILITY.md,
// "The bar", changed in the twenty-fifth session). Such an entry used to be +-inf for the
// float paths to match exactly; it still is where every run on moved inputs is past the range
// on the same side, and is held to the bar's own rule where the runs disagree: there the logit
// is ill-conditioned past float (fuzzer input `dot-logsumexp-tau1e-40-twentythird-2026-12-07-w6`:
// the double core's 1.9e63, every float path's 0).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "../../fuzz/lse_range.hpp"
#include "faults/harness_bar.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/convert.hpp"

using namespace qkscope;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

VectorD vecd(std::initializer_list<double> x) {
  VectorD v(Eigen::Index(x.size()));
  Eigen::Index i = 0;
  for (const double y : x) v(i++) = y;
  return v;
}

Vector vecf(std::initializer_list<float> x) {
  Vector v(Eigen::Index(x.size()));
  Eigen::Index i = 0;
  for (const float y : x) v(i++) = y;
  return v;
}

}  // namespace

TEST_CASE("lse past float: robust overflow stays +-inf, FLT_MAX just past the range",
          "[faults][reliability][fuzz]") {
  const VectorD ref = vecd({1e40, -1e40, 3.4028235e38 * (1 + 1e-9), 2.0});
  const VectorD m1 = vecd({2e40, -5e39, 3.5e38, 2.0}), m2 = vecd({kInf, -kInf, 3.41e38, 2.0});
  const std::vector<const VectorD*> moved{&m1, &m2};
  const VectorD out = qkfuzz::lse_in_float(ref, vecf({0, 0, 0, 2}), moved);
  CHECK(out(0) == kInf);  // every run past the range above: a float 0 must not match
  CHECK(out(1) == -kInf);
  CHECK(out(2) == double(std::numeric_limits<float>::max()));  // under FLT_MAX + ulp / 2
  CHECK(out(3) == 2.0);  // entries in range untouched
}

TEST_CASE("lse past float: runs that disagree hold the entry to the bar's reach",
          "[faults][reliability][fuzz]") {
  // ref 1e45 (past float above); the runs: -9.9e46 (past the range below) and 3 (in range):
  // reach 1e47.
  const VectorD ref = vecd({1e45, 1e45, 1e45});
  const VectorD m1 = vecd({-9.9e46, -9.9e46, -9.9e46}), m2 = vecd({3, 3, 3});
  const float finf = std::numeric_limits<float>::infinity();
  const VectorD out = qkfuzz::lse_in_float(ref, vecf({0, finf, -finf}), {&m1, &m2});
  CHECK(out(0) == 0.0);    // within the reach: matches
  CHECK(out(1) == kInf);   // +inf: the clamped reference itself
  CHECK(out(2) == -kInf);  // -inf: a run lies past the range below
  // One run in range on the same side (1e38): reach 3e45 - 1e38, under |0 - 3e45|.
  const VectorD r3 = vecd({3e45, 3e45}), m3 = vecd({double(1e38f), double(1e38f)});
  const VectorD o3 = qkfuzz::lse_in_float(r3, vecf({0, 1e38f}), {&m3});
  CHECK(o3(0) == kInf);              // 0 is out of reach: stays clamped, the comparison fails
  CHECK(o3(1) == double(1e38f));     // the run's own value is within reach
  // No run past the range below: -inf stays a mismatch (clamped +inf).
  CHECK(qkfuzz::lse_in_float(r3, vecf({-finf, 0}), {&m3})(0) == kInf);
}

TEST_CASE("lse past float: the fuzzer's ill-conditioned dot logit (-w6, twenty-third session)",
          "[faults][reliability][fuzz][tiled]") {
  // q.k sums terms of 1.06e35 that cancel to -1.934e23; at scale -1 and tau 1e-40 the double
  // core's logsumexp is 1.934e63, past float. Float sums the terms to 0 (1.9e23 is under an ulp
  // of 1e35), so the float core and the tiled path both give 0; the runs on inputs moved by
  // one rounding reach 1.3e68 above and -inf below (the harness's runs, as it makes them).
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 9.9999999999999993e-41;
  c.scale = -1.0f;
  const Matrix Q = qktest::mat<float>({{-4.83570317e+22f, -0.0117647052f, -0.0117144603f, 1.06338237e+35f, 1.06338237e+35f}}),
               K = qktest::mat<float>({{3.99951172f, 0, 1, 1, -1}}), V = qktest::mat<float>({{0, 0, 0}}),
               dO = qktest::mat<float>({{0, -2.93873588e-39f, -3.9375f}});
  const ScoreParams<float> p;
  const AttentionConfig<double> cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto ref = reference::attention<double>(Qd, Kd, Vd, p.cast<double>(), cd);
  REQUIRE(ref.logsumexp(0) > 1e63);
  const auto core = attention_forward<float>(Q, K, V, p, c);
  const auto tiled = cpu::attention_forward<float>(Q, K, V, p, c, qktest::one_thread());
  CHECK(core.logsumexp(0) == 0.0f);
  CHECK(tiled.logsumexp(0) == 0.0f);
  auto prs = qkfuzz::perturbed_references(Qd, Kd, Vd, dO.cast<double>(), p.cast<double>(), cd, Q, K, V, dO, p, c);
  std::vector<const VectorD*> moved;
  double lo = kInf, hi = -kInf;
  for (const auto& e : prs)
    if (e.ok) {
      moved.push_back(&e.fwd.logsumexp);
      lo = std::min(lo, e.fwd.logsumexp(0));
      hi = std::max(hi, e.fwd.logsumexp(0));
    }
  CAPTURE(lo, hi);
  CHECK(lo < double(std::numeric_limits<float>::max()));  // not every run overflows above
  CHECK(hi > 1e66);
  CHECK(qkfuzz::lse_in_float(ref.logsumexp, tiled.logsumexp, moved)(0) == 0.0);
  // A tiled -inf would match too (a run lies past the range below), where the old rule's +inf
  // would not. (A tiled +inf matches the clamped reference under either rule: no test there.)
  Vector down = tiled.logsumexp;
  down(0) = -std::numeric_limits<float>::infinity();
  CHECK(qkfuzz::lse_in_float(ref.logsumexp, down, moved)(0) == -kInf);
}
