// qkscope/detail/check.hpp — argument validation that throws std::invalid_argument
// with a message naming the argument and the offending shape or value.
// Why: bad input must surface as a catchable error (also in JS), never abort or NaN.
// Numbers are formatted with snprintf, not iostreams: an ostringstream pulls the whole
// locale machinery into every WebAssembly build (about 5 KB of the widget's gzipped budget).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

/// Whether some x[k] (double) has exponent bits equal to `bits` (all ones: inf or NaN; 0: zero or
/// subnormal). Branch-free flags: wasm SIMD has no 64-bit max or min.
inline bool any_exponent_bits(const double* x, std::size_t n, std::uint64_t bits) {
  constexpr std::uint64_t e = 0x7ff0000000000000ull;
  std::uint64_t hit = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::uint64_t b;
    std::memcpy(&b, x + k, sizeof b);
    hit |= std::uint64_t((b & e) == bits);
  }
  return hit != 0;
}

/// True when no x[0..n) is NaN or infinite (their exponent bits are all ones), for float or
/// double. No branches, so that compilers vectorise the loop. Not inlined: one vectorised copy
/// per type instead of one per caller (the tiled wasm module grew by 1.7 KB gzipped inlined).
/// For float, the largest |x| bit pattern is kept instead (an and and an unsigned max per four
/// lanes in wasm SIMD, against four operations; NOTES.md, issue 11, thirteenth session); double
/// keeps the flag form (any_exponent_bits).
template <class T>
[[gnu::noinline]] bool all_finite(const T* x, std::size_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (sizeof(T) == 4) {
    std::uint32_t top = 0;
    for (std::size_t k = 0; k < n; ++k) {
      std::uint32_t b;
      std::memcpy(&b, x + k, sizeof b);
      b &= 0x7fffffffu;
      top = b > top ? b : top;
    }
    return top < 0x7f800000u;
  } else {
    return !any_exponent_bits(x, n, 0x7ff0000000000000ull);
  }
}

/// True when every x[0..n) is a normal number, infinite or NaN (none is 0 or subnormal: the
/// exponent bits are never all zero). Branch-free, as all_finite; for float an unsigned min of
/// the exponent bits.
template <class T>
[[gnu::noinline]] bool none_zero_or_subnormal(const T* x, std::size_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (sizeof(T) == 4) {
    std::uint32_t low = 0x7f800000u;
    for (std::size_t k = 0; k < n; ++k) {
      std::uint32_t b;
      std::memcpy(&b, x + k, sizeof b);
      b &= 0x7f800000u;
      low = b < low ? b : low;
    }
    return n == 0 || low != 0;
  } else {
    return !any_exponent_bits(x, n, 0);
  }
}

/// m.allFinite(), by the exponent-bit pass above for plain float / double matrices and
/// vectors (contiguous): under wasm SIMD Eigen's allFinite runs through the SSE emulation,
/// 25 us per 32 K floats against a few (native/bench/NOTES.md, issue 11, eleventh session).
template <class Derived>
bool all_finite(const Eigen::MatrixBase<Derived>& m) {
  using T = typename Derived::Scalar;
  if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                std::is_base_of_v<Eigen::PlainObjectBase<Derived>, Derived>)
    return all_finite(m.derived().data(), std::size_t(m.size()));
  else
    return m.allFinite();
}

/// Every entry of `name` must be finite (no NaN or +-inf).
template <class Derived>
void require_finite(const Eigen::MatrixBase<Derived>& m, const char* name) {
  if (all_finite(m)) return;  // vectorised; the loop below finds the first bad entry
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
