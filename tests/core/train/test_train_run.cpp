// Training runs (train/trainer.hpp): reversal is learned, runs are deterministic for a
// fixed seed, bad settings name the argument, a diverging run is stopped and reported.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>

#include "qkscope/train/trainer.hpp"

using namespace qkscope;
using namespace qkscope::train;
using Catch::Contains;

namespace {

TrainConfig small(const std::string& task, const std::string& score) {
  TrainConfig c;
  c.task = task;
  c.model.score = score;
  c.model.length = 8;
  c.model.width = 16;
  c.batch = 16;
  c.eval_size = 128;
  c.optimizer.lr = 2e-2;
  c.seed = 7;
  return c;
}

}  // namespace

TEST_CASE("training: scaled_dot learns reversal", "[train][run]") {
  Trainer<float> t(small("reverse", "scaled_dot"));
  const double before = t.evaluate().loss;
  const auto losses = t.step(300);
  REQUIRE(losses.size() == 300);
  REQUIRE_FALSE(t.state().diverged);
  const EvalResult e = t.evaluate();
  INFO("held-out loss " << before << " -> " << e.loss << ", accuracy " << e.token_accuracy);
  CHECK(e.loss < before);
  CHECK(e.token_accuracy >= 0.95);
}

TEST_CASE("training: the learned reversal attention is the anti-diagonal", "[train][run]") {
  Trainer<float> t(small("reverse", "scaled_dot"));
  t.step(300);
  REQUIRE_FALSE(t.state().diverged);
  const int L = 8, n = L / 2;
  for (int ex = 0; ex < 4; ++ex) {
    const Mat<float> A = t.attention(ex, 0, 0);
    REQUIRE(A.rows() == L);
    REQUIRE(A.cols() == L);
    for (int k = 0; k < n; ++k) {  // answer row n + k looks at input n - 1 - k the most
      Eigen::Index j = 0;
      A.row(n + k).maxCoeff(&j);
      CHECK(j == n - 1 - k);
    }
  }
}

TEST_CASE("training: associative recall is learned by scaled_dot, not by linear_concat", "[train][run]") {
  // linear_concat scores w_q.q + w_k.k: the ranking of the keys cannot depend on the query,
  // so no query can pick its own pair (chance: 1/8 of the values).
  auto run = [](const std::string& score) {
    TrainConfig c = small("recall", score);
    c.model.length = 6;
    c.batch = 32;
    Trainer<float> t(c);
    t.step(300);
    REQUIRE_FALSE(t.state().diverged);
    return t.evaluate().token_accuracy;
  };
  const double dot = run("scaled_dot"), concat = run("linear_concat");
  INFO("held-out accuracy: scaled_dot " << dot << ", linear_concat " << concat);
  CHECK(dot >= 0.8);
  CHECK(concat <= 0.5);
}

TEST_CASE("training: a fixed seed gives bitwise identical runs", "[train][run]") {
  for (const char* n : {"softmax", "gumbel_softmax"}) {
    INFO("normalizer " << n);
    TrainConfig c = small("recall", "additive");
    c.model.normalizer = n;
    c.model.norm_options.get<norm::GumbelSoftmax>().hard = true;  // straight-through
    c.model.heads = 2;
    c.model.layers = 2;
    c.model.causal = true;
    Trainer<float> a(c), b(c);
    const auto la = a.step(10), lb = b.step(10);
    REQUIRE(la.size() == 10);
    CHECK(la == lb);
    CHECK(a.evaluate().loss == b.evaluate().loss);
    c.seed += 1;
    Trainer<float> other(c);
    CHECK(other.step(10) != la);
  }
}

