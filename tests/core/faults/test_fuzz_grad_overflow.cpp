// The core's float backward where an intermediate passes the float range while the gradients
// it feeds are representable (docs/RELIABILITY.md, third session of 2026-12-03): dL/dz past
// FLT_MAX (rescaled per row, attention.hpp), a row's dL/dtau past it that another row cancels
// (summed in double), and a row's sum of dS that is exactly 0 but rounds to 1e13 (given exactly
// to the row-sum scorers, detail::row_sums_of_grad_raw). Right values: the double core, and
// where the tiled path runs, the tiled path against it (faults/tiled_check.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "faults/tiled_check.hpp"

using namespace qkscope;
using Catch::Matchers::WithinRel;
using qktest::mat;
using qktest::tiled_matches;
using qktest::vec;

namespace {

/// The float core's gradients of (Q, K, V, dO), and the double core's.
std::pair<AttentionGrads<float>, AttentionGrads<double>> core_grads(const Matrix& Q, const Matrix& K, const Matrix& V,
                                                                    const Matrix& dO, const ScoreParams<float>& p,
                                                                    const AttentionConfig<float>& c) {
  const auto f = attention_forward<float>(Q, K, V, p, c);
  const auto g = attention_backward<float>(Q, K, V, p, c, f, dO);
  const auto cd = qktest::config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto fd = attention_forward<double>(Qd, Kd, Vd, pd, cd);
  return {g, attention_backward<double>(Qd, Kd, Vd, pd, cd, fd, dO.cast<double>())};
}

/// The tiled path succeeds where the core does and returns its gradients (it hands such
/// calls to the core, or forms them in double).
void tiled_agrees(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO, const ScoreParams<float>& p,
                  const AttentionConfig<float>& c, const AttentionGrads<float>& core) {
  const auto o = qktest::one_thread();
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
  const auto tg = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o);
  CHECK(tg.dK.isApprox(core.dK, 1e-5f));
  CHECK(tg.dQ.isApprox(core.dQ, 1e-5f));
}

}  // namespace

TEST_CASE("core backward: dL/dz past FLT_MAX while dL/draw fits (scale 1e-40, fuzzer)",
          "[faults][reliability][tiled][score]") {
  // Row 3 (q = 0) is uniform over 7 keys and one value is 6e37, so dL/dz = P (dP - D) / tau
  // is 5e39 at tau = 5.5e-3, past FLT_MAX, while dL/draw = dL/dz s' scale is about 0.5. The
  // core's float backward rounded dL/dz to inf (dQ NaN, refused); the tiled path forms it in
  // double and returned the gradients. The core now reruns the normalizer on dP 2^-e
  // (detail::row_rescale_exponent) and finishes the chain in double.
  AttentionConfig<float> c;
  c.score = "linear_concat";
  c.temperature = 0.00549621067;
  c.scale = -1e-40;
  c.bias.softcap = 0.0326387043;
  ScoreParams<float> p;
  p.w = vec({1.36222792f, 8.67361738e-19f});
  const Matrix Q = mat<float>({{-8.94598707e-05f}, {1.43561294e+34f}, {-0.000299999985f}, {0}, {0}}),
               K = mat<float>({{0}, {0}, {0}, {0}, {0}, {0}, {0.000396889023f}}),
               V = mat<float>({{1.58456325e+29f}, {5.98152547e+37f}, {0}, {0}, {0}, {0}, {0}}),
               dO = mat<float>({{0}, {0}, {0}, {3.98425293f}, {0}});
  SECTION("linear concat (the finding): finite, and the tiled path agrees") {
    const auto f = attention_forward<float>(Q, K, V, p, c);
    const auto g = attention_backward<float>(Q, K, V, p, c, f, dO);
    CHECK(g.dQ.allFinite());
    CHECK(std::isfinite(g.dtemperature));
    tiled_matches(Q, K, V, dO, p, c);
  }
  SECTION("dot: the tiled path hands the overflow to the core, which returns it") {
    c.score = "dot";
    tiled_matches(Q, K, V, dO, ScoreParams<float>{}, c);
  }
  SECTION("a dense bias: dL/dB = dL/dz is not representable, and both paths refuse alike") {
    c.bias.dense = Matrix::Zero(5, 7);
    const auto f = attention_forward<float>(Q, K, V, p, c);
    CHECK_THROWS_WITH(attention_backward<float>(Q, K, V, p, c, f, dO),
                      Catch::Contains("gradient overflowed: dL/dbias.dense"));
    const auto o = qktest::one_thread();
    const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
    CHECK_THROWS_WITH(cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o),
                      Catch::Contains("gradient overflowed: dL/dbias.dense"));
  }
}

