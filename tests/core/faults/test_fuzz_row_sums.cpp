// Fuzzer findings of 2026-12-03 (docs/RELIABILITY.md) whose right gradient is a row's sum of
// dS times something: the softmax makes sum_j dS_ij exactly 0 (its weights sum to 1), and
// the tiled backward summed float dS of size 1 / tau. It now sums them in double before
// they are rounded (cpu/flash_backward.hpp finish_tile, the scorers' row_sums()). Also the
// inputs of that campaign that pass since D is formed from the divided P and the additive
// scorer tests its fused tanh. Each case is the finding's input (tests/fuzz/fixed/) with its
// right value: the double core, under the suite's tolerance rule with the float core as the
// bar (faults/tiled_check.hpp).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/tiled_check.hpp"

using namespace qkscope;
using qktest::mat;
using qktest::tiled_matches;
using qktest::vec;

namespace {

ScoreParams<float> additive_params(const Matrix& W_q, const Matrix& W_k, const Vector& v) {
  ScoreParams<float> p;
  p.W_q = W_q;
  p.W_k = W_k;
  p.v = v;
  p.b = Vector::Zero(v.size());
  return p;
}

}  // namespace

TEST_CASE("tiled linear concat: dQ = w_q sum_j dS_ij is 0 at tau = 1e-4 (fuzzer seed 4)",
          "[faults][reliability][tiled][score]") {
  // s_ij = w_q q_i + w_k k_j: w_q q_i shifts the row's logits alike, so its gradient is 0.
  // Summing float dS of size 1e4 gave dQ = -5.4e-4 where the rule allows 1e-6.
  AttentionConfig<float> c;
  c.score = "linear_concat";
  c.temperature = 1e-4;
  ScoreParams<float> p;
  p.w = vec({0.55538249f, -0.0242947005f});
  const Matrix Q = mat<float>({{1.05879118e-30f}}),
               K = mat<float>({{-3.82009802e-08f}, {9.99999994e-09f}, {2.99999989e-08f}}),
               V = mat<float>({{1}, {-3.82009792f}, {1}}), dO = mat<float>({{1}});
  SECTION("no modifier: exactly the structural 0") {
    const auto g = tiled_matches(Q, K, V, dO, p, c);
    CHECK(std::abs(g.dQ(0, 0)) <= 1e-9);
  }
  SECTION("with a softcap the row sum bends a little: the slope is summed in double too") {
    c.bias.softcap = 6.95337025;
    tiled_matches(Q, K, V, dO, p, c);
  }
  SECTION("several query rows, a causal mask and ALiBi (per-row shifts keep the 0)") {
    const Matrix Q3 = mat<float>({{1.05879118e-30f}, {-2e-8f}, {3e-8f}});
    c.mask.causal = true;
    c.mask.alignment = CausalAlignment::bottom_right;
    c.bias.alibi_slope = 0.25;
    const auto g = tiled_matches(Q3, K, V, mat<float>({{1}, {-2}, {0.5f}}), p, c);
    for (Eigen::Index i = 0; i < 3; ++i) CHECK(std::abs(g.dQ(i, 0)) <= 1e-9);
  }
}

TEST_CASE("tiled additive near 0 at tau = 1e-4 with a softcap: dQ from the row sums (fuzzer)",
          "[faults][reliability][tiled][score]") {
  // Every tanh argument is near 1e-8, so dA_ih = v_h sum_j dS_ij (1 - t^2) is nearly the
  // row's sum of dS: dQ was -3.6e-4 where the right value is 4e-13 (twice the bar).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-4;
  c.bias.softcap = 6.95337025;
  const auto p = additive_params(mat<float>({{1.17273891f}, {-0.031363558f}, {1.33336735f}, {-0.771694601f}}),
                                 mat<float>({{0.383388877f}, {1.2512517f}, {0.426473469f}, {0.507703722f}}),
                                 vec({0.357620329f, -0.0993139818f, 0.0382208303f, -0.0516179912f}));
  const Matrix Q = mat<float>({{3.99999998e-08f}}),
               K = mat<float>({{2.06249435e-08f}, {0}, {0}, {-9.99999994e-09f}, {-1.99999999e-08f}, {0}}),
               V = mat<float>({{3.99902344f}, {0}, {-3}, {0}, {0}, {0}}), dO = mat<float>({{1.92188025f}});
  const auto g = tiled_matches(Q, K, V, dO, p, c);
  CHECK(std::abs(g.dQ(0, 0)) <= 1e-6);
}

