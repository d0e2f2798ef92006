// qkscope/linear/attention.hpp — kernelised ("linear") attention, forward and backward:
//   O_i = phi(q_i) S_i / (phi(q_i) . z_i),  S_i = sum_{j in J(i)} phi(k_j) v_j^T (m, d_v),
//                                           z_i = sum_{j in J(i)} phi(k_j)       (m)
// J(i) = every key (non-causal: S and z are computed once, O(L m d) instead of O(L^2 d)),
// or the keys j <= i + o (causal: prefix sums, the RNN view of Katharopoulos et al. 2020,
// eqs. 8-12), with the diagonal offset o of the mask (0 top-left, L_k - L_q bottom-right).
// Feature maps: features.hpp (elu + 1; FAVOR+, Choromanski et al. 2021).
//
// Stabiliser (features.hpp): keys are scaled per feature column by exp(-b_r), b_r the largest
// log-feature of column r over the keys query i sees, and b is folded into the query side.
// Non-causal: one b over all keys. Causal: b is the running column maximum of the prefix;
// when it grows at key j, S and z are rescaled column-wise by exp(b_old - b_new), as online
// softmax rescales its running sum, so a later key never changes an earlier row (one maximum
// over all keys, future included, would underflow an earlier row's only visible key).
// Normaliser policy. Every feature is > 0 in exact arithmetic, so the denominator is a sum of
// positive terms: it cannot cancel (unlike random features with sin/cos, which FAVOR+ was
// built to avoid, Performer §2.3), and with the stabiliser it is >= 1 for every row with a
// visible key. A row with no visible key (causal alignment with L_q > L_k + o) gets
// denominator 0, output 0 and gradient 0, like a fully masked softmax row, never 0/0 = NaN.
// fp16/bf16 storage (linear_attention_forward_mixed): Q, K, V are stored in half/bfloat16,
// widened exactly to fp32, and features, S, z and the normaliser are computed and kept in
// fp32; only the output is rounded to the storage type. Storing the features themselves in
// fp16 would flush those below 2^-24 to 0 (bf16 keeps fp32's range but 8 bits of
// mantissa), so the core never does; the stabiliser already keeps them <= 1.
// Overflow policy: features are <= 1 and the denominator <= m L_k, so only the key-value
// state S (values near the float maximum), the gradients, or a FAVOR+ input whose |x|^2
// overflows can leave the working precision; those throw std::invalid_argument naming the
// input and row instead of returning inf/NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
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

/// Forward result; everything the backward pass needs. b^(i) below is the stabiliser offset
/// of query i (features.hpp): the column maxima of log phi over the keys it sees.
template <class T>
struct LinearResult {
  Mat<T> output;       // O                                                     (L_q, d_v)
  Mat<T> q_features;   // exp(log phi(q_i) + b^(i) - c_i), max 1; 0 rows for queries with no visible key  (L_q, m)
  Mat<T> k_features;   // exp(log phi(k_j) - key_max row of j)                  (L_k, m)
  Mat<T> key_max;      // non-causal: b over all keys (1, m); causal: row j = column maxima of
                       // log phi(k) over keys 0..j, so b^(i) = row (visible keys - 1)  (L_k, m)
  Vec<T> denominator;  // q_features_i . z_i, >= 1; 0 = row with no visible key   (L_q)
};

/// Gradients of a scalar loss given dL/dO.
template <class T>
struct LinearGrads {
  Mat<T> dQ, dK, dV;
};

