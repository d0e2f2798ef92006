// wasm/src/convert.hpp — JS values <-> Eigen, with the validation the JS API promises.
//
// Every reader throws std::invalid_argument (surfacing as a JS RangeError) whose
// message names the argument and the entry at fault, e.g.
//   "query: row 2 has 3 entries, expected 4"
//   "query.data has length 5, expected rows*cols = 6"
//   "key[1][0] must be a number, got a string"
// Speed: typed arrays are copied in one Float32Array.set per row (or per matrix),
// straight into the Eigen matrix, and scanned in C++ by a branch-free pass that clang
// vectorises (detail::all_finite; the early-exit scalar scan took 35 us per 32 K floats:
// native/bench/NOTES.md, issue 11 eleventh session). Plain arrays are type-checked in bulk with
// Array.prototype.every(Number.isFinite) (one JS call per row); rows that fail it
// (boolean masks, biases with -Infinity) get their distinct values checked instead
// (new Set(row), at most 8 of them). Entries are inspected one by one only when both
// fail, which is also how the culprit gets named in the message.
// Measured (Node 20, L = 512, d = 64): nested arrays cost about 6 ms of conversion for
// Q, K, V together; {rows, cols, data: Float32Array} costs next to nothing.
#pragma once

#include <emscripten/val.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "qkscope/qkscope.hpp"

