// qkscope/linear/attention.hpp — kernelised ("linear") attention, forward and backward:
//   O_i = phi(q_i) S_i / (phi(q_i) . z_i),  S_i = sum_{j in J(i)} phi(k_j) v_j^T (m, d_v),
//                                           z_i = sum_{j in J(i)} phi(k_j)       (m)
// J(i) = every key (non-causal: S and z are computed once, O(L m d) instead of O(L^2 d)),
// or the keys j <= i + o (causal: prefix sums, the RNN view of Katharopoulos et al. 2020,
// eqs. 8-12), with the diagonal offset o of the mask (0 top-left, L_k - L_q bottom-right).
// Feature maps: features.hpp (elu + 1; FAVOR+, Choromanski et al. 2021).
//
// Normaliser policy. Every feature is > 0 in exact arithmetic, so the denominator is a
// sum of positive terms: it cannot cancel (unlike random features with sin/cos, which
// FAVOR+ was built to avoid, Performer §2.3). In floating point features can underflow to
// 0 (elu + 1 of x < -87 in float; FAVOR+ features far below the stabiliser's maximum);
// a row whose denominator is exactly 0 (every visible feature product underflowed, or no
// visible key under causal alignment) gets output 0 and gradient 0, like a fully masked
// softmax row, never 0/0 = NaN.
// fp16/bf16 storage (linear_attention_forward_mixed): Q, K, V are stored in half/bfloat16,
// widened exactly to fp32, and features, S, z and the normaliser are computed and kept in
// fp32; only the output is rounded to the storage type. Storing the features themselves in
// fp16 would flush those below 2^-24 to 0 (bf16 keeps fp32's range but 8 bits of
// mantissa), so the core never does; the stabiliser already keeps them <= 1/sqrt(m).
// Overflow policy: finite inputs whose normaliser, output or gradient overflows the working
// precision (elu + 1 features grow linearly, so large q . k or large values can) throw
// std::invalid_argument naming the input and row instead of returning inf/NaN.
#pragma once

#include <algorithm>
#include <string>

#include "qkscope/linear/features.hpp"
#include "qkscope/mask/mask.hpp"
#include "qkscope/precision/finfo.hpp"

