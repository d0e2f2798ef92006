// qkscope/precision/naive.hpp — the classic reduced-precision attention failures,
// reproduced on purpose so the tutorial can show each next to the correct result
// (precision/mixed.hpp). Every function here returns its values and a Diagnosis and never
// throws for the failure it demonstrates: inf and NaN are the result, not an error.
// Arithmetic "in S" means every operation is rounded to S, as a framework without fp32
// accumulation would do it (Eigen's half/bfloat16 operators: float op, then round).
// B01 ... B16 name the fault cases in tests/data/fault_cases.json (docs/facts.md §10).
//
//   masked_fill_softmax   z = where(keep, s, S(fill)); softmax in S                (B01, B03)
//                         fp16(-1e9) = -inf: a row with no kept key gives -inf - (-inf) = NaN.
//   additive_mask_softmax z = S(s + bias) with bias = finfo(S).min; softmax in S        (B04)
//                         fp16: -65504 + s rounds to -inf once s <= -16 (a tie at -65520).
//   extended_mask_bias    bias = (1 - keep) * S(MIN), in S                              (B05)
//   extended_mask_attention  that bias added to fp32 scores, fp32 softmax, @ V         (B05)
//                         bf16(finfo(fp32).min) = -inf, and 0 * -inf = NaN on every kept key.
//   combine_additive_masks  a + b in S: two finfo(S).min planes sum to -inf             (B05)
//   softmax_no_max        exp(s) / sum exp(s) in S, no max subtracted                   (B16)
//                         exp(89) = inf in fp32, exp(12) = inf in fp16 -> inf / inf = NaN.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/precision/diagnosis.hpp"
#include "qkscope/precision/finfo.hpp"

namespace qkscope::precision::naive {

namespace impl {

/// Row-wise softmax computed in S. subtract_max = true is the textbook-stable form
/// (but has no fully-masked-row policy: max = -inf gives -inf - (-inf) = NaN).
/// exps receives exp(z - max) (or exp(z)); overflow_rows the rows whose sum is +inf.
template <class S>
Mat<S> softmax_in(const Mat<S>& z, bool subtract_max, Mat<S>& exps,
                  std::vector<Eigen::Index>& overflow_rows) {
  using std::exp;  // ADL finds Eigen's half/bfloat16 exp (float exp, rounded to S)
  Mat<S> p(z.rows(), z.cols());
  exps.resize(z.rows(), z.cols());
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    S m = S(0);
    if (subtract_max) {
      m = z(i, 0);
      for (Eigen::Index j = 1; j < z.cols(); ++j)
        if (z(i, j) > m) m = z(i, j);
    }
    S sum = S(0);
    for (Eigen::Index j = 0; j < z.cols(); ++j) {
      exps(i, j) = subtract_max ? exp(S(z(i, j) - m)) : exp(z(i, j));
      sum = S(sum + exps(i, j));
    }
    if (std::isinf(as_double(sum))) overflow_rows.push_back(i);
    for (Eigen::Index j = 0; j < z.cols(); ++j) p(i, j) = S(exps(i, j) / sum);
  }
  return p;
}

template <class S>
MatrixD wide(const Mat<S>& M) {
  return widen<double>(M);
}

inline void require_keep_shape(const KeepMask& keep, Eigen::Index rows, Eigen::Index cols) {
  qkscope::detail::require_shape(keep, rows, cols, "keep (L_q x L_k)");
}

}  // namespace impl

