// wasm/src/errors.hpp — the error bridge of every wasm module: guarded() runs a binding and
// turns std::invalid_argument into a JS RangeError and any other std::exception into a JS
// Error, with the core's C++ field names rewritten to the JS option names (js_names).
// The C++ exception is fully unwound before the JS error is thrown, so the module stays
// usable after an error. Included by api.hpp.
#pragma once

#include <emscripten/val.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "convert.hpp"

namespace qkscope::wasm {
namespace {
// ---- error bridge --------------------------------------------------------------------

/// The core's messages name C++ fields; JS callers passed the options of qkscope.d.ts.
/// One table maps the first to the second (longest names first), and C++ spellings of
/// special numbers become JS ones.
inline std::string js_names(std::string msg) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"bias.dense (L_q x L_k)", "bias (L_q x L_k)"},
      {"pass a keep mask (mask.keep, true = may attend)", "pass it as `mask` (true = may attend)"},
      {"bias.dense", "bias"},
      {"mask.keep (L_q x L_k)", "mask (L_q x L_k)"},
      {"keep (L_q x L_k)", "mask (L_q x L_k)"},
      {"mask.key_length", "keyLength"},
      {"mask.window", "window"},
      {"bias.softcap", "softcap"},
      {"bias.alibi_slope", "alibiSlope"},
      {"bias.relative", "relativeBias"},
      {"key_lengths", "keyLengths"},
      {"kv_heads", "kvHeads"},
      {"X_kv", "keyValue"},
      {"X_q", "query"},
      {"grad_output", "gradOutput"},
      {"o_b (shape of o_a)", "b.output (shape of a.output)"},
      {"o_a", "a.output"},
      {"o_b", "b.output"},
      {"lse_a", "a.logsumexp"},
      {"lse_b", "b.logsumexp"},
      {"bias.t5_table", "t5Table"},
  };
  for (const auto& [from, to] : kNames)
    for (std::size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + std::strlen(to)))
      msg.replace(at, std::strlen(from), to);
  static const std::pair<const char*, const char*> kNumbers[] = {
      {"-nan", "NaN"}, {"nan", "NaN"}, {"-inf", "-Infinity"}, {"inf", "Infinity"}};
  for (const auto& [from, to] : kNumbers) {
    const std::size_t n = std::strlen(from);
    for (std::size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + 1)) {
      const bool word_start = at == 0 || !std::isalpha(static_cast<unsigned char>(msg[at - 1]));
      const bool word_end = at + n == msg.size() || !std::isalpha(static_cast<unsigned char>(msg[at + n]));
      if (word_start && word_end) msg.replace(at, n, to);
    }
  }
  return msg;
}

template <class F>
val guarded(const char* fn, F&& body) {
  val error = val::undefined();
  {
    std::string kind, msg;
    try {
      return body();
    } catch (const std::invalid_argument& e) {
      kind = "RangeError";
      msg = js_names(e.what());
    } catch (const std::bad_alloc&) {
      kind = "Error";
      msg = std::string(fn) +
            ": out of memory (std::bad_alloc): the inputs are too large for the WebAssembly heap";
    } catch (const std::exception& e) {
      kind = "Error";
      msg = std::string(fn) + ": " + e.what();
    }
    error = val::global(kind.c_str()).new_(val(msg));
  }  // the C++ exception and the strings are gone here
  error.throw_();
}

}  // namespace
}  // namespace qkscope::wasm
