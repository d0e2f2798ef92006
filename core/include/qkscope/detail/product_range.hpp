// qkscope/detail/product_range.hpp — plain products and sums of finite terms that leave the
// range of T: the multi-head projections X W_Q, X W_K, X W_V, concat W_O, their backward
// products, and the backward's sums over heads and sequences (mha/forward.hpp,
// mha/backward.hpp). Unlike O = P V (detail/output_range.hpp), these are not convex
// combinations, so there is no range to clamp to. An entry can overflow in summation order
// although its exact value is representable: the row [M, M, -M] times a column of ones,
// M = max(float), gave inf where the exact value is M (review, eighteenth session). Such an
// entry is summed again term by term, each term as m 2^(e - E) with E the largest term's
// exponent, in double with compensation, which no partial sum can overflow; an entry whose
// exact value is past max(T) is an error naming it.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/types.hpp"

namespace qkscope::detail {

/// One term of sum_by_exponent: (hi + lo) 2^e, with 1 <= |hi| < 4 (hi = lo = 0 for a zero term)
/// and lo the rounding error of hi where hi is a rounded product.
struct ScaledTerm {
  double hi = 0, lo = 0;
  int e = 0;
};

/// x as hi 2^e with 1 <= |hi| < 2 ({0, 0, 0} for x = 0): a term of sum_by_exponent.
template <class T>
ScaledTerm split_exponent(T x) {
  if (x == T(0)) return {};
  const int e = std::ilogb(x);
  return {double(std::ldexp(x, -e)), 0.0, e};
}

/// a b as a term: the mantissas' product in double (exact for float; for double its rounding
/// error, from an fma, is the term's lo).
template <class T>
ScaledTerm product_term(T a, T b) {
  if (a == T(0) || b == T(0)) return {};
  const int ea = std::ilogb(a), eb = std::ilogb(b);
  const double ma = double(std::ldexp(a, -ea)), mb = double(std::ldexp(b, -eb));
  const double hi = ma * mb;
  if constexpr (sizeof(T) < sizeof(double)) return {hi, 0.0, ea + eb};  // 48 bits: exact
  else return {hi, std::fma(ma, mb, -hi), ea + eb};
}

/// sum_k x_k for n terms given as term(k) (ScaledTerm), without overflow in summation order:
/// every term is scaled by 2^-E, E the largest e, and summed in double with Neumaier's
/// compensation, so that a sum whose plain rounding would tie up to 2^(E+1) (M + 2^103 - 2^103
/// in float: review) keeps its value. Parts below double's subnormal range after the scaling
/// (2^-1074 of the largest term) are dropped: nothing in float, and for double far below the
/// sum's own rounding, eps sum_k |x_k|. Returns {s, E} with the sum = s 2^E ({0, 0} for none).
template <class Term>
std::pair<double, int> sum_by_exponent(Eigen::Index n, Term term) {
  int top = std::numeric_limits<int>::min();
  for (Eigen::Index k = 0; k < n; ++k)
    if (const ScaledTerm t = term(k); t.hi != 0) top = std::max(top, t.e);
  if (top == std::numeric_limits<int>::min()) return {0.0, 0};
  double s = 0, c = 0;
  const auto add = [&](double x) {
    const double t = s + x;
    c += std::abs(s) >= std::abs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  };
  for (Eigen::Index k = 0; k < n; ++k)
    if (const ScaledTerm t = term(k); t.hi != 0) {
      add(std::ldexp(t.hi, t.e - top));
      add(std::ldexp(t.lo, t.e - top));
    }
  return {s + c, top};
}

/// s 2^E rounded to T, or the error naming `what` and the entry when that is past +-max(T).
template <class T>
T settled_or_fail(std::pair<double, int> sum, const std::string& what, Eigen::Index i, Eigen::Index j) {
  const T v = T(std::ldexp(sum.first, sum.second));
  if (!std::isfinite(v))
    fail(what + " overflowed at (" + std::to_string(i) + ", " + std::to_string(j) + "): its exact value is about " +
         num(sum.first) + " * 2^" + std::to_string(sum.second) +
         ", past the largest finite value of this precision, " + num(double(std::numeric_limits<T>::max())) +
         " (the inputs, weights or grad_output are too large)");
  return v;
}

/// C (m, p) = A (m, n) B (n, p), already formed, with A and B finite. Each non-finite entry is
/// summed again by exponent (sum_by_exponent over the products A_ik B_kj, each formed from the
/// factors' mantissas); finite entries are unchanged, and a product with no overflow costs one
/// finiteness pass, O(m p).
/// Throws std::invalid_argument naming `what` and the entry (row, column) when its exact value
/// is past +-max(T) (the inputs are too large for this precision).
template <class T, class DA, class DB>
void settle_product(Mat<T>& C, const Eigen::MatrixBase<DA>& A, const Eigen::MatrixBase<DB>& B,
                    const char* what) {
  if (all_finite(C.data(), std::size_t(C.size()))) return;
  for (Eigen::Index j = 0; j < C.cols(); ++j)
    for (Eigen::Index i = 0; i < C.rows(); ++i) {
      if (std::isfinite(C(i, j))) continue;
      const auto term = [&](Eigen::Index k) { return product_term<T>(A(i, k), B(k, j)); };
      C(i, j) = settled_or_fail<T>(sum_by_exponent(A.cols(), term), what, i, j);
    }
}

/// out = sum_k parts[k] (matrices or vectors of one shape, finite), each entry summed by
/// exponent where the plain sum overflowed; an entry past +-max(T) is a "gradient overflowed"
/// error naming `what`. No parts: out is left as it is.
template <class M>
void settle_sum(M& out, const std::vector<const M*>& parts, const char* what) {
  using T = typename M::Scalar;
  if (parts.empty()) return;
  out = *parts[0];
  for (std::size_t k = 1; k < parts.size(); ++k) out += *parts[k];
  if (all_finite(out.data(), std::size_t(out.size()))) return;
  for (Eigen::Index j = 0; j < out.cols(); ++j)
    for (Eigen::Index i = 0; i < out.rows(); ++i)
      if (!std::isfinite(out(i, j)))
        out(i, j) = settled_or_fail<T>(
            sum_by_exponent(Eigen::Index(parts.size()),
                            [&](Eigen::Index k) { return split_exponent<T>((*parts[std::size_t(k)])(i, j)); }),
            std::string("gradient overflowed: ") + what, i, j);
}

}  // namespace qkscope::detail
