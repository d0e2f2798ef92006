// The tiled additive dA over keys whose tanh have opposite signs (cpu/additive_rows.hpp, the
// fused form's exact pass). A query at 0 over keys 1 and -1 (no bias) gives x_2 = -x_1, so
// t_2 = -t_1, u_2 = u_1 and dQ = sum_h W_q,h v_h u_h (dS_1 + dS_2) / tau = 0 exactly (the
// softmax's dS sum to 0). The fused form's t of x and -x come from e^{2A} e^{2B} and a p that is
// not exactly 1 / p', so t_1 + t_2 was a few ulps and the exact pass's -(t - t_r)(t + t_r)
// carried it times dS of 1e38: dQ -2.93e29 where 0 (fuzzer, 2026-12-06: tests/fuzz/fixed/
// additive-dQ-opposite-keys-sixteenth-2026-12-06). The pass now forms t + t_r from the keys' own
// sum where the signs differ, tanh(2A + B_j + B_r) (1 + t t_r), as tanh_difference.hpp forms
// t - t_r from B_j - B_r (Bahdanau et al. 2015, A.1.2, for the score); and, since the nineteenth
// session, where the signs agree and |t + t_r| < 1/2: small t keep the exp form's absolute error.
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/detail/rng.hpp"
#include "support/random.hpp"

using namespace qkscope;

TEST_CASE("tiled additive dQ of a query between mirrored keys is 0, dO 8.5e37 (fuzzer, 2026-12-06)",
          "[faults][reliability][tiled][score][additive]") {
  // The finding's query 2 (its keep mask hides key 0), with the relative table left out: the
  // keys' P are then 0.5 each and dS = +-2.3e38 (the finding's were 1.3e38).
  AttentionConfig<float> c;
  c.score = "additive";
  const auto p = qktest::additive_params(qktest::mat<float>({{-0.433696181f}, {-1.73848259f}}),
                                         qktest::mat<float>({{-1.72670615f}, {-1.18199217f}}),
                                         {0.853289127f, -0.610607684f}, {0, 0});
  const Matrix Q = qktest::mat<float>({{0}}), K = qktest::mat<float>({{1}, {-1}}),
               V = qktest::mat<float>({{-3}, {2.36862755f}}), dO = qktest::mat<float>({{8.47995275e+37f}});
  CHECK(qktest::double_core_grads(Q, K, V, dO, p, c).dQ(0, 0) == 0);
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    CHECK(qktest::tiled_grads(Q, K, V, dO, p, c, bk).dQ(0, 0) == 0);  // it was -1.9e29 here
  }
}

TEST_CASE("tiled additive: seeded queries at 0 over mirrored key pairs, dQ exactly 0",
          "[faults][reliability][tiled][score][additive]") {
  // Keys k and -k, a query at 0 and no bias: x_2 = -x_1 in every unit, so dQ = 0 whatever dO,
  // V and tau are (with more pairs it is not: each pair's dS need not sum to 0). Before the fix
  // 95 of these 400 shapes gave dQ != 0 (up to 9.7e27) and 12 failed the fuzz harness's bar;
  // every gradient must also match the double core under that bar.
  detail::Rng rng(11);
  for (int n = 0; n < 400; ++n) {
    const Eigen::Index d = 1 + Eigen::Index(rng.uniform() * 2),
                       d_h = 1 + Eigen::Index(rng.uniform() * 9);
    AttentionConfig<float> c;
    c.score = "additive";
    c.temperature = std::pow(10.0, 2 * rng.uniform() - 1);
    auto p = qktest::additive_params(qktest::randn<float>(rng, d_h, d), qktest::randn<float>(rng, d_h, d), {}, {});
    p.v = qktest::randn_vec<float>(rng, d_h);
    p.b = Vector::Zero(d_h);
    const Matrix k = qktest::randn<float>(rng, 1, d, 2);
    Matrix K(2, d);
    K << k, -k;
    const Matrix Q = Matrix::Zero(1, d), V = qktest::randn<float>(rng, 2, 1, 1e30);
    const Matrix dO = qktest::randn<float>(rng, 1, 1, 1e7);
    CAPTURE(n, d, d_h, c.temperature);
    for (const Eigen::Index bk : {1, 2, 3}) {
      CAPTURE(bk);
      const auto g = qktest::tiled_grads(Q, K, V, dO, p, c, bk);
      for (Eigen::Index a = 0; a < d; ++a) CHECK(g.dQ(0, a) == 0);
    }
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(2));
  }
}