TEST_CASE("row sums: saturated additive rows and huge values keep their exact 0 (review findings)",
          "[faults][reliability][tiled][score]") {
  // A first version took R_i - sum_j dS_ij t^2 for every row and summed R_i in double even
  // without a softcap: where the tanh saturates (t = 1 in float, 1 - t^2 = 0) the float core
  // gives exactly 0 and the split left 6e-5 (61 times the bar); with a value of 1.6e30 the
  // double row sum left 1e14 where the right value is 0.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 1e-3;
  const auto p = additive_params(mat<float>({{1}}), mat<float>({{1}}), vec({1}));
  const Matrix K = mat<float>({{0}, {0.75f}, {1.5f}}), V = mat<float>({{1}, {-3.8200979f}, {2.5f}});
  SECTION("a saturated row (q = 50)") {
    const auto g = tiled_matches(mat<float>({{50}}), K, V, mat<float>({{1}}), p, c, 1);
    // 2.02e-41, as the double core's (the backward's sums run in double since the twenty-second
    // session, where sech^2 50 = 1.5e-43 is not 0; the float core's t rounds to 1 and gives 0).
    CHECK(std::abs(g.dQ(0, 0)) < 1e-38f);
  }
  SECTION("a zero query beside a large one (the direct form), q = 12 and q = 3") {
    tiled_matches(mat<float>({{0}, {12}}), K, V, mat<float>({{0.5f}, {1}}), p, c, 1);
    tiled_matches(mat<float>({{0}, {3}}), K, V, mat<float>({{0.5f}, {1}}), p, c, 1);
  }
  SECTION("additive with a value of 1.6e30") {
    c.temperature = 0.251858401;
    const auto pa = additive_params(mat<float>({{0.661573827f, -0.574301422f, -0.520867705f}}), mat<float>({{0.1632265f}}),
                                    vec({0.665069878f}));
    const auto g = tiled_matches(mat<float>({{130, 0, 0}}), Matrix::Zero(3, 1),
                                 mat<float>({{0, 1.58361455e+30f, 0}, {0, 0, 0}, {0, 0, 0}}), mat<float>({{0, -1, 0}}), pa, c, 1);
    CHECK(g.dQ.cwiseAbs().maxCoeff() == 0.0f);
  }
  SECTION("linear concat with a value of 1.1e24") {
    c.score = "linear_concat";
    c.scale = 1.757786;
    c.temperature = 0.0939809897;
    ScoreParams<float> pl;
    pl.w = vec({0.505291045f, 1.30717623f, -0.629588723f, 0.619957924f});
    const auto g = tiled_matches(mat<float>({{0, 0}}), mat<float>({{0, 0}, {0, -0.239999995f}}),
                                 mat<float>({{1.11799692e+24f}, {0}}), mat<float>({{3.02051401f}}), pl, c, 1);
    CHECK(g.dQ.cwiseAbs().maxCoeff() == 0.0f);
  }
}

