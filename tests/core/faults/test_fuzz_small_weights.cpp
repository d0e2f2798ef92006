// Fuzzer findings of the tiled backward where a gradient is made of small weights only:
// the larger terms cancel (keys tied in the logits, or a value of 0 on the top key), so the
// result is P_j (dP_j - D) of keys 20 or more below the row's logsumexp. The backward
// recomputes P = exp((z - lse tau) / tau) (flash_backward.hpp); rounding that exponent to
// float moved such a P by up to 1.5 eps |e| = 1.4e-6 relative, past the rule's floor of
// 1e-6, while the core (which keeps the forward's weights) was exact. The exponent is now
// formed in double and split (tile_ops.hpp, exp_shifted_split): P as accurate as exp.
// Right values: the core in double on the same float inputs.
#include <catch2/catch.hpp>

#include <cmath>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"

using namespace qkscope;

namespace {

struct SmallWeightCase {
  const char* score;
  float temperature, q, k0, k1, k2;
};

// dtemperature and dQ of the tiled backward against the double core: within 4e-7 relative
// (3.4 eps; the rule allowed 1.1e-6 here, and before the fix they were 1.4e-6 to 1.5e-6 off).
void check_small_weights(const SmallWeightCase& s) {
  const Matrix Q = qktest::mat<float>({{s.q}}), K = qktest::mat<float>({{s.k0}, {s.k1}, {s.k2}}),
               V = qktest::mat<float>({{-3}, {0}, {-3}}), dO = qktest::mat<float>({{1.66153499e35f}});
  AttentionConfig<float> c;
  c.score = s.score;
  c.temperature = s.temperature;
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, f64, dO.cast<double>());
  cpu::TiledOptions o;
  o.threads = 1;
  o.block_k = 2;  // the row spans two key tiles
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
  INFO(s.score << ": dtau " << tg.dtemperature << " vs " << g64.dtemperature << ", dQ " << tg.dQ(0, 0) << " vs "
               << g64.dQ(0, 0));
  CHECK(std::abs(tg.dtemperature - g64.dtemperature) <= 4e-7 * std::abs(g64.dtemperature));
  CHECK(std::abs(double(tg.dQ(0, 0)) - g64.dQ(0, 0)) <= 4e-7 * std::abs(g64.dQ(0, 0)));
  for (int j = 0; j < 3; ++j) {
    INFO("key " << j);
    CHECK(std::abs(double(tg.dK(j, 0)) - g64.dK(j, 0)) <= 4e-7 * g64.dK.cwiseAbs().maxCoeff());
  }
}

}  // namespace

TEST_CASE("tiled backward: P of keys far below the logsumexp as accurate as exp (fuzzer findings)",
          "[faults][reliability][tiled]") {
  // cosine: unit rows -1, 1, 1, logits -10.17, 10.17, 10.17: dtau is P_0's term alone (the
  // tied keys' x - x0 is 0), P_0 = e^-20.35; it came out 1.5e-6 relative off (CI's run).
  check_small_weights({"cosine", 0.0982862038f, 2.05490208f, -2.0534966f, 1.0f, 1.0f});
  // dot: logits 39.9, 17.3, 10.2; dQ hinges on P_1 = e^-22.6 (V_1 = 0); 1.4e-6 off.
  check_small_weights({"dot", 0.0984454779f, 1.0f, 3.92568922f, 1.70443821f, 1.0f});
}

TEST_CASE("tiled dL/dtau where a subnormal weight beside a value of 2.6e38 is all of it (fuzzer, CI's seed-1 run)",
          "[faults][reliability][tiled]") {
  // dot, tau = 1e-4, q = 0.1 over keys 0.1 and 0.2: P_0 = e^-100 = 3.72e-44, a subnormal
  // float (27 times the least one, 1.7 % off), and V_1 = 2.6e38 makes P_0 (dP_0 - D) the
  // whole of dL/dtau = -9.58092. The tiled path gave -9.74431; P below FLT_MIN is now taken
  // in double for dL/dtau (flash_backward.hpp). The core in float, whose row reruns on
  // dP 2^-e, gives -9.53674.
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 1e-4;
  const Matrix Q = qktest::mat<float>({{0.100000001f}}), K = qktest::mat<float>({{0.100000001f}, {0.200000003f}}),
               V = qktest::mat<float>({{-3.68200207f}, {2.57547031e+38f}}), dO = qktest::mat<float>({{1}});
  // The double core on the same float inputs (-9.58092).
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const double right = attention_backward<double>(Qd, Kd, Vd, {}, cd, attention_forward<double>(Qd, Kd, Vd, {}, cd),
                                                  dO.cast<double>())
                           .dtemperature;
  CHECK(right == Approx(-9.58092).epsilon(1e-5));
  for (const Eigen::Index bk : {1, 2}) {
    cpu::TiledOptions o;
    o.threads = 1;
    o.block_k = bk;
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
    CHECK(g.dtemperature == Approx(right).epsilon(1e-5));
  }
}
