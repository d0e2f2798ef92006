// qkscope/detail/logit_range.hpp — when may a fast path fold the temperature into the
// logits? The core subtracts the row maximum first and divides by tau after:
//   p_j = exp((z_j - max) / tau),
// which stays finite for every finite z and tau > 0. The tiled CPU kernels and the CUDA
// kernels instead compute x = z / tau (often folded into Q as scale / tau) and run the
// online softmax on x. For |z| / tau past the type's maximum that gives x = -inf, and a row
// with visible keys would pass for a fully masked one (z = -3e38, tau = 1e-3), or
// inf - inf = NaN. logits_fold_safe() bounds |z| / tau (and the folded Q) from above
// without computing the scores; a fast path runs only when the bound leaves a margin of 16
// below the maximum, and otherwise hands the call to the core, which returns the right
// value or throws its own error (so both paths agree, or both refuse with one message).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "qkscope/bias/bias.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/types.hpp"

namespace qkscope::detail {

/// Largest row norm of X in double (0 for an empty matrix; inf/NaN propagate).
template <class T>
double max_row_norm(const Mat<T>& X) {
  double m = 0;
  for (Eigen::Index i = 0; i < X.rows(); ++i) m = std::max(m, X.row(i).template cast<double>().norm());
  if (!X.array().isFinite().all()) return std::numeric_limits<double>::infinity();
  return m;
}

/// Upper bound of |f(q_i, k_j)| over all pairs for scoring function `score` (Cauchy-Schwarz;
/// |tanh| <= 1), and of every intermediate the fast path forms on the way (projections).
template <class T>
double raw_score_bound(const std::string& score, const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p) {
  const double q = max_row_norm(Q), k = max_row_norm(K);
  if (score == "dot" || score == "scaled_dot") return std::max({q * k, q, k});
  if (score == "cosine") return 1.0;
  auto fro = [](const auto& m) { return m.size() ? m.template cast<double>().norm() : 0.0; };
  if (score == "bilinear") return std::max({fro(p.W) * q * k, fro(p.W) * q, k});
  if (score == "linear_concat") {
    const double w = fro(p.w);
    return w * (q + k);
  }
  if (score == "additive") {
    // v . tanh(W_q q + W_k k + b): the projections must stay finite too.
    const double proj = fro(p.W_q) * q + fro(p.W_k) * k + fro(p.b);
    return std::max(p.v.size() ? p.v.template cast<double>().template lpNorm<1>() : 0.0, proj);
  }
  return std::numeric_limits<double>::infinity();
}

/// True when scale * f(q, k) with every bias, divided by tau, and (scale / tau) times the
/// inputs, all stay below max(T) / 16 (so sums and differences of two logits are finite),
/// and 1 / tau is a normal number of T. Any NaN or inf in the inputs gives false.
template <class T>
bool logits_fold_safe(const std::string& score, const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p,
                      double scale, double temperature, const BiasSpec<T>& b, Eigen::Index L_q,
                      Eigen::Index L_k) {
  const double limit = double(std::numeric_limits<T>::max()) / 16;
  const double inv_tau = 1.0 / temperature;
  if (!(temperature > 0) || !(inv_tau < limit) || !(double(T(inv_tau)) >= double(std::numeric_limits<T>::min())))
    return false;
  const double raw = raw_score_bound(score, Q, K, p);
  double s = std::abs(scale) * raw;
  if (!(s < limit) || !(raw < limit)) return false;
  if (b.softcap) s = std::min(s, std::abs(*b.softcap));
  if (b.alibi_slope) s += std::abs(*b.alibi_slope) * double(L_q + L_k);
  if (b.relative.size()) s += b.relative.template cast<double>().cwiseAbs().maxCoeff();
  if (b.dense.size()) {
    double d = 0;
    for (Eigen::Index i = 0; i < b.dense.size(); ++i)
      if (std::isfinite(double(b.dense.data()[i]))) d = std::max(d, std::abs(double(b.dense.data()[i])));
    s += d;
  }
  const double fold = std::abs(scale) * inv_tau * std::max({max_row_norm(Q), max_row_norm(K), 1.0});
  return s < limit && s * inv_tau < limit && fold < limit;
}

}  // namespace qkscope::detail
