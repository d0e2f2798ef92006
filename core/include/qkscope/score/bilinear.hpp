// qkscope/score/bilinear.hpp — bilinear ("general") score f(q, k) = q^T W k
// (Luong, Pham & Manning 2015, eq. 8 "general"). W: (d_q, d_k), so queries and keys
// may live in spaces of different width (cross-modal alignment). W = I gives dot.
// Cost: L_q d_q d_k (pre-multiply Q W once) + L_q L_k d_k.
#pragma once

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/score/tied_keys.hpp"

namespace qkscope::score {

struct Bilinear {
  static constexpr const char* name = "bilinear";
  static constexpr const char* label = "Bilinear (general)";
  static constexpr const char* tex = R"(f(\mathbf q,\mathbf k)=\mathbf q^\top W\,\mathbf k)";
  static constexpr const char* params = "W";
  static constexpr bool same_dim = false;
  static constexpr bool hidden = false;
  /// The query rows multiplied by W once (2 L_q d_q d_k), then (q^T W) . k per pair (2 d_k).
  static double flops(const ScoreShape& s, double pairs, Eigen::Index /*d_h*/) {
    return 2.0 * double(s.L_q) * double(s.d_q) * double(s.d_k) + 2.0 * double(s.d_k) * pairs;
  }

  static double default_scale(const ScoreShape&) { return 1.0; }
  template <class T>
  static void validate(const ScoreShape& s, const ScoreParams<T>& p) {
    detail::require_shape(p.W, s.d_q, s.d_k, "params.W (bilinear, d_q x d_k)");
  }
  /// W = I (rectangular) + N(0, 0.1^2) noise: starts close to the dot product.
  template <class T>
  static ScoreParams<T> init(const ScoreShape& s, Eigen::Index, std::uint64_t seed) {
    detail::Rng rng(seed);
    ScoreParams<T> p;
    p.W = Mat<T>::Identity(s.d_q, s.d_k);
    for (Eigen::Index i = 0; i < p.W.size(); ++i) p.W.data()[i] += T(0.1 * rng.normal());
    return p;
  }
  /// S = (Q W) K^T.  (L_q, L_k)
  template <class T>
  static Mat<T> forward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p) {
    return (Q * p.W) * K.transpose();
  }
  /// dQ = dS K W^T, dK = dS^T Q W, dW = Q^T dS K; dS K's rows over tied keys as the tiled path
  /// forms them (tied_keys.hpp; R: each row's exact sum of dS).
  template <class T>
  static void backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p, const Mat<T>& dS,
                       ScoreGrads<T>& g, const Eigen::VectorXd& R) {
    const Mat<T> dSK = dS_times_keys(dS, K, R);  // (L_q, d_k)
    g.dQ = dSK * p.W.transpose();
    g.dK = dS.transpose() * (Q * p.W);
    g.dparams.W = Q.transpose() * dSK;
  }
  /// Fast paths (score/forms.hpp): the dot product of Q W (computed once) and K.
  template <class T>
  static DotForm<T> prepare(const Mat<T>& Q, const Mat<T>&, const ScoreParams<T>& p) {
    return {Q * p.W, {}};
  }
  /// dQ = d(QW) W^T, dW = Q^T d(QW), dK = dk.
  template <class T>
  static void prepared_backward(const Mat<T>& Q, const Mat<T>&, const ScoreParams<T>& p, const DotForm<T>&,
                                FormGrads<T>& fg, ScoreGrads<T>& g) {
    g.dQ = fg.dq * p.W.transpose();
    g.dparams.W = Q.transpose() * fg.dq;
    g.dK = std::move(fg.dk);
  }
};

}  // namespace qkscope::score
