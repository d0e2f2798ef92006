// Multi-head products of finite factors past the range of T (detail/product_range.hpp): an
// entry that overflows only in summation order gets its exact value; one whose exact value
// is past max(T) is an error naming the product. Each case checks first that the plain
// product does overflow, so it fails if that precondition ever stops holding.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "qkscope/mha/multi_head.hpp"

using namespace qkscope;
using Catch::Contains;

namespace {

/// One sequence, one query and one key, d_model = d_k = d_v = 1, scaled dot (scale 1): every
/// projection is its weight, and the head output is V (weight 1 on the only key).
template <class T>
struct Tiny {
  Mat<T> X_q = Mat<T>::Ones(1, 1), X_kv = Mat<T>::Ones(1, 1);
  MultiHeadWeights<T> w;
  MultiHeadConfig<T> cfg;
  Tiny(int heads, Eigen::Index d_out) {
    cfg.heads = heads;
    cfg.kv_heads = 1;
    cfg.d_k = cfg.d_v = 1;
    w.W_Q = Mat<T>::Ones(1, heads);
    w.W_K = w.W_V = Mat<T>::Ones(1, 1);
    w.W_O = Mat<T>::Ones(heads, d_out);
  }
};

}  // namespace

TEMPLATE_TEST_CASE("multi-head output projection: summation-order overflow gives the exact value",
                   "[mha][faults][overflow]", float, double) {
  using T = TestType;
  const T M = std::numeric_limits<T>::max();
  Tiny<T> c(1, 1);
  c.w.W_V.resize(1, 3);
  c.w.W_V << M, M, -M;  // V = concat = [M, M, -M] (d_v = 3)
  c.cfg.d_v = 3;
  c.w.W_O = Mat<T>::Ones(3, 1);
  REQUIRE_FALSE(std::isfinite(T((c.w.W_V * c.w.W_O)(0, 0))));  // the plain product: inf
  const MultiHeadResult<T> r = multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg);
  CHECK(r.output(0, 0) == M);  // M + M - M, exact

  // A column whose largest entry meets a zero: the other terms' scale must come from the
  // terms themselves, not from each factor's largest entry (M + M - M + 0 M: review).
  c.w.W_V.resize(1, 4);
  c.w.W_V << M, M, -M, 0;
  c.cfg.d_v = 4;
  c.w.W_O.resize(4, 1);
  c.w.W_O << 1, 1, 1, M;
  REQUIRE_FALSE(std::isfinite(T((c.w.W_V * c.w.W_O)(0, 0))));
  CHECK(multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg).output(0, 0) == M);

  // Terms whose scaled sum ties up to 2 in T (M + 2^e - 2^e, 2^e half an ulp of M): summed in
  // double with compensation, not rounded twice up to 2^(E+1) = inf (review).
  const T half_ulp = std::ldexp(T(1), std::numeric_limits<T>::max_exponent - std::numeric_limits<T>::digits - 1);
  c.w.W_V.resize(1, 3);
  c.w.W_V << M, half_ulp, -half_ulp;
  c.cfg.d_v = 3;
  c.w.W_O = Mat<T>::Ones(3, 1);
  REQUIRE_FALSE(std::isfinite(T((c.w.W_V * c.w.W_O)(0, 0))));
  CHECK(multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg).output(0, 0) == M);

  c.w.W_V << M, M, -M;
  c.w.W_O = Mat<T>::Constant(3, 1, T(2));  // 2M + 2M - 2M = 2M: past max(T)
  CHECK_THROWS_WITH(multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg),
                    Contains("the output projection concat W_O overflowed at (0, 0)"));
}

TEMPLATE_TEST_CASE("multi-head input projections past the range name the projection",
                   "[mha][faults][overflow]", float, double) {
  using T = TestType;
  const T big = std::sqrt(std::numeric_limits<T>::max()) * T(2);  // big * big overflows
  Tiny<T> c(1, 1);
  c.X_q(0, 0) = big;
  c.w.W_Q(0, 0) = big;
  CHECK_THROWS_WITH(multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg),
                    Contains("the query projection Q = X_q W_Q overflowed at (0, 0)"));
  c = Tiny<T>(1, 1);
  c.X_kv(0, 0) = big;
  c.w.W_V(0, 0) = big;
  c.w.W_K(0, 0) = T(1) / big;
  CHECK_THROWS_WITH(multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg),
                    Contains("the value projection V = X_kv W_V overflowed at (0, 0)"));
}

