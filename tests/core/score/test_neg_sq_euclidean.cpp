// Negative squared Euclidean distance (score/neg_sq_euclidean.hpp; Kim, Papamakarios & Mnih
// 2021): known values, the fast-path form q' . k' = -|q - k|^2, and its accuracy against the
// double reference when queries sit close to keys far from the origin (where the expanded
// form 2 q.k - |q|^2 - |k|^2 would cancel), on the core and the CPU tiled kernels. The
// generic suites (test_scores_generic.cpp, test_cpu_kernels.cpp, the CUDA interpreter tests)
// sweep it over masks, biases and normalizers like every registered function.
#include <catch2/catch.hpp>

#include "qkscope/qkscope.hpp"
#include "qkscope/cpu/attention.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

using namespace qkscope;
using F = score::NegSqEuclidean;

TEST_CASE("negative squared Euclidean: known values, default scale 1/sqrt(d), registry entry", "[score]") {
  MatrixD Q(1, 2), K(2, 2);
  Q << 1, 2;
  K << 4, 6, 1, 2;
  const MatrixD S = F::forward<double>(Q, K, {});
  CHECK(S(0, 0) == -25.0);
  CHECK(S(0, 1) == 0.0);  // the nearest key scores highest
  AttentionConfig<double> c;
  c.score = "neg_sq_euclidean";
  const auto r = attention_forward<double>(Q, K, K, {}, c);
  CHECK(r.scale == Approx(1.0 / std::sqrt(2.0)));
  const auto infos = score_infos();
  CHECK(std::any_of(infos.begin(), infos.end(), [](const ScoreInfo& i) {
    return std::string(i.name) == "neg_sq_euclidean" && std::string(i.label) == "Negative squared Euclidean distance" &&
           i.same_dim && std::string(i.params).empty();
  }));
  CHECK_THROWS_WITH(attention_forward<double>(Q, MatrixD::Ones(2, 3), K, {}, c), Catch::Contains("same width d"));
}

TEST_CASE("negative squared Euclidean: the augmented rows' dot product is -|q - k|^2", "[score]") {
  detail::Rng rng(4);
  const MatrixD Q = qktest::randn(rng, 7, 5), K = qktest::randn(rng, 9, 5);
  const auto f = F::prepare<double>(Q, K, {});
  REQUIRE(f.q.cols() == 7);
  const MatrixD S = f.q * f.k.transpose(), S_direct = F::forward<double>(Q, K, {});
  CHECK((S - S_direct).cwiseAbs().maxCoeff() <= 1e-12 * (1 + S_direct.cwiseAbs().maxCoeff()));
}

TEST_CASE("negative squared Euclidean: queries close to keys far from the origin, core and tiled kernels",
          "[score][cpu]") {
  detail::Rng rng(21);
  for (const double offset : {0.0, 30.0, 1000.0})
    for (const double spread : {1.0, 1e-3}) {
      INFO("keys at offset " << offset << ", queries within " << spread << " of a key");
      const Eigen::Index L_q = 23, L_k = 31, d = 16, d_v = 5;
      MatrixD K = qktest::randn(rng, L_k, d).array() + offset;
      MatrixD Q(L_q, d);
      for (Eigen::Index i = 0; i < L_q; ++i) Q.row(i) = K.row((3 * i) % L_k) + spread * qktest::randn(rng, 1, d);
      const MatrixD V = qktest::randn(rng, L_k, d_v), G = qktest::randn(rng, L_q, d_v);
      // Round to float first so that every path sees the same inputs.
      const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>(), Gf = G.cast<float>();
      const MatrixD Qd = Qf.cast<double>(), Kd = Kf.cast<double>(), Vd = Vf.cast<double>(), Gd = Gf.cast<double>();
      AttentionConfig<double> c64;
      c64.score = "neg_sq_euclidean";
      c64.mask.causal = true;
      c64.mask.alignment = CausalAlignment::bottom_right;
      AttentionConfig<float> c32;
      c32.score = c64.score;
      c32.mask = c64.mask;
      const auto ref = reference::attention<double>(Qd, Kd, Vd, {}, c64);
      const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, c32);
      const auto core = attention_forward<float>(Qf, Kf, Vf, {}, c32);
      CHECK_MATCHES_REFERENCE("core output", core.output, naive.output, ref.output);
      const auto fast = cpu::attention_forward<float>(Qf, Kf, Vf, {}, c32, {8, 7, 1});
      CHECK_MATCHES_REFERENCE("tiled output", fast.output, naive.output, ref.output);
      CHECK_MATCHES_REFERENCE("tiled logsumexp", fast.logsumexp, naive.logsumexp, ref.logsumexp);
      const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, c64);
      const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, c64, f64, Gd);
      const auto g32 = attention_backward<float>(Qf, Kf, Vf, {}, c32, core, Gf);
      const auto gt = cpu::attention_backward<float>(Qf, Kf, Vf, {}, c32, fast, Gf, {8, 7, 1});
      CHECK_MATCHES_REFERENCE("tiled dQ", gt.dQ, g32.dQ, g64.dQ);
      CHECK_MATCHES_REFERENCE("tiled dK", gt.dK, g32.dK, g64.dK);
    }
}
