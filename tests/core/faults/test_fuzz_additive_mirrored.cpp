// The fused additive tanh mirrored about 0 (cpu/additive_pack.hpp, AddPack::half_neg_tanh):
// -tanh(a + b) / 2 was q - 1/2 with q = 1 / (p + 1), p = e^{2a} e^{2b}; near t = -1, q is near 1
// and its relative rounding left ~2 ulp of t (up to 3), where near t = +1 the same form keeps
// half an ulp. Below 0 it is now 1/2 - p q, whose p q = (1 + t) / 2 is small and keeps its own
// digits; the backward's t = 1 - r likewise became p r - 1 there. At small tau, 1 / tau
// multiplies that error into the logits: campaigns' open inputs (one query over a
// few keys, units near t = -1) were 1.2-1.5 times the fuzz harness's bar. Their right values
// below are 60-digit mpmath evaluations of the definition (Bahdanau et al. 2015, A.1.2; the
// gradients by mpmath's numerical differentiation at that precision), which the double core
// matches.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/additive.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/detail/rng.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

using namespace qkscope;
using qktest::matches_under_harness_bar;

TEST_CASE("fused additive tanh: as accurate near t = -1 as near t = +1, forward and backward alike",
          "[cpu][additive][faults]") {
  // A grid of arguments over [-6, 6] (every |t| >= 0.5 of it), the exponentials from the
  // kernel's own exp_packets, in the packet and scalar code the kernel runs, against tanh in
  // double; errors in ulp of t (2^-24 for |t| in [0.5, 1)).
  using AP = cpu::detail::AddPack<float>;
  namespace ei = Eigen::internal;
  constexpr int n = 97;
  Matrix X(1, n * AP::size);
  for (Eigen::Index i = 0; i < X.size(); ++i) X(0, i) = -6.f + 12.f * float(i) / float(X.size() - 1);
  const Matrix E = cpu::detail::exp_packets(X);
  double worst_neg = 0, worst_pos = 0;
  float fwd[AP::size], t_out[AP::size];
  for (Eigen::Index i = 0; i < X.size(); ++i)
    for (Eigen::Index j = 0; j < X.size(); j += AP::size) {
      const auto ea = ei::pset1<AP::P>(E(0, i)), eb = ei::ploadu<AP::P>(E.data() + j);
      ei::pstoreu(fwd, AP::tanh_of(ea, eb));
      AP::P u, t;
      AP::sech2_tanh(ea, eb, nullptr, u, t);
      ei::pstoreu(t_out, t);
      for (int k = 0; k < AP::size; ++k) {
        float us, ts;
        AP::sech2_tanh_scalar(E(0, i), E(0, j + k), false, us, ts);
        REQUIRE(fwd[k] == t_out[k]);  // the forward's t is the backward's
        REQUIRE(ts == t_out[k]);      // and the scalar remainder's
        const double exact = std::tanh(double(X(0, i)) + double(X(0, j + k)));
        if (std::abs(exact) < 0.5) continue;
        const double ulps = std::abs(double(t_out[k]) - exact) / 0x1p-24;
        (exact < 0 ? worst_neg : worst_pos) = std::max(exact < 0 ? worst_neg : worst_pos, ulps);
      }
    }
  INFO("max error in ulp of t: t <= -0.5: " << worst_neg << ", t >= 0.5: " << worst_pos);
  // Measured 2.78 / 1.55 (max) with q - 1/2 and 1 - r; mirrored, 1.55 / 1.55 (the direct tanh
  // of the rounded a + b has up to 1.85 on [-0.9, -0.5], a scalar emulation: NOTES.md).
  CHECK(worst_neg <= 2.0);
  CHECK(worst_pos <= 2.0);
  CHECK(std::abs(worst_neg - worst_pos) <= 1.0);
}

namespace {

ScoreParams<float> params(std::initializer_list<float> W_q, std::initializer_list<float> W_k,
                          std::initializer_list<float> v, std::initializer_list<float> b) {
  ScoreParams<float> p;
  p.W_q = qktest::vec(W_q);
  p.W_k = qktest::vec(W_k);
  p.v = qktest::vec(v);
  p.b = qktest::vec(b);
  return p;
}

void every_tiling(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO, const ScoreParams<float>& p,
                  const AttentionConfig<float>& c) {
  qktest::under_bar_at_tilings(Q, K, V, dO, p, c, {64});
}

}  // namespace

