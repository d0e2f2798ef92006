// qkscope/norm/options.hpp — how a normalizer declares its options, so that the config,
// the validation, the wasm bindings and the UIs handle them without naming any of them.
//
// Each normalizer N owns `N::Options`: a plain struct whose members have their defaults,
// and whose static `fields()` describes each member as a Field (name, member pointer,
// lower bound, one-line doc). Normalizers without options use NoOptions. Then
//   validate_options(N::name, opts)   checks every number against its lower bound,
//   for_each_field(opts, fn)          visits the members (bindings map JS keys onto them),
// and NormalizerOptions (norm/registry.hpp) holds one Options of every registered normalizer.
#pragma once

#include <string>
#include <tuple>
#include <type_traits>

#include "qkscope/detail/check.hpp"

namespace qkscope::norm {

/// One member of an Options struct O: a bool, an integer or a floating-point number.
template <class O, class M>
struct Field {
  static_assert(std::is_arithmetic_v<M>, "normalizer options are bools or numbers");
  using Member = M;
  const char* name;  // snake_case, as in error messages ("top_k must be >= 1, got 0")
  M O::*member;
  double min;        // numbers: smallest allowed value (inclusive); ignored for bool
  const char* doc;   // one line, for UIs and the TypeScript docs
};

/// The options of a normalizer that has none.
struct NoOptions {
  static constexpr std::tuple<> fields() { return {}; }
};

/// Calls fn(field, value&) for every described member of `o` (const or not).
template <class O, class Fn>
void for_each_field(O& o, Fn&& fn) {
  using Plain = std::remove_const_t<O>;
  std::apply([&](const auto&... f) { (fn(f, o.*(f.member)), ...); }, Plain::fields());
}

/// Throws std::invalid_argument naming option `name` of `normalizer` when value < min
/// (NaN included). One out-of-line message builder for every normalizer and field.
[[noreturn]] inline void fail_option_min(const char* normalizer, const char* name, double value, double min) {
  detail::fail(std::string(name) + " must be >= " + detail::num(min) + ", got " + detail::num(value) +
               " (normalizer '" + normalizer + "')");
}

/// Throws std::invalid_argument naming the member when a number is below its bound.
template <class O>
void validate_options(const char* normalizer, const O& o) {
  for_each_field(o, [&](const auto& f, const auto& v) {
    if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, bool>)
      if (!(double(v) >= f.min)) fail_option_min(normalizer, f.name, double(v), f.min);
  });
}

}  // namespace qkscope::norm
