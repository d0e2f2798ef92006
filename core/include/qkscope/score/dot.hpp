// qkscope/score/dot.hpp — dot-product score f(q, k) = q . k  (Luong et al. 2015, eq. 8 "dot").
// Cost L_q L_k d. Needs d_q = d_k. Its variance grows with d_k (see scaled_dot.hpp).
#pragma once

#include <cmath>

#include "qkscope/detail/check.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/score/tied_keys.hpp"

namespace qkscope::score {

/// Shared by dot and scaled dot: raw scores S = Q K^T.
struct DotProduct {
  static constexpr bool same_dim = true;
  static constexpr const char* params = "";
  static constexpr bool hidden = false;  // no hidden width d_h
  /// Floating-point operations of the raw scores of `pairs` (q, k) pairs: q . k, 2 d_k each.
  static double flops(const ScoreShape& s, double pairs, Eigen::Index /*d_h*/) { return 2.0 * double(s.d_k) * pairs; }

  template <class T>
  static void validate(const ScoreShape& s, const ScoreParams<T>&) {
    detail::require(s.d_q == s.d_k, [&] {
      return "query and key must have the same width d for dot-product scores, got d_q = " + std::to_string(s.d_q) +
             ", d_k = " + std::to_string(s.d_k);
    });
  }
  template <class T>
  static ScoreParams<T> init(const ScoreShape&, Eigen::Index /*d_h*/, std::uint64_t /*seed*/) {
    return {};
  }
  /// S = Q K^T, shape (L_q, L_k).
  template <class T>
  static Mat<T> forward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&) {
    return Q * K.transpose();
  }
  /// dQ = dS K, dK = dS^T Q; dQ's rows over tied keys as the tiled path forms them
  /// (tied_keys.hpp; R: each row's exact sum of dS).
  template <class T>
  static void backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&, const Mat<T>& dS,
                       ScoreGrads<T>& g, const Eigen::VectorXd& R) {
    g.dQ = dS_times_keys(dS, K, R);
    g.dK = dS.transpose() * Q;
  }
  /// Fast paths (score/forms.hpp): the dot product of the rows as given.
  template <class T>
  static DotForm<T> prepare(const Mat<T>&, const Mat<T>&, const ScoreParams<T>&) {
    return {};
  }
  template <class T>
  static void prepared_backward(const Mat<T>&, const Mat<T>&, const ScoreParams<T>&, const DotForm<T>&,
                                FormGrads<T>& fg, ScoreGrads<T>& g) {
    g.dQ = std::move(fg.dq);
    g.dK = std::move(fg.dk);
  }
};

/// Plain dot product: default scale 1.
struct Dot : DotProduct {
  static constexpr const char* name = "dot";
  static constexpr const char* label = "Dot product";
  static constexpr const char* tex = R"(f(\mathbf q,\mathbf k)=\mathbf q^\top\mathbf k)";
  static double default_scale(const ScoreShape&) { return 1.0; }
};

}  // namespace qkscope::score
