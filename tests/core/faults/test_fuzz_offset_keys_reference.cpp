// The double core's dQ where a row's keys sit close together far from the centre its sum runs
// about (score/tied_keys.hpp, lossy_row_reference). Negative squared Euclidean: one query at
// 0.01 over two visible keys 5.4e-22 and -1.1e-24 (key padding hides a third at 0.01), dO of
// 1.15e18 on the values' second column: the scores differ by 1.1e-23, so P = 1/2 both and dS
// = +-3.04e17, and dQ = -2 sum_j dS_j (q - k_j) = 2 dS_0 (k_0 - k_1) = 3.3e-4. The double core,
// the fuzz harness's reference, centred the keys on their mean over all three keys (3.3e-3),
// which rounded their offsets away, and gave 0; the tiled path's 3.3e-4 was flagged (fuzzer,
// 2026-12-06, tests/fuzz/fixed/neg-sq-dQ-fifteenth-2026-12-06-c5). Right value: a 60-digit
// mpmath evaluation of the definition.
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/tiled_check.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

TEST_CASE("neg_sq dQ over keys 1e-22 apart from a query at 0.01, in the double core (fuzzer, 2026-12-06)",
          "[faults][reliability][score]") {
  auto c = qktest::score_config("neg_sq_euclidean");
  c.mask.key_length = 2;
  const Matrix Q = qktest::mat<float>({{0.00999999978f}});
  const Matrix K = qktest::mat<float>({{5.42101074e-22f}, {-1.05879116e-24f}, {0.00999999978f}});
  const Matrix V = qktest::mat<float>({{1, 2.0549016f}, {0, 1}, {-2, 1.93951333e+38f}});
  const Matrix dO = qktest::mat<float>({{0, 1.1529215e+18f}});
  const double exact = 3.3030060342073937945e-4;  // mpmath, 60 digits
  const double dK0 = 6.0810935628293119997e15;     // 2 dS_0 (q - k_0); dK_1 = -dK_0 to 20 digits
  const auto g64 = qktest::double_core_grads(Q, K, V, dO, {}, c);
  CHECK(std::abs(g64.dQ(0, 0) - exact) <= 1e-12 * exact);  // it was 0
  CHECK(std::abs(g64.dK(0, 0) - dK0) <= 1e-12 * dK0);
  CHECK(std::abs(g64.dK(1, 0) + dK0) <= 1e-12 * dK0);
  CHECK(g64.dK(2, 0) == 0);  // the padded key
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    const auto g = qktest::tiled_grads(Q, K, V, dO, {}, c, bk);
    CHECK(std::abs(double(g.dQ(0, 0)) - exact) <= 1e-5 * exact);
  }
}

TEST_CASE("neg_sq dQ of queries near 0.01 over keys 7.87, -6.8e-23 and 0, in the double core (fuzzer, 2026-12-05)",
          "[faults][reliability][score]") {
  // The same kind (tests/fuzz/fixed/neg-sq-tiled-dQ-eleventh-2026-12-05): the mean key 2.62
  // rounds the two small keys' offset away, and a value of 9.2e18 makes dS of 1e19. The double
  // core gave row 1's dQ 0 where it is 7.79e-4 (the tiled path's, 615 times the bar then).
  const auto c = qktest::score_config("neg_sq_euclidean");
  const Matrix Q = qktest::mat<float>({{0.00999999978f}, {0.00999999978f}, {-0.00830322225f}, {0.00999999978f},
                                       {0.00999999978f}, {0.0249411054f}});
  const Matrix K = qktest::mat<float>({{7.86999989f}, {-6.77626343e-23f}, {0}});
  const Matrix V = qktest::mat<float>({{-2.06795153e-25f}, {1}, {9.22337204e+18f}});
  const Matrix dO = qktest::mat<float>({{0}, {2.49411106f}, {1}, {-2.25007367f}, {0}, {-5.29395592e-23f}});
  // mpmath, 60 digits, of -2 sum_j dS_ij (q_i - k_j).
  const double exact[6] = {0, 7.7927595109242312e-4, 3.1245979337008665e-4, -7.030273541594337e-4, 0,
                           -1.6540020562565665e-26};
  const auto g64 = qktest::double_core_grads(Q, K, V, dO, {}, c);
  for (Eigen::Index i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(std::abs(g64.dQ(i, 0) - exact[i]) <= 1e-12 * std::abs(exact[i]));
  }
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    const auto g = qktest::tiled_grads(Q, K, V, dO, {}, c, bk);
    for (Eigen::Index i = 0; i < 6; ++i) {
      CAPTURE(i);
      CHECK(std::abs(double(g.dQ(i, 0)) - exact[i]) <= 1e-5 * std::abs(exact[i]) + 1e-12);
    }
  }
}
