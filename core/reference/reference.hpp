// core/reference/reference.hpp — the plain-loop oracle for tests (never used by the
// library). Written independently of the fast core: its own loops for every scoring
// function, mask rule, bias and normalizer (sparsemax by bisection instead of
// sorting, top-k by repeated selection), and templated on T so that
//   reference<double>  = the oracle,
//   reference<float>   = "naive float32 math" for the tolerance rule in tests.
// Only the seeded noise generator is shared with the core (it is data, not math).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "qkscope/attention.hpp"
#include "reference/t5.hpp"

namespace qkscope::reference {

template <class T>
struct Result {
  Mat<T> raw_scores, scores, masked_scores, weights, output;
  Vec<T> logsumexp;
};

template <class T>
T raw_score(const std::string& score, const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p,
            Eigen::Index i, Eigen::Index j) {
  const Eigen::Index dq = Q.cols(), dk = K.cols();
  T s = 0;
  if (score == "dot" || score == "scaled_dot") {
    for (Eigen::Index c = 0; c < dq; ++c) s += Q(i, c) * K(j, c);
  } else if (score == "cosine") {
    T nq = 0, nk = 0;
    for (Eigen::Index c = 0; c < dq; ++c) nq += Q(i, c) * Q(i, c);
    for (Eigen::Index c = 0; c < dk; ++c) nk += K(j, c) * K(j, c);
    nq = std::max(std::sqrt(nq), T(1e-8));
    nk = std::max(std::sqrt(nk), T(1e-8));
    for (Eigen::Index c = 0; c < dq; ++c) s += (Q(i, c) / nq) * (K(j, c) / nk);
  } else if (score == "bilinear") {
    for (Eigen::Index a = 0; a < dq; ++a)
      for (Eigen::Index b = 0; b < dk; ++b) s += Q(i, a) * p.W(a, b) * K(j, b);
  } else if (score == "additive") {
    for (Eigen::Index h = 0; h < p.v.size(); ++h) {
      T pre = p.b.size() ? p.b(h) : T(0);
      for (Eigen::Index c = 0; c < dq; ++c) pre += p.W_q(h, c) * Q(i, c);
      for (Eigen::Index c = 0; c < dk; ++c) pre += p.W_k(h, c) * K(j, c);
      s += p.v(h) * std::tanh(pre);
    }
  } else if (score == "linear_concat") {
    for (Eigen::Index c = 0; c < dq; ++c) s += p.w(c) * Q(i, c);
    for (Eigen::Index c = 0; c < dk; ++c) s += p.w(dq + c) * K(j, c);
  } else if (score == "neg_sq_euclidean") {  // Kim, Papamakarios & Mnih 2021: -|q - k|^2
    for (Eigen::Index c = 0; c < dq; ++c) s -= (Q(i, c) - K(j, c)) * (Q(i, c) - K(j, c));
  } else {
    throw std::invalid_argument("reference: unknown score " + score);
  }
  return s;
}

template <class T>
double default_scale(const std::string& score, Eigen::Index d_k) {
  return score == "scaled_dot" || score == "neg_sq_euclidean" ? 1.0 / std::sqrt(double(d_k)) : 1.0;
}

inline bool allowed(const MaskSpec& m, Eigen::Index L_q, Eigen::Index L_k, Eigen::Index i,
                    Eigen::Index j) {
  if (m.key_length && j >= *m.key_length) return false;
  const Eigen::Index diag = m.alignment == CausalAlignment::bottom_right ? i + (L_k - L_q) : i;
  if (m.causal && j > diag) return false;
  if (m.window_left && j < diag - *m.window_left) return false;
  if (m.window_right && j > diag + *m.window_right) return false;
  if (m.keep.size() && !m.keep(i, j)) return false;
  return true;
}

/// p over the entries with finite z: the normalizer's definition, spelled out.
template <class T>
std::vector<T> normalize(const std::string& name, std::vector<T> z, T tau, const NormalizerOptions& o,
                         const T* noise) {
  const std::size_t n = z.size();
  const T ninf = -std::numeric_limits<T>::infinity();
  std::vector<T> p(n, T(0));
  std::vector<std::size_t> valid;
  for (std::size_t j = 0; j < n; ++j)
    if (z[j] > ninf) valid.push_back(j);
  if (valid.empty()) return p;
  auto argmax = [&](const std::vector<T>& y) {
    std::size_t best = valid[0];
    for (auto j : valid) if (y[j] > y[best]) best = j;
    return best;
  };
  auto softmax_on = [&](const std::vector<T>& y, const std::vector<std::size_t>& set) {
    T m = ninf;
    for (auto j : set) m = std::max(m, y[j]);
    T sum = 0;
    for (auto j : set) sum += std::exp((y[j] - m) / tau);
    for (auto j : set) p[j] = std::exp((y[j] - m) / tau) / sum;
  };
  if (name == "softmax") {
    softmax_on(z, valid);
  } else if (name == "hard") {
    p[argmax(z)] = 1;
  } else if (name == "gumbel_softmax") {
    for (auto j : valid) z[j] += noise[j];
    if (o.get<norm::GumbelSoftmax>().hard) p[argmax(z)] = 1;
    else softmax_on(z, valid);
  } else if (name == "topk_softmax") {
    std::vector<std::size_t> chosen;
    std::vector<char> taken(n, 0);
    const std::size_t k = std::min<std::size_t>(valid.size(), std::size_t(o.get<norm::TopKSoftmax>().top_k));
    for (std::size_t t = 0; t < k; ++t) {  // repeated selection: lowest index wins ties
      std::size_t best = n;
      for (auto j : valid) if (!taken[j] && (best == n || z[j] > z[best])) best = j;
      taken[best] = 1;
      chosen.push_back(best);
    }
    softmax_on(z, chosen);
  } else if (name == "sparsemax") {
    // Bisection on the threshold t with sum_j max(y_j - t, 0) = 1, y = z / tau shifted.
    T m = ninf;
    for (auto j : valid) m = std::max(m, z[j]);
    std::vector<T> y(n);
    for (auto j : valid) y[j] = (z[j] - m) / tau;
    T lo = -1, hi = 0;  // max y = 0: t in [-1, 0]
    for (int it = 0; it < 200; ++it) {
      const T t = (lo + hi) / 2;
      T s = 0;
      for (auto j : valid) s += std::max(T(0), y[j] - t);
      (s > 1 ? lo : hi) = t;
    }
    // Exact finish: the support is known, solve for t in closed form.
    T sum = 0;
    int cnt = 0;
    for (auto j : valid) if (y[j] > lo) { sum += y[j]; ++cnt; }
    const T t = (sum - 1) / T(cnt);
    for (auto j : valid) p[j] = std::max(T(0), y[j] - t);
  } else {
    throw std::invalid_argument("reference: unknown normalizer " + name);
  }
  return p;
}

/// The whole pipeline in plain loops. Same arguments as qkscope::attention_forward.
template <class T>
Result<T> attention(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V, const ScoreParams<T>& p,
                    const AttentionConfig<T>& cfg) {
  const Eigen::Index L_q = Q.rows(), L_k = K.rows(), d_v = V.cols();
  const T ninf = -std::numeric_limits<T>::infinity();
  const double scale = cfg.scale.value_or(default_scale<T>(cfg.score, K.cols()));
  const Eigen::Index offset = cfg.mask.alignment == CausalAlignment::bottom_right ? L_k - L_q : 0;
  Mat<T> noise;
  if (cfg.normalizer == "gumbel_softmax") {
    detail::Rng rng(cfg.norm_options.template get<norm::GumbelSoftmax>().seed);
    noise.resize(L_q, L_k);
    for (Eigen::Index i = 0; i < L_q; ++i)
      for (Eigen::Index j = 0; j < L_k; ++j) noise(i, j) = T(rng.gumbel());
  }
  Result<T> r;
  r.raw_scores.resize(L_q, L_k);
  r.scores.resize(L_q, L_k);
  r.masked_scores.resize(L_q, L_k);
  r.weights.resize(L_q, L_k);
  r.output = Mat<T>::Zero(L_q, d_v);
  r.logsumexp.resize(L_q);
  const auto& b = cfg.bias;
  const Eigen::Index R = b.relative.size() / 2;
  for (Eigen::Index i = 0; i < L_q; ++i) {
    std::vector<T> z(L_k);
    for (Eigen::Index j = 0; j < L_k; ++j) {
      const T raw = raw_score(cfg.score, Q, K, p, i, j);
      T s = T(scale) * raw;
      if (b.softcap) s = T(*b.softcap) * std::tanh(s / T(*b.softcap));
      if (b.alibi_slope) s -= T(*b.alibi_slope) * T(std::abs(j - i - offset));
      if (b.relative.size()) s += b.relative(std::clamp<Eigen::Index>(j - i - offset, -R, R) + R);
      if (b.t5) s += b.t5_table(t5_bucket(j - i - offset, b.t5->bidirectional, b.t5->num_buckets, b.t5->max_distance));
      if (b.dense.size()) s += b.dense(i, j);
      r.raw_scores(i, j) = raw;
      r.scores(i, j) = s;
      z[j] = allowed(cfg.mask, L_q, L_k, i, j) ? s : ninf;
      r.masked_scores(i, j) = z[j];
    }
    const auto w = normalize<T>(cfg.normalizer, z, T(cfg.temperature), cfg.norm_options,
                                noise.size() ? &noise(i, 0) : nullptr);
    T m = ninf;
    for (auto x : z) m = std::max(m, x);
    T sum = 0;
    for (auto x : z) if (x > ninf) sum += std::exp((x - m) / T(cfg.temperature));
    r.logsumexp(i) = m > ninf ? m / T(cfg.temperature) + std::log(sum) : ninf;
    for (Eigen::Index j = 0; j < L_k; ++j) {
      r.weights(i, j) = w[j];
      for (Eigen::Index c = 0; c < d_v; ++c) r.output(i, c) += w[j] * V(j, c);
    }
  }
  return r;
}

}  // namespace qkscope::reference