TEST_CASE("training: bad settings name the argument and the value", "[train][errors]") {
  auto bad = [](auto edit, const std::string& needle) {
    TrainConfig c = small("reverse", "scaled_dot");
    edit(c);
    CHECK_THROWS_AS(Trainer<float>(c), std::invalid_argument);
    CHECK_THROWS_WITH(Trainer<float>(c), Contains(needle));
  };
  bad([](TrainConfig& c) { c.task = "sort3"; }, "unknown task 'sort3' (known: reverse, recall, copy, text)");
  bad([](TrainConfig& c) { c.optimizer.lr = std::nan(""); }, "lr (learning rate) must be finite and > 0, got nan");
  bad([](TrainConfig& c) { c.optimizer.lr = -1; }, "lr (learning rate) must be finite and > 0, got -1");
  bad([](TrainConfig& c) { c.optimizer.lr = INFINITY; }, "got inf");
  bad([](TrainConfig& c) { c.optimizer.lr = 0; }, "got 0");
  bad([](TrainConfig& c) { c.batch = 0; }, "batch must be in [1, 4096], got 0");
  bad([](TrainConfig& c) { c.model.length = 2, c.task = "recall"; }, "task 'recall' needs sequence length >= 3, got 2");
  bad([](TrainConfig& c) { c.model.width = 10, c.model.heads = 4; }, "width (10) must be a multiple of heads (4)");
  bad([](TrainConfig& c) { c.model.layers = 0; }, "layers must be in [1, 4], got 0");
  bad([](TrainConfig& c) { c.model.score = "dott"; }, "unknown scoring function 'dott'");
  bad([](TrainConfig& c) { c.model.normalizer = "soft"; }, "unknown normalizer 'soft'");
  bad([](TrainConfig& c) { c.optimizer.weight_decay = -0.1; }, "weight_decay must be finite and >= 0, got -0.1");
  bad([](TrainConfig& c) { c.optimizer.clip_norm = 0; }, "clip_norm must be > 0, got 0");
  bad([](TrainConfig& c) { c.eval_size = 0; }, "eval_size must be in [1, 65536], got 0");
  // Memory is bounded before anything is allocated (a bad_alloc aborted the native driver).
  bad([](TrainConfig& c) { c.model.length = 4096, c.batch = 4096; },
      "batch (4096) x heads (1) x layers (1) x length^2 (4096^2) attention weights must be at most 67108864");
  bad([](TrainConfig& c) { c.model.length = 1024, c.eval_size = 256, c.batch = 1; },
      "eval_size (256) x heads (1) x layers (1) x length^2 (1024^2) attention weights must be at most 67108864, got 268435456");
  Trainer<float> t(small("reverse", "scaled_dot"));
  CHECK_THROWS_WITH(t.step(0), "steps must be >= 1, got 0");
  CHECK_THROWS_WITH(t.step(-3), "steps must be >= 1, got -3");
  CHECK_THROWS_WITH(t.attention(128, 0, 0), Contains("example must be in [0, 128), got 128"));
  CHECK_THROWS_WITH(t.attention(0, 1, 0), Contains("layer must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(t.attention(0, 0, -1), Contains("head must be in [0, 1), got -1"));
}

TEST_CASE("training: a diverging run is stopped and reported, parameters kept finite", "[train][errors]") {
  for (const char* score : {"scaled_dot", "additive", "dot"}) {
    INFO("score " << score);
    TrainConfig c = small("reverse", score);
    c.optimizer.lr = 1e30;
    Trainer<float> t(c);
    const auto losses = t.step(50);
    REQUIRE(t.state().diverged);
    CHECK(losses.size() < 50);
    CHECK(long(losses.size()) == t.state().steps);
    for (double l : losses) CHECK(std::isfinite(l));
    CHECK_THAT(t.state().message, Contains("training diverged at step " + std::to_string(losses.size() + 1)));
    // Stopped: later calls run nothing, and the kept parameters still evaluate.
    CHECK(t.step(5).empty());
    const EvalResult e = t.evaluate();
    CHECK((std::isfinite(e.loss) || std::isnan(e.token_accuracy)));
    CHECK(t.state().diverged);
  }
}

TEST_CASE("training: generated tasks are seeded and well formed", "[train][tasks]") {
  std::string text;  // for the tasks that read one (the others ignore the corpus)
  detail::Rng letters(9);
  for (int i = 0; i < 2000; ++i) text += char('a' + int(letters.next_u64() % 27));
  const std::vector<int> corpus = encode_text(text);
  for (const auto& info : task_infos())
    for (int L : {info.min_length, 7, 12, 40}) {
      INFO("task " << info.name << ", L " << L);
      detail::Rng r1(3), r2(3);
      const Batch a = make_batch(info.name, 5, L, r1, &corpus), b = make_batch(info.name, 5, L, r2, &corpus);
      CHECK(a.tokens == b.tokens);
      CHECK(a.targets == b.targets);
      const int V = task_vocab(info.name, L);
      int answers = 0;
      for (std::size_t i = 0; i < a.tokens.size(); ++i) {
        CHECK((a.tokens[i] >= 0 && a.tokens[i] < V));
        CHECK(a.targets[i] < V);
        answers += a.targets[i] >= 0;
      }
      CHECK(answers >= 5);
    }
  detail::Rng rng(1);
  const Batch r = make_batch("reverse", 1, 6, rng);
  CHECK(r.targets == std::vector<int>{-1, -1, -1, r.tokens[2], r.tokens[1], r.tokens[0]});
  CHECK(r.tokens[3] == 10);
  const Batch c = make_batch("copy", 1, 6, rng);
  CHECK(c.targets == std::vector<int>{-1, -1, -1, c.tokens[0], c.tokens[1], c.tokens[2]});
  const Batch q = make_batch("recall", 1, 6, rng);  // 4 pairs, 2 queries
  for (int i = 4; i < 6; ++i) {
    const int key = q.tokens[std::size_t(i)] - task::Recall::kKeys * task::Recall::kValues;
    int found = 0;
    for (int j = 0; j < 4; ++j)
      if (q.tokens[std::size_t(j)] / task::Recall::kValues == key) {
        ++found;
        CHECK(q.targets[std::size_t(i)] == q.tokens[std::size_t(j)] % task::Recall::kValues);
      }
    CHECK(found == 1);
  }
  CHECK_THROWS_WITH(make_batch("reverse", 0, 6, rng), "batch must be >= 1, got 0");
}
