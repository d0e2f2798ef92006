// Tiled online-softmax kernels (cpu/attention.hpp) against the double reference, with
// small tiles so that every boundary is cheap: sizes 1, tile-1, tile, tile+1, 2*tile+1
// with L_q != L_k and odd widths, every mask kind (fully masked rows and tiles included),
// both causal alignments, the biases and a temperature.
//   forward:  tiled float vs reference<double>, bar set by reference<float> (compare.hpp)
//   backward: tiled float vs core attention_backward<double> (itself checked against
//             finite differences in test_scores_generic.cpp), bar set by the core in float:
//             the larger error of two float evaluations (from the float forward, and from the
//             double forward rounded to float). One run's rounding can be 20x luckier than
//             usual on these tiny reductions (bilinear dW: 1.1e-7 where 2e-6 is typical),
//             and a lucky bar is not the precision float gives.
#include <catch2/catch.hpp>

#include "qkscope/qkscope.hpp"
#include "qkscope/cpu/attention.hpp"
#include "reference/reference.hpp"
#include "support/cases.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

constexpr Eigen::Index kTile = 4;

struct Size {
  Eigen::Index L_q, L_k, d, d_v;
};
// 1, tile-1, tile, tile+1, 2*tile+1, with L_q != L_k both ways and odd widths.
const Size kSizes[] = {{1, 1, 1, 1},  {3, 4, 3, 2},  {4, 5, 5, 3},
                       {5, 9, 3, 1},  {9, 3, 5, 2},  {9, 9, 7, 4}};

cpu::TiledOptions small_tiles(int threads = 1) { return {kTile, kTile - 1, threads}; }


/// Of two float evaluations a, b of ref, the one farther from it (the naive bar).
template <class M, class R>
const M& worse(const M& a, const M& b, const R& ref) {
  if (ref.size() == 0 || a.size() != ref.size() || b.size() != ref.size()) return a;
  return (a.template cast<double>() - ref).cwiseAbs().maxCoeff() >=
                 (b.template cast<double>() - ref).cwiseAbs().maxCoeff()
             ? a
             : b;
}

}  // namespace

