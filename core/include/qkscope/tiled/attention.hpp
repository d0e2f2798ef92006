// qkscope/tiled/attention.hpp — fast CPU attention with the core's results contract:
// tiled::attention_forward / tiled::attention_backward take the same Q, K, V, params and
// AttentionConfig as qkscope::attention_forward, and return only O and logsumexp
// (O(L d) memory). The *_batch variants take B*H heads at once and split the work over
// (head, query tile) items on TiledOptions::threads threads (results do not depend on it).
// How each scoring function reaches the tiled kernel (flash.hpp):
//   dot, scaled_dot   S = Q K^T on blocks (Q tile pre-scaled by scale / tau)
//   cosine            S = Qh Kh^T with rows pre-normalised by max(|x|, eps)
//   bilinear          S = (Q W) K^T with Q W computed once
//   linear_concat     S_ij = a_i + c_j, a = Q w_q, c = K w_k: O(L d + L_q L_k)
//   additive          fused tanh scorer (additive.hpp), projections computed once
// Normalizers other than softmax fall back to the core (fallback = true), and so do logits
// whose size would overflow once divided by tau (detail/logit_range.hpp): the core then
// returns the right value or refuses with its own message.
#pragma once

#include "qkscope/detail/logit_range.hpp"
#include "qkscope/tiled/additive.hpp"
#include "qkscope/tiled/flash_backward.hpp"

