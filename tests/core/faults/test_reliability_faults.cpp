// The silent-NaN faults that differential testing against a float64 reference found (the
// faults of docs/RELIABILITY.md), each as its small input with the right value, on every
// path that takes it: core float and double, tiled CPU, mixed precision. The right values
// were computed independently in double precision (Python), e.g. the tau = 3.4e38 weights
// [1 / (1 + e^-1.7647), ...] = [0.853798, 0.146202].
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <limits>

#include "qkscope/detail/logit_range.hpp"
#include "qkscope/qkscope.hpp"
#include "qkscope/cpu/attention.hpp"
#include "support/convert.hpp"

using namespace qkscope;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;

namespace {

template <class T = float>
Mat<T> m1(std::initializer_list<std::initializer_list<double>> rows) {
  return qktest::mat<T>(rows);
}

template <class T = float>
AttentionConfig<T> config(const char* score, double tau = 1.0) {
  AttentionConfig<T> c;
  c.score = score;
  c.temperature = tau;
  return c;
}

cpu::TiledOptions one_thread() {
  cpu::TiledOptions o;
  o.threads = 1;
  return o;
}

}  // namespace

TEST_CASE("Gumbel noise is finite for every draw: the uniform draw that rounded to 1.0 gives weight 1",
          "[faults][reliability][norm]") {
  // Seed 608688947055533: the first 53-bit draw is 2^53 - 1, and (2^53 - 1 + 0.5) 2^-53
  // rounds to exactly 1.0, so -log(-log U) was +inf and the softmax inf - inf = NaN.
  const std::uint64_t seed = 608688947055533ull;
  detail::Rng rng(seed);
  const double u = rng.uniform();
  CHECK(u < 1.0);
  CHECK(u == 0x1.fffffffffffffp-1);
  detail::Rng rng2(seed);
  const double g = rng2.gumbel();
  CHECK(std::isfinite(g));
  CHECK(g < 36.8);
  CHECK(std::isfinite(float(g)));
  CHECK(std::isfinite(double(Eigen::half(float(g)))));

  auto check = [&](auto tag) {
    using T = decltype(tag);
    auto c = config<T>("scaled_dot");
    c.normalizer = "gumbel_softmax";
    c.norm_options.template get<norm::GumbelSoftmax>().seed = seed;
    const auto r = attention_forward<T>(m1<T>({{0}}), m1<T>({{0}}), m1<T>({{1}}), {}, c);
    CHECK(r.weights(0, 0) == T(1));
    CHECK(r.output(0, 0) == T(1));
    CHECK(std::isfinite(double(r.logsumexp(0))));
    const auto g2 = attention_backward<T>(m1<T>({{0}}), m1<T>({{0}}), m1<T>({{1}}), {}, c, r, m1<T>({{1}}));
    CHECK(g2.dQ(0, 0) == T(0));
    return c;
  };
  check(float{});
  const auto c = check(double{});
  (void)c;
  auto cf = config<float>("scaled_dot");
  cf.normalizer = "gumbel_softmax";
  cf.norm_options.get<norm::GumbelSoftmax>().seed = seed;
  const auto t = cpu::attention_forward<float>(m1({{0}}), m1({{0}}), m1({{1}}), {}, cf, one_thread());
  CHECK(t.output(0, 0) == 1.0f);
  const Mat<Eigen::half> h = m1({{0}}).cast<Eigen::half>(), v = m1({{1}}).cast<Eigen::half>();
  const auto mx = precision::attention_forward_mixed<Eigen::half, float>(h, h, v, {}, cf);
  CHECK(mx.fp32.weights(0, 0) == 1.0f);
}

TEST_CASE("a temperature above the float maximum is an error naming the temperature on every float path",
          "[faults][reliability][norm]") {
  const Matrix Q = m1({{1}}), K = m1({{1}, {2}}), V = m1({{1}, {2}});
  auto c = config<float>("scaled_dot", 1e39);
  c.mask.key_length = 1;
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, c), Contains("temperature 1e+39 overflows to inf"));
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q, K, V, {}, c, one_thread()), Contains("temperature 1e+39"));
  const Mat<Eigen::bfloat16> Qb = Q.cast<Eigen::bfloat16>(), Kb = K.cast<Eigen::bfloat16>();
  CHECK_THROWS_WITH((precision::attention_forward_mixed<Eigen::bfloat16, float>(Qb, Kb, Kb, {}, c)),
                    Contains("temperature"));
  c.normalizer = "hard";  // tau is still used by the logsumexp readout
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, c), Contains("overflows to inf"));
  // In double 1e39 is an ordinary temperature: the weights are (nearly) uniform.
  auto cd = config<double>("scaled_dot", 1e39);
  const auto r = attention_forward<double>(m1<double>({{1}}), m1<double>({{1}, {2}}), m1<double>({{1}, {2}}), {}, cd);
  CHECK_THAT(r.weights(0, 0), WithinAbs(0.5, 1e-12));
  CHECK(std::isfinite(r.logsumexp(0)));
}

