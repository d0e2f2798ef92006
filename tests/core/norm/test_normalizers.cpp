// Properties of each normalizer beyond matching the reference: tie rules, exact
// zeros, k semantics, the tau -> 0 limit without NaN, seeded Gumbel noise.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"

using namespace qkscope;
using Catch::Matchers::WithinAbs;

namespace {
/// Weights of one row of logits z under `normalizer` (Q = [1], K = z^T as a column, scale 1).
Matrix weights_of(std::initializer_list<float> z, const std::string& normalizer, double tau = 1.0,
                  int k = 1, bool hard = false, std::uint64_t seed = 0) {
  Matrix Q(1, 1), K(z.size(), 1), V = Matrix::Identity(z.size(), z.size());
  Q << 1;
  int j = 0;
  for (float x : z) K(j++, 0) = x;
  AttentionConfig<float> cfg;
  cfg.score = "dot";
  cfg.normalizer = normalizer;
  cfg.temperature = tau;
  cfg.norm_options.get<qkscope::norm::TopKSoftmax>().top_k = k;
  cfg.norm_options.get<qkscope::norm::GumbelSoftmax>().hard = hard;
  cfg.norm_options.get<qkscope::norm::GumbelSoftmax>().seed = seed;
  return attention_forward<float>(Q, K, V, {}, cfg).weights;
}
}  // namespace

TEST_CASE("hard: one-hot at the argmax, ties go to the lowest key index", "[norm]") {
  CHECK(weights_of({1, 3, 2}, "hard") == (Matrix(1, 3) << 0, 1, 0).finished());
  CHECK(weights_of({3, 3, 1}, "hard") == (Matrix(1, 3) << 1, 0, 0).finished());
  CHECK(weights_of({3, 3, 1}, "hard").sum() == 1);
}

TEST_CASE("hard accepts temperature 0; soft normalizers reject it", "[norm]") {
  CHECK_NOTHROW(weights_of({1, 2}, "hard", 0.0));
  for (const char* n : {"softmax", "gumbel_softmax", "sparsemax", "topk_softmax"})
    CHECK_THROWS_WITH(weights_of({1, 2}, n, 0.0), Catch::Contains("temperature"));
}

TEST_CASE("softmax tends to the hard limit as tau -> 0, without NaN", "[norm]") {
  for (double tau : {1e-2, 1e-10, 1e-30, 1e-45}) {
    const Matrix w = weights_of({1, 3, 2}, "softmax", tau);
    CHECK(w.allFinite());
    CHECK_THAT(w(0, 1), WithinAbs(1.0, 1e-6));
  }
  // Tied maxima keep equal weights for every tau, so the limit splits them.
  const Matrix tie = weights_of({3, 3, 1}, "softmax", 1e-30);
  CHECK_THAT(tie(0, 0), WithinAbs(0.5, 1e-6));
  CHECK_THAT(tie(0, 1), WithinAbs(0.5, 1e-6));
  CHECK(tie(0, 2) == 0);
}

TEST_CASE("sparsemax gives exact zeros and sums to 1", "[norm]") {
  const Matrix w = weights_of({2.0f, 1.0f, -1.0f, 1.9f}, "sparsemax");
  CHECK(w(0, 2) == 0);
  CHECK(w(0, 1) == 0);  // 1.0 is more than 1 below the top pair's threshold
  CHECK_THAT(w.sum(), WithinAbs(1.0, 1e-6));
  CHECK_THAT(w(0, 0), WithinAbs(0.55, 1e-6));  // (2 - 1.9 + 1) / 2 above the other
  CHECK_THAT(w(0, 3), WithinAbs(0.45, 1e-6));
  // Large temperature spreads the support to every key.
  CHECK((weights_of({2.0f, 1.0f, -1.0f, 1.9f}, "sparsemax", 100.0).array() > 0).all());
}

