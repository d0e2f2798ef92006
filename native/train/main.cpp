// qkscope_train — trains the tiny attention model (core/include/qkscope/train/) on a
// generated task once per scoring function (same seed, same data, same initial
// embeddings), then prints a table: steps to 95% held-out token accuracy, final loss,
// held-out accuracy, ms per step. --json writes the curves and the table.
//   npm run train -- --task reverse --score additive,scaled_dot --steps 500 --seed 1
#include <chrono>
#include <cstdio>
#include <fstream>
#include <new>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "model_file.hpp"
#include "progress.hpp"
#include "qkscope/train/trainer.hpp"

namespace {

using namespace qkscope::train;

struct EvalPoint {
  long step;
  EvalResult r;
};

struct Run {
  std::string score;
  std::vector<double> losses;
  std::vector<EvalPoint> evals;
  long steps_to_95 = -1;   // first evaluated step with token accuracy >= 0.95; -1: never
  double ms_per_step = 0;  // training steps only (evaluation excluded)
  TrainState state;
};

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

using qkscope_train::json_number;
using qkscope_train::json_string;

/// --save-model: the model file of a run that did not diverge ({score} in the path: its name).
void save_model(const qkscope_train::Args& a, const Trainer<float>& t, const Run& run) {
  if (run.state.diverged) qkscope_train::die("--save-model: the " + run.score + " run diverged: " + run.state.message);
  std::string path = a.save_model;
  if (const auto at = path.find("{score}"); at != std::string::npos) path.replace(at, 7, run.score);
  std::ofstream f(path);
  f << qkscope_train::model_json(t, long(run.losses.size()), run.evals.back().r, a.text_name);
  if (!f) qkscope_train::die("cannot write --save-model " + path);
  std::printf("wrote %s\n", path.c_str());
}

Run train_one(const qkscope_train::Args& a, const std::string& score, qkscope_bench::Progress& bar) {
  TrainConfig c = a.cfg;
  c.model.score = score;
  Trainer<float> t(c);
  Run run;
  run.score = score;
  run.evals.push_back({0, t.evaluate()});
  double train_s = 0;
  for (long done = 0; done < a.steps && !t.state().diverged;) {
    const long n = std::min<long>(a.eval_every, a.steps - done);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<double> l = t.step(n);
    train_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run.losses.insert(run.losses.end(), l.begin(), l.end());
    done += long(l.size());
    for (std::size_t k = 0; k < l.size(); ++k) bar.step();
    if (t.state().diverged) break;
    const EvalResult e = t.evaluate();
    if (t.state().diverged) break;  // the parameters overflow the held-out forward pass
    run.evals.push_back({done, e});
    if (run.steps_to_95 < 0 && run.evals.back().r.token_accuracy >= 0.95) run.steps_to_95 = done;
  }
  run.ms_per_step = run.losses.empty() ? 0 : 1e3 * train_s / double(run.losses.size());
  run.state = t.state();
  if (!a.save_model.empty()) save_model(a, t, run);
  return run;
}

void print_table(const std::vector<Run>& runs) {
  std::printf("\n%-18s %12s %11s %10s %10s %9s\n", "score", "steps to 95%", "final loss", "token acc", "seq acc",
              "ms/step");
  for (const Run& r : runs) {
    const EvalResult& e = r.evals.back().r;
    const std::string s95 = r.steps_to_95 < 0 ? "-" : std::to_string(r.steps_to_95);
    // A run that diverged at its first step has no loss and no time per step: '-', not nan.
    char loss[32] = "-", ms[32] = "-";
    if (!r.losses.empty()) std::snprintf(loss, sizeof loss, "%.4f", r.losses.back());
    if (!r.losses.empty()) std::snprintf(ms, sizeof ms, "%.3f", r.ms_per_step);
    std::printf("%-18s %12s %11s %10.3f %10.3f %9s%s\n", r.score.c_str(), s95.c_str(), loss, e.token_accuracy,
                e.sequence_accuracy, ms, r.state.diverged ? "  DIVERGED" : "");
  }
  for (const Run& r : runs)
    if (r.state.diverged) std::printf("%s: %s\n", r.score.c_str(), r.state.message.c_str());
}

void write_json(const qkscope_train::Args& a, const std::vector<Run>& runs, const std::string& cpu) {
  std::ostringstream j;
  const auto& c = a.cfg;
  j << "{\"schema\":\"qkscope-train\",\"version\":1,\"cpu\":" << json_string(cpu) << ",\"threads\":1"
    << ",\"config\":{\"task\":" << json_string(c.task) << ",\"steps\":" << a.steps << ",\"seed\":" << c.seed
    << ",\"lr\":" << json_number(c.optimizer.lr) << ",\"weight_decay\":" << json_number(c.optimizer.weight_decay)
    << ",\"clip\":" << json_number(c.optimizer.clip_norm) << ",\"batch\":" << c.batch << ",\"len\":" << c.model.length
    << ",\"width\":" << c.model.width << ",\"heads\":" << c.model.heads << ",\"layers\":" << c.model.layers
    << ",\"mask\":\"" << (c.model.causal ? "causal" : "none") << "\",\"normalizer\":" << json_string(c.model.normalizer)
    << ",\"eval_size\":" << c.eval_size << ",\"eval_every\":" << a.eval_every << "},\"runs\":[";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    j << (i ? "," : "") << "{\"score\":" << json_string(r.score) << ",\"loss\":[";
    for (std::size_t k = 0; k < r.losses.size(); ++k) j << (k ? "," : "") << json_number(r.losses[k]);
    j << "],\"eval\":[";
    for (std::size_t k = 0; k < r.evals.size(); ++k) {
      const auto& e = r.evals[k];
      j << (k ? "," : "") << "{\"step\":" << e.step << ",\"loss\":" << json_number(e.r.loss)
        << ",\"token_accuracy\":" << json_number(e.r.token_accuracy)
        << ",\"sequence_accuracy\":" << json_number(e.r.sequence_accuracy) << "}";
    }
    const EvalResult& last = r.evals.back().r;
    j << "],\"table\":{\"steps_to_95\":" << (r.steps_to_95 < 0 ? "null" : std::to_string(r.steps_to_95))
      << ",\"final_loss\":" << json_number(r.losses.empty() ? NAN : r.losses.back())
      << ",\"heldout_loss\":" << json_number(last.loss) << ",\"token_accuracy\":" << json_number(last.token_accuracy)
      << ",\"sequence_accuracy\":" << json_number(last.sequence_accuracy)
      << ",\"ms_per_step\":" << json_number(r.ms_per_step) << "},\"diverged\":" << (r.state.diverged ? "true" : "false")
      << ",\"message\":" << json_string(r.state.message) << "}";
  }
  j << "]}\n";
  std::ofstream f(a.json);
  f << j.str();
  if (!f) qkscope_train::die("cannot write --json " + a.json);
}

}  // namespace

