// qkscope/precision/diagnosis.hpp — what a numerics demonstration returns: its values and
// a small diagnosis of where inf and NaN appeared, so the tutorial can show a classic
// failure (naive.hpp) next to the correct result (mixed.hpp) without exceptions.
//   Outcome   = { bias, logits, weights, output } as held in the compute type, widened
//               to double (exact), plus a Diagnosis.
//   Diagnosis = NaN cells of the result, inf cells of one named intermediate, counts,
//               the rows hit, and what happened to a constant (fill value / MIN) on its
//               way into the storage type.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "qkscope/precision/finfo.hpp"

namespace qkscope::precision {

/// Where a demonstration produced inf or NaN.
struct Diagnosis {
  /// true where the final result (weights, or output when one is computed) is NaN.
  KeepMask nan;                                  // (L_q, L_k) or (L_q, d_v)
  /// true where the intermediate named by `stage` is +inf or -inf.
  KeepMask inf;                                  // shape of that intermediate
  const char* stage = "";                        // "filled scores", "scores + bias", "exp", ...
  Eigen::Index nan_count = 0, inf_count = 0;
  std::vector<Eigen::Index> nan_rows;            // query rows with at least one NaN
  std::vector<Eigen::Index> overflow_rows;       // rows whose softmax sum was +inf (weights -> 0)
  /// The constant written into the storage type (fill value, MIN), if the demo has one.
  bool has_constant = false;
  double constant_requested = 0, constant_stored = 0;
  ValueCast constant_cast = ValueCast::exact;
  /// PyTorch would refuse this constant for the storage dtype (masked_fill's range check).
  bool pytorch_raises = false;
  /// One line for a caption: what happened and why.
  std::string summary;

  /// No NaN in the result.
  bool ok() const { return nan_count == 0; }
};

/// The values of one demonstration, each widened exactly to double. Empty when unused.
struct Outcome {
  MatrixD bias;     // additive bias as stored                       (L_q, L_k)
  MatrixD logits;   // what entered the softmax, in the compute type (L_q, L_k)
  MatrixD weights;  // softmax result                                (L_q, L_k)
  MatrixD output;   // weights x V                                   (L_q, d_v)
  Diagnosis diag;
};

namespace detail {

inline KeepMask where_inf(const MatrixD& M) {
  return M.unaryExpr([](double x) { return std::isinf(x); });
}

/// Fills diag.nan / counts / nan_rows from `result` and diag.inf from `intermediate`.
inline void diagnose(Diagnosis& d, const MatrixD& result, const MatrixD& intermediate,
                     const char* stage) {
  d.nan = result.unaryExpr([](double x) { return std::isnan(x); });
  d.nan_count = d.nan.count();
  d.nan_rows.clear();
  for (Eigen::Index i = 0; i < d.nan.rows(); ++i)
    if (d.nan.row(i).any()) d.nan_rows.push_back(i);
  d.stage = stage;
  d.inf = where_inf(intermediate);
  d.inf_count = d.inf.count();
}

/// Records what storing `requested` into S did.
template <class S>
void note_constant(Diagnosis& d, double requested) {
  d.has_constant = true;
  d.constant_requested = requested;
  d.constant_stored = stored_value<S>(requested);
  d.constant_cast = classify_cast<S>(requested);
  d.pytorch_raises = pytorch_raises_on_fill<S>(requested);
}

inline std::string rows_str(const std::vector<Eigen::Index>& rows) {
  std::string s;
  for (auto r : rows) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return "[" + s + "]";
}

/// "<name>: no NaN" or "<name>: NaN in rows [..] (<n> cells); <k> inf in <stage>".
inline std::string summarize(const Diagnosis& d, const std::string& name) {
  std::string s = name + ": ";
  if (d.has_constant)
    s += "constant " + qkscope::detail::num(d.constant_requested) + " stored as " +
         qkscope::detail::num(d.constant_stored) + " (" + to_string(d.constant_cast) +
         (d.pytorch_raises ? "; PyTorch would raise an overflow error" : "") + "); ";
  s += std::to_string(d.inf_count) + " inf in " + d.stage + "; ";
  s += d.nan_count ? "NaN in rows " + rows_str(d.nan_rows) + " (" + std::to_string(d.nan_count) + " cells)"
                   : "no NaN";
  if (!d.overflow_rows.empty())
    s += "; softmax sum overflowed in rows " + rows_str(d.overflow_rows) + " (weights flushed to 0)";
  return s;
}

}  // namespace detail

}  // namespace qkscope::precision
