// Negative squared Euclidean dK where queries sit on the keys (fuzzer findings, 2026-12-05):
// the centred form dK_j = 2 (sum_i dS_ij qc_i - colsum(dS)_j kc_j) cancels terms of size
// |dS| |qc| to leave a value near 0, in the core (double: -2048 where dK is 0) and in the
// tiled path's dS^T Q' (1.1e12). The core now takes such rows of dK as 2 sum_i dS_ij (q_i - k_j)
// from the differences, and the tiled path does on the tiles whose scores it recomputes from them
// (score/neg_sq_euclidean.hpp, refine_grad_k). Right values: exactly 0 where every pair is at
// distance 0; central differences of the double reference (core/reference/) otherwise. The
// core's dQ cancelled the same way (review): both take rows again from the differences where
// their rounding bound says the centred form kept too few bits.
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"
#include "support/gradcheck.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

TEST_CASE("neg_sq dK and dQ of keys tied at the queries' point are exactly 0 (fuzzer, 2026-12-05)",
          "[faults][reliability][tiled]") {
  // Six queries at 0 over three visible keys at 0 (key padding hides a fourth), tau ~ 1e-4,
  // values -893 and -1.15e18: dS of ~1e19, every q_i - k_j = 0.
  auto c = qktest::score_config("neg_sq_euclidean", 0.00010432755735939297);
  c.scale = -1;
  c.mask.key_length = 3;
  c.bias.alibi_slope = 1e-40;
  const Matrix Q = Matrix::Zero(6, 1), K = qktest::mat<float>({{0}, {0}, {0}, {0.000356078439f}});
  const Matrix V = qktest::mat<float>({{-893}, {-1.1529215e+18f}, {0}, {0}});
  const Matrix dO = qktest::mat<float>({{-1.01891899f}, {2.2958874e-41f}, {3.96936035f}, {33}, {4}, {-2.01916504f}});
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, attention_forward<double>(Qd, Kd, Vd, {}, cd),
                                              dO.cast<double>());
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, attention_forward<float>(Q, K, V, {}, c), dO);
  // dQ too (review): the cores' centred dQ gave 1878 (double) and -6.3e10 (float) where it is 0.
  CHECK(g64.dK.cwiseAbs().maxCoeff() == 0);
  CHECK(g32.dK.cwiseAbs().maxCoeff() == 0);
  CHECK(g64.dQ.cwiseAbs().maxCoeff() == 0);
  CHECK(g32.dQ.cwiseAbs().maxCoeff() == 0);
  for (const Eigen::Index bk : {1, 2, 4}) {
    CAPTURE(bk);
    const auto o = qktest::one_thread(bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
    REQUIRE_FALSE(t.fallback);
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
    CHECK(g.dK.cwiseAbs().maxCoeff() == 0);
    CHECK(g.dQ.cwiseAbs().maxCoeff() == 0);
  }
  // The hidden key at 1000 moves the mean key far from the queries: the tiled path sends the
  // call to the core (its cancellation bound), whose centred dQ was 3.9e9 (double) and 1.35e16.
  Matrix K2 = K;
  K2(3, 0) = 1000;
  const MatrixD K2d = K2.cast<double>();
  const auto h64 = attention_backward<double>(Qd, K2d, Vd, {}, cd, attention_forward<double>(Qd, K2d, Vd, {}, cd),
                                              dO.cast<double>());
  const auto t2 = cpu::attention_forward<float>(Q, K2, V, {}, c, qktest::one_thread(2));
  const auto h32 = cpu::attention_backward<float>(Q, K2, V, {}, c, t2, dO, qktest::one_thread(2));
  CHECK(h64.dQ.cwiseAbs().maxCoeff() == 0);
  CHECK(h32.dQ.cwiseAbs().maxCoeff() == 0);
  CHECK(h64.dK.cwiseAbs().maxCoeff() == 0);
  CHECK(h32.dK.cwiseAbs().maxCoeff() == 0);
}

