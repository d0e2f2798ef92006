// The fused additive scorer's small units (cpu/additive.hpp): a unit h whose projections are
// all within 1/2 of 0 takes tanh(a + b) itself, as the core does, instead of
// 1 - 2 / (e^{2a} e^{2b} + 1), whose absolute error (~1.3 eps) is many times the core's near
// 0. The fuzz campaigns of 2026-12-04 found that family in 6 of 10 findings: a small unit
// beside a saturated one, whose error estimate hid it in the call's test
// (fused_tanh_accurate). The bar of the cases is the fuzz harness's (docs/RELIABILITY.md,
// "The bar"; tests/fuzz/perturbed.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/additive_inputs.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/detail/rng.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

using qktest::matches_under_harness_bar;

/// The finding's parameters: d = 1, d_h = 2; unit 0 small, unit 1 saturated by its bias.
ScoreParams<float> finding_params() {
  ScoreParams<float> p;
  p.W_q = qktest::mat<float>({{-2.57226562f}, {0.41846779f}});
  p.W_k = qktest::mat<float>({{0.409409255f}, {-0.945893109f}});
  p.v = qktest::vec({0.697140574f, 0.863255978f});
  p.b = qktest::vec({0, -3.94665766f});
  return p;
}

}  // namespace

TEST_CASE("fused additive: a small unit's tanh(a + b) is accurate relative to |tanh(a + b)|",
          "[cpu][additive][faults]") {
  // Every pair of a grid over [-1/2, 1/2] (the small units' range) and of tiny arguments, in
  // the packet code the kernel uses (forward and backward), against tanh in double: the
  // error is relative to the result, as the core's is (the exp form's is ~1.3 eps absolute).
  using AP = cpu::detail::AddPack<float>;
  namespace ei = Eigen::internal;
  std::vector<float> a;
  for (int i = -64; i <= 64; ++i) a.push_back(float(i) / 128.f);
  for (const float x : {0.4999f, 1e-3f, 3e-5f, 1e-7f, 1e-20f, 1e-38f}) a.push_back(x), a.push_back(-x);
  while (a.size() % AP::size) a.push_back(0.25f);
  const double eps = std::numeric_limits<float>::epsilon();
  double worst = 0, worst_u = 0;
  float fwd[AP::size], t_out[AP::size], u_out[AP::size];
  const auto all = ei::ptrue(ei::pset1<AP::P>(0.f));
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a.size(); j += AP::size) {
      const auto x = ei::pset1<AP::P>(a[i]), y = ei::ploadu<AP::P>(&a[j]);
      ei::pstoreu(fwd, ei::pmul(ei::pset1<AP::P>(-2.f), AP::half_neg_tanh_direct(x, y)));
      AP::P u, t;
      AP::sech2_tanh(x, y, &all, u, t);
      ei::pstoreu(t_out, t);
      ei::pstoreu(u_out, u);
      for (int k = 0; k < AP::size; ++k) {
        const double exact = std::tanh(double(a[i]) + double(a[j + k]));
        CHECK(fwd[k] == t_out[k]);  // forward and backward: the same t
        worst = std::max(worst, std::abs(double(t_out[k]) - exact) / (eps * std::abs(exact) + 1e-300));
        worst_u = std::max(worst_u, std::abs(double(u_out[k]) - (1 - exact * exact)) / eps);
      }
    }
  INFO("max error over eps |tanh(a + b)|: " << worst << "; of 1 - t^2, over eps: " << worst_u);
  CHECK(worst <= 2.5);  // measured 2.35 (the float a + b's rounding included)
  CHECK(worst_u <= 1.5);  // measured 1.32
}

TEST_CASE("tiled additive: a small unit beside a saturated one takes tanh(a + b) itself (fuzzer, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/open/additive-dQ-near-zero-unit-tau1-2026-12-04: unit 0's arguments all within
  // 0.08 of 0, unit 1's bias -3.95. dQ was -1.05456 where it is -1.05449 (7.8 times the bar):
  // unit 1's estimate hid unit 0's fused error in the call's test. Its dL/dtau, 1.23 times the
  // bar (2.90813 against 2.9081), is the saturated unit's and stays open (docs/RELIABILITY.md).
  AttentionConfig<float> c;
  c.score = "additive";
  c.mask.keep = KeepMask::Constant(3, 5, true);
  c.mask.keep(0, 0) = false;
  const Matrix Q = qktest::mat<float>({{-0.0299999993f}, {-0.0299999993f}, {0}}),
               K = qktest::mat<float>({{0}, {0.0199996848f}, {-0.0387479141f}, {0}, {0}}),
               V = qktest::mat<float>({{1}, {1}, {-3.99999952f}, {1}, {1}}),
               dO = qktest::mat<float>({{-243}, {0}, {0}});
  const auto p = finding_params();
  for (const Eigen::Index bq : {1, 2, 64})
    for (const Eigen::Index bk : {1, 2, 64}) {
      CAPTURE(bq, bk);
      cpu::TiledOptions o;
      o.threads = 1;
      o.block_q = bq;
      o.block_k = bk;
      matches_under_harness_bar(Q, K, V, dO, p, c, o, {.dtau = false});
    }
  const auto g = cpu::attention_backward<float>(Q, K, V, p, c, cpu::attention_forward<float>(Q, K, V, p, c), dO);
  CHECK(g.dQ(0, 0) == Approx(-1.05449).epsilon(1e-5));
}

