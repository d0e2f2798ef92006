// The training model's gradients (train/model.hpp): every parameter tensor against
// central finite differences of the loss in double, for several scoring functions,
// normalizers, both masks, two layers and two heads.
#include <catch2/catch.hpp>

#include "qkscope/train/model.hpp"
#include "support/gradcheck.hpp"

using namespace qkscope;
using namespace qkscope::train;

namespace {

struct Problem {
  ModelConfig c;
  std::vector<int> tokens, targets;
  int B = 2;
};

Problem make_problem(const std::string& score, const std::string& normalizer, bool causal, std::uint64_t seed) {
  Problem p;
  p.c.vocab = 5;
  p.c.length = 4;
  p.c.width = 4;
  p.c.heads = 2;
  p.c.layers = 2;
  p.c.score = score;
  p.c.normalizer = normalizer;
  p.c.causal = causal;
  p.c.norm_options.get<norm::GumbelSoftmax>().seed = seed;
  detail::Rng rng(seed);
  for (int i = 0; i < p.B * p.c.length; ++i) {
    p.tokens.push_back(int(rng.next_u64() % 5));
    // Answers at positions 1 and 3: position 0 stays out of the loss (causal: only itself).
    p.targets.push_back(i % 2 ? int(rng.next_u64() % 5) : -1);
  }
  return p;
}

double loss_at(const Problem& p, const ModelParams<double>& w) {
  const auto mha = mha_config<double>(p.c, p.B);
  const auto f = model_forward<double>(p.c, w, p.tokens, p.B, mha);
  return model_loss<double>(p.c, w, p.tokens, p.targets, p.B, mha, f, false).loss;
}

void check_all_tensors(const Problem& p, std::uint64_t seed) {
  ModelParams<double> w = init_model<double>(p.c, seed);
  const auto mha = mha_config<double>(p.c, p.B);
  const auto f = model_forward<double>(p.c, w, p.tokens, p.B, mha);
  ModelLoss<double> l = model_loss<double>(p.c, w, p.tokens, p.targets, p.B, mha, f, true);
  REQUIRE(std::isfinite(l.loss));
  int tensors = 0;
  ModelParams<double> probe = w;
  for_each_tensor<double>(probe, l.grads, [&](const std::string& name, auto& x, auto& g) {
    ++tensors;
    using M = std::decay_t<decltype(x)>;
    M fd = M::Zero(x.rows(), x.cols());
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      const double orig = x.data()[i], h = 1e-6 * std::max(1.0, std::abs(orig));
      x.data()[i] = orig + h;
      const double up = loss_at(p, probe);
      x.data()[i] = orig - h;
      const double down = loss_at(p, probe);
      x.data()[i] = orig;
      fd.data()[i] = (up - down) / (2 * h);
    }
    CHECK_GRAD(name, g, fd);
  });
  // E, P, W_out, b_out and 4 weights per layer, plus the score's own parameters.
  CHECK(tensors >= 4 + 4 * p.c.layers);
}

}  // namespace

TEST_CASE("training model: every parameter gradient matches finite differences", "[train][grad]") {
  for (const char* score : {"scaled_dot", "additive", "bilinear", "linear_concat", "neg_sq_euclidean", "cosine"})
    for (bool causal : {false, true}) {
      INFO("score " << score << ", causal " << causal);
      check_all_tensors(make_problem(score, "softmax", causal, 11), 3);
    }
}

TEST_CASE("training model: gradients through other normalizers match finite differences", "[train][grad]") {
  // Soft normalizers whose backward is the exact derivative at a generic point.
  for (const char* n : {"gumbel_softmax", "sparsemax"})
    for (bool causal : {false, true}) {
      INFO("normalizer " << n << ", causal " << causal);
      check_all_tensors(make_problem("scaled_dot", n, causal, 5), 8);
    }
}
