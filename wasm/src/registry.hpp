// wasm/src/registry.hpp — the core's registries (score/registry.hpp, norm/registry.hpp) as
// JS data, and the normalizers' options read from JS by iterating the same type list. No
// name is kept by hand here: a scoring function or normalizer added to the core, with its
// options, reaches scoreFunctions(), normalizers() and forward() with no edit in wasm/.
// JS spells each option in camelCase (Options member top_k -> ForwardOptions key topK);
// tests/wasm/registry.test.mjs checks that wasm/qkscope.d.ts lists the same names.
// Included by api.hpp only (one translation unit per module).
#pragma once

#include <emscripten/val.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "convert.hpp"
#include "qkscope/qkscope.hpp"

namespace qkscope::wasm {
namespace {

/// snake_case -> camelCase ("top_k" -> "topK"): the JS spelling of a C++ option name.
inline std::string camel(const char* snake) {
  std::string out;
  bool up = false;
  for (const char* c = snake; *c; ++c) {
    if (*c == '_') { up = true; continue; }
    out += up ? char(std::toupper(static_cast<unsigned char>(*c))) : *c;
    up = false;
  }
  return out;
}

/// Comma-separated registry list -> names.
std::vector<std::string> split_params(const char* list) {
  std::vector<std::string> out;
  std::string cur;
  for (const char* c = list; *c; ++c) {
    if (*c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (*c != ' ') {
      cur += *c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// The registry entry of `name` (throws the core's "unknown scoring function" message).
ScoreInfo score_info(const std::string& name) {
  for (const auto& i : score_infos())
    if (name == i.name) return i;
  throw_unknown_score(name);
}

/// Calls fn(cpp_name, js_name) for every normalizer option, in registry order (a name two
/// normalizers share comes twice: both read it). JS spells them in camelCase; the wasm
/// layer checks each value before the core does, so core messages never reach JS with a
/// C++ option name.
template <class Fn>
void for_each_normalizer_option(Fn&& fn) {
  for (const auto& n : normalizer_infos())
    for (const auto& o : n.options) fn(o.name, camel(o.name));
}

/// Reads every described field of `out` (norm/options.hpp: normalizer options, T5's
/// bucketing) present in `opts` under its camelCase name, checked as a JS boolean or number
/// (integers within [min, the member's range]); the core checks the rest. `prefix` names
/// the object in messages ("t5." -> "t5.numBuckets must be ...").
template <class O>
void read_fields(const val& opts, O& out, const std::string& prefix = "") {
  norm::for_each_field(out, [&](const auto& f, auto& v) {
    using M = std::decay_t<decltype(v)>;
    const std::string key = camel(f.name);
    const val x = opts[key];
    if (absent(x)) return;
    if constexpr (std::is_same_v<M, bool>) {
      v = boolean(x, prefix + key);
    } else if constexpr (std::is_integral_v<M>) {
      const double hi = std::min(double(std::numeric_limits<M>::max()), kMaxSafeInteger);
      v = M(integer(x, prefix + key, f.min, hi));
    } else {
      v = M(number(x, prefix + key));
    }
  });
}

/// Fails on a key of `opts` that is not a described field of O, listing the known ones.
template <class O>
void reject_unknown_fields(const val& opts, const std::string& name) {
  std::vector<std::string> known;
  std::apply([&](const auto&... f) { (known.push_back(camel(f.name)), ...); }, O::fields());
  reject_unknown_keys(opts, name, known);
}

/// Reads every normalizer option present in `opts` into cfg.norm_options.
void read_normalizer_options(const val& opts, NormalizerOptions& out) {
  std::apply([&](auto... n) { (read_fields(opts, out.template get<decltype(n)>()), ...); }, Normalizers{});
}

/// [{name, label, tex, params, sameDim}], in registry order.
val score_functions_to_js() {
  val list = val::array();
  int i = 0;
  for (const auto& s : score_infos()) {
    val o = val::object();
    o.set("name", std::string(s.name));
    o.set("label", std::string(s.label));
    o.set("tex", std::string(s.tex));
    val params = val::array();
    int k = 0;
    for (const auto& n : split_params(s.params)) params.set(k++, n);
    o.set("params", params);
    o.set("sameDim", s.same_dim);
    list.set(i++, o);
  }
  return list;
}

/// [{name, label, tex, soft, options: [{name, kind, default, min?, max?, doc}]}], with
/// option names as ForwardOptions spells them.
val normalizers_to_js() {
  val list = val::array();
  int i = 0;
  for (const auto& n : normalizer_infos()) {
    val o = val::object();
    o.set("name", std::string(n.name));
    o.set("label", std::string(n.label));
    o.set("tex", std::string(n.tex));
    o.set("soft", n.soft);
    val options = val::array();
    int k = 0;
    for (const auto& f : n.options) {
      val x = val::object();
      x.set("name", camel(f.name));
      x.set("kind", std::string(f.kind));
      if (std::string(f.kind) == "boolean") {
        x.set("default", f.default_value != 0);
      } else {
        x.set("default", f.default_value);
        x.set("min", f.min);
        x.set("max", std::string(f.kind) == "integer" ? std::min(f.max, kMaxSafeInteger) : f.max);
      }
      x.set("doc", std::string(f.doc));
      options.set(k++, x);
    }
    o.set("options", options);
    list.set(i++, o);
  }
  return list;
}

}  // namespace
}  // namespace qkscope::wasm
