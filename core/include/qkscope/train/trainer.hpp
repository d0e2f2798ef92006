// qkscope/train/trainer.hpp — seeded training of the model (train/model.hpp) on a task
// (train/tasks.hpp) with AdamW and gradient clipping (train/optim.hpp), a fixed held-out
// set, and divergence detection.
//
// Determinism: for a fixed TrainConfig (seed included) every step draws the same batch
// and the same noise, so the losses are the same bit for bit on one thread and one
// build (platforms differ only by floating-point evaluation order).
// Divergence: a step whose loss or gradient norm is not finite, or where the core reports
// an overflow (scores, gradients or parameters no longer representable), stops training:
// state().diverged is set with a message naming the step, the parameters are left as
// they were before that step, and step() returns the losses of the steps that succeeded.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/train/model.hpp"
#include "qkscope/train/optim.hpp"
#include "qkscope/train/tasks.hpp"

namespace qkscope::train {

/// Everything a training run needs. model.vocab is set from the task.
struct TrainConfig {
  std::string task = "reverse";  // a name from Tasks (train/tasks.hpp)
  ModelConfig model;             // length = sequence length L, width, heads, layers, score, ...
  AdamWConfig optimizer;
  int batch = 32;                // sequences per step, in [1, 4096]
  int eval_size = 256;           // held-out sequences, in [1, 65536]
  std::uint64_t seed = 0;        // data, parameters and noise
  /// The corpus of a task that reads text (task "text"; encoded by encode_text, text.hpp),
  /// supplied by the caller: the core reads no files. Must be empty for the other tasks.
  std::string text;
};

/// Held-out metrics.
struct EvalResult {
  double loss = 0;               // mean cross-entropy over answer positions, nats
  double token_accuracy = 0;     // fraction of answer positions predicted correctly
  double sequence_accuracy = 0;  // fraction of sequences with every answer correct
};

/// Where a run stands.
struct TrainState {
  long steps = 0;        // successful optimizer steps
  bool diverged = false;
  std::string message;   // why training stopped (empty unless diverged)
};

/// Most attention weights one batch may hold: batch (or held-out size) x heads x layers x
/// length^2 (2^26; see validate).
inline constexpr double kMaxAttentionEntries = double(1L << 26);

/// Checks the settings; std::invalid_argument names the argument and its value (unknown
/// task: lists the known ones; length too small for the task: names both).
inline void validate(const TrainConfig& c) {
  const std::vector<int> corpus = encode_text(c.text);
  validate_task(c.task, c.model.length, c.model.causal, c.text.empty() ? nullptr : &corpus);
  ModelConfig m = c.model;
  m.vocab = task_vocab(c.task, c.model.length);
  validate(m);
  validate(c.optimizer);
  detail::require(c.batch >= 1 && c.batch <= 4096, "batch must be in [1, 4096], got " + std::to_string(c.batch));
  detail::require(c.eval_size >= 1 && c.eval_size <= 65536,
                  "eval_size must be in [1, 65536], got " + std::to_string(c.eval_size));
  // Memory, checked before anything is allocated: a forward pass keeps every head's (L, L)
  // attention weights of its whole batch for the backward pass, and the held-out set runs as
  // one batch, so sequences x heads x layers x L^2 floats (several copies of that). A bad_alloc
  // would abort the native driver and fill a browser tab; the bound keeps one copy <= 256 MiB.
  int heldout = 0;
  visit_task(c.task, [&](auto t) {
    heldout = decltype(t)::heldout_size(c.eval_size, c.model.length, c.text.empty() ? nullptr : &corpus);
  });
  const double per_sequence = double(c.model.heads) * c.model.layers * double(c.model.length) * c.model.length;
  for (const auto& [name, n] : {std::pair<const char*, int>{"batch", c.batch}, {"eval_size", heldout}})
    detail::require(n * per_sequence <= kMaxAttentionEntries,
                    std::string(name) + " (" + std::to_string(n) + ") x heads (" + std::to_string(c.model.heads) +
                        ") x layers (" + std::to_string(c.model.layers) + ") x length^2 (" +
                        std::to_string(c.model.length) + "^2) attention weights must be at most " +
                        std::to_string(long(kMaxAttentionEntries)) + ", got " + detail::num(n * per_sequence));
}

template <class T>
class Trainer {
 public:
  /// Throws std::invalid_argument for any bad setting (see validate(TrainConfig)).
  explicit Trainer(TrainConfig c) : c_(std::move(c)), opt_(c_.optimizer), rng_(c_.seed ^ 0x5eedda7aull) {
    validate(c_);
    c_.model.vocab = task_vocab(c_.task, c_.model.length);
    params_ = init_model<T>(c_.model, c_.seed);
    if (task_reads_corpus(c_.task)) corpus_ = encode_text(c_.text);
    const std::vector<int>* corpus = corpus_.empty() ? nullptr : &corpus_;
    int eval_size = 0;
    visit_task(c_.task, [&](auto t) { eval_size = decltype(t)::heldout_size(c_.eval_size, c_.model.length, corpus); });
    detail::Rng eval_rng(c_.seed ^ 0xe7a1ull << 32);
    heldout_ = make_batch(c_.task, eval_size, c_.model.length, eval_rng, corpus, true);
  }

