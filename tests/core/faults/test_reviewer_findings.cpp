// Findings of a reviewer's differential checker (docs/RELIABILITY.md, "Open"), and the
// earlier reviewers' notes on error messages, each as a small input with its right value:
// the double core on the same float inputs (reference by construction, the core's own
// formula in double), or a value derived by hand where stated.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"

using namespace qkscope;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

cpu::TiledOptions small_tiles() {
  cpu::TiledOptions o;
  o.threads = 1;
  o.block_q = 1;
  o.block_k = 2;
  return o;
}

ScoreParams<double> wide(const ScoreParams<float>& p) { return p.cast<double>(); }

/// The tiled forward and backward against the double core under the tolerance rule, the
/// bar being the float core (as tests/fuzz/fuzz_attention.cpp): output, logsumexp, dQ, dK,
/// dV, the score parameters and dL/dtemperature.
void check_tiled(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& p,
                 const AttentionConfig<float>& c, const Matrix& dO) {
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>(), dOd = dO.cast<double>();
  const auto pd = wide(p);
  const auto r = attention_forward<float>(Q, K, V, p, c);
  const auto g = attention_backward<float>(Q, K, V, p, c, r, dO);
  const auto rd = attention_forward<double>(Qd, Kd, Vd, pd, cd);
  const auto gd = attention_backward<double>(Qd, Kd, Vd, pd, cd, rd, dOd);
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, small_tiles());
  REQUIRE_FALSE(t.fallback);
  CHECK_MATCHES_REFERENCE("tiled output", t.output, r.output, rd.output);
  CHECK_MATCHES_REFERENCE("tiled logsumexp", t.logsumexp, r.logsumexp, rd.logsumexp);
  const auto tg = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, small_tiles());
  CHECK_MATCHES_REFERENCE("tiled dQ", tg.dQ, g.dQ, gd.dQ);
  CHECK_MATCHES_REFERENCE("tiled dK", tg.dK, g.dK, gd.dK);
  CHECK_MATCHES_REFERENCE("tiled dV", tg.dV, g.dV, gd.dV);
  if (gd.dparams.v.size()) CHECK_MATCHES_REFERENCE("tiled dv", tg.dparams.v, g.dparams.v, gd.dparams.v);
  if (gd.dparams.W_q.size()) CHECK_MATCHES_REFERENCE("tiled dW_q", tg.dparams.W_q, g.dparams.W_q, gd.dparams.W_q);
  if (gd.dparams.W_k.size()) CHECK_MATCHES_REFERENCE("tiled dW_k", tg.dparams.W_k, g.dparams.W_k, gd.dparams.W_k);
  using S1 = Eigen::Matrix<double, 1, 1>;
  CHECK_MATCHES_REFERENCE("tiled dtemperature", S1(tg.dtemperature), S1(g.dtemperature), S1(gd.dtemperature));
}

}  // namespace

TEST_CASE("additive scores near 0 at tau = 1e-4: the fused tanh is not used where its rounding matters (reviewer finding)",
          "[faults][reliability][tiled]") {
  // A = q W_q^T = [4.4e-6, -4.4e-6], B = k W_k^T = [k, k]: S = tanh(q + k) + tanh(k - q),
  // about 2k for these sizes, so logits S / tau = 2e4 k = [0.011, -0.011, 0.04]. The fused
  // form's absolute error (1.5e-7 |v|_1 = 3e-7) became 3e-3 in the logits; logsumexp was
  // 4.5% off in the checker's case. Right value: the double core.
  const Matrix Q = qktest::mat<float>({{4.4e-6}}), K = qktest::mat<float>({{5.5e-7}, {-5.5e-7}, {2e-6}}),
               V = qktest::mat<float>({{1, -2}, {3, 0.5}, {-1, 2}}), dO = qktest::mat<float>({{0.7, -1.3}});
  ScoreParams<float> p;
  p.W_q = qktest::mat<float>({{1}, {-1}});
  p.W_k = qktest::mat<float>({{1}, {1}});
  p.b = Vector::Zero(2);
  p.v = Vector::Ones(2);
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  // The rule the kernel applies: the fused form only while 1.3 eps |v|_1 |scale| / tau
  // <= 1e-5; here 3.1e-3, so the direct tanh (at tau = 1 it would be 3.1e-7: fused).
  CHECK(cpu::detail::fused_tanh_rounding<float>(p.v, 1e4) > 1e-5);
  CHECK_FALSE(cpu::detail::fused_tanh_rounding<float>(p.v, 1.0) > 1e-5);
  check_tiled(Q, K, V, p, c, dO);
  // logsumexp by hand: logits 2e4 (tanh(q + k) + tanh(k - q)) in double.
  double s = 0;
  for (double k : {5.5e-7, -5.5e-7, 2e-6}) s += std::exp(1e4 * (std::tanh(4.4e-6 + k) + std::tanh(k - 4.4e-6)));
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, small_tiles());
  CHECK_THAT(double(t.logsumexp(0)), WithinRel(std::log(s), 1e-6));
}

