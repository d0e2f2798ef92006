// tests/core/test_scans.cpp — the branch-free scans every call makes over its inputs
// (detail/check.hpp: all_finite, none_zero_or_subnormal; detail/logit_range.hpp:
// max_row_norm), against plain loops: each kind of entry (NaN, +-inf, the largest finite
// number, 0, -0, the smallest normal number, subnormals) at every position of vectors of every
// length 0..40, so the vectorised bodies and their remainders are all reached.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/detail/logit_range.hpp"

using namespace qkscope;

namespace {

template <class T>
std::vector<T> specials() {
  using L = std::numeric_limits<T>;
  return {L::quiet_NaN(), -L::quiet_NaN(), L::infinity(), -L::infinity(), L::max(), -L::max(), T(0), T(-0.0),
          L::min(), -L::min(), L::denorm_min(), -L::denorm_min(), L::min() / T(2), T(1), T(-3.5)};
}

template <class T>
void check_scans() {
  for (std::size_t n = 0; n <= 40; ++n)
    for (const T s : specials<T>())
      for (std::size_t pos = 0; pos < std::max<std::size_t>(n, 1); ++pos) {
        std::vector<T> x(n, T(1.5));
        if (n) x[pos] = s;
        bool finite = true, normal = true;
        for (const T v : x) {
          finite = finite && std::isfinite(v);
          normal = normal && (!std::isfinite(v) || std::abs(v) >= std::numeric_limits<T>::min());
        }
        INFO("n = " << n << ", entry " << pos << " = " << double(s));
        CHECK(detail::all_finite(x.data(), n) == finite);
        CHECK(detail::none_zero_or_subnormal(x.data(), n) == normal);
      }
}

}  // namespace

TEST_CASE("all_finite and none_zero_or_subnormal agree with plain loops", "[check]") {
  check_scans<float>();
  check_scans<double>();
}

TEST_CASE("max_row_norm is the largest row norm in double, inf for non-finite entries", "[check]") {
  detail::Rng rng(5);
  for (const Eigen::Index cols : {Eigen::Index(1), Eigen::Index(3), Eigen::Index(4), Eigen::Index(7),
                                  Eigen::Index(64), Eigen::Index(67)})
    for (const Eigen::Index rows : {Eigen::Index(0), Eigen::Index(1), Eigen::Index(5)}) {
      Mat<float> X(rows, cols);
      for (Eigen::Index k = 0; k < X.size(); ++k) X.data()[k] = float(rng.normal() * 1e18);
      double want = 0;
      for (Eigen::Index i = 0; i < rows; ++i) want = std::max(want, X.row(i).cast<double>().norm());
      INFO("rows = " << rows << ", cols = " << cols);
      const double got = detail::max_row_norm(X);
      CHECK(std::abs(got - want) <= 1e-14 * want);  // double rounding only, far below float's
      const Mat<double> Xd = X.cast<double>();
      CHECK(std::abs(detail::max_row_norm(Xd) - want) <= 1e-14 * want);
      if (X.size()) {
        X(rows - 1, cols - 1) = std::numeric_limits<float>::infinity();
        CHECK(detail::max_row_norm(X) == std::numeric_limits<double>::infinity());
        X(rows - 1, cols - 1) = std::numeric_limits<float>::quiet_NaN();
        CHECK(detail::max_row_norm(X) == std::numeric_limits<double>::infinity());
      }
    }
  // Entries whose squares pass float's range stay finite in double: 3e38 in 64 columns.
  const Mat<float> big = Mat<float>::Constant(2, 64, 3e38f);
  const double want = 8.0 * double(3e38f);
  CHECK(std::abs(detail::max_row_norm(big) - want) <= 1e-14 * want);
}