TEST_CASE("neg_sq dK of keys in clusters beside a query on one (fuzzer, 2026-12-05)", "[faults][reliability][tiled]") {
  // Keys at 0, 0.01 and -5.79 (mean -1.93), a query at 0.008 and four at 0, a T5 bias: key 1's
  // dK is -0.0053059 and the tiled path gave -0.0053024 (2 times the harness's bar).
  auto c = qktest::score_config("neg_sq_euclidean");
  c.bias.t5 = T5Buckets{true, 5, 16};
  c.bias.t5_table = qktest::vec({4, 3.99240208f, 3, 1, 1});
  const Matrix Q = qktest::mat<float>({{0.00799999665f}, {0}, {0}, {0}, {0}});
  const Matrix K = qktest::mat<float>(
      {{0}, {0}, {-5.78999996f}, {-5.78999996f}, {-5.78999996f}, {0}, {0.00999999978f}, {0.00999999978f}, {0.00999999978f}});
  const Matrix V = qktest::mat<float>({{3}, {1}, {1}, {1}, {0}, {4}, {4}, {4}, {4}});
  const Matrix dO = Matrix::Constant(5, 1, 4);
  qktest::Problem pr{Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, qktest::config_as<double>(c)};
  const MatrixD dOd = dO.cast<double>();
  const MatrixD truth = qktest::numeric_grad(pr, pr.K, dOd, 1e-5);
  const auto g64 = attention_backward<double>(pr.Q, pr.K, pr.V, {}, pr.cfg,
                                              attention_forward<double>(pr.Q, pr.K, pr.V, {}, pr.cfg), dOd);
  REQUIRE(truth(1, 0) == Approx(-0.00530592).epsilon(1e-5));
  for (Eigen::Index j = 0; j < K.rows(); ++j) {
    CAPTURE(j, g64.dK(j, 0), truth(j, 0));
    CHECK(std::abs(g64.dK(j, 0) - truth(j, 0)) <= 1e-8 + 1e-7 * std::abs(truth(j, 0)));
  }
  for (const Eigen::Index bk : {1, 2, 3, 9}) {
    CAPTURE(bk);
    const auto o = qktest::one_thread(bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
    REQUIRE_FALSE(t.fallback);
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
    CHECK(std::abs(double(g.dK(1, 0)) - truth(1, 0)) <= 1e-5 * std::abs(truth(1, 0)));
    qktest::matches_under_harness_bar(Q, K, V, dO, {}, c, o);
  }
}

TEST_CASE("neg_sq core dQ: a key's offset far below the mean key's size, and a far query over keys 1e-15 apart (ninth session)",
          "[faults][reliability]") {
  // 1. Queries at 0 over keys 0, 3e-35, 0, 7.87 and -6.8e-23, a value of 1.15e18 (fuzzer): dQ_1
  // is carried by the key at -6.8e-23 (dS -7.2e16), which the centred keys (mean 1.57) round
  // away: the double core's centred dQ was -64 where it is 9.764e-6. The differences keep it.
  // (The tiled path's dQ still loses it: tests/fuzz/open/neg-sq-tiled-dQ-key-offset-2026-12-05.)
  {
    auto c = qktest::score_config("neg_sq_euclidean");
    const MatrixD Q = qktest::mat<double>({{double(-0.0299999993f)}, {0}, {0}});
    const MatrixD K = qktest::mat<double>({{0}, {double(3.08148784e-35f)}, {0}, {double(7.86999989f)}, {double(-6.77626343e-23f)}});
    const MatrixD V = qktest::mat<double>({{0}, {double(3.96884346f)}, {double(1.1529215e+18f)}, {0}, {0}});
    const MatrixD dO = qktest::mat<double>({{0}, {1}, {double(3.99999952f)}});
    const double truth[3] = {0, 9.7641931498230881e-6, 3.9056767943362239e-5};  // 80-digit sums
    const auto cd = qktest::config_as<double>(c);
    const auto g = attention_backward<double>(Q, K, V, {}, cd, attention_forward<double>(Q, K, V, {}, cd), dO);
    for (int i = 0; i < 3; ++i) CHECK(std::abs(g.dQ(i, 0) - truth[i]) <= 1e-9 * std::abs(truth[i]));
  }
  // 2. A query far from two keys 1e-15 apart (review): the differences q - k round that offset
  // away where the centred keys keep it; the row keeps the centred sum (its bound is not twice
  // the differences'). The first form took the differences: dQ[4] 2.4 % off in double, 0 in
  // float. Right values: 60-digit sums of dS_4j (-2)(q_4 - k_j) on the float inputs (mpmath:
  // -3201280.20969, 540346.795348).
  {
    auto c = qktest::score_config("neg_sq_euclidean", 0x1.655d8ap-10);
    c.mask.causal = true;
    const Matrix Q = qktest::mat<float>({{0x1.25274ep+1f, 0, 0, 0},
                                         {0x1.253122p+1f, -0x1.5ba864p-45f, 0x1.0b1844p-27f, 0x1.77cfa8p-26f},
                                         {0x1.25274ep+1f, 0, 0, 0},
                                         {0x1.25274ep+1f, 0x1.1c442p-47f, 0, -0x1.7fda26p-50f},
                                         {-0x1.51cc82p-3f, 0x1.57d144p+0f, 0x1.6f25bcp+1f, 0x1.de767ep+0f}});
    const Matrix K = qktest::mat<float>({{0x1.25274ep+1f, 0, 0, 0}, {0x1.25274ep+1f, 0x1.1c442p-47f, 0, -0x1.7fda26p-50f}});
    const Matrix V = qktest::mat<float>({{0, -0x1.06537ep+63f}, {0x1.2cfe4cp+58f, -0x1.1e506ap+63f}});
    const Matrix dO = qktest::mat<float>({{-0x1.fc7dccp-1f, 0x1.049018p+2f}, {-0x1.716356p+2f, -0x1.9a5a02p+2f},
                                          {-0x1.27db3cp+3f, -0x1.ba9b1ep+1f}, {0x1.c67c96p+0f, -0x1.0d7dc8p-1f},
                                          {-0x1.72914p+3f, -0x1.fb156p+0f}});
    const auto cd = qktest::config_as<double>(c);
    const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
    const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, attention_forward<double>(Qd, Kd, Vd, {}, cd),
                                                dO.cast<double>());
    const auto g32 = attention_backward<float>(Q, K, V, {}, c, attention_forward<float>(Q, K, V, {}, c), dO);
    CAPTURE(g64.dQ(4, 1), g64.dQ(4, 3), g32.dQ(4, 1), g32.dQ(4, 3));
    CHECK(std::abs(g64.dQ(4, 1) + 3201280.20969) <= 1e-6 * 3201280.20969);
    CHECK(std::abs(g64.dQ(4, 3) - 540346.795348) <= 1e-6 * 540346.795348);
    CHECK(std::abs(double(g32.dQ(4, 1)) + 3201280.20969) <= 1e-5 * 3201280.20969);
    CHECK(std::abs(double(g32.dQ(4, 3)) - 540346.795348) <= 1e-5 * 540346.795348);
  }
}

