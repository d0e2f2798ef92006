// qkscope/norm/registry.hpp — the one list of normalizers (same pattern as
// score/registry.hpp): generic tests, bindings and UIs iterate it. Adding a normalizer
// is one header in norm/ (name, label, tex, soft, Options, forward, backward; noise()
// if it samples) plus one entry in the list below; its options then reach the config
// (NormalizerOptions), the validation, the wasm bindings and the UIs with no other edit.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "qkscope/detail/check.hpp"
#include "qkscope/norm/gumbel.hpp"
#include "qkscope/norm/hard.hpp"
#include "qkscope/norm/softmax.hpp"
#include "qkscope/norm/sparsemax.hpp"
#include "qkscope/norm/topk.hpp"

namespace qkscope {

/// Every normalizer, in the order the tutorial presents them.
using Normalizers = std::tuple<norm::Softmax, norm::Hard, norm::GumbelSoftmax, norm::Sparsemax,
                               norm::TopKSoftmax>;
// A half-registered entry (header written, line forgotten) fails here.
static_assert(std::tuple_size_v<Normalizers> == 5, "update the count with the list");

namespace detail {
template <class List>
struct OptionsTuple;
template <class... N>
struct OptionsTuple<std::tuple<N...>> {
  using type = std::tuple<typename N::Options...>;
};
/// Position of N in the tuple List (a compile error when N is not registered).
template <class N, class List>
struct IndexIn;
template <class N, class... Ns>
struct IndexIn<N, std::tuple<Ns...>> {
  static constexpr std::size_t value = [] {
    constexpr bool same[] = {std::is_same_v<N, Ns>...};
    for (std::size_t i = 0; i < sizeof...(Ns); ++i)
      if (same[i]) return i;
    return sizeof...(Ns);
  }();
  static_assert(value < sizeof...(Ns), "normalizer not in the Normalizers list");
};
}  // namespace detail

/// The options of every registered normalizer, one Options value each, read only by its
/// owner: e.g. cfg.norm_options.get<norm::TopKSoftmax>().top_k = 2. Holding all of them
/// lets a caller switch `normalizer` by name and keep what it set for each.
class NormalizerOptions {
 public:
  template <class N>
  typename N::Options& get() { return std::get<detail::IndexIn<N, Normalizers>::value>(all_); }
  template <class N>
  const typename N::Options& get() const { return std::get<detail::IndexIn<N, Normalizers>::value>(all_); }

 private:
  typename detail::OptionsTuple<Normalizers>::type all_;
};

/// One option of a normalizer, as data (for bindings and UIs).
struct NormalizerOptionInfo {
  const char* name;    // snake_case member name ("top_k")
  const char* kind;    // "boolean", "integer" or "number"
  double min, max;     // allowed range of numbers (max: the member type's largest value)
  double default_value;
  const char* doc;
};

struct NormalizerInfo {
  const char* name;
  const char* label;
  const char* tex;
  bool soft;  // needs temperature > 0
  std::span<const NormalizerOptionInfo> options;
};

namespace detail {
template <class O, class M>
constexpr NormalizerOptionInfo option_info(const norm::Field<O, M>& f) {
  constexpr bool flag = std::is_same_v<M, bool>;
  return {f.name, flag ? "boolean" : std::is_integral_v<M> ? "integer" : "number", flag ? 0.0 : f.min,
          flag ? 1.0 : double(std::numeric_limits<M>::max()), double(O{}.*(f.member)), f.doc};
}
}  // namespace detail

/// The options of normalizer N as data, built at compile time from N::Options::fields().
template <class N>
inline constexpr auto normalizer_option_infos = std::apply(
    [](const auto&... f) { return std::array<NormalizerOptionInfo, sizeof...(f)>{detail::option_info(f)...}; },
    N::Options::fields());

/// The registry as data, in list order.
inline auto normalizer_infos() {
  return std::apply(
      [](auto... f) {
        return std::array<NormalizerInfo, sizeof...(f)>{
            NormalizerInfo{decltype(f)::name, decltype(f)::label, decltype(f)::tex, decltype(f)::soft,
                           normalizer_option_infos<decltype(f)>}...};
      },
      Normalizers{});
}

[[noreturn]] inline void throw_unknown_normalizer(std::string_view name) {
  std::string known;
  for (const auto& i : normalizer_infos()) known += (known.empty() ? "" : ", ") + std::string(i.name);
  detail::fail("normalizer: unknown normalizer '" + std::string(name) + "' (known: " + known + ")");
}

/// Calls fn(N{}) with the normalizer N named `name` (fn must return void).
template <class Fn>
void visit_normalizer(std::string_view name, Fn&& fn) {
  bool found = false;
  std::apply([&](auto... f) { ((void)(!found && name == decltype(f)::name ? (fn(f), found = true) : false), ...); },
             Normalizers{});
  if (!found) throw_unknown_normalizer(name);
}

/// True when normalizer `name` has an online (streaming) form (N::online), i.e. runs on the
/// tiled CPU and the CUDA kernels; false for the others and for unknown names (the core then
/// reports those, in its own order of checks).
template <class N>
constexpr bool is_online() {
  if constexpr (requires { N::online; }) return N::online;
  else return false;
}
inline bool online_normalizer(std::string_view name) {
  return std::apply([&](auto... n) { return ((name == decltype(n)::name && is_online<decltype(n)>()) || ...); },
                    Normalizers{});
}

}  // namespace qkscope
