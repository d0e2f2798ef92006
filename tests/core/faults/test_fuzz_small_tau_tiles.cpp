// Fuzzer findings (2026-12-06, fifteenth to twentieth sessions; tests/fuzz/fixed/cosine-* and
// neg-sq-*-dtau / -dtemperature): the tiled path's scores at a small temperature. Its float GEMM
// forms (cosine: the unit rows; negative squared Euclidean: 2 qc.kc - |qc|^2 - |kc|^2) carried
// more rounding per score than the core's scores (cosine: formed in double; neg_sq: from
// differences), and |scale| / tau multiplies both: dV 24 times the rule's bar at tau = 1e-4
// (cosine), dL/dtau 1.1 to 1.5 times at tau = 2.9e-4 (neg_sq). Seeded inputs fail the same way
// (cosine at d = 64, tau = 0.01: Swin-v2's smallest). Above |scale| / tau = 8 the tiles are now
// formed as the core forms its scores (score/cosine.hpp and score/neg_sq_euclidean.hpp,
// refine_prepare).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/random.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

namespace {

using qktest::uniform;

/// dL/dtau of the tiled path against the double core under the rule, the float core setting
/// the bar (check_tiled_matches_reference covers the output and dQ, dK, dV).
void check_tiled_dtau(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                      const AttentionConfig<float>& c, const cpu::TiledOptions& o) {
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
  const auto f32 = attention_forward<float>(Q, K, V, {}, c);
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, f64, dO.cast<double>());
  CHECK_MATCHES_REFERENCE("tiled dL/dtau", MatrixD::Constant(1, 1, tg.dtemperature),
                          MatrixD::Constant(1, 1, g32.dtemperature), MatrixD::Constant(1, 1, g64.dtemperature));
}

/// The tiled path against the core under the rule (output, dQ, dK, dV at two tilings, and
/// dL/dtau) for `score` over shapes with L_q != L_k, one query and odd sizes, at each tau, with
/// scale +-1, causal or not; queries and keys spread over [-spread, spread).
void check_small_tau(const char* score, std::initializer_list<double> taus, float spread) {
  struct Shape {
    Eigen::Index L_q, L_k, d;
  };
  const Shape shapes[] = {{7, 8, 5}, {1, 9, 3}, {33, 17, 64}, {96, 130, 64}};
  std::uint64_t seed = 20261206;
  for (const Shape& s : shapes)
    for (const double tau : taus)
      for (const double scale : {1.0, -1.0})
        for (const bool causal : {false, true}) {
          std::mt19937_64 rng(seed++);
          const Matrix Q = uniform(s.L_q, s.d, rng, spread), K = uniform(s.L_k, s.d, rng, spread),
                       V = uniform(s.L_k, 3, rng), dO = uniform(s.L_q, 3, rng);
          AttentionConfig<float> c = qktest::score_config(score, tau);
          c.scale = scale;
          c.mask.causal = causal;
          CAPTURE(score, s.L_q, s.L_k, s.d, tau, scale, causal);
          cpu::TiledOptions o;  // the default tiles, and one thread
          o.threads = 1;
          qktest::check_tiled_matches_reference(Q, K, V, dO, c, o);
          qktest::check_tiled_matches_reference(Q, K, V, dO, c);  // one query per tile, two keys per block
          check_tiled_dtau(Q, K, V, dO, c, o);
        }
}

}  // namespace

TEST_CASE("tiled cosine at small temperatures matches the core under the rule (output, dQ, dK, dV, dL/dtau)",
          "[faults][reliability][tiled][score]") {
  check_small_tau("cosine", {1e-2, 1e-4}, 1);
}

TEST_CASE("tiled negative squared Euclidean at small temperatures matches the core under the rule",
          "[faults][reliability][tiled][score]") {
  // Spread 0.02: the form's cancellation stays under the bound that sends a call to the core
  // (detail/logit_range.hpp), so these run on the tiled kernels (check_tiled_matches_reference
  // requires it).
  check_small_tau("neg_sq_euclidean", {1e-2, 1e-3}, 0.02f);
}

TEST_CASE("tiled negative squared Euclidean at tau = 1e-4: dL/dtau of a fuzzer input (-g2)",
          "[faults][reliability][tiled][score]") {
  // tests/fuzz/fixed/neg-sq-dtau-seventeenth-2026-12-06-g2: keys 3.56071469e-05 and
  // 3.56070159e-05 beside 0 and 2e-5, d = 1, causal (bottom-right). The GEMM form kept
  // ~eps (|qc|^2 + |kc|^2) per score, under its refine bound of 4 |S| but past the core's, and
  // 1 / tau = 1e4 put dL/dtau 1.3 times the rule's bar from the double core (-257.398 where
  // it is -257.394).
  const Matrix Q = qktest::mat({{0.00906999968}, {-3.76108508e-42}, {0.0}, {0.0}});
  const Matrix K = qktest::mat({{0.0}, {3.56071469e-05}, {3.56070159e-05}, {1.99999995e-05}, {0.0}});
  const Matrix V = qktest::mat({{0.0}, {3.99804688}, {0.0}, {0.0}, {3.5625}});
  const Matrix dO = qktest::mat({{3.99828434}, {3.99987793}, {0.0}, {0.0}});
  AttentionConfig<float> c = qktest::score_config("neg_sq_euclidean", 1e-4);
  c.mask.causal = true;
  c.mask.alignment = CausalAlignment::bottom_right;
  for (const cpu::TiledOptions& o : {cpu::TiledOptions{}, qktest::one_thread_small_tiles()}) {
    check_tiled_dtau(Q, K, V, dO, c, o);
    qktest::check_tiled_matches_reference(Q, K, V, dO, c, o);
  }
}

TEST_CASE("tiled cosine forms its tiles in double only above |scale| / tau = 8", "[tiled][score]") {
  // Below the gain the float GEMM's rounding is inside the rule for output, dQ, dK and dV at
  // scale 1 (seeded d = 1 to 2048 pass), so the tiles keep the float GEMM's speed there.
  std::mt19937_64 rng(7);
  const Matrix Q = uniform(20, 64, rng), K = uniform(40, 64, rng);
  std::vector<score::DotForm<float>> forms;
  forms.push_back(score::Cosine::prepare<float>(Q, K, {}));
  CHECK_FALSE(score::Cosine::refine_prepare<float>(forms[0], Q, K, 8.0));
  CHECK(forms[0].q64.size() == 0);
  CHECK(score::Cosine::refine_prepare<float>(forms[0], Q, K, 8.5));
  CHECK(forms[0].refine_all);  // its tiles are formed whole: the fast paths skip their GEMM
  CHECK(forms[0].q64.rows() == 20);
  CHECK(forms[0].k64.rows() == 40);
  // Double rows never take it: their GEMMs have the core's precision already.
  score::DotForm<double> fd = score::Cosine::prepare<double>(Q.cast<double>(), K.cast<double>(), {});
  CHECK_FALSE(score::Cosine::refine_prepare<double>(fd, Q.cast<double>(), K.cast<double>(), 1e6));
  // neg_sq keeps its tile check at every gain, and refines every entry only above 8.
  score::DotForm<float> fn = score::NegSqEuclidean::prepare<float>(Q, K, {});
  CHECK(score::NegSqEuclidean::refine_prepare<float>(fn, Q, K, 8.0));
  CHECK_FALSE(fn.refine_all);
  CHECK(score::NegSqEuclidean::refine_prepare<float>(fn, Q, K, 8.5));
  CHECK(fn.refine_all);
}