namespace {

/// The tiled path's dQ at block shape (bq, bk), one thread (the tiled path must run: no fallback).
Matrix tiled_dQ(const AttentionConfig<float>& c, const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                Eigen::Index bq, Eigen::Index bk) {
  auto o = qktest::one_thread(bk);
  o.block_q = bq;
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
  REQUIRE_FALSE(t.fallback);
  return cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o).dQ;
}

}  // namespace

TEST_CASE("tiled neg_sq dQ beside a key offset far below the mean key (fuzzer, 2026-12-05)",
          "[faults][reliability][tiled]") {
  // tests/fuzz/fixed/neg-sq-tiled-dQ-key-offset-2026-12-05 (the ninth session's campaign):
  // queries at 0 over keys 0, 3e-35, 0, 7.87 and -6.8e-23, a value of 1.15e18. The centred
  // keys (mean 1.57) tie keys 0, 1, 2 and 4, and the tied group's split sum_j dS_ij (k_j - k_ref)
  // took k_j - k_ref from them, 0 for key 4: dQ -1.43e-9 where it is 9.764e-6. The split now
  // takes key differences from the keys as given (cpu/scorers.hpp, DotScorer::grad_q_rows).
  // Right values: 80-digit mpmath derivatives of the definition on the float inputs.
  const auto c = qktest::score_config("neg_sq_euclidean", 1.0);
  const Matrix Q = qktest::mat<float>({{-0.0299999993f}, {0}, {0}}),
               K = qktest::mat<float>({{0}, {3.08148784e-35f}, {0}, {7.86999989f}, {-6.77626343e-23f}}),
               V = qktest::mat<float>({{0}, {3.96884346f}, {1.1529215e+18f}, {0}, {0}}),
               dO = qktest::mat<float>({{0}, {1}, {3.99999952f}});
  const double right[3] = {0, 9.76419314982309e-6, 3.90567679433622e-5};
  for (const Eigen::Index bq : {1, 2, 3})
    for (const Eigen::Index bk : {1, 2, 3, 5}) {
      CAPTURE(bq, bk);
      const Matrix dQ = tiled_dQ(c, Q, K, V, dO, bq, bk);
      for (int i = 0; i < 3; ++i) CHECK(std::abs(double(dQ(i, 0)) - right[i]) <= 1e-5 * right[2]);
      auto o = qktest::one_thread(bk);
      o.block_q = bq;
      qktest::matches_under_harness_bar(Q, K, V, dO, {}, c, o);
    }
}