TEST_CASE("a scale above the float maximum is an error naming the scale on every float path",
          "[faults][reliability]") {
  const Matrix Q = m1({{1}}), K = m1({{1}, {2}}), V = m1({{1}, {2}});
  auto c = config<float>("dot", 1.0);
  c.scale = 1e39;  // finite as a double, +inf once applied in float
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, c), Contains("scale 1e+39 overflows to inf"));
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q, K, V, {}, c, one_thread()), Contains("scale 1e+39"));
  // Every raw score 0 (zero queries): the fold of scale / tau looked safe to the tiled path,
  // which answered while the core refused (fuzzer finding dot-scale-past-float-tiled-accepts).
  const Matrix Q0 = m1({{0}, {0}});
  c.temperature = 4.7e21;
  const std::string msg = "scale 1e+39 overflows to inf in this precision (largest finite value 3.40282347e+38)";
  CHECK_THROWS_WITH(attention_forward<float>(Q0, K, V, {}, c), msg);
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q0, K, V, {}, c, one_thread()), msg);
  // In double it is an ordinary (huge) scale: the larger score takes all the weight.
  auto cd = config<double>("dot", 1.0);
  cd.scale = 1e39;
  const auto r = attention_forward<double>(m1<double>({{1}}), m1<double>({{1}, {2}}), m1<double>({{1}, {2}}), {}, cd);
  CHECK(r.weights(0, 1) == 1.0);
}

TEST_CASE("temperature 3.4e38 with scores +-3e38: (z - max) / tau is formed without overflow",
          "[faults][reliability][norm]") {
  // z = [1 + 3e38, 2 - 3e38] -> (z - max) / tau = [0, -6e38 / 3.4e38 = -1.764706];
  // p = [0.853798, 0.146202] (not [1, 0]: z - max = -6e38 overflowed to -inf).
  const Matrix Q = m1({{1}}), K = m1({{1}, {2}}), V = m1({{1}, {2}});
  for (const char* n : {"softmax", "topk_softmax"}) {
    auto c = config<float>("dot", 3.4e38);
    c.normalizer = n;
    c.norm_options.get<norm::TopKSoftmax>().top_k = 2;
    c.bias.dense = m1({{3e38, -3e38}});
    const auto r = attention_forward<float>(Q, K, V, {}, c);
    INFO(n);
    CHECK_THAT(r.weights(0, 0), WithinAbs(0.853798, 2e-6));
    CHECK_THAT(r.weights(0, 1), WithinAbs(0.146202, 2e-6));
    CHECK(std::isfinite(r.logsumexp(0)));
    const auto g = attention_backward<float>(Q, K, V, {}, c, r, m1({{1}}));
    CHECK(std::isfinite(g.dtemperature));
    if (std::string(n) == "softmax") {
      const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
      CHECK_THAT(t.output(0, 0), WithinAbs(1.146202, 4e-6));
      CHECK(t.logsumexp(0) == r.logsumexp(0));
    }
  }
  // Sparsemax of z / tau = [0.882, -0.882] (shifted: [0, -1.7647]): support {0}, p = [1, 0].
  auto c = config<float>("dot", 3.4e38);
  c.normalizer = "sparsemax";
  c.bias.dense = m1({{3e38, -3e38}});
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  CHECK(r.weights(0, 0) == 1.0f);
  CHECK(r.weights(0, 1) == 0.0f);
}

