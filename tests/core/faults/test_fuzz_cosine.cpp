// Fuzzer findings (seeds 4 to 7 of 2026-12-02, docs/RELIABILITY.md): cosine scores with
// entries near the float maximum on the tiled path. Its unit rows were x * (1 / |x|) in
// float, and 1 / |x| is a subnormal float (few digits) once |x| passes ~1e38, so a unit row
// was off by up to 1e-1 and the output and gradients with it. The tiled path now takes the
// core's unit rows (score/cosine.hpp: divided in double, rounded once).
#include <catch2/catch.hpp>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

namespace {

struct Run {
  cpu::TiledResult<float> fwd;
  AttentionGrads<float> grads;
};

Run tiled(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO, const AttentionConfig<float>& c) {
  const cpu::TiledOptions o = qktest::one_thread_small_tiles();
  Run r;
  r.fwd = cpu::attention_forward<float>(Q, K, V, {}, c, o);
  REQUIRE_FALSE(r.fwd.fallback);  // the finding was on the tiled kernels themselves
  r.grads = cpu::attention_backward<float>(Q, K, V, {}, c, r.fwd, dO, o);
  return r;
}

AttentionConfig<float> cosine(double temperature = 1) { return qktest::score_config("cosine", temperature); }

}  // namespace

TEST_CASE("tiled cosine in d = 1: unit rows are exactly +-1, so dQ and dK are exactly 0 (fuzzer seed 7)",
          "[faults][reliability][tiled][score]") {
  // Every cosine is 1 (all entries positive): in d = 1, xhat = sign(x) and
  // dx = (dxhat - xhat (xhat dxhat)) / |x| = 0 exactly. The float 1 / |x| made
  // xhat = 0.99999994 for k = 3.98818874, and dO = 1.66e35 turned that into dK = -2e28.
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{3.98818874}, {2.0457468}, {1}}),
               V = qktest::mat<float>({{-3}, {0}, {-3}}), dO = qktest::mat<float>({{1.66153499e35}});
  const Run t = tiled(Q, K, V, dO, cosine(0.0993224022));
  CHECK(t.fwd.output(0, 0) == -2.0f);  // p = 1/3 each
  CHECK(t.grads.dQ.isZero(0));
  CHECK(t.grads.dK.isZero(0));
}

TEST_CASE("tiled cosine with keys near -2e38 and a query below the norm floor (fuzzer seed 5)",
          "[faults][reliability][tiled][score]") {
  // Both keys are negative, so khat = -1 for each, and a query under eps = 1e-8 has
  // dq = sum_j dS_j khat_j / eps = -(sum_j dS_j) / eps = 0 (dS sums to 0); the tiled path
  // gave -2.98 from a khat of -0.9999999 for k = -2.06e38.
  const Matrix Q = qktest::mat<float>({{4.23516474e-22}, {-1.1529215e18}, {-1.52266765}}),
               K = qktest::mat<float>({{-0.393865347}, {-2.06178786e38}}), V = qktest::mat<float>({{-0.788602829}, {2.11760902}}),
               dO = qktest::mat<float>({{-0.392194271}, {4.93743013e37}, {4.93743013e37}});
  const Run t = tiled(Q, K, V, dO, cosine());
  CHECK(t.grads.dQ(1, 0) == 0.0f);
  CHECK(t.grads.dQ(2, 0) == 0.0f);
  CHECK(t.grads.dK.isZero(0));
  qktest::check_tiled_matches_reference(Q, K, V, dO, cosine());
}

