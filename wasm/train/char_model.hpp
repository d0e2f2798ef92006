// wasm/train/char_model.hpp — loadCharModel of the training module (CharModel in
// wasm/types/train.d.ts): a trained next-character model (weights file
// "qkscope-char-model" v1, qkscope/train/weights.hpp) and its forward pass, which is the
// core's model_forward (train/model.hpp), the very code the model was trained with; the
// only arithmetic here is the softmax of the read-out's logits. Bad files throw a
// RangeError naming the field ("weights.params[\"E\"].shape ..."); the module stays usable.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "../src/api.hpp"
#include "qkscope/train/text.hpp"
#include "qkscope/train/trainer.hpp"
#include "qkscope/train/weights.hpp"

namespace qkscope::wasm {
namespace {

/// Runs `body`; a std::invalid_argument from it is rethrown with `field: ` in front.
template <class F>
void naming(const std::string& field, F&& body) {
  try {
    body();
  } catch (const std::invalid_argument& e) {
    fail(field + ": " + e.what());
  }
}

std::string field_string(const val& w, const char* key) {
  const std::string f = std::string("weights.") + key;
  if (absent(w[key])) fail(f + " is missing");
  return string(w[key], f);
}

int field_int(const val& w, const char* key, double lo, double hi) {
  const std::string f = std::string("weights.") + key;
  if (absent(w[key])) fail(f + " is missing");
  return int(integer(w[key], f, lo, hi));
}

/// A shape as the file gave it, for messages: "[32, 24]" for a short array of numbers,
/// "an array of 3 entries, entry 0 a string" otherwise, else describe().
inline std::string describe_shape(const val& s) {
  if (absent(s) || !s.isArray()) return describe(s);
  const double n = s["length"].as<double>();
  if (n > 8) return "an array of " + detail::num_g(n, 12) + " entries";
  std::string out = "[";
  for (int k = 0; k < int(n); ++k) {
    if (!s[k].isNumber()) return "an array whose entry " + std::to_string(k) + " is " + describe(s[k]);
    out += (k ? ", " : "") + detail::num_g(s[k].as<double>(), 12);
  }
  return out + "]";
}

/// One tensor of params: shape [rows, cols] ([n] for a vector) and its base64 data.
template <class M>
void read_tensor(const val& params, const std::string& name, M& x) {
  const std::string f = "weights.params[\"" + name + "\"]";
  const val t = params[name];
  if (!is_object(t) || t.isArray()) fail(f + " must be an object {shape, data}, got " + describe(t));
  constexpr bool vec = M::ColsAtCompileTime == 1;
  const std::string want = vec ? "[" + std::to_string(x.rows()) + "]"
                               : "[" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + "]";
  const val s = t["shape"];
  bool ok = !absent(s) && s.isArray() && s["length"].as<int>() == (vec ? 1 : 2);
  for (int k = 0; ok && k < (vec ? 1 : 2); ++k)
    ok = s[k].isNumber() && s[k].as<double>() == double(k == 0 ? x.rows() : x.cols());
  if (!ok) fail(f + ".shape must be " + want + ", got " + describe_shape(s));
  const val data = t["data"];
  if (!data.isString()) fail(f + ".data must be a base64 string, got " + describe(data));
  // The length first: a huge string is rejected before it is copied into the heap (100 MB took seconds).
  const std::size_t chars = (std::size_t(x.size()) * 4 + 2) / 3 * 4;
  if (const double n = data["length"].as<double>(); n != double(chars))
    fail(f + ".data must be " + std::to_string(chars) + " base64 characters (" + std::to_string(x.size()) +
         " float32 values), got " + detail::num_g(n, 12));
  const std::vector<float> v =
      train::floats_from_base64(t["data"].as<std::string>(), std::size_t(x.size()), f + ".data");
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = v[std::size_t(i)];
}

/// A loaded model; JS owns it (call delete()).
class JsCharModel {
 public:
  explicit JsCharModel(const val& w) {
    if (!is_object(w) || w.isArray()) fail("weights must be an object (the parsed JSON file), got " + describe(w));
    const std::string format = field_string(w, "format");
    if (format != train::kCharModelFormat)
      fail("weights.format must be '" + std::string(train::kCharModelFormat) + "', got '" + format + "'");
    const int version = field_int(w, "version", 0, kMaxSafeInteger);
    if (version != train::kCharModelVersion)
      fail("weights.version must be " + std::to_string(train::kCharModelVersion) + ", got " + std::to_string(version));
    const std::string task = field_string(w, "task");
    if (task != "text") fail("weights.task must be 'text', got '" + task + "'");
    c_.score = field_string(w, "score");
    naming("weights.score", [&] { visit_score(c_.score, [](auto) {}); });
    c_.normalizer = field_string(w, "normalizer");
    naming("weights.normalizer", [&] { visit_normalizer(c_.normalizer, [](auto) {}); });
    const std::string mask = field_string(w, "mask");
    if (mask != "causal") fail("weights.mask must be 'causal' (a next-character model), got '" + mask + "'");
    c_.causal = true;
    const std::string vocab = field_string(w, "vocabulary");
    if (vocab != train::kVocabulary)
      fail("weights.vocabulary must be \"" + std::string(train::kVocabulary) + "\", got \"" + vocab + "\"");
    c_.vocab = train::kTextVocab;
    c_.length = field_int(w, "context", 1, 4096);
    c_.width = field_int(w, "width", 1, 1024);
    c_.heads = field_int(w, "heads", 1, 64);
    c_.layers = field_int(w, "layers", 1, 4);
    naming("weights", [&] { train::validate(c_); });  // width a multiple of heads, ...
    p_ = train::init_model<float>(c_, 0);             // the shapes; every entry is overwritten
    const val params = w["params"];
    if (!is_object(params) || params.isArray())
      fail("weights.params must be an object of tensors, got " + describe(params));
    std::vector<std::string> names;
    train::for_each_tensor<float>(p_, p_, [&](const std::string& name, auto& x, auto&) {
      names.push_back(name);
      read_tensor(params, name, x);
    });
    for (const std::string& k : keys_of(params))
      if (std::find(names.begin(), names.end(), k) == names.end())
        fail("weights.params has an unknown tensor '" + k + "' (a " + c_.score + " model has " +
             std::to_string(names.size()) + " tensors)");
  }

