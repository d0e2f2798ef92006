// wasm/widget/bindings.cpp — the Embind surface of the <qk-scope> widget build
// (wasm/dist/widget/qkscope_widget.{mjs,wasm}): forward, the registries and the version
// only. Same conversions, checks and error messages as the full module (api.hpp); the
// unregistered backward() and initParams() are dropped by the linker, which keeps the
// self-contained widget script inside its size budget (tests/e2e/widget-size.test.mjs).
#define QKSCOPE_WASM_WIDGET 1  // api.hpp: T5 options left out (size budget)
#include "../src/api.hpp"

EMSCRIPTEN_BINDINGS(qkscope_widget) {
  using namespace qkscope::wasm;
  emscripten::function("forward", &js_forward);
  emscripten::function("scoreFunctions", &js_score_functions);
  emscripten::function("normalizers", &js_normalizers);
  emscripten::function("version", &js_version);
}