TEST_CASE("tiled cosine with entries near +-3e38 matches the reference (fuzzer seeds 4 and 6)",
          "[faults][reliability][tiled][score]") {
  SECTION("seed 6: d = 3, the query nearly parallel to the second key (output was 61% off)") {
    const Matrix Q = qktest::mat<float>({{-2.7823087e38, -2.78231174e38, 1}}),
                 K = qktest::mat<float>({{1, 2.0625, -2.7823087e38}, {-2.7823087e38, -2.78422985e38, -2.98914689e38}}),
                 V = qktest::mat<float>({{-1}, {-2.01948392e-28}}), dO = qktest::mat<float>({{1}});
    qktest::check_tiled_matches_reference(Q, K, V, dO, cosine());
  }
  SECTION("seed 4: zero rows beside rows of 3.27e38 (output was 86% off)") {
    const Matrix Q = qktest::mat<float>({{-1, -2}, {0, 0}, {0, 3.56078434}, {0, 3.26937941e38}, {3.26937941e38, 3.2693786e38}, {3.21600179e38, 0}}),
                 K = qktest::mat<float>({{0, 0}, {0, 0}, {3.26937941e38, 3.26937941e38}, {3.26937941e38, 3.26937941e38}}),
                 V = qktest::mat<float>({{1e30, 4}, {4, 3.99987793}, {3.56078434, 0}, {0, 0}});
    const Matrix dO = Matrix::Ones(6, 2);
    qktest::check_tiled_matches_reference(Q, K, V, dO, cosine());
  }
}

TEST_CASE("tiled cosine: a query under the norm floor beside parallel keys has dQ 0 (fuzzer, 2026-12-04)",
          "[faults][reliability][tiled][score]") {
  // All four keys are parallel to the query (d = 1), so every cosine is 1 and dQ is exactly
  // 0. The query's norm 1e-8 is at the floor, where dQ = dQhat / 1e-8: the tiled path summed
  // float dS of size 1 / tau = 1e4 (exactly 0 only in exact arithmetic) and gave -12207. The
  // dot-family scorer now sums dS (k_j - k_ref) plus the row sum times k_ref.
  const Matrix Q = qktest::mat<float>({{9.99999994e-09f}});
  const Matrix K = qktest::mat<float>({{1}, {2}, {1}, {1}});
  const Matrix V = qktest::mat<float>({{2.05490208f}, {1}, {1}, {2}});
  const Matrix dO = qktest::mat<float>({{1}});
  const auto c = cosine(1e-4);
  const auto r = tiled(Q, K, V, dO, c);
  CHECK(r.grads.dQ(0, 0) == 0.0f);
  const auto cd = qktest::config_as<double>(c);
  const auto f64 = attention_forward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, cd);
  const auto g64 = attention_backward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, cd, f64, dO.cast<double>());
  const auto f32 = attention_forward<float>(Q, K, V, {}, c);
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
  CHECK_MATCHES_REFERENCE("tiled output", r.fwd.output, f32.output, f64.output);
  CHECK_MATCHES_REFERENCE("tiled dK", r.grads.dK, g32.dK, g64.dK);
  CHECK_MATCHES_REFERENCE("tiled dV", r.grads.dV, g32.dV, g64.dV);
  // The same keys in another order and at an odd width: the reference key is whichever is
  // nearest the mean, and ties still cancel exactly.
  const Matrix Q3 = qktest::mat<float>({{1e-9f, 2e-9f, -3e-9f}, {0.3f, 0.1f, -0.2f}});
  const Matrix K3 = qktest::mat<float>({{1, 2, 3}, {2, 4, 6}, {-0.5f, -1, -1.5f}, {0.5f, 1, 1.5f}, {3, 6, 9}});
  const Matrix V3 = qktest::mat<float>({{1}, {-2}, {3}, {0.5f}, {2}});
  const Matrix dO3 = qktest::mat<float>({{1}, {-1}});
  const auto r3 = tiled(Q3, K3, V3, dO3, cosine(1e-3));
  const auto f3 = attention_forward<double>(Q3.cast<double>(), K3.cast<double>(), V3.cast<double>(), {}, qktest::config_as<double>(cosine(1e-3)));
  const auto g3 = attention_backward<double>(Q3.cast<double>(), K3.cast<double>(), V3.cast<double>(), {},
                                             qktest::config_as<double>(cosine(1e-3)), f3, dO3.cast<double>());
  const auto f3s = attention_forward<float>(Q3, K3, V3, {}, cosine(1e-3));
  const auto g3s = attention_backward<float>(Q3, K3, V3, {}, cosine(1e-3), f3s, dO3);
  CHECK_MATCHES_REFERENCE("tiled dQ (mixed signs)", r3.grads.dQ, g3s.dQ, g3.dQ);
  CHECK_MATCHES_REFERENCE("tiled dK (mixed signs)", r3.grads.dK, g3s.dK, g3.dK);
}
