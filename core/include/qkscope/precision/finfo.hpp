// qkscope/precision/finfo.hpp — the limits of each storage type and exact rounding into it.
//
//   finfo<T>()        min (most negative finite), max, eps, tiny (smallest normal) of T,
//                     like torch.finfo / numpy.finfo.
//   round_to<S>(x)    the double x rounded once, to nearest even, into S; overflow -> +-inf.
//
// Storage types: Eigen::half (IEEE binary16: max 65504, eps 2^-10), Eigen::bfloat16
// (fp32's exponent with 8 significant bits: max ~3.39e38, eps 2^-7), float, double.
// Why round_to and not S(x): Eigen converts a double to half/bfloat16 through float,
// which rounds twice and can land on the wrong side of a half-way point
// (1 + 2^-11 + 2^-40 becomes 1 instead of 1 + 2^-10). Rounding to float "to odd" first
// and then to nearest even is exact whenever float keeps >= 2 more bits than the target
// (Boldo & Melquiond 2008, "Emulation of FMA and correctly rounded sums: proved
// algorithms using rounding to odd", Thm. 1): 24 bits vs 11 (half) and 8 (bfloat16).
// The facts behind the mask failures (docs/facts.md §10; tests/data/fault_cases.json B03-B05):
//   round_to<half>(-1e9) = -inf; round_to<half>(-65504 - 16) = -inf (a tie, rounds to even);
//   round_to<bfloat16>(finfo<float>().min) = -inf.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "qkscope/types.hpp"