TEST_CASE("core backward: rows rescaled on their own, by 2^-e formed in double (review findings)",
          "[faults][reliability][tiled]") {
  AttentionConfig<float> c;
  c.score = "dot";
  SECTION("scale = tau = 1e-45 (2^-149 in float): e = 150, and 2^-150 is 0 in float") {
    // p = (0.5, 0.5), dS = p (dP - D) scale / tau = +-5e36: the rescale made dP 0 (all
    // gradients 0) before 2^-e was formed in double.
    c.scale = 1e-45;
    c.temperature = 1e-45;
    const Matrix Q = mat<float>({{1}}), K = mat<float>({{0}, {0}}), V = mat<float>({{2e37f}, {0}}), dO = mat<float>({{1}});
    const auto [g, gd] = core_grads(Q, K, V, dO, {}, c);
    CHECK_THAT(double(g.dK(0, 0)), WithinRel(5e36, 1e-6));
    CHECK_THAT(double(g.dK(1, 0)), WithinRel(-5e36, 1e-6));
    CHECK_THAT(double(g.dK(0, 0)), WithinRel(gd.dK(0, 0), 1e-6));
    tiled_agrees(Q, K, V, dO, {}, c, g);
  }
  SECTION("one row rescaled, the other's small dP untouched (one global 2^-e made it subnormal)") {
    // Right dK: rows (0, 1.625) and (0, -1.625); with one factor for both rows it was 1.1%,
    // 10% off, then all 0 as tau fell.
    const Matrix Q = mat<float>({{0, 0}, {0, 1e38f}}), K = Matrix::Zero(2, 2), V = mat<float>({{4e37f, 1.3e-38f}, {0, 0}}),
                 dO = mat<float>({{1, 0}, {0, 1}});
    for (const auto& [scale, tau] : {std::pair{5e-4, 1e-4}, std::pair{5e-6, 1e-6}, std::pair{5e-8, 1e-8}}) {
      CAPTURE(scale, tau);
      c.scale = scale;
      c.temperature = tau;
      const auto [g, gd] = core_grads(Q, K, V, dO, {}, c);
      CHECK_THAT(double(g.dK(0, 1)), WithinRel(gd.dK(0, 1), 1e-5));
      CHECK_THAT(double(g.dK(1, 1)), WithinRel(gd.dK(1, 1), 1e-5));
      CHECK_THAT(gd.dK(0, 1), WithinRel(1.625, 1e-6));
      tiled_agrees(Q, K, V, dO, {}, c, g);
    }
  }
  SECTION("a row's dL/dtau past FLT_MAX, cancelled by another row's: summed in double") {
    // The core rounded each row's dtau to float (+inf, -inf: "dL/dtemperature is -nan") where
    // the tiled path, summing in double, returned 1.0306e38.
    c.scale = 1;
    c.temperature = 1.6e-9;
    const Matrix Q = mat<float>({{1}, {1}}), K = mat<float>({{0}, {3.2e-8f}}), V = mat<float>({{2e37f}, {0}}),
                 dO = mat<float>({{1}, {-0.8f}});
    const auto [g, gd] = core_grads(Q, K, V, dO, {}, c);
    CHECK_THAT(g.dtemperature, WithinRel(gd.dtemperature, 1e-5));
    CHECK(std::abs(gd.dtemperature) < 3.4e38);
    const auto o = qktest::one_thread();
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
    CHECK_THAT(cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o).dtemperature, WithinRel(g.dtemperature, 1e-5));
  }
}

