// Fuzzer findings (2026-12-06, fifteenth to nineteenth sessions; tests/fuzz/fixed/cosine-*):
// cosine scores at a small temperature on the tiled path. Its float GEMM of the unit rows
// carried ~sqrt(d) eps of rounding per score, the core's (formed in double) eps / 2, and 1 / tau
// = 1e4 multiplies both: dV 24 times the rule's bar. Seeded inputs fail the same way at
// d = 64, tau = 0.01 (Swin-v2's smallest). Above |scale| / tau = 8 the tiled path now forms its
// tiles in double from unit rows in double (score/cosine.hpp, refine_prepare).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

namespace {

Matrix uniform(Eigen::Index rows, Eigen::Index cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

}  // namespace

TEST_CASE("tiled cosine at small temperatures matches the core under the rule (output, dQ, dK, dV, dL/dtau)",
          "[faults][reliability][tiled][score]") {
  struct Shape {
    Eigen::Index L_q, L_k, d;
  };
  // L_q != L_k, one query, odd sizes, and d = 64 with rows spanning key blocks.
  const Shape shapes[] = {{7, 8, 5}, {1, 9, 3}, {33, 17, 64}, {96, 130, 64}};
  std::uint64_t seed = 20261206;
  for (const Shape& s : shapes)
    for (const double tau : {1e-2, 1e-4})
      for (const double scale : {1.0, -1.0})
        for (const bool causal : {false, true}) {
          std::mt19937_64 rng(seed++);
          const Matrix Q = uniform(s.L_q, s.d, rng), K = uniform(s.L_k, s.d, rng), V = uniform(s.L_k, 3, rng),
                       dO = uniform(s.L_q, 3, rng);
          AttentionConfig<float> c = qktest::score_config("cosine", tau);
          c.scale = scale;
          if (causal) c.mask.causal = true;
          CAPTURE(s.L_q, s.L_k, s.d, tau, scale, causal);
          cpu::TiledOptions o;  // the default tiles, and one thread
          o.threads = 1;
          qktest::check_tiled_matches_reference(Q, K, V, dO, c, o);
          qktest::check_tiled_matches_reference(Q, K, V, dO, c);  // one query per tile, two keys per block
          // dL/dtau: the same rule on the 1 x 1 values.
          const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
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
}

TEST_CASE("tiled cosine forms its tiles in double only above |scale| / tau = 8", "[tiled][score]") {
  // Below the gain the float GEMM's rounding is inside the rule (seeded d = 1 to 2048 pass),
  // so the tiles keep the float GEMM's speed there.
  std::mt19937_64 rng(7);
  const Matrix Q = uniform(20, 64, rng), K = uniform(40, 64, rng);
  std::vector<score::DotForm<float>> forms;
  forms.push_back(score::Cosine::prepare<float>(Q, K, {}));
  CHECK_FALSE(score::Cosine::refine_prepare<float>(forms[0], Q, K, 8.0));
  CHECK(forms[0].q64.size() == 0);
  CHECK(score::Cosine::refine_prepare<float>(forms[0], Q, K, 8.5));
  CHECK(forms[0].q64.rows() == 20);
  CHECK(forms[0].k64.rows() == 40);
  // Double rows never take it: their GEMMs have the core's precision already.
  score::DotForm<double> fd = score::Cosine::prepare<double>(Q.cast<double>(), K.cast<double>(), {});
  CHECK_FALSE(score::Cosine::refine_prepare<double>(fd, Q.cast<double>(), K.cast<double>(), 1e6));
}