namespace detail {

template <class T>
void check_linear(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V) {
  qkscope::detail::require_nonempty(Q, "query");
  qkscope::detail::require_nonempty(K, "key");
  qkscope::detail::require_nonempty(V, "value");
  qkscope::detail::require_finite(V, "value");
  qkscope::detail::require(K.cols() == Q.cols(), "key must have the width d = " + std::to_string(Q.cols()) +
                                                     " of query, got shape " + qkscope::detail::shape_of(K));
  qkscope::detail::require(V.rows() == K.rows(), "value must have L_k = " + std::to_string(K.rows()) +
                                                     " rows (one per key), got shape " +
                                                     qkscope::detail::shape_of(V));
}

/// Throws unless the output is finite: it can only overflow through S = sum_j phi(k_j) v_j^T
/// (the features are <= 1 and the denominator >= 1), so the message names the values.
template <class T>
void check_forward_finite(const LinearResult<T>& r) {
  for (Eigen::Index i = 0; i < r.output.rows(); ++i)
    for (Eigen::Index c = 0; c < r.output.cols(); ++c)
      qkscope::detail::require(std::isfinite(double(r.output(i, c))),
                               "value: the key-value state S = sum_j phi(k_j) v_j^T overflowed at output (" +
                                   std::to_string(i) + ", " + std::to_string(c) + ") (value too large for this precision)");
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

/// exp(a - max(a)) for a = log phi(q_i) + b (the query side of the stabiliser; features.hpp).
template <class T, class Derived>
RowVec<T> stabilised_query(const Eigen::MatrixBase<Derived>& a) {
  const RowVec<T> shifted = a.array() - a.maxCoeff();
  return exp_flushed<T>(shifted);
}

/// Moves the running column maxima b to b_new >= b, rescaling the state rows (S, z) that are
/// stored relative to b: row r *= exp(b_r - b_new_r). The online-softmax rescale, per column.
template <class T>
void raise_offset(RowVec<T>& b, const RowVec<T>& b_new, Mat<T>& S, Vec<T>& z) {
  const T lo = std::log(std::numeric_limits<T>::min());
  for (Eigen::Index r = 0; r < b.size(); ++r) {
    if (!(b_new(r) > b(r))) continue;
    const T e = b(r) - b_new(r);  // -inf for the first key: the state is still 0
    const T f = e < lo ? T(0) : T(std::exp(e));
    S.row(r) *= f;
    z(r) *= f;
    b(r) = b_new(r);
  }
}

/// Throws unless fwd is a forward result of inputs of these shapes (L_q, L_k, d_v, m) and this
/// causal setting, naming the field of `fwd` that does not fit.
template <class T>
void check_forward_result(const LinearResult<T>& fwd, Eigen::Index L_q, Eigen::Index L_k, Eigen::Index dv,
                          Eigen::Index m, bool causal) {
  const std::string why = " (fwd must be the linear_attention_forward result of the same query, key, value, "
                          "features and causal setting)";
  const auto shape = [&](const auto& X, Eigen::Index rows, Eigen::Index cols, const char* name) {
    qkscope::detail::require(X.rows() == rows && X.cols() == cols,
                             std::string("fwd.") + name + " must have shape " + qkscope::detail::shape_str(rows, cols) +
                                 ", got " + qkscope::detail::shape_of(X) + why);
  };
  shape(fwd.output, L_q, dv, "output");
  shape(fwd.q_features, L_q, m, "q_features");
  shape(fwd.k_features, L_k, m, "k_features");
  shape(fwd.key_max, causal ? L_k : 1, m, causal ? "key_max (causal)" : "key_max (non-causal)");
  qkscope::detail::require(fwd.denominator.size() == L_q, "fwd.denominator must have length " + std::to_string(L_q) +
                                                              ", got " + std::to_string(fwd.denominator.size()) + why);
}

}  // namespace detail

/// Linear attention forward. Q (L_q, d), K (L_k, d), V (L_k, d_v); phi from features.hpp.
/// Throws std::invalid_argument naming the argument for empty, non-finite or mismatched
/// inputs (and a FAVOR+ projection whose width is not d), and naming the input and row
/// when a FAVOR+ feature or the output overflows (see the file comment).
template <class T>
LinearResult<T> linear_attention_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                         const FeatureMap<T>& phi, const LinearConfig& cfg = {}) {
  detail::check_linear(Q, K, V);
  const Mat<T> Lq = log_features(phi, Q, "query");  // (L_q, m)
  const Mat<T> Lk = log_features(phi, K, "key");    // (L_k, m)
  const Eigen::Index L_q = Q.rows(), L_k = K.rows(), m = Lq.cols(), dv = V.cols();
  LinearResult<T> r;
  r.output.setZero(L_q, dv);
  r.denominator.setZero(L_q);
  if (!cfg.causal) {  // two GEMMs: (phi(K)^T V), then phi(Q) times it
    r.key_max = Lk.colwise().maxCoeff();                                    // b (1, m)
    r.k_features = exp_flushed<T>(Lk.rowwise() - r.key_max.row(0));
    r.q_features.resize(L_q, m);
    for (Eigen::Index i = 0; i < L_q; ++i)
      r.q_features.row(i) = detail::stabilised_query<T>(Lq.row(i) + r.key_max.row(0));
    const Mat<T> S = r.k_features.transpose() * V;                          // (m, d_v)
    const Vec<T> z = r.k_features.colwise().sum().transpose();              // (m), every entry >= 1
    r.output.noalias() = r.q_features * S;
    r.denominator.noalias() = r.q_features * z;
    for (Eigen::Index i = 0; i < L_q; ++i) r.output.row(i) /= r.denominator(i);
    detail::check_forward_finite(r);
    return r;
  }
  const Eigen::Index o = detail::diagonal_offset(cfg, L_q, L_k);
  r.q_features.setZero(L_q, m);
  r.k_features.resize(L_k, m);
  r.key_max.resize(L_k, m);
  Mat<T> S = Mat<T>::Zero(m, dv);
  Vec<T> z = Vec<T>::Zero(m);
  RowVec<T> b = RowVec<T>::Constant(m, -std::numeric_limits<T>::infinity());
  const auto add_key = [&](Eigen::Index j) {
    detail::raise_offset<T>(b, Lk.row(j), S, z);
    r.key_max.row(j) = b;
    r.k_features.row(j) = exp_flushed<T>(Lk.row(j) - b);
    S.noalias() += r.k_features.row(j).transpose() * V.row(j);
    z += r.k_features.row(j).transpose();
  };
  Eigen::Index added = 0;
  for (Eigen::Index i = 0; i < L_q; ++i) {
    for (const Eigen::Index n = detail::visible_keys(true, i, o, L_k); added < n; ++added) add_key(added);
    if (added == 0) continue;  // no visible key: output 0, denominator 0
    r.q_features.row(i) = detail::stabilised_query<T>(Lq.row(i) + b);
    const T den = r.q_features.row(i).dot(z);
    r.denominator(i) = den;
    r.output.row(i).noalias() = (r.q_features.row(i) * S) / den;
  }
  for (; added < L_k; ++added) add_key(added);  // keys no query sees: fwd stays complete
  detail::check_forward_finite(r);
  return r;
}

