// wasm/src/api.hpp — the functions behind the Embind surface (see wasm/qkscope.d.ts).
// Included by exactly one translation unit per module: wasm/src/bindings.cpp (the full
// module) or wasm/widget/bindings.cpp (the widget's smaller one), which register them.
//
// Every function takes and returns plain JS values (emscripten::val): no class_ handles
// to .delete(), no registered vectors. Results hold Float32Array copies, safe across
// memory growth. All validation happens here and in the core; the JS wrapper
// (wasm/qkscope.js) only forwards.
//
// Errors: each binding runs inside guarded() (errors.hpp), which turns
//   std::invalid_argument (bad input; message names the argument) -> JS RangeError
//   any other std::exception (std::bad_alloc included)            -> JS Error
// The C++ exception is fully unwound before the JS error is thrown, so the module
// stays usable after an error.
#pragma once

#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <cctype>
#include <tuple>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "convert.hpp"
#include "errors.hpp"
#include "qkscope/qkscope.hpp"
#include "registry.hpp"

namespace qkscope::wasm {
namespace {

// ---- options -------------------------------------------------------------------------

// In the order of ForwardOptions in wasm/qkscope.d.ts (listed in error messages); the
// normalizers' options (from their registry) come after "normalizer".
const char* const kForwardKeys[] = {"query", "key", "value", "score", "params", "seed",
                                    "hidden", "scale", "temperature", "keyLength", "causal",
                                    "causalAlignment", "window", "bias", "mask", "normalizer",
                                    "softcap", "alibiSlope", "relativeBias", "t5", "t5Table"};

/// Fails on a key that is neither in kForwardKeys nor a normalizer option (typos such as
/// 'temprature'), listing the known ones.
void reject_unknown_forward_keys(const val& opts) {
  for (const auto& k : keys_of(opts)) {
    bool ok = false;
    for (const char* kn : kForwardKeys) ok = ok || k == kn;
    for_each_normalizer_option([&](const char*, const std::string& js) { ok = ok || k == js; });
    if (ok) continue;
    std::string list;
    for (const char* kn : kForwardKeys) list += std::string(list.empty() ? "" : ", ") + kn;
    for_each_normalizer_option([&](const char*, const std::string& js) {
      if (list.find(js) == std::string::npos) list += ", " + js;  // seed is listed already
    });
    fail("options: unknown option '" + k + "' (known: " + list + ")");
  }
}
const char* const kParamKeys[] = {"W", "W_q", "W_k", "v", "b", "w"};
const char* const kWindowKeys[] = {"left", "right"};

template <class M>
M* field(ScoreParams<float>& p, const std::string& key);
template <>
Matrix* field<Matrix>(ScoreParams<float>& p, const std::string& key) {
  if (key == "W") return &p.W;
  if (key == "W_q") return &p.W_q;
  if (key == "W_k") return &p.W_k;
  return nullptr;
}
template <>
Vector* field<Vector>(ScoreParams<float>& p, const std::string& key) {
  if (key == "v") return &p.v;
  if (key == "b") return &p.b;
  if (key == "w") return &p.w;
  return nullptr;
}

/// The parameter fields of `p` named in `names` (empty ones skipped unless keep_empty).
val params_to_js(ScoreParams<float>& p, const std::vector<std::string>& names, bool keep_empty) {
  val o = val::object();
  for (const auto& k : names) {
    if (Matrix* m = field<Matrix>(p, k)) {
      if (m->size() || keep_empty) o.set(k, to_js(*m));
    } else if (Vector* v = field<Vector>(p, k)) {
      if (v->size() || keep_empty) o.set(k, to_js(*v));
    }
  }
  return o;
}

/// All non-empty parameter fields of `p` (for gradients).
val params_to_js(ScoreParams<float>& p) {
  std::vector<std::string> all(std::begin(kParamKeys), std::end(kParamKeys));
  return params_to_js(p, all, false);
}

struct Parsed {
  std::string score = "scaled_dot";
  std::vector<std::string> used;  // parameter names of the scoring function
  Matrix Q, K, V;
  ScoreParams<float> params;
  AttentionConfig<float> cfg;
};

std::uint64_t read_seed(const val& v, const std::string& name) {
  if (absent(v)) return 0;
  return static_cast<std::uint64_t>(integer(v, name, 0, kMaxSafeInteger));
}

#ifndef QKSCOPE_WASM_WIDGET
/// T5 bucketing and table (forward options t5, t5Table). The bucketing's described fields
/// (T5Buckets::fields()) are checked here as normalizer options are; the table's length
/// and presence too, so every message names the JS option.
void read_t5(const val& opts, BiasSpec<float>& b) {
  if (const val t = opts["t5"]; !absent(t)) {
    if (!is_object(t) || t.isArray())
      fail("t5 must be an object {numBuckets, maxDistance, bidirectional}, got " + describe(t));
    reject_unknown_fields<T5Buckets>(t, "t5");
    read_fields(t, b.t5.emplace(), "t5.");
  }
  if (const val t = opts["t5Table"]; !absent(t)) {
    if (!b.t5) fail("t5Table is set but t5 (the bucketing) is not");
    b.t5_table = to_vector(t, "t5Table");
  }
  if (b.t5 && b.t5_table.size() != b.t5->num_buckets)
    fail("t5Table must have t5.numBuckets = " + std::to_string(b.t5->num_buckets) + " entries, got " +
         std::to_string(b.t5_table.size()));
}
#else
/// The widget build (wasm/widget/bindings.cpp) leaves T5 out to stay inside its size budget.
void read_t5(const val& opts, BiasSpec<float>&) {
  if (!absent(opts["t5"]) || !absent(opts["t5Table"]))
    fail("t5 is not in the widget build of qkscope; use wasm/qkscope.js");
}
#endif

/// causalAlignment ("top_left" when absent), for every function that takes one.
CausalAlignment read_alignment(const val& a) {
  if (absent(a)) return CausalAlignment::top_left;
  const std::string s = string(a, "causalAlignment");
  if (s == "bottom_right") return CausalAlignment::bottom_right;
  if (s != "top_left") fail("causalAlignment must be 'top_left' or 'bottom_right', got '" + s + "'");
  return CausalAlignment::top_left;
}

/// ForwardOptions -> inputs and config (everything the .d.ts documents).
Parsed parse_options(const val& opts) {
  if (!is_object(opts) || opts.isArray())
    fail("options must be an object {query, key, value, ...}, got " + describe(opts));
  reject_unknown_forward_keys(opts);
  Parsed p;

  if (const val s = opts["score"]; !absent(s)) p.score = string(s, "score");
  const ScoreInfo info = score_info(p.score);
  p.used = split_params(info.params);

  p.Q = to_matrix(opts["query"], "query");
  p.K = to_matrix(opts["key"], "key");
  p.V = to_matrix(opts["value"], "value");
  // to_matrix required finite entries; the core's own check_inputs runs again in every path.
  const ScoreShape shape = detail::check_input_shapes(p.Q, p.K, p.V);

  const std::uint64_t seed = read_seed(opts["seed"], "seed");
  std::optional<Eigen::Index> hidden;
  if (const val h = opts["hidden"]; !absent(h)) hidden = integer(h, "hidden", 1, 1 << 20);

  // Parameters: given ones converted, missing used ones initialised from the seed.
  bool given[6] = {};
  if (const val pv = opts["params"]; !absent(pv)) {
    if (!is_object(pv) || pv.isArray())
      fail("params must be an object {W?, W_q?, W_k?, v?, b?, w?}, got " + describe(pv));
    reject_unknown_keys(pv, "params", kParamKeys);
    for (int k = 0; k < 6; ++k) {
      const std::string key = kParamKeys[k];
      const val x = pv[key];
      if (absent(x)) continue;
      given[k] = true;
      if (Matrix* m = field<Matrix>(p.params, key)) *m = to_matrix(x, "params." + key);
      else *field<Vector>(p.params, key) = to_vector(x, "params." + key);
    }
  }
  bool missing = false;
  for (const auto& u : p.used)
    for (int k = 0; k < 6; ++k) missing = missing || (u == kParamKeys[k] && !given[k]);
  if (missing) {
    // Hidden size: explicit, else from the given additive parameters, else d_k.
    Eigen::Index d_h = shape.d_k;
    if (hidden) {
      // A given additive parameter fixes d_h: a different `hidden` must be blamed on the two
      // of them, not on the default W_q the caller never passed.
      // Only parameters the scoring function uses (its registry entry) fix d_h.
      const std::tuple<const char*, const char*, Eigen::Index> implied[] = {
          {"v", "params.v (length)", p.params.v.size()}, {"W_q", "params.W_q (rows)", p.params.W_q.rows()},
          {"W_k", "params.W_k (rows)", p.params.W_k.rows()}, {"b", "params.b (length)", p.params.b.size()}};
      for (const auto& [key, what, n] : implied)
        if (n && n != *hidden && std::find(p.used.begin(), p.used.end(), key) != p.used.end())
          fail("hidden = " + std::to_string(*hidden) + " disagrees with " + what + " = " +
               std::to_string(n) + " (the hidden size d_h of the " + p.score + " score)");
      d_h = *hidden;
    }
    else if (p.params.v.size()) d_h = p.params.v.size();
    else if (p.params.W_q.rows()) d_h = p.params.W_q.rows();
    else if (p.params.W_k.rows()) d_h = p.params.W_k.rows();
    else if (p.params.b.size()) d_h = p.params.b.size();
    ScoreParams<float> init = init_params<float>(p.score, shape.d_q, shape.d_k, d_h, seed);
    for (int k = 0; k < 6; ++k) {
      const std::string key = kParamKeys[k];
      if (given[k]) continue;
      if (Matrix* m = field<Matrix>(p.params, key)) *m = std::move(*field<Matrix>(init, key));
      else *field<Vector>(p.params, key) = std::move(*field<Vector>(init, key));
    }
  }

  AttentionConfig<float>& cfg = p.cfg;
  cfg.score = p.score;
  if (const val s = opts["scale"]; !absent(s)) cfg.scale = number(s, "scale");
  if (const val t = opts["temperature"]; !absent(t)) cfg.temperature = number(t, "temperature");
  if (const val n = opts["normalizer"]; !absent(n)) cfg.normalizer = string(n, "normalizer");
  read_normalizer_options(opts, cfg.norm_options);  // topK, hard, seed, ...: each normalizer's own

  MaskSpec& mask = cfg.mask;
  if (const val n = opts["keyLength"]; !absent(n))
    mask.key_length = integer(n, "keyLength", 0, kMaxIndex);
  if (const val c = opts["causal"]; !absent(c)) mask.causal = boolean(c, "causal");
  if (const val a = opts["causalAlignment"]; !absent(a)) mask.alignment = read_alignment(a);
  if (const val w = opts["window"]; !absent(w)) {
    if (!is_object(w) || w.isArray())
      fail("window must be an object {left, right}, got " + describe(w));
    reject_unknown_keys(w, "window", kWindowKeys);
    // Each side: a non-negative integer; Infinity or omitted = unbounded on that side.
    auto side = [&](const char* key, std::optional<Eigen::Index>& out) {
      const val x = w[key];
      const std::string name = std::string("window.") + key;
      if (absent(x)) return;
      if (x.isNumber() && x.as<double>() == std::numeric_limits<double>::infinity()) {
        out = Eigen::Index(kMaxIndex);  // wider than any L_q + L_k
        return;
      }
      out = integer(x, name, 0, kMaxIndex);
    };
    side("left", mask.window_left);
    side("right", mask.window_right);
    if (!mask.window_left && !mask.window_right)
      fail("window must set left and/or right (keys visible left / right of the diagonal)");
  }
  if (const val m = opts["mask"]; !absent(m)) mask.keep = to_keep_mask(m, "mask");
  if (const val b = opts["bias"]; !absent(b)) cfg.bias.dense = to_matrix(b, "bias", Entries::finite_or_ninf);
  // Score modifiers (bias/bias.hpp); the core validates their values.
  if (const val c = opts["softcap"]; !absent(c)) cfg.bias.softcap = number(c, "softcap");
  if (const val a = opts["alibiSlope"]; !absent(a)) cfg.bias.alibi_slope = number(a, "alibiSlope");
  if (const val r = opts["relativeBias"]; !absent(r)) {
    cfg.bias.relative = to_vector(r, "relativeBias");
    // The core reads an empty table as "no relative bias"; a caller who passes [] meant one.
    if (cfg.bias.relative.size() % 2 == 0)
      fail("relativeBias must have odd length 2R+1 (R >= 0), got length " +
           std::to_string(cfg.bias.relative.size()));
  }
  read_t5(opts, cfg.bias);
  return p;
}

val result_to_js(Parsed& p, const AttentionResult<float>& r) {
  val o = val::object();
  o.set("rawScores", to_js(r.raw_scores));
  o.set("scores", to_js(r.scores));
  o.set("maskedScores", to_js(r.masked_scores));
  o.set("weights", to_js(r.weights));
  o.set("output", to_js(r.output));
  o.set("logsumexp", to_js(r.logsumexp));
  o.set("entropy", to_js(r.entropy));
  o.set("maxWeight", to_js(r.max_weight));
  o.set("params", params_to_js(p.params, p.used, true));
  o.set("scale", r.scale);
  return o;
}

// ---- bindings ------------------------------------------------------------------------

val js_forward(val opts) {
  return guarded("forward", [&] {
    Parsed p = parse_options(opts);
    const AttentionResult<float> r = attention_forward(p.Q, p.K, p.V, p.params, p.cfg);
    return result_to_js(p, r);
  });
}

/// gradOutput = dL/d(output), checked against the shape of output (L_q, d_v).
Matrix read_grad_output(const Parsed& p, const val& grad_output) {
  Matrix dO = to_matrix(grad_output, "gradOutput");
  if (dO.rows() != p.Q.rows() || dO.cols() != p.V.cols())
    fail("gradOutput must have the shape of output (L_q, d_v) = " +
         detail::shape_str(p.Q.rows(), p.V.cols()) + ", got " + detail::shape_of(dO));
  return dO;
}

/// BackwardResult of wasm/qkscope.d.ts (bias gradients only for the biases given).
val grads_to_js(const Parsed& p, AttentionGrads<float>& g) {
  val o = val::object();
  o.set("dQuery", to_js(g.dQ));
  o.set("dKey", to_js(g.dK));
  o.set("dValue", to_js(g.dV));
  o.set("dParams", params_to_js(g.dparams));
  o.set("dTemperature", g.dtemperature);
  if (p.cfg.bias.dense.size()) o.set("dBias", to_js(g.ddense));
  if (p.cfg.bias.relative.size()) o.set("dRelativeBias", to_js(g.drelative));
  if (p.cfg.bias.t5) o.set("dT5Table", to_js(g.dt5_table));
  return o;
}

val js_backward(val opts, val grad_output) {
  return guarded("backward", [&] {
    Parsed p = parse_options(opts);
    const AttentionResult<float> r = attention_forward(p.Q, p.K, p.V, p.params, p.cfg);
    const Matrix dO = read_grad_output(p, grad_output);
    AttentionGrads<float> g = attention_backward(p.Q, p.K, p.V, p.params, p.cfg, r, dO);
    return grads_to_js(p, g);
  });
}

val js_init_params(val score, val d_q, val d_k, val hidden, val seed) {
  return guarded("initParams", [&] {
    const std::string name = string(score, "score");
    const ScoreInfo info = score_info(name);
    const Eigen::Index dq = integer(d_q, "dQ", 1, 1 << 20);
    const Eigen::Index dk = integer(d_k, "dK", 1, 1 << 20);
    // d_h matters to additive only (whose init rejects d_h < 1 by name); others ignore it.
    const Eigen::Index dh = absent(hidden) ? dk : integer(hidden, "hidden", 0, 1 << 20);
    ScoreParams<float> p = init_params<float>(name, dq, dk, dh, read_seed(seed, "seed"));
    return params_to_js(p, split_params(info.params), true);
  });
}

val js_score_functions() { return guarded("scoreFunctions", [] { return score_functions_to_js(); }); }

val js_normalizers() { return guarded("normalizers", [] { return normalizers_to_js(); }); }

std::string js_version() { return qkscope::version; }

}  // namespace
}  // namespace qkscope::wasm