/// masked_fill(scores, ~keep, fill) then softmax, all in S (max subtracted).
/// scores: (L_q, L_k) in S; keep: (L_q, L_k), true = may attend; fill: the constant the
/// code writes, given as a double and stored with round_to<S>.
/// What happens (fault cases B03, B01): a fill that overflows S becomes -inf (fp16: any
/// fill below -65504, e.g. -1e9 or finfo(fp32).min; PyTorch instead raises "value cannot
/// be converted ... without overflow", see diag.pytorch_raises); rows with a kept key are
/// still right, but a row with no kept key becomes NaN (-inf fill) or uniform 1/L_k
/// (finite fill). Throws only for a keep mask of the wrong shape.
template <class S>
Outcome masked_fill_softmax(const Mat<S>& scores, const KeepMask& keep, double fill) {
  impl::require_keep_shape(keep, scores.rows(), scores.cols());
  Mat<S> z = scores;
  const S f = round_to<S>(fill);
  for (Eigen::Index i = 0; i < z.size(); ++i)
    if (!keep.data()[i]) z.data()[i] = f;
  Mat<S> exps;
  Outcome o;
  const Mat<S> p = impl::softmax_in(z, true, exps, o.diag.overflow_rows);
  o.logits = impl::wide(z);
  o.weights = impl::wide(p);
  precision::detail::note_constant<S>(o.diag, fill);
  precision::detail::diagnose(o.diag, o.weights, o.logits, "filled scores (in S)");
  o.diag.summary = precision::detail::summarize(o.diag, std::string("masked_fill + softmax in ") + finfo<S>().name);
  return o;
}

/// The additive mask of many codebases: 0 where keep, finfo(S).min where not.  (L_q, L_k)
template <class S>
Mat<S> finfo_min_bias(const KeepMask& keep) {
  Mat<S> b(keep.rows(), keep.cols());
  const S m = round_to<S>(finfo<S>().min);
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = keep.data()[i] ? S(0) : m;
  return b;
}

/// softmax(scores + bias) with the addition and the softmax in S (max subtracted).
/// scores, bias: (L_q, L_k) in S. With bias = finfo_min_bias (fault case B04):
/// fp16 -65504 + s rounds to -inf for s <= -16 (the next half beyond 65504 would be 65536;
/// -65520 is the tie and rounds to even, i.e. overflows), so a fully masked row with
/// scores <= -16 is NaN while one with milder scores is uniform; in general the cliff is
/// at s <= -finfo<S>().half_ulp_at_max (16 fp16, 2^119 bf16, 2^103 fp32).
/// Throws only when the shapes differ.
template <class S>
Outcome additive_mask_softmax(const Mat<S>& scores, const Mat<S>& bias) {
  qkscope::detail::require_shape(bias, scores.rows(), scores.cols(), "bias (L_q x L_k)");
  Mat<S> z(scores.rows(), scores.cols());
  for (Eigen::Index i = 0; i < z.size(); ++i) z.data()[i] = S(scores.data()[i] + bias.data()[i]);
  Mat<S> exps;
  Outcome o;
  const Mat<S> p = impl::softmax_in(z, true, exps, o.diag.overflow_rows);
  o.bias = impl::wide(bias);
  o.logits = impl::wide(z);
  o.weights = impl::wide(p);
  precision::detail::diagnose(o.diag, o.weights, o.logits, "scores + bias (in S)");
  o.diag.summary = precision::detail::summarize(o.diag, std::string("additive mask + softmax in ") + finfo<S>().name);
  return o;
}

/// The "extended attention mask" bias (1 - keep) * MIN computed in S; MIN given as a
/// double and stored with round_to<S>.  keep (L_q, L_k) -> bias (L_q, L_k).
/// With MIN = finfo(fp32).min and S = bfloat16 (fault case B05): S(MIN) = -inf, so kept
/// entries get 0 * -inf = NaN and masked ones -inf. With MIN = finfo<S>().min it is finite.
/// (MIN = -inf breaks the same way: never multiply a mask by infinity.)
template <class S>
Mat<S> extended_mask_bias(const KeepMask& keep, double min_value) {
  Mat<S> b(keep.rows(), keep.cols());
  const S m = round_to<S>(min_value);
  for (Eigen::Index i = 0; i < b.size(); ++i)
    b.data()[i] = S(S(S(1) - S(keep.data()[i] ? 1.0f : 0.0f)) * m);
  return b;
}

