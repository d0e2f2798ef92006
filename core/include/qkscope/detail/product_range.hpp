// qkscope/detail/product_range.hpp — plain products and sums of finite terms that leave the
// range of T: the multi-head projections X W_Q, X W_K, X W_V, concat W_O, their backward
// products, and the backward's sums over heads and sequences (mha/forward.hpp,
// mha/backward.hpp). Unlike O = P V (detail/output_range.hpp), these are not convex
// combinations, so there is no range to clamp to. An entry can overflow in summation order
// although its exact value is representable: the row [M, M, -M] times a column of ones,
// M = max(float), gave inf where the exact value is M (review, eighteenth session). Such an
// entry is summed again term by term, each term as m 2^(e - E) with E the largest term's
// exponent, which no partial sum can overflow; an entry whose exact value is past max(T) is an
// error naming it.
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

/// sum_k x_k for n terms given as term(k) = {m, e} with x_k = m 2^e (m = 0 for a zero term,
/// 1 <= |m| < 4 otherwise). Every term is scaled by 2^-E, E the largest e, so the partial sums
/// stay below 4 n in magnitude; terms below the subnormal range after the scaling (under
/// 2^-125 of the largest term in float) are dropped, far below the sum's own rounding,
/// eps sum_k |x_k|. Returns {s, E} with the sum = s 2^E (s = 0, E = 0 for no nonzero term).
template <class T, class Term>
std::pair<T, int> sum_by_exponent(Eigen::Index n, Term term) {
  int top = std::numeric_limits<int>::min();
  for (Eigen::Index k = 0; k < n; ++k)
    if (const auto [m, e] = term(k); m != T(0)) top = std::max(top, e);
  if (top == std::numeric_limits<int>::min()) return {T(0), 0};
  T s = 0;
  for (Eigen::Index k = 0; k < n; ++k)
    if (const auto [m, e] = term(k); m != T(0)) s += std::ldexp(m, e - top);
  return {s, top};
}

/// x as {m, e} with x = m 2^e and 1 <= |m| < 2 ({0, 0} for x = 0): a term of sum_by_exponent.
template <class T>
std::pair<T, int> split_exponent(T x) {
  if (x == T(0)) return {T(0), 0};
  const int e = std::ilogb(x);
  return {std::ldexp(x, -e), e};
}

/// s 2^E in T, or the error naming `what` and the entry when that is past +-max(T).
template <class T>
T settled_or_fail(std::pair<T, int> sum, const std::string& what, Eigen::Index i, Eigen::Index j) {
  const T v = std::ldexp(sum.first, sum.second);
  if (!std::isfinite(v))
    fail(what + " overflowed at (" + std::to_string(i) + ", " + std::to_string(j) + "): its exact value is about " +
         num(double(sum.first)) + " * 2^" + std::to_string(sum.second) +
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
      const auto term = [&](Eigen::Index k) -> std::pair<T, int> {
        const auto [ma, ea] = split_exponent<T>(A(i, k));
        const auto [mb, eb] = split_exponent<T>(B(k, j));
        return {ma * mb, ea + eb};  // in [1, 4), rounded once, as A_ik B_kj itself would be
      };
      C(i, j) = settled_or_fail(sum_by_exponent<T>(A.cols(), term), what, i, j);
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
        out(i, j) = settled_or_fail(
            sum_by_exponent<T>(Eigen::Index(parts.size()),
                               [&](Eigen::Index k) { return split_exponent<T>((*parts[std::size_t(k)])(i, j)); }),
            std::string("gradient overflowed: ") + what, i, j);
}

}  // namespace qkscope::detail
