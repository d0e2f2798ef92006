// model_file.hpp — qkscope_train --save-model: the trained parameters and the settings that
// produced them as one JSON file (format "qkscope-char-model", version 1; tensor encoding in
// qkscope/train/weights.hpp, every field in docs/training.md), read by loadCharModel of the
// wasm training module. No timings go in: the same flags give the same file.
#pragma once

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>

#include "qkscope/train/trainer.hpp"
#include "qkscope/train/weights.hpp"

namespace qkscope_train {

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\', out += char(ch);
    else if (ch < 0x20) out += "\\u00", out += "0123456789abcdef"[ch >> 4], out += "0123456789abcdef"[ch & 15];
    else out += char(ch);
  }
  return out + "\"";
}

/// Shortest round-trip text of a finite double; null otherwise (JSON has no NaN).
inline std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

/// The model file of trainer `t` after `steps` steps; `e` its held-out evaluation.
/// `source`: where the text came from (--text-name).
inline std::string model_json(const qkscope::train::Trainer<float>& t, long steps, const qkscope::train::EvalResult& e,
                              const std::string& source) {
  using namespace qkscope::train;
  const TrainConfig& c = t.config();
  std::ostringstream j;
  j << "{\"format\":" << json_string(kCharModelFormat) << ",\"version\":" << kCharModelVersion
    << ",\"task\":" << json_string(c.task) << ",\"source\":" << json_string(source) << ",\"score\":" << json_string(c.model.score)
    << ",\"normalizer\":" << json_string(c.model.normalizer) << ",\"mask\":\"" << (c.model.causal ? "causal" : "none")
    << "\",\"vocabulary\":" << json_string(std::string(kVocabulary)) << ",\"context\":" << c.model.length
    << ",\"width\":" << c.model.width << ",\"heads\":" << c.model.heads << ",\"layers\":" << c.model.layers
    << ",\"seed\":" << c.seed << ",\"steps\":" << steps << ",\"batch\":" << c.batch
    << ",\"lr\":" << json_number(c.optimizer.lr) << ",\"weight_decay\":" << json_number(c.optimizer.weight_decay)
    << ",\"clip\":" << json_number(c.optimizer.clip_norm);
  const std::size_t n = t.corpus().size();
  const UnigramBaseline u = unigram_baseline(t.corpus(), c.model.length);
  j << ",\"heldout\":{\"loss\":" << json_number(e.loss) << ",\"accuracy\":" << json_number(e.token_accuracy)
    << ",\"windows\":" << t.heldout().B << ",\"start\":" << heldout_start(n) << ",\"characters\":" << n
    << ",\"unigram_loss\":" << json_number(u.loss) << ",\"unigram_accuracy\":" << json_number(u.accuracy)
    << "},\"params\":{";
  bool first = true;
  auto& p = const_cast<ModelParams<float>&>(t.params());  // for_each_tensor takes non-const; nothing is written
  for_each_tensor<float>(p, p, [&](const std::string& name, auto& x, auto&) {
    constexpr bool vec = std::decay_t<decltype(x)>::ColsAtCompileTime == 1;  // Vec: shape [n]
    j << (first ? "" : ",") << json_string(name) << ":{\"shape\":[" << x.rows();
    if (!vec) j << "," << x.cols();
    j << "],\"data\":\"" << floats_to_base64(x.data(), std::size_t(x.size())) << "\"}";
    first = false;
  });
  j << "}}\n";
  return j.str();
}

}  // namespace qkscope_train