TEST_CASE("row sums and slopes: a second reviewer's inputs", "[faults][reliability][tiled][score]") {
  AttentionConfig<float> c;
  c.bias.softcap = 1;
  c.temperature = 0.02;
  c.bias.dense = mat<float>({{0, 0.1f, 0.7f}});
  SECTION("linear concat: the reference slope at a key of tiny P beside saturated keys (dQ 2e15, right 2e-6)") {
    c.score = "linear_concat";
    ScoreParams<float> p;
    p.w = vec({1, 1});
    tiled_matches(mat<float>({{0}}), mat<float>({{0}, {40}, {45}}), mat<float>({{0}, {1e30f}, {-3.3e29f}}), mat<float>({{1}}),
                  p, c, 1);
  }
  SECTION("additive: the same with the direct form") {
    c.score = "additive";
    tiled_matches(mat<float>({{0}}), mat<float>({{0}, {50}, {45}}), mat<float>({{0}, {1.2345e12f}, {-3.31e11f}}),
                  mat<float>({{1}}), additive_params(mat<float>({{1}}), mat<float>({{1}}), vec({40})), c, 1);
  }
  SECTION("additive: R - sum dS t^2 with float softcap slopes near saturation (10.5 times the bar)") {
    c.score = "additive";
    c.bias.softcap = 0.1316;
    c.temperature = 0.011;
    c.bias.dense.resize(0, 0);
    const Matrix I = Matrix::Identity(2, 2);
    tiled_matches(mat<float>({{0, 0}}), mat<float>({{0, 0}, {50, 0}, {50, -0.3f}}), mat<float>({{0}, {1e4f}, {0}}),
                  mat<float>({{1}}), additive_params(I, I, vec({1, 0.05f})), c, 1);
  }
}

TEST_CASE("tiled additive, fused form: tied keys stay tied, and p = e^{2a} e^{2b} may overflow (review findings)",
          "[faults][reliability][tiled][score]") {
  AttentionConfig<float> c;
  c.score = "additive";
  SECTION("keys 1 and 4 tied: e^{2B} of both from the same exp (dQ 1.3e-5 where it is 0)") {
    c.temperature = 0.000695599397;
    const auto p = additive_params(mat<float>({{-0.384306341f, -1.14284694f, -0.534101605f}, {-0.33037737f, 0.418877184f, -0.330851048f}}),
                                   mat<float>({{-0.410572648f, -0.842416406f, 0.0767096132f}, {-0.311415315f, 0.0101552941f, -0.677989542f}}),
                                   vec({-0.63523519f, 0.874936402f}));
    const Matrix K = mat<float>({{0, 0, -1}, {0.886650443f, 3.61772919f, -1.00391245f}, {0, 0, -1}, {0, 0, -1},
                                 {0.886650443f, 3.61772919f, -1.00391245f}});
    Matrix V = Matrix::Zero(5, 3);
    V(4, 2) = 0.5f;
    tiled_matches(Matrix::Zero(1, 3), K, V, mat<float>({{0, 0, 1.89999998f}}), p, c);
  }
  SECTION("A + B past 44 with |A|, |B| under 40: p = inf, 1 - t^2 = 0, not NaN") {
    tiled_matches(mat<float>({{39}, {0.5f}}), mat<float>({{39}, {0.25f}, {-1}}), mat<float>({{1}, {-2}, {0.5f}}),
                  mat<float>({{1}, {1}}), additive_params(mat<float>({{1}}), mat<float>({{1}}), vec({1})), c);
  }
}

TEST_CASE("tiled additive, fused form: 1 - t^2 near t = -1 keeps its relative accuracy (fuzzer)",
          "[faults][reliability][tiled][score]") {
  // The fused backward formed 1 - t^2 as r (2 - r), r = 1 - t: at t = -0.987, r = 1.987 and
  // 2 - r cancels (dB, so dW_k, 6e-6 relative off, 1.3 times the bar). Now p r^2 (2 - r = p r).
  AttentionConfig<float> c;
  c.score = "additive";
  c.bias.softcap = 0.538520813;
  c.bias.alibi_slope = 0.25;
  ScoreParams<float> p = additive_params(mat<float>({{0.885817051f}, {0.258701444f}}), mat<float>({{-3}, {0.52517581f}}),
                                         vec({-0.116210043f, 0.243787751f}));
  p.b = vec({0, -2});
  tiled_matches(Matrix::Zero(3, 1), mat<float>({{0}, {-1}}), mat<float>({{-2}, {0}}), mat<float>({{0}, {0}, {-1.1529215e+18f}}),
                p, c);
}

