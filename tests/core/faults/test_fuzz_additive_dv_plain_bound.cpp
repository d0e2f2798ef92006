// The tiled additive dv where the exp form's t lose a key's tiny x (cpu/additive_rows.hpp,
// fused_row_sums). dv's row share is sum_j dS_j t_j (plain) or t_r R + sum_j dS_j (t_j - t_r)
// (split, from the keys' own differences in the exact pass), whichever has the smaller bound.
// The exp form's t = 1 - 2 / (e^{2A} e^{2B} + 1) keeps an absolute error of ~1.3 eps whatever
// |t|: a query at 0 over keys at 0 and one at -8.7e-19 (B of ~2e-19) got t = 0 for every key,
// so the plain sum was 0 with a bound of 0 and beat the exact split, which had the right
// 6.3e15: dv 1.6e-20 (fuzzer, 2026-12-06: tests/fuzz/fixed/additive-dv-lost-key-difference-
// seventeenth-2026-12-06, 6.2e5 times the harness's bar). The plain bound now counts that
// absolute error, 2 |dS| per term, on the exp form's units (Bahdanau et al. 2015, A.1.2).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"

using namespace qkscope;

TEST_CASE("tiled additive dv over keys whose x differ by 2e-19 in the exp form (fuzzer, 2026-12-06)",
          "[faults][reliability][tiled][score][additive]") {
  AttentionConfig<float> c;
  c.score = "additive";
  const auto p = qktest::additive_params(qktest::mat<float>({{-1.33813834f}, {-0.163730994f}, {-1.23703516f}}),
                                         qktest::mat<float>({{0.244065687f}, {-1.11164343f}, {-0.476608515f}}),
                                         {0.89373827f, 0.010658781f, -0.481684059f}, {0, 0, -2.16229486f});
  const Matrix Q = qktest::mat<float>({{-1}, {-2}, {0}, {0}, {2.39968634f}, {2.33999586f}, {3.96875048f}});
  const Matrix K = qktest::mat<float>({{0}, {0}, {0}, {0}, {0}, {0}, {-8.67361738e-19f}, {0}, {0}});
  const Matrix V = qktest::mat<float>({{0, 0}, {0, 0}, {0, 3.5625f}, {0, -3.96875048f}, {3.5371027f, -2},
                                       {0, 0}, {2.39968634f, 2.46274519f}, {3.99989843f, 3.99999523f},
                                       {-3.96875048f, 3.5371027f}});
  const Matrix dO = qktest::mat<float>({{-2, 0}, {0, 2.39968634f}, {2.46274519f, 2.47484636f}, {-3, -1.66153499e+35f},
                                        {-3, 0}, {3.97399902f, 3.9987793f}, {0, 3.97051859f}});
  // mpmath, 60 digits: dv = (6.3273843705777e15, -2.88192713654066e16, -6.37338345603919e14).
  const double exact[] = {6.3273843705777e15, -2.88192713654066e16, -6.37338345603919e14};
  for (const Eigen::Index bk : {1, 2, 3, 4}) {
    CAPTURE(bk);
    const auto g = qktest::tiled_grads(Q, K, V, dO, p, c, bk);
    for (int h = 0; h < 3; ++h) {
      CAPTURE(h);
      CHECK(std::abs(double(g.dparams.v(h)) / exact[h] - 1) < 1e-4);  // 1.6e-20 for h = 0 before
    }
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(bk));
  }
}