TEST_CASE("core backward: linear concat's row sum of dS is exactly 0, not 3e13 (fuzzer)",
          "[faults][reliability][tiled][score]") {
  // dL/dw_q = sum_i q_i sum_j dS_ij: the sum is 0 (the softmax is shift-invariant) but the
  // float sum of dS of size 4e20 (tau = 1e-3, values to 1e31) left 3e13, times q = 9.9e25:
  // the core refused ("dL/dparams.w ... -inf") where the tiled path returned dw_q = 0.
  AttentionConfig<float> c;
  c.score = "linear_concat";
  c.temperature = 0.001;
  ScoreParams<float> p;
  p.w = vec({0, 0.0192219466f});
  const Matrix Q = mat<float>({{9.90352009e+25f}}), K = mat<float>({{-1.15292148e+16f}, {0}, {0}, {-0.0365863591f}}),
               V = mat<float>({{-1.01412048e+31f}, {-7.37869763e+19f}, {0}, {-0.713817358f}}), dO = mat<float>({{-0.0257563591f}});
  const auto g = tiled_matches(Q, K, V, dO, p, c);
  CHECK(g.dparams.w(0) == 0);
  const auto [gc, gd] = core_grads(Q, K, V, dO, p, c);
  CHECK(gc.dparams.w(0) == 0);
  CHECK(gc.dQ(0, 0) == 0);
  SECTION("with a softcap the row sum is formed around the slope of the largest weight") {
    c.bias.softcap = 50;
    tiled_matches(Q, K, V, dO, p, c);
  }
}

TEST_CASE("core backward: dO at the largest double over one value's keys gives dQ = dK = 0, not NaN",
          "[faults][overflow][backward]") {
  // dP = dO V^T = DBL_MAX is rescaled by 2^(a+b); that factor was 2^1024 = inf in double, and
  // 0 * inf made every zero gradient NaN ("gradient overflowed: dL/dquery ... nan"). Every key
  // carries the same value, so dS = P (dP - D) = 0: dQ = dK = 0, dV = P^T dO (exact here).
  const double M = std::numeric_limits<double>::max();
  for (const Eigen::Index L_k : {1, 2, 3}) {
    const MatrixD Q = MatrixD::Ones(1, 1), K = MatrixD::Ones(L_k, 1), V = MatrixD::Ones(L_k, 1);
    const MatrixD dO = MatrixD::Constant(1, 1, M);
    const ScoreParams<double> p;
    const AttentionConfig<double> c;
    const auto f = attention_forward<double>(Q, K, V, p, c);
    const auto g = attention_backward<double>(Q, K, V, p, c, f, dO);
    CHECK(g.dQ(0, 0) == 0);
    CHECK((g.dK.array() == 0).all());
    CHECK_THAT(g.dV(0, 0), WithinRel(M / double(L_k), 1e-15));  // weights 1 / L_k
    CHECK(g.dtemperature == 0);
  }
  // V near DBL_MAX as well: the scale is 2^2047, +inf in double, and zeros must stay 0 (review).
  for (const Eigen::Index d_v : {1, 2}) {
    const MatrixD Q = MatrixD::Ones(1, 1), K = MatrixD::Ones(3, 1), V = MatrixD::Constant(3, d_v, M);
    const MatrixD dO = MatrixD::Constant(1, d_v, M);
    const ScoreParams<double> p;
    for (const char* normalizer : {"softmax", "sparsemax"}) {
      AttentionConfig<double> c;
      c.normalizer = normalizer;
      const auto f = attention_forward<double>(Q, K, V, p, c);
      const auto g = attention_backward<double>(Q, K, V, p, c, f, dO);
      CHECK(g.dQ(0, 0) == 0);
      CHECK((g.dK.array() == 0).all());
      CHECK(g.dtemperature == 0);
    }
  }
}