namespace qkscope::linear {

/// Options of linear attention.
struct LinearConfig {
  /// Causal prefix sums: query i sees keys j <= i + o.
  bool causal = false;
  /// Diagonal alignment of the causal band for L_q != L_k (see mask/mask.hpp).
  CausalAlignment alignment = CausalAlignment::top_left;
};

/// Forward result; everything the backward pass needs.
template <class T>
struct LinearResult {
  Mat<T> output;       // O                                   (L_q, d_v)
  Mat<T> q_features;   // phi(Q), stabilised                  (L_q, m)
  Mat<T> k_features;   // phi(K), stabilised                  (L_k, m)
  Vec<T> denominator;  // phi(q_i) . z_i; 0 = row with no weight  (L_q)
};

/// Gradients of a scalar loss given dL/dO.
template <class T>
struct LinearGrads {
  Mat<T> dQ, dK, dV;
};

namespace detail {

template <class T>
void check_linear(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V) {
  qkscope::detail::require_nonempty(V, "value");
  qkscope::detail::require_finite(V, "value");
  qkscope::detail::require(K.cols() == Q.cols(), "key must have the width d = " + std::to_string(Q.cols()) +
                                                     " of query, got shape " + qkscope::detail::shape_of(K));
  qkscope::detail::require(V.rows() == K.rows(), "value must have L_k = " + std::to_string(K.rows()) +
                                                     " rows (one per key), got shape " +
                                                     qkscope::detail::shape_of(V));
}

/// Throws unless the forward result is finite: a non-finite denominator of row i names the
/// query row and the keys (phi(q_i) . z_i overflowed), a non-finite output the values (S_i).
template <class T>
void check_forward_finite(const LinearResult<T>& r) {
  for (Eigen::Index i = 0; i < r.output.rows(); ++i) {
    qkscope::detail::require(std::isfinite(double(r.denominator(i))),
                             "linear attention: query row " + std::to_string(i) +
                                 " overflows the normaliser phi(q_i) . z (query or key too large for this precision)");
    for (Eigen::Index c = 0; c < r.output.cols(); ++c)
      qkscope::detail::require(std::isfinite(double(r.output(i, c))),
                               "value: the key-value state S = sum_j phi(k_j) v_j^T overflowed at output (" +
                                   std::to_string(i) + ", " + std::to_string(c) + ") (value too large for this precision)");
  }
}

/// Throws unless gradient `name` (dQuery, dKey, dValue) is finite, naming the first bad cell.
template <class T>
void check_grad_finite(const Mat<T>& g, const char* name) {
  for (Eigen::Index i = 0; i < g.rows(); ++i)
    for (Eigen::Index c = 0; c < g.cols(); ++c)
      qkscope::detail::require(std::isfinite(double(g(i, c))),
                               std::string("grad_output: the gradient ") + name + " overflowed at (" +
                                   std::to_string(i) + ", " + std::to_string(c) +
                                   ") (grad_output or inputs too large for this precision)");
}

inline Eigen::Index diagonal_offset(const LinearConfig& c, Eigen::Index L_q, Eigen::Index L_k) {
  return c.alignment == CausalAlignment::bottom_right ? L_k - L_q : 0;
}

/// Number of keys query i sees: all, or min(L_k, max(0, i + o + 1)) under causal.
inline Eigen::Index visible_keys(bool causal, Eigen::Index i, Eigen::Index o, Eigen::Index L_k) {
  if (!causal) return L_k;
  return std::clamp<Eigen::Index>(i + o + 1, 0, L_k);
}

}  // namespace detail

/// Linear attention forward. Q (L_q, d), K (L_k, d), V (L_k, d_v); phi from features.hpp.
/// Throws std::invalid_argument naming the argument for empty, non-finite or mismatched
/// inputs (and a FAVOR+ projection whose width is not d), and naming the input and row
/// when a feature, the normaliser or the output overflows (see the file comment).
template <class T>
LinearResult<T> linear_attention_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                         const FeatureMap<T>& phi, const LinearConfig& cfg = {}) {
  detail::check_linear(Q, K, V);
  LinearResult<T> r;
  r.q_features = apply_features(phi, Q, true, "query");   // (L_q, m)
  r.k_features = apply_features(phi, K, false, "key");    // (L_k, m)
  const Eigen::Index L_q = Q.rows(), L_k = K.rows(), m = r.q_features.cols(), dv = V.cols();
  r.output.setZero(L_q, dv);
  r.denominator.setZero(L_q);
  const auto finish = [&](Eigen::Index i, const Mat<T>& S, const Vec<T>& z) {
    const T den = r.q_features.row(i).dot(z);
    r.denominator(i) = den;
    if (den > T(0)) r.output.row(i).noalias() = (r.q_features.row(i) * S) / den;
  };
  if (!cfg.causal) {  // two GEMMs: (phi(K)^T V), then phi(Q) times it
    const Mat<T> S = r.k_features.transpose() * V;                      // (m, d_v)
    const Vec<T> z = r.k_features.colwise().sum().transpose();          // (m)
    r.output.noalias() = r.q_features * S;
    r.denominator.noalias() = r.q_features * z;
    for (Eigen::Index i = 0; i < L_q; ++i) {
      const T den = r.denominator(i);
      if (den > T(0)) r.output.row(i) /= den;
      else r.output.row(i).setZero();
    }
    detail::check_forward_finite(r);
    return r;
  }
  const Eigen::Index o = detail::diagonal_offset(cfg, L_q, L_k);
  Mat<T> S = Mat<T>::Zero(m, dv);
  Vec<T> z = Vec<T>::Zero(m);
  Eigen::Index added = 0;
  for (Eigen::Index i = 0; i < L_q; ++i) {
    for (const Eigen::Index n = detail::visible_keys(true, i, o, L_k); added < n; ++added) {
      S.noalias() += r.k_features.row(added).transpose() * V.row(added);
      z += r.k_features.row(added).transpose();
    }
    finish(i, S, z);
  }
  detail::check_forward_finite(r);
  return r;
}

