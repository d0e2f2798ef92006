// Fuzzer findings (2026-12-05 to 2026-12-07; tests/fuzz/fixed/additive-*, moved from open/ in
// the twenty-second session): the tiled additive backward's sums, dA_ih = v_h sum_j dS_ij u_ij,
// dB_jh = v_h sum_i dS_ij u_ij and dv_h = sum_ij dS_ij t_ij (t = tanh(A_ih + B_jh),
// u = 1 - t^2; Bahdanau et al. 2015, A.1.2). In float their t and u kept ~1.3 eps of absolute
// error (the fused exp form) or an ulp of t (the direct tanh), and rows whose terms cancel
// (tied keys, t near -1 under dS of 1e38, V of 1e37) kept too few digits by the fuzz harness's
// bar while the float estimates passed them. The float path now hands its float dS to the same
// sums in double (cpu/additive.hpp's header): only the dS's own rounding is left, as in the
// core. Expected values: the double core's (itself checked against the double reference).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

ScoreParams<float> params(const Matrix& W_q, const Matrix& W_k, const Vector& v, const Vector& b) {
  ScoreParams<float> p;
  p.W_q = W_q;
  p.W_k = W_k;
  p.v = v;
  p.b = b;
  return p;
}

Matrix col(std::initializer_list<float> x) {
  Matrix m(Eigen::Index(x.size()), 1);
  Eigen::Index i = 0;
  for (const float e : x) m(i++, 0) = e;
  return m;
}

/// The tiled gradients at block_k = bk, and the double core's for the same float inputs.
struct Both {
  AttentionGrads<float> tiled;
  AttentionGrads<double> core;
};
Both grads(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO, const ScoreParams<float>& p,
           const AttentionConfig<float>& c, Eigen::Index bk) {
  const auto o = qktest::one_thread(bk);
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
  REQUIRE_FALSE(t.fallback);
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>(), dOd = dO.cast<double>();
  const auto f = attention_forward<double>(Qd, Kd, Vd, p.cast<double>(), cd);
  return {cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o),
          attention_backward<double>(Qd, Kd, Vd, p.cast<double>(), cd, f, dOd)};
}

}  // namespace

TEST_CASE("tiled additive dv: one query over two keys under a value of 1e37 (fuzzer, 2026-12-06)",
          "[faults][reliability][tiled][score][additive]") {
  // tests/fuzz/fixed/additive-dv-eighteenth-2026-12-06-l3: dv = dS_1 (t_1 - t_0) with
  // t ~ 0.99999 and 0.9943, dS of ~1e37: the float t's absolute error, ~1.3 eps each, was
  // 5e-5 of the difference (1.6 times the bar).
  const Matrix Q = col({-3.90526676f}), K = col({0.77953434f, 3.49828434f}), V = col({1.07068001e+37f, 3.56078434f}),
               dO = col({2});
  const auto p = params(col({-1.74723613f}), col({-1.11391449f}), Vector::Constant(1, -1.9339968f), Vector::Zero(1));
  AttentionConfig<float> c;
  c.score = "additive";
  for (const Eigen::Index bk : {1, 2}) {
    CAPTURE(bk);
    const auto g = grads(Q, K, V, dO, p, c, bk);
    CHECK(g.tiled.dparams.v(0) == Approx(g.core.dparams.v(0)).epsilon(2e-6));
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(bk));
  }
}

