// qkscope/score/registry.hpp — the one list of scoring functions. Every path visits it:
// the core (attention.hpp), the CPU tiled kernels (cpu/attention.hpp) and the CUDA host
// API (native/cuda/api_plan.cpp) through the functions' prepare hooks, the wasm bindings and
// the web dropdown through score_infos(), and the tests (TEMPLATE_LIST_TEST_CASE). Adding a
// scoring function is one header in score/ plus its #include and entry here (see
// docs/adding-a-scoring-function.md and score/skeleton.hpp.txt).
#pragma once

#include <array>
#include <optional>
#include <type_traits>
#include <string>
#include <string_view>
#include <tuple>

#include "qkscope/detail/check.hpp"
#include "qkscope/score/additive.hpp"
#include "qkscope/score/bilinear.hpp"
#include "qkscope/score/cosine.hpp"
#include "qkscope/score/dot.hpp"
#include "qkscope/score/linear_concat.hpp"
#include "qkscope/score/neg_sq_euclidean.hpp"
#include "qkscope/score/scaled_dot.hpp"

namespace qkscope {

/// Every scoring function, in the order the tutorial presents them.
using ScoreFunctions =
    std::tuple<score::Dot, score::ScaledDot, score::Cosine, score::Bilinear, score::Additive,
               score::LinearConcat, score::NegSqEuclidean>;

/// Static description of a scoring function, for UIs and error messages.
struct ScoreInfo {
  const char* name;    // stable identifier ("scaled_dot")
  const char* label;   // human label ("Scaled dot product")
  const char* tex;     // KaTeX formula of f(q, k)
  const char* params;  // comma-separated parameter names ("W_q,W_k,v,b"), "" for none
  bool same_dim;       // true when d_q must equal d_k
  bool hidden;         // true when it has a hidden width d_h (its parameters' size)
};

/// The registry as data, in list order.
inline auto score_infos() {
  return std::apply(
      [](auto... f) {
        return std::array<ScoreInfo, sizeof...(f)>{
            ScoreInfo{decltype(f)::name, decltype(f)::label, decltype(f)::tex,
                      decltype(f)::params, decltype(f)::same_dim,
                      decltype(f)::hidden}...};
      },
      ScoreFunctions{});
}

[[noreturn]] inline void throw_unknown_score(std::string_view name) {
  std::string known;
  for (const auto& i : score_infos()) known += (known.empty() ? "" : ", ") + std::string(i.name);
  detail::fail("score: unknown scoring function '" + std::string(name) + "' (known: " + known + ")");
}

/// Calls fn(F{}) with the scoring function F named `name`; returns what fn returns.
/// Throws std::invalid_argument listing the known names when `name` is unknown.
template <class Fn>
decltype(auto) visit_score(std::string_view name, Fn&& fn) {
  using R = decltype(fn(score::ScaledDot{}));
  if constexpr (std::is_void_v<R>) {
    bool found = false;
    std::apply([&](auto... f) { ((void)(!found && name == decltype(f)::name ? (fn(f), found = true) : false), ...); },
               ScoreFunctions{});
    if (!found) throw_unknown_score(name);
  } else {
    std::optional<R> out;
    std::apply([&](auto... f) { ((void)(!out && name == decltype(f)::name ? (out.emplace(fn(f)), true) : false), ...); },
               ScoreFunctions{});
    if (!out) throw_unknown_score(name);
    R result = std::move(*out);  // by value: decltype(auto) of std::move(*out) would dangle
    return result;
  }
}

/// True when scoring function `name` has a hidden width d_h. Throws for an unknown name.
inline bool score_has_hidden(std::string_view name) {
  return visit_score(name, [](auto f) { return decltype(f)::hidden; });
}

/// Floating-point operations of the raw scores of scoring function `name` over `pairs` visible
/// (query, key) pairs of a head of shape `s` (hidden width d_h where the function has one),
/// per-row projections included; each function states its count (its `flops`). Used for the
/// benchmarks' GFLOP/s. Throws std::invalid_argument for an unknown name.
inline double score_flops(std::string_view name, const ScoreShape& s, double pairs, Eigen::Index d_h) {
  return visit_score(name, [&](auto f) { return decltype(f)::flops(s, pairs, d_h); });
}

}  // namespace qkscope
