// qkscope/cpu/attention.hpp — fast CPU attention with the core's results contract:
// cpu::attention_forward / cpu::attention_backward take the same Q, K, V, params and
// AttentionConfig as qkscope::attention_forward, and return only O and logsumexp
// (O(L d) memory). The *_batch variants take B*H heads at once and split the work over
// (head, query tile) items on TiledOptions::threads threads (results do not depend on it).
// How each scoring function reaches the tiled kernel (flash.hpp): by visiting the score
// registry, whose prepare hook gives the function's form (score/forms.hpp), and the form
// picks the tile scorer:
//   DotForm        S = q k^T on blocks (GEMM; the q tile pre-scaled by scale / tau); a form
//                  that can cancel large terms (negative squared Euclidean) checks each tile
//                  and recomputes it from differences where needed (DotScorer::Refine)
//   SeparableForm  S_ij = a_i + c_j: O(L d + L_q L_k)
//   AdditiveForm   fused tanh scorer (additive.hpp)
// Normalizers other than softmax fall back to the core (fallback = true), and so do logits
// whose size would overflow once divided by tau (bounded from the prepared form:
// detail/logit_range.hpp): the core then returns the right value or refuses with its own
// message.
#pragma once

#include "qkscope/cpu/additive_inputs.hpp"
#include "qkscope/detail/logit_range.hpp"
#include "qkscope/cpu/exact_lse.hpp"
#include "qkscope/cpu/flash_backward.hpp"

namespace qkscope::cpu {

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
  const MaskFn mask = resolve_mask(cfg.mask, shape.L_q, shape.L_k);
  qkscope::detail::validate_bias(cfg.bias, shape.L_q, shape.L_k);
  qkscope::detail::check_scale_in<T>(scale);
  qkscope::detail::check_temperature_in<T>(cfg.temperature, true, cfg.normalizer);
  return {scale, mask};
}

/// The kernel scorers of one form per head (score/forms.hpp): the form's type picks the code.
/// backward: the scorers will give gradients (the dot family then groups tied keys, which a
/// forward call does not need).
template <class T>
std::vector<DotScorer<T>> scorers_of(const std::vector<score::DotForm<T>>& f, const std::vector<HeadInputs<T>>& h,
                                     bool backward) {
  std::vector<DotScorer<T>> sc;
  for (std::size_t n = 0; n < f.size(); ++n) {
    const Mat<T>& K = f[n].k_or(*h[n].K);
    sc.push_back(DotScorer<T>::make(&f[n].q_or(*h[n].Q), &K, backward));
  }
  return sc;
}
/// Separable: for the backward, also the forms' sums in double (SeparableForm::da64, dc64).
template <class T>
std::vector<SeparableScorer<T>> scorers_of(std::vector<score::SeparableForm<T>>& f, const std::vector<HeadInputs<T>>&,
                                           bool backward) {
  std::vector<SeparableScorer<T>> sc;
  for (auto& x : f) {
    if (backward) x.da64.setZero(x.a.size()), x.dc64.setZero(x.c.size());
    sc.push_back({&x.a, &x.c, backward ? x.da64.data() : nullptr, backward ? x.dc64.data() : nullptr});
  }
  return sc;
}
/// Additive: also the exponentials of the fused tanh (additive.hpp), kept in `in`;
/// logit_gain = |scale| / tau picks the fused or the direct tanh, score_gain the double tiles.
template <class T>
std::vector<AdditiveScorer<T>> scorers_of(const std::vector<score::AdditiveForm<T>>& f,
                                          const std::vector<HeadInputs<T>>&, std::vector<AdditiveInputs<T>>& in,
                                          double logit_gain, double score_gain) {
  in.resize(f.size());
  std::vector<AdditiveScorer<T>> sc;
  for (std::size_t n = 0; n < f.size(); ++n) sc.push_back(in[n].prepare(f[n], logit_gain, score_gain));
  return sc;
}

