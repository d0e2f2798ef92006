// args.hpp — qkscope_train's command line: every flag, its check, and the help text.
// Unknown flags and bad values end the program with a message naming the flag (exit 2).
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "qkscope/norm/registry.hpp"
#include "qkscope/score/registry.hpp"
#include "qkscope/train/trainer.hpp"

namespace qkscope_train {

struct Args {
  qkscope::train::TrainConfig cfg;        // everything but the score
  std::vector<std::string> scores{"scaled_dot"};
  long steps = 500;
  int eval_every = 25;
  std::string json;
  std::string save_model;  // --save-model PATH ({score} replaced by the score's name)
  std::string text_name;   // --text-name: where the text came from (recorded in --save-model files)
  bool progress = false;
};

[[noreturn]] inline void die(const std::string& msg) {
  std::fprintf(stderr, "qkscope_train: error: %s (see --help)\n", msg.c_str());
  std::exit(2);
}

inline long parse_int(const std::string& flag, const std::string& s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno) die(flag + " expects an integer, got '" + s + "'");
  if (v < lo || v > hi)
    die(flag + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + s);
  return v;
}

inline double parse_number(const std::string& flag, const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end) die(flag + " expects a number, got '" + s + "'");
  return v;  // range checked by the core (validate), which names the argument
}

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c != ',') cur += c;
    else if (!cur.empty()) out.push_back(cur), cur.clear();
  }
  return out;
}

/// Sets option `key` (snake_case, as the registry names it) of the normalizer `normalizer`.
inline void set_norm_option(qkscope::train::ModelConfig& m, const std::string& kv) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos) die("--norm-option expects name=value, got '" + kv + "'");
  const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  bool found = false;
  std::string known;
  qkscope::visit_normalizer(m.normalizer, [&](auto n) {
    auto& o = m.norm_options.template get<decltype(n)>();
    qkscope::norm::for_each_field(o, [&](const auto& f, auto& v) {
      known += (known.empty() ? "" : ", ") + std::string(f.name);
      if (key != f.name) return;
      found = true;
      using M = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<M, bool>) {
        if (value != "0" && value != "1" && value != "true" && value != "false")
          die("--norm-option " + key + " expects true or false, got '" + value + "'");
        v = value == "1" || value == "true";
      } else if constexpr (std::is_integral_v<M>) {
        v = M(parse_int("--norm-option " + key, value, long(f.min), 1L << 53));
      } else {
        v = M(parse_number("--norm-option " + key, value));
      }
    });
  });
  if (!found)
    die("--norm-option: normalizer '" + m.normalizer + "' has no option '" + key + "' (known: " +
        (known.empty() ? "none" : known) + ")");
}

inline void usage() {
  std::printf(
      "usage: npm run train -- [flags]\n"
      "  --task NAME          %s (default reverse)\n"
      "  --score A,B,...      scoring functions trained side by side (default scaled_dot; all: every one)\n"
      "  --steps N            optimizer steps per scoring function (default 500)\n"
      "  --seed S             data, parameter and noise seed (default 0)\n"
      "  --lr X               AdamW learning rate (default 0.01)\n"
      "  --weight-decay X     AdamW decoupled weight decay (default 0)\n"
      "  --clip X             global gradient-norm clip (default 1)\n"
      "  --batch B            sequences per step (default 32)\n"
      "  --len L              sequence length (default 12)\n"
      "  --width D            model width (default 32)\n"
      "  --heads H            attention heads (default 1)\n"
      "  --layers N           attention layers (default 1)\n"
      "  --mask none|causal   attention mask (default none)\n"
      "  --normalizer NAME    softmax, hard, gumbel_softmax, ... (default softmax)\n"
      "  --norm-option K=V    an option of the normalizer, e.g. hard=true for gumbel_softmax\n"
      "  --eval-size N        held-out sequences (default 256)\n"
      "  --eval-every N       steps between held-out evaluations (default 25)\n"
      "  --threads 1          the model trains on one thread (the only value accepted)\n"
      "  --json FILE          write loss/accuracy curves and the table\n"
      "  --text FILE          the corpus of task text (plain text, read whole; UTF-8)\n"
      "  --text-name S        where that text came from, recorded in --save-model files\n"
      "  --save-model PATH    write each run's weights file ({score} in PATH: the score's name;\n"
      "                       required with several scores); format in docs/training.md\n"
      "  --progress           draw the progress bar even when stderr is not a terminal\n",
      qkscope::train::known_tasks().c_str());
}

/// The flags that take a value (every flag but --help and --progress).
inline bool takes_value(const std::string& f) {
  static const char* const flags[] = {"--task", "--score", "--steps", "--seed", "--lr", "--weight-decay", "--clip",
                                      "--batch", "--len", "--width", "--heads", "--layers", "--normalizer",
                                      "--norm-option", "--eval-size", "--eval-every", "--json", "--save-model",
                                      "--text-name", "--text", "--threads", "--mask"};
  for (const char* g : flags)
    if (f == g) return true;
  return false;
}