/// Gradients of sum(G .* O) for fwd = linear_attention_forward(Q, K, V, phi, cfg); G is
/// (L_q, d_v). With d = dO_i / den_i and e = -(dO_i . O_i) / den_i (0 for a row with
/// den = 0): dphi(q_i) = S_i d + e z_i; key j collects R_j = sum_{i sees j} phi(q_i) d_i^T and
/// r_j = sum_{i sees j} e_i phi(q_i): dV_j = phi(k_j) R_j, dphi(k_j) = R_j v_j + r_j
/// (suffix sums under causal). Throws for a G of the wrong shape or non-finite, and when a
/// gradient overflows (naming it and the cell).
template <class T>
LinearGrads<T> linear_attention_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                         const FeatureMap<T>& phi, const LinearConfig& cfg,
                                         const LinearResult<T>& fwd, const Mat<T>& G) {
  qkscope::detail::require_shape(G, fwd.output.rows(), fwd.output.cols(), "grad_output");
  qkscope::detail::require_finite(G, "grad_output");
  const Mat<T>& Fq = fwd.q_features;
  const Mat<T>& Fk = fwd.k_features;
  const Eigen::Index L_q = Q.rows(), L_k = K.rows(), m = Fq.cols(), dv = V.cols();
  Mat<T> dnum = Mat<T>::Zero(L_q, dv);  // dL/d(numerator row)
  Vec<T> dden = Vec<T>::Zero(L_q);      // dL/d(denominator)
  for (Eigen::Index i = 0; i < L_q; ++i) {
    const T den = fwd.denominator(i);
    if (!(den > T(0))) continue;
    dnum.row(i) = G.row(i) / den;
    dden(i) = -G.row(i).dot(fwd.output.row(i)) / den;
  }
  Mat<T> dFq(L_q, m), dFk(L_k, m);
  LinearGrads<T> g;
  if (!cfg.causal) {
    const Mat<T> S = Fk.transpose() * V;                   // (m, d_v)
    const Vec<T> z = Fk.colwise().sum().transpose();       // (m)
    dFq.noalias() = dnum * S.transpose();
    dFq.noalias() += dden * z.transpose();
    const Mat<T> R = Fq.transpose() * dnum;                // (m, d_v)
    const Vec<T> rz = Fq.transpose() * dden;               // (m)
    g.dV.noalias() = Fk * R;
    dFk.noalias() = V * R.transpose();
    dFk.rowwise() += rz.transpose();
  } else {
    const Eigen::Index o = detail::diagonal_offset(cfg, L_q, L_k);
    Mat<T> S = Mat<T>::Zero(m, dv);
    Vec<T> z = Vec<T>::Zero(m);
    Eigen::Index added = 0;
    for (Eigen::Index i = 0; i < L_q; ++i) {
      for (const Eigen::Index n = detail::visible_keys(true, i, o, L_k); added < n; ++added) {
        S.noalias() += Fk.row(added).transpose() * V.row(added);
        z += Fk.row(added).transpose();
      }
      dFq.row(i).noalias() = dnum.row(i) * S.transpose();
      dFq.row(i) += dden(i) * z.transpose();
    }
    // Suffix sums over queries: query i sees key j iff i >= j - o.
    Mat<T> R = Mat<T>::Zero(m, dv);
    Vec<T> rz = Vec<T>::Zero(m);
    g.dV.resize(L_k, dv);
    Eigen::Index next = L_q - 1;
    for (Eigen::Index j = L_k - 1; j >= 0; --j) {
      for (; next >= 0 && next >= j - o; --next) {
        R.noalias() += Fq.row(next).transpose() * dnum.row(next);
        rz += dden(next) * Fq.row(next).transpose();
      }
      g.dV.row(j).noalias() = Fk.row(j) * R;
      dFk.row(j).noalias() = V.row(j) * R.transpose();
      dFk.row(j) += rz.transpose();
    }
  }
  g.dQ = features_backward(phi, Q, Fq, dFq);
  g.dK = features_backward(phi, K, Fk, dFk);
  detail::check_grad_finite(g.dQ, "dQuery");
  detail::check_grad_finite(g.dK, "dKey");
  detail::check_grad_finite(g.dV, "dValue");
  return g;
}

/// The (L_q, L_k) attention weights linear attention implies, phi(q_i).phi(k_j) / den_i on
/// the visible keys (0 elsewhere and on rows with den = 0). O(L_q L_k m): for display.
template <class T>
Mat<T> implied_weights(const LinearResult<T>& fwd, const LinearConfig& cfg) {
  const Eigen::Index L_q = fwd.q_features.rows(), L_k = fwd.k_features.rows();
  const Eigen::Index o = detail::diagonal_offset(cfg, L_q, L_k);
  Mat<T> A = Mat<T>::Zero(L_q, L_k);
  for (Eigen::Index i = 0; i < L_q; ++i) {
    const T den = fwd.denominator(i);
    if (!(den > T(0))) continue;
    const Eigen::Index n = detail::visible_keys(cfg.causal, i, o, L_k);
    A.row(i).head(n).noalias() = (fwd.q_features.row(i) * fwd.k_features.topRows(n).transpose()) / den;
  }
  return A;
}

/// Result of linear_attention_forward_mixed: every intermediate in fp32 and the output
/// rounded once to the storage type S.
template <class S>
struct LinearMixedResult {
  LinearResult<float> fp32;
  Mat<S> output;  // (L_q, d_v)
};

/// Linear attention on Q, K, V stored as S (Eigen::half, Eigen::bfloat16): widened exactly
/// to fp32, computed in fp32 (see the file comment), output rounded to S. The projection
/// of a FAVOR+ map stays fp32. Throws as linear_attention_forward.
template <class S>
LinearMixedResult<S> linear_attention_forward_mixed(const Mat<S>& Q, const Mat<S>& K, const Mat<S>& V,
                                                    const FeatureMap<float>& phi,
                                                    const LinearConfig& cfg = {}) {
  LinearMixedResult<S> r;
  r.fp32 = linear_attention_forward<float>(precision::widen<float>(Q), precision::widen<float>(K),
                                           precision::widen<float>(V), phi, cfg);
  r.output = precision::to_storage<S>(r.fp32.output);
  return r;
}

}  // namespace qkscope::linear
