// Fuzzer findings (2026-12-05 to 2026-12-06; tests/fuzz/fixed/additive-*, moved from open/ in
// the twenty-first session): the tiled additive path at small temperatures. Its fused float
// tanh keeps ~1.3 eps of absolute error per unit, the core's own tanh a few ulp, and both
// round A = Q W_q^T + b, B = K W_k^T and a + b in float; |scale| / tau multiplies every such
// error in the logits, and at tau 1e-4 to 1e-2 the two float paths disagreed by 1-3.4 times
// the fuzz harness's bar (output, dQ, dK, dV, dW_k, dL/dtau; 45 open inputs). Above
// |scale| / tau = 8 (score::Additive::refine_gain) the tiles are formed in double and rounded
// once (cpu/additive_f64.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/additive_inputs.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

using qktest::uniform;

/// The tiles of one scorer prepared at score_gain, (L_q, L_k) in T.
Matrix tiled_scores(const Matrix& Q, const Matrix& K, const ScoreParams<float>& p, double score_gain, Eigen::Index bk,
                    bool* in_double = nullptr) {
  const auto form = score::Additive::prepare<float>(Q, K, p);
  cpu::detail::AdditiveInputs<float> in;
  const auto sc = in.prepare(form, score_gain, score_gain);
  if (in_double) *in_double = sc.f64 != nullptr;
  Matrix S(Q.rows(), K.rows());
  for (Eigen::Index j0 = 0; j0 < K.rows(); j0 += bk) {
    const Eigen::Index w = std::min(bk, K.rows() - j0);
    sc.scores(0, Q.rows(), j0, w, S.middleCols(j0, w));
  }
  return S;
}

/// The scores in double from the float inputs (the core's form), rounded once to float.
Matrix scores_rounded_once(const Matrix& Q, const Matrix& K, const ScoreParams<float>& p) {
  return score::Additive::forward<double>(Q.cast<double>(), K.cast<double>(), p.cast<double>()).cast<float>();
}

}  // namespace

TEST_CASE("tiled additive above |scale| / tau = 8 forms its tiles in double, rounded once",
          "[faults][reliability][tiled][score]") {
  std::mt19937_64 rng(20261207);
  const Eigen::Index L_q = 5, L_k = 11, d = 3, d_h = 7;
  Matrix Q = uniform(L_q, d, rng, 2), K = uniform(L_k, d, rng, 2);
  ScoreParams<float> p = qktest::additive_uniform(d, d, d_h, rng);
  K.row(9) = K.row(2);  // tied keys at different lane offsets and tiles
  K.row(10) = K.row(2);
  // Unit 5 far (|B| past 350 for some keys, where e^{2B} leaves double's range: std::tanh);
  // unit 6 near 0 (a + b ~ 1e-9: the series form).
  p.W_k.row(5).setConstant(300.f);
  p.W_q.row(5).setZero();
  p.b(5) = 0;
  K.col(0).array() += 2.f;  // B_j5 = 300 (k_0 + k_1 + k_2) spans past 350
  p.W_q.row(6).setConstant(1e-9f);
  p.W_k.row(6).setConstant(-1e-9f);
  p.b(6) = 0;
  const Matrix want = scores_rounded_once(Q, K, p);
  for (const Eigen::Index bk : {1, 3, 4, 11}) {
    CAPTURE(bk);
    bool in_double = false;
    const Matrix S = tiled_scores(Q, K, p, 100, bk, &in_double);
    REQUIRE(in_double);
    REQUIRE(S.array().isFinite().all());
    // Rounded once from a double within ~1e-15 of the core's: equal but at a rounding boundary.
    int equal = 0;
    for (Eigen::Index i = 0; i < S.size(); ++i) {
      const float s = S.data()[i], w = want.data()[i];
      CHECK(std::abs(s - w) <= std::abs(w) * std::numeric_limits<float>::epsilon());
      equal += s == w;
    }
    CHECK(equal >= S.size() - 1);
    for (Eigen::Index i = 0; i < L_q; ++i) {
      CHECK(S(i, 9) == S(i, 2));  // bit for bit: the same lanes' arithmetic
      CHECK(S(i, 10) == S(i, 2));
    }
  }
}