TEST_CASE("backward: dP = dO V^T overflowing float gives the exact gradients (0), not NaN",
          "[faults][reliability][norm]") {
  // q = [1, 0], keys [1, 0], [0, 1], scaled dot: p = [0.669762, 0.330238]; both values are
  // 1e20, so dP = [1e40, 1e40] (past FLT_MAX) and dz = p (dP - p . dP) = 0 exactly:
  // dQ = dK = 0, dtau = 0, dV = p * 1e20.
  const Matrix Q = m1({{1, 0}}), K = m1({{1, 0}, {0, 1}}), V = m1({{1e20}, {1e20}}), dO = m1({{1e20}});
  const auto c = config<float>("scaled_dot");
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  const auto g = attention_backward<float>(Q, K, V, {}, c, r, dO);
  CHECK(g.dQ.isZero(0));
  CHECK(g.dK.isZero(0));
  CHECK(g.dtemperature == 0);
  CHECK_THAT(double(g.dV(0, 0)), WithinAbs(0.6697615493266569e20, 1e14));
  CHECK_THAT(double(g.dV(1, 0)), WithinAbs(0.3302384506733431e20, 1e14));
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread());
  CHECK(tg.dQ.isZero(0));
  CHECK(tg.dK.isZero(0));
  CHECK(tg.dtemperature == 0);
  CHECK_THAT(double(tg.dV(0, 0)), WithinAbs(0.6697615493266569e20, 1e14));
}

TEST_CASE("backward at a denormal temperature: the exact finite gradient, or an error naming the gradient",
          "[faults][reliability][norm]") {
  // tau = 1e-40, q = [1, 1], keys [1, 0], [0, 1]: equal scores, p = [0.5, 0.5].
  const Matrix Q = m1({{1, 1}}), K = m1({{1, 0}, {0, 1}});
  const auto c = config<float>("scaled_dot", 1e-40);
  // Equal values: dz = p (dp - p . dp) = 0, every gradient is exactly 0.
  {
    const Matrix V = m1({{1}, {1}});
    const auto r = attention_forward<float>(Q, K, V, {}, c);
    const auto g = attention_backward<float>(Q, K, V, {}, c, r, m1({{1}}));
    CHECK(g.dQ.isZero(0));
    CHECK(g.dtemperature == 0);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
    const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, m1({{1}}), one_thread());
    CHECK(tg.dQ.isZero(0));
  }
  // Values 1 and 2: dz = [-0.25, 0.25] / 1e-40 = -+2.5e39, past FLT_MAX: an error, not NaN.
  {
    const Matrix V = m1({{1}, {2}});
    const auto r = attention_forward<float>(Q, K, V, {}, c);
    CHECK_THROWS_WITH(attention_backward<float>(Q, K, V, {}, c, r, m1({{1}})), Contains("gradient overflowed"));
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
    CHECK_THROWS_WITH(cpu::attention_backward<float>(Q, K, V, {}, c, t, m1({{1}}), one_thread()),
                      Contains("gradient overflowed"));
    // In double the same gradient is representable: dQ = 0.7071 * (-2.5e39, 2.5e39).
    const auto cd = config<double>("scaled_dot", 1e-40);
    const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
    const auto rd = attention_forward<double>(Qd, Kd, Vd, {}, cd);
    const auto gd = attention_backward<double>(Qd, Kd, Vd, {}, cd, rd, m1<double>({{1}}));
    CHECK_THAT(gd.dQ(0, 0) / 1e39, WithinAbs(-0.25 / std::sqrt(2.0) * 1e40 / 1e39, 1e-9));
  }
}