TEST_CASE("tiled additive: dL/dtau where a small unit sits beside one saturated by its bias (fuzzer, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/additive-dtau-saturated-bias-2026-12-04: unit 1's arguments within 0.02
  // of 0 beside unit 0's bias 2.05 at tau = 0.0328: dL/dtau -1.11095 where it is -1.11097
  // (1.10 times the bar), the fused error of unit 1 hidden by unit 0's estimate.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.032780651;
  ScoreParams<float> p;
  p.W_q = qktest::mat<float>({{0.533803344f}, {0.229368061f}});
  p.W_k = qktest::mat<float>({{0.139521673f}, {1}});
  p.v = qktest::vec({1.021402f, 0.859329104f});
  p.b = qktest::vec({2.05490208f, 0});
  const Matrix Q = qktest::mat<float>({{0.00999999978f}}),
               K = qktest::mat<float>({{0.0199999996f}, {-0.00601347908f}, {0}}),
               V = qktest::mat<float>({{1}, {1}, {2}}), dO = qktest::mat<float>({{-0.601347923f}});
  for (const Eigen::Index bk : {1, 2, 64}) {
    cpu::TiledOptions o;
    o.threads = 1;
    o.block_k = bk;
    matches_under_harness_bar(Q, K, V, dO, p, c, o);
  }
  const auto g = cpu::attention_backward<float>(Q, K, V, p, c, cpu::attention_forward<float>(Q, K, V, p, c), dO);
  CHECK(g.dtemperature == Approx(-1.11097).epsilon(1e-5));
}

TEST_CASE("tiled additive: seeded shapes whose units are all small match the reference",
          "[faults][reliability][tiled][score]") {
  // Every unit small (every projection within 1/2): the small units' form end to end, where the
  // exp form's error passed the core's at small tau and calls took the direct tanh. Tied keys,
  // d_h across the packet widths (scalar remainders of h), tau from 0.1 to 1. Not dL/dtau: on
  // shape 9 (tau = 0.21) it is 1.45 times the bar, bit for bit as the call-wide direct tanh gave
  // before this form; below tau = 0.1 dK, dv and db join it on ~1 % of shapes, as before
  // (docs/RELIABILITY.md, "Open"). Nor dW_q, dW_k: on shape 9 dW_k is 1.14 times the bar, bit
  // for bit as before this session's changes (the shared check added them).
  detail::Rng rng(20261205);
  int fused = 0;
  for (int n = 0; n < 120; ++n) {
    const Eigen::Index L_q = 1 + Eigen::Index(rng.uniform() * 6), L_k = 1 + Eigen::Index(rng.uniform() * 9),
                       d = 1 + Eigen::Index(rng.uniform() * 3), d_h = 1 + Eigen::Index(rng.uniform() * 19);
    AttentionConfig<float> c;
    c.score = "additive";
    c.temperature = std::pow(10.0, -rng.uniform());
    c.mask.causal = rng.uniform() < 0.25;
    ScoreParams<float> p;
    p.W_q = qktest::randn<float>(rng, d_h, d);
    p.W_k = qktest::randn<float>(rng, d_h, d);
    p.v = qktest::randn_vec<float>(rng, d_h);
    p.W_q *= 0.05f;
    p.W_k *= 0.05f;
    p.b = qktest::randn_vec<float>(rng, d_h, 0.1);
    const Matrix Q = qktest::randn<float>(rng, L_q, d, 0.5);
    Matrix K = qktest::randn<float>(rng, L_k, d, 0.5);
    if (L_k > 2 && rng.uniform() < 0.5) K.row(L_k - 1) = K.row(0);
    const Matrix V = qktest::randn<float>(rng, L_k, 2), dO = qktest::randn<float>(rng, L_q, 2, 10);
    cpu::TiledOptions o;
    o.threads = 1;
    o.block_q = 1 + Eigen::Index(rng.uniform() * 3);
    o.block_k = 1 + Eigen::Index(rng.uniform() * 5);
    CAPTURE(n, L_q, L_k, d, d_h, c.temperature, c.mask.causal, o.block_q, o.block_k);
    // The fused form with small units, in both passes (not the call-wide direct tanh).
    const auto form = score::Additive::prepare<float>(Q, K, p);
    for (const double gain : {1 / c.temperature, std::numeric_limits<double>::infinity()}) {
      cpu::detail::AdditiveInputs<float> in;
      const auto sc = in.prepare(form, gain, 1 / c.temperature);
      if (sc.EA) REQUIRE(sc.XU != nullptr);  // a fused call: its small units marked
      fused += sc.EA != nullptr;
    }
    matches_under_harness_bar(Q, K, V, dO, p, c, o, {.dtau = false, .weights = false});
  }
  CHECK(fused > 0);
}