// Every registered scoring function: one missing from the CPU kernels fails to compile here.
TEMPLATE_LIST_TEST_CASE("tiled forward and backward match the double reference across tile boundaries, masks and biases",
                        "[cpu]", ScoreFunctions) {
  const std::string score = TestType::name;
  detail::Rng rng(2024);
  for (const Size& s : kSizes)
    for (const auto& [mask_name, mask] : qktest::mask_cases(s.L_q, s.L_k, kTile, kTile))
      for (int bias_kind = 0; bias_kind < 3; ++bias_kind) {
        const auto sc = qktest::score_case(score, s.L_q, s.L_k, s.d, s.d_v, mask, bias_kind, rng);
        const auto& [Q, K, V, G, Qf, Kf, Vf, Gf, p64, p32, c64, c32] = sc;
        INFO("score " << score << ", L_q=" << s.L_q << " L_k=" << s.L_k << " d=" << s.d
                      << " d_v=" << s.d_v << ", mask " << mask_name << ", bias kind " << bias_kind);

        const auto ref = reference::attention<double>(Q, K, V, p64, c64);
        const auto naive = reference::attention<float>(Qf, Kf, Vf, p32, c32);
        const auto fast = cpu::attention_forward<float>(Qf, Kf, Vf, p32, c32, small_tiles());
        CHECK_FALSE(fast.fallback);
        CHECK_MATCHES_REFERENCE("output", fast.output, naive.output, ref.output);
        CHECK_MATCHES_REFERENCE("logsumexp", fast.logsumexp, naive.logsumexp, ref.logsumexp);

        const auto f64 = attention_forward<double>(Q, K, V, p64, c64);
        const auto g64 = attention_backward<double>(Q, K, V, p64, c64, f64, G);
        const auto f32 = attention_forward<float>(Qf, Kf, Vf, p32, c32);
        const auto g32a = attention_backward<float>(Qf, Kf, Vf, p32, c32, f32, Gf);
        const auto g32b = attention_backward<float>(Qf, Kf, Vf, p32, c32, qktest::result_as<float>(f64), Gf);
        AttentionGrads<float> g32;
        g32.dQ = worse(g32a.dQ, g32b.dQ, g64.dQ);
        g32.dK = worse(g32a.dK, g32b.dK, g64.dK);
        g32.dV = worse(g32a.dV, g32b.dV, g64.dV);
        g32.drelative = worse(g32a.drelative, g32b.drelative, g64.drelative);
        g32.ddense = worse(g32a.ddense, g32b.ddense, g64.ddense);
        g32.dt5_table = worse(g32a.dt5_table, g32b.dt5_table, g64.dt5_table);
        g32.dtemperature = std::abs(g32a.dtemperature - g64.dtemperature) >= std::abs(g32b.dtemperature - g64.dtemperature)
                               ? g32a.dtemperature
                               : g32b.dtemperature;
        g32.dparams.W = worse(g32a.dparams.W, g32b.dparams.W, g64.dparams.W);
        g32.dparams.W_q = worse(g32a.dparams.W_q, g32b.dparams.W_q, g64.dparams.W_q);
        g32.dparams.W_k = worse(g32a.dparams.W_k, g32b.dparams.W_k, g64.dparams.W_k);
        g32.dparams.v = worse(g32a.dparams.v, g32b.dparams.v, g64.dparams.v);
        g32.dparams.b = worse(g32a.dparams.b, g32b.dparams.b, g64.dparams.b);
        g32.dparams.w = worse(g32a.dparams.w, g32b.dparams.w, g64.dparams.w);
        const auto gt = cpu::attention_backward<float>(Qf, Kf, Vf, p32, c32, fast, Gf, small_tiles());
        CHECK_MATCHES_REFERENCE("dQ", gt.dQ, g32.dQ, g64.dQ);
        CHECK_MATCHES_REFERENCE("dK", gt.dK, g32.dK, g64.dK);
        CHECK_MATCHES_REFERENCE("dV", gt.dV, g32.dV, g64.dV);
        using S1 = Eigen::Matrix<double, 1, 1>;
        CHECK_MATCHES_REFERENCE("dtemperature", S1(gt.dtemperature), S1(g32.dtemperature),
                                S1(g64.dtemperature));
        if (bias_kind == 2) {
          CHECK_MATCHES_REFERENCE("drelative", gt.drelative, g32.drelative, g64.drelative);
          CHECK_MATCHES_REFERENCE("ddense", gt.ddense, g32.ddense, g64.ddense);
          CHECK_MATCHES_REFERENCE("dt5_table", gt.dt5_table, g32.dt5_table, g64.dt5_table);
        }
        const auto& dp = gt.dparams;
        if (p64.W.size()) CHECK_MATCHES_REFERENCE("dW", dp.W, g32.dparams.W, g64.dparams.W);
        if (p64.w.size()) CHECK_MATCHES_REFERENCE("dw", dp.w, g32.dparams.w, g64.dparams.w);
        if (p64.v.size()) {
          CHECK_MATCHES_REFERENCE("dW_q", dp.W_q, g32.dparams.W_q, g64.dparams.W_q);
          CHECK_MATCHES_REFERENCE("dW_k", dp.W_k, g32.dparams.W_k, g64.dparams.W_k);
          CHECK_MATCHES_REFERENCE("dv", dp.v, g32.dparams.v, g64.dparams.v);
          CHECK_MATCHES_REFERENCE("db", dp.b, g32.dparams.b, g64.dparams.b);
        }
        // Fully masked rows: zero output, zero dQ, logsumexp -inf.
        for (Eigen::Index i = 0; i < s.L_q; ++i)
          if (ref.logsumexp(i) == -std::numeric_limits<double>::infinity()) {
            CHECK(fast.output.row(i).isZero(0));
            CHECK(gt.dQ.row(i).isZero(0));
          }
      }
}

TEST_CASE("tiled forward handles large logits like the reference", "[cpu]") {
  detail::Rng rng(9);
  const MatrixD Q = qktest::randn(rng, 9, 5, 8.0), K = qktest::randn(rng, 11, 5, 8.0),
                V = qktest::randn(rng, 11, 3);
  AttentionConfig<double> c64;
  c64.score = "dot";
  c64.mask.causal = true;
  c64.mask.alignment = CausalAlignment::bottom_right;
  AttentionConfig<float> c32;
  c32.score = "dot";
  c32.mask = c64.mask;
  const auto ref = reference::attention<double>(Q, K, V, {}, c64);
  const auto naive = reference::attention<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), {}, c32);
  const auto fast = cpu::attention_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), {},
                                                    c32, small_tiles());
  CHECK_MATCHES_REFERENCE("output", fast.output, naive.output, ref.output);
  CHECK_MATCHES_REFERENCE("logsumexp", fast.logsumexp, naive.logsumexp, ref.logsumexp);
}

