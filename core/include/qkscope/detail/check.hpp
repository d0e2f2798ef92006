// qkscope/detail/check.hpp — argument validation that throws std::invalid_argument
// with a message naming the argument and the offending shape or value.
// Why: bad input must surface as a catchable error (also in JS), never abort or NaN.
// Numbers are formatted with snprintf, not iostreams: an ostringstream pulls the whole
// locale machinery into every WebAssembly build (about 5 KB of the widget's gzipped budget).
#pragma once

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "qkscope/types.hpp"

namespace qkscope::detail {

inline std::string shape_str(Eigen::Index rows, Eigen::Index cols) {
  return "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

template <class Derived>
std::string shape_of(const Eigen::EigenBase<Derived>& m) {
  return shape_str(m.rows(), m.cols());
}

/// x in printf's %g form with `digits` significant digits ("0", "1e-09", "-inf").
inline std::string num_g(double x, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

/// A number as a person would write it, to 9 significant digits ("0", "1e-09", "-inf").
inline std::string num(double x) { return num_g(x, 9); }

[[noreturn]] inline void fail(const std::string& what) { throw std::invalid_argument(what); }

/// Throws std::invalid_argument("<msg>") unless cond holds.
inline void require(bool cond, const std::string& msg) {
  if (!cond) fail(msg);
}

/// The same with the message built only on failure (msg() returns it): for checks on the
/// hot path (per sequence and head, per token), where formatting numbers into a message
/// that is thrown away cost more than the check (native/bench/NOTES.md, issue 14).
template <class Msg>
  requires std::is_invocable_r_v<std::string, Msg>
void require(bool cond, Msg&& msg) {
  if (!cond) fail(msg());
}

/// `name` must have exactly shape (rows, cols).
template <class Derived>
void require_shape(const Eigen::EigenBase<Derived>& m, Eigen::Index rows, Eigen::Index cols,
                   const char* name) {
  if (m.rows() != rows || m.cols() != cols)
    fail(std::string(name) + " must have shape " + shape_str(rows, cols) + ", got " + shape_of(m));
}

/// `name` must be non-empty (no zero-sized dimension).
template <class Derived>
void require_nonempty(const Eigen::EigenBase<Derived>& m, const char* name) {
  if (m.rows() == 0 || m.cols() == 0)
    fail(std::string(name) + " must be non-empty, got shape " + shape_of(m));
}

/// Every entry of `name` must be finite (no NaN or +-inf).
template <class Derived>
void require_finite(const Eigen::MatrixBase<Derived>& m, const char* name) {
  if (m.allFinite()) return;  // vectorised; the loop below finds the first bad entry
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j)
      if (!std::isfinite(static_cast<double>(m(i, j))))
        fail(std::string(name) + " must be finite, got " + num_g(static_cast<double>(m(i, j)), 6) + " at (" +
             std::to_string(i) + ", " + std::to_string(j) + ")");
}

/// A scalar parameter must be finite and > 0.
inline void require_positive(double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value)) fail(std::string(name) + " must be finite and > 0, got " + num(value));
}

}  // namespace qkscope::detail
