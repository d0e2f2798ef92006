// wasm/src/api_linear.hpp — linear attention (qkscope/linear/), the merge of attention
// states (qkscope/merge/) and sparse patterns (qkscope/mask/patterns.hpp) for the full
// module (the widget does not register them).
// Same conventions as api.hpp: plain JS values in and out, errors via guarded().
#pragma once

#include "api.hpp"
#include "qkscope/linear/linear.hpp"
#include "qkscope/merge/merge.hpp"

namespace qkscope::wasm {
namespace {

// In the order of LinearAttentionOptions in wasm/qkscope.d.ts.
const char* const kLinearKeys[] = {"query", "key", "value", "featureMap", "features", "seed", "scale",
                                   "orthogonal", "causal", "causalAlignment", "weights", "gradOutput"};
// A state is {output, logsumexp}; the result objects of forward() and attention() are states
// too, so their other fields (ForwardResult, AttentionResult in wasm/qkscope.d.ts) are accepted
// and ignored. Any other key is still a typo and rejected.
const char* const kStateKeys[] = {"output", "logsumexp", "rawScores", "scores", "maskedScores", "weights",
                                  "entropy", "maxWeight", "params", "scale", "tiled"};
const char* const kPatternKeys[] = {"queries", "keys", "window", "global", "random", "seed", "causalAlignment"};

val js_linear_attention(val opts) {
  return guarded("linearAttention", [&] {
    if (!is_object(opts) || opts.isArray())
      fail("options must be an object {query, key, value, featureMap, ...}, got " + describe(opts));
    reject_unknown_keys(opts, "options", kLinearKeys);
    const Matrix Q = to_matrix(opts["query"], "query");
    const Matrix K = to_matrix(opts["key"], "key");
    const Matrix V = to_matrix(opts["value"], "value");
    const std::string kind = absent(opts["featureMap"]) ? "favor" : string(opts["featureMap"], "featureMap");
    linear::FeatureMap<float> phi;
    if (kind == "favor") {
      const Eigen::Index m = absent(opts["features"]) ? 64 : integer(opts["features"], "features", 1, 1 << 16);
      const double scale = absent(opts["scale"]) ? 0 : number(opts["scale"], "scale");
      if (!absent(opts["scale"]) && !(scale > 0 && std::isfinite(scale)))
        fail("scale must be finite and > 0, got " + num_str(scale));
      const bool orthogonal = absent(opts["orthogonal"]) || boolean(opts["orthogonal"], "orthogonal");
      detail::require_nonempty(Q, "query");
      phi = linear::favor_features<float>(m, Q.cols(), read_seed(opts["seed"], "seed"), scale, orthogonal);
    } else if (kind != "elu") {
      fail("featureMap must be 'elu' or 'favor', got '" + kind + "'");
    } else {
      // elu + 1 has no random features: silently ignoring these would hide a mistake.
      for (const char* k : {"features", "seed", "scale", "orthogonal"})
        if (!absent(opts[k])) fail(std::string(k) + " applies only to featureMap 'favor', not 'elu'");
    }
    linear::LinearConfig cfg;
    if (!absent(opts["causal"])) cfg.causal = boolean(opts["causal"], "causal");
    cfg.alignment = read_alignment(opts["causalAlignment"]);
    const auto r = linear::linear_attention_forward<float>(Q, K, V, phi, cfg);
    val o = val::object();
    o.set("output", to_js(r.output));
    o.set("denominator", to_js(r.denominator));
    if (!absent(opts["weights"]) && boolean(opts["weights"], "weights"))
      o.set("weights", to_js(linear::implied_weights(r, cfg)));
    if (const val g = opts["gradOutput"]; !absent(g)) {
      const auto grads = linear::linear_attention_backward<float>(Q, K, V, phi, cfg, r, to_matrix(g, "gradOutput"));
      o.set("dQuery", to_js(grads.dQ));
      o.set("dKey", to_js(grads.dK));
      o.set("dValue", to_js(grads.dV));
    }
    return o;
  });
}

/// A logsumexp vector: numbers, finite or -Infinity (the core names NaN / +Infinity).
Vector to_lse(const val& v, const std::string& name) {
  if (absent(v)) fail(name + " is required (a Float32Array or an array of numbers)");
  const std::size_t n = length_of(v, name, "a Float32Array or an array of numbers");
  Vector out(static_cast<Eigen::Index>(n));
  for (std::size_t j = 0; j < n; ++j) {
    const val e = v[j];
    if (!e.isNumber()) fail(name + "[" + std::to_string(j) + "] must be a number, got " + describe(e));
    const double x = e.as<double>();
    out(Eigen::Index(j)) = static_cast<float>(x);
    // A finite number beyond float32 would become +-Infinity, and -Infinity means "empty".
    if (std::isfinite(x) && !std::isfinite(out(Eigen::Index(j))))
      fail(name + "[" + std::to_string(j) + "] = " + num_str(x) +
           " overflows float32 (|x| > 3.4e38); only -Infinity marks an empty partition");
  }
  return out;
}

AttentionState<float> to_state(const val& s, const char* name, const char* o_name, const char* lse_name) {
  if (!is_object(s) || s.isArray())
    fail(std::string(name) + " must be an object {output, logsumexp}, got " + describe(s));
  reject_unknown_keys(s, name, kStateKeys);
  return {to_matrix(s["output"], o_name), to_lse(s["logsumexp"], lse_name)};
}

val js_merge_states(val a, val b) {
  return guarded("mergeStates", [&] {
    const AttentionState<float> sa = to_state(a, "a", "a.output", "a.logsumexp");
    const AttentionState<float> sb = to_state(b, "b", "b.output", "b.logsumexp");
    const AttentionState<float> m = merge_attention_states<float>(sa.output, sa.logsumexp, sb.output, sb.logsumexp);
    val o = val::object();
    o.set("output", to_js(m.output));
    o.set("logsumexp", to_js(m.logsumexp));
    return o;
  });
}

val js_sparse_pattern(val opts) {
  return guarded("sparsePattern", [&] {
    if (!is_object(opts) || opts.isArray())
      fail("options must be an object {queries, keys, window, global, random, seed}, got " + describe(opts));
    reject_unknown_keys(opts, "options", kPatternKeys);
    const Eigen::Index L_q = integer(opts["queries"], "queries", 0, 1 << 14);
    const Eigen::Index L_k = absent(opts["keys"]) ? L_q : integer(opts["keys"], "keys", 0, 1 << 14);
    SparsePattern p;
    if (!absent(opts["window"])) p.window = integer(opts["window"], "window", 0, kMaxIndex);
    if (!absent(opts["global"])) p.global = integer(opts["global"], "global", 0, kMaxIndex);
    if (!absent(opts["random"])) p.random = integer(opts["random"], "random", 0, kMaxIndex);
    p.seed = read_seed(opts["seed"], "seed");
    p.alignment = read_alignment(opts["causalAlignment"]);
    return to_js(Matrix(sparse_pattern_mask(L_q, L_k, p).cast<float>()));
  });
}

}  // namespace
}  // namespace qkscope::wasm