TEST_CASE("fuzzer inputs of 2026-12-03 that pass since D is formed from the divided P and the fused tanh is tested",
          "[faults][reliability][tiled][score]") {
  AttentionConfig<float> c;
  SECTION("additive at tau = 0.105, a value of 1.7e35 (dQ)") {
    c.score = "additive";
    c.temperature = 0.105100902;
    const auto p = additive_params(mat<float>({{0.722102642f}, {-0.132936209f}, {0.721778154f}}),
                                   mat<float>({{-2.58289552f}, {-2.1183691f}, {-0.60294205f}}),
                                   vec({-0.493578196f, -0.756563246f, 0.22915028f}));
    tiled_matches(mat<float>({{0.00999999978f}}), mat<float>({{0.00187652581f}, {0.0399166681f}, {0.0186666679f}}),
                  mat<float>({{-3}, {1.66153499e+35f}, {1}}), mat<float>({{1}}), p, c);
  }
  SECTION("additive, queries at 0, keys near 1e-4, a value of 1.7e35 (dv)") {
    c.score = "additive";
    const auto p = additive_params(mat<float>({{-1.91609406f}}), mat<float>({{-0.286911488f}}), vec({-0.64093554f}));
    tiled_matches(Matrix::Zero(3, 1), mat<float>({{0}, {9.99999975e-05f}, {9.99999975e-05f}, {0}, {0.000396875024f}}),
                  mat<float>({{1.66153499e+35f}, {1}, {0}, {0}, {0}}), mat<float>({{1}, {0}, {0}}), p, c);
  }
  SECTION("additive, inputs near 3e-7, key padding and a window (dv)") {
    c.score = "additive";
    c.mask.key_length = 2;
    c.mask.window_right = 0;
    const auto p = additive_params(mat<float>({{0.945086122f}, {-1.07682717f}, {0.0802960917f}, {-0.819256306f}}),
                                   mat<float>({{-0.979802549f}, {0.43379584f}, {1.28137362f}, {0.52092272f}}),
                                   vec({0.00861769263f, 0.0836066157f, 0.527478993f, -0.270518512f}));
    tiled_matches(mat<float>({{-3.00000011e-07f}}), mat<float>({{-2.45434251e-07f}, {-6.24846734e-08f}, {-2.00000002e-07f}}),
                  mat<float>({{-1.1529215e+18f, -1, -1}, {0, 0, 0}, {0, 2, 0}}), mat<float>({{-3.71747208f, 0, 0}}), p, c);
  }
  SECTION("linear concat at scale 1e-40 and tau = 1e-4 (dw)") {
    c.score = "linear_concat";
    c.scale = 1e-40;
    c.temperature = 1e-4;
    ScoreParams<float> p;
    p.w = vec({0, 0.0373953767f});
    tiled_matches(mat<float>({{9.90352025e+19f}}), mat<float>({{-1.1529215e+10f}, {0}, {0}, {-3.65868189e-08f}}),
                  mat<float>({{-1.01412048e+31f}, {-7.37869763e+19f}, {0}, {-0.705458164f}}), mat<float>({{3.12278938f}}),
                  p, c);
  }
}

