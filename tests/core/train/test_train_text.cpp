// The next-character task (task "text", train/tasks.hpp and train/text.hpp): the
// vocabulary and its encoding, the held-out split, the seeded training windows and the
// fixed held-out windows, the settings it rejects, a short run that beats the unigram
// baseline, and the model's gradients on a text batch against finite differences.
#include <catch2/catch.hpp>

#include <set>

#include "qkscope/train/trainer.hpp"
#include "support/gradcheck.hpp"

using namespace qkscope;
using namespace qkscope::train;
using Catch::Contains;

namespace {

/// Seeded text from a bigram chain over a few letters and space: the next character depends
/// on the current one, so a model that reads context beats the unigram baseline.
std::string chain_text(int n, std::uint64_t seed) {
  const std::string alphabet = "abcde ";
  detail::Rng rng(seed);
  std::string s = "a";
  for (int i = 1; i < n; ++i) {
    const auto prev = alphabet.find(s.back());
    // Next = (prev + 1) with probability 3/4, else uniform: strongly predictable.
    const auto r = rng.next_u64() % 8;
    s += alphabet[r < 6 ? (prev + 1) % alphabet.size() : std::size_t(rng.next_u64() % alphabet.size())];
  }
  return s;
}

/// Position of window `w` (L tokens) in `c`, or -1.
long find_window(const std::vector<int>& c, const int* w, int L) {
  for (std::size_t s = 0; s + std::size_t(L) <= c.size(); ++s)
    if (std::equal(w, w + L, c.begin() + long(s))) return long(s);
  return -1;
}

TrainConfig text_config(const std::string& text) {
  TrainConfig c;
  c.task = "text";
  c.text = text;
  c.model.causal = true;
  c.model.length = 8;
  c.model.width = 16;
  c.batch = 16;
  c.eval_size = 10000;
  c.optimizer.lr = 2e-2;
  c.seed = 3;
  return c;
}

}  // namespace

TEST_CASE("text task: the vocabulary and the encoding", "[train][text]") {
  CHECK(kTextVocab == 39);
  CHECK(std::set<char>(kVocabulary.begin(), kVocabulary.end()).size() == kVocabulary.size());
  CHECK(kVocabulary[std::size_t(kOtherToken)] == '#');
  CHECK(task_vocab("text", 8) == kTextVocab);
  // Case folded, whitespace runs one space, digits, '_' and a 2-byte UTF-8 character: '#'.
  CHECK(decode_text(encode_text("Hello,  World!\n\t2x_\xC3\xA9(ok)?")) == "hello, world! #x##(ok)?");
  CHECK(encode_text("").empty());
  CHECK(decode_text(encode_text("\n\n")) == " ");
  const std::string all = "The 'Devil's' Dictionary; \"A-Z\": 1911!";
  const std::string once = decode_text(encode_text(all));
  CHECK(once == "the 'devil's' dictionary; \"a-z\": ####!");
  CHECK(decode_text(encode_text(once)) == once);  // the encoded text encodes to itself
  for (int t : encode_text(all)) CHECK((t >= 0 && t < kTextVocab));
}

TEST_CASE("text task: held-out split and windows", "[train][text]") {
  CHECK(heldout_start(1000) == 900);
  CHECK(heldout_start(1009) == 909);
  CHECK(heldout_windows(1000, 8) == 12);  // (100 - 1) / 8: each window needs one more
  CHECK(heldout_windows(1000, 99) == 1);
  CHECK(heldout_windows(1000, 100) == 0);

  std::string letters;  // random letters: a window of 12 occurs once (27^12 >> 3000)
  detail::Rng lr(5);
  for (int i = 0; i < 3000; ++i) letters += char('a' + int(lr.next_u64() % 26));
  const std::vector<int> c = encode_text(letters);
  const std::size_t split = heldout_start(c.size());
  const int L = 12;
  detail::Rng r1(4), r2(4), r3(5);
  const Batch a = make_batch("text", 64, L, r1, &c), b = make_batch("text", 64, L, r2, &c);
  const Batch d = make_batch("text", 64, L, r3, &c);
  CHECK(a.tokens == b.tokens);  // seeded
  CHECK(a.tokens != d.tokens);
  for (int w = 0; w < a.B; ++w) {
    const int* tok = a.tokens.data() + w * L;
    const int* tgt = a.targets.data() + w * L;
    for (int i = 0; i + 1 < L; ++i) CHECK(tgt[i] == tok[i + 1]);  // every position predicts the next
    // A training window (and its last target) lies inside the training part: its offset
    // s has s + L <= split - 1.
    const long s = find_window(c, tok, L);
    REQUIRE(s >= 0);
    CHECK(std::size_t(s) + std::size_t(L) <= split - 1);
    CHECK(tgt[L - 1] == c[std::size_t(s) + std::size_t(L)]);
  }
  // Held-out: window k is corpus[split + kL ..], the same for every rng.
  const int W = heldout_windows(c.size(), L);
  detail::Rng any(123);
  const Batch h = make_batch("text", W, L, any, &c, true);
  for (int k = 0; k < W; ++k)
    for (int i = 0; i < L; ++i) {
      const std::size_t at = split + std::size_t(k) * std::size_t(L) + std::size_t(i);
      CHECK(h.tokens[std::size_t(k * L + i)] == c[at]);
      CHECK(h.targets[std::size_t(k * L + i)] == c[at + 1]);
    }
  CHECK_THROWS_WITH(make_batch("text", W + 1, L, any, &c, true),
                    Contains("eval_size: task 'text' has " + std::to_string(W) + " held-out windows"));
  CHECK_THROWS_WITH(make_batch("text", 4, L, any), Contains("text: task 'text' needs a text of at least 140"));
}

