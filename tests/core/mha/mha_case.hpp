// tests/core/mha/mha_case.hpp — one multi-head attention problem in double (sizes, random
// inputs and weights, settings) and the independent plain-loop reference it is checked
// against: explicit loops for the projections, per-head masked softmax attention and W_O.
// Used by the test_mha_*.cpp files of this folder.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

namespace qktest::mha {

using namespace qkscope;

inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct Dims {
  Eigen::Index B, L_q, L_k, d_model, d_model_kv, H, H_kv, d_k, d_v, d_out;
};

/// One multi-head problem in double: sizes, inputs, weights and settings.
struct Case {
  Dims d;
  std::string score;
  MatrixD X_q, X_kv;
  MultiHeadWeights<double> w;
  std::vector<Eigen::Index> key_lengths;  // empty: every key valid
  std::vector<double> slopes;             // ALiBi slope per head; empty: off
  bool causal_bottom_right = false;
};

/// Random inputs and weights; self-attention (X_kv = X_q) when `self` is set.
inline Case make_case(const Dims& d, const std::string& score, std::uint64_t seed, bool self = false) {
  detail::Rng rng(seed);
  Case c{d, score, {}, {}, {}, {}, {}, false};
  c.X_q = qktest::randn(rng, d.B * d.L_q, d.d_model);
  c.X_kv = self ? c.X_q : qktest::randn(rng, d.B * d.L_k, d.d_model_kv);
  c.w.W_Q = qktest::randn(rng, d.d_model, d.H * d.d_k, 1 / std::sqrt(double(d.d_model)));
  c.w.W_K = qktest::randn(rng, d.d_model_kv, d.H_kv * d.d_k, 1 / std::sqrt(double(d.d_model_kv)));
  c.w.W_V = qktest::randn(rng, d.d_model_kv, d.H_kv * d.d_v, 1 / std::sqrt(double(d.d_model_kv)));
  c.w.W_O = qktest::randn(rng, d.H * d.d_v, d.d_out, 1 / std::sqrt(double(d.H * d.d_v)));
  for (Eigen::Index h = 0; h < d.H; ++h) {
    ScoreParams<double> p;
    if (score == "bilinear") p.W = qktest::randn(rng, d.d_k, d.d_k, 0.7);
    if (score == "additive") {
      const Eigen::Index d_h = 3;
      p.W_q = qktest::randn(rng, d_h, d.d_k, 0.7);
      p.W_k = qktest::randn(rng, d_h, d.d_k, 0.7);
      p.v = qktest::randn_vec(rng, d_h);
      p.b = qktest::randn_vec(rng, d_h, 0.3);
    }
    c.w.score_params.push_back(p);
  }
  return c;
}

template <class T>
MultiHeadWeights<T> cast_weights(const MultiHeadWeights<double>& w) {
  MultiHeadWeights<T> o{w.W_Q.cast<T>(), w.W_K.cast<T>(), w.W_V.cast<T>(), w.W_O.cast<T>(), {}};
  for (const auto& p : w.score_params) o.score_params.push_back(p.template cast<T>());
  return o;
}

template <class T>
MultiHeadConfig<T> config_of(const Case& c) {
  MultiHeadConfig<T> m;
  m.batch = c.d.B;
  m.heads = int(c.d.H);
  m.kv_heads = int(c.d.H_kv);
  m.d_k = c.d.d_k;
  m.d_v = c.d.d_v;
  m.attention.score = c.score;
  if (c.causal_bottom_right) {
    m.attention.mask.causal = true;
    m.attention.mask.alignment = CausalAlignment::bottom_right;
  }
  m.key_lengths = c.key_lengths;
  m.alibi = !c.slopes.empty();
  return m;
}

template <class T>
struct RefOut {
  Mat<T> output;                 // (B*L_q, d_out)
  std::vector<Mat<T>> weights;   // index b*H + h, (L_q, L_k)
};

/// X W by explicit loops.
template <class T>
Mat<T> loop_matmul(const Mat<T>& X, const Mat<T>& W) {
  Mat<T> P = Mat<T>::Zero(X.rows(), W.cols());
  for (Eigen::Index r = 0; r < X.rows(); ++r)
    for (Eigen::Index col = 0; col < W.cols(); ++col)
      for (Eigen::Index m = 0; m < X.cols(); ++m) P(r, col) += X(r, m) * W(m, col);
  return P;
}

/// The plain-loop multi-head reference, in precision T (double: oracle; float: naive).
/// Scores: scaled_dot q.k / sqrt(d_k) or bilinear q^T W k; ALiBi -m|j - (i + o)|;
/// mask: j < key_length and (causal) j <= i + o; softmax; fully masked row -> 0.
template <class T>
RefOut<T> reference_mha(const Case& c) {
  const Dims& d = c.d;
  const Mat<T> Q = loop_matmul<T>(c.X_q.cast<T>(), c.w.W_Q.cast<T>());
  const Mat<T> K = loop_matmul<T>(c.X_kv.cast<T>(), c.w.W_K.cast<T>());
  const Mat<T> V = loop_matmul<T>(c.X_kv.cast<T>(), c.w.W_V.cast<T>());
  const Eigen::Index group = d.H / d.H_kv, off = c.causal_bottom_right ? d.L_k - d.L_q : 0;
  Mat<T> concat = Mat<T>::Zero(d.B * d.L_q, d.H * d.d_v);
  RefOut<T> r;
  for (Eigen::Index b = 0; b < d.B; ++b)
    for (Eigen::Index h = 0; h < d.H; ++h) {
      const Eigen::Index g = h / group;
      const Eigen::Index len = c.key_lengths.empty() ? d.L_k : c.key_lengths[std::size_t(b)];
      const Mat<T> W = c.score == "bilinear" ? c.w.score_params[std::size_t(h)].W.cast<T>() : Mat<T>();
      Mat<T> P = Mat<T>::Zero(d.L_q, d.L_k);
      for (Eigen::Index i = 0; i < d.L_q; ++i) {
        std::vector<T> z(std::size_t(d.L_k), T(-kInf));
        T mx = T(-kInf);
        for (Eigen::Index j = 0; j < d.L_k; ++j) {
          if (j >= len || (c.causal_bottom_right && j > i + off)) continue;
          const auto q = [&](Eigen::Index a) { return Q(b * d.L_q + i, h * d.d_k + a); };
          const auto k = [&](Eigen::Index a) { return K(b * d.L_k + j, g * d.d_k + a); };
          T s = 0;
          if (c.score == "scaled_dot") {
            for (Eigen::Index a = 0; a < d.d_k; ++a) s += q(a) * k(a);
            s *= T(1 / std::sqrt(double(d.d_k)));
          } else {
            REQUIRE(c.score == "bilinear");
            for (Eigen::Index a = 0; a < d.d_k; ++a)
              for (Eigen::Index e = 0; e < d.d_k; ++e) s += q(a) * W(a, e) * k(e);
          }
          if (!c.slopes.empty()) s -= T(c.slopes[std::size_t(h)]) * T(std::abs(j - (i + off)));
          z[std::size_t(j)] = s;
          mx = std::max(mx, s);
        }
        if (mx == T(-kInf)) continue;  // no visible key: weights and output stay 0
        T sum = 0;
        for (Eigen::Index j = 0; j < d.L_k; ++j) sum += std::exp(z[std::size_t(j)] - mx);
        for (Eigen::Index j = 0; j < d.L_k; ++j) P(i, j) = std::exp(z[std::size_t(j)] - mx) / sum;
        for (Eigen::Index e = 0; e < d.d_v; ++e)
          for (Eigen::Index j = 0; j < d.L_k; ++j)
            concat(b * d.L_q + i, h * d.d_v + e) += P(i, j) * V(b * d.L_k + j, g * d.d_v + e);
      }
      r.weights.push_back(P);
    }
  r.output = loop_matmul<T>(concat, c.w.W_O.cast<T>());
  return r;
}

/// Float fast path vs naive float reference vs double reference (compare.hpp rule):
/// the output and every head's weights.
inline void check_against_reference(const Case& c) {
  const auto ref = reference_mha<double>(c);
  const auto naive = reference_mha<float>(c);
  const auto fast = multi_head_forward<float>(c.X_q.cast<float>(), c.X_kv.cast<float>(),
                                              cast_weights<float>(c.w), config_of<float>(c));
  CHECK_MATCHES_REFERENCE("output", fast.output, naive.output, ref.output);
  for (Eigen::Index b = 0; b < c.d.B; ++b)
    for (Eigen::Index h = 0; h < c.d.H; ++h) {
      const std::size_t k = std::size_t(b * c.d.H + h);
      CHECK_MATCHES_REFERENCE("weights of (b, h) = (" + std::to_string(b) + ", " + std::to_string(h) + ")",
                              fast.head(b, h).weights, naive.weights[k], ref.weights[k]);
    }
}

}  // namespace qktest::mha