TEMPLATE_TEST_CASE("multi-head backward: dL/dconcat's summation-order overflow is exact, and "
                   "overflowed sums are errors",
                   "[mha][faults][overflow]", float, double) {
  using T = TestType;
  const T M = std::numeric_limits<T>::max();
  SECTION("dC = dO W_O^T over [M, M, -M] is M, and so are dW_V and dX_kv") {
    Tiny<T> c(1, 3);  // W_O = ones (1, 3): output [1, 1, 1]
    const MultiHeadResult<T> r = multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg);
    Mat<T> dO(1, 3);
    dO << M, M, -M;
    REQUIRE_FALSE(std::isfinite(T((dO * c.w.W_O.transpose())(0, 0))));
    const MultiHeadGrads<T> g = multi_head_backward<T>(c.X_q, c.X_kv, c.w, c.cfg, r, dO);
    CHECK(g.dW_O(0, 0) == M);
    CHECK(g.dW_O(0, 2) == -M);
    CHECK(g.dW_V(0, 0) == M);  // one key, weight 1: dV = dC = M
    CHECK(g.dX_kv(0, 0) == M);  // dK = 0 (one key), dV W_V^T = M
    CHECK(g.dX_q(0, 0) == 0);
  }
  SECTION("a KV head's gradient summed over its group in summation order is exact") {
    Tiny<T> c(3, 1);  // three query heads share one KV head; dC = 0.9 [M, M, -M]
    c.w.W_O << M, M, -M;
    const MultiHeadResult<T> r = multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg);
    const Mat<T> dO = Mat<T>::Constant(1, 1, T(0.9));
    const MultiHeadGrads<T> g = multi_head_backward<T>(c.X_q, c.X_kv, c.w, c.cfg, r, dO);
    const T part = T(0.9) * M;  // each head's dV (one key, weight 1), as rounded in T
    REQUIRE_FALSE(std::isfinite(part + part - part));  // the plain sum overflows
    CHECK(g.dW_V(0, 0) == part);
    CHECK(g.dX_kv(0, 0) == part);
  }
  SECTION("a KV head's gradient summed over its group past max(T) is an error") {
    Tiny<T> c(2, 1);  // two query heads share one KV head; dC = [M, M]
    const MultiHeadResult<T> r = multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg);
    const Mat<T> dO = Mat<T>::Constant(1, 1, M);
    CHECK_THROWS_WITH(multi_head_backward<T>(c.X_q, c.X_kv, c.w, c.cfg, r, dO),
                      Contains("gradient overflowed: dL/dV = sum over a KV group"));
  }
  SECTION("dW_O = concat^T dO past max(T) names dW_O") {
    Tiny<T> c(1, 1);
    c.w.W_V(0, 0) = T(4);  // concat = 4
    const MultiHeadResult<T> r = multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg);
    const Mat<T> dO = Mat<T>::Constant(1, 1, M);
    CHECK_THROWS_WITH(multi_head_backward<T>(c.X_q, c.X_kv, c.w, c.cfg, r, dO),
                      Contains("dL/dW_O = concat^T grad_output overflowed at (0, 0)"));
  }
  SECTION("a non-finite grad_output is refused by name") {
    Tiny<T> c(1, 1);
    const MultiHeadResult<T> r = multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg);
    const Mat<T> dO = Mat<T>::Constant(1, 1, std::numeric_limits<T>::quiet_NaN());
    CHECK_THROWS_WITH(multi_head_backward<T>(c.X_q, c.X_kv, c.w, c.cfg, r, dO),
                      Contains("grad_output must be finite"));
  }
}

