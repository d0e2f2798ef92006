// The double core's additive backward past tanh's saturation (score/additive.hpp): u = 1 - t^2
// for t = tanh(x) is sech^2 x, 1.5e-18 at x = 21.2, but t rounds to 1 in double past |x| ~ 19
// and 1 - t^2 gave 0. With dS of 1e37 that term is the whole of dW_k: the double core, the fuzz
// harness's reference, said 0 where the tiled path's 8.467e18 was right (fuzzer, 2026-12-06,
// tests/fuzz/fixed/additive-dWk-fifteenth-2026-12-06-a22). Right value: a 60-digit mpmath
// evaluation of the definition (Bahdanau et al. 2015, A.1.2).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/tiled_check.hpp"

using namespace qkscope;

TEST_CASE("additive dW_k of a key past tanh's saturation in double (fuzzer, 2026-12-06)",
          "[faults][reliability][score][additive]") {
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.80904403526407909;
  const auto p = qktest::additive_params(qktest::mat<float>({{-2.2068758f}}), qktest::mat<float>({{-3.54582071f}}),
                                         {0.120153867f}, {0});
  const Matrix Q = qktest::mat<float>({{-3.89062023f}}), K = qktest::mat<float>({{-3.56071806f}, {0}}),
               V = qktest::mat<float>({{3.4981761f}, {2.12676479e+37f}}), dO = qktest::mat<float>({{2}});
  const double exact = 8.4670396793824265e+18;  // mpmath, 60 digits; key 0's x = 21.2, sech^2 x = 1.5e-18
  const auto g64 = qktest::double_core_grads(Q, K, V, dO, p, c);
  CHECK(std::abs(g64.dparams.W_k(0, 0) - exact) <= 1e-12 * exact);  // it was 0
  const double dK0 = exact / double(K(0, 0)) * double(p.W_k(0, 0));  // dB_0 W_k, dB_0 = dW_k / k_0 (k_1 = 0)
  CHECK(std::abs(g64.dK(0, 0) - dK0) <= 1e-12 * std::abs(dK0));
  for (const Eigen::Index bk : {1, 2}) {
    CAPTURE(bk);
    const auto o = qktest::one_thread(bk);
    const auto g = cpu::attention_backward<float>(Q, K, V, p, c, cpu::attention_forward<float>(Q, K, V, p, c, o), dO, o);
    CHECK(std::abs(double(g.dparams.W_k(0, 0)) - exact) <= 1e-5 * exact);
  }
}
