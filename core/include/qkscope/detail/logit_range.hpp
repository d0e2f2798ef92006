// qkscope/detail/logit_range.hpp — when may a fast path fold the temperature into the
// logits? The core subtracts the row maximum first and divides by tau after:
//   p_j = exp((z_j - max) / tau),
// which stays finite for every finite z and tau > 0. The tiled CPU kernels and the CUDA
// kernels instead compute x = z / tau (often folded into the query rows as scale / tau) and
// run the online softmax on x. For |z| / tau past the type's maximum that gives x = -inf,
// and a row with visible keys would pass for a fully masked one (z = -3e38, tau = 1e-3), or
// inf - inf = NaN. logits_fold_safe() bounds |z| / tau (and the folded rows) from above
// without computing the scores, from the scoring function's prepared form (score/forms.hpp:
// the bound never asks which function it is); a fast path runs only when the bound leaves a
// margin of 16 below the maximum, and otherwise hands the call to the core, which returns
// the right value or throws its own error (so both paths agree, or both refuse alike).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "qkscope/bias/bias.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/registry.hpp"
#include "qkscope/types.hpp"

namespace qkscope::detail {

/// Bound of one prepared form: |S_ij| <= raw for every pair, and every row the kernel
/// multiplies by scale / tau has norm <= rows.
struct FormBound {
  double raw = 0, rows = 0;
  double cancellation = 0;  // DotForm::cancellation
  double grad_gain = 1;     // DotForm::grad_gain
};

/// Largest row norm of X in double (0 for an empty matrix; inf when X holds inf or NaN).
/// Squares summed in four interleaved partial sums, which compilers pair into SIMD lanes
/// (Eigen's cast-then-norm ran scalar under wasm SIMD: ~20 us per 32 K floats, NOTES.md issue
/// 11, thirteenth session). Its rounding differs from Eigen's by an ulp of double in ~8% of
/// rows; a call exactly at logits_fold_safe's margin can therefore take the other path (the
/// tiled kernel or the core), and both give the right answer.
template <class T>
double max_row_norm(const Mat<T>& X) {
  if (!all_finite(X)) return std::numeric_limits<double>::infinity();
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    double top = 0;  // largest sum of squares
    const Eigen::Index n = X.cols();
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      const T* x = X.data() + i * n;
      double s[4] = {0, 0, 0, 0};
      Eigen::Index k = 0;
      for (; k + 4 <= n; k += 4)
        for (int t = 0; t < 4; ++t) s[t] += double(x[k + t]) * double(x[k + t]);
      for (; k < n; ++k) s[0] += double(x[k]) * double(x[k]);
      top = std::max(top, (s[0] + s[1]) + (s[2] + s[3]));
    }
    return std::sqrt(top);
  } else {
    double m = 0;
    for (Eigen::Index i = 0; i < X.rows(); ++i) m = std::max(m, X.row(i).template cast<double>().norm());
    return m;
  }
}
template <class T>
double max_abs(const Mat<T>& X) {
  if (!X.array().isFinite().all()) return std::numeric_limits<double>::infinity();
  return X.size() ? double(X.cwiseAbs().maxCoeff()) : 0.0;
}

/// S = q k^T: |q_i . k_j| <= |q_i| |k_j| (Cauchy-Schwarz).
template <class T>
FormBound dot_rows_bound(const Mat<T>& q, const Mat<T>& k) {
  const double a = max_row_norm(q), b = max_row_norm(k);
  return {a * b, std::max(a, b)};
}
/// S_ij = sum_h v_h tanh(a_ih + b_jh): |S| <= |v|_1; the tanh arguments must be finite.
/// rows = |v|_1 bounds the gradients' factor v_h (grads_fit).
template <class T>
FormBound additive_bound(const Mat<T>& a, const Mat<T>& b, const Vec<T>& v) {
  const double proj = max_abs(a) + max_abs(b);
  const double v1 = v.array().isFinite().all() ? double(v.template cast<double>().template lpNorm<1>())
                                               : std::numeric_limits<double>::infinity();
  return {std::max(v1, proj), v1};
}

template <class T>
FormBound form_bound(const score::DotForm<T>& f, const Mat<T>& Q, const Mat<T>& K) {
  FormBound b = dot_rows_bound(f.q_or(Q), f.k_or(K));
  b.cancellation = f.cancellation;
  b.grad_gain = f.grad_gain;
  return b;
}
template <class T>
FormBound form_bound(const score::SeparableForm<T>& f, const Mat<T>&, const Mat<T>&) {
  const double a = max_abs(Mat<T>(f.a)), c = max_abs(Mat<T>(f.c));
  return {a + c, std::max(a, c)};
}
template <class T>
FormBound form_bound(const score::AdditiveForm<T>& f, const Mat<T>&, const Mat<T>&) {
  return additive_bound(f.a, f.b, f.v);
}

/// Rounding of one logit from a form that cancels large terms: eps(T) * cancellation *
/// |scale| / tau (0 for the other forms).
template <class T>
double cancellation_rounding(const FormBound& fb, double scale, double temperature) {
  return double(std::numeric_limits<T>::epsilon()) * fb.cancellation * std::abs(scale) / temperature;
}

