// Multi-head attention gradients: every gradient against central finite differences of
// the forward in double, and the self-attention identity.
#include "mha/mha_case.hpp"
#include "support/gradcheck.hpp"

using namespace qktest::mha;

namespace {

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