  /// Runs up to n >= 1 steps; returns the loss (nats, before the update) of each step that
  /// succeeded: fewer than n when the run diverges (see the file header) or had diverged.
  std::vector<double> step(long n) {
    detail::require(n >= 1, "steps must be >= 1, got " + std::to_string(n));
    std::vector<double> losses;
    for (long i = 0; i < n && !state_.diverged; ++i) {
      const Batch batch = make_batch(c_.task, c_.batch, c_.model.length, rng_, corpus_.empty() ? nullptr : &corpus_);
      const MultiHeadConfig<T> mha = config_for(std::uint64_t(state_.steps) + 1);
      const std::string where = "step " + std::to_string(state_.steps + 1) + ": ";
      try {
        const ModelForward<T> f = model_forward<T>(c_.model, params_, batch.tokens, batch.B, mha);
        ModelLoss<T> l = model_loss<T>(c_.model, params_, batch.tokens, batch.targets, batch.B, mha, f, true);
        if (!std::isfinite(l.loss)) {
          diverge(where + "loss is " + detail::num(l.loss));
          break;
        }
        const double norm = clip_global_norm(l.grads, c_.optimizer.clip_norm);
        if (!std::isfinite(norm)) {
          diverge(where + "gradient norm is " + detail::num(norm));
          break;
        }
        ModelParams<T> next = params_;
        opt_.update(next, l.grads);
        bool finite = true;
        for_each_tensor<T>(next, next, [&](const std::string&, auto& p, auto&) { finite = finite && p.allFinite(); });
        if (!finite) {
          diverge(where + "a parameter became non-finite after the update (learning rate or weight decay too large?)");
          break;
        }
        params_ = std::move(next);
        losses.push_back(l.loss);
        ++state_.steps;
      } catch (const std::invalid_argument& e) {
        // Settings were validated up front: what the core reports now is numeric overflow.
        diverge(where + e.what());
      }
    }
    return losses;
  }

  /// Loss and accuracy on the held-out set (fixed at construction; never trained on).
  /// When the parameters overflow the forward pass (finite but huge after a too large
  /// step), or the loss is not finite, the run is marked diverged (state()) and every
  /// field is NaN: check state().diverged before drawing.
  EvalResult evaluate() {
    try {
      const ModelForward<T> f = model_forward<T>(c_.model, params_, heldout_.tokens, heldout_.B, config_for(0));
      const ModelLoss<T> l = model_loss<T>(c_.model, params_, heldout_.tokens, heldout_.targets, heldout_.B,
                                           config_for(0), f, false);
      if (std::isfinite(l.loss)) return {l.loss, double(l.correct) / l.answers, double(l.sequences_exact) / heldout_.B};
      if (!state_.diverged) diverge("the held-out evaluation after step " + std::to_string(state_.steps) +
                                    ": loss is " + detail::num(l.loss));
    } catch (const std::invalid_argument& e) {
      if (!state_.diverged)
        diverge("the held-out evaluation after step " + std::to_string(state_.steps) + ": " + e.what());
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan};
  }

  /// Attention weights (L, L) of held-out example `example`, layer `layer`, head `head`
  /// (row i: query position i, column j: key position j). Throws std::invalid_argument
  /// naming example, layer or head when out of range, or the overflow when the
  /// parameters of a diverged run no longer give finite scores.
  Mat<T> attention(int example, int layer, int head) const {
    detail::require(example >= 0 && example < heldout_.B, "example must be in [0, " + std::to_string(heldout_.B) +
                                                              "), got " + std::to_string(example));
    detail::require(layer >= 0 && layer < c_.model.layers,
                    "layer must be in [0, " + std::to_string(c_.model.layers) + "), got " + std::to_string(layer));
    detail::require(head >= 0 && head < c_.model.heads,
                    "head must be in [0, " + std::to_string(c_.model.heads) + "), got " + std::to_string(head));
    const auto L = std::size_t(c_.model.length), b = std::size_t(example);
    const std::vector<int> tokens(heldout_.tokens.begin() + long(b * L), heldout_.tokens.begin() + long((b + 1) * L));
    const ModelForward<T> f = model_forward<T>(c_.model, params_, tokens, 1, config_for(0, 1));
    return f.attention[std::size_t(layer)].head(0, head).weights;
  }

  const TrainState& state() const { return state_; }
  const TrainConfig& config() const { return c_; }
  const ModelParams<T>& params() const { return params_; }
  /// The held-out set: eval_size sequences (a text task: at most its held-out windows).
  const Batch& heldout() const { return heldout_; }
  /// The encoded corpus (empty for the generated tasks).
  const std::vector<int>& corpus() const { return corpus_; }

 private:
  /// The layers' settings; a sampling normalizer (one whose Options has a seed) gets a
  /// fresh noise seed per step (0: evaluation's fixed noise).
  MultiHeadConfig<T> config_for(std::uint64_t step, int batch = 0) const {
    MultiHeadConfig<T> m = mha_config<T>(c_.model, batch ? batch : (step ? c_.batch : heldout_.B));
    std::apply([&](auto... n) {
      ((void)[&] {
        auto& o = m.attention.norm_options.template get<decltype(n)>();
        if constexpr (requires { o.seed; }) o.seed = c_.seed * 0x9E3779B97F4A7C15ull + step;
      }(), ...);
    }, Normalizers{});
    return m;
  }
  void diverge(std::string why) {
    state_.diverged = true;
    state_.message = "training diverged at " + std::move(why);
  }

  TrainConfig c_;
  AdamW<T> opt_;
  detail::Rng rng_;
  ModelParams<T> params_;
  std::vector<int> corpus_;  // encoded text (tasks that read one)
  Batch heldout_;
  TrainState state_;
};

}  // namespace qkscope::train