/// Gradients of sum(G .* O) for fwd = linear_attention_forward(Q, K, V, phi, cfg); G is
/// (L_q, d_v). With the stabilised features of fwd, d = dO_i / den_i and e = -(dO_i . O_i) / den_i
/// (0 for a row with den = 0): dphi(q_i) = S_i d + e z_i; key j collects R_j = sum_{i sees j}
/// phi(q_i) d_i^T and r_j = sum_{i sees j} e_i phi(q_i): dV_j = phi(k_j) R_j, dphi(k_j) = R_j v_j + r_j
/// (suffix sums under causal, expressed under key j's offset: the pair products phi(q_i)_r
/// phi(k_j)_r do not depend on it). The log-feature gradients are dphi .* phi (the stabiliser
/// is a constant, exact for O). Throws for a G of the wrong shape or non-finite, a `fwd` that
/// does not fit Q, K, V, phi and cfg, and when a gradient overflows (naming it and the cell).
template <class T>
LinearGrads<T> linear_attention_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                         const FeatureMap<T>& phi, const LinearConfig& cfg,
                                         const LinearResult<T>& fwd, const Mat<T>& G) {
  detail::check_linear(Q, K, V);
  detail::check_features(phi, Q, "query");
  detail::check_features(phi, K, "key");
  const Eigen::Index L_q = Q.rows(), L_k = K.rows(), m = phi.features(Q.cols()), dv = V.cols();
  detail::check_forward_result(fwd, L_q, L_k, dv, m, cfg.causal);
  qkscope::detail::require_shape(G, L_q, dv, "grad_output");
  qkscope::detail::require_finite(G, "grad_output");
  const Mat<T>& Fq = fwd.q_features;
  const Mat<T>& Fk = fwd.k_features;
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
    RowVec<T> b = RowVec<T>::Constant(m, -std::numeric_limits<T>::infinity());
    Eigen::Index added = 0;
    for (Eigen::Index i = 0; i < L_q; ++i) {
      for (const Eigen::Index n = detail::visible_keys(true, i, o, L_k); added < n; ++added) {
        detail::raise_offset<T>(b, fwd.key_max.row(added), S, z);
        S.noalias() += Fk.row(added).transpose() * V.row(added);
        z += Fk.row(added).transpose();
      }
      dFq.row(i).noalias() = dnum.row(i) * S.transpose();
      dFq.row(i) += dden(i) * z.transpose();
    }
    // Suffix sums over queries (query i sees key j iff i >= j - o), held relative to key j's
    // offset key_max_j: lowering it to key_max_{j-1} scales column r by exp(key_max_{j-1,r} -
    // key_max_{j,r}) <= 1, and query i enters as phi(q_i) .* exp(key_max_j - b^(i)) <= phi(q_i).
    Mat<T> R = Mat<T>::Zero(m, dv);
    Vec<T> rz = Vec<T>::Zero(m);
    g.dV.resize(L_k, dv);
    Eigen::Index next = L_q - 1;
    for (Eigen::Index j = L_k - 1; j >= 0; --j) {
      if (j + 1 < L_k) {
        const RowVec<T> shift = fwd.key_max.row(j) - fwd.key_max.row(j + 1);  // <= 0
        const RowVec<T> f = exp_flushed<T>(shift);
        R.array().colwise() *= f.transpose().array();
        rz.array() *= f.transpose().array();
      }
      for (; next >= 0 && next >= j - o; --next) {
        const Eigen::Index bi = detail::visible_keys(true, next, o, L_k) - 1;  // >= j
        const RowVec<T> e = fwd.key_max.row(j) - fwd.key_max.row(bi);
        const RowVec<T> q = Fq.row(next).cwiseProduct(exp_flushed<T>(e));
        R.noalias() += q.transpose() * dnum.row(next);
        rz += dden(next) * q.transpose();
      }
      g.dV.row(j).noalias() = Fk.row(j) * R;
      dFk.row(j).noalias() = V.row(j) * R.transpose();
      dFk.row(j) += rz.transpose();
    }
  }
  g.dQ = log_features_backward(phi, Q, Mat<T>(dFq.cwiseProduct(Fq)));
  g.dK = log_features_backward(phi, K, Mat<T>(dFk.cwiseProduct(Fk)));
  detail::check_grad_finite(g.dQ, "dQuery");
  detail::check_grad_finite(g.dK, "dKey");
  detail::check_grad_finite(g.dV, "dValue");
  return g;
}

