// tests/wasm/reference/bindings.cpp — a test-only module (build/wasm/qkscope_reference.{mjs,wasm},
// never shipped): the plain-loop oracle core/reference/reference.hpp behind the same option
// reader as forward() (wasm/src/api.hpp), so the Node tests can hold the fast calls to the
// project's tolerance rule (core/reference/tolerance.hpp): reference<double> is the oracle,
// reference<float> the naive float32 math that sets the bar. For gradients, the core's
// backward in double is the oracle (as in tests/core/cpu/test_cpu_kernels.cpp).
#include "../../../wasm/src/api.hpp"
#include "reference/reference.hpp"
#include "support/convert.hpp"  // qktest::config_as: the one test-side config conversion

namespace qkscope::wasm {
namespace {

/// Row-major entries as a Float64Array (values of either precision, exactly).
template <class M>
val f64(const M& m) {
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> d = m.template cast<double>();
  return val(emscripten::typed_memory_view(std::size_t(d.size()), d.data())).call<val>("slice");
}

/// {output, logsumexp} of reference<double> (ref) and reference<float> (naive), row-major.
val js_reference(val opts) {
  return guarded("reference", [&] {
    const Parsed p = parse_options(opts);
    const auto ref = reference::attention<double>(p.Q.cast<double>(), p.K.cast<double>(), p.V.cast<double>(),
                                                  p.params.cast<double>(), qktest::config_as<double>(p.cfg));
    const auto naive = reference::attention<float>(p.Q, p.K, p.V, p.params, p.cfg);
    val o = val::object();
    o.set("output", f64(ref.output));
    o.set("logsumexp", f64(ref.logsumexp));
    o.set("naiveOutput", f64(naive.output));
    o.set("naiveLogsumexp", f64(naive.logsumexp));
    return o;
  });
}

/// The entries of whichever of a, b is further from ref (max abs difference).
template <class M, class R>
M worse(const M& a, const M& b, const R& ref) {
  if (a.size() != ref.size()) return a;
  const double ea = a.size() ? (a.template cast<double>() - ref).cwiseAbs().maxCoeff() : 0;
  const double eb = b.size() ? (b.template cast<double>() - ref).cwiseAbs().maxCoeff() : 0;
  return ea >= eb ? a : b;
}

/// Gradients as {dQuery, dKey, dValue, dW, dW_q, dW_k, dv, db, dw, dTemperature, dBias,
/// dRelativeBias, dT5Table} (Float64Array each; empty when not computed).
template <class T>
val grads_f64(const AttentionGrads<T>& g) {
  val o = val::object();
  o.set("dQuery", f64(g.dQ));
  o.set("dKey", f64(g.dK));
  o.set("dValue", f64(g.dV));
  o.set("dW", f64(g.dparams.W));
  o.set("dW_q", f64(g.dparams.W_q));
  o.set("dW_k", f64(g.dparams.W_k));
  o.set("dv", f64(g.dparams.v));
  o.set("db", f64(g.dparams.b));
  o.set("dw", f64(g.dparams.w));
  o.set("dTemperature", double(g.dtemperature));
  o.set("dBias", f64(g.ddense));
  o.set("dRelativeBias", f64(g.drelative));
  o.set("dT5Table", f64(g.dt5_table));
  return o;
}

/// {ref, naive}: the core's backward in double (itself checked against finite differences by
/// the native tests) and the bar: per gradient the worse of two float evaluations (from the
/// float forward, and from the double forward rounded to float), as tests/core/cpu does.
val js_reference_backward(val opts, val grad_output) {
  return guarded("referenceBackward", [&] {
    const Parsed p = parse_options(opts);
    const Matrix G = read_grad_output(p, grad_output);
    const auto p64 = p.params.cast<double>();
    const auto c64 = qktest::config_as<double>(p.cfg);
    const MatrixD Q = p.Q.cast<double>(), K = p.K.cast<double>(), V = p.V.cast<double>();
    const auto f64r = attention_forward<double>(Q, K, V, p64, c64);
    const auto g64 = attention_backward<double>(Q, K, V, p64, c64, f64r, G.cast<double>());
    const auto f32 = attention_forward<float>(p.Q, p.K, p.V, p.params, p.cfg);
    const auto ga = attention_backward<float>(p.Q, p.K, p.V, p.params, p.cfg, f32, G);
    AttentionResult<float> f32b{f64r.raw_scores.cast<float>(), f64r.scores.cast<float>(),
                                f64r.masked_scores.cast<float>(), f64r.weights.cast<float>(),
                                f64r.output.cast<float>(), f64r.logsumexp.cast<float>(),
                                f64r.entropy.cast<float>(), f64r.max_weight.cast<float>(), f64r.scale};
    const auto gb = attention_backward<float>(p.Q, p.K, p.V, p.params, p.cfg, f32b, G);
    AttentionGrads<float> w;
    w.dQ = worse(ga.dQ, gb.dQ, g64.dQ);
    w.dK = worse(ga.dK, gb.dK, g64.dK);
    w.dV = worse(ga.dV, gb.dV, g64.dV);
    w.dparams.W = worse(ga.dparams.W, gb.dparams.W, g64.dparams.W);
    w.dparams.W_q = worse(ga.dparams.W_q, gb.dparams.W_q, g64.dparams.W_q);
    w.dparams.W_k = worse(ga.dparams.W_k, gb.dparams.W_k, g64.dparams.W_k);
    w.dparams.v = worse(ga.dparams.v, gb.dparams.v, g64.dparams.v);
    w.dparams.b = worse(ga.dparams.b, gb.dparams.b, g64.dparams.b);
    w.dparams.w = worse(ga.dparams.w, gb.dparams.w, g64.dparams.w);
    w.ddense = worse(ga.ddense, gb.ddense, g64.ddense);
    w.drelative = worse(ga.drelative, gb.drelative, g64.drelative);
    w.dt5_table = worse(ga.dt5_table, gb.dt5_table, g64.dt5_table);
    w.dtemperature = std::abs(ga.dtemperature - g64.dtemperature) >= std::abs(gb.dtemperature - g64.dtemperature)
                         ? ga.dtemperature
                         : gb.dtemperature;
    val o = val::object();
    o.set("ref", grads_f64(g64));
    o.set("naive", grads_f64(w));
    return o;
  });
}

}  // namespace
}  // namespace qkscope::wasm

EMSCRIPTEN_BINDINGS(qkscope_reference) {
  emscripten::function("reference", &qkscope::wasm::js_reference);
  emscripten::function("referenceBackward", &qkscope::wasm::js_reference_backward);
}
