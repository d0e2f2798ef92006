// qkscope/tiled/attention.hpp — fast CPU attention with the core's results contract:
// tiled::attention_forward / tiled::attention_backward take the same Q, K, V, params and
// AttentionConfig as qkscope::attention_forward, and return only O and logsumexp
// (O(L d) memory). How each scoring function reaches the tiled kernel (flash.hpp):
//   dot, scaled_dot   S = Q K^T on blocks
//   cosine            S = Qh Kh^T with rows pre-normalised by max(|x|, eps)
//   bilinear          S = (Q W) K^T with Q W computed once
//   linear_concat     S_ij = a_i + c_j, a = Q w_q, c = K w_k: O(L d + L_q L_k)
//   additive          fused tanh scorer (additive.hpp), projections computed once
// Normalizers other than softmax fall back to the core (fallback = true).
#pragma once

#include "qkscope/tiled/additive.hpp"
#include "qkscope/tiled/flash.hpp"

namespace qkscope::tiled {

namespace detail {

/// The call's validated, resolved pieces (same checks and messages as the core).
template <class T>
struct Prepared {
  ScoreShape shape;
  MaskFn mask;
  double scale = 1;
};

template <class T>
Prepared<T> prepare(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V, const ScoreParams<T>& params,
                    const AttentionConfig<T>& cfg, const TiledOptions& opt) {
  check_options(opt);
  Prepared<T> p;
  p.shape = qkscope::detail::check_inputs(Q, K, V);
  visit_score(cfg.score, [&](auto f) {
    using F = decltype(f);
    F::validate(p.shape, params);
    p.scale = cfg.scale.value_or(F::default_scale(p.shape));
  });
  qkscope::detail::require(std::isfinite(p.scale), "scale must be finite, got " + std::to_string(p.scale));
  p.mask = resolve_mask(cfg.mask, p.shape.L_q, p.shape.L_k);
  qkscope::detail::validate_bias(cfg.bias, p.shape.L_q, p.shape.L_k);
  qkscope::detail::check_temperature(cfg.temperature, true, cfg.normalizer);
  return p;
}

/// Row-normalised X (rows divided by max(|x|, eps)) and the norms, as score::Cosine.
template <class T>
Mat<T> normalized(const Mat<T>& X, Vec<T>& n) {
  n = score::Cosine::clamped_norms(X);
  return n.cwiseInverse().asDiagonal() * X;
}

/// Back through xhat = x / max(|x|, eps) (score::Cosine's rule, both branches).
template <class T>
Mat<T> through_normalize(const Mat<T>& X, const Mat<T>& Xh, const Vec<T>& n, const Mat<T>& dXh) {
  Mat<T> dX(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    if (X.row(i).norm() <= T(score::Cosine::eps)) dX.row(i) = dXh.row(i) / n(i);
    else dX.row(i) = (dXh.row(i) - Xh.row(i) * Xh.row(i).dot(dXh.row(i))) / n(i);
  }
  return dX;
}

/// Calls fn(scorer, finish) with the scorer for cfg.score; finish(FlashGrads) maps the
/// kernel's gradients back to Q, K and the score parameters.
template <class T, class Fn>
void with_scorer(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p, const std::string& score,
                 Fn&& fn) {
  using G = FlashGrads<T>;
  if (score == "dot" || score == "scaled_dot") {
    fn(DotScorer<T>{Q, K}, [&](G& g, AttentionGrads<T>& out) {
      out.dQ = std::move(g.dQs);
      out.dK = std::move(g.dKs);
    });
  } else if (score == "cosine") {
    Vec<T> nq, nk;
    const Mat<T> Qh = normalized(Q, nq), Kh = normalized(K, nk);
    fn(DotScorer<T>{Qh, Kh}, [&](G& g, AttentionGrads<T>& out) {
      out.dQ = through_normalize(Q, Qh, nq, g.dQs);
      out.dK = through_normalize(K, Kh, nk, g.dKs);
    });
  } else if (score == "bilinear") {
    const Mat<T> QW = Q * p.W;  // (L_q, d_k)
    fn(DotScorer<T>{QW, K}, [&](G& g, AttentionGrads<T>& out) {
      out.dQ = g.dQs * p.W.transpose();
      out.dparams.W = Q.transpose() * g.dQs;
      out.dK = std::move(g.dKs);
    });
  } else if (score == "linear_concat") {
    const Eigen::Index dq = Q.cols(), dk = K.cols();
    const Vec<T> a = Q * p.w.head(dq), c = K * p.w.tail(dk);
    fn(SeparableScorer<T>{a, c}, [&](G& g, AttentionGrads<T>& out) {
      out.dQ = g.dQs.col(0) * p.w.head(dq).transpose();
      out.dK = g.dKs.col(0) * p.w.tail(dk).transpose();
      out.dparams.w.resize(dq + dk);
      out.dparams.w.head(dq) = Q.transpose() * g.dQs.col(0);
      out.dparams.w.tail(dk) = K.transpose() * g.dKs.col(0);
    });
  } else if (score == "additive") {
    Mat<T> A = Q * p.W_q.transpose();
    if (p.b.size()) A.rowwise() += p.b.transpose();
    const Mat<T> B = K * p.W_k.transpose();
    fn(AdditiveScorer<T>{A, B, p.v}, [&](G& g, AttentionGrads<T>& out) {
      out.dQ = g.dQs * p.W_q;
      out.dK = g.dKs * p.W_k;
      out.dparams.W_q = g.dQs.transpose() * Q;
      out.dparams.W_k = g.dKs.transpose() * K;
      out.dparams.v = std::move(g.extra);
      out.dparams.b = g.dQs.colwise().sum().transpose();
    });
  } else {
    throw_unknown_score(score);
  }
}

}  // namespace detail

/// True when (cfg.normalizer) runs on the tiled kernel; otherwise the calls fall back to the core.
template <class T>
bool tiled_supported(const AttentionConfig<T>& cfg) {
  return cfg.normalizer == "softmax";
}

/// Tiled forward. Q: (L_q, d_q), K: (L_k, d_k), V: (L_k, d_v). Returns O (L_q, d_v) and
/// logsumexp (L_q) equal (within the test tolerance) to qkscope::attention_forward's.
/// Throws std::invalid_argument as the core does, and for block sizes < 1 or threads < 0.
template <class T>
TiledResult<T> attention_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                 const ScoreParams<T>& params, const AttentionConfig<T>& cfg,
                                 const TiledOptions& opt = {}) {
  TiledResult<T> r;
  if (!tiled_supported(cfg)) {
    detail::check_options(opt);
    auto full = qkscope::attention_forward(Q, K, V, params, cfg);
    r.output = std::move(full.output);
    r.logsumexp = std::move(full.logsumexp);
    r.scale = full.scale;
    r.fallback = true;
    return r;
  }
  const auto pr = detail::prepare(Q, K, V, params, cfg, opt);
  r.scale = pr.scale;
  const detail::TileMods<T> mods(pr.mask, pr.scale, cfg.temperature, cfg.bias);
  detail::with_scorer(Q, K, params, cfg.score, [&](const auto& sc, auto&&) {
    detail::flash_forward(sc, mods, V, pr.shape.L_q, pr.shape.L_k, opt, r);
  });
  return r;
}