TEST_CASE("default tiles: masked keys get exactly zero weight and empty rows logsumexp -inf",
          "[cpu]") {
  // Wide tiles run Eigen's vectorised exp, whose exp(-inf) is ~3e-39, not 0.
  detail::Rng rng(12);
  const MatrixD Q = qktest::randn(rng, 130, 16), K = qktest::randn(rng, 70, 16),
                V = qktest::randn(rng, 70, 8), G = qktest::randn(rng, 130, 8);
  for (const bool pad : {false, true}) {
    AttentionConfig<double> c64;
    c64.mask.causal = true;
    c64.mask.alignment = CausalAlignment::bottom_right;  // offset -60: rows 0..59 see no key
    if (pad) c64.mask.key_length = 50;
    AttentionConfig<float> c32;
    c32.mask = c64.mask;
    INFO("key padding " << pad);
    const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>(), Gf = G.cast<float>();
    const auto ref = reference::attention<double>(Q, K, V, {}, c64);
    const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, c32);
    const auto fast = cpu::attention_forward<float>(Qf, Kf, Vf, {}, c32, {64, 64, 2});
    CHECK_MATCHES_REFERENCE("output", fast.output, naive.output, ref.output);
    CHECK_MATCHES_REFERENCE("logsumexp", fast.logsumexp, naive.logsumexp, ref.logsumexp);
    const auto f64 = attention_forward<double>(Q, K, V, {}, c64);
    const auto g64 = attention_backward<double>(Q, K, V, {}, c64, f64, G);
    const auto f32 = attention_forward<float>(Qf, Kf, Vf, {}, c32);
    const auto g32 = attention_backward<float>(Qf, Kf, Vf, {}, c32, f32, Gf);
    const auto gt = cpu::attention_backward<float>(Qf, Kf, Vf, {}, c32, fast, Gf, {64, 64, 2});
    CHECK_MATCHES_REFERENCE("dQ", gt.dQ, g32.dQ, g64.dQ);
    CHECK_MATCHES_REFERENCE("dK", gt.dK, g32.dK, g64.dK);
    CHECK_MATCHES_REFERENCE("dV", gt.dV, g32.dV, g64.dV);
    CHECK(fast.output.topRows(60).isZero(0));
    if (pad) CHECK(gt.dK.bottomRows(20).isZero(0));
  }
}

TEST_CASE("tiled results are bitwise identical for 1, 2 and 3 threads", "[cpu][threads]") {
  detail::Rng rng(77);
  const Eigen::Index L_q = 37, L_k = 29, d = 6;
  const Matrix Q = qktest::randn<float>(rng, L_q, d), K = qktest::randn<float>(rng, L_k, d),
               V = qktest::randn<float>(rng, L_k, d), G = qktest::randn<float>(rng, L_q, d);
  for (const char* score : {"scaled_dot", "additive", "linear_concat"}) {
    INFO("score " << score);
    const auto p = init_params<float>(score, d, d, 5, 3);
    AttentionConfig<float> c;
    c.score = score;
    c.mask.causal = true;
    c.mask.alignment = CausalAlignment::bottom_right;
    c.bias.relative = qktest::randn_vec<float>(rng, 7, 0.5);
    c.temperature = 0.8;
    const cpu::TiledOptions o1{8, 5, 1};
    const auto f1 = cpu::attention_forward<float>(Q, K, V, p, c, o1);
    const auto g1 = cpu::attention_backward<float>(Q, K, V, p, c, f1, G, o1);
    for (int threads : {2, 3}) {
      const cpu::TiledOptions on{8, 5, threads};
      const auto fn = cpu::attention_forward<float>(Q, K, V, p, c, on);
      const auto gn = cpu::attention_backward<float>(Q, K, V, p, c, fn, G, on);
      CHECK((fn.output.array() == f1.output.array()).all());
      CHECK((fn.logsumexp.array() == f1.logsumexp.array()).all());
      CHECK((gn.dQ.array() == g1.dQ.array()).all());
      CHECK((gn.dK.array() == g1.dK.array()).all());
      CHECK((gn.dV.array() == g1.dV.array()).all());
      CHECK((gn.drelative.array() == g1.drelative.array()).all());
      CHECK(gn.dtemperature == g1.dtemperature);
    }
  }
}

