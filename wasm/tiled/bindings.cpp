// wasm/tiled/bindings.cpp — the tiled module (wasm/dist/qkscope_tiled.{mjs,wasm}): the CPU
// tiled online-softmax kernels of the core (qkscope/cpu/attention.hpp) compiled with wasm
// SIMD, behind attention() and attentionBackward() (wasm/qkscope.d.ts). wasm/qkscope.js
// loads it on the first fast call, so pages that never call one do not download it.
// The options are read by the same parse_options as forward() (wasm/src/api.hpp): same
// checks, same messages. Where the tiled kernels defer to the core (normalizers other than
// softmax, logits that could overflow once folded, ...), cpu::attention_forward runs the
// core itself, so the answer or the error is the core's; `tiled` says which path ran.
#include "../src/api.hpp"
#include "qkscope/cpu/attention.hpp"

namespace qkscope::wasm {
namespace {

/// One head through the tiled forward: O (L_q, d_v) and logsumexp (L_q), never (L_q, L_k).
cpu::TiledResult<float> tiled_forward(const Parsed& p) {
  cpu::TiledOptions opt;
  opt.threads = 1;  // no pthreads in this build
  return cpu::attention_forward<float>(p.Q, p.K, p.V, p.params, p.cfg, opt);
}

val js_attention(val opts) {
  return guarded("attention", [&] {
    Parsed p = parse_options(opts);
    const cpu::TiledResult<float> r = tiled_forward(p);
    val o = val::object();
    o.set("output", to_js(r.output));
    o.set("logsumexp", to_js(r.logsumexp));
    o.set("params", params_to_js(p.params, p.used, true));
    o.set("scale", r.scale);
    o.set("tiled", !r.fallback);
    return o;
  });
}

val js_attention_backward(val opts, val grad_output) {
  return guarded("attentionBackward", [&] {
    Parsed p = parse_options(opts);
    const cpu::TiledResult<float> r = tiled_forward(p);
    const Matrix dO = read_grad_output(p, grad_output);
    cpu::TiledOptions opt;
    opt.threads = 1;
    AttentionGrads<float> g = cpu::attention_backward<float>(p.Q, p.K, p.V, p.params, p.cfg, r, dO, opt);
    val o = grads_to_js(p, g);
    o.set("tiled", !r.fallback);
    return o;
  });
}

}  // namespace
}  // namespace qkscope::wasm

EMSCRIPTEN_BINDINGS(qkscope_tiled) {
  using namespace qkscope::wasm;
  emscripten::function("attention", &js_attention);
  emscripten::function("attentionBackward", &js_attention_backward);
  emscripten::function("scoreFunctions", &js_score_functions);
  emscripten::function("version", &js_version);
}
