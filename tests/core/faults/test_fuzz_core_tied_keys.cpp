// The core's query gradient of the dot family where keys tie (score/tied_keys.hpp,
// dS_times_keys, shared with the tiled DotScorer): dQ_i = sum_j dS_ij k_j summed plainly
// leaves eps sum_j |dS_ij| |k_j| where the dS cancel, and over keys tied at 9.7e24 with dS of
// 1e37 the double core (the fuzz harness's reference) gave dQ 1.1e46 where it is exactly 0,
// and the float core refused ("gradient overflowed"; fuzzer findings, tenth session's
// campaign). Right values: exactly 0 where every visible key is the same (the weights do not
// depend on the query then); central differences of the double reference (core/reference/)
// on moderate inputs, so the split is checked against an independent oracle where it runs.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "faults/tiled_check.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"
#include "support/gradcheck.hpp"
#include "support/random.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

namespace {

/// dQ of the double core, the float core (where it returns) and the tiled path at key blocks
/// 1 to 3, each exactly 0.
void check_dQ_zero(const AttentionConfig<float>& c, const Matrix& Q, const Matrix& K, const Matrix& V,
                   const Matrix& dO, const ScoreParams<float>& p = {}) {
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const ScoreParams<double> pd = p.template cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, pd, cd, attention_forward<double>(Qd, Kd, Vd, pd, cd),
                                              dO.cast<double>());
  CAPTURE(g64.dQ);
  CHECK(g64.dQ.cwiseAbs().maxCoeff() == 0);
  try {
    const auto g32 = attention_backward<float>(Q, K, V, p, c, attention_forward<float>(Q, K, V, p, c), dO);
    CAPTURE(g32.dQ);
    CHECK(g32.dQ.cwiseAbs().maxCoeff() == 0);
  } catch (const std::invalid_argument& e) {  // another gradient past float (dV, dK): a clear refusal
    INFO(e.what());
    CHECK(std::string(e.what()).find("dL/dquery") == std::string::npos);
  }
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    const auto o = qktest::one_thread(bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
    try {
      const auto g = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o);
      CAPTURE(g.dQ);
      CHECK(g.dQ.cwiseAbs().maxCoeff() == 0);
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find("dL/dquery") == std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("core dot dQ over keys tied at 9.7e24 is exactly 0 (fuzzer, tenth session)", "[faults][reliability][score]") {
  // tests/fuzz/fixed/dot-double-core-past-float-tied-keys-2026-12-05: a query at 0 over three
  // keys tied at 9.67e24, causal (bottom right: all three visible), a T5 table, values up to
  // 2.2e38: dS of ~1e37. The double core's plain sum gave dQ 1.1e46.
  auto c = qktest::score_config("dot");
  c.mask.causal = true;
  c.mask.alignment = CausalAlignment::bottom_right;
  c.bias.t5 = T5Buckets{true, 5, 16};
  c.bias.t5_table = qktest::mat<float>({{-3, 0, 0, 0, 0}}).row(0).transpose();
  const float k = 9.67140656e+24f;
  check_dQ_zero(c, Matrix::Zero(1, 1), qktest::mat<float>({{k}, {k}, {k}}),
                qktest::mat<float>({{1.66153499e+35f}, {-2}, {2.21538878e+38f}}), qktest::mat<float>({{1.33345556f}}));
  // Its companion (…-scale-minus1-2026-12-05): keys tied at 9.7e18, the default scale.
  auto s = qktest::score_config("dot");
  const float k2 = 9.67140653e+18f;
  check_dQ_zero(s, Matrix::Zero(1, 1), qktest::mat<float>({{k2}, {k2}, {k2}}),
                qktest::mat<float>({{9.67140656e+24f}, {1}, {1.13849759e+38f}}), qktest::mat<float>({{1.33333397f}}));
}

TEST_CASE("core dot family: dQ is exactly 0 where every key is the same, on seeded shapes",
          "[faults][reliability][score]") {
  // The same key everywhere, at sizes 1 to 1e20, under values and dO up to 1e15: the weights
  // do not depend on the query, so dQ = 0 in every scoring function whose keys tie with them
  // (cosine: equal keys normalise to equal unit keys; bilinear: dQ = (dS K) W^T).
  detail::Rng rng(20261211);
  for (int n = 0; n < 120; ++n) {
    const Eigen::Index L_q = 1 + Eigen::Index(rng.uniform() * 4), L_k = 2 + Eigen::Index(rng.uniform() * 6),
                       d = 1 + Eigen::Index(rng.uniform() * 4);
    const char* scores[] = {"dot", "scaled_dot", "cosine", "bilinear"};
    auto c = qktest::score_config(scores[n % 4], std::pow(10.0, -2 * rng.uniform()));
    const Matrix key = qktest::randn<float>(rng, 1, d, std::pow(10.0, 20 * rng.uniform()));
    Matrix K(L_k, d);
    for (Eigen::Index j = 0; j < L_k; ++j) K.row(j) = key;
    const Matrix Q = qktest::randn<float>(rng, L_q, d);
    const Matrix V = qktest::randn<float>(rng, L_k, 2, std::pow(10.0, 15 * rng.uniform()));
    const Matrix dO = qktest::randn<float>(rng, L_q, 2, std::pow(10.0, 15 * rng.uniform()));
    const ScoreParams<float> p = init_params<float>(c.score, d, d, 3, 7);
    CAPTURE(n, c.score, L_q, L_k, d, c.temperature, key);
    check_dQ_zero(c, Q, K, V, dO, p);
  }
}

TEST_CASE("core dot family: dQ with partly tied keys agrees with central differences of the reference",
          "[faults][reliability][score]") {
  // Where the split runs on ordinary inputs (two tied groups beside other keys, queries near
  // a group, masks, a softcap where it may not split), the double core's dQ against central
  // differences of core/reference/ (gradcheck.hpp's rule), for each dot-family function.
  detail::Rng rng(20261212);
  for (int n = 0; n < 80; ++n) {
    const Eigen::Index L_q = 1 + Eigen::Index(rng.uniform() * 4), L_k = 4 + Eigen::Index(rng.uniform() * 4),
                       d = 1 + Eigen::Index(rng.uniform() * 3);
    const char* scores[] = {"dot", "scaled_dot", "cosine", "bilinear"};
    qktest::Problem pr;
    pr.cfg.score = scores[n % 4];
    pr.cfg.temperature = std::pow(10.0, -rng.uniform());
    pr.cfg.mask.causal = rng.uniform() < 0.3;
    if (rng.uniform() < 0.3) pr.cfg.bias.softcap = 2 + 3 * rng.uniform();
    pr.K = qktest::randn<double>(rng, L_k, d);
    for (const Eigen::Index j : {Eigen::Index(1), L_k - 1}) pr.K.row(j) = pr.K.row(0);  // group {0, 1, L_k - 1}
    pr.K.row(3) = pr.K.row(2);                                                          // group {2, 3}
    pr.Q = qktest::randn<double>(rng, L_q, d);
    for (Eigen::Index i = 0; i < L_q; ++i)
      if (rng.uniform() < 0.5) pr.Q.row(i) = pr.K.row(rng.uniform() < 0.5 ? 0 : 2) * (0.5 + rng.uniform());
    pr.V = qktest::randn<double>(rng, L_k, 2);
    pr.params = init_params<double>(pr.cfg.score, d, d, 3, 7);
    const MatrixD G = qktest::randn<double>(rng, L_q, 2);
    const auto g = attention_backward<double>(pr.Q, pr.K, pr.V, pr.params, pr.cfg,
                                              attention_forward<double>(pr.Q, pr.K, pr.V, pr.params, pr.cfg), G);
    MatrixD& Qp = pr.Q;
    const MatrixD numeric = qktest::numeric_grad(pr, Qp, G);
    CAPTURE(n, pr.cfg.score, L_q, L_k, d, pr.cfg.temperature, pr.cfg.mask.causal, pr.cfg.bias.softcap.has_value());
    CHECK_GRAD("dQ", g.dQ, numeric);
  }
}

TEST_CASE("core cosine (double) ties equal keys whatever their row's alignment (review, eleventh session)",
          "[faults][reliability][score]") {
  // Four equal keys of odd width: stableNorm of a row in place rounded by its alignment, so
  // rows 0 and 2 got a norm an ulp from rows 1 and 3, the keys did not tie, and dQ was
  // (-7.5e-6, 3.0e-5, -1.2e-4) where it is 0 (the float core and the tiled path gave 0).
  AttentionConfig<double> c;
  c.score = "cosine";
  MatrixD K(4, 3), V(4, 2);
  for (Eigen::Index j = 0; j < 4; ++j) K.row(j) << -86.59522247314453, 257.9853820800781, -917.7122192382812;
  V << -7.989350603531127e-21, 1.1118774587778658e-21, -2.171997362289172e-21, 2.1469563675590115e-21,
      4.118758048203486e-21, 7.322021028766838e-21, -9.503422319865616e-21, 7.401421481842692e-21;
  const MatrixD Q = MatrixD::Zero(1, 3), dO = (MatrixD(1, 2) << -4.573951762272734e24, 6.707820676403629e24).finished();
  const auto g = attention_backward<double>(Q, K, V, {}, c, attention_forward<double>(Q, K, V, {}, c), dO);
  CAPTURE(g.dQ);
  CHECK(g.dQ.cwiseAbs().maxCoeff() == 0);
}

TEST_CASE("core neg_sq dQ over a tied group on the far side of the mean key is 0 (review, eleventh session)",
          "[faults][reliability][score]") {
  // Three tied keys and one far key that shares the query's last coordinate: the query and the
  // group sit on opposite sides of the mean key, so the per-column retake's two bounds are
  // equal and it kept the centred sum, 1.15e7 where dQ is 0 (the far key's weight is 0, and the
  // group's dS cancel). The row now takes the tied-group split, as the tiled path does.
  AttentionConfig<double> c;
  c.score = "neg_sq_euclidean";
  MatrixD K(4, 3);
  for (Eigen::Index j = 0; j < 3; ++j) K.row(j) << 486.4737854003906, -64.87488555908203, 475.0379333496094;
  K.row(3) << 0, 303608486690816, 64402820694016;
  MatrixD V(4, 2);
  V << 3.7937822923242e-21, -4.206207760277177e-21, 1, 1, 2, 6.867984498593322e-21, 1.4321863135418647e-22,
      -7.221740727572555e-21;
  const MatrixD Q = (MatrixD(1, 3) << 0, -64.87488555908203, 64402820694016).finished();
  const MatrixD dO = (MatrixD(1, 2) << -3926012928, 7310417920).finished();
  const auto g = attention_backward<double>(Q, K, V, {}, c, attention_forward<double>(Q, K, V, {}, c), dO);
  CAPTURE(g.dQ);
  CHECK(g.dQ.cwiseAbs().maxCoeff() == 0);
}

TEST_CASE("core neg_sq: a row's entries that did not take the tied split are still retaken (second review)",
          "[faults][reliability][score]") {
  // A constant column of inexact mean (0.1 or 0.3f) takes the split (its split bound is 0);
  // a first form then skipped the whole row's retake, and the real column kept its centred sum,
  // |kc| ~ 1.5e10 against a query on the key cluster: 4.99969288e-21 where 4.999691495e-21
  // (double), 1.388e-17 where 5.11968409e-18 (float; the tiled path defers to the core here).
  // Right values: 600-bit mpmath (the reviewer's).
  {
    AttentionConfig<double> c;
    c.score = "neg_sq_euclidean";
    c.scale = 1e-20;
    MatrixD K(6, 2), V(6, 1);
    K << 0.1, -2e10, 0.1, -2e10, 0.1, 1e10 + 1, 0.1, 1e10 + 2, 0.1, 1e10 + 3, 0.1, 1e10 + 4;
    V << 1, -1, -0.5, 0.5, -0.5, 0.5;
    const MatrixD Q = (MatrixD(1, 2) << 0.1, 1e10).finished(), dO = MatrixD::Ones(1, 1);
    const auto g = attention_backward<double>(Q, K, V, {}, c, attention_forward<double>(Q, K, V, {}, c), dO);
    CAPTURE(g.dQ);
    CHECK(g.dQ(0, 0) == 0);
    CHECK(std::abs(g.dQ(0, 1) - 4.999691495e-21) <= 1e-9 * 4.999691495e-21);
  }
  auto c = qktest::score_config("neg_sq_euclidean");
  c.scale = 1e-20;
  Matrix K(6, 2), V(6, 1);
  K << 0.3f, -2e10f, 0.3f, -2e10f, 0.3f, 1e10f + 1024, 0.3f, 1e10f + 2048, 0.3f, 1e10f + 3072, 0.3f, 1e10f + 4096;
  V << 1, -1, -0.5f, 0.5f, -0.5f, 0.5f;
  const Matrix Q = qktest::mat<float>({{0.3f, 1e10f}}), dO = Matrix::Ones(1, 1);
  const auto g = attention_backward<float>(Q, K, V, {}, c, attention_forward<float>(Q, K, V, {}, c), dO);
  CAPTURE(g.dQ);
  CHECK(g.dQ(0, 0) == 0);
  CHECK(std::abs(double(g.dQ(0, 1)) - 5.11968409e-18) <= 1e-5 * 5.11968409e-18);
  for (const Eigen::Index bk : {1, 2, 256}) {
    CAPTURE(bk);
    const auto o = qktest::one_thread(bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
    const auto gt = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
    CAPTURE(gt.dQ);
    CHECK(std::abs(double(gt.dQ(0, 1)) - 5.11968409e-18) <= 1e-5 * 5.11968409e-18);
  }
}

TEST_CASE("core and tiled neg_sq: dQ is exactly 0 where every visible key is the same, at 0 or beside masked far keys",
          "[faults][reliability][score]") {
  // negative squared Euclidean's plain sum runs over the keys centred on their mean (masked keys
  // included), so keys tied at 0 are not 0 there: tied_groups skipped zero keys, the rows kept
  // the centred sum and its r qc term, and float dQ was 327.75 (keys at 0 beside a masked key
  // at (1e3, -1e3), |q| ~ 1e3, dO ~ 1e6) where it is exactly 0; every key equal (centred keys
  // exactly 0, both bounds 0) kept the term too: 312.875. The weights do not depend on the
  // query: dQ = 0 in the double core, the float core and the tiled path (key blocks 1 to 3).
  detail::Rng rng(20261212);
  for (int n = 0; n < 120; ++n) {
    const Eigen::Index L_q = 1 + Eigen::Index(rng.uniform() * 4), visible = 2 + Eigen::Index(rng.uniform() * 5),
                       masked = Eigen::Index(rng.uniform() * 3), d = 1 + Eigen::Index(rng.uniform() * 4);
    auto c = qktest::score_config("neg_sq_euclidean", std::pow(10.0, -2 * rng.uniform()));
    // Every third shape with its visible keys at 0; the others at one random key.
    const Matrix key = n % 3 == 0 ? Matrix::Zero(1, d) : qktest::randn<float>(rng, 1, d, std::pow(10.0, 6 * rng.uniform()));
    Matrix K(visible + masked, d);
    for (Eigen::Index j = 0; j < visible; ++j) K.row(j) = key;
    if (masked) {
      K.bottomRows(masked) = qktest::randn<float>(rng, masked, d, std::pow(10.0, 9 * rng.uniform()));
      c.mask.key_length = visible;
    }
    const Matrix Q = qktest::randn<float>(rng, L_q, d, std::pow(10.0, 3 * rng.uniform()));
    const Matrix V = qktest::randn<float>(rng, visible + masked, 2, std::pow(10.0, 6 * rng.uniform()));
    const Matrix dO = qktest::randn<float>(rng, L_q, 2, std::pow(10.0, 6 * rng.uniform()));
    CAPTURE(n, L_q, visible, masked, d, c.temperature, key);
    check_dQ_zero(c, Q, K, V, dO);
  }
}
