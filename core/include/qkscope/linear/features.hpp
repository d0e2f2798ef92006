// qkscope/linear/features.hpp — feature maps phi for kernelised ("linear") attention,
//   sim(q, k) = phi(q) . phi(k) > 0,   O_i = sum_j sim(q_i, k_j) v_j / sum_j sim(q_i, k_j).
// - elu + 1: phi(x) = elu(x) + 1, m = d (Katharopoulos et al. 2020, "Transformers are
//   RNNs", eq. 7).
// - FAVOR+: positive random features of the softmax kernel (Choromanski et al. 2021,
//   "Rethinking Attention with Performers", Lemma 1 and §2.4):
//     phi(x) = exp(W a - |a|^2 / 2) / sqrt(m),  a = sqrt(scale) x,
//   so E[phi(q) . phi(k)] = exp(scale q . k), the softmax kernel with the scaled-dot scale
//   (default 1 / sqrt(d)). W (m, d) has orthogonal random directions: blocks of d rows
//   from Gram-Schmidt of Gaussian blocks (exactly Haar-distributed frames), each row
//   rescaled by the norm of an independent N(0, I_d) vector (chi with d degrees of
//   freedom), so every row is marginally N(0, I_d) as Lemma 1 needs (Performer §2.4,
//   "orthogonal random features"; Yu et al. 2016).
// Log-features. Both maps are handled as L = log phi, which neither overflows nor underflows:
//   elu + 1: L(x) = log(1 + x) for x > 0, x otherwise;   FAVOR+: L = W a - |a|^2 / 2 - log sqrt(m).
// Stabiliser (attention.hpp applies it): keys are exponentiated per feature column r against
// b_r, the largest L_r over the keys a query sees, and b is folded into the query side,
//   phi~(k_j)_r = exp(L(k_j)_r - b_r),   phi~(q_i)_r = exp(L(q_i)_r + b_r - c_i),
//   c_i = max_r (L(q_i)_r + b_r).
// Every pair product phi~(q_i)_r phi~(k_j)_r = phi(q_i)_r phi(k_j)_r e^{-c_i}: the per-row
// factor e^{-c_i} cancels in O_i, and the denominator is >= 1 (at r* = argmax, the query
// feature is 1 and the column's largest key feature is 1), so it cannot underflow to 0 and,
// with all features <= 1, cannot overflow. A feature flushed to 0 (below the smallest normal:
// no subnormal arithmetic) contributes less than ~1e-38 of the denominator. One maximum per
// column rather than one over the whole matrix matters: a key whose feature is large in one
// column would otherwise underflow every other key's features in the other columns.
// The stabiliser is treated as a constant in the backward pass, which is exact for O.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/types.hpp"

namespace qkscope::linear {

/// A row vector (1, n), e.g. the column maxima of the stabiliser.
template <class T>
using RowVec = Eigen::Matrix<T, 1, Eigen::Dynamic>;

enum class FeatureKind { elu, favor };

/// A feature map phi: R^d -> R^m with positive values.
template <class T>
struct FeatureMap {
  FeatureKind kind = FeatureKind::elu;
  /// FAVOR+ projection (m, d), rows = random directions; empty for elu + 1.
  Mat<T> W;
  /// FAVOR+ input scale sqrt(scale): a = data_scale * x. Unused for elu + 1.
  double data_scale = 1;

