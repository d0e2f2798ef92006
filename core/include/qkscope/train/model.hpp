// qkscope/train/model.hpp — a tiny trainable attention-only transformer:
//   X_0     = E[tokens] + P[positions]                           (B*L, d)
//   X_{l+1} = X_l + MultiHead_l(X_l, X_l)                        l = 0 .. layers-1
//   logits  = X_layers W_out + 1 b_out^T                         (B*L, V)
//   loss    = mean over answer positions of -log softmax(logits)[target]
// Token and learned position embeddings (Vaswani et al. 2017 §3.4; GPT, Radford et al.
// 2018), residual connections around each attention layer (He et al. 2016; Vaswani et al.
// 2017 §3.1), no feed-forward block and no layer norm: the model is attention only, so
// whatever it learns goes through the scoring function under study (as in Elhage et al.
// 2021's attention-only transformers). MultiHead is multi_head_forward/backward
// (mha/), whose per-head gradients are the core's attention_backward: no attention math
// here. Head width d_k = d_v = d / heads; W_O maps back to d.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/mha/multi_head.hpp"
#include "qkscope/norm/registry.hpp"
#include "qkscope/score/registry.hpp"

namespace qkscope::train {

/// Architecture and attention settings of the model.
struct ModelConfig {
  int vocab = 11;        // V: token and output vocabulary size, >= 2
  int length = 12;       // L: sequence length (positions embedded), >= 1
  int width = 32;        // d: model width, a multiple of heads
  int heads = 1;         // H
  int layers = 1;        // attention layers, >= 1
  std::string score = "scaled_dot";   // scoring function (score/registry.hpp)
  std::string normalizer = "softmax"; // normalizer (norm/registry.hpp)
  bool causal = false;                // mask: none (false) or causal top-left (true)
  /// Each normalizer's options (e.g. norm_options.get<norm::GumbelSoftmax>().hard). A
  /// sampling normalizer's seed is replaced per step by the trainer (train/trainer.hpp).
  NormalizerOptions norm_options;
};

/// Every learnable tensor. Shapes: E (V, d), P (L, d), per layer W_Q, W_K, W_V (d, d),
/// W_O (d, d) and H score_params (those of `score`, d_k = d / H), W_out (d, V), b_out (V).
template <class T>
struct ModelParams {
  Mat<T> E, P;
  std::vector<MultiHeadWeights<T>> layers;
  Mat<T> W_out;
  Vec<T> b_out;
};

/// Calls fn(name, a, b) for every tensor of `a` and the matching tensor of `b` (same
/// structure; b's empty tensors are resized to zeros of a's shape first). Order fixed.
template <class T, class A, class B, class Fn>
void for_each_tensor(A& a, B& b, Fn&& fn) {
  auto one = [&](const std::string& name, auto& x, auto& y) {
    if (!x.size()) return;
    if (y.size() != x.size()) y.setZero(x.rows(), x.cols());
    fn(name, x, y);
  };
  one("E", a.E, b.E);
  one("P", a.P, b.P);
  b.layers.resize(a.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    auto &x = a.layers[l], &y = b.layers[l];
    const std::string p = "layers[" + std::to_string(l) + "].";
    one(p + "W_Q", x.W_Q, y.W_Q);
    one(p + "W_K", x.W_K, y.W_K);
    one(p + "W_V", x.W_V, y.W_V);
    one(p + "W_O", x.W_O, y.W_O);
    y.score_params.resize(x.score_params.size());
    for (std::size_t h = 0; h < x.score_params.size(); ++h) {
      auto &s = x.score_params[h], &t = y.score_params[h];
      const std::string q = p + "score_params[" + std::to_string(h) + "].";
      one(q + "W", s.W, t.W);
      one(q + "W_q", s.W_q, t.W_q);
      one(q + "W_k", s.W_k, t.W_k);
      one(q + "v", s.v, t.v);
      one(q + "b", s.b, t.b);
      one(q + "w", s.w, t.w);
    }
  }
  one("W_out", a.W_out, b.W_out);
  one("b_out", a.b_out, b.b_out);
}

/// Validates a ModelConfig; std::invalid_argument names the field and its value.
inline void validate(const ModelConfig& c) {
  using detail::require;
  require(c.vocab >= 2, "vocab must be >= 2, got " + std::to_string(c.vocab));
  require(c.length >= 1 && c.length <= 4096, "length must be in [1, 4096], got " + std::to_string(c.length));
  require(c.heads >= 1 && c.heads <= 64, "heads must be in [1, 64], got " + std::to_string(c.heads));
  require(c.width >= 1 && c.width <= 1024, "width must be in [1, 1024], got " + std::to_string(c.width));
  require(c.width % c.heads == 0, "width (" + std::to_string(c.width) + ") must be a multiple of heads (" +
                                      std::to_string(c.heads) + ")");
  require(c.layers >= 1 && c.layers <= 4, "layers must be in [1, 4], got " + std::to_string(c.layers));
  visit_score(c.score, [](auto) {});
  visit_normalizer(c.normalizer, [&](auto n) {
    norm::validate_options(decltype(n)::name, c.norm_options.template get<decltype(n)>());
  });
}

/// The multi-head settings of every layer: self-attention, temperature 1.
template <class T>
MultiHeadConfig<T> mha_config(const ModelConfig& c, int batch) {
  MultiHeadConfig<T> m;
  m.batch = batch;
  m.heads = c.heads;
  m.d_k = m.d_v = c.width / c.heads;
  m.attention.score = c.score;
  m.attention.normalizer = c.normalizer;
  m.attention.mask.causal = c.causal;
  m.attention.norm_options = c.norm_options;
  return m;
}

/// Seeded initial parameters: E, P ~ N(0, 1); W_Q, W_K, W_V, W_O, W_out ~ N(0, 1/d)
/// (fan-in scaling, LeCun et al. 1998); b_out = 0; score parameters from the scoring
/// function's own init (init_params, seed + 1000 l + h). Same values on every platform.
template <class T>
ModelParams<T> init_model(const ModelConfig& c, std::uint64_t seed) {
  validate(c);
  detail::Rng rng(seed);
  const double sd = 1.0 / std::sqrt(double(c.width));
  auto normal = [&](Eigen::Index r, Eigen::Index k, double s) {
    Mat<T> m(r, k);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = T(s * rng.normal());
    return m;
  };
  ModelParams<T> p;
  p.E = normal(c.vocab, c.width, 1.0);
  p.P = normal(c.length, c.width, 1.0);
  const Eigen::Index d_k = c.width / c.heads;
  for (int l = 0; l < c.layers; ++l) {
    MultiHeadWeights<T> w;
    w.W_Q = normal(c.width, c.width, sd);
    w.W_K = normal(c.width, c.width, sd);
    w.W_V = normal(c.width, c.width, sd);
    w.W_O = normal(c.width, c.width, sd);
    for (int h = 0; h < c.heads; ++h)
      w.score_params.push_back(init_params<T>(c.score, d_k, d_k, d_k, seed + 1000u * std::uint64_t(l) + std::uint64_t(h) + 1));
    p.layers.push_back(std::move(w));
  }
  p.W_out = normal(c.width, c.vocab, sd);
  p.b_out = Vec<T>::Zero(c.vocab);
  return p;
}

/// What the backward pass needs from a forward pass, and the attention weights.
template <class T>
struct ModelForward {
  std::vector<Mat<T>> X;                      // X_0 .. X_layers, each (B*L, d)
  std::vector<MultiHeadResult<T>> attention;  // one per layer (heads' weights inside)
  Mat<T> logits;                              // (B*L, V)
};

/// Loss, accuracy counts and (optionally) the gradients of one batch.
template <class T>
struct ModelLoss {
  double loss = 0;          // mean cross-entropy over answer positions, nats
  int answers = 0;          // answer positions in the batch
  int correct = 0;          // answer positions whose argmax logit is the target
  int sequences_exact = 0;  // sequences with every answer position correct
  ModelParams<T> grads;     // dloss/dparams (empty when not requested)
};

/// Forward pass on tokens (B*L entries in [0, V)). `mha` from mha_config (the trainer
/// sets the per-step noise seed there). Throws std::invalid_argument for tokens out of
/// range and every error of multi_head_forward (non-finite parameters included).
template <class T>
ModelForward<T> model_forward(const ModelConfig& c, const ModelParams<T>& p, const std::vector<int>& tokens,
                              int B, const MultiHeadConfig<T>& mha) {
  const int L = c.length;
  detail::require(B >= 1 && tokens.size() == std::size_t(B) * std::size_t(L),
                  "tokens must have batch * length = " + std::to_string(B) + " * " + std::to_string(L) +
                      " entries, got " + std::to_string(tokens.size()));
  ModelForward<T> f;
  Mat<T> X(B * L, c.width);
  for (int r = 0; r < B * L; ++r) {
    const int t = tokens[std::size_t(r)];
    detail::require(t >= 0 && t < c.vocab, [&] {  // lazy: per token row
      return "tokens[" + std::to_string(r) + "] must be in [0, vocab = " + std::to_string(c.vocab) + "), got " +
             std::to_string(t);
    });
    X.row(r) = p.E.row(t) + p.P.row(r % L);
  }
  f.X.push_back(std::move(X));
  for (int l = 0; l < c.layers; ++l) {
    const Mat<T>& Xl = f.X.back();
    f.attention.push_back(multi_head_forward<T>(Xl, Xl, p.layers[std::size_t(l)], mha));
    f.X.push_back(Xl + f.attention.back().output);
  }
  f.logits = f.X.back() * p.W_out;
  f.logits.rowwise() += p.b_out.transpose();
  return f;
}

/// Cross-entropy of `f` against targets (-1 = no answer), with the gradients of every
/// parameter when `with_grads`: dlogits = (softmax - onehot) / answers, then back through
/// the read-out, each layer's residual and multi_head_backward (dX = dX + dX_q + dX_kv for
/// self-attention), and the embeddings (scatter-add). Loss in nats, log-sum-exp stable.
template <class T>
ModelLoss<T> model_loss(const ModelConfig& c, const ModelParams<T>& p, const std::vector<int>& tokens,
                        const std::vector<int>& targets, int B, const MultiHeadConfig<T>& mha,
                        const ModelForward<T>& f, bool with_grads) {
  const int L = c.length, N = B * L;
  detail::require(targets.size() == std::size_t(N), "targets must have batch * length = " + std::to_string(N) +
                                                        " entries, got " + std::to_string(targets.size()));
  ModelLoss<T> out;
  for (int r = 0; r < N; ++r) out.answers += targets[std::size_t(r)] >= 0;
  detail::require(out.answers > 0, "targets: the batch has no answer position");
  Mat<T> dlogits = Mat<T>::Zero(N, c.vocab);
  double total = 0;
  std::vector<char> seq_ok(std::size_t(B), 1);
  for (int r = 0; r < N; ++r) {
    const int y = targets[std::size_t(r)];
    if (y < 0) continue;
    detail::require(y < c.vocab, [&] {
      return "targets[" + std::to_string(r) + "] must be < vocab = " + std::to_string(c.vocab) + ", got " +
             std::to_string(y);
    });
    const auto z = f.logits.row(r);
    Eigen::Index best = 0;
    const double m = double(z.maxCoeff(&best));
    double s = 0;
    for (int k = 0; k < c.vocab; ++k) s += std::exp(double(z(k)) - m);
    total += m + std::log(s) - double(z(y));
    if (best == y) ++out.correct;
    else seq_ok[std::size_t(r / L)] = 0;
    if (with_grads)
      for (int k = 0; k < c.vocab; ++k)
        dlogits(r, k) = T((std::exp(double(z(k)) - m) / s - (k == y ? 1.0 : 0.0)) / out.answers);
  }
  out.loss = total / out.answers;
  for (char ok : seq_ok) out.sequences_exact += ok;
  if (!with_grads) return out;

  ModelParams<T>& g = out.grads;
  g.W_out = f.X.back().transpose() * dlogits;
  g.b_out = dlogits.colwise().sum().transpose();
  Mat<T> dX = dlogits * p.W_out.transpose();
  g.layers.resize(p.layers.size());
  for (int l = c.layers - 1; l >= 0; --l) {
    const Mat<T>& Xl = f.X[std::size_t(l)];
    MultiHeadGrads<T> mg = multi_head_backward<T>(Xl, Xl, p.layers[std::size_t(l)], mha,
                                                  f.attention[std::size_t(l)], dX);
    auto& gl = g.layers[std::size_t(l)];
    gl.W_Q = std::move(mg.dW_Q);
    gl.W_K = std::move(mg.dW_K);
    gl.W_V = std::move(mg.dW_V);
    gl.W_O = std::move(mg.dW_O);
    gl.score_params = std::move(mg.dscore_params);
    dX += mg.dX_q + mg.dX_kv;  // residual + both self-attention inputs
  }
  g.E = Mat<T>::Zero(c.vocab, c.width);
  g.P = Mat<T>::Zero(L, c.width);
  for (int r = 0; r < N; ++r) {
    g.E.row(tokens[std::size_t(r)]) += dX.row(r);
    g.P.row(r % L) += dX.row(r);
  }
  return out;
}

}  // namespace qkscope::train