/// The (L_q, L_k) attention weights linear attention implies, phi(q_i).phi(k_j) / den_i on
/// the visible keys (0 elsewhere and on rows with den = 0), from the stabilised features of
/// fwd: under causal, key j's features are rescaled to query i's offset by
/// exp(key_max_j - b^(i)) <= 1. O(L_q L_k m): for display. Throws for a fwd whose key_max
/// does not fit cfg.causal.
template <class T>
Mat<T> implied_weights(const LinearResult<T>& fwd, const LinearConfig& cfg) {
  const Eigen::Index L_q = fwd.q_features.rows(), L_k = fwd.k_features.rows();
  detail::check_forward_result(fwd, L_q, L_k, fwd.output.cols(), fwd.q_features.cols(), cfg.causal);
  const Eigen::Index o = detail::diagonal_offset(cfg, L_q, L_k);
  Mat<T> A = Mat<T>::Zero(L_q, L_k);
  for (Eigen::Index i = 0; i < L_q; ++i) {
    const T den = fwd.denominator(i);
    if (!(den > T(0))) continue;
    const Eigen::Index n = detail::visible_keys(cfg.causal, i, o, L_k);
    if (!cfg.causal) {
      A.row(i).noalias() = (fwd.q_features.row(i) * fwd.k_features.transpose()) / den;
      continue;
    }
    for (Eigen::Index j = 0; j < n; ++j) {
      const RowVec<T> e = fwd.key_max.row(j) - fwd.key_max.row(n - 1);
      A(i, j) = fwd.q_features.row(i).cwiseProduct(fwd.k_features.row(j)).dot(exp_flushed<T>(e)) / den;
    }
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