TEST_CASE("tiled: logits past -FLT_MAX after / tau still attend (fast path and core agree)",
          "[faults][reliability][tiled]") {
  // Q = [[-3e38]], K = [[1]], dot, tau = 1e-3: the only key is visible, output 1 (the core
  // divides (z - max) = 0 by tau; the tiled kernels formed z / tau = -inf and returned 0).
  {
    auto c = config<float>("dot", 1e-3);
    const Matrix Q = m1({{-3e38}}), K = m1({{1}}), V = m1({{1}});
    CHECK(attention_forward<float>(Q, K, V, {}, c).output(0, 0) == 1.0f);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
    CHECK(t.output(0, 0) == 1.0f);
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, m1({{1}}), one_thread());
    CHECK(g.dQ(0, 0) == 0.0f);
    CHECK_FALSE(detail::logits_fold_safe<float>("dot", Q, K, {}, 1.0, 1e-3, c.bias, 1, 1));
  }
  // A finite dense bias of -3.4e38 with tau = 0.5: same.
  {
    auto c = config<float>("dot", 0.5);
    c.bias.dense = m1({{-3.4e38}});
    const Matrix Q = m1({{1}}), K = m1({{1}}), V = m1({{1}});
    CHECK(attention_forward<float>(Q, K, V, {}, c).output(0, 0) == 1.0f);
    CHECK(cpu::attention_forward<float>(Q, K, V, {}, c, one_thread()).output(0, 0) == 1.0f);
  }
  // q . k = -1e40 overflows float before any division: both refuse with one message.
  {
    auto c = config<float>("dot", 1.0);
    const Matrix Q = m1({{-1e20}}), K = m1({{1e20}}), V = m1({{1}});
    std::string core, fast;
    try { attention_forward<float>(Q, K, V, {}, c); } catch (const std::invalid_argument& e) { core = e.what(); }
    try { cpu::attention_forward<float>(Q, K, V, {}, c, one_thread()); } catch (const std::invalid_argument& e) { fast = e.what(); }
    CHECK_THAT(core, Contains("scores overflowed"));
    CHECK(core == fast);
  }
  // Ordinary logits keep the fast path.
  const Matrix Q = m1({{1, 2}}), K = m1({{3, 4}, {5, 6}});
  CHECK(detail::logits_fold_safe<float>("scaled_dot", Q, K, {}, 0.7, 0.01, BiasSpec<float>{}, 1, 2));
}

TEST_CASE("a finite dense bias that overflows the score is an error, not a mask", "[faults][reliability][bias]") {
  auto c = config<float>("dot");
  c.bias.dense = m1({{-3e38, 0}});
  const Matrix Q = m1({{-1e38}}), K = m1({{1}, {1}}), V = m1({{1}, {2}});
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, c), Contains("after adding bias.dense"));
  CHECK_THROWS_WITH(cpu::attention_forward<float>(Q, K, V, {}, c, one_thread()), Contains("after adding bias.dense"));
}

TEST_CASE("cosine: never above 1, exact ties of parallel keys go to the lowest index, zero query has "
          "zero gradient", "[faults][reliability][score]") {
  // cos([1, 4], [1, 4]) rounded to 1.0000001 in float.
  {
    const Matrix X = m1({{1, 4}});
    const auto c = config<float>("cosine");
    const auto r = attention_forward<float>(X, X, m1({{1}}), {}, c);
    CHECK(r.raw_scores(0, 0) == 1.0f);
  }
  // Query [1], keys [1.7], [0.1]: both cosines are exactly 1; 'hard' takes key 0.
  {
    auto c = config<float>("cosine");
    c.normalizer = "hard";
    const auto r = attention_forward<float>(m1({{1}}), m1({{1.7}, {0.1}}), m1({{1}, {2}}), {}, c);
    CHECK(r.raw_scores(0, 0) == 1.0f);
    CHECK(r.raw_scores(0, 1) == 1.0f);
    CHECK(r.weights(0, 0) == 1.0f);
    CHECK(r.weights(0, 1) == 0.0f);
  }
  // Zero query, keys [1.7, 1.7] and [1, 1] (same direction): both cosines are 0, p = [0.5, 0.5],
  // and dL/dq = sum_j dS_j khat_j / eps = khat (dS_0 + dS_1) / eps = 0 (dS sums to 0).
  {
    const auto c = config<float>("cosine");
    const Matrix Q = m1({{0, 0}}), K = m1({{1.7, 1.7}, {1, 1}}), V = m1({{1}, {2}});
    const auto r = attention_forward<float>(Q, K, V, {}, c);
    const auto g = attention_backward<float>(Q, K, V, {}, c, r, m1({{1}}));
    CHECK(g.dQ.isZero(0));
  }
}

TEST_CASE("tiled backward recomputes the forward's logits exactly: one key at tau = 1e-3 gives dV = dO",
          "[faults][reliability][tiled]") {
  // A fuzzer finding: the forward folds scale / tau into the query tile, the backward
  // multiplied the raw scores instead; at |x| ~ 3000 the two roundings differ by ulp(x) and
  // P = exp(x - lse) came out 1.00024 instead of 1.
  detail::Rng rng(31);
  auto c = config<float>("scaled_dot", 1e-3);
  for (int n = 0; n < 50; ++n) {
    const Matrix Q = m1({{3 * rng.normal()}}), K = m1({{rng.normal()}}), V = m1({{1}}), dO = m1({{1}});
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread());
    INFO("q " << Q(0, 0) << ", k " << K(0, 0));
    CHECK(g.dV(0, 0) == 1.0f);
  }
}