TEST_CASE("tiled additive dW_k over eight tied keys is ~0, as the double core's (fuzzer, 2026-12-06)",
          "[faults][reliability][tiled][score][additive]") {
  // tests/fuzz/fixed/additive-dWk-fifteenth-2026-12-06-a6: every key at 4, so dB_j is the same
  // for every j and dW_k = sum_j dB_j K_j = 4 sum_j dB_j = 4 v_h sum_i u_i R_i = 0 up to the
  // rounding of the dS (the double core: 5e-14); the float sums and products gave -4.2e-5.
  const Matrix Q = col({-2.77636719f, 4, 4, 4, 4, 4, 4}), K = col({4, 4, 4, 4, 4, 4, 4, 4});
  Matrix V(8, 3), dO(7, 3);
  V << 3.99989653f, -2.77647066f, -2.77647066f, -2.77647066f, -2.77647066f, -3.97640467f, 2, 1, 1, 1, -3.69519043f,
      3.9765625f, -3.06252956f, 1, 577, -2.75769043f, 0, 0, 0, -2, 2.06240082f, 1, 0, -4;
  dO << 0, 0, -3.99999976f, -3.99999976f, -0.266666651f, -0.266666651f, -0.266666651f, -4, 0, 0, 0, 0, -0.266666651f,
      -0.266666651f, -0.266666651f, -0.266666651f, -0.266666651f, -0.266666651f, -0.266666889f, 0, 0;
  Vector v(4);
  v << -0.017055558f, -0.398735732f, 0.131678954f, 0.132076606f;
  const auto p = params(col({-0.377732962f, 0.0715599805f, -0.0592093915f, -0.871899724f}),
                        col({1.682863f, -0.134468019f, -1.11774647f, -0.941870868f}), v, Vector::Zero(4));
  AttentionConfig<float> c;
  c.score = "additive";
  for (const Eigen::Index bk : {1, 3, 8}) {
    CAPTURE(bk);
    const auto g = grads(Q, K, V, dO, p, c, bk);
    CHECK(g.core.dparams.W_k.cwiseAbs().maxCoeff() < 1e-12);
    // 4.7e-6 at most: what is left is the float dS's own rounding (the bar: 3.9e-5).
    CHECK(g.tiled.dparams.W_k.cwiseAbs().maxCoeff() < 1e-5);
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(bk));
  }
}

TEST_CASE("tiled additive dv: dS of 1e38 over t near -1 take the split (a study case, 2026-12-07)",
          "[faults][reliability][tiled][score][additive]") {
  // A mutation of tests/fuzz/fixed/additive-dK-fifteenth-2026-12-06-b1: a value of 2.3e38 gives
  // dS of ~1e38, and every t of unit 1 is within 3e-3 of -1, so dv's plain sum keeps the dS's
  // rounding (~2e31 per row) that the split's exact R = 0 takes out. Summed in double, the
  // plain sum passed its estimate (9 bits of float) and dv was -6.38941e35 where the double
  // core gives -6.389893e35 (15 times the bar) until the first pass formed the split as well.
  const Matrix Q = col({1.66153499e+35f, 1, 1, -3}),
               K = col({3.56078434f, 4, 4, 4, 4, 4, 3.99999952f, 2.03537083f, 2.05490208f}),
               V = col({2.03230476f, 1, 1, 2.34447131e+38f, -2.48817396f, 1, 0, 0, 1}), dO = col({1, 1, 1, 1});
  Vector v(2), b(2);
  v << -0.852199197f, 0.241931677f;
  b << 0, 1;
  const auto p = params(col({-2.94315386f, -0.0458469018f}), col({-0.779219449f, -2.05107808f}), v, b);
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.10652487625108167;
  c.mask.window_left = 2;
  for (const Eigen::Index bk : {2, 9}) {
    CAPTURE(bk);
    const auto g = grads(Q, K, V, dO, p, c, bk);
    CHECK(g.core.dparams.v(1) == Approx(-6.389893e35).epsilon(1e-6));
    CHECK(g.tiled.dparams.v(1) == Approx(g.core.dparams.v(1)).epsilon(5e-6));
    CHECK(g.tiled.dparams.v(0) == Approx(g.core.dparams.v(0)).epsilon(5e-6));
  }
}