TEST_CASE("additive: the split R - sum dS t^2 only where the row's dS add up to R (review finding)",
          "[faults][reliability][tiled][score]") {
  // Key 1 has P = 1.0f and a saturated tanh; keys 0 and 2 have P near 1e-20 to 1e-9. The
  // normalizer's first-key shift rounds key 1's dS to 0 (its error is eps times dP_1 - dP_0,
  // not eps |dS_1|), so sum |dS| t^2 looked tiny and the split lost the whole -dS_1 term:
  // dQ = db = -4.1e-12 where the right value is 4.1186e-10 (the tiled path, the code before,
  // and by hand v sum dS (1 - t^2) = 0.99 * 4.16e-10). Such a row now takes the plain sum.
  AttentionConfig<float> c;
  c.score = "additive";
  const auto p = additive_params(mat<float>({{1}}), mat<float>({{1}}), vec({1}));
  const Matrix Q = mat<float>({{0}}), dO = mat<float>({{1}});
  SECTION("with a dense bias, in float and in double") {
    c.bias.dense = mat<float>({{-46, 0, -20.7f}});
    const Matrix K = mat<float>({{0.1f}, {20}, {0.1f}}), V = mat<float>({{-1e6f}, {0}, {1}});
    const auto g = tiled_matches(Q, K, V, dO, p, c);
    CHECK_THAT(double(g.dQ(0, 0)), Catch::Matchers::WithinRel(4.1186e-10, 1e-3));
    const auto f = attention_forward<float>(Q, K, V, p, c);
    CHECK_THAT(double(attention_backward<float>(Q, K, V, p, c, f, dO).dQ(0, 0)), Catch::Matchers::WithinRel(4.1186e-10, 1e-3));
    // The double core (the harness's reference) had the same fault at 1e-10 / 1e10.
    AttentionConfig<double> cd = qktest::config_as<double>(c);
    cd.bias.dense = qkscope::MatrixD{{-92, 0, -23}};
    const qkscope::MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd{{-1e10}, {0}, {1}};
    const ScoreParams<double> pd = p.cast<double>();
    const auto fd = attention_forward<double>(Qd, Kd, Vd, pd, cd);
    CHECK_THAT(attention_backward<double>(Qd, Kd, Vd, pd, cd, fd, dO.cast<double>()).dQ(0, 0),
               Catch::Matchers::WithinRel(4.12935e-11, 1e-4));
  }
  SECTION("no bias, scale 50") {
    c.scale = 50;
    const auto g = tiled_matches(Q, mat<float>({{0.0801f}, {20}, {0.672f}}), mat<float>({{-1e6f}, {0}, {1}}), dO, p, c);
    CHECK_THAT(double(g.dQ(0, 0)), Catch::Matchers::WithinRel(3.408e-8, 1e-3));
  }
}

TEST_CASE("additive: keys tied, a value of 1.6e29: the split's reference tanh makes dQ exactly 0 (fuzzer)",
          "[faults][reliability][tiled][score]") {
  // Every key is 0, so each row's t_j are equal and dA_ih = v_h (1 - t^2) R_i = 0. The split
  // R - sum dS t^2 summed float dS t^2 of size 2e25 and left dQ -7e17 (just past the bar); with
  // the reference t_r of the largest |dS|, sum dS (t^2 - t_r^2) is 0 term by term.
  AttentionConfig<float> c;
  c.score = "additive";
  const auto p = additive_params(mat<float>({{0.974649191f}, {-0.839836001f}, {-0.470224053f}, {-0.641323566f}}),
                                 mat<float>({{0.486005634f}, {-1.32636797f}, {1.88561356f}, {0.675261497f}}),
                                 vec({0, 0.516007602f, -0.441370308f, -0.581029117f}));
  const Matrix Q = mat<float>({{-0.0350537114f}, {0}, {0}}), K = Matrix::Zero(7, 1),
               V = mat<float>({{-3}, {0}, {3.97036791f}, {1.58456325e+29f}, {-1}, {-2}, {-3.86841488f}}),
               dO = mat<float>({{-1}, {3.97595215f}, {0}});
  const auto g = tiled_matches(Q, K, V, dO, p, c);
  CHECK(g.dQ.cwiseAbs().maxCoeff() <= 1e-6f);
  const auto f = attention_forward<float>(Q, K, V, p, c);
  CHECK(attention_backward<float>(Q, K, V, p, c, f, dO).dQ.cwiseAbs().maxCoeff() <= 1e-6f);
}

TEST_CASE("additive backward, v = 0: dv takes the direct tanh where the fused one is 1% off (fuzzer)",
          "[faults][reliability][tiled][score]") {
  // dv_h = sum_ij dS_ij t_ijh does not depend on v, but the choice of the fused tanh weighed
  // its error by |v_h|: at v = 0 it was "exact", and tanh arguments near 7e-6 (absolute error
  // 1e-7, 1.4% of t) gave dv 2.6% off.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.064245571;
  const auto p = additive_params(mat<float>({{0}}), mat<float>({{0.0720459968f}}), vec({0}));
  tiled_matches(Matrix::Zero(3, 1), mat<float>({{0}, {9.99999975e-05f}, {9.99999975e-05f}, {0}, {0.000399987912f}}),
                mat<float>({{0}, {-3}, {0}, {0}, {0}}), mat<float>({{2}, {1.66153499e+35f}, {1}}), p, c);
}
