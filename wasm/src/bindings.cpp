// wasm/src/bindings.cpp — the full Embind module (wasm/dist/qkscope_core.{mjs,wasm}),
// used by the tutorial and wasm/qkscope.js. The functions live in api.hpp.
#include "api.hpp"
#include "api_extras.hpp"
#include "api_linear.hpp"
#include "api_positions.hpp"

EMSCRIPTEN_BINDINGS(qkscope) {
  using namespace qkscope::wasm;
  emscripten::function("forward", &js_forward);
  emscripten::function("backward", &js_backward);
  emscripten::function("initParams", &js_init_params);
  emscripten::function("scoreFunctions", &js_score_functions);
  emscripten::function("normalizers", &js_normalizers);
  emscripten::function("version", &js_version);
  emscripten::function("multiHeadForward", &js_multi_head_forward);
  emscripten::function("precisionSoftmax", &js_precision_softmax);
  emscripten::function("linearAttention", &js_linear_attention);
  emscripten::function("mergeStates", &js_merge_states);
  emscripten::function("sparsePattern", &js_sparse_pattern);
  emscripten::function("t5Buckets", &js_t5_buckets);
}
