// qkscope/train/tasks.hpp — seeded synthetic tasks whose answer needs attention and whose
// learned attention is easy to read, and their registry (the one list: the trainer, the
// native driver and the wasm binding visit it; no other code switches on task names).
//
// Layout shared by every task: a sequence of L tokens (integers in [0, vocab)) and one
// target per position, -1 where the position is not an answer (no loss, no accuracy).
// Answers sit at positions after every input they need, so each task works with the
// mask "none" and "causal" alike, and the model reads them with a per-position read-out.
//   reverse: x_1 .. x_n, then n blanks; blank k must output x_{n+1-k} (anti-diagonal)
//   copy:    x_1 .. x_n, then n blanks; blank k must output x_k (shifted diagonal)
//   recall:  p (key, value) pair tokens, then q query keys; each query must output the
//            value paired with its key (associative recall, as in Ba et al. 2016 and the
//            "Zoology" MQAR task, Arora et al. 2024, with each pair as one token)
//   text:    next character of a caller-supplied text (train/text.hpp): a window of L
//            characters, every position predicts the character after it (causal mask
//            only); training windows at seeded offsets of the first 90%, held-out windows
//            the consecutive windows of the last 10% (the same for every seed)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/train/text.hpp"

namespace qkscope::train {

/// A batch of B sequences of length L, row-major: tokens[b*L + i], targets[b*L + i].
struct Batch {
  int B = 0, L = 0;
  std::vector<int> tokens;   // B*L entries in [0, vocab)
  std::vector<int> targets;  // B*L entries in [0, vocab) or -1 (not an answer position)
};

/// What a task's fill may read besides the rng: the encoded corpus (tasks that read text;
/// null otherwise), whether the held-out set is being drawn, and the sequence's index in it.
struct Draw {
  const std::vector<int>* corpus = nullptr;
  bool heldout = false;
  int index = 0;
};

namespace task {

/// Defaults of the generated tasks: any mask, no corpus, eval_size held-out sequences drawn
/// from their own seeded stream.
struct Generated {
  static constexpr bool causal_only = false;
  static constexpr bool reads_corpus = false;
  static int heldout_size(int eval_size, int, const std::vector<int>*) { return eval_size; }
};

inline int uniform_int(detail::Rng& rng, int n) { return int(rng.next_u64() % std::uint64_t(n)); }

/// Sequence reversal over 10 digit tokens and one blank (token 10).
struct Reverse : Generated {
  static constexpr const char* name = "reverse";
  static constexpr const char* label = "Reverse a sequence";
  static constexpr int min_length = 2;
  static int vocab(int) { return 11; }
  static void fill(detail::Rng& rng, int L, const Draw&, int* tok, int* tgt) {
    const int n = L / 2;
    for (int i = 0; i < L; ++i) tok[i] = 10, tgt[i] = -1;
    for (int i = 0; i < n; ++i) tok[i] = uniform_int(rng, 10);
    for (int k = 0; k < n; ++k) tgt[n + k] = tok[n - 1 - k];
  }
};

/// Copy: like Reverse, but blank k outputs x_k.
struct Copy : Generated {
  static constexpr const char* name = "copy";
  static constexpr const char* label = "Copy a sequence";
  static constexpr int min_length = 2;
  static int vocab(int) { return 11; }
  static void fill(detail::Rng& rng, int L, const Draw&, int* tok, int* tgt) {
    const int n = L / 2;
    for (int i = 0; i < L; ++i) tok[i] = 10, tgt[i] = -1;
    for (int i = 0; i < n; ++i) tok[i] = uniform_int(rng, 10);
    for (int k = 0; k < n; ++k) tgt[n + k] = tok[k];
  }
};

/// Associative recall: kKeys keys, kValues values; pair token k*kValues + v, query token
/// kKeys*kValues + k. q = max(1, L/3) queries after p = L - q pairs with distinct keys;
/// each query asks for a key present in the pairs.
struct Recall : Generated {
  static constexpr const char* name = "recall";
  static constexpr const char* label = "Associative recall";
  static constexpr int kKeys = 16, kValues = 8;
  static constexpr int min_length = 3;
  static int vocab(int) { return kKeys * kValues + kKeys; }
  static int queries(int L) { return L / 3 > 1 ? L / 3 : 1; }
  static void fill(detail::Rng& rng, int L, const Draw&, int* tok, int* tgt) {
    const int q = queries(L), p = L - q < kKeys ? L - q : kKeys;
    std::array<int, kKeys> keys{};
    for (int k = 0; k < kKeys; ++k) keys[std::size_t(k)] = k;
    for (int k = 0; k < p; ++k)  // partial Fisher-Yates: p distinct keys
      std::swap(keys[std::size_t(k)], keys[std::size_t(k + uniform_int(rng, kKeys - k))]);
    std::array<int, kKeys> value{};
    for (int i = 0; i < L; ++i) tgt[i] = -1;
    for (int i = 0; i < p; ++i) {
      const int k = keys[std::size_t(i)], v = uniform_int(rng, kValues);
      value[std::size_t(k)] = v;
      tok[i] = k * kValues + v;
    }
    for (int i = p; i < L; ++i) {  // L - p >= q queries (more when L - q > kKeys)
      const int k = keys[std::size_t(uniform_int(rng, p))];
      tok[i] = kKeys * kValues + k;
      tgt[i] = value[std::size_t(k)];
    }
  }
};

/// Next character of a text (see the file header and train/text.hpp).
struct Text {
  static constexpr const char* name = "text";
  static constexpr const char* label = "Next character of a text";
  static constexpr int min_length = 1;
  static constexpr bool causal_only = true;  // position i must not see its own answer i + 1
  static constexpr bool reads_corpus = true;
  static int vocab(int) { return kTextVocab; }
  /// Every held-out window when eval_size is larger than their number.
  static int heldout_size(int eval_size, int L, const std::vector<int>* corpus) {
    const int w = corpus ? heldout_windows(corpus->size(), L) : 0;
    return eval_size < w ? eval_size : w;
  }
  static void fill(detail::Rng& rng, int L, const Draw& d, int* tok, int* tgt) {
    const std::vector<int>& c = *d.corpus;
    const std::size_t split = heldout_start(c.size());
    // Training: offset uniform in [0, split - L - 1], so the window and its last target
    // lie in the training part. Held-out: window `index` of the consecutive ones.
    const std::size_t s = d.heldout ? split + std::size_t(d.index) * std::size_t(L)
                                    : std::size_t(rng.next_u64() % std::uint64_t(split - std::size_t(L)));
    for (int i = 0; i < L; ++i) tok[i] = c[s + std::size_t(i)], tgt[i] = c[s + std::size_t(i) + 1];
  }
};

}  // namespace task

/// Every task, in the order the tutorial presents them.
using Tasks = std::tuple<task::Reverse, task::Recall, task::Copy, task::Text>;

struct TaskInfo {
  const char* name;
  const char* label;
  int min_length;
  bool reads_corpus;  // needs TrainConfig::text (and the causal mask); the others generate their data
};

inline auto task_infos() {
  return std::apply([](auto... t) { return std::array<TaskInfo, sizeof...(t)>{
                                        TaskInfo{decltype(t)::name, decltype(t)::label, decltype(t)::min_length,
                                                 decltype(t)::reads_corpus}...}; },
                    Tasks{});
}

/// Comma-separated task names, for error messages and help texts.
inline std::string known_tasks() {
  std::string s;
  for (const auto& t : task_infos()) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

/// Calls fn(Task{}) with the task named `name` (fn returns void).
/// Throws std::invalid_argument listing the known tasks when `name` is unknown.
template <class Fn>
void visit_task(std::string_view name, Fn&& fn) {
  bool found = false;
  std::apply([&](auto... t) { ((void)(!found && name == decltype(t)::name ? (fn(t), found = true) : false), ...); },
             Tasks{});
  if (!found) detail::fail("task: unknown task '" + std::string(name) + "' (known: " + known_tasks() + ")");
}

/// Token vocabulary size of task `name` at length L (read-out width as well).
inline int task_vocab(std::string_view name, int L) {
  int v = 0;
  visit_task(name, [&](auto t) { v = decltype(t)::vocab(L); });
  return v;
}

/// Checks the task name, that L is long enough for it, its mask and its corpus (encoded;
/// null when none was given): messages name the argument. A task that reads a corpus needs
/// one whose training part and held-out part each hold a window of L + 1 characters.
inline void validate_task(std::string_view name, int L, bool causal = false, const std::vector<int>* corpus = nullptr) {
  visit_task(name, [&](auto t) {
    using Task = decltype(t);
    const std::string task = "task '" + std::string(name) + "'";
    detail::require(L >= Task::min_length, "length: " + task + " needs sequence length >= " +
                                               std::to_string(Task::min_length) + ", got " + std::to_string(L));
    if constexpr (Task::causal_only)
      detail::require(causal, "mask: " + task + " predicts the next token at every position and needs the causal mask");
    if constexpr (Task::reads_corpus) {
      const std::size_t n = corpus ? corpus->size() : 0;
      const std::size_t need = 10 * (std::size_t(L) + 1) + 10;  // >= L + 1 in each part
      detail::require(n >= need, "text: " + task + " needs a text of at least " + std::to_string(need) +
                                     " characters (after encoding) at length " + std::to_string(L) + ", got " +
                                     std::to_string(n));
    } else {
      detail::require(!corpus || corpus->empty(), "text: " + task + " reads no text; leave text empty");
    }
  });
}

/// Whether task `name` reads a corpus (TrainConfig::text).
inline bool task_reads_corpus(std::string_view name) {
  bool r = false;
  visit_task(name, [&](auto t) { r = decltype(t)::reads_corpus; });
  return r;
}

/// B sequences of task `name` at length L drawn from rng (advances rng; same draws on
/// every platform); `heldout` draws the held-out set (a text task's fixed windows, B at
/// most heldout_size). Throws std::invalid_argument for an unknown task, B < 1, a too
/// short L or a missing or too short corpus.
inline Batch make_batch(std::string_view name, int B, int L, detail::Rng& rng, const std::vector<int>* corpus = nullptr,
                        bool heldout = false) {
  detail::require(B >= 1, "batch must be >= 1, got " + std::to_string(B));
  visit_task(name, [&](auto t) {
    using Task = decltype(t);
    // The mask is the model's (validate(TrainConfig) checks it); data needs none.
    validate_task(name, L, true, Task::reads_corpus ? corpus : nullptr);
    if (heldout)
      detail::require(B <= Task::heldout_size(B, L, corpus), "eval_size: task '" + std::string(name) + "' has " +
                                                               std::to_string(Task::heldout_size(B, L, corpus)) +
                                                               " held-out windows, asked for " + std::to_string(B));
  });
  Batch out{B, L, std::vector<int>(std::size_t(B) * std::size_t(L)), std::vector<int>(std::size_t(B) * std::size_t(L))};
  visit_task(name, [&](auto t) {
    for (int b = 0; b < B; ++b)
      decltype(t)::fill(rng, L, Draw{corpus, heldout, b}, out.tokens.data() + std::size_t(b) * std::size_t(L),
                        out.targets.data() + std::size_t(b) * std::size_t(L));
  });
  return out;
}

}  // namespace qkscope::train