int main(int argc, char** argv) {
  const qkscope_train::Args a = qkscope_train::parse(argc, argv);
  const std::string cpu = cpu_model();
  std::printf("CPU: %s, %u cores; training on 1 thread\n", cpu.c_str(), std::thread::hardware_concurrency());
  std::printf("task %s, len %d, batch %d, width %d, heads %d, layers %d, mask %s, normalizer %s, lr %g, seed %llu\n",
              a.cfg.task.c_str(), a.cfg.model.length, a.cfg.batch, a.cfg.model.width, a.cfg.model.heads,
              a.cfg.model.layers, a.cfg.model.causal ? "causal" : "none", a.cfg.model.normalizer.c_str(),
              a.cfg.optimizer.lr, static_cast<unsigned long long>(a.cfg.seed));
  std::fflush(stdout);
  std::vector<Run> runs;
  {
    qkscope_bench::Progress bar("training", a.steps * long(a.scores.size()),
                                qkscope_bench::progress_wanted(a.progress));
    // validate() bounds the memory a run needs, but the machine may still have less.
    try {
      for (const auto& s : a.scores) runs.push_back(train_one(a, s, bar));
    } catch (const std::bad_alloc&) {
      qkscope_train::die("out of memory: lower --batch, --eval-size, --len, --heads or --layers");
    }
  }
  print_table(runs);
  if (!a.json.empty()) write_json(a, runs, cpu);
  return 0;
}