TEST_CASE("cosine at tau = 1e-3 in d = 1: the tiled form uses the core's unit rows (reviewer finding)",
          "[faults][reliability][tiled]") {
  // Unit rows of width 1 are exactly +-1, so S = [1, -1, 1] and the logits [1e3, -1e3, 1e3]:
  // P = [1/2, 0, 1/2], O = (v_0 + v_2) / 2, logsumexp = 1000 + ln 2 (by hand). x (1 / |x|)
  // in float was 1 - 6e-8 for x = 7, a logit error of 6e-5.
  const Matrix Q = qktest::mat<float>({{3}}), K = qktest::mat<float>({{7}, {-2}, {5}}),
               V = qktest::mat<float>({{1, 4}, {2, 2}, {-3, 1}}), dO = qktest::mat<float>({{1, -1}});
  AttentionConfig<float> c;
  c.score = "cosine";
  c.temperature = 1e-3;
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, small_tiles());
  REQUIRE_FALSE(t.fallback);
  CHECK(t.output(0, 0) == -1.0f);
  CHECK(t.output(0, 1) == 2.5f);
  CHECK_THAT(double(t.logsumexp(0)), WithinRel(1000 + std::log(2.0), 1e-7));
  check_tiled(Q, K, V, {}, c, dO);
}

TEST_CASE("cosine at tau = 1e-3 with queries near 1e-7 (reviewer finding)", "[faults][reliability][tiled]") {
  // d = 2: the float dot product of unit rows rounds by about sqrt(d) eps, 1.7e-4 in the
  // logits at this tau; the form's bound sends the call to the core (logit_range.hpp), the
  // logsumexp rows in between to exact_lse.hpp.
  const Matrix Q = qktest::mat<float>({{1.3e-7, -2.1e-7}, {-0.9e-7, 0.4e-7}}),
               K = qktest::mat<float>({{0.3, -0.5}, {0.31, -0.49}, {-1, 0.2}}),
               V = qktest::mat<float>({{1}, {-1}, {2}}), dO = qktest::mat<float>({{1}, {-0.5}});
  for (double tau : {1e-3, 1e-2, 0.05}) {
    INFO("tau " << tau);
    AttentionConfig<float> c;
    c.score = "cosine";
    c.temperature = tau;
    const auto cd = qktest::config_as<double>(c);
    const auto r = attention_forward<float>(Q, K, V, {}, c);
    const auto rd = attention_forward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, cd);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, small_tiles());
    CHECK_MATCHES_REFERENCE("tiled output", t.output, r.output, rd.output);
    CHECK_MATCHES_REFERENCE("tiled logsumexp", t.logsumexp, r.logsumexp, rd.logsumexp);
    const auto g = attention_backward<float>(Q, K, V, {}, c, r, dO);
    const auto gd = attention_backward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, cd, rd,
                                               dO.cast<double>());
    const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, small_tiles());
    using S1 = Eigen::Matrix<double, 1, 1>;
    CHECK_MATCHES_REFERENCE("tiled dtemperature", S1(tg.dtemperature), S1(g.dtemperature), S1(gd.dtemperature));
    CHECK_MATCHES_REFERENCE("tiled dQ", tg.dQ, g.dQ, gd.dQ);
  }
}

TEST_CASE("neg_sq_euclidean dL/dtau at tau = 0.03 with queries near 1e-6: recomputed from direct scores (reviewer finding)",
          "[faults][reliability][tiled]") {
  // Keys at distance ~1 from a query near 1e-6: the logits -|q - k|^2 / tau are all near
  // -33.3 and differ by ~1e-4, while the expanded form's rounding is eps (|qc|^2 + |kc|^2) /
  // tau = 8e-6 per logit, most of x - x0 in dL/dtau = -(1/tau) sum p (dP - D)(x - x0).
  const Matrix Q = qktest::mat<float>({{1.1e-6, -0.7e-6}}),
               K = qktest::mat<float>({{1, 0}, {0, 1}, {-1, 1e-6}, {0, -1}}),
               V = qktest::mat<float>({{2}, {-1}, {0.5}, {3}}), dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "neg_sq_euclidean";
  c.temperature = 0.03;
  check_tiled(Q, K, V, {}, c, dO);
  // The bound that sends dtau to the exact path: 2 r sens / tau > 1e-7 (1 + |dtau|).
  CHECK(cpu::detail::dtau_needs_exact(8e-6, 1.0, 0.03, 1.0));
  CHECK_FALSE(cpu::detail::dtau_needs_exact(0.0, 1.0, 0.03, 1.0));
}