namespace qkscope::wasm {

using emscripten::val;

[[noreturn]] inline void fail(const std::string& msg) { detail::fail(msg); }

/// "a string", "null", "an array", "an object", "undefined", "a boolean", ... for messages.
inline std::string describe(const val& v) {
  if (v.isNull()) return "null";
  if (v.isUndefined()) return "undefined";
  if (v.isTrue()) return "true";
  if (v.isFalse()) return "false";
  if (v.isNumber()) return "the number " + detail::num_g(v.as<double>(), 6);
  if (v.isString()) return "a string";
  if (v.isArray()) return "an array";
  const std::string t = v.typeOf().as<std::string>();
  if (t == "object") return "an object";
  if (t == "function") return "a function";
  return "a " + t;  // bigint, symbol
}

/// null and undefined both mean "not given" for optional arguments.
inline bool absent(const val& v) { return v.isUndefined() || v.isNull(); }

inline bool is_object(const val& v) {
  if (absent(v)) return false;
  const std::string t = v.typeOf().as<std::string>();
  return t == "object" || t == "function";
}

/// Typed array (Float32Array, Uint8Array, ...) or DataView.
inline bool is_typed_array(const val& v) {
  static const val is_view = val::global("ArrayBuffer")["isView"];
  return is_object(v) && is_view(v).as<bool>();
}

/// Array-like: a non-string object with a numeric length.
inline bool is_array_like(const val& v) { return is_object(v) && v["length"].isNumber(); }

inline double number(const val& v, const std::string& name) {
  if (!v.isNumber()) fail(name + " must be a number, got " + describe(v));
  return v.as<double>();
}

inline bool boolean(const val& v, const std::string& name) {
  if (v.isTrue()) return true;
  if (v.isFalse()) return false;
  fail(name + " must be a boolean, got " + describe(v));
}

inline std::string string(const val& v, const std::string& name) {
  if (!v.isString()) fail(name + " must be a string, got " + describe(v));
  return v.as<std::string>();
}

inline std::string num_str(double x) { return detail::num_g(x, 6); }

/// An integer in [lo, hi] given as a JS number.
inline std::int64_t integer(const val& v, const std::string& name, double lo, double hi) {
  const double x = number(v, name);
  if (!std::isfinite(x) || x != std::floor(x) || x < lo || x > hi) {
    // Integral bounds in full (2147483647, not num_str's 2.14748e+09).
    const auto bound = [](double b) { return std::abs(b) < 9007199254740992.0 ? std::to_string(std::int64_t(b)) : num_str(b); };
    std::string range = "[" + bound(lo) + ", " + bound(hi) + "]";
    if (hi >= 9007199254740992.0) range = ">= " + bound(lo);
    fail(name + " must be an integer " + range + ", got " + num_str(x));
  }
  return static_cast<std::int64_t>(x);
}

inline constexpr double kMaxSafeInteger = 9007199254740991.0;  // Number.MAX_SAFE_INTEGER
/// Largest count/index accepted for sizes and positions (Eigen::Index is 32-bit in wasm32).
inline constexpr double kMaxIndex = 1073741824.0;  // 2^30

/// What a numeric entry may be.
enum class Entries {
  finite,         // Q, K, V, params, gradients: finite numbers
  finite_or_ninf, // additive bias: finite or -Infinity (masked); never NaN or +Infinity
  mask,           // keep mask: booleans or numbers (nonzero = keep), never NaN
};

/// Checks one converted entry (float) against the policy. `was_number_ok` is true when
/// the JS value is known to be a finite number (then a non-finite float means overflow).
inline void check_entry(float x, Entries what, const std::string& where, bool js_was_finite) {
  if (std::isnan(x)) fail(where + " is NaN");
  if (std::isinf(x)) {
    if (what == Entries::mask) return;
    if (what == Entries::finite_or_ninf && x < 0) return;
    if (js_was_finite)
      fail(where + " overflows float32 (|x| > 3.4e38)");
    if (what == Entries::finite_or_ninf)
      fail(where + " is +Infinity (bias entries must be finite or -Infinity; a -Infinity entry masks)");
    fail(where + " must be finite, got " + std::string(x > 0 ? "Infinity" : "-Infinity"));
  }
}

/// Inspects a plain-array entry one by one (slow path); writes the float value.
inline float read_entry(const val& e, Entries what, const std::string& where) {
  if (what == Entries::mask) {
    if (e.isTrue()) return 1.0f;
    if (e.isFalse()) return 0.0f;
    if (!e.isNumber())
      fail(where + " must be a boolean or a number (true/nonzero = may attend), got " + describe(e));
  } else if (!e.isNumber()) {
    fail(where + " must be a number, got " + describe(e));
  }
  const double d = e.as<double>();
  const float x = static_cast<float>(d);
  check_entry(x, what, where, std::isfinite(d));
  return x;
}

/// Copies the array-like `arr` (length n, already checked) into out[0..n) with the policy.
/// `where(j)` names entry j for messages.
/// `is_array`: the caller already knows arr is a plain Array (saves JS calls per row).
template <class Where>
void read_array(const val& arr, std::size_t n, Entries what, float* out, Where&& where,
                bool is_array = false) {
  static const val every = val::global("Array")["prototype"]["every"];
  static const val is_finite = val::global("Number")["isFinite"];
  if (n == 0) return;
  is_array = is_array || arr.isArray();
  const bool typed = !is_array && is_typed_array(arr);
  // BigInt64Array / BigUint64Array hold BigInts: Float32Array.set would throw a TypeError
  // that names nothing.
  if (typed && arr["BYTES_PER_ELEMENT"].isNumber() && arr["BYTES_PER_ELEMENT"].as<int>() == 8 &&
      arr[0].typeOf().as<std::string>() == "bigint")
    fail(where(0) + ": a BigInt typed array is not accepted; pass a Float32Array, a Float64Array or "
                    "an array of numbers");
  // Plain arrays: one bulk type check; typed arrays hold numbers by construction.
  bool all_valid = typed || every.call<bool>("call", arr, is_finite);
  if (!all_valid && is_array) {
    // Boolean masks and 0/-Infinity biases hold few distinct values: check those
    // (new Set is one JS call) instead of every entry.
    static const val set_ctor = val::global("Set");
    static const val array_from = val::global("Array")["from"];
    const val distinct = array_from(set_ctor.new_(arr));
    const std::size_t m = distinct["length"].as<std::size_t>();
    if (m <= 8) {
      all_valid = true;
      for (std::size_t k = 0; k < m && all_valid; ++k) {
        const val e = distinct[k];
        if (what == Entries::mask) {
          all_valid = e.isTrue() || e.isFalse() || (e.isNumber() && !std::isnan(e.as<double>()));
        } else {
          const double d = e.isNumber() ? e.as<double>() : std::nan("");
          all_valid = std::isfinite(d) ||
                      (what == Entries::finite_or_ninf && d == -std::numeric_limits<double>::infinity());
        }
      }
    }
  }
  if (all_valid) {
    // Float32Array.set converts in one go (Number() on each entry), then a C++ scan.
    val view(emscripten::typed_memory_view(n, out));
    view.call<void>("set", arr);
    auto allowed = [what](float x) {
      if (std::isnan(x)) return false;
      if (!std::isinf(x)) return true;
      return what == Entries::mask || (what == Entries::finite_or_ninf && x < 0);
    };
    if (detail::all_finite(out, n)) return;  // every policy accepts finite entries (vectorised)
    bool ok = true;
    for (std::size_t j = 0; j < n && ok; ++j) ok = allowed(out[j]);
    if (ok) return;
    if (typed) {
      for (std::size_t j = 0; j < n; ++j) check_entry(out[j], what, where(j), false);
      return;
    }
    // A plain array that passed the bulk check: a hole (skipped by every) or a
    // float32 overflow; the entry-by-entry pass below names it.
  }
  for (std::size_t j = 0; j < n; ++j) out[j] = read_entry(arr[j], what, where(j));
}

/// Length of an array-like; fails naming `name` otherwise.
inline std::size_t length_of(const val& v, const std::string& name, const std::string& what,
                             bool is_array = false) {
  if (!is_array && !is_array_like(v)) fail(name + " must be " + what + ", got " + describe(v));
  const double n = v["length"].as<double>();
  if (!(n >= 0) || n != std::floor(n) || n > 1e9)
    fail(name + " has an invalid length " + num_str(n));
  return static_cast<std::size_t>(n);
}

/// Reads a matrix given as {rows, cols, data} or as nested arrays (one inner array per row),
/// into a row-major float matrix (not zero-filled first: every entry is written).
struct Dense {
  Matrix m;
};

inline Dense read_dense(const val& v, const std::string& name, Entries what) {
  Dense m;
  if (absent(v)) fail(name + " is required (a matrix: {rows, cols, data} or nested arrays)");
  if (!is_object(v))
    fail(name + " must be a matrix ({rows, cols, data} or an array of rows), got " + describe(v));
  if (!is_array_like(v)) {
    // {rows, cols, data}
    const val data = v["data"];
    if (absent(data))
      fail(name + " must be a matrix ({rows, cols, data} or an array of rows), got an object "
                  "without 'data'");
    const std::int64_t rows = integer(v["rows"], name + ".rows", 0, 1e9);
    const std::int64_t cols = integer(v["cols"], name + ".cols", 0, 1e9);
    const std::size_t n = length_of(data, name + ".data", "an array or a typed array");
    if (double(n) != double(rows) * double(cols))
      fail(name + ".data has length " + std::to_string(n) + ", expected rows*cols = " +
           num_str(double(rows) * double(cols)) + " (rows = " + std::to_string(rows) +
           ", cols = " + std::to_string(cols) + ")");
    m.m.resize(Eigen::Index(rows), Eigen::Index(cols));
    read_array(data, n, what, m.m.data(), [&](std::size_t k) {
      return name + ".data[" + std::to_string(k) + "] (row " + std::to_string(k / cols) +
             ", col " + std::to_string(k % cols) + ")";
    });
    return m;
  }
  // Nested arrays.
  if (is_typed_array(v))
    fail(name + " is a flat typed array; pass {rows, cols, data} or an array of rows");
  const std::size_t rows = length_of(v, name, "an array of rows");
  std::size_t cols = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const val row = v[i];
    const std::string rname = name + "[" + std::to_string(i) + "]";
    const bool row_is_array = row.isArray();
    if (!row_is_array && !is_array_like(row))
      fail(name + ": row " + std::to_string(i) + " must be an array of numbers, got " +
           describe(row));
    const std::size_t n = length_of(row, rname, "an array", row_is_array);
    if (i == 0) {
      cols = n;
      m.m.resize(Eigen::Index(rows), Eigen::Index(cols));
    } else if (n != cols) {
      fail(name + ": row " + std::to_string(i) + " has " + std::to_string(n) +
           " entries, expected " + std::to_string(cols) + " (like row 0)");
    }
    read_array(row, n, what, m.m.data() + i * cols,
               [&](std::size_t j) { return rname + "[" + std::to_string(j) + "]"; }, row_is_array);
  }
  if (rows == 0) m.m.resize(0, 0);
  return m;
}

