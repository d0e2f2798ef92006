// qkscope/norm/registry.hpp — the one list of normalizers (same pattern as
// score/registry.hpp): generic tests, bindings and UIs iterate it.
#pragma once

#include <array>
#include <optional>
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
static_assert(std::tuple_size_v<Normalizers> == 5, "update the count with the list");

struct NormalizerInfo {
  const char* name;
  const char* label;
  const char* tex;
  bool soft;  // needs temperature > 0
};

inline auto normalizer_infos() {
  return std::apply(
      [](auto... f) {
        return std::array<NormalizerInfo, sizeof...(f)>{NormalizerInfo{
            decltype(f)::name, decltype(f)::label, decltype(f)::tex, decltype(f)::soft}...};
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

}  // namespace qkscope
