// wasm/src/api_extras.hpp — multi-head attention and the reduced-precision
// demonstrations for the full module (the widget does not register them).
// Same conventions as api.hpp: plain JS values in and out, errors via guarded().
#pragma once

#include "api.hpp"

namespace qkscope::wasm {
namespace {

const char* const kMultiHeadKeys[] = {"query", "keyValue", "batch", "heads", "kvHeads", "dK", "dV",
                                      "dOut", "seed", "score", "temperature", "causal",
                                      "causalAlignment", "keyLengths", "alibi", "t5", "t5Table"};
const char* const kPrecisionKeys[] = {"scores", "mask", "dtype", "fill", "method"};

/// (rows, cols) with N(0, 1/rows) entries: Glorot-style projection weights from a seed.
Matrix seeded_weights(detail::Rng& rng, Eigen::Index rows, Eigen::Index cols) {
  Matrix m(rows, cols);
  const double sd = 1.0 / std::sqrt(double(rows));
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = float(sd * rng.normal());
  return m;
}

val js_multi_head_forward(val opts) {
  return guarded("multiHeadForward", [&] {
    if (!is_object(opts) || opts.isArray())
      fail("options must be an object {query, heads, dK, dV, ...}, got " + describe(opts));
    reject_unknown_keys(opts, "options", kMultiHeadKeys);
    const Matrix Xq = to_matrix(opts["query"], "query");
    const Matrix Xkv = absent(opts["keyValue"]) ? Xq : to_matrix(opts["keyValue"], "keyValue");
    MultiHeadConfig<float> cfg;
    cfg.batch = absent(opts["batch"]) ? 1 : integer(opts["batch"], "batch", 1, kMaxIndex);
    cfg.heads = int(integer(opts["heads"], "heads", 1, 4096));
    if (!absent(opts["kvHeads"])) cfg.kv_heads = int(integer(opts["kvHeads"], "kvHeads", 1, 4096));
    cfg.d_k = integer(opts["dK"], "dK", 1, 1 << 16);
    cfg.d_v = integer(opts["dV"], "dV", 1, 1 << 16);
    const Eigen::Index d_out = absent(opts["dOut"]) ? Xq.cols() : integer(opts["dOut"], "dOut", 1, 1 << 16);
    const std::uint64_t seed = read_seed(opts["seed"], "seed");
    if (!absent(opts["score"])) cfg.attention.score = string(opts["score"], "score");
    if (!absent(opts["temperature"])) cfg.attention.temperature = number(opts["temperature"], "temperature");
    if (!absent(opts["causal"])) cfg.attention.mask.causal = boolean(opts["causal"], "causal");
    if (const val a = opts["causalAlignment"]; !absent(a)) {
      const std::string s = string(a, "causalAlignment");
      if (s == "bottom_right") cfg.attention.mask.alignment = CausalAlignment::bottom_right;
      else if (s != "top_left") fail("causalAlignment must be 'top_left' or 'bottom_right', got '" + s + "'");
    }
    if (!absent(opts["alibi"])) cfg.alibi = boolean(opts["alibi"], "alibi");
    // T5 with forward's option names; t5Table holds one table per head (H, numBuckets).
    if (const val t = opts["t5"]; !absent(t)) {
      if (!is_object(t) || t.isArray())
        fail("t5 must be an object {numBuckets, maxDistance, bidirectional}, got " + describe(t));
      reject_unknown_fields<T5Buckets>(t, "t5");
      T5Buckets& b = cfg.attention.bias.t5.emplace();
      read_fields(t, b, "t5.");
      detail::validate_t5(b, "t5");
      if (absent(opts["t5Table"])) fail("t5Table (heads x t5.numBuckets, one table per head) is required with t5");
      cfg.t5_tables = to_matrix(opts["t5Table"], "t5Table");
      if (cfg.t5_tables.rows() != cfg.heads || cfg.t5_tables.cols() != b.num_buckets)
        fail("t5Table must have shape (heads, t5.numBuckets) = " + detail::shape_str(cfg.heads, b.num_buckets) +
             ", got " + detail::shape_of(cfg.t5_tables));
    } else if (!absent(opts["t5Table"])) {
      fail("t5Table is set but t5 (the bucketing) is not");
    }
    if (const val k = opts["keyLengths"]; !absent(k)) {
      const Vector lens = to_vector(k, "keyLengths");
      for (Eigen::Index b = 0; b < lens.size(); ++b) {
        if (lens(b) != std::floor(lens(b)))
          fail("keyLengths[" + std::to_string(b) + "] must be an integer, got " + num_str(lens(b)));
        cfg.key_lengths.push_back(Eigen::Index(lens(b)));
      }
    }
    cfg.param_seed = seed;
    const Eigen::Index H_kv = cfg.kv_heads.value_or(cfg.heads);
    detail::Rng rng(seed);
    MultiHeadWeights<float> w;
    w.W_Q = seeded_weights(rng, Xq.cols(), cfg.heads * cfg.d_k);
    w.W_K = seeded_weights(rng, Xkv.cols(), H_kv * cfg.d_k);
    w.W_V = seeded_weights(rng, Xkv.cols(), H_kv * cfg.d_v);
    w.W_O = seeded_weights(rng, cfg.heads * cfg.d_v, d_out);
    const MultiHeadResult<float> r = multi_head_forward(Xq, Xkv, w, cfg);
    val heads = val::array();
    for (std::size_t i = 0; i < r.heads.size(); ++i) {
      val h = val::object();
      h.set("weights", to_js(r.heads[i].weights));
      h.set("entropy", to_js(r.heads[i].entropy));
      h.set("logsumexp", to_js(r.heads[i].logsumexp));
      heads.call<void>("push", h);
    }
    val o = val::object();
    o.set("output", to_js(r.output));
    o.set("heads", heads);
    return o;
  });
}

template <class S>
precision::Outcome run_precision(const std::string& method, const Matrix& scores, const KeepMask& keep,
                                 double fill) {
  const Mat<S> s = precision::to_storage<S>(scores);
  // The correct path needs finite scores; say which input overflowed the dtype (the naive
  // methods run on and show what the overflow does).
  if (method == "correct")
    for (Eigen::Index i = 0; i < s.rows(); ++i)
      for (Eigen::Index j = 0; j < s.cols(); ++j)
        if (!std::isfinite(double(precision::as_double(s(i, j)))))
          fail("scores: " + num_str(scores(i, j)) + " at (" + std::to_string(i) + ", " + std::to_string(j) +
               ") overflows " + precision::finfo<S>().name + " (max " + num_str(precision::finfo<S>().max) + ")");
  if (method == "masked_fill") return precision::naive::masked_fill_softmax<S>(s, keep, fill);
  if (method == "no_max") return precision::naive::softmax_no_max<S>(s);
  if (method == "correct") return precision::masked_softmax<S>(s, keep);
  fail("method must be 'masked_fill', 'no_max' or 'correct', got '" + method + "'");
}

val js_precision_softmax(val opts) {
  return guarded("precisionSoftmax", [&] {
    if (!is_object(opts) || opts.isArray())
      fail("options must be an object {scores, dtype, method, ...}, got " + describe(opts));
    reject_unknown_keys(opts, "options", kPrecisionKeys);
    const Matrix scores = to_matrix(opts["scores"], "scores");
    const KeepMask keep = absent(opts["mask"]) ? KeepMask::Constant(scores.rows(), scores.cols(), true)
                                               : to_keep_mask(opts["mask"], "mask");
    const std::string dtype = absent(opts["dtype"]) ? "float16" : string(opts["dtype"], "dtype");
    const std::string method = absent(opts["method"]) ? "correct" : string(opts["method"], "method");
    const double fill = absent(opts["fill"]) ? -1e9 : number(opts["fill"], "fill");
    // -inf and values past the dtype's range are what the demo shows; NaN is no fill value.
    if (std::isnan(fill)) fail("fill must be a number or -Infinity, got NaN");
    precision::Outcome out;
    if (dtype == "float16") out = run_precision<Eigen::half>(method, scores, keep, fill);
    else if (dtype == "bfloat16") out = run_precision<Eigen::bfloat16>(method, scores, keep, fill);
    else if (dtype == "float32") out = run_precision<float>(method, scores, keep, fill);
    else fail("dtype must be 'float16', 'bfloat16' or 'float32', got '" + dtype + "'");
    val o = val::object();
    o.set("weights", to_js(Matrix(out.weights.cast<float>())));
    o.set("logits", to_js(Matrix(out.logits.cast<float>())));
    o.set("nanCount", double(out.diag.nan_count));
    o.set("infCount", double(out.diag.inf_count));
    o.set("stage", std::string(out.diag.stage));
    o.set("summary", out.diag.summary);
    if (out.diag.has_constant) o.set("constantStored", out.diag.constant_stored);
    o.set("pytorchRaises", out.diag.pytorch_raises);
    return o;
  });
}

}  // namespace
}  // namespace qkscope::wasm
