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