  /// Number of features m of an input of width d.
  Eigen::Index features(Eigen::Index d) const { return kind == FeatureKind::elu ? d : W.rows(); }
};

/// phi(x) = elu(x) + 1 (Katharopoulos et al. 2020, eq. 7); m = d.
template <class T>
FeatureMap<T> elu_features() {
  return {};
}

/// (m, d) projection with orthogonal random rows, seeded (see the file comment).
/// orthogonal = false draws iid N(0, I_d) rows instead (the plain Lemma 1 estimator).
/// Throws std::invalid_argument for m < 1 or d < 1.
inline MatrixD favor_projection(Eigen::Index m, Eigen::Index d, std::uint64_t seed, bool orthogonal = true) {
  detail::require(m >= 1, "favor: feature count m must be >= 1, got " + std::to_string(m));
  detail::require(d >= 1, "favor: width d must be >= 1, got " + std::to_string(d));
  detail::Rng rng(seed);
  MatrixD W(m, d);
  for (Eigen::Index i = 0; i < W.size(); ++i) W.data()[i] = rng.normal();
  if (!orthogonal) return W;
  // Gram-Schmidt within each block of d rows (run twice: "twice is enough", Giraud et al.
  // 2005), then every row gets the norm of a fresh Gaussian vector.
  for (Eigen::Index b0 = 0; b0 < m; b0 += d) {
    const Eigen::Index n = std::min(d, m - b0);
    for (Eigen::Index r = b0; r < b0 + n; ++r) {
      for (int pass = 0; pass < 2; ++pass)
        for (Eigen::Index p = b0; p < r; ++p) W.row(r) -= W.row(r).dot(W.row(p)) * W.row(p);
      W.row(r) /= W.row(r).norm();
    }
  }
  for (Eigen::Index r = 0; r < m; ++r) {
    double sq = 0;
    for (Eigen::Index c = 0; c < d; ++c) {
      const double g = rng.normal();
      sq += g * g;
    }
    W.row(r) *= std::sqrt(sq);
  }
  return W;
}

/// FAVOR+ features for inputs of width d: m seeded directions, softmax kernel
/// exp(scale q . k); scale = 0 means the scaled-dot default 1 / sqrt(d).
/// Throws std::invalid_argument for m < 1, d < 1, or a scale that is negative, not finite,
/// or not representable in T (sqrt(scale) or scale rounding to 0 or inf: every feature
/// would be equal, or every exponent -inf).
template <class T>
FeatureMap<T> favor_features(Eigen::Index m, Eigen::Index d, std::uint64_t seed, double scale = 0,
                             bool orthogonal = true) {
  detail::require(std::isfinite(scale) && scale >= 0,
                  "favor: scale must be finite and >= 0 (0 = the default 1/sqrt(d)), got " + detail::num(scale));
  FeatureMap<T> f;
  f.kind = FeatureKind::favor;
  f.W = favor_projection(m, d, seed, orthogonal).cast<T>();
  f.data_scale = std::sqrt(scale > 0 ? scale : 1.0 / std::sqrt(double(d)));
  const T s = T(f.data_scale), s2 = T(f.data_scale * f.data_scale);
  detail::require(s > T(0) && s2 > T(0) && std::isfinite(double(s2)),
                  "favor: scale " + detail::num(scale) +
                      " is not representable (it or its square root rounds to 0 or inf) in this precision");
  return f;
}

namespace detail {

/// Checks that X (rows, d) can be mapped by phi; `name` is the argument ("query", "key").
template <class T>
void check_features(const FeatureMap<T>& phi, const Mat<T>& X, const char* name) {
  qkscope::detail::require_nonempty(X, name);
  qkscope::detail::require_finite(X, name);
  if (phi.kind == FeatureKind::favor) {
    qkscope::detail::require(phi.W.rows() >= 1, "features.W: feature count m must be >= 1, got 0");
    qkscope::detail::require(phi.W.cols() == X.cols(),
                             std::string(name) + " must have width d = " + std::to_string(phi.W.cols()) +
                                 " (the columns of features.W), got shape " + qkscope::detail::shape_of(X));
  }
}

}  // namespace detail

/// Exponents E = W a - |a|^2 / 2 of FAVOR+ (rows, m) before the stabiliser.
template <class T>
Mat<T> favor_exponents(const FeatureMap<T>& phi, const Mat<T>& X) {
  const T s = T(phi.data_scale);
  Mat<T> E = (X * phi.W.transpose()) * s;  // (rows, m)
  for (Eigen::Index i = 0; i < X.rows(); ++i) E.row(i).array() -= T(0.5) * s * s * X.row(i).squaredNorm();
  return E;
}

/// log phi(X) (rows, m) (see the file comment). Throws for a width mismatch, non-finite input,
/// or a FAVOR+ row whose |x|^2 overflows, naming `name` and the row.
template <class T>
Mat<T> log_features(const FeatureMap<T>& phi, const Mat<T>& X, const char* name) {
  detail::check_features(phi, X, name);
  if (phi.kind == FeatureKind::elu)
    return X.unaryExpr([](T x) { return x > T(0) ? T(std::log1p(x)) : x; });
  // |x|^2 beyond the float range would make every exponent -inf and the stabiliser inf - inf.
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    qkscope::detail::require(std::isfinite(T(phi.data_scale * phi.data_scale) * X.row(i).squaredNorm()),
                             std::string("linear attention: ") + name + " row " + std::to_string(i) +
                                 " overflows the FAVOR+ feature map (|x|^2 is not finite in this precision)");
  Mat<T> E = favor_exponents(phi, X);
  E.array() -= T(0.5 * std::log(double(phi.W.rows())));
  return E;
}

/// e^A elementwise, flushed to 0 below the smallest normal (Eigen's vectorised exp clamps its
/// argument near -88 in float and returns ~1e-39 for anything below; -inf gives 0).
template <class T, class Derived>
typename Derived::PlainObject exp_flushed(const Eigen::MatrixBase<Derived>& A) {
  const T lo = std::log(std::numeric_limits<T>::min());
  return (A.array() < lo).select(T(0), A.array().exp()).matrix();
}

/// dL/dX given dL/dlog phi(X) (rows, m), the gradient with respect to the log-features:
///   elu + 1:  dX = dL * (x > 0 ? 1 / (1 + x) : 1)
///   FAVOR+:   dX = s (W^T dL^T - a (sum_r dL_r))^T row-wise, a = s x.
template <class T>
Mat<T> log_features_backward(const FeatureMap<T>& phi, const Mat<T>& X, const Mat<T>& dL) {
  if (phi.kind == FeatureKind::elu)
    return dL.cwiseProduct(X.unaryExpr([](T x) { return x > T(0) ? T(1) / (T(1) + x) : T(1); }));
  const T s = T(phi.data_scale);
  Mat<T> dX = (dL * phi.W) * s;  // (rows, d)
  for (Eigen::Index i = 0; i < X.rows(); ++i) dX.row(i) -= (s * s * dL.row(i).sum()) * X.row(i);
  return dX;
}

}  // namespace qkscope::linear