  val info() const {
    val o = val::object();
    o.set("score", c_.score);
    o.set("normalizer", c_.normalizer);
    o.set("vocabulary", std::string(train::kVocabulary));
    o.set("context", c_.length);
    o.set("width", c_.width);
    o.set("layers", c_.layers);
    o.set("heads", c_.heads);
    return o;
  }

  val encode(val text) const {
    return guarded("encode", [&] { return val(train::decode_text(tokens_of(text))); });
  }

  /// {text, next (n, V) probabilities, attention: [layer][head] (n, n)}.
  val predict(val text) const {
    return guarded("predict", [&] {
      const std::vector<int> tok = tokens_of(text);
      const int n = int(tok.size());
      val out = val::object();
      out.set("text", train::decode_text(tok));
      val att = val::array();
      if (n == 0) {
        out.set("next", to_js(Matrix(0, c_.vocab)));
        for (int l = 0; l < c_.layers; ++l) {
          val heads = val::array();
          for (int h = 0; h < c_.heads; ++h) heads.set(h, to_js(Matrix(0, 0)));
          att.set(l, heads);
        }
        out.set("attention", att);
        return out;
      }
      // Causal: positions 0..n-1 of a length-n run are those of any longer window that
      // starts with the same n characters, so the model runs at length n (P rows 0..n-1).
      train::ModelConfig c = c_;
      c.length = n;
      const auto f = train::model_forward<float>(c, p_, tok, 1, train::mha_config<float>(c, 1));
      Matrix next(n, c_.vocab);
      for (int i = 0; i < n; ++i) {  // softmax of the logits, log-sum-exp stable
        const auto z = f.logits.row(i);
        const double m = double(z.maxCoeff());
        double s = 0;
        for (int k = 0; k < c_.vocab; ++k) s += std::exp(double(z(k)) - m);
        for (int k = 0; k < c_.vocab; ++k) next(i, k) = float(std::exp(double(z(k)) - m) / s);
      }
      out.set("next", to_js(next));
      for (int l = 0; l < c_.layers; ++l) {
        val heads = val::array();
        for (int h = 0; h < c_.heads; ++h) heads.set(h, to_js(f.attention[std::size_t(l)].head(0, h).weights));
        att.set(l, heads);
      }
      out.set("attention", att);
      return out;
    });
  }

 private:
  /// Encoded text, its last `context` characters.
  std::vector<int> tokens_of(const val& text) const {
    std::vector<int> t = train::encode_text(string(text, "text"));
    if (t.size() > std::size_t(c_.length)) t.erase(t.begin(), t.end() - c_.length);
    return t;
  }

  train::ModelConfig c_;
  train::ModelParams<float> p_;
};

/// The whole text as the character models read it (no context limit).
val js_encode_text(val text) {
  return guarded("encodeText", [&] { return val(train::decode_text(train::encode_text(string(text, "text")))); });
}

JsCharModel* load_char_model(val weights) {
  std::unique_ptr<JsCharModel> out;
  guarded("loadCharModel", [&] {
    out = std::make_unique<JsCharModel>(weights);
    return val::undefined();
  });
  return out.release();
}

}  // namespace
}  // namespace qkscope::wasm
