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
// Stabiliser: each query row's features are divided by exp(its largest exponent), all keys'
// by exp(the largest exponent over all keys). Both are constant factors of numerator and
// denominator of O_i, so they cancel exactly; the largest feature is then 1/sqrt(m), so
// nothing overflows, and features more than ~87 (float) below the largest underflow to 0
// (flushed to exactly 0 below the smallest normal: no subnormal arithmetic).
// The factors are treated as constants in the backward pass, which is exact for O.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/types.hpp"

namespace qkscope::linear {

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
/// exp(scale q . k); scale <= 0 means the scaled-dot default 1 / sqrt(d).
/// Throws std::invalid_argument for m < 1, d < 1 or a non-finite scale.
template <class T>
FeatureMap<T> favor_features(Eigen::Index m, Eigen::Index d, std::uint64_t seed, double scale = 0,
                             bool orthogonal = true) {
  detail::require(std::isfinite(scale), "favor: scale must be finite, got " + detail::num(scale));
  FeatureMap<T> f;
  f.kind = FeatureKind::favor;
  f.W = favor_projection(m, d, seed, orthogonal).cast<T>();
  f.data_scale = std::sqrt(scale > 0 ? scale : 1.0 / std::sqrt(double(d)));
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

/// phi(X) (rows, m). per_row = true (queries) subtracts each row's largest exponent,
/// false (keys) the largest over all rows; see the file comment. Throws for a width
/// mismatch, non-finite input, or a FAVOR+ row whose |x|^2 overflows, naming `name` and the row.
template <class T>
Mat<T> apply_features(const FeatureMap<T>& phi, const Mat<T>& X, bool per_row, const char* name) {
  detail::check_features(phi, X, name);
  // Vectorised exp (Eigen's pexp clamps its argument near -88 in float and returns ~1e-39
  // for anything below, so arguments under the smallest normal's log are flushed to 0).
  const T lo = std::log(std::numeric_limits<T>::min());
  const auto exp0 = [lo](const auto& A) { return (A < lo).select(T(0), A.exp()); };
  if (phi.kind == FeatureKind::elu)
    return (X.array() > T(0)).select(X.array() + T(1), exp0(X.array())).matrix();
  // |x|^2 beyond the float range would make every exponent -inf and the stabiliser inf - inf.
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    qkscope::detail::require(std::isfinite(T(phi.data_scale * phi.data_scale) * X.row(i).squaredNorm()),
                             std::string("linear attention: ") + name + " row " + std::to_string(i) +
                                 " overflows the FAVOR+ feature map (|x|^2 is not finite in this precision)");
  Mat<T> E = favor_exponents(phi, X);
  const T inv_sqrt_m = T(1) / std::sqrt(T(phi.W.rows()));
  if (per_row) {
    for (Eigen::Index i = 0; i < E.rows(); ++i) E.row(i).array() -= E.row(i).maxCoeff();
  } else {
    E.array() -= E.maxCoeff();
  }
  return (exp0(E.array()) * inv_sqrt_m).matrix();
}

/// dL/dX given dL/dF for F = apply_features(phi, X, ...) (stabiliser held constant):
///   elu + 1:  dX = dF * (x > 0 ? 1 : e^x)
///   FAVOR+:   dX = s (W^T (dF .* F)^T - a (dF . F))^T row-wise, a = s x.
template <class T>
Mat<T> features_backward(const FeatureMap<T>& phi, const Mat<T>& X, const Mat<T>& F, const Mat<T>& dF) {
  if (phi.kind == FeatureKind::elu)
    return dF.cwiseProduct(X.unaryExpr([](T x) { return x > T(0) ? T(1) : T(std::exp(x)); }));
  const T s = T(phi.data_scale);
  const Mat<T> GF = dF.cwiseProduct(F);  // (rows, m)
  Mat<T> dX = (GF * phi.W) * s;          // (rows, d)
  for (Eigen::Index i = 0; i < X.rows(); ++i) dX.row(i) -= (s * s * GF.row(i).sum()) * X.row(i);
  return dX;
}

}  // namespace qkscope::linear