TEST_CASE("fused additive attention equals the core's additive attention", "[cpu][additive]") {
  detail::Rng rng(5);
  const Eigen::Index L_q = 13, L_k = 10, d_q = 6, d_k = 5, d_h = 7;
  const MatrixD Q = qktest::randn(rng, L_q, d_q), K = qktest::randn(rng, L_k, d_k),
                V = qktest::randn(rng, L_k, 3);
  const auto p64 = init_params<double>("additive", d_q, d_k, d_h, 1);
  AttentionConfig<double> c64;
  c64.score = "additive";
  AttentionConfig<float> c32;
  c32.score = "additive";
  const auto core64 = attention_forward<double>(Q, K, V, p64, c64);
  const auto core32 = attention_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(),
                                               p64.cast<float>(), c32);
  const auto fused = cpu::attention_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(),
                                                     p64.cast<float>(), c32, {4, 3, 2});
  CHECK_MATCHES_REFERENCE("output", fused.output, core32.output, core64.output);
  CHECK_MATCHES_REFERENCE("logsumexp", fused.logsumexp, core32.logsumexp, core64.logsumexp);
}

TEST_CASE("other normalizers fall back to the core; bad options throw", "[cpu]") {
  detail::Rng rng(3);
  const Matrix Q = qktest::randn<float>(rng, 5, 4), K = qktest::randn<float>(rng, 6, 4),
               V = qktest::randn<float>(rng, 6, 2);
  AttentionConfig<float> c;
  c.normalizer = "sparsemax";
  const auto r = cpu::attention_forward<float>(Q, K, V, {}, c);
  CHECK(r.fallback);
  CHECK((r.output.array() == attention_forward<float>(Q, K, V, {}, c).output.array()).all());
  c.normalizer = "softmax";
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q, K, V, {}, c, {0, 4, 1}),
                    Catch::Contains("block_q and block_k must be >= 1"));
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q, K, V, {}, c, {4, 4, -1}),
                    Catch::Contains("threads must be >= 0"));
  c.score = "nope";
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q, K, V, {}, c), Catch::Contains("unknown scoring function"));
}

TEST_CASE("fused additive: tanh(a + b) from exp(2a) exp(2b) is within 3e-7 of tanh in double",
          "[cpu][additive]") {
  // Every pair of a grid over [-40, 40] (the range the exp form accepts; sums up to 80
  // overflow the product, which must give exactly +-1), in the packet code the kernel uses.
  using AP = cpu::detail::AddPack<float>;
  const int n = 801;
  Eigen::ArrayXf a(n);
  for (int i = 0; i < n; ++i) a[i] = -40.f + 0.1f * float(i);
  const Eigen::ArrayXf ea = (2.f * a).exp();
  double worst = 0;
  float out[AP::size];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j + AP::size <= n; j += AP::size) {
      Eigen::internal::pstoreu(out, AP::tanh_of(Eigen::internal::pset1<AP::P>(ea[i]),
                                                Eigen::internal::ploadu<AP::P>(&ea[j])));
      for (int k = 0; k < AP::size; ++k)
        worst = std::max(worst, std::abs(double(out[k]) - std::tanh(double(a[i]) + double(a[j + k]))));
    }
  INFO("max |error| " << worst);
  CHECK(worst <= 3e-7);
}