TEST_CASE("tiled additive at tau = 1e-4: one query whose units sit near t = -1 (fuzzer, 2026-12-05)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/additive-output-tau1e-4-one-query-2026-12-05: keys 1-3 give units at
  // t = -0.99925 and 0.998, key 0 at -0.966 and 0.995; their logits are 33 apart, so the output
  // is V_2 = 1.7e35 times a weight of ~6e-15 whose relative error is the logits' absolute one.
  // The tiled output was 9.55757e20 (1.44 times the bar).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  const auto p = params({-0.98504734f, 0.882057846f}, {0.477849573f, -0.137099534f}, {0.110313416f, 0.0971346721f},
                        {0, 0});
  const Matrix Q = qktest::mat<float>({{4}}), K = qktest::mat<float>({{3.98367596f}, {0}, {0}, {0}}),
               V = qktest::mat<float>({{-3.96877956f}, {2}, {1.66153499e+35f}, {1}}), dO = qktest::mat<float>({{-3}});
  every_tiling(Q, K, V, dO, p, c);
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, qktest::one_thread());
  CHECK(t.output(0, 0) == Approx(9.55539497863e+20).epsilon(1e-4));  // mpmath, 60 digits
}

TEST_CASE("tiled additive at tau = 1e-4 with scale -1: dQ over units near t = -1 (fuzzer, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/additive-dK-saturated-tau1e-4-2026-12-04: the tiled dQ was -5.61782e32
  // (1.35 times the bar). Its arguments (2.38, 1.07; -1.48, -1.35) are past 1 in size, where
  // the earlier triage had ruled out the fused form's error near 0: it was the error near -1.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  c.scale = -1;
  const auto p = params({1.06652927f, -1.34667826f}, {-1.31120968f, 0.13022694f}, {0.237150371f, 0.233460441f}, {0, 0});
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{-1}, {0}, {-0.00756883621f}}),
               V = qktest::mat<float>({{1}, {1.66153499e+35f}, {0}}), dO = qktest::mat<float>({{1}});
  every_tiling(Q, K, V, dO, p, c);
  const auto o = qktest::one_thread();
  const auto g = cpu::attention_backward<float>(Q, K, V, p, c, cpu::attention_forward<float>(Q, K, V, p, c, o), dO, o);
  CHECK(g.dQ(0, 0) == Approx(-5.62013752822e+32).epsilon(1e-4));  // mpmath, 60 digits
}

TEST_CASE("tiled additive at tau = 1e-4: dK of a key whose saturated unit sits near t = -1 (fuzzer, 2026-12-05)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/additive-dK-tau1e-4-three-keys-2026-12-05: unit 1's bias -1.9 puts every
  // key near t = -0.956; the tiled dK(0, 0) was -2.33231 (1.46 times the bar).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  c.mask.window_right = 0;
  c.mask.alignment = CausalAlignment::bottom_right;
  const auto p =
      params({1.95971024f, -0.0128410971f}, {0.888803422f, -0.492254198f}, {0.000414897891f, 0.783549845f}, {0, -1.90625f});
  const Matrix Q = qktest::mat<float>({{0}}), K = qktest::mat<float>({{-0.00999999978f}, {0.00999999978f}, {0.00999999978f}}),
               V = qktest::mat<float>({{0}, {0}, {-1.82019043f}}), dO = qktest::mat<float>({{2.50759792f}});
  every_tiling(Q, K, V, dO, p, c);
  const auto o = qktest::one_thread();
  const auto g = cpu::attention_backward<float>(Q, K, V, p, c, cpu::attention_forward<float>(Q, K, V, p, c, o), dO, o);
  CHECK(g.dK(0, 0) == Approx(-2.33025072118).epsilon(5e-4));  // mpmath, 60 digits (it was 8.8e-4 off)
}