inline Matrix to_matrix(const val& v, const std::string& name, Entries what = Entries::finite) {
  return std::move(read_dense(v, name, what).m);
}

inline KeepMask to_keep_mask(const val& v, const std::string& name) {
  const Matrix d = std::move(read_dense(v, name, Entries::mask).m);
  KeepMask keep(d.rows(), d.cols());
  for (Eigen::Index k = 0; k < d.size(); ++k) keep.data()[k] = d.data()[k] != 0.0f;
  return keep;
}

/// A vector given as a typed array or a plain array of finite numbers.
inline Vector to_vector(const val& v, const std::string& name) {
  if (absent(v)) fail(name + " is required (a Float32Array or an array of numbers)");
  if (!is_array_like(v))
    fail(name + " must be a Float32Array or an array of numbers, got " + describe(v));
  const std::size_t n = length_of(v, name, "an array of numbers");
  Vector out(static_cast<Eigen::Index>(n));
  read_array(v, n, Entries::finite, out.data(),
             [&](std::size_t j) { return name + "[" + std::to_string(j) + "]"; });
  return out;
}

// ---- C++ -> JS: always copies (views into wasm memory detach when it grows) ----

inline val f32_copy(const float* p, std::size_t n) {
  if (n == 0) return val::global("Float32Array").new_(0);
  return val(emscripten::typed_memory_view(n, p)).call<val>("slice");
}

inline val to_js(const Vector& v) { return f32_copy(v.data(), std::size_t(v.size())); }

inline val to_js(const Matrix& m) {
  val o = val::object();
  o.set("rows", double(m.rows()));
  o.set("cols", double(m.cols()));
  o.set("data", f32_copy(m.data(), std::size_t(m.size())));
  return o;
}

/// Own enumerable keys of a plain object (Object.keys).
inline std::vector<std::string> keys_of(const val& obj) {
  static const val object_keys = val::global("Object")["keys"];
  const val ks = object_keys(obj);
  const std::size_t n = ks["length"].as<std::size_t>();
  std::vector<std::string> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(ks[i].as<std::string>());
  return out;
}

/// Fails when `obj` has a key outside `known` (catches typos such as 'temprature').
/// `known`: any range of names (an array of const char*, a vector of std::string).
template <class Known>
void reject_unknown_keys(const val& obj, const std::string& name, const Known& known) {
  for (const auto& k : keys_of(obj)) {
    bool ok = false;
    for (const auto& kn : known) ok = ok || k == kn;
    if (!ok) {
      std::string list;
      for (const auto& kn : known) list += (list.empty() ? "" : ", ") + std::string(kn);
      fail(name + ": unknown option '" + k + "' (known: " + list + ")");
    }
  }
}

}  // namespace qkscope::wasm