/// DotScorer::Refine's functions for scoring function F: its refine_tile and
/// grad_k_from_differences hooks.
template <class F, class T>
bool refine_scores(const typename DotScorer<T>::Refine& r, Eigen::Index i0, Eigen::Index bq, Eigen::Index j0,
                   Eigen::Index bk, TileRef<T> S) {
  return F::template refine_tile<T>(*r.Q, *r.K, *static_cast<const score::DotForm<T>*>(r.form), i0, bq, j0, bk, S);
}
template <class F, class T>
void refine_grad_k(const typename DotScorer<T>::Refine& r, Eigen::Index i0, Eigen::Index bq, Eigen::Index j0,
                   Eigen::Index bk, const ConstTileRef<T>& dS, Mat<T>& dKt) {
  F::template grad_k_from_differences<T>(*r.Q, *r.K, i0, bq, j0, bk, dS, dKt);
}
template <class F, class T>
void refine_grad_q(const typename DotScorer<T>::Refine& r, Eigen::Index i0, Eigen::Index bq,
                   const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, const Mat<T>& dS, Mat<T>& dQt,
                   const char* keep) {
  F::template grad_q_rows_from_differences<T>(*r.Q, *r.K, *static_cast<const score::DotForm<T>*>(r.form), i0, bq,
                                              blocks, block_k, dS, dQt, keep);
}

/// Calls fn(scorers, finish) with one scorer per head for cfg.score, found by visiting the
/// registry: the score's prepare hook gives each head's form. finish(n, g, out) maps head
/// n's kernel gradients back to its Q, K and the score parameters (prepared_backward).
/// Returns false, without calling fn, when fold_ok(bound) is false for some head's form
/// (its logits / tau may leave T's range: detail/logit_range.hpp). score_gain = |scale| / tau;
/// logit_gain is the same in the forward and +inf in the backward (the additive scorer's
/// stricter test: attention_backward).
template <class T, class Ok, class Fn>
bool with_scorers(const std::vector<HeadInputs<T>>& h, const ScoreParams<T>& p, const std::string& score,
                  double logit_gain, double score_gain, Ok&& fold_ok, Fn&& fn) {
  bool ran = false;
  visit_score(score, [&](auto f) {
    using F = decltype(f);
    using Form = decltype(F::template prepare<T>(*h[0].Q, *h[0].K, p));
    std::vector<Form> forms;
    forms.reserve(h.size());
    for (const auto& x : h) forms.push_back(F::template prepare<T>(*x.Q, *x.K, p));
    // A form's cancellation bound still sends calls past it to the core: refine_tile (below)
    // only corrects entries where the rounding is large next to the scores, and past the bound
    // it is large next to tau (keys 6e3 from the origin: output 5e-6 off; review finding).
    for (std::size_t n = 0; n < h.size(); ++n)
      if (!fold_ok(qkscope::detail::form_bound(forms[n], *h[n].Q, *h[n].K))) return;
    ran = true;
    auto finish = [&](std::size_t n, FlashGrads<T>& g, AttentionGrads<T>& out) {
      score::FormGrads<T> fg{std::move(g.dQs), std::move(g.dKs), std::move(g.extra)};
      ScoreGrads<T> sg;
      F::template prepared_backward<T>(*h[n].Q, *h[n].K, p, forms[n], fg, sg);
      out.dQ = std::move(sg.dQ);
      out.dK = std::move(sg.dK);
      out.dparams = std::move(sg.dparams);
    };
    if constexpr (std::is_same_v<Form, score::AdditiveForm<T>>) {
      std::vector<AdditiveInputs<T>> in;
      // The backward's sums in double give every product in double too (finish64), in place of
      // prepared_backward's from the float sums (which were formed and then replaced).
      auto finish_additive = [&](std::size_t n, FlashGrads<T>& g, AttentionGrads<T>& out) {
        ScoreGrads<T> sg;
        if (!in[n].finish64(*h[n].Q, *h[n].K, forms[n], sg)) return finish(n, g, out);
        out.dQ = std::move(sg.dQ);
        out.dK = std::move(sg.dK);
        out.dparams = std::move(sg.dparams);
      };
      fn(scorers_of(forms, h, in, logit_gain, score_gain), finish_additive);
    } else {
      auto sc = scorers_of(forms, h, std::isinf(logit_gain));  // +inf: attention_backward
      if constexpr (requires { &F::template refine_tile<T>; })
        for (std::size_t n = 0; n < h.size(); ++n) {
          // A form may ask for its tile check only at some gains (cosine: score/cosine.hpp).
          if constexpr (requires { F::template refine_prepare<T>(forms[n], *h[n].Q, *h[n].K, score_gain); })
            if (!F::template refine_prepare<T>(forms[n], *h[n].Q, *h[n].K, score_gain)) continue;
          auto& r = sc[n].refine;
          r = {h[n].Q, h[n].K, &forms[n], &refine_scores<F, T>};
          r.whole = forms[n].refine_all;  // refine_tile forms every entry: no GEMM first
          if constexpr (requires { &F::template grad_k_from_differences<T>; }) r.grad_k = &refine_grad_k<F, T>;
          if constexpr (requires { &F::template grad_q_rows_from_differences<T>; }) r.grad_q = &refine_grad_q<F, T>;
        }
      fn(std::move(sc), finish);
    }
  });
  return ran;
}