namespace qkscope::precision {

/// True for the scalar types the precision helpers accept.
template <class S>
inline constexpr bool is_storage_v =
    std::is_same_v<S, Eigen::half> || std::is_same_v<S, Eigen::bfloat16> ||
    std::is_same_v<S, float> || std::is_same_v<S, double>;

/// Limits of a floating-point type, as doubles (every value is exact in double).
struct Finfo {
  double min;         // most negative finite value (torch.finfo(T).min = -max)
  double max;         // largest finite value
  double eps;         // 1 ulp at 1.0: 2^-10 half, 2^-7 bfloat16, 2^-23 float, 2^-52 double
  double tiny;        // smallest positive normal
  double denorm_min;  // smallest positive subnormal
  double half_ulp_at_max;  // (max - next below max) / 2: max + this rounds to inf (ties to even)
  int digits;         // significant bits, the implicit one included
  const char* name;   // "float16", "bfloat16", "float32", "float64"
};

/// finfo<T>() for T in {Eigen::half, Eigen::bfloat16, float, double}.
/// Example: finfo<Eigen::half>().min == -65504, finfo<Eigen::bfloat16>().min == -3.3895314e38.
template <class T>
Finfo finfo() {
  static_assert(is_storage_v<T>, "finfo<T>: T must be Eigen::half, Eigen::bfloat16, float or double");
  using L = std::numeric_limits<T>;
  const int digits = L::digits;
  const double max = double(L::max());
  // The spacing just below max is 2^(e - digits + 1) for max in [2^e, 2^(e+1)).
  const double ulp = std::ldexp(1.0, std::ilogb(max) - digits + 1);
  const char* name = std::is_same_v<T, Eigen::half>       ? "float16"
                     : std::is_same_v<T, Eigen::bfloat16> ? "bfloat16"
                     : std::is_same_v<T, float>           ? "float32"
                                                          : "float64";
  // eps from digits, not L::epsilon(): Eigen 3.4.0's numeric_limits<half>::epsilon() is
  // 2^-13 (raw 0x0800) instead of 2^-10.
  return {double(L::lowest()), max, std::ldexp(1.0, 1 - digits), double(L::min()),
          double(L::denorm_min()), ulp / 2, digits, name};
}

namespace detail {

/// x rounded to float "to odd": truncated toward zero, with the last bit set when inexact.
/// Infinite or NaN x pass through; |x| > FLT_MAX gives +-FLT_MAX (odd), which any narrower
/// type then rounds to +-inf, as x itself would.
inline float to_float_round_odd(double x) {
  if (!std::isfinite(x)) return static_cast<float>(x);
  float f = static_cast<float>(x);
  if (static_cast<double>(f) == x) return f;
  if (std::abs(static_cast<double>(f)) > std::abs(x)) f = std::nextafter(f, 0.0f);
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits |= 1u;  // sticky: "strictly between two floats"
  std::memcpy(&f, &bits, sizeof bits);
  return f;
}

}  // namespace detail

/// x rounded once to nearest (ties to even) into S; beyond the range gives +-inf.
template <class S>
S round_to(double x) {
  static_assert(is_storage_v<S>, "round_to<S>: S must be Eigen::half, Eigen::bfloat16, float or double");
  if constexpr (std::is_same_v<S, double>) return x;
  else if constexpr (std::is_same_v<S, float>) return static_cast<float>(x);
  else return S(detail::to_float_round_odd(x));
}

/// x widened exactly to double (half/bfloat16 through float).
template <class S>
double as_double(S x) {
  if constexpr (std::is_same_v<S, double> || std::is_same_v<S, float>) return double(x);
  else return double(static_cast<float>(x));
}

/// x rounded into S and widened back to double (exact): "the value S actually holds".
template <class S>
double stored_value(double x) {
  return as_double(round_to<S>(x));
}

/// Every entry of M (matrix or vector, any scalar) rounded once into S; keeps the shape
/// and storage order, so a Mat<double> gives a Mat<S> and a Vec<double> a Vec<S>.
template <class S, class Derived>
auto to_storage(const Eigen::MatrixBase<Derived>& M) {
  using X = typename Derived::Scalar;
  return M.unaryExpr([](const X& x) { return round_to<S>(as_double(x)); }).eval();
}

/// Widens M (matrix or vector) to U (float or double); exact for every storage type
/// not wider than U. Keeps the shape and storage order.
template <class U, class Derived>
auto widen(const Eigen::MatrixBase<Derived>& M) {
  using S = typename Derived::Scalar;
  return M.unaryExpr([](const S& x) {
            if constexpr (std::is_same_v<S, double> || std::is_same_v<S, float>) return U(x);
            else return U(static_cast<float>(x));  // half/bfloat16 -> float is exact
          })
      .eval();
}

/// Double matrix whose entries are exactly the values S can hold (round then widen).
/// The fair input for a double reference of a reduced-precision computation.
template <class S>
MatrixD round_trip(const MatrixD& M) {
  return widen<double>(to_storage<S>(M));
}

/// What happens to a constant (a mask fill value, a bias) when it is stored in S.
enum class ValueCast {
  exact,              // representable: stored unchanged
  rounded,            // finite, stored as the nearest value of S
  overflow_to_inf,    // finite but beyond the range of S: stored as +-inf
  underflow_to_zero,  // non-zero but below the smallest subnormal of S: stored as +-0
  non_finite,         // +-inf or NaN requested: stored as is
};

/// Classifies round_to<S>(x).
template <class S>
ValueCast classify_cast(double x) {
  if (!std::isfinite(x)) return ValueCast::non_finite;
  const double s = stored_value<S>(x);
  if (s == x) return ValueCast::exact;
  if (std::isinf(s)) return ValueCast::overflow_to_inf;
  if (s == 0) return ValueCast::underflow_to_zero;
  return ValueCast::rounded;
}

/// PyTorch's range check for scalars written into a tensor of dtype S (masked_fill, fill_):
/// a finite value below finfo.min or above finfo.max raises "value cannot be converted to
/// type at::Half without overflow" (c10::overflows); +-inf is accepted.
template <class S>
bool pytorch_raises_on_fill(double x) {
  const Finfo f = finfo<S>();
  return std::isfinite(x) && (x < f.min || x > f.max);
}

inline const char* to_string(ValueCast c) {
  switch (c) {
    case ValueCast::exact: return "exact";
    case ValueCast::rounded: return "rounded";
    case ValueCast::overflow_to_inf: return "overflow to inf";
    case ValueCast::underflow_to_zero: return "underflow to zero";
    case ValueCast::non_finite: return "non-finite";
  }
  return "?";
}

}  // namespace qkscope::precision