TEST_CASE("tiled additive: 2A + B_j + B_r is summed in double, not at the scale of 2A (review, 2026-12-06)",
          "[faults][reliability][tiled][score][additive]") {
  // A = 20.76 with B = -20.71 and -20.82 (keys ~65.9 one ulp-ish apart beside a bias of 20.8):
  // x + y = -2.1e-5, which float rounded at the scale of 41.5 to -1.9e-5, and dQ was 8.8 %
  // off the 60-digit value; in double it is 0.30 % off, as the float core (0.28 %).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0x1.dd546388f4786p-6;
  c.mask.key_length = 2;
  const auto p = qktest::additive_params(qktest::mat<float>({{-0x1.52811cp+4f}}), qktest::mat<float>({{-0x1.4323acp-2f}}),
                                         {0x1.8fa382p+0f}, {0x1.4c30c8p+4f});
  const Matrix Q = qktest::mat<float>({{-0x1.2c0dd6p-13f}});
  const Matrix K = qktest::mat<float>({{0x1.0673f4p+6f}, {0x1.07f71ep+6f}, {0x1.07f71ep+6f}, {0x1.075b7ep+6f}});
  const Matrix V = qktest::mat<float>({{0x1.06cc08p-1f}, {-0x1.798122p+10f}, {0x1.00b002p+9f}, {-0x1.1eabdcp+11f}});
  const Matrix dO = qktest::mat<float>({{0x1.c5b4cap+97f}});
  const double exact = -2.0071146907107906e+27;  // mpmath, 60 digits
  for (const Eigen::Index bk : {1, 2, 3, 4}) {
    CAPTURE(bk);
    CHECK(std::abs(double(qktest::tiled_grads(Q, K, V, dO, p, c, bk).dQ(0, 0)) / exact - 1) < 5e-3);
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(bk));
  }
}

TEST_CASE("tiled additive dQ: t + t_r of small same-sign t from the keys' own sum (fuzzer, nineteenth session)",
          "[faults][reliability][tiled][score][additive]") {
  // tests/fuzz/fixed/additive-dQ-small-t-sum-nineteenth-2026-12-06-n4. Query 2 (q = -1.6e-4)
  // sees keys 1 and 2 nearly tied at 0 (-1.1e-44 and -8.7e-19) with dS = +-1e36, so dQ rests on
  // u_1 - u_2 = -(t_1 - t_2)(t_1 + t_2); unit 0's t are ~1.8e-4, and the exp form's t + t_r kept
  // its absolute error of ~1.3 eps, 5e-4 of the sum: dQ 5.19584e14 where 5.195931885e14 (1.7e-5
  // off, 20 times the harness's bar). The 60-digit values: tests/fuzz/mpmath_oracle.py.
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.0014267585710653371;
  const auto p = qktest::additive_params(qktest::mat<float>({{-1.10910213f}, {0.110217616f}}),
                                         qktest::mat<float>({{-0.496926904f}, {0.0531286001f}}),
                                         {0.472379684f, -0.895673513f}, {0, 2.03424025f});
  const Matrix Q = qktest::mat<float>({{-8.67361716e-23f}, {-8.67361716e-23f}, {-0.00016469977f}, {-0.000107009786f}}),
               K = qktest::mat<float>({{2}, {-1.12103877e-44f}, {-8.67361738e-19f}}),
               V = qktest::mat<float>({{-2.2958874e-41f}, {2.35293245f}, {0.0638127327f}}),
               dO = qktest::mat<float>({{-3.98507929f}, {2.59614843e+33f}, {2.59614843e+33f}, {2.59614843e+33f}});
  const double right[4] = {-9.29412080087318e-19, 605481481534518.0, 519593188530829.0, 549677589989521.0};
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    const Matrix dQ = qktest::tiled_grads(Q, K, V, dO, p, c, bk).dQ;
    for (int i = 1; i < 4; ++i) {
      CAPTURE(i);
      CHECK(std::abs(double(dQ(i, 0)) - right[i]) <= 1e-6 * std::abs(right[i]));
    }
    qktest::matches_under_harness_bar(Q, K, V, dO, p, c, qktest::one_thread(bk));
  }
}