TEST_CASE("tiled neg_sq dQ: a tied group's own offsets only where they keep their digits (review, 2026-12-05)",
          "[faults][reliability][tiled]") {
  // A reviewer's break of the first form of the fix above, which took every member's offset:
  // members at -1e-8 and 1e-8 beside a key at 0 (all tied once centred), under dS of ~3e17
  // whose true share is ~0: their float terms of ~6e9 left noise of ~350 where dQ is 39.6 (0
  // at block_k 2), and in the second case the sign flipped at block_k 1, 4, 5 and 64. The
  // offsets are added back only where their sum keeps 12 bits over eps sum |dS| |k_j - k_ref|.
  // Right values: 80-digit mpmath derivatives of the definition on the float inputs. (The
  // second case's third row, a query at -0.03, stays ~1 % off, before and after: the float
  // core is off by 2e15 there.)
  {
    auto c = qktest::score_config("neg_sq_euclidean", 1.0);
    c.scale = 0x1.a9fbe8p-6;
    const Matrix Q = Matrix::Zero(1, 1), K = qktest::mat<float>({{-0x1.5798eep-27f}, {0x1.5798eep-27f}, {0}, {40}}),
                 V = qktest::mat<float>({{1}, {1}, {0x1.5af1d8p+66f}, {0x1.5af1d8p+66f}}), dO = qktest::mat<float>({{1}});
    for (const Eigen::Index bk : {1, 2, 3, 4}) {
      CAPTURE(bk);
      const auto o = qktest::one_thread(bk);
      const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, cpu::attention_forward<float>(Q, K, V, {}, c, o), dO, o);
      CHECK(std::abs(double(g.dQ(0, 0)) - 39.6460586331557) <= 1e-5 * 39.6460586331557);
    }
  }
  auto c = qktest::score_config("neg_sq_euclidean", 1.0);
  c.scale = 0x1.aaaaaap-6;
  const Matrix Q = qktest::mat<float>({{0}, {0}, {-0x1.eb851ep-6f}, {0}}),
               K = qktest::mat<float>({{-0x1.47ae14p-74f}, {40}, {-0x1.5798eep-27f}, {0x1.5798eep-27f}, {40}}),
               V = qktest::mat<float>({{0x1.08b2a2p+83f}, {0x1.08b2a2p+83f}, {1}, {1}, {0}}),
               dO = qktest::mat<float>({{1}, {0x1.fffffcp+1f}, {0x1.fffffcp+1f}, {0}});
  const double right[2] = {1857425.52257666, 7429701.20461712};
  for (const Eigen::Index bq : {1, 2, 4})
    for (const Eigen::Index bk : {1, 2, 3, 4, 5, 64}) {
      CAPTURE(bq, bk);
      auto o = qktest::one_thread(bk);
      o.block_q = bq;
      const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, cpu::attention_forward<float>(Q, K, V, {}, c, o), dO, o);
      for (int i = 0; i < 2; ++i) CHECK(std::abs(double(g.dQ(i, 0)) - right[i]) <= 1e-5 * right[i]);
    }
}

TEST_CASE("tiled neg_sq dQ rows whose centred sums cancel, from the differences (fuzzer, 2026-12-05)",
          "[faults][reliability][tiled]") {
  // The tenth session's campaign: the tiled dQ = 2 sum_j dS_ij kc_j - 2 qc_i sum_j dS_ij cancels
  // terms of size |dS| |qc| where queries sit near keys, as the core's did before its rows were
  // taken from differences; the tiled path now does the same per row
  // (NegSqEuclidean::grad_q_rows_from_differences). Right values: 80-digit mpmath derivatives
  // of the definition (with the softcap c tanh(s / c)) on the float inputs.
  auto check = [](const AttentionConfig<float>& c, const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                  const MatrixD& right, double tol) {
    for (const Eigen::Index bq : {1, 2})
      for (const Eigen::Index bk : {1, 2, 3}) {
        CAPTURE(bq, bk);
        const Matrix dQ = tiled_dQ(c, Q, K, V, dO, bq, bk);
        CAPTURE(dQ);
        CHECK((dQ.cast<double>() - right).cwiseAbs().maxCoeff() <= tol);
      }
  };
  {  // softcap 1, a query on two keys beside one at -3 with a value of -3.4e38: 2.03e31 where 1.63e31
    auto c = qktest::score_config("neg_sq_euclidean", 1.0);
    c.bias.softcap = 1;
    MatrixD right(1, 1);
    right << 1.62614649245551e+31;
    check(c, Matrix::Zero(1, 1), qktest::mat<float>({{0}, {-3}, {0}}), qktest::mat<float>({{0}, {-3.39025811e+38f}, {2}}),
          qktest::mat<float>({{1}}), right, 1e-5 * 1.62614649245551e+31);
  }
  {  // softcap 0.5, a query on two keys: 1.5e-5 where it is ~5e-18
    auto c = qktest::score_config("neg_sq_euclidean", 1.0);
    c.bias.softcap = 0.50040851994336288;
    MatrixD right(2, 2);
    right << 0, 0, -1.30831877710331e-18, 5.23327510841322e-18;
    check(c, qktest::mat<float>({{0.00999999978f, 0}, {0, 0}}), qktest::mat<float>({{0, 0}, {1, -4}, {0, 0}}),
          qktest::mat<float>({{0, -4}, {0, -3}, {0, 0}}), qktest::mat<float>({{0, 0}, {3, 950}}), right, 1e-12);
  }
  {  // no softcap, a query 0.07 from two keys 3e-4 apart, dO 2.4e21: 1.4738e18 where 1.47461e18
    const auto c = qktest::score_config("neg_sq_euclidean", 1.0);
    MatrixD right(1, 1);
    right << 1.47460846493762e+18;
    check(c, qktest::mat<float>({{-0.0278124996f}}), qktest::mat<float>({{0.0396863259f}, {-6.13999987f}, {0.0399999991f}}),
          qktest::mat<float>({{-3.98198533f}, {787}, {-6.77626358e-21f}}), qktest::mat<float>({{2.36118324e+21f}}), right,
          1e-5 * 1.47460846493762e+18);
  }
}

