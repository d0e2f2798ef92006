// tests/core/faults/checks.hpp — how the fault-case tests compare qkscope's results with
// the values of tests/data/fault_cases.json, and the small configurations they share.
//
// Precision of the checks: the data file writes values to 6 significant digits, and values
// in [0.01, 0.1) to 6 decimals (0.047426). A value e passes when |x - e| <= half a unit of
// e's 6th significant digit (5e-7 at least when |e| >= 0.01), plus 4 ulps of the type
// computed in (the file's rounding and the computation's add up). Zeros the policy
// promises (masked weights, fully masked rows) and values exact in every type are
// checked exactly (check_exact).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "faults/fault_data.hpp"
#include "qkscope/qkscope.hpp"

namespace qktest::faults {

using namespace qkscope;
namespace qp = qkscope::precision;
using half = Eigen::half;
using bf16 = Eigen::bfloat16;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The matrix of the data file with each entry rounded once into T.
template <class T = double>
Mat<T> as(const DataNode& n) {
  const MatrixD m = n.matrix();
  Mat<T> o(m.rows(), m.cols());
  for (Eigen::Index i = 0; i < m.size(); ++i) o.data()[i] = qp::round_to<T>(m.data()[i]);
  return o;
}

/// |x - e| within half a unit of the file's last digit plus 4 ulps of the compute type.
inline bool sig6(double x, double e, double eps) {
  if (std::isnan(x)) return false;
  if (e == 0) return std::abs(x) <= 5e-7;
  const double a = std::abs(e);
  const double unit6 = std::pow(10.0, std::floor(std::log10(a)) - 5);
  const double half_unit = std::max(0.5 * unit6, a >= 0.01 ? 5e-7 : 0.0);
  return std::abs(x - e) <= half_unit + 4 * eps * a;
}

/// Checks the entries of `got` (row-major) against `expected` to 6 significant digits.
template <class Derived>
void check_sig6(const std::string& what, const Eigen::MatrixBase<Derived>& got,
                const std::vector<double>& expected, double eps) {
  REQUIRE(std::size_t(got.size()) == expected.size());
  std::size_t k = 0;
  for (Eigen::Index i = 0; i < got.rows(); ++i)
    for (Eigen::Index j = 0; j < got.cols(); ++j, ++k) {
      const double x = double(got(i, j));
      INFO(what << "[" << k << "]: got " << x << ", expected " << expected[k]);
      CHECK(sig6(x, expected[k], eps));
    }
}

/// The same against a value of the data file; `what` is its JSON pointer.
template <class Derived>
void check_sig6(const Eigen::MatrixBase<Derived>& got, const DataNode& expected, double eps) {
  check_sig6(expected.where(), got, expected.values(), eps);
}

/// Entry-wise equality with a value of the data file, where "nan" matches NaN.
template <class Derived>
void check_exact(const Eigen::MatrixBase<Derived>& got, const DataNode& expected) {
  const std::vector<double> e = expected.values();
  REQUIRE(std::size_t(got.size()) == e.size());
  std::size_t k = 0;
  for (Eigen::Index i = 0; i < got.rows(); ++i)
    for (Eigen::Index j = 0; j < got.cols(); ++j, ++k) {
      const double x = double(got(i, j));
      INFO(expected.where() << "[" << k << "]: got " << x << ", expected " << e[k]);
      CHECK((std::isnan(e[k]) ? std::isnan(x) : x == e[k]));
    }
}

template <class T>
double eps_of() {
  return double(std::numeric_limits<T>::epsilon());
}

template <class T>
AttentionConfig<T> dot_config(double scale = 1.0) {
  AttentionConfig<T> c;
  c.score = "dot";
  c.scale = scale;
  return c;
}

/// Feeds a given score matrix (L_q, L_k) through the core: Q = scores, K = I, dot, scale 1
/// gives raw scores equal to `scores` exactly (products with 1 and sums of zeros).
template <class T>
AttentionResult<T> from_scores(const Mat<T>& scores, const Mat<T>& V, AttentionConfig<T> c) {
  return attention_forward<T>(scores, Mat<T>::Identity(scores.cols(), scores.cols()), V, {}, c);
}

}  // namespace qktest::faults