TEST_CASE("top-k keeps exactly k keys, ties to the lowest index; k >= L_k is softmax", "[norm]") {
  const Matrix w = weights_of({1, 5, 5, 0, 5}, "topk_softmax", 1.0, 2);
  CHECK((w.array() > 0).count() == 2);
  CHECK(w(0, 1) > 0);
  CHECK(w(0, 2) > 0);
  CHECK(w(0, 4) == 0);
  const Matrix all = weights_of({0.3f, -1, 2}, "topk_softmax", 1.0, 7);
  CHECK(all.isApprox(weights_of({0.3f, -1, 2}, "softmax"), 1e-6f));
}

TEST_CASE("gumbel-softmax is deterministic for a seed and differs across seeds", "[norm]") {
  const Matrix a = weights_of({0.1f, 0.2f, 0.3f, 0.4f}, "gumbel_softmax", 0.5, 1, false, 1);
  const Matrix b = weights_of({0.1f, 0.2f, 0.3f, 0.4f}, "gumbel_softmax", 0.5, 1, false, 1);
  const Matrix c = weights_of({0.1f, 0.2f, 0.3f, 0.4f}, "gumbel_softmax", 0.5, 1, false, 2);
  CHECK(a == b);
  CHECK(a != c);
  const Matrix h = weights_of({0.1f, 0.2f, 0.3f, 0.4f}, "gumbel_softmax", 0.5, 1, true, 1);
  CHECK(h.sum() == 1);
  CHECK((h.array() == 1).count() == 1);
  Eigen::Index soft_arg, hard_arg;  // the hard sample is the argmax of the soft one
  a.row(0).maxCoeff(&soft_arg);
  h.row(0).maxCoeff(&hard_arg);
  CHECK(soft_arg == hard_arg);
}

TEST_CASE("gumbel-softmax samples follow the softmax distribution", "[norm]") {
  // P(argmax(z + g) = j) = softmax(z)_j (the Gumbel-max trick, Gumbel 1954).
  const int n = 4000;
  int hits[3] = {0, 0, 0};
  for (int s = 0; s < n; ++s) {
    const Matrix h = weights_of({0.0f, 1.0f, 2.0f}, "gumbel_softmax", 1.0, 1, true, s);
    for (int j = 0; j < 3; ++j) hits[j] += h(0, j) == 1;
  }
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  CHECK_THAT(hits[2] / double(n), WithinAbs(std::exp(2.0) / z, 0.03));
  CHECK_THAT(hits[0] / double(n), WithinAbs(1 / z, 0.03));
}

TEST_CASE("float sparsemax weights are the reference's weights of the same logits, rounded", "[norm][faults]") {
  // The threshold (sum_S y - 1) / |S| was formed in float: its absolute error, O(|S| eps
  // max|y|), was the whole of a weight near the support's edge (16 % off at L_k = 300). Now each
  // float weight is within one float ulp of the independent double reference (core/reference/,
  // sparsemax by bisection) on the same float logits. Seeded rows: up to 400 keys, logits
  // off + spread * U(-1, 1) for spreads 1e-3..1 and offsets +-(1e-4..1e4), temperatures 1e-3..1e3.
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(-1, 1);
  double worst = 0;
  for (int it = 0; it < 600; ++it) {
    const Eigen::Index n = 2 + Eigen::Index(g() % 400);
    const double spread = std::pow(10.0, -3 + 3 * u(g)), off = std::pow(10.0, 4 * u(g)) * (g() & 1 ? 1 : -1);
    const float tau = float(std::pow(10.0, 3 * u(g)));
    std::vector<float> z(n), p(n);
    std::vector<double> zd(n);
    for (Eigen::Index j = 0; j < n; ++j) zd[j] = z[j] = float(off + spread * u(g));
    norm::Sparsemax::forward(norm::Row<float>{z.data(), n, tau, nullptr, nullptr}, p.data());
    const std::vector<double> ref = reference::normalize<double>("sparsemax", zd, double(tau), NormalizerOptions{}, nullptr);
    for (Eigen::Index j = 0; j < n; ++j) worst = std::max(worst, std::abs(p[j] - ref[j]) / std::max(ref[j], 1e-30));
  }
  CHECK(worst <= std::ldexp(1.0, -23));  // one float ulp relative (the float code before: 2.4e-3)
}