/// Fails now, not after the training: a path that cannot be written ({score}: the first run's).
inline void check_writable(const std::string& flag, std::string path, const std::string& score) {
  if (const auto at = path.find("{score}"); at != std::string::npos) path.replace(at, 7, score);
  const bool existed = std::ifstream(path).good();
  if (!std::ofstream(path, std::ios::app)) die("cannot write " + flag + " " + path);
  if (!existed) std::remove(path.c_str());
}

inline Args parse(int argc, char** argv) {
  Args a;
  a.cfg.model.length = 12;
  std::vector<std::string> norm_options;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--help" || f == "-h") usage(), std::exit(0);
    if (f == "--progress") {
      a.progress = true;
      continue;
    }
    if (f.rfind("--", 0) != 0) die("unexpected argument '" + f + "'");
    if (!takes_value(f)) die("unknown flag '" + f + "'");
    if (i + 1 >= argc) die(f + " needs a value");
    const std::string v = argv[++i];
    if (f == "--task") a.cfg.task = v;
    else if (f == "--score" && v == "all") {  // the registry's order
      a.scores.clear();
      for (const auto& s : qkscope::score_infos()) a.scores.emplace_back(s.name);
    } else if (f == "--score") a.scores = split(v);
    else if (f == "--steps") a.steps = parse_int(f, v, 1, 10'000'000);
    else if (f == "--seed") a.cfg.seed = std::uint64_t(parse_int(f, v, 0, (1L << 53) - 1));  // as createTrainer
    else if (f == "--lr") a.cfg.optimizer.lr = parse_number(f, v);
    else if (f == "--weight-decay") a.cfg.optimizer.weight_decay = parse_number(f, v);
    else if (f == "--clip") a.cfg.optimizer.clip_norm = parse_number(f, v);
    else if (f == "--batch") a.cfg.batch = int(parse_int(f, v, 1, 4096));
    else if (f == "--len") a.cfg.model.length = int(parse_int(f, v, 1, 4096));
    else if (f == "--width") a.cfg.model.width = int(parse_int(f, v, 1, 1024));
    else if (f == "--heads") a.cfg.model.heads = int(parse_int(f, v, 1, 64));
    else if (f == "--layers") a.cfg.model.layers = int(parse_int(f, v, 1, 4));
    else if (f == "--normalizer") a.cfg.model.normalizer = v;
    else if (f == "--norm-option") norm_options.push_back(v);
    else if (f == "--eval-size") a.cfg.eval_size = int(parse_int(f, v, 1, 65536));
    else if (f == "--eval-every") a.eval_every = int(parse_int(f, v, 1, 10'000'000));
    else if (f == "--json") a.json = v;
    else if (f == "--save-model") a.save_model = v;
    else if (f == "--text-name") a.text_name = v;

    else if (f == "--text") {
      // A directory opens as a stream on Linux and reads as empty: say what it is.
      std::error_code ec;
      if (std::filesystem::is_directory(v, ec)) die("--text: '" + v + "' is a directory, not a text file");
      std::ifstream in(v, std::ios::binary);
      if (!in) die("--text: cannot read '" + v + "'");
      std::ostringstream ss;
      ss << in.rdbuf();
      if (in.bad()) die("--text: reading '" + v + "' failed");
      a.cfg.text = ss.str();
    }
    else if (f == "--threads") parse_int(f, v, 1, 1);
    else if (f == "--mask") {
      if (v != "none" && v != "causal") die("--mask must be none or causal, got '" + v + "'");
      a.cfg.model.causal = v == "causal";
    } else die("unknown flag '" + f + "'");
  }
  if (a.scores.empty()) die("--score needs at least one scoring function");
  for (std::size_t i = 0; i < a.scores.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (a.scores[i] == a.scores[k]) die("--score lists '" + a.scores[i] + "' twice");
  if (a.scores.size() > 1 && !a.save_model.empty() && a.save_model.find("{score}") == std::string::npos)
    die("--save-model with several scores needs {score} in the path, got '" + a.save_model + "'");
  try {
    for (const auto& s : a.scores) qkscope::visit_score(s, [](auto) {});
    for (const auto& kv : norm_options) set_norm_option(a.cfg.model, kv);
    qkscope::train::validate(a.cfg);
  } catch (const std::invalid_argument& e) {
    die(e.what());
  }
  if (!a.json.empty()) check_writable("--json", a.json, a.scores.front());
  if (!a.save_model.empty()) check_writable("--save-model", a.save_model, a.scores.front());
  return a;
}

}  // namespace qkscope_train
