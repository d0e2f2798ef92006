// The double core's additive dA split where a row's tanh all saturate (score/additive.hpp):
// the split's terms t_r^2 - t^2 round to 0 once t = +-1 in double (|x| past ~19), and so does
// the exact pass's -(t - t_r)(t + t_r) where t and t_r saturate with opposite signs, so the
// split's sum and bound were both 0 and it was chosen: dQ 0 where it is -7.38e7, and -1.07e7
// where it is 1.756e9 (fuzzer, 2026-12-06: tests/fuzz/fixed/additive-dQ-saturated-sixteenth-
// 2026-12-06 and its -bias- twin; the tiled path's fused form had the right values). In double the split's terms are now u - u_r where
// that has the smaller rounding (u = 1 - t^2 without cancellation). Right values: 60-digit
// mpmath evaluations of the definition (Bahdanau et al. 2015, A.1.2).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/tiled_check.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

namespace {
void check_row(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO, const ScoreParams<float>& p,
               Eigen::Index row, double exact) {
  const auto c = qktest::score_config("additive");
  const auto g64 = qktest::double_core_grads(Q, K, V, dO, p, c);
  CHECK(std::abs(g64.dQ(row, 0) - exact) <= 1e-12 * std::abs(exact));  // 3e-15 off now
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    const auto g = qktest::tiled_grads(Q, K, V, dO, p, c, bk);
    CHECK(std::abs(double(g.dQ(row, 0)) - exact) <= 1e-5 * std::abs(exact));  // float: 2.9e-6 off
  }
}
const Matrix kQ = qktest::mat<float>({{-0.0299999993f}, {7.51999998f}, {9.81999969f}, {9.81999969f}, {-9.77999973f},
                                      {-0.0299999993f}, {9.81999969f}});
}  // namespace

TEST_CASE("additive dQ of a row whose tanh all saturate, opposite signs, in the double core (fuzzer, 2026-12-06)",
          "[faults][reliability][score][additive]") {
  // Query 1: x = 0.155 - 25.7 twice and 0.155 + 26.2 (t = -1, -1, +1 in double), dO 6.5e32.
  const auto p = qktest::additive_params(qktest::mat<float>({{0.0205785949f}}), qktest::mat<float>({{-2.61838293f}}),
                                         {-2.61959481f}, {0});
  const Matrix K = qktest::mat<float>({{9.81999969f}, {9.81999969f}, {-10}});
  const Matrix V = qktest::mat<float>({{0}, {0}, {-3.99998593f}});
  const Matrix dO = qktest::mat<float>({{-1.80390024f}, {6.49037107e+32f}, {-3}, {-3}, {-3}, {-3}, {-3}});
  check_row(kQ, K, V, dO, p, 1, -73773429.2236284);  // the double core gave 0
}

TEST_CASE("additive dQ of a row whose tanh all saturate, with a bias, in the double core (fuzzer, 2026-12-06)",
          "[faults][reliability][score][additive]") {
  const auto p = qktest::additive_params(qktest::mat<float>({{0.19349587f}}), qktest::mat<float>({{-2.61838293f}}),
                                         {-2.61960793f}, {-2.61627197f});
  const Matrix K = qktest::mat<float>({{9.81999969f}, {-9.86999989f}, {-10}});
  const Matrix V = qktest::mat<float>({{0}, {0}, {-3.99998593f}});
  const Matrix dO = qktest::mat<float>({{-974}, {0}, {6.49037107e+32f}, {-3}, {-3}, {-3}, {-3}});
  check_row(kQ, K, V, dO, p, 2, 1755779331.67515);  // the double core gave -1.07e7
}
