// tests/core/support/compare.hpp — the one tolerance rule of the test suite.
//
// Forward values (FlashAttention's rule): the fast float path may be at most twice as
// far from the double reference as naive float32 math (the reference run in float):
//     max|fast - ref64| <= 2 * max|naive32 - ref64| + floor,  floor = 1e-6 * (1 + max|ref64|).
// -inf must match -inf exactly (masked entries); NaN never passes.
// Gradients: analytic double vs central differences in double (see gradcheck.hpp).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "qkscope/types.hpp"

namespace qktest {

struct Report {
  bool ok = true;
  double max_abs = 0, max_rel = 0, nmse = 0, naive_err = 0, tol = 0;
  Eigen::Index first_i = -1, first_j = -1;  // first mismatching entry
  std::string text;
};

/// Compares fast (float) against ref (double) with naive32 (float) setting the bar.
template <class A, class B, class C>
Report compare(const std::string& what, const Eigen::MatrixBase<A>& fast,
               const Eigen::MatrixBase<B>& naive, const Eigen::MatrixBase<C>& ref) {
  Report r;
  std::ostringstream s;
  if (fast.rows() != ref.rows() || fast.cols() != ref.cols()) {
    r.ok = false;
    s << what << ": shape (" << fast.rows() << ", " << fast.cols() << ") vs reference ("
      << ref.rows() << ", " << ref.cols() << ")";
    r.text = s.str();
    return r;
  }
  double max_ref = 0, num = 0, den = 0;
  for (Eigen::Index i = 0; i < ref.rows(); ++i)
    for (Eigen::Index j = 0; j < ref.cols(); ++j) {
      const double x = double(ref(i, j)), n = double(naive(i, j));
      if (std::isfinite(x)) max_ref = std::max(max_ref, std::abs(x));
      if (std::isfinite(x) && std::isfinite(n)) r.naive_err = std::max(r.naive_err, std::abs(n - x));
    }
  r.tol = 2 * r.naive_err + 1e-6 * (1 + max_ref);
  for (Eigen::Index i = 0; i < ref.rows(); ++i)
    for (Eigen::Index j = 0; j < ref.cols(); ++j) {
      const double x = double(ref(i, j)), y = double(fast(i, j));
      bool bad;
      if (std::isinf(x) || std::isinf(y)) bad = x != y;
      else if (std::isnan(x) || std::isnan(y)) bad = true;
      else {
        const double e = std::abs(y - x);
        r.max_abs = std::max(r.max_abs, e);
        r.max_rel = std::max(r.max_rel, e / std::max(std::abs(x), 1e-30));
        num += e * e;
        den += x * x;
        bad = e > r.tol;
      }
      if (bad && r.ok) { r.ok = false; r.first_i = i; r.first_j = j; }
    }
  r.nmse = den > 0 ? num / den : num;
  s << what << ": max_abs " << r.max_abs << ", max_rel " << r.max_rel << ", nmse " << r.nmse
    << ", tol " << r.tol << " (naive f32 err " << r.naive_err << ")";
  if (!r.ok)
    s << "; first mismatch at (" << r.first_i << ", " << r.first_j << "): fast "
      << double(fast(r.first_i, r.first_j)) << " vs ref " << double(ref(r.first_i, r.first_j));
  r.text = s.str();
  return r;
}

}  // namespace qktest

/// CHECKs fast ~ ref under the rule above and prints the report on failure.
#define CHECK_MATCHES_REFERENCE(what, fast, naive, ref)          \
  do {                                                           \
    const auto qk_rep_ = ::qktest::compare(what, fast, naive, ref); \
    INFO(qk_rep_.text);                                          \
    CHECK(qk_rep_.ok);                                           \
  } while (0)
