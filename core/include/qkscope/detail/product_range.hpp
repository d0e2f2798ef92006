// qkscope/detail/product_range.hpp — plain matrix products of finite factors that leave the
// range of T: the multi-head projections X W_Q, X W_K, X W_V, concat W_O and their backward
// products (mha/forward.hpp, mha/backward.hpp). Unlike O = P V (detail/output_range.hpp),
// these are not convex combinations, so there is no range to clamp to. An entry can overflow
// in summation order although its exact value is representable: the row [M, M, -M] times a
// column of ones, M = max(float), gave inf where the exact value is M (review, eighteenth
// session). Such an entry is formed again from power-of-two scaled factors, which no partial
// sum can overflow; an entry whose exact value is past max(T) is an error naming the product.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "qkscope/detail/check.hpp"
#include "qkscope/types.hpp"

namespace qkscope::detail {

/// C (m, p) = A (m, n) B (n, p), already formed, with A and B finite. Each non-finite entry is
/// formed again as 2^(a+b) sum_k (A_ik 2^-a)(B_kj 2^-b), a and b the exponents of the largest
/// |A_ik| and |B_kj|: every term is below 4 in magnitude, so the sum cannot overflow, and the
/// scaling by powers of two is exact (terms below the subnormal range are dropped, an error
/// far below the sum's own rounding, eps sum_k |A_ik B_kj|). Finite entries are unchanged, and
/// a product with no overflow costs one finiteness pass, O(m p).
/// Throws std::invalid_argument naming `what` and the entry (row, column) when its exact value
/// is past +-max(T) (the inputs are too large for this precision).
template <class T, class DA, class DB>
void settle_product(Mat<T>& C, const Eigen::MatrixBase<DA>& A, const Eigen::MatrixBase<DB>& B,
                    const char* what) {
  if (all_finite(C.data(), std::size_t(C.size()))) return;
  for (Eigen::Index j = 0; j < C.cols(); ++j)
    for (Eigen::Index i = 0; i < C.rows(); ++i) {
      if (std::isfinite(C(i, j))) continue;
      // Both factors have a nonzero entry here, or the entry would be 0.
      const int a = std::ilogb(A.row(i).cwiseAbs().maxCoeff());
      const int b = std::ilogb(B.col(j).cwiseAbs().maxCoeff());
      T sum = 0;
      for (Eigen::Index k = 0; k < A.cols(); ++k)
        sum += std::ldexp(A(i, k), -a) * std::ldexp(B(k, j), -b);
      C(i, j) = std::ldexp(sum, a + b);
      if (!std::isfinite(C(i, j)))
        fail(std::string(what) + " overflowed at (" + std::to_string(i) + ", " + std::to_string(j) +
             "): its exact value is about " + num(double(sum)) + " * 2^" + std::to_string(a + b) +
             ", past the largest finite value of this precision, " +
             num(double(std::numeric_limits<T>::max())) + " (the inputs or weights are too large)");
    }
}

}  // namespace qkscope::detail