/// Tiled backward for dO = dL/dO (L_q, d_v); `fwd` from tiled::attention_forward with the
/// same arguments. Fills dQ, dK, dV, dparams, drelative, ddense (only when a dense bias is
/// set: (L_q, L_k)) and dtemperature, as qkscope::attention_backward.
template <class T>
AttentionGrads<T> attention_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                     const ScoreParams<T>& params, const AttentionConfig<T>& cfg,
                                     const TiledResult<T>& fwd, const Mat<T>& dO,
                                     const TiledOptions& opt = {}) {
  if (!tiled_supported(cfg)) {
    detail::check_options(opt);
    const auto full = qkscope::attention_forward(Q, K, V, params, cfg);
    return qkscope::attention_backward(Q, K, V, params, cfg, full, dO);
  }
  const auto pr = detail::prepare(Q, K, V, params, cfg, opt);
  qkscope::detail::require_shape(dO, pr.shape.L_q, V.cols(), "grad_output (L_q x d_v)");
  qkscope::detail::require_shape(fwd.output, pr.shape.L_q, V.cols(), "fwd.output (L_q x d_v)");
  qkscope::detail::require(fwd.logsumexp.size() == pr.shape.L_q, "fwd.logsumexp must have length L_q");
  const detail::TileMods<T> mods(pr.mask, pr.scale, cfg.temperature, cfg.bias);
  AttentionGrads<T> out;
  detail::with_scorer(Q, K, params, cfg.score, [&](const auto& sc, auto&& finish) {
    auto g = detail::flash_backward(sc, mods, V, fwd, dO, pr.shape.L_q, pr.shape.L_k, opt);
    out.dV = std::move(g.dV);
    out.drelative = std::move(g.drelative);
    out.ddense = std::move(g.ddense);
    out.dtemperature = g.dtemperature;
    finish(g, out);
  });
  return out;
}

}  // namespace qkscope::tiled