TEMPLATE_TEST_CASE("multi-head backward: dL/dX_kv settles dK W_K^T + dV W_V^T as one product",
                   "[mha][faults][overflow]", float, double) {
  // The key part alone overflows where the sum does not (review): three keys, the first
  // carrying the query's direction, W_K and W_V with second rows of M / 2.28 and about
  // -(M / 2.28)(1 - P_1), so that dK W_K^T and dV W_V^T nearly cancel in column 1.
  using T = TestType;
  const T M = std::numeric_limits<T>::max();
  Tiny<T> c(1, 1);
  c.X_kv = Mat<T>::Zero(3, 2);
  c.X_kv(0, 0) = 1;
  c.w.W_K.resize(2, 1);
  c.w.W_V.resize(2, 1);
  const double e = std::exp(1.0), P1 = e / (e + 2);
  c.w.W_K << 1, T(double(M) / 2.28);
  c.w.W_V << 1, T(-double(M) / 2.28 * (1 - P1));
  const MultiHeadResult<T> r = multi_head_forward<T>(c.X_q, c.X_kv, c.w, c.cfg);
  const Mat<T> dO = Mat<T>::Constant(1, 1, T(10));
  const MultiHeadGrads<T> g = multi_head_backward<T>(c.X_q, c.X_kv, c.w, c.cfg, r, dO);
  REQUIRE(g.dX_kv.allFinite());
  // Right value: dX_kv(j, 1) = dK_j W_K(1, 0) + dV_j W_V(1, 0), with the head's dK_j, dV_j from
  // the double core (K = [1, 0, 0], V = [1, 0, 0]) and the sum in long double; the bar is the
  // product's own rounding, a few eps times the sum of the terms' magnitudes.
  Eigen::Matrix<double, -1, -1> Qd(1, 1), Kd(3, 1), Vd(3, 1), dOd(1, 1);
  Qd << 1;
  Kd << 1, 0, 0;
  Vd << 1, 0, 0;
  dOd << 10;
  const AttentionConfig<double> cfg;
  const auto fd = attention_forward<double>(Qd, Kd, Vd, ScoreParams<double>{}, cfg);
  const auto gd = attention_backward<double>(Qd, Kd, Vd, ScoreParams<double>{}, cfg, fd, dOd);
  for (Eigen::Index j = 0; j < 3; ++j) {
    const long double want = (long double)gd.dK(j, 0) * (long double)c.w.W_K(1, 0) +
                             (long double)gd.dV(j, 0) * (long double)c.w.W_V(1, 0);
    const long double scale = std::abs((long double)gd.dK(j, 0) * (long double)c.w.W_K(1, 0)) +
                              std::abs((long double)gd.dV(j, 0) * (long double)c.w.W_V(1, 0));
    CHECK(std::abs((long double)g.dX_kv(j, 1) - want) <= 8 * std::numeric_limits<T>::epsilon() * scale);
  }
}

TEMPLATE_TEST_CASE("settle_sum keeps small parts beside cancelling huge ones, and ties below max(T)",
                   "[mha][faults][overflow]", float, double) {
  using T = TestType;
  const T M = std::numeric_limits<T>::max();
  const T half_ulp = std::ldexp(T(1), std::numeric_limits<T>::max_exponent - std::numeric_limits<T>::digits - 1);
  const auto one = [](T x) { return Mat<T>::Constant(1, 1, x); };
  const Mat<T> a = one(M), b = one(half_ulp), c = one(-half_ulp), d = one(-M), tiny = one(T(1e-30));
  Mat<T> out;
  detail::settle_sum<Mat<T>>(out, {&a, &b, &c}, "test");
  CHECK(out(0, 0) == M);  // M + 2^e - 2^e: both plain roundings tie to 2^(E+1) = inf
  detail::settle_sum<Mat<T>>(out, {&a, &a, &d, &d, &tiny}, "test");
  if constexpr (sizeof(T) == 4) CHECK(out(0, 0) == T(1e-30));  // in double, 2^-227 of the top term
  const Mat<T> small = one(std::ldexp(M, -60));  // kept in either precision: 2^-60 of the top term
  detail::settle_sum<Mat<T>>(out, {&a, &a, &d, &d, &small}, "test");
  CHECK(out(0, 0) == small(0, 0));
  CHECK_THROWS_WITH(detail::settle_sum<Mat<T>>(out, {&a, &a}, "the test sum"),
                    Contains("gradient overflowed: the test sum overflowed at (0, 0)"));
}