TEST_CASE("tiled additive dv at tau = 1e-4: tied keys under dO of 5e30 (fuzzer, 2026-12-07)",
          "[faults][reliability][tiled][score][additive]") {
  // tests/fuzz/fixed/additive-dv-twentyfirst-2026-12-07-t3: v = 0 (all scores 0), six tied
  // keys at 0 and one at 3.56, causal (bottom right): dv = 195.786 from the query whose dO is
  // -4; the float sums gave 195.788 (1.3 times the bar).
  const Matrix Q = col({3, -3, -3}), K = col({0, 0, 0, 0, 0, 0, 3.5607152f, 0}),
               V = col({0, 0, 0, 0, 0, -2.55686283f, -2.55686283f, -1.06420898f}),
               dO = col({-5.0706024e+30f, 0, -3.99999952f});
  const auto p = params(col({-0.748811126f}), col({0.671140432f}), Vector::Zero(1), Vector::Constant(1, 1.03397577e-25f));
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  c.mask.causal = true;
  c.mask.alignment = CausalAlignment::bottom_right;
  for (const Eigen::Index bk : {1, 3, 8}) {
    CAPTURE(bk);
    const auto g = grads(Q, K, V, dO, p, c, bk);
    CHECK(g.core.dparams.v(0) == Approx(195.786).epsilon(1e-5));
    CHECK(g.tiled.dparams.v(0) == Approx(g.core.dparams.v(0)).epsilon(2e-6));
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(bk));
  }
}

TEST_CASE("tiled additive dv: keys 1e-12 apart in t under a value of 1e20 take the exact pass (review, 2026-12-07)",
          "[faults][reliability][tiled][score][additive]") {
  // t_0 and t_1 (~0.245) differ by 1e-12: their differences rounded in double keep ~13 bits,
  // which passed float's 9-bit rule when T's rounding was weighed at float's eps: dv 23499952
  // where the double core gives 23500371.6 (11.5 times the bar). T's own rounding now keeps
  // double's 34 bits, and such a unit takes the exact differences (score/additive_rows.hpp).
  const Matrix Q = col({1}), K = col({0, 1e-6f}), dO = col({1});
  AttentionConfig<float> c;
  c.score = "additive";
  for (const float big : {1e20f, 1e38f}) {
    const Matrix V = col({0, big});
    const auto p = params(col({0}), col({1e-6f}), Vector::Constant(1, 1), Vector::Constant(1, 0.25f));
    CAPTURE(big);
    const auto g = grads(Q, K, V, dO, p, c, 1);
    CHECK(g.tiled.dparams.v(0) == Approx(g.core.dparams.v(0)).epsilon(1e-6));
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(1));
  }
}

TEST_CASE("tiled additive backward: seeded shapes with tied keys and huge values within the harness's bar",
          "[faults][reliability][tiled][score][additive]") {
  // L_q != L_k, one query, odd sizes, d_h across the packet widths; half the keys tied to
  // key 0, one value of 1e30, tau 1 and 0.1, scale +-1.
  std::mt19937_64 rng(20261208);
  qktest::sweep_grid({{1, 2, 1, 1}, {3, 8, 1, 3}, {7, 9, 3, 5}, {13, 17, 4, 9}}, {1.0, 0.1}, {1.0, -1.0},
                     [&](const qktest::SweepShape& s, double tau, double scale) {
                       const Matrix Q = qktest::uniform(s.L_q, s.d, rng, 2);
                       Matrix K = qktest::uniform(s.L_k, s.d, rng, 2);
                       for (Eigen::Index j = 1; j < s.L_k; j += 2) K.row(j) = K.row(0);
                       Matrix V = qktest::uniform(s.L_k, 2, rng);
                       V(s.L_k - 1, 0) = 1e30f;
                       const Matrix dO = qktest::uniform(s.L_q, 2, rng);
                       const auto p = qktest::additive_uniform(s.d, s.d, s.d_h, rng);
                       AttentionConfig<float> c;
                       c.score = "additive";
                       c.temperature = tau;
                       c.scale = scale;
                       qktest::under_bar_at_blocks(Q, K, V, dO, p, c, {3, 16});
                     });
}
