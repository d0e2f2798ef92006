// core/reference/tolerance.hpp — the one tolerance rule for checking a fast path against the
// double reference, used by the tests (wrapped as a Catch2 matcher in
// tests/core/support/compare.hpp) and by the benchmark drivers, which validate before they
// time. No test framework here.
//
// Forward values (the rule of FlashAttention's tests): the fast path may be at most twice as
// far from the double reference as naive math in the fast path's precision (the reference
// run in float), plus a small floor:
//     max|fast - ref64| <= 2 * max|naive - ref64| + floor,  floor = 1e-6 * (1 + max|ref64|).
// -inf must match -inf exactly (masked entries); NaN never passes. One more match at the edge
// of the fast path's range: +-inf where the reference entry is in the top binade of fast's
// type (|ref| >= max / 2), has the same sign, and is within tol of rounding past its largest
// value (|ref| + tol >= max + half an ulp): a value the inputs' own rounding can carry to inf
// (a logsumexp of -3.40282352e38, within half an ulp of -FLT_MAX, came out -inf from a float
// score one rounding larger: fuzzer, 2026-12-06). The binade keeps a small entry from
// matching inf where another entry's size made tol large (review). The report gives max abs,
// max rel and NMSE errors and the first mismatching (i, j), as ggml's test-backend-ops does.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "qkscope/types.hpp"

namespace qkscope::reference {

/// Outcome of compare(): whether the rule holds, the error figures and a one-line report.
struct Comparison {
  bool ok = true;
  double max_abs = 0, max_rel = 0, nmse = 0;
  double naive_err = 0;  // max|naive - ref| over finite entries: the bar the rule scales
  double tol = 0;        // 2 * naive_err + floor
  Eigen::Index first_i = -1, first_j = -1;  // first mismatching entry, row-major order
  std::string text;      // "<what>: max_abs ..., first mismatch at (i, j): fast x vs ref y"
};

/// Compares `fast` against `ref` (double) with `naive` (naive math in fast's precision)
/// setting the bar. All three have the same shape (a mismatch is reported as a failure).
template <class A, class B, class C>
Comparison compare(const std::string& what, const Eigen::MatrixBase<A>& fast,
                   const Eigen::MatrixBase<B>& naive, const Eigen::MatrixBase<C>& ref) {
  Comparison r;
  std::ostringstream s;
  if (fast.rows() != ref.rows() || fast.cols() != ref.cols() || naive.rows() != ref.rows() ||
      naive.cols() != ref.cols()) {
    r.ok = false;
    s << what << ": shape (" << fast.rows() << ", " << fast.cols() << "), naive (" << naive.rows() << ", "
      << naive.cols() << ") vs reference (" << ref.rows() << ", " << ref.cols() << ")";
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
  // Where fast's type rounds to inf: its largest value plus half an ulp there (2^103 for
  // float; for double the sum is inf itself, so the clause never applies to a double path).
  using FastScalar = typename A::Scalar;
  using Lim = std::numeric_limits<FastScalar>;
  const double top = double(Lim::max()),
               overflow = top + std::ldexp(1.0, Lim::max_exponent - Lim::digits - 1);
  for (Eigen::Index i = 0; i < ref.rows(); ++i)
    for (Eigen::Index j = 0; j < ref.cols(); ++j) {
      const double x = double(ref(i, j)), y = double(fast(i, j));
      bool bad;
      if (std::isinf(y) && std::isfinite(x) && std::abs(x) >= top / 2 && (y > 0) == (x > 0) &&
          std::abs(x) + r.tol >= overflow)
        bad = false;
      else if (std::isinf(x) || std::isinf(y)) bad = x != y;
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
    << ", tol " << r.tol << " (naive err " << r.naive_err << ")";
  if (!r.ok)
    s << "; first mismatch at (" << r.first_i << ", " << r.first_j << "): fast "
      << double(fast(r.first_i, r.first_j)) << " vs ref " << double(ref(r.first_i, r.first_j));
  r.text = s.str();
  return r;
}

}  // namespace qkscope::reference