TEST_CASE("fused additive: packet paths, row and key remainders, and the direct-tanh fallback "
          "match the core, forward and backward", "[cpu][additive]") {
  // Tiles of 8 x 43 with L_q = 37, L_k = 45, d_h = 21: full and partial row groups, key
  // packet blocks, single packets and scalar keys, h packets and scalar h.
  detail::Rng rng(31);
  const Eigen::Index L_q = 37, L_k = 45, d = 6, d_h = 21;
  for (const double w_scale : {1.0, 60.0}) {  // 60: |A| > 40, direct tanh
    INFO("projection scale " << w_scale);
    const MatrixD Q = qktest::randn(rng, L_q, d), K = qktest::randn(rng, L_k, d),
                  V = qktest::randn(rng, L_k, 3), G = qktest::randn(rng, L_q, 3);
    auto p64 = init_params<double>("additive", d, d, d_h, 4);
    p64.W_q *= w_scale;
    p64.W_k *= w_scale;
    p64.b = qktest::randn_vec(rng, d_h, 0.3);
    const auto p32 = p64.cast<float>();
    AttentionConfig<double> c64;
    c64.score = "additive";
    c64.mask.causal = true;
    c64.mask.alignment = CausalAlignment::bottom_right;
    AttentionConfig<float> c32;
    c32.score = "additive";
    c32.mask = c64.mask;
    const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>(), Gf = G.cast<float>();
    const cpu::TiledOptions opt{8, 43, 2};
    const auto ref = reference::attention<double>(Q, K, V, p64, c64);
    const auto naive = reference::attention<float>(Qf, Kf, Vf, p32, c32);
    const auto fast = cpu::attention_forward<float>(Qf, Kf, Vf, p32, c32, opt);
    CHECK_MATCHES_REFERENCE("output", fast.output, naive.output, ref.output);
    const auto f64 = attention_forward<double>(Q, K, V, p64, c64);
    const auto g64 = attention_backward<double>(Q, K, V, p64, c64, f64, G);
    const auto f32 = attention_forward<float>(Qf, Kf, Vf, p32, c32);
    const auto g32 = attention_backward<float>(Qf, Kf, Vf, p32, c32, f32, Gf);
    const auto gt = cpu::attention_backward<float>(Qf, Kf, Vf, p32, c32, fast, Gf, opt);
    CHECK_MATCHES_REFERENCE("dQ", gt.dQ, g32.dQ, g64.dQ);
    CHECK_MATCHES_REFERENCE("dK", gt.dK, g32.dK, g64.dK);
    CHECK_MATCHES_REFERENCE("dV", gt.dV, g32.dV, g64.dV);
    CHECK_MATCHES_REFERENCE("dv", gt.dparams.v, g32.dparams.v, g64.dparams.v);
    CHECK_MATCHES_REFERENCE("dW_q", gt.dparams.W_q, g32.dparams.W_q, g64.dparams.W_q);
    CHECK_MATCHES_REFERENCE("db", gt.dparams.b, g32.dparams.b, g64.dparams.b);
  }
}

TEST_CASE("batch of heads: each head equals its single-head call, bitwise, for 1, 2 and 3 threads",
          "[cpu][threads]") {
  // Work items are (head, query tile) pairs; rows span several key blocks (16 x 32 tiles)
  // under a sliding window with key padding.
  detail::Rng rng(8);
  const Eigen::Index H = 3, L_q = 70, L_k = 90, d = 8;
  std::vector<Matrix> Q, K, V, G;
  for (Eigen::Index h = 0; h < H; ++h) {
    Q.push_back(qktest::randn<float>(rng, L_q, d));
    K.push_back(qktest::randn<float>(rng, L_k, d));
    V.push_back(qktest::randn<float>(rng, L_k, d));
    G.push_back(qktest::randn<float>(rng, L_q, d));
  }
  for (const char* score : {"scaled_dot", "additive"}) {
    INFO("score " << score);
    const auto p = init_params<float>(score, d, d, 5, 3);
    AttentionConfig<float> c;
    c.score = score;
    c.mask.window_left = 40;
    c.mask.window_right = 3;
    c.mask.key_length = 80;
    std::vector<cpu::HeadInputs<float>> heads;
    std::vector<const Matrix*> dO;
    for (Eigen::Index h = 0; h < H; ++h) {
      heads.push_back({&Q[h], &K[h], &V[h]});
      dO.push_back(&G[h]);
    }
    const cpu::TiledOptions o1{16, 32, 1};
    std::vector<cpu::TiledResult<float>> f1;
    std::vector<AttentionGrads<float>> g1;
    for (Eigen::Index h = 0; h < H; ++h) {
      f1.push_back(cpu::attention_forward<float>(Q[h], K[h], V[h], p, c, o1));
      g1.push_back(cpu::attention_backward<float>(Q[h], K[h], V[h], p, c, f1[h], G[h], o1));
    }
    for (int threads : {1, 2, 3}) {
      const cpu::TiledOptions on{16, 32, threads};
      const auto fn = cpu::attention_forward_batch<float>(heads, p, c, on);
      const auto gn = cpu::attention_backward_batch<float>(heads, p, c, fn, dO, on);
      for (Eigen::Index h = 0; h < H; ++h) {
        INFO("threads " << threads << ", head " << h);
        CHECK((fn[h].output.array() == f1[h].output.array()).all());
        CHECK((fn[h].logsumexp.array() == f1[h].logsumexp.array()).all());
        CHECK((gn[h].dQ.array() == g1[h].dQ.array()).all());
        CHECK((gn[h].dK.array() == g1[h].dK.array()).all());
        CHECK((gn[h].dV.array() == g1[h].dV.array()).all());
      }
    }
  }
}