/// The whole B05 pipeline: bias = extended_mask_bias<S>(keep, MIN); z = scores + bias in
/// fp32; softmax in fp32 (max subtracted, no fully-masked-row policy); output = P V in fp32.
/// scores: (L_q, L_k) fp32, keep: (L_q, L_k), V: (L_k, d_v) fp32.
/// diag.nan marks NaN weights; diag.inf marks inf entries of the bias; o.bias shows the NaN
/// the bias itself holds. Throws only when shapes differ.
template <class S>
Outcome extended_mask_attention(const Mat<float>& scores, const KeepMask& keep, double min_value,
                                const Mat<float>& V) {
  impl::require_keep_shape(keep, scores.rows(), scores.cols());
  qkscope::detail::require(V.rows() == scores.cols(), "V must have L_k = " + std::to_string(scores.cols()) +
                                                           " rows, got shape " +
                                                           qkscope::detail::shape_of(V));
  const Mat<S> bias = extended_mask_bias<S>(keep, min_value);
  const Mat<float> z = scores + widen<float>(bias);
  Mat<float> exps;
  Outcome o;
  const Mat<float> p = impl::softmax_in(z, true, exps, o.diag.overflow_rows);
  o.bias = impl::wide(bias);
  o.logits = z.cast<double>();
  o.weights = p.cast<double>();
  o.output = (p * V).cast<double>();
  precision::detail::note_constant<S>(o.diag, min_value);
  precision::detail::diagnose(o.diag, o.weights, o.bias, "bias (in S)");
  o.diag.summary = precision::detail::summarize(
      o.diag, std::string("(1 - keep) * MIN bias in ") + finfo<S>().name + ", softmax in float32");
  return o;
}

/// Two additive mask planes summed in S (a + b), as when a padding and a causal mask are
/// both given as finfo(S).min planes: where both are masked the sum overflows to -inf
/// (fault case B05: bf16(min + min) = -inf). a, b: (L_q, L_k). Returns o.bias = a + b;
/// diag.inf marks the cells that overflowed. Throws only when shapes differ.
template <class S>
Outcome combine_additive_masks(const Mat<S>& a, const Mat<S>& b) {
  qkscope::detail::require_shape(b, a.rows(), a.cols(), "second mask (same shape as the first)");
  Mat<S> sum(a.rows(), a.cols());
  for (Eigen::Index i = 0; i < sum.size(); ++i) sum.data()[i] = S(a.data()[i] + b.data()[i]);
  Outcome o;
  o.bias = impl::wide(sum);
  precision::detail::diagnose(o.diag, o.bias, o.bias, "a + b (in S)");
  o.diag.summary = precision::detail::summarize(o.diag, std::string("mask planes summed in ") + finfo<S>().name);
  return o;
}

/// exp(s) / sum exp(s) per row, in S, without subtracting the row max (fault case B16).
/// scores: (L_q, L_k) in S. exp overflows once s > log(finfo<S>().max) (88.72 fp32 and
/// bf16, 11.09 fp16, 709.78 fp64): inf / inf = NaN for those keys, x / inf = 0 for the
/// rest; a row whose exps are finite but whose sum overflows gets all-zero weights
/// (diag.overflow_rows). diag.inf marks the exps that overflowed.
template <class S>
Outcome softmax_no_max(const Mat<S>& scores) {
  Mat<S> exps;
  Outcome o;
  const Mat<S> p = impl::softmax_in(scores, false, exps, o.diag.overflow_rows);
  o.logits = impl::wide(scores);
  o.weights = impl::wide(p);
  precision::detail::diagnose(o.diag, o.weights, impl::wide(exps), "exp(scores) (in S)");
  o.diag.summary = precision::detail::summarize(o.diag, std::string("softmax without max subtraction in ") + finfo<S>().name);
  return o;
}

}  // namespace qkscope::precision::naive