namespace qkscope::tiled {

/// One head of a batch: Q (L_q, d_q), K (L_k, d_k), V (L_k, d_v), not owned. For GQA/MQA
/// point several heads at the same K and V (dK, dV then come per query head: sum them).
template <class T>
struct HeadInputs {
  const Mat<T>* Q;
  const Mat<T>* K;
  const Mat<T>* V;
};

namespace detail {

/// Validates every head like the core (same checks and messages) and that all heads share
/// (L_q, L_k); returns the scale and the resolved mask.
template <class T>
std::pair<double, MaskFn> prepare(const std::vector<HeadInputs<T>>& heads, const ScoreParams<T>& params,
                                  const AttentionConfig<T>& cfg, const TiledOptions& opt) {
  check_options(opt);
  qkscope::detail::require(!heads.empty(), "tiled: at least one head is required");
  ScoreShape shape{};
  for (std::size_t n = 0; n < heads.size(); ++n) {
    const auto s = qkscope::detail::check_inputs(*heads[n].Q, *heads[n].K, *heads[n].V);
    if (n == 0) shape = s;
    qkscope::detail::require(s.L_q == shape.L_q && s.L_k == shape.L_k,
                             "tiled: every head must have head 0's (L_q, L_k), head " +
                                 std::to_string(n) + " differs");
  }
  double scale = 1;
  visit_score(cfg.score, [&](auto f) {
    using F = decltype(f);
    F::validate(shape, params);
    qkscope::detail::check_params_finite(params);
    scale = cfg.scale.value_or(F::default_scale(shape));
  });
  qkscope::detail::require(std::isfinite(scale), "scale must be finite, got " + std::to_string(scale));
  const MaskFn mask = resolve_mask(cfg.mask, shape.L_q, shape.L_k);
  qkscope::detail::validate_bias(cfg.bias, shape.L_q, shape.L_k);
  qkscope::detail::check_temperature_in<T>(cfg.temperature, true, cfg.normalizer);
  return {scale, mask};
}

/// Row-normalised X (rows divided by max(|x|, eps)) and the norms, as score::Cosine.
template <class T>
Mat<T> normalized(const Mat<T>& X, Vec<T>& n) {
  return score::Cosine::unit_rows(X, n);
}

/// Back through xhat = x / max(|x|, eps) (score::Cosine's rule, both branches).
template <class T>
Mat<T> through_normalize(const Mat<T>& X, const Mat<T>& Xh, const Vec<T>& n, const Mat<T>& dXh) {
  Mat<T> dX(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    if (n(i) <= T(score::Cosine::eps)) dX.row(i) = dXh.row(i) / n(i);
    else dX.row(i) = (dXh.row(i) - Xh.row(i) * Xh.row(i).dot(dXh.row(i))) / n(i);
  }
  return dX;
}

/// Calls fn(scorers, finish) with one scorer per head for cfg.score; finish(n, g, out)
/// maps head n's kernel gradients back to its Q, K and the score parameters.
template <class T, class Fn>
void with_scorers(const std::vector<HeadInputs<T>>& h, const ScoreParams<T>& p, const std::string& score,
                  Fn&& fn) {
  using G = FlashGrads<T>;
  using Out = AttentionGrads<T>;
  const std::size_t N = h.size();
  if (score == "dot" || score == "scaled_dot") {
    std::vector<DotScorer<T>> sc;
    for (const auto& x : h) sc.push_back({x.Q, x.K});
    fn(sc, [&](std::size_t n, G& g, Out& out) {
      out.dQ = std::move(g.dQs);
      out.dK = std::move(g.dKs);
      (void)n;
    });
  } else if (score == "cosine") {
    std::vector<Vec<T>> nq(N), nk(N);
    std::vector<Mat<T>> Qh(N), Kh(N);
    std::vector<DotScorer<T>> sc;
    for (std::size_t n = 0; n < N; ++n) {
      Qh[n] = normalized(*h[n].Q, nq[n]);
      Kh[n] = normalized(*h[n].K, nk[n]);
      sc.push_back({&Qh[n], &Kh[n]});
    }
    fn(sc, [&](std::size_t n, G& g, Out& out) {
      out.dQ = through_normalize(*h[n].Q, Qh[n], nq[n], g.dQs);
      out.dK = through_normalize(*h[n].K, Kh[n], nk[n], g.dKs);
    });
  } else if (score == "bilinear") {
    std::vector<Mat<T>> QW(N);
    std::vector<DotScorer<T>> sc;
    for (std::size_t n = 0; n < N; ++n) {
      QW[n] = *h[n].Q * p.W;  // (L_q, d_k)
      sc.push_back({&QW[n], h[n].K});
    }
    fn(sc, [&](std::size_t n, G& g, Out& out) {
      out.dQ = g.dQs * p.W.transpose();
      out.dparams.W = h[n].Q->transpose() * g.dQs;
      out.dK = std::move(g.dKs);
    });
  } else if (score == "linear_concat") {
    const Eigen::Index dq = h[0].Q->cols(), dk = h[0].K->cols();
    std::vector<Vec<T>> a(N), c(N);
    std::vector<SeparableScorer<T>> sc;
    for (std::size_t n = 0; n < N; ++n) {
      a[n] = *h[n].Q * p.w.head(dq);
      c[n] = *h[n].K * p.w.tail(dk);
      sc.push_back({&a[n], &c[n]});
    }
    fn(sc, [&](std::size_t n, G& g, Out& out) {
      out.dQ = g.dQs.col(0) * p.w.head(dq).transpose();
      out.dK = g.dKs.col(0) * p.w.tail(dk).transpose();
      out.dparams.w.resize(dq + dk);
      out.dparams.w.head(dq) = h[n].Q->transpose() * g.dQs.col(0);
      out.dparams.w.tail(dk) = h[n].K->transpose() * g.dKs.col(0);
    });
  } else if (score == "additive") {
    std::vector<AdditiveInputs<T>> in(N);
    std::vector<AdditiveScorer<T>> sc;
    for (std::size_t n = 0; n < N; ++n) sc.push_back(in[n].prepare(*h[n].Q, *h[n].K, p));
    fn(sc, [&](std::size_t n, G& g, Out& out) {
      out.dQ = g.dQs * p.W_q;
      out.dK = g.dKs * p.W_k;
      out.dparams.W_q = g.dQs.transpose() * *h[n].Q;
      out.dparams.W_k = g.dKs.transpose() * *h[n].K;
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

namespace detail {

/// True when every head's logits / tau stay well inside T's range (logits_fold_safe), or
/// when the inputs are invalid (then prepare() throws the core's message). False sends the
/// call to the core.
template <class T>
bool fold_safe(const std::vector<HeadInputs<T>>& heads, const ScoreParams<T>& params,
               const AttentionConfig<T>& cfg) {
  try {
    for (const auto& h : heads) {
      const ScoreShape shape = qkscope::detail::check_inputs(*h.Q, *h.K, *h.V);
      double scale = 1;
      visit_score(cfg.score, [&](auto f) {
        decltype(f)::validate(shape, params);
        scale = cfg.scale.value_or(decltype(f)::default_scale(shape));
      });
      if (!qkscope::detail::logits_fold_safe(cfg.score, *h.Q, *h.K, params, scale, cfg.temperature, cfg.bias,
                                             shape.L_q, shape.L_k))
        return false;
    }
  } catch (const std::invalid_argument&) {
    return true;
  }
  return true;
}

template <class M>
bool finite(const M& m) {
  return m.array().isFinite().all();
}

}  // namespace detail

/// Tiled forward of B*H heads sharing params and cfg. Returns one TiledResult per head,
/// in the order given. Work is split over (head, query tile) items on opt.threads threads
/// (0 = all cores); the results are bitwise identical for any thread count.
/// Throws std::invalid_argument as the core does, for heads of different (L_q, L_k), and
/// for block sizes < 1 or threads < 0.
template <class T>
std::vector<TiledResult<T>> attention_forward_batch(const std::vector<HeadInputs<T>>& heads,
                                                    const ScoreParams<T>& params,
                                                    const AttentionConfig<T>& cfg,
                                                    const TiledOptions& opt = {}) {
  std::vector<TiledResult<T>> r(heads.size());
  auto core_forward = [&] {
    detail::check_options(opt);
    for (std::size_t n = 0; n < heads.size(); ++n) {
      auto full = qkscope::attention_forward(*heads[n].Q, *heads[n].K, *heads[n].V, params, cfg);
      r[n].output = std::move(full.output);
      r[n].logsumexp = std::move(full.logsumexp);
      r[n].scale = full.scale;
      r[n].fallback = true;
    }
    return r;
  };
  if (!tiled_supported(cfg) || !detail::fold_safe(heads, params, cfg)) return core_forward();
  // Not a structured binding: clang 14 cannot capture those in the lambdas below.
  const auto prepared = detail::prepare(heads, params, cfg, opt);
  const double scale = prepared.first;
  const MaskFn mask = prepared.second;
  const detail::TileMods<T> mods(mask, scale, cfg.temperature, cfg.bias);
  std::vector<const Mat<T>*> V;
  for (const auto& h : heads) V.push_back(h.V);
  detail::with_scorers(heads, params, cfg.score, [&](const auto& sc, auto&&) {
    detail::flash_forward(sc, mods, V, mask.L_q, opt, r);
  });
  for (auto& x : r) {
    x.scale = scale;
    // Safety net behind fold_safe: never return NaN where the core has an answer or an error.
    if (!detail::finite(x.output) || x.logsumexp.array().isNaN().any()) return core_forward();
  }
  return r;
}

/// Tiled forward of one head. Q: (L_q, d_q), K: (L_k, d_k), V: (L_k, d_v). Returns O
/// (L_q, d_v) and logsumexp (L_q) equal (within the test tolerance) to
/// qkscope::attention_forward's. Throws as attention_forward_batch.
template <class T>
TiledResult<T> attention_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                 const ScoreParams<T>& params, const AttentionConfig<T>& cfg,
                                 const TiledOptions& opt = {}) {
  return std::move(attention_forward_batch<T>({{&Q, &K, &V}}, params, cfg, opt)[0]);
}

namespace detail {

template <class T>
std::vector<AttentionGrads<T>> backward_impl(const std::vector<HeadInputs<T>>& heads,
                                             const ScoreParams<T>& params, const AttentionConfig<T>& cfg,
                                             const std::vector<const TiledResult<T>*>& fwd,
                                             const std::vector<const Mat<T>*>& dO, const TiledOptions& opt) {
  qkscope::detail::require(fwd.size() == heads.size() && dO.size() == heads.size(),
                           "tiled: fwd and grad_output need one entry per head");
  std::vector<AttentionGrads<T>> out(heads.size());
  auto core_backward = [&] {
    check_options(opt);
    for (std::size_t n = 0; n < heads.size(); ++n) {
      const auto& h = heads[n];
      const auto full = qkscope::attention_forward(*h.Q, *h.K, *h.V, params, cfg);
      out[n] = qkscope::attention_backward(*h.Q, *h.K, *h.V, params, cfg, full, *dO[n]);
    }
    return out;
  };
  if (!tiled_supported(cfg) || !fold_safe(heads, params, cfg)) return core_backward();
  // Not a structured binding: clang 14 cannot capture those in the lambdas below.
  const auto prepared = prepare(heads, params, cfg, opt);
  const double scale = prepared.first;
  const MaskFn mask = prepared.second;
  std::vector<const Mat<T>*> V;
  for (std::size_t n = 0; n < heads.size(); ++n) {
    const Eigen::Index d_v = heads[n].V->cols();
    qkscope::detail::require_shape(*dO[n], mask.L_q, d_v, "grad_output (L_q x d_v)");
    qkscope::detail::require_shape(fwd[n]->output, mask.L_q, d_v, "fwd.output (L_q x d_v)");
    qkscope::detail::require(fwd[n]->logsumexp.size() == mask.L_q, "fwd.logsumexp must have length L_q");
    V.push_back(heads[n].V);
  }
  const TileMods<T> mods(mask, scale, cfg.temperature, cfg.bias);
  with_scorers(heads, params, cfg.score, [&](const auto& sc, auto&& finish) {
    std::vector<FlashGrads<T>> g(heads.size());
    flash_backward(sc, mods, V, fwd, dO, mask.L_q, mask.L_k, opt, g);
    for (std::size_t n = 0; n < heads.size(); ++n) {
      out[n].dV = std::move(g[n].dV);
      out[n].drelative = std::move(g[n].drelative);
      out[n].ddense = std::move(g[n].ddense);
      out[n].dtemperature = g[n].dtemperature;
      finish(n, g[n], out[n]);
    }
  });
  // An overflow in dP = dO V^T or through 1 / tau: the core rescales, or names the gradient.
  for (const auto& g : out)
    if (!finite(g.dQ) || !finite(g.dK) || !finite(g.dV) || !std::isfinite(g.dtemperature) ||
        !finite(g.dparams.W) || !finite(g.dparams.W_q) || !finite(g.dparams.W_k) || !finite(g.dparams.v) ||
        !finite(g.dparams.b) || !finite(g.dparams.w) || !finite(g.drelative) || !finite(g.ddense))
      return core_backward();
  return out;
}

}  // namespace detail

/// Tiled backward of B*H heads: fwd[n] from attention_forward_batch with the same
/// arguments, dO[n] = dL/dO of head n (L_q, d_v). Returns per head dQ, dK, dV, dparams
/// (this head's share: sum over heads for shared parameters), drelative, ddense (only with
/// a dense bias: (L_q, L_k)) and dtemperature, as qkscope::attention_backward. Work is split
/// over (head, key tile) and (head, query tile) items; results do not depend on threads.
template <class T>
std::vector<AttentionGrads<T>> attention_backward_batch(const std::vector<HeadInputs<T>>& heads,
                                                        const ScoreParams<T>& params,
                                                        const AttentionConfig<T>& cfg,
                                                        const std::vector<TiledResult<T>>& fwd,
                                                        const std::vector<const Mat<T>*>& dO,
                                                        const TiledOptions& opt = {}) {
  std::vector<const TiledResult<T>*> F;
  for (const auto& f : fwd) F.push_back(&f);
  return detail::backward_impl(heads, params, cfg, F, dO, opt);
}

/// Tiled backward of one head for dO = dL/dO (L_q, d_v); `fwd` from tiled::attention_forward
/// with the same arguments. Fills dQ, dK, dV, dparams, drelative, ddense (only when a dense
/// bias is set: (L_q, L_k)) and dtemperature, as qkscope::attention_backward.
template <class T>
AttentionGrads<T> attention_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                     const ScoreParams<T>& params, const AttentionConfig<T>& cfg,
                                     const TiledResult<T>& fwd, const Mat<T>& dO,
                                     const TiledOptions& opt = {}) {
  return std::move(detail::backward_impl<T>({{&Q, &K, &V}}, params, cfg, {&fwd}, {&dO}, opt)[0]);
}

}  // namespace qkscope::tiled