TEST_CASE("neg_sq dQ rows from differences: chosen per column, tiled and core (review, 2026-12-05)",
          "[faults][reliability][tiled]") {
  // A reviewer's break of the rows above in their first, row-wide form: keys 1 and 2 tied to
  // 4.7e-10 (dS of +-8.5e30), softcap 50, tau = 0.01. Row 0's y column needed the differences,
  // its x column the centred sum (q_x - k_x of 0.03 rounds the keys' x offset of 2.5e-10 away):
  // dQ(0, 0) was 0 where it is 4.18e21. Right values: 60-digit mpmath derivatives.
  auto c = qktest::score_config("neg_sq_euclidean", 0.01);
  c.bias.softcap = 50;
  const Matrix Q = qktest::mat<float>({{-0.03019038215279579f, -0.005262472666800022f},
                                       {0.0002442369004711509f, -0.005496140569448471f},
                                       {0.00024296155606862158f, -0.005494375713169575f},
                                       {0.00024311573361046612f, -0.00549430912360549f},
                                       {-0.0063595762476325035f, 0.008680589497089386f}});
  const Matrix K = qktest::mat<float>({{-0.0002284310176037252f, 0.6357829570770264f},
                                       {0.00024296155606862158f, -0.005494375713169575f},
                                       {0.00024296180345118046f, -0.005494376178830862f}});
  const Matrix V = qktest::mat<float>({{5.064903524599254e+29f}, {3.9536196211203496e+29f}, {1.2789528477158066e+30f}});
  const Matrix dO = qktest::mat<float>({{0.5411195158958435f}, {-0.277828574180603f}, {1.0416840314865112f},
                                        {-0.8141381144523621f}, {0.30371376872062683f}});
  // Row 0 only: row 4's y column is past float either way (the differences' bound, 5.7e22,
  // against a value of 4.4e21; the centred sum gave 0, the differences -9.4e21).
  const double right[2] = {4.18185199162505e+21, -7.87367114555287e+21};
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    const auto o = qktest::one_thread(bk);
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, cpu::attention_forward<float>(Q, K, V, {}, c, o), dO, o);
    CAPTURE(g.dQ);
    // Within 10 % (float dS leaves a few per cent here: 4.43e21 and -7.97e21); the row-wide
    // form gave dQ(0, 0) = 0.
    for (int b = 0; b < 2; ++b) CHECK(std::abs(double(g.dQ(0, b)) - right[b]) <= 0.1 * std::abs(right[b]));
  }
  // The float core chose row-wide too, and gave the same 0 (eleventh session); both now call
  // NegSqEuclidean::retake_by_column. The double core keeps its centred sums here.
  const auto g = attention_backward<float>(Q, K, V, {}, c, attention_forward<float>(Q, K, V, {}, c), dO);
  CAPTURE(g.dQ);
  for (int b = 0; b < 2; ++b) CHECK(std::abs(double(g.dQ(0, b)) - right[b]) <= 0.1 * std::abs(right[b]));
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, attention_forward<double>(Qd, Kd, Vd, {}, cd),
                                              dO.cast<double>());
  for (int b = 0; b < 2; ++b) CHECK(std::abs(g64.dQ(0, b) - right[b]) <= 1e-6 * std::abs(right[b]));
}
