// qkscope/cpu/additive_inputs.hpp — which form the fused additive scorer (cpu/additive.hpp)
// takes for a call, per unit (exp form or, for a small unit, tanh(a + b) itself) and per call (the direct tanh where
// the fused error would pass the core's), and the precomputed exponentials and tanh it reads.
#pragma once

#include <cmath>
#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>

#include "qkscope/cpu/additive.hpp"
#include "qkscope/score/forms.hpp"

namespace qkscope::cpu::detail {

/// Is the fused tanh accurate enough for logits scaled by logit_gain = |scale| / tau? Its
/// error is absolute, ~1.3 eps per tanh whatever the argument (NOTES.md step 2). The core's
/// (its float error, and how far its answer moves when the inputs round once) is about
/// 2 eps min(1, |a| + |b|) per tanh, so near 0 the fused error is many times the core's, and a
/// small tau amplifies both: additive at tau = 1e-4 on inputs near 1e-8 had a logsumexp 6e-5
/// off where the rule allows 1e-6; a key at 0 beside one at 2.03, 2.5e-4 where it allows
/// 6.5e-5 (fuzzer; a reviewer's checker found the same family). On pair (i, j) the core's
/// error sum_h |v_h| 2 eps min(1, |a_ih| + |b_jh|) is at least 2 eps max(qa_i, kb_j), with
/// qa_i = sum_h |v_h| min(1, |a_ih|) and kb_j likewise, so over all pairs at least
/// 2 eps max(min_i qa_i, min_j kb_j). Fused when its error, summed over h with |v_h| and times
/// logit_gain, stays a quarter of the rule's floor (1e-6), or within twice that least error
/// of the core (the rule's own factor). Ordinary inputs (projections near
/// 1 in size) stay fused; a call with a query or key whose projections are all small, at a
/// tau that amplifies the difference, takes the direct tanh (2.2 times slower: NOTES.md).
/// min over the rows x_i of sum_h w_h min(1, |x_ih|) (w_h = 1 without weights). Scalar loops:
/// small code in the wasm modules.
/// Units with skip[h] != 0 (the small units; null: none) are left out.
template <class T>
double min_row_mass(const Mat<T>& x, const Vec<T>* w, const Vec<T>* skip) {
  double least = std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < x.rows(); ++i) {
    double mass = 0;
    for (Eigen::Index h = 0; h < x.cols(); ++h)
      if (!skip || (*skip)(h) == 0)
        mass += (w ? std::abs(double((*w)(h))) : 1.0) * std::min(1.0, std::abs(double(x(i, h))));
    least = std::min(least, mass);
  }
  return least;
}

/// Units with xu[h] != 0 are left out of both sides (null: every unit counts). The scorer
/// passes null (prepare below says why); counting a unit's mass but not its error let a small
/// unit's mass cover an exp-form unit's error near 0 (dv 105 times the bar, review).
template <class T>
bool fused_tanh_accurate(const score::AdditiveForm<T>& f, double logit_gain, const Vec<T>* xu) {
  const double eps = double(std::numeric_limits<T>::epsilon());
  const Eigen::Index dh = f.v.size();
  if (dh == 0 || f.a.rows() == 0 || f.b.rows() == 0) return true;
  double fused = 0, units = 0;
  for (Eigen::Index h = 0; h < dh; ++h)
    if (!xu || (*xu)(h) == 0) fused += 1.3 * eps * std::abs(double(f.v(h))), units += 1;
  // The backward (gain +inf) also forms dv_h = sum dS t_h, whose error does not scale with
  // v_h: v = 0 made the weighted test below pass at arguments near 7e-6, where the fused t is
  // 1.4% off, and dv came out 2.6% off (fuzzer). So the same test with every |v_h| = 1 too.
  if (std::isinf(logit_gain) &&
      1.3 * eps * units > 2 * 2 * eps * std::max(min_row_mass<T>(f.a, nullptr, xu), min_row_mass<T>(f.b, nullptr, xu)))
    return false;
  if (fused * logit_gain <= 2.5e-7) return true;
  return fused <= 2 * 2 * eps * std::max(min_row_mass<T>(f.a, &f.v, xu), min_row_mass<T>(f.b, &f.v, xu));
}