/// True when scale * S with every bias, divided by tau, and (scale / tau) times the form's
/// rows all stay below max(T) / 16 (so sums and differences of two logits are finite), and
/// 1 / tau is a normal number of T, and a cancelling form's rounding stays at most 1e-5 of a
/// logit (and of a softcap c). Any NaN or inf gives false. `slope` is the largest ALiBi
/// slope in use (cfg.bias's or a per-head one); the relative and T5 tables add their largest
/// |entry| (each pair reads one entry of each).
template <class T>
bool logits_fold_safe(const FormBound& fb, double scale, double temperature, const BiasSpec<T>& b, double slope,
                      Eigen::Index L_q, Eigen::Index L_k) {
  const double limit = double(std::numeric_limits<T>::max()) / 16;
  const double inv_tau = 1.0 / temperature;
  if (!(temperature > 0) || !(inv_tau < limit) || !(double(T(inv_tau)) >= double(std::numeric_limits<T>::min())))
    return false;
  double s = std::abs(scale) * fb.raw;
  if (!(s < limit) || !(fb.raw < limit) || !(fb.rows < limit)) return false;
  if (b.softcap) s = std::min(s, std::abs(*b.softcap));
  s += std::abs(std::max(slope, b.alibi_slope.value_or(0.0))) * double(L_q + L_k);
  if (b.relative.size()) s += max_abs(Mat<T>(b.relative));
  if (b.t5) s += max_abs(Mat<T>(b.t5_table));
  if (b.dense.size()) {
    double d = 0;
    for (Eigen::Index i = 0; i < b.dense.size(); ++i)
      if (std::isfinite(double(b.dense.data()[i]))) d = std::max(d, std::abs(double(b.dense.data()[i])));
    s += d;
  }
  const double fold = std::abs(scale) * inv_tau * std::max(fb.rows, 1.0);
  // A form that cancels large terms (score/forms.hpp) must keep its logits' rounding near
  // the core's: eps * cancellation * scale / tau at most 1e-5 (the tolerance rule's floor is
  // 1e-6 relative; ordinary inputs stay near 1e-6, keys clustered at +-10 reach 7e-5).
  const double rounding = cancellation_rounding<T>(fb, scale, temperature);
  // A softcap's slope 1 - tanh^2(raw / c) (the backward's factor) moves by about
  // 2 |raw error| / c relative: held to the same 1e-5 as above. Past it the form's rounding
  // decides the slope (c = 1e-40 and raw -1e-16 rounded to 0 gave slope 1 for 0: fuzz).
  const double cap_rounding = b.softcap ? cancellation_rounding<T>(fb, scale, std::abs(*b.softcap)) : 0.0;
  return s < limit && s * inv_tau < limit && fold < limit && !(rounding > 1e-5) && !(cap_rounding > 1e-5);
}

/// May a fast path run the backward of a form that enlarges its gradients on the way back
/// (grad_gain > 1: a cosine row near or under the norm floor, dK = dxhat / 1e-8)? There,
/// where terms of dxhat cancel, one rounding decides whether the gradient overflows: two
/// terms of 2.8e37 cancelled exactly, the core's float rounding overflowed and the tiled
/// path's did not (fuzzer finding, docs/RELIABILITY.md). With g = max|dO_i| max|v_j| (row
/// norms), |dP| <= g, |dP - D| <= 2 g, so |dS_ij| <= 2 g P_ij |scale| / tau and the form's
/// gradients are at most 2 g |scale| / tau times its largest row (times L_q for dk, a sum
/// over queries), times grad_gain. True when that bound stays below max(T) / 16 (neither
/// path can overflow) or the form has no gain; otherwise the fast path hands the backward to
/// the core, so the two agree. (The bound is loose by far for one-hot rows, which is why
/// forms without a gain are not held to it.)
inline bool grads_fit(const FormBound& fb, double scale, double temperature, double max_dO, double max_v,
                      Eigen::Index L_q, double limit) {
  if (!(fb.grad_gain > 1)) return true;
  const double bound = fb.grad_gain * 2 * max_dO * max_v * std::abs(scale) / temperature *
                       std::max(fb.rows, 1.0) * double(std::max<Eigen::Index>(L_q, 1));
  return bound < limit / 16;
}

/// Kernels that keep the output unnormalised until the end (acc = sum_j e^(x_j - m) v_j,
/// O = acc / l, as FlashAttention's) hold up to L_k * max|value| in acc. True when that stays
/// below max(T) / 16; the CPU tiled kernels hand such a call to the core (their non-finite
/// safety net), the CUDA host refuses it.
template <class T>
bool values_accumulate_safe(double max_abs_value, Eigen::Index L_k) {
  return max_abs_value * double(std::max<Eigen::Index>(L_k, 1)) < double(std::numeric_limits<T>::max()) / 16;
}

/// The same check for registered scoring function `score` on Q (L_q, d_q), K (L_k, d_k):
/// prepares its form (the registry's prepare hook) and bounds that. Throws as the score's
/// prepare does for bad parameter shapes.
template <class T>
bool logits_fold_safe(const std::string& score, const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p,
                      double scale, double temperature, const BiasSpec<T>& b, Eigen::Index L_q, Eigen::Index L_k) {
  return visit_score(score, [&](auto f) {
    const auto form = decltype(f)::template prepare<T>(Q, K, p);
    return logits_fold_safe<T>(form_bound(form, Q, K), scale, temperature, b, 0.0, L_q, L_k);
  });
}

}  // namespace qkscope::detail