TEST_CASE("text task: the trainer's held-out set and rejected settings", "[train][text]") {
  const std::string text = chain_text(3000, 5);
  Trainer<float> t(text_config(text));
  const int W = heldout_windows(encode_text(text).size(), 8);
  CHECK(t.heldout().B == W);  // eval_size 10000 > W: every held-out window
  CHECK(t.corpus() == encode_text(text));
  TrainConfig few = text_config(text);
  few.eval_size = 5;
  CHECK(Trainer<float>(few).heldout().B == 5);

  auto bad = [&](auto edit, const std::string& needle) {
    TrainConfig c = text_config(text);
    edit(c);
    CHECK_THROWS_WITH(Trainer<float>(c), Contains(needle));
  };
  bad([](TrainConfig& c) { c.model.causal = false; }, "mask: task 'text' predicts the next token at every position and needs the causal mask");
  bad([](TrainConfig& c) { c.text.clear(); }, "text: task 'text' needs a text of at least 100 characters (after encoding) at length 8, got 0");
  bad([](TrainConfig& c) { c.text = std::string(99, 'a'); }, "got 99");
  bad([](TrainConfig& c) { c.task = "reverse"; }, "text: task 'reverse' reads no text; leave text empty");
}

TEST_CASE("text task: a short run beats the unigram baseline", "[train][text][run]") {
  const std::string text = chain_text(6000, 7);
  Trainer<float> t(text_config(text));
  const UnigramBaseline u = unigram_baseline(t.corpus(), 8);
  const double before = t.evaluate().loss;
  t.step(200);
  REQUIRE_FALSE(t.state().diverged);
  const EvalResult e = t.evaluate();
  INFO("held-out loss " << before << " -> " << e.loss << " (unigram " << u.loss << "), accuracy "
                        << e.token_accuracy << " (unigram " << u.accuracy << ")");
  CHECK(e.loss < u.loss - 0.3);
  CHECK(e.token_accuracy > u.accuracy + 0.3);  // the chain's next letter is 7/8 predictable
  // The attention is causal: nothing above the diagonal.
  const Mat<float> A = t.attention(0, 0, 0);
  for (int i = 0; i < 8; ++i)
    for (int j = i + 1; j < 8; ++j) CHECK(A(i, j) == 0.0f);
}

TEST_CASE("text task: model gradients on a text batch match finite differences", "[train][text][grad]") {
  ModelConfig c;
  c.vocab = kTextVocab;
  c.length = 5;
  c.width = 4;
  c.heads = 2;
  c.causal = true;
  const std::vector<int> corpus = encode_text(chain_text(200, 2));
  detail::Rng rng(8);
  const Batch b = make_batch("text", 2, c.length, rng, &corpus);
  ModelParams<double> w = init_model<double>(c, 4);
  const auto mha = mha_config<double>(c, b.B);
  auto loss_at = [&](const ModelParams<double>& p) {
    const auto f = model_forward<double>(c, p, b.tokens, b.B, mha);
    return model_loss<double>(c, p, b.tokens, b.targets, b.B, mha, f, false).loss;
  };
  const auto f = model_forward<double>(c, w, b.tokens, b.B, mha);
  ModelLoss<double> l = model_loss<double>(c, w, b.tokens, b.targets, b.B, mha, f, true);
  CHECK(l.answers == b.B * c.length);  // every position is an answer
  ModelParams<double> probe = w;
  for_each_tensor<double>(probe, l.grads, [&](const std::string& name, auto& x, auto& g) {
    using M = std::decay_t<decltype(x)>;
    M fd = M::Zero(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      const double orig = x.data()[i], h = 1e-6 * std::max(1.0, std::abs(orig));
      x.data()[i] = orig + h;
      const double up = loss_at(probe);
      x.data()[i] = orig - h;
      const double down = loss_at(probe);
      x.data()[i] = orig;
      fd.data()[i] = (up - down) / (2 * h);
    }
    CHECK_GRAD(name, g, fd);
  });
}
