// docs/facts.md §1: the worked example the tutorial shows, to 4 decimals.
// X = [[1,0,1,0],[0,1,0,1],[1,1,0,0]], W_Q = W_K = W_V = I, d_k = 4, scaled dot.
// The expected values are the textbook numbers, also recomputed here from the
// closed form (softmax of S = X X^T / 2) so the table is derived, not trusted.
#include <catch2/catch.hpp>

#include <cmath>

#include "qkscope/qkscope.hpp"

using namespace qkscope;
using Catch::Matchers::WithinAbs;

namespace {
Matrix worked_x() {
  Matrix X(3, 4);
  X << 1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0;
  return X;
}
}  // namespace

TEST_CASE("worked example: scaled dot scores are X X^T / 2", "[worked]") {
  const Matrix X = worked_x();
  const auto r = attention_forward<float>(X, X, X, {}, {});
  const double S[3][3] = {{1, 0, 0.5}, {0, 1, 0.5}, {0.5, 0.5, 1}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) CHECK_THAT(r.scores(i, j), WithinAbs(S[i][j], 1e-6));
  // The closed form of row 1: softmax([1, 0, 0.5]).
  const double z = std::exp(1.0) + 1 + std::exp(0.5);
  CHECK_THAT(r.weights(0, 0), WithinAbs(std::exp(1.0) / z, 1e-6));
}

TEST_CASE("worked example: weights and output match the corrected table to 4 decimals", "[worked]") {
  const Matrix X = worked_x();
  const auto r = attention_forward<float>(X, X, X, {}, {});
  const double W[3][3] = {{0.5065, 0.1863, 0.3072}, {0.1863, 0.5065, 0.3072}, {0.2741, 0.2741, 0.4519}};
  const double O[3][4] = {{0.8137, 0.4935, 0.5065, 0.1863},
                          {0.4935, 0.8137, 0.1863, 0.5065},
                          {0.7259, 0.7259, 0.2741, 0.2741}};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) CHECK_THAT(r.weights(i, j), WithinAbs(W[i][j], 5e-5));
    for (int c = 0; c < 4; ++c) CHECK_THAT(r.output(i, c), WithinAbs(O[i][c], 5e-5));
  }
}

TEST_CASE("worked example: token 1 attends most to itself, not to token 3", "[worked]") {
  const Matrix X = worked_x();
  const auto r = attention_forward<float>(X, X, X, {}, {});
  Eigen::Index best;
  r.weights.row(0).maxCoeff(&best);
  CHECK(best == 0);
  // The widely copied wrong row [0.387, 0.142, 0.471] is not what attention computes.
  CHECK_FALSE(std::abs(r.weights(0, 2) - 0.471) < 0.01);
}