/// The with_scorers predicate: may this call fold scale / tau into the logits?
/// `rounding` (optional) receives the largest cancellation rounding of the heads' forms.
template <class T>
auto fold_check(double scale, const AttentionConfig<T>& cfg, const MaskFn& mask, double* rounding = nullptr) {
  return [scale, &cfg, L_q = mask.L_q, L_k = mask.L_k, rounding](const qkscope::detail::FormBound& b) {
    if (rounding)
      *rounding = std::max(*rounding, qkscope::detail::cancellation_rounding<T>(b, scale, cfg.temperature));
    return qkscope::detail::logits_fold_safe<T>(b, scale, cfg.temperature, cfg.bias, 0.0, L_q, L_k);
  };
}

}  // namespace detail

/// The tiled backward's table rule (position_grad.hpp, position_rows) needs each row's dz to
/// sum to 0: every normalizer on the tiled kernel must be shift-invariant.
template <class N>
constexpr bool tiled_rows_sum_to_zero() {
  if constexpr (!is_online<N>()) return true;
  else if constexpr (requires { N::shift_invariant; }) return N::shift_invariant;
  else return false;
}
static_assert(std::apply([](auto... n) { return (tiled_rows_sum_to_zero<decltype(n)>() && ...); }, Normalizers{}),
              "an online normalizer that is not shift-invariant breaks position_rows' rule");

/// True when (cfg.normalizer) runs on the tiled kernel; otherwise the calls fall back to the core.
template <class T>
bool tiled_supported(const AttentionConfig<T>& cfg) {
  return online_normalizer(cfg.normalizer);
}