TEST_CASE("a scale that is not a number of the compute type is refused, naming scale (reviewer note)",
          "[faults][reliability][tiled]") {
  const Matrix Q = qktest::mat<float>({{1, 2}}), K = qktest::mat<float>({{1, 0}, {0, 1}}),
               V = qktest::mat<float>({{1}, {2}});
  for (double s : {1e39, -1e39, 1e-50, -1e-50}) {
    INFO("scale " << s);
    AttentionConfig<float> c;
    c.score = "dot";
    c.scale = s;
    const std::string want = s > 1 || s < -1 ? "overflows to inf" : "underflows to 0";
    std::string core, tiled;
    try { attention_forward<float>(Q, K, V, {}, c); } catch (const std::invalid_argument& e) { core = e.what(); }
    try { cpu::attention_forward<float>(Q, K, V, {}, c); } catch (const std::invalid_argument& e) { tiled = e.what(); }
    CHECK_THAT(core, Contains("scale") && Contains(want));
    CHECK(tiled == core);
  }
  // A denormal scale is a nonzero float and a zero scale is meant: both run.
  for (double s : {1e-40, 0.0}) {
    AttentionConfig<float> c;
    c.score = "dot";
    c.scale = s;
    CHECK_NOTHROW(attention_forward<float>(Q, K, V, {}, c));
  }
  // In double, 1e-50 is an ordinary number.
  AttentionConfig<double> cd;
  cd.score = "dot";
  cd.scale = 1e-50;
  CHECK_NOTHROW(attention_forward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, cd));
}

TEST_CASE("an overflow in dL/dlogits is named as such, not as a NaN dL/dquery (reviewer note)",
          "[faults][reliability][tiled]") {
  // tau = 1e-30, z = [0, 1e-30]: x = [0, 1], P = [0.27, 0.73]; dP = [0, 1e10], so
  // dL/dz = P (dP - D) / tau ~ 2e39, past float's range; every later gradient is inf or NaN.
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{0}, {1e-30}}),
               V = qktest::mat<float>({{0}, {1e10}}), dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 1e-30;
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  std::string core, tiled;
  try { attention_backward<float>(Q, K, V, {}, c, r, dO); } catch (const std::invalid_argument& e) { core = e.what(); }
  CHECK_THAT(core, Contains("gradient overflowed: dL/dlogits"));
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c);
  try { cpu::attention_backward<float>(Q, K, V, {}, c, t, dO); } catch (const std::invalid_argument& e) { tiled = e.what(); }
  CHECK(tiled == core);
}

TEST_CASE("an overflowing dL/draw_scores whose gradients are finite: core and tiled agree on them (reviewer finding)",
          "[faults][reliability][tiled]") {
  // dot, scale 2e22, q = k_0 = 3.16e-11, k_1 = 0: z = [20, 0] (x = z, tau 1), a nearly one-hot
  // row, P_1 = 1 / (1 + e^20) = 2.06e-9. Values [3e28, 0], dO = 1: dP = [3e28, 0] and
  // dz = P (dP - D) = w [1, -1], w = P_0 P_1 3e28 = 6.2e19. dS = scale dz = 1.2e42 is past
  // float's range, but dQ = dS_0 k_0 = scale w k_0, dK = scale w q [1, -1] = +-3.9e31,
  // dV = P, dL/dtau = -sum_j dz_j z_j = -20 w (by hand). The core refused ("gradient
  // overflowed") where the tiled path returned these; the core now runs the score backward
  // on dS 2^-e and scales back.
  const float q = 3.1622776e-11f;
  const Matrix Q = qktest::mat<float>({{q}}), K = qktest::mat<float>({{q}, {0}}),
               V = qktest::mat<float>({{3e28}, {0}}), dO = qktest::mat<float>({{1}});
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = 2e22;
  const double qd = q, z0 = 2e22 * qd * qd, p1 = 1 / (1 + std::exp(z0)), p0 = 1 - p1,
               w = p0 * p1 * double(3e28f), dq = 2e22 * w * qd;
  auto check = [&](const AttentionGrads<float>& g) {
    CHECK_THAT(double(g.dQ(0, 0)), WithinRel(dq, 1e-5));
    CHECK_THAT(double(g.dK(0, 0)), WithinRel(dq, 1e-5));
    CHECK_THAT(double(g.dK(1, 0)), WithinRel(-dq, 1e-5));
    CHECK_THAT(double(g.dV(0, 0)), WithinRel(p0, 1e-6));
    CHECK_THAT(double(g.dV(1, 0)), WithinRel(p1, 1e-4));
    CHECK_THAT(g.dtemperature, WithinRel(-z0 * w, 1e-5));
  };
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  check(attention_backward<float>(Q, K, V, {}, c, r, dO));
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, small_tiles());
  check(cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, small_tiles()));
}
