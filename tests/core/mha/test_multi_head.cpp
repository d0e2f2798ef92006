// Multi-head attention (mha/multi_head.hpp) as a specification:
//   - forward against an independent plain-loop reference written here (explicit loops
//     for the projections, per-head masked softmax attention and W_O), under the one
//     tolerance rule: float fast path vs naive float reference vs double reference;
//   - GQA/MQA against MHA with the KV heads repeated explicitly (only in this test);
//   - cross-attention, per-sequence key lengths (0 included), per-head ALiBi slopes;
//   - every gradient against central finite differences of the forward in double;
//   - argument errors name the argument.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "support/compare.hpp"
#include "support/gradcheck.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

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
Case make_case(const Dims& d, const std::string& score, std::uint64_t seed, bool self = false) {
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
void check_against_reference(const Case& c) {
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

/// Central differences of L = sum(G .* f()) w.r.t. every entry of x (changed in place).
template <class M, class F>
M fd_grad(M& x, const F& loss, double h = 1e-6) {
  M g = M::Zero(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    double& xi = x.data()[i];
    const double orig = xi, step = h * std::max(1.0, std::abs(orig));
    xi = orig + step;
    const double up = loss();
    xi = orig - step;
    const double down = loss();
    xi = orig;
    g.data()[i] = (up - down) / (2 * step);
  }
  return g;
}

}  // namespace

TEST_CASE("multi-head attention equals a plain-loop reference for scaled_dot and bilinear scores",
          "[mha]") {
  const Dims dims[] = {
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // everything of size 1
      {2, 4, 4, 8, 8, 4, 4, 3, 2, 5},  // B = 2, odd d_k
      {3, 5, 5, 7, 7, 3, 3, 5, 4, 2},  // odd everything
  };
  for (const char* score : {"scaled_dot", "bilinear"})
    for (const Dims& d : dims)
      for (bool self : {false, true}) {
        INFO("score " << score << ", B=" << d.B << " L=" << d.L_q << " H=" << d.H << " d_k=" << d.d_k
                      << (self ? ", self-attention" : ""));
        check_against_reference(make_case(d, score, 1 + d.H, self));
      }
}

TEST_CASE("GQA (H=4, H_kv=2) and MQA (H_kv=1) equal MHA with the KV heads repeated explicitly",
          "[mha][gqa]") {
  for (Eigen::Index H_kv : {2, 1}) {
    INFO("H = 4, H_kv = " << H_kv);
    const Dims d{2, 3, 5, 6, 4, 4, H_kv, 3, 2, 3};
    Case gqa = make_case(d, "bilinear", 17);
    gqa.key_lengths = {5, 3};
    // The repeated version: head h gets its own copy of KV head h / (H / H_kv).
    Case rep = gqa;
    rep.d.H_kv = d.H;
    const Eigen::Index group = d.H / H_kv;
    rep.w.W_K.resize(d.d_model_kv, d.H * d.d_k);
    rep.w.W_V.resize(d.d_model_kv, d.H * d.d_v);
    for (Eigen::Index h = 0; h < d.H; ++h) {
      rep.w.W_K.middleCols(h * d.d_k, d.d_k) = gqa.w.W_K.middleCols((h / group) * d.d_k, d.d_k);
      rep.w.W_V.middleCols(h * d.d_v, d.d_v) = gqa.w.W_V.middleCols((h / group) * d.d_v, d.d_v);
    }
    // Forward: GQA float vs repeated float vs repeated double, and the loop reference.
    const auto fast = multi_head_forward<float>(gqa.X_q.cast<float>(), gqa.X_kv.cast<float>(),
                                                cast_weights<float>(gqa.w), config_of<float>(gqa));
    const auto rep32 = multi_head_forward<float>(rep.X_q.cast<float>(), rep.X_kv.cast<float>(),
                                                 cast_weights<float>(rep.w), config_of<float>(rep));
    const auto rep64 = multi_head_forward<double>(rep.X_q, rep.X_kv, rep.w, config_of<double>(rep));
    CHECK_MATCHES_REFERENCE("output vs repeated KV", fast.output, rep32.output, rep64.output);
    for (Eigen::Index h = 0; h < d.H; ++h)
      CHECK_MATCHES_REFERENCE("weights of head " + std::to_string(h) + " vs repeated KV",
                              fast.head(1, h).weights, rep32.head(1, h).weights, rep64.head(1, h).weights);
    check_against_reference(gqa);
    CHECK(fast.K.cols() == H_kv * d.d_k);  // K is projected once per KV head

    // Backward: the shared KV head receives the sum over its group of the repeated grads.
    detail::Rng rng(5);
    const MatrixD G = qktest::randn(rng, d.B * d.L_q, d.d_out);
    const auto cg = config_of<double>(gqa), cr = config_of<double>(rep);
    const auto fg = multi_head_forward<double>(gqa.X_q, gqa.X_kv, gqa.w, cg);
    const auto gg = multi_head_backward<double>(gqa.X_q, gqa.X_kv, gqa.w, cg, fg, G);
    const auto gr = multi_head_backward<double>(rep.X_q, rep.X_kv, rep.w, cr, rep64, G);
    MatrixD dW_K = MatrixD::Zero(d.d_model_kv, H_kv * d.d_k), dW_V = MatrixD::Zero(d.d_model_kv, H_kv * d.d_v);
    for (Eigen::Index h = 0; h < d.H; ++h) {
      dW_K.middleCols((h / group) * d.d_k, d.d_k) += gr.dW_K.middleCols(h * d.d_k, d.d_k);
      dW_V.middleCols((h / group) * d.d_v, d.d_v) += gr.dW_V.middleCols(h * d.d_v, d.d_v);
    }
    CHECK_GRAD("dW_K = group sum", gg.dW_K, dW_K);
    CHECK_GRAD("dW_V = group sum", gg.dW_V, dW_V);
    CHECK_GRAD("dX_kv", gg.dX_kv, gr.dX_kv);
    CHECK_GRAD("dX_q", gg.dX_q, gr.dX_q);
    CHECK_GRAD("dW_Q", gg.dW_Q, gr.dW_Q);
    CHECK_GRAD("dW_O", gg.dW_O, gr.dW_O);
    for (Eigen::Index h = 0; h < d.H; ++h)
      CHECK_GRAD("dW (bilinear) of head " + std::to_string(h), gg.dscore_params[std::size_t(h)].W,
                 gr.dscore_params[std::size_t(h)].W);
  }
}

TEST_CASE("cross-attention with L_q != L_k and d_model != d_model_kv matches the reference",
          "[mha][cross]") {
  const Dims dims[] = {
      {2, 3, 6, 5, 4, 2, 2, 3, 3, 4},  // L_q < L_k
      {2, 6, 2, 4, 7, 3, 1, 2, 5, 3},  // L_q > L_k, MQA
      {1, 1, 5, 3, 2, 2, 2, 1, 1, 1},  // one query (decoding)
  };
  for (const char* score : {"scaled_dot", "bilinear"})
    for (const Dims& d : dims)
      for (bool causal : {false, true}) {
        INFO("score " << score << ", L_q=" << d.L_q << " L_k=" << d.L_k << " d_model=" << d.d_model
                      << " d_model_kv=" << d.d_model_kv << (causal ? ", causal bottom-right" : ""));
        Case c = make_case(d, score, 23);
        c.causal_bottom_right = causal;
        check_against_reference(c);
      }
}

TEST_CASE("per-sequence key lengths mask padded keys; key length 0 gives zero output and gradients",
          "[mha][padding]") {
  const Dims d{3, 4, 5, 6, 6, 2, 2, 3, 2, 3};
  Case c = make_case(d, "scaled_dot", 31);
  c.key_lengths = {5, 2, 0};
  check_against_reference(c);

  const auto cfg = config_of<double>(c);
  const auto f = multi_head_forward<double>(c.X_q, c.X_kv, c.w, cfg);
  for (Eigen::Index h = 0; h < d.H; ++h) {
    CHECK(f.head(1, h).weights.rightCols(3).isZero(0));  // keys 2.. of sequence 1 unseen
    CHECK(f.head(2, h).weights.isZero(0));
    CHECK((f.head(2, h).logsumexp.array() == -kInf).all());
    CHECK((f.head(2, h).entropy.array() == 0).all());
  }
  CHECK(f.concat.middleRows(2 * d.L_q, d.L_q).isZero(0));
  CHECK(f.output.middleRows(2 * d.L_q, d.L_q).isZero(0));  // 0 projected by W_O is 0
  CHECK_FALSE(f.output.middleRows(1 * d.L_q, d.L_q).isZero(0));

  detail::Rng rng(8);
  const MatrixD G = qktest::randn(rng, d.B * d.L_q, d.d_out);
  const auto g = multi_head_backward<double>(c.X_q, c.X_kv, c.w, cfg, f, G);
  CHECK(g.dX_q.middleRows(2 * d.L_q, d.L_q).isZero(0));
  CHECK(g.dX_kv.middleRows(2 * d.L_k, d.L_k).isZero(0));
  CHECK(g.dX_kv.middleRows(1 * d.L_k + 2, 3).isZero(0));  // padded keys of sequence 1
  CHECK_FALSE(g.dX_kv.middleRows(1 * d.L_k, 2).isZero(0));
}

TEST_CASE("ALiBi gives head h the slope alibi_slopes(H)[h] (H = 8 and H = 12)", "[mha][alibi]") {
  for (Eigen::Index H : {8, 12}) {
    INFO("H = " << H);
    // Press et al. 2022, §3: H = 8 -> 2^-1 ... 2^-8; H = 12 -> those 8, then every other
    // slope of the H = 16 sequence 2^-0.5, 2^-1, ...: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    std::vector<double> expected;
    for (int h = 0; h < 8; ++h) expected.push_back(std::pow(2.0, -(h + 1)));
    for (int h = 0; H == 12 && h < 4; ++h) expected.push_back(std::pow(2.0, -0.5 - h));
    const auto slopes = alibi_slopes(int(H));
    REQUIRE(slopes.size() == expected.size());
    for (std::size_t h = 0; h < slopes.size(); ++h) CHECK(slopes[h] == Approx(expected[h]).epsilon(1e-15));

    const Dims d{2, 4, 6, 5, 5, H, H == 8 ? 2 : H, 2, 2, 3};
    Case c = make_case(d, "scaled_dot", 41);
    c.slopes = expected;
    check_against_reference(c);
    c.causal_bottom_right = true;
    check_against_reference(c);

    // Per head, ALiBi changes the scores by exactly -m_h |j - (i + o)|.
    const auto with = multi_head_forward<double>(c.X_q, c.X_kv, c.w, config_of<double>(c));
    Case plain = c;
    plain.slopes.clear();
    const auto without = multi_head_forward<double>(c.X_q, c.X_kv, c.w, config_of<double>(plain));
    const Eigen::Index off = d.L_k - d.L_q;
    for (Eigen::Index h = 0; h < H; ++h)
      for (Eigen::Index i = 0; i < d.L_q; ++i)
        for (Eigen::Index j = 0; j < d.L_k; ++j)
          CHECK(with.head(1, h).scores(i, j) - without.head(1, h).scores(i, j) ==
                Approx(-expected[std::size_t(h)] * double(std::abs(j - (i + off)))).margin(1e-12));
  }
}

TEST_CASE("all multi-head gradients match central finite differences in double", "[mha][grad]") {
  const Dims d{2, 3, 4, 5, 3, 4, 2, 3, 2, 3};
  for (const char* score : {"scaled_dot", "bilinear", "additive"}) {
    INFO("score " << score);
    Case c = make_case(d, score, 53);
    c.key_lengths = {4, 2};
    c.slopes = alibi_slopes(int(d.H));
    MultiHeadConfig<double> cfg = config_of<double>(c);
    detail::Rng rng(6);
    cfg.attention.temperature = 0.8;
    cfg.attention.bias.softcap = 4.0;
    cfg.attention.bias.relative = qktest::randn_vec(rng, 5, 0.5);
    cfg.attention.bias.dense = qktest::randn(rng, d.L_q, d.L_k, 0.5);
    const MatrixD G = qktest::randn(rng, d.B * d.L_q, d.d_out);

    const auto f = multi_head_forward<double>(c.X_q, c.X_kv, c.w, cfg);
    const auto g = multi_head_backward<double>(c.X_q, c.X_kv, c.w, cfg, f, G);
    MatrixD X_q = c.X_q, X_kv = c.X_kv;
    MultiHeadWeights<double> w = c.w;
    MultiHeadConfig<double> k = cfg;
    const auto loss = [&] {
      return (multi_head_forward<double>(X_q, X_kv, w, k).output.array() * G.array()).sum();
    };
    CHECK_GRAD("dX_q", g.dX_q, fd_grad(X_q, loss));
    CHECK_GRAD("dX_kv", g.dX_kv, fd_grad(X_kv, loss));
    CHECK_GRAD("dW_Q", g.dW_Q, fd_grad(w.W_Q, loss));
    CHECK_GRAD("dW_K", g.dW_K, fd_grad(w.W_K, loss));
    CHECK_GRAD("dW_V", g.dW_V, fd_grad(w.W_V, loss));
    CHECK_GRAD("dW_O", g.dW_O, fd_grad(w.W_O, loss));
    CHECK_GRAD("d bias.relative", g.drelative, fd_grad(k.attention.bias.relative, loss));
    CHECK_GRAD("d bias.dense", g.ddense, fd_grad(k.attention.bias.dense, loss));
    Eigen::Matrix<double, 1, 1> tau(k.attention.temperature);
    const auto tau_loss = [&] {
      k.attention.temperature = tau(0);
      return loss();
    };
    const Eigen::Matrix<double, 1, 1> dtau(g.dtemperature);
    CHECK_GRAD("dtemperature", dtau, fd_grad(tau, tau_loss));
    k.attention.temperature = cfg.attention.temperature;
    REQUIRE(g.dscore_params.size() == std::size_t(d.H));
    for (std::size_t h = 0; h < std::size_t(d.H); ++h) {
      INFO("head " << h);
      auto& p = w.score_params[h];
      const auto& dp = g.dscore_params[h];
      CHECK(dp.W.size() == p.W.size());
      CHECK(dp.v.size() == p.v.size());
      if (p.W.size()) CHECK_GRAD("dW (bilinear)", dp.W, fd_grad(p.W, loss));
      if (p.W_q.size()) CHECK_GRAD("dW_q (additive)", dp.W_q, fd_grad(p.W_q, loss));
      if (p.W_k.size()) CHECK_GRAD("dW_k (additive)", dp.W_k, fd_grad(p.W_k, loss));
      if (p.v.size()) CHECK_GRAD("dv (additive)", dp.v, fd_grad(p.v, loss));
      if (p.b.size()) CHECK_GRAD("db (additive)", dp.b, fd_grad(p.b, loss));
    }
  }
}

TEST_CASE("self-attention: the gradient w.r.t. the shared input is dX_q + dX_kv", "[mha][grad]") {
  const Dims d{2, 4, 4, 5, 5, 2, 1, 3, 3, 2};
  const Case c = make_case(d, "scaled_dot", 61, /*self=*/true);
  const auto cfg = config_of<double>(c);
  detail::Rng rng(9);
  const MatrixD G = qktest::randn(rng, d.B * d.L_q, d.d_out);
  const auto f = multi_head_forward<double>(c.X_q, c.X_q, c.w, cfg);
  const auto g = multi_head_backward<double>(c.X_q, c.X_q, c.w, cfg, f, G);
  MatrixD X = c.X_q;
  const auto loss = [&] { return (multi_head_forward<double>(X, X, c.w, cfg).output.array() * G.array()).sum(); };
  const MatrixD dX = g.dX_q + g.dX_kv;
  CHECK_GRAD("dX (self)", dX, fd_grad(X, loss));
}

TEST_CASE("multi-head arguments are validated and errors name the argument", "[mha][errors]") {
  const Dims d{2, 3, 4, 5, 3, 4, 2, 3, 2, 3};
  const Case c = make_case(d, "bilinear", 71);
  const auto cfg = config_of<double>(c);
  const auto fwd = [&](const MultiHeadWeights<double>& w, const MultiHeadConfig<double>& m) {
    return multi_head_forward<double>(c.X_q, c.X_kv, w, m);
  };
  using Catch::Contains;
  REQUIRE_NOTHROW(fwd(c.w, cfg));

  SECTION("H % H_kv != 0 names both") {
    auto m = cfg;
    m.heads = 6;
    m.kv_heads = 4;
    CHECK_THROWS_AS(fwd(c.w, m), std::invalid_argument);
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("heads (H = 6)") && Contains("kv_heads (H_kv = 4)"));
  }
  SECTION("wrong weight shapes name the weight and its expected shape") {
    auto w = c.w;
    w.W_Q = MatrixD::Zero(d.d_model, d.H * d.d_k + 1);
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_Q") && Contains("(5, 12)") && Contains("(5, 13)"));
    w = c.w;
    w.W_K = MatrixD::Zero(d.d_model, d.H_kv * d.d_k);  // d_model instead of d_model_kv
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_K") && Contains("(3, 6)"));
    w = c.w;
    w.W_V = MatrixD::Zero(d.d_model_kv, d.H * d.d_v);  // H instead of H_kv heads
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_V") && Contains("(3, 4)"));
    w = c.w;
    w.W_O = MatrixD::Zero(d.H * d.d_k, d.d_out);
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_O") && Contains("8 rows"));
    w = c.w;
    w.score_params.pop_back();
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("score_params") && Contains("H = 4"));
    w = c.w;
    w.score_params[3].W = MatrixD::Zero(2, 2);
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("batch 0, head 3") && Contains("params.W"));
  }
  SECTION("bad key_lengths name key_lengths and the batch index") {
    auto m = cfg;
    m.key_lengths = {4, -1};
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("key_lengths[1]") && Contains("batch index 1"));
    m.key_lengths = {5, 4};
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("key_lengths[0]") && Contains("batch index 0") &&
                                       Contains("L_k = 4"));
    m.key_lengths = {4};
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("key_lengths") && Contains("B = 2"));
  }
  SECTION("batch rows, head widths and the backward's arguments") {
    auto m = cfg;
    m.batch = 4;  // 6 query rows are not 4 blocks
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("X_q") && Contains("B = 4"));
    m = cfg;
    m.d_k = 0;
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("d_k"));
    m = cfg;
    m.alibi = true;
    m.attention.bias.alibi_slope = 0.5;
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("alibi"));
    const auto f = fwd(c.w, cfg);
    CHECK_THROWS_WITH(multi_head_backward<double>(c.X_q, c.X_kv, c.w, cfg, f, MatrixD::Zero(6, 2)),
                      Contains("grad_output") && Contains("(6, 3)"));
  }
}
