// wasm/train/bindings.cpp — the training module (wasm/dist/qkscope_train.{mjs,wasm}): the
// tiny attention model of the core (qkscope/train/) behind createTrainer() and the trained
// next-character models behind loadCharModel() (char_model.hpp; wasm/types/train.d.ts).
// wasm/qkscope.js loads it on the first createTrainer call, so pages that never train do
// not download it. Options are checked here with the same readers and messages as
// forward() (wasm/src/convert.hpp); the core checks the rest (names the argument). Errors:
// RangeError for bad options, Error otherwise; the module stays usable after either.
#include <memory>

#include "../src/api.hpp"
#include "char_model.hpp"
#include "qkscope/train/trainer.hpp"

namespace qkscope::wasm {
namespace {

/// The option names createTrainer accepts (TrainerOptions in wasm/train.d.ts).
std::vector<std::string> trainer_keys() {
  std::vector<std::string> k{"task", "score", "normalizer", "mask", "length", "width", "heads", "layers",
                             "batch", "evalSize", "seed", "lr", "weightDecay", "clip", "text"};
  for_each_normalizer_option([&](const char*, const std::string& js) {
    if (std::find(k.begin(), k.end(), js) == k.end()) k.push_back(js);
  });
  return k;
}

train::TrainConfig read_trainer_options(const val& o) {
  if (!is_object(o)) fail("createTrainer: options must be an object, got " + describe(o));
  reject_unknown_keys(o, "createTrainer", trainer_keys());
  train::TrainConfig c;
  c.model.length = 12;
  auto str = [&](const char* k, std::string& out) { if (!absent(o[k])) out = string(o[k], k); };
  auto num = [&](const char* k, double& out) { if (!absent(o[k])) out = number(o[k], k); };
  auto integ = [&](const char* k, int& out, double lo, double hi) {
    if (!absent(o[k])) out = int(integer(o[k], k, lo, hi));
  };
  str("task", c.task);
  str("text", c.text);
  str("score", c.model.score);
  str("normalizer", c.model.normalizer);
  if (!absent(o["mask"])) {
    const std::string m = string(o["mask"], "mask");
    if (m != "none" && m != "causal") fail("mask must be 'none' or 'causal', got '" + m + "'");
    c.model.causal = m == "causal";
  }
  integ("length", c.model.length, 1, 4096);
  integ("width", c.model.width, 1, 1024);
  integ("heads", c.model.heads, 1, 64);
  integ("layers", c.model.layers, 1, 4);
  integ("batch", c.batch, 1, 4096);
  integ("evalSize", c.eval_size, 1, 65536);
  if (!absent(o["seed"])) c.seed = std::uint64_t(integer(o["seed"], "seed", 0, kMaxSafeInteger));
  num("lr", c.optimizer.lr);
  num("weightDecay", c.optimizer.weight_decay);
  num("clip", c.optimizer.clip_norm);
  read_normalizer_options(o, c.model.norm_options);
  train::validate(c);  // names the argument: unknown task (lists them), lr, length, ...
  return c;
}

val eval_to_js(const train::EvalResult& e) {
  val o = val::object();
  o.set("loss", e.loss);
  o.set("tokenAccuracy", e.token_accuracy);
  o.set("sequenceAccuracy", e.sequence_accuracy);
  return o;
}

/// One training run; JS owns it (call delete()).
class JsTrainer {
 public:
  explicit JsTrainer(train::TrainConfig c) : t_(std::move(c)) {}

  val step(val n) {
    return guarded("step", [&] {
      const auto k = integer(n, "steps", 1, 1e7);
      const std::vector<double> l = t_.step(long(k));
      val out = val::global("Float64Array").new_(l.size());
      for (std::size_t i = 0; i < l.size(); ++i) out.set(i, l[i]);
      return out;
    });
  }
  val evaluate() {
    return guarded("evaluate", [&] { return eval_to_js(t_.evaluate()); });
  }
  val attention(val example, val layer, val head) {
    return guarded("attention", [&] {
      return to_js(t_.attention(int(integer(example, "example", 0, kMaxIndex)), int(integer(layer, "layer", 0, 64)),
                                int(integer(head, "head", 0, 64))));
    });
  }
  /// The held-out example's tokens and targets (-1: not an answer position).
  val example(val index) {
    return guarded("example", [&] {
      const auto& h = t_.heldout();
      const int i = int(integer(index, "example", 0, kMaxIndex));
      detail::require(i < h.B, "example must be in [0, " + std::to_string(h.B) + "), got " + std::to_string(i));
      val tok = val::global("Int32Array").new_(h.L), tgt = val::global("Int32Array").new_(h.L);
      for (int k = 0; k < h.L; ++k) {
        tok.set(k, h.tokens[std::size_t(i * h.L + k)]);
        tgt.set(k, h.targets[std::size_t(i * h.L + k)]);
      }
      val o = val::object();
      o.set("tokens", tok);
      o.set("targets", tgt);
      return o;
    });
  }
  val state() const {
    val o = val::object();
    o.set("steps", double(t_.state().steps));
    o.set("diverged", t_.state().diverged);
    o.set("message", t_.state().message);
    o.set("vocab", t_.config().model.vocab);
    o.set("length", t_.config().model.length);
    o.set("evalSize", t_.config().eval_size);
    return o;
  }

 private:
  train::Trainer<float> t_;
};

JsTrainer* create_trainer(val opts) {
  std::unique_ptr<JsTrainer> out;
  guarded("createTrainer", [&] {
    out = std::make_unique<JsTrainer>(read_trainer_options(opts));
    return val::undefined();
  });
  return out.release();
}

/// [{name, label, minLength, readsText}], in registry order.
val js_tasks() {
  val list = val::array();
  int i = 0;
  for (const auto& t : train::task_infos()) {
    val o = val::object();
    o.set("name", std::string(t.name));
    o.set("label", std::string(t.label));
    o.set("minLength", t.min_length);
    o.set("readsText", t.reads_corpus);
    list.set(i++, o);
  }
  return list;
}

}  // namespace
}  // namespace qkscope::wasm

EMSCRIPTEN_BINDINGS(qkscope_train) {
  using namespace qkscope::wasm;
  emscripten::class_<JsTrainer>("Trainer")
      .function("step", &JsTrainer::step)
      .function("evaluate", &JsTrainer::evaluate)
      .function("attention", &JsTrainer::attention)
      .function("example", &JsTrainer::example)
      .function("state", &JsTrainer::state);
  emscripten::function("createTrainer", &create_trainer, emscripten::allow_raw_pointers());
  emscripten::class_<JsCharModel>("CharModel")
      .function("info", &JsCharModel::info)
      .function("encode", &JsCharModel::encode)
      .function("predict", &JsCharModel::predict);
  emscripten::function("loadCharModel", &load_char_model, emscripten::allow_raw_pointers());
  emscripten::function("encodeText", &js_encode_text);
  emscripten::function("tasks", &js_tasks);
  emscripten::function("version", &js_version);
}