namespace detail {

/// A temperature the tiled kernels can divide by in T. Any other goes to the core, which
/// reports it (or an earlier fault of the same call) in its own order of checks.
template <class T>
bool usable_temperature(double tau) {
  return tau > 0 && std::isfinite(tau) && T(tau) > T(0) && std::isfinite(double(T(tau)));
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
  if (!tiled_supported(cfg) || !detail::usable_temperature<T>(cfg.temperature)) return core_forward();
  // Not a structured binding: clang 14 cannot capture those in the lambdas below.
  const auto prepared = detail::prepare(heads, params, cfg, opt);
  const double scale = prepared.first;
  const MaskFn mask = prepared.second;
  const detail::TileOps<T> ops(mask, scale, cfg.temperature, cfg.bias);
  std::vector<const Mat<T>*> V;
  for (const auto& h : heads) V.push_back(h.V);
  double rounding = 0;
  const double gain = std::abs(scale) / cfg.temperature;
  const bool ran = detail::with_scorers(heads, params, cfg.score, gain, gain,
                                       detail::fold_check(scale, cfg, mask, &rounding),
                                       [&](const auto& sc, auto&&) { detail::flash_forward(sc, ops, V, mask.L_q, opt, r); });
  if (!ran) return core_forward();
  for (auto& x : r) {
    x.scale = scale;
    // Safety net behind fold_safe: never return NaN where the core has an answer or an error.
    if (!qkscope::detail::all_finite(x.output) || x.logsumexp.array().isNaN().any()) return core_forward();
  }
  detail::exact_logsumexp_rows(heads, params, cfg.score, ops, rounding, r);
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
  if (!tiled_supported(cfg) || !usable_temperature<T>(cfg.temperature)) return core_backward();
  // The backward shifts z by lse tau (flash_backward.hpp); the rounding of lse and of that
  // product moves the exponent by about eps |lse|, which past |lse| ~ 1e9 underflowed every
  // P of a row and returned zero gradients (reviewer finding). Such rows go to the core.
  for (const auto* f : fwd)
    for (Eigen::Index i = 0; i < f->logsumexp.size(); ++i)
      if (std::isfinite(double(f->logsumexp(i))) &&
          std::abs(double(f->logsumexp(i))) * double(std::numeric_limits<T>::epsilon()) > 1.0)
        return core_backward();
  // Not a structured binding: clang 14 cannot capture those in the lambdas below.
  const auto prepared = prepare(heads, params, cfg, opt);
  const double scale = prepared.first;
  const MaskFn mask = prepared.second;
  std::vector<const Mat<T>*> V;
  for (std::size_t n = 0; n < heads.size(); ++n) {
    const Eigen::Index d_v = heads[n].V->cols();
    qkscope::detail::require_shape(*dO[n], mask.L_q, d_v, "grad_output (L_q x d_v)");
    qkscope::detail::require_finite(*dO[n], "grad_output");  // as the core: never a silent pass-through
    qkscope::detail::require_shape(fwd[n]->output, mask.L_q, d_v, "fwd.output (L_q x d_v)");
    qkscope::detail::require(fwd[n]->logsumexp.size() == mask.L_q, "fwd.logsumexp must have length L_q");
    V.push_back(heads[n].V);
  }
  const TileOps<T> ops(mask, scale, cfg.temperature, cfg.bias);
  double max_dO = 0, max_v = 0;
  for (std::size_t n = 0; n < heads.size(); ++n) {
    max_dO = std::max(max_dO, qkscope::detail::max_row_norm(*dO[n]));
    max_v = std::max(max_v, qkscope::detail::max_row_norm(*V[n]));
  }
  // The forward's predicate, and gradients that cannot overflow (else the core decides).
  auto fits = [&, fold = fold_check(scale, cfg, mask)](const qkscope::detail::FormBound& b) {
    return fold(b) && qkscope::detail::grads_fit(b, scale, cfg.temperature, max_dO, max_v, mask.L_q,
                                                 double(std::numeric_limits<T>::max()));
  };
  // Gain +inf: the backward takes the fused tanh only where it is within twice the core's
  // error on every pair, without the forward's floor shortcut: dv_h = sum dS t_h is relative to
  // t, and a fused t of absolute error 1e-7 on arguments near 1e-7 put dv 44% off at tau = 1
  // (fuzzer). The forward's logits may then come from the other form; the difference is
  // within a quarter of the rule's floor, and the backward divides P by its own row sum.
  const bool ran = with_scorers(heads, params, cfg.score, std::numeric_limits<double>::infinity(),
                                std::abs(scale) / cfg.temperature, fits,
                                [&](const auto& sc, auto&& finish) {
    std::vector<FlashGrads<T>> g(heads.size());
    flash_backward(sc, ops, V, fwd, dO, mask.L_q, mask.L_k, opt, g);
    for (std::size_t n = 0; n < heads.size(); ++n) {
      out[n].dV = std::move(g[n].dV);
      out[n].drelative = std::move(g[n].drelative);
      out[n].dt5_table = std::move(g[n].dt5_table);
      out[n].ddense = std::move(g[n].ddense);
      out[n].dtemperature = g[n].dtemperature;
      finish(n, g[n], out[n]);
    }
  });
  if (!ran) return core_backward();
  // An overflow in dP = dO V^T or through 1 / tau: the core rescales, or names the gradient.
  // dtemperature is held in double but must fit T, as the core requires (an inf table
  // gradient or a dtau past T's range must not pass where the core throws).
  for (const auto& g : out)
    if (!finite(g.dQ) || !finite(g.dK) || !finite(g.dV) || !std::isfinite(double(T(g.dtemperature))) ||
        !finite(g.dparams.W) || !finite(g.dparams.W_q) || !finite(g.dparams.W_k) || !finite(g.dparams.v) ||
        !finite(g.dparams.b) || !finite(g.dparams.w) || !finite(g.drelative) || !finite(g.dt5_table) ||
        !finite(g.ddense))
      return core_backward();
  return out;
}

}  // namespace detail

/// Tiled backward of B*H heads: fwd[n] from attention_forward_batch with the same
/// arguments, dO[n] = dL/dO of head n (L_q, d_v). Returns per head dQ, dK, dV, dparams
/// (this head's share: sum over heads for shared parameters), drelative, dt5_table, ddense (only with
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

/// Tiled backward of one head for dO = dL/dO (L_q, d_v); `fwd` from cpu::attention_forward
/// with the same arguments. Fills dQ, dK, dV, dparams, drelative, dt5_table, ddense (only when a dense
/// bias is set: (L_q, L_k)) and dtemperature, as qkscope::attention_backward.
template <class T>
AttentionGrads<T> attention_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                     const ScoreParams<T>& params, const AttentionConfig<T>& cfg,
                                     const TiledResult<T>& fwd, const Mat<T>& dO,
                                     const TiledOptions& opt = {}) {
  return std::move(detail::backward_impl<T>({{&Q, &K, &V}}, params, cfg, {&fwd}, {&dO}, opt)[0]);
}

}  // namespace qkscope::cpu