/// The exponentials of the fused form that the scorer points into (once per call), and what
/// the double tiles and the backward's double sums read (cpu/additive.hpp's header).
template <class T>
struct AdditiveInputs {
  Mat<T> EA, EB, EBt, BT;
  Vec<T> XU;
  AdditiveF64 F64;
  /// A and B projected in double, with v: the double tiles' inputs and the double sums' form.
  score::AdditiveForm<double> form64;
  /// T = float, backward: the double scorer that takes the sums (its own inputs in in64).
  std::unique_ptr<AdditiveInputs<double>> in64;
  AdditiveScorer<double> S64{};
  Mat<double> dA64, dB64, dv64;  // the sums in double (AdditiveScorer::dA64, finish64)
  /// logit_gain = |scale| / tau of the call (fused_tanh_accurate; +inf in the backward);
  /// score_gain = |scale| / tau in both: past score::Additive::refine_gain (weighed by sum |v_h|:
  /// score::Additive::tile_gain) the tiles are formed in double (cpu/additive_f64.hpp). In the
  /// backward of T = float, the sums too, always, and the same double tiles for dL/dtau
  /// (AdditiveScorer::double_scores).
  AdditiveScorer<T> prepare(const score::AdditiveForm<T>& f, double logit_gain, double score_gain) {
    AdditiveScorer<T> sc = prepare_t(f, logit_gain);
    constexpr bool narrow = !std::is_same_v<T, double>;
    // score_gain > 0 first: the double sums' scorer (score_gain 0, below) then keeps no double
    // tiles code in the tiled wasm module (1.3 KB gzipped).
    const bool tiles =
        score_gain > 0 && score::Additive::tile_gain(score_gain, f.v) > score::Additive::refine_gain;
    const bool sums = narrow && std::isinf(logit_gain);
    if (!tiles && !sums) return sc;
    form64.a = project_f64(*f.Q, *f.W_q, f.bias);
    form64.b = project_f64(*f.K, *f.W_k, static_cast<const Vec<T>*>(nullptr));
    if (tiles) {
      F64.prepare(form64.a, form64.b, f.v);
      sc.f64 = &F64;
    }
    if constexpr (narrow) {
      if (sums) {
        form64.v = f.v.template cast<double>();
        in64 = std::make_unique<AdditiveInputs<double>>();
        S64 = in64->prepare(form64, logit_gain, 0.0);
        S64.ds_eps = double(std::numeric_limits<T>::epsilon());  // the dS it is handed are T's
        sc.sums64 = &S64;
        // dL/dtau from logits in double (cpu/temperature_grad.hpp, double_logit_row).
        if (!tiles) F64.prepare(form64.a, form64.b, f.v);
        sc.scores64 = &F64;
        dA64 = Mat<double>::Zero(form64.a.rows(), form64.a.cols());
        dB64 = Mat<double>::Zero(form64.b.rows(), form64.b.cols());
        dv64 = Mat<double>::Zero(form64.a.rows(), form64.a.cols());
        sc.dA64 = &dA64;
        sc.dB64 = &dB64;
        sc.dv64 = &dv64;
      }
    }
    return sc;
  }
  /// Why the backward's sums run in double for T = float: the float forms' t and u keep
  /// ~1.3 eps of absolute error (the exp form) or an ulp of t (the direct tanh), and rows whose
  /// terms cancel (tied or near keys under a large dS, V of 1e37, v of -369) kept too few
  /// digits by the fuzz harness's bar while the float estimates passed them (25 open inputs at
  /// tau 1e-4 to 1). In double only the dS's own float rounding is left, as in the core. Cost:
  /// the tiled additive backward 1.6-1.9x (SSE2) to 2.3-3x (AVX-512) at tau = 1.
  /// After the backward (T = float): dQ = dA W_q, dK = dB W_k, dW_q = dA^T Q, dW_k = dB^T K,
  /// db = sum_i dA_i and dv from the sums in double, each rounded to T once (as the core forms
  /// them in its own precision: score::Additive::prepared_backward). In T these products of
  /// rounded dA and dB cancelled: eight tied keys' dW_k = 4 sum_j dB_j, 3e-5 where it is ~5e-14.
  /// Returns false where the backward did not run its sums in double (T = double).
  bool finish64(const Mat<T>& Q, const Mat<T>& K, const score::AdditiveForm<T>& f, ScoreGrads<T>& g) const {
    if (dA64.size() == 0 && dB64.size() == 0) return false;
    const Vec<double>* none = nullptr;
    g.dQ = project_f64(dA64, f.W_q->transpose(), none).template cast<T>();
    g.dK = project_f64(dB64, f.W_k->transpose(), none).template cast<T>();
    g.dparams.W_q = project_f64(dA64.transpose(), Q.transpose(), none).template cast<T>();
    g.dparams.W_k = project_f64(dB64.transpose(), K.transpose(), none).template cast<T>();
    g.dparams.v = dv64.colwise().sum().transpose().template cast<T>();
    g.dparams.b = dA64.colwise().sum().transpose().template cast<T>();
    return true;
  }

 private:
  AdditiveScorer<T> prepare_t(const score::AdditiveForm<T>& f, double logit_gain) {
    const Mat<T>&A = f.a, &B = f.b;
    const T limit = T(0.45) * std::log(std::numeric_limits<T>::max());
    const bool in_range = (A.size() == 0 || A.cwiseAbs().maxCoeff() <= limit) &&
                          (B.size() == 0 || B.cwiseAbs().maxCoeff() <= limit);
    // Small units: every |A_ih| and |B_jh| at most 1/2 (the header's comment).
    XU = Vec<T>::Zero(f.v.size());
    bool any = false;
    for (Eigen::Index h = 0; h < XU.size() && A.rows() > 0 && B.rows() > 0; ++h)
      if (A.col(h).cwiseAbs().maxCoeff() <= T(0.5) && B.col(h).cwiseAbs().maxCoeff() <= T(0.5)) XU(h) = 1, any = true;
    const Vec<T>* xu = any ? &XU : nullptr;
    // The call's choice weighs every unit as the exp form, as before the small units' form:
    // leaving them out let the 2.5e-7 floor accept the exp form for one unit over keys 1e-8
    // apart where the call used to take the direct tanh (dQ 4.9 times the bar: the fourth
    // session's campaign). The small units' form only makes a fused call more accurate.
    if (!in_range || !fused_tanh_accurate(f, logit_gain, static_cast<const Vec<T>*>(nullptr))) {
      BT = B.transpose();
      return {&A, &B, &f.v, nullptr, nullptr, nullptr, &BT, nullptr, f.K, f.W_k};
    }
    EA = exp_packets(A);
    EB = exp_packets(B);
    for (Eigen::Index h = 0; xu && h < XU.size(); ++h)
      if (XU(h) != 0) EA.col(h) = A.col(h), EB.col(h) = B.col(h);
    EBt = EB.transpose();
    return {&A, &B, &f.v, &EA, &EB, &EBt, nullptr, xu, f.K, f.W_k};
  }
};

}  // namespace qkscope::cpu::detail
