// The output of a row whose rounded weights sum to 1 + a few ulps over values near max(T): the
// product rounded past max(T). Three keys with V = FLT_MAX gave O = inf where the exact output
// is FLT_MAX (fuzzer finding, tests/fuzz/fixed/additive-core-forward-output-overflow-
// seventeenth-2026-12-06-k4). Such entries are clamped to +-max(T) (detail/output_range.hpp);
// merge_attention_states the same. Right values: a convex combination of equal values is that
// value; an ordinary column, the double core within the rule's floor.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/merge/merge.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"

using namespace qkscope;

namespace {

// Keys whose float (and double) softmax weights for q = 1 under dot scores sum past 1: 1.00000004
// in float for k = (0, 12.63, 3.13); 1 + 2^-52 in double for k = (0, 18.45, 1.39).
template <class T>
Mat<T> keys(double k1, double k2) {
  Mat<T> K(3, 1);
  K << 0, T(k1), T(k2);
  return K;
}

template <class T>
AttentionResult<T> dot_forward(const Mat<T>& K, const Mat<T>& V) {
  AttentionConfig<T> c;
  c.score = "dot";
  return attention_forward<T>(Mat<T>::Ones(1, 1), K, V, {}, c);
}

}  // namespace

TEST_CASE("core forward: a row's output stays within its values' range when its weights sum past 1 (fuzzer finding)",
          "[faults][reliability]") {
  const float M = FLT_MAX;
  const Matrix K = keys<float>(12.63, 3.13);
  // Column 0: every value max(float); column 1: -max(float); column 2: ordinary values.
  Matrix V(3, 3);
  V << M, -M, 1, M, -M, 2, M, -M, 3;
  const auto r = dot_forward(K, V);
  // The case is live: the weights sum past 1 and their product with V overflows in float.
  REQUIRE(r.weights.template cast<double>().sum() > 1.0);  // 1.00000004, summed in double
  const Matrix gemm = r.weights * V;
  REQUIRE(std::isinf(gemm(0, 0)));
  CHECK(r.output(0, 0) == M);
  CHECK(r.output(0, 1) == -M);
  CHECK(r.output(0, 2) == gemm(0, 2));  // finite entries are the GEMM's, untouched
  // Column 2 against the double core on the same inputs, within the rule's floor (1e-6 relative).
  const auto d = dot_forward<double>(K.cast<double>(), V.cast<double>());
  CHECK(std::abs(double(r.output(0, 2)) - d.output(0, 2)) <= 1e-6 * std::abs(d.output(0, 2)));
  // The tiled path hands the row to the core (its safety net) and returns the same.
  AttentionConfig<float> c;
  c.score = "dot";
  cpu::TiledOptions o;
  o.threads = 1;
  const auto t = cpu::attention_forward<float>(Matrix::Ones(1, 1), K, V, {}, c, o);
  CHECK(t.output == r.output);
}

TEST_CASE("core forward in double: the same clamp at max(double)", "[faults][reliability]") {
  const double M = DBL_MAX;
  const MatrixD K = keys<double>(18.45, 1.39);
  MatrixD V(3, 2);
  V << M, M / 2, M, M / 2, M, M / 2;
  const auto r = dot_forward(K, V);
  REQUIRE(r.weights.sum() > 1.0);  // 1 + 2^-52
  REQUIRE(std::isinf((r.weights * V)(0, 0)));
  CHECK(r.output(0, 0) == M);
  CHECK(std::abs(r.output(0, 1) - M / 2) <= 4 * DBL_EPSILON * (M / 2));  // the GEMM's, finite
}

TEST_CASE("merge_attention_states: merge weights summing past 1 over values of max(float) (review)",
          "[faults][reliability][merge]") {
  // exp(0 - lse) + exp(-2.9915545 - lse) rounds to 0.952191174 + 0.0478088744 = 1.00000005.
  const float M = FLT_MAX;
  Matrix o(1, 2);
  o << M, -M;
  Vec<float> lse_a(1), lse_b(1);
  lse_a << 0.0f;
  lse_b << -2.9915545f;
  const auto m = merge_attention_states<float>(o, lse_a, o, lse_b);
  CHECK(m.output(0, 0) == M);
  CHECK(m.output(0, 1) == -M);
}