TEST_CASE("tiled additive: the double tiles start just above |scale| / tau = 8",
          "[faults][reliability][tiled][score]") {
  std::mt19937_64 rng(7);
  const Matrix Q = uniform(3, 2, rng), K = uniform(4, 2, rng);
  const auto p = qktest::additive_uniform(2, 2, 3, rng);
  bool in_double = true;
  tiled_scores(Q, K, p, score::Additive::refine_gain, 4, &in_double);
  CHECK_FALSE(in_double);
  tiled_scores(Q, K, p, std::nextafter(score::Additive::refine_gain, 9.0), 4, &in_double);
  CHECK(in_double);
}

TEST_CASE("tiled additive at small tau: an open input's output, now within the harness's bar",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/additive-output-tau1e-4-nine-keys-2026-12-05: one query at 0 over keys
  // tied at 3.435 beside 3 and 3.431, tau = 1e-4: the tiled output was -0.230693 where the
  // double core gives -0.230743 (2.08 times the bar).
  Matrix Q(1, 1), K(9, 1), V(9, 1), dO(1, 1);
  Q << 0;
  K << 3, 3.43529415f, 3.43529415f, 3.4313879f, 3.43529415f, 3.43529415f, 3.43529415f, 3.43529415f, 3.43529415f;
  V << 3.42980957f, 0, 0, 2.39999962f, -2, 0, 0, -3.96877956f, 2;
  dO << 1;
  ScoreParams<float> p;
  p.W_q = Matrix(3, 1);
  p.W_q << -1.13340604f, 1.2819283f, -1.48764253f;
  p.W_k = Matrix(3, 1);
  p.W_k << 2.27179193f, -0.0520687625f, -0.666520417f;
  p.v = Vector(3);
  p.v << -0.172705129f, 0.0250696447f, -0.153121367f;
  p.b = Vector::Zero(3);
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  c.mask.window_right = 0;
  c.mask.alignment = CausalAlignment::bottom_right;
  const auto o = cpu::attention_forward<float>(Q, K, V, p, c, qktest::one_thread(4));
  const auto d = attention_forward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), p.cast<double>(),
                                           qktest::config_as<double>(c));
  CHECK(d.output(0, 0) == Approx(-0.230743).epsilon(2e-6));
  CHECK(o.output(0, 0) == Approx(-0.230743).epsilon(5e-5));
  for (const Eigen::Index bk : {1, 2, 3, 4}) {
    CAPTURE(bk);
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(bk));
  }
}

TEST_CASE("tiled additive at tau 1e-2 to 1e-4: seeded shapes within the harness's bar",
          "[faults][reliability][tiled][score]") {
  // L_q != L_k, one query, odd sizes, d_h across the packet widths, scale +-1, causal or not,
  // keys clustered (spread 0.05 around a common point: logits near-tied, as in the findings).
  std::mt19937_64 rng(20261207);
  qktest::sweep_grid({{7, 8, 1, 4}, {1, 9, 3, 3}, {13, 17, 5, 9}, {24, 37, 8, 16}}, {1e-2, 1e-3, 1e-4}, {1.0, -1.0},
                     [&](const qktest::SweepShape& s, double tau, double scale) {
                       const Matrix Q = uniform(s.L_q, s.d, rng);
                       Matrix K = uniform(s.L_k, s.d, rng, 0.05f);
                       K.rowwise() += uniform(1, s.d, rng).row(0);
                       const Matrix V = uniform(s.L_k, 2, rng), dO = uniform(s.L_q, 2, rng);
                       const auto p = qktest::additive_uniform(s.d, s.d, s.d_h, rng);
                       AttentionConfig<float> c;
                       c.score = "additive";
                       c.temperature = tau;
                       c.scale = scale;
                       c.mask.causal = s.L_q > 1 && s.L_q % 2 == 1;
                       c.mask.alignment = CausalAlignment::bottom_right;
                       qktest::under_bar_at_blocks(Q, K, V, dO, p, c, {3, 16});
                     });
}