TEST_CASE("tiled additive at tau = 1e-3: seven queries over nine keys, output (fuzzer, 2026-12-05)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/additive-output-tau1e-3-2026-12-05: queries at 2.2e-5, five keys tied at
  // 2.243 beside 2.237, -3.95, 1 and 3; units 1-3 (v = -0.98, -0.76, -0.96) sit near t = -1 on
  // several keys. The tiled output was -0.269606 where it is -0.269659 (1.4 times the bar).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-3;
  const auto p = params({-1.93060482f, -1.67743576f, 0.168004841f, 0.628480136f},
                        {-0.781565845f, 0.0868373588f, -0.740480006f, -2.12467122f},
                        {0.0743828341f, -0.97957778f, -0.763317943f, -0.958775401f}, {0, 0, 0, 0});
  const Matrix Q = Matrix::Constant(7, 1, 2.24313735e-05f),
               K = qktest::mat<float>({{2.24313736f}, {2.24313736f}, {2.24313736f}, {2.24313736f}, {2.24313736f},
                                       {2.23666763f}, {-3.94509792f}, {1}, {3}}),
               V = qktest::mat<float>({{1, 1, 1}, {-2, 0, 0}, {0, 0, -3.99990463f}, {2.24313736f, 2.24313688f, 2},
                                       {1, 1, 1}, {-3.60134792f, 1, -0.976339817f}, {2, 1, 1}, {1, 0, -2.43847656f},
                                       {-2.94705868f, -1, -1}});
  // The finding's dO held -inf (its backward refuses); the forward is what it flagged.
  // Since the twenty-first session the tiles are formed in double above |scale| / tau = 8
  // (cpu/additive_f64.hpp) and the output is -0.2696063 again: the exact softmax of the exact
  // scores rounded once to float (mpmath, 50 digits), the least any path that holds its scores
  // in float can err by. The harness's bar covers that since the same session: its run with
  // each raw score rounded to the nearest float (perturbed.hpp, round_raw_scores), whose
  // forward now counts where the backward throws.
  const auto cd = qktest::config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const MatrixD ref = reference::attention<double>(Qd, Kd, Vd, pd, cd).output;
  const Matrix dO = Matrix::Ones(7, 3);  // finite: the runs' backward is not what is checked
  std::vector<MatrixD> bars{attention_forward<float>(Q, K, V, p, c).output.cast<double>()};
  for (const auto& r : qkfuzz::perturbed_references(Qd, Kd, Vd, dO.cast<double>(), pd, cd, Q, K, V, dO, p, c))
    if (r.ok) bars.push_back(r.fwd.output);
  const MatrixD bar = qkfuzz::farthest_of(ref, bars);
  for (const Eigen::Index bq : {1, 2, 3, 4})
    for (const Eigen::Index bk : {1, 2, 3, 4, 64}) {
      CAPTURE(bq, bk);
      auto o = qktest::one_thread(bk);
      o.block_q = bq;
      const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
      CHECK(t.output(0, 0) == Approx(-0.2696063492).epsilon(2e-6));
      CHECK_MATCHES_REFERENCE("tiled output", t.output, bar, ref);
    }
}

TEST_CASE("tiled additive: seeded shapes with units saturated by their bias, tau down to 1e-4",
          "[faults][reliability][tiled][score]") {
  // The reviewers' family of 2026-12-04 (dL/dtau, dK and dW_k of saturated units at small tau,
  // docs/RELIABILITY.md): biases ~ N(0, 2.5^2) saturate most units, half of them near t = -1.
  // With q - 1/2 and 1 - r, 10 of these 1,000 shapes failed the harness's bar (and 9 and 15 of
  // 1,000 on seeds 7 and 8 of the same generator); mirrored, none here, while seeds 7 and 8
  // leave 1 and 4 (dv, dK, dW_k, dL/dtau at 1.1-1.9 times the bar: "Open").
  detail::Rng rng(6);
  for (int n = 0; n < 1000; ++n) {
    const Eigen::Index L_q = 1 + Eigen::Index(rng.uniform() * 4), L_k = 1 + Eigen::Index(rng.uniform() * 6),
                       d = 1 + Eigen::Index(rng.uniform() * 3), d_h = 1 + Eigen::Index(rng.uniform() * 6);
    AttentionConfig<float> c;
    c.score = "additive";
    c.temperature = std::pow(10.0, -4 * rng.uniform());
    ScoreParams<float> p;
    p.W_q = qktest::randn<float>(rng, d_h, d);
    p.W_k = qktest::randn<float>(rng, d_h, d);
    p.v = qktest::randn_vec<float>(rng, d_h);
    p.b = qktest::randn_vec<float>(rng, d_h, 2.5);
    const Matrix Q = qktest::randn<float>(rng, L_q, d), K = qktest::randn<float>(rng, L_k, d);
    const Matrix V = qktest::randn<float>(rng, L_k, 2), dO = qktest::randn<float>(rng, L_q, 2);
    CAPTURE(n, L_q, L_k, d, d_h, c.temperature);
    REQUIRE_FALSE(cpu::attention_forward<float>(Q, K, V, p, c, qktest::one_thread()).fallback);
    REQUIRE_NOTHROW(attention_backward<float>(Q, K, V, p, c, attention_forward<float>(Q, K, V, p, c), dO));
    matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(1 + n % 4));
  }
}
