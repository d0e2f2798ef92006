// qkscope/tiled/additive.hpp — fused additive (Bahdanau) scorer for the tiled kernel:
//   S_ij = sum_h v_h tanh(A_ih + B_jh),  A = Q W_q^T + b (L_q, d_h),  B = K W_k^T (L_k, d_h)
// (Bahdanau et al. 2015, A.1.2). The projections are computed once (O(L d d_h)); the
// (L_q, L_k, d_h) tanh tensor is never stored: one (bk, d_h) slab per query row of a
// tile lives at a time, and backward recomputes it (TUTORIAL_FACTS §5.2).
// Backward with G_ijh = dS_ij v_h (1 - tanh^2):  dA_i = sum_j G_ij, dB_j = sum_i G_ij,
// dv = sum_ij dS_ij tanh_ij.
#pragma once

#include "qkscope/tiled/flash.hpp"

namespace qkscope::tiled::detail {

template <class T>
struct AdditiveScorer {
  const Mat<T>& A;  // (L_q, d_h), bias folded in
  const Mat<T>& B;  // (L_k, d_h)
  const Vec<T>& v;  // (d_h)
  Eigen::Index q_width() const { return A.cols(); }
  Eigen::Index k_width() const { return B.cols(); }
  Eigen::Index extra_size() const { return v.size(); }  // dv

  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, Mat<T>& S) const {
    const auto Bt = B.middleRows(j0, bk);
    Mat<T> H(bk, B.cols());
    for (Eigen::Index r = 0; r < bq; ++r) {
      H = (Bt.rowwise() + A.row(i0 + r)).array().tanh();
      S.row(r).noalias() = (H * v).transpose();
    }
  }
  void grad_q(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, const Mat<T>& dS,
              Mat<T>& dAt) const {
    const auto Bt = B.middleRows(j0, bk);
    Mat<T> H(bk, B.cols());
    for (Eigen::Index r = 0; r < bq; ++r) {
      H = (Bt.rowwise() + A.row(i0 + r)).array().tanh();
      // sum_j dS_rj v (1 - H_j^2) = v .* (dS_r (1 - H^2))
      const Eigen::Matrix<T, 1, Eigen::Dynamic> w =
          dS.row(r) * (T(1) - H.array().square()).matrix();
      dAt.row(r) += w.cwiseProduct(v.transpose());
    }
  }
  void grad_k(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, const Mat<T>& dS,
              Mat<T>& dBt, Vec<T>& dv) const {
    const auto Bt = B.middleRows(j0, bk);
    Mat<T> H(bk, B.cols());
    for (Eigen::Index r = 0; r < bq; ++r) {
      H = (Bt.rowwise() + A.row(i0 + r)).array().tanh();
      dv.noalias() += H.transpose() * dS.row(r).transpose();
      // G = dS_r^T v^T .* (1 - H^2)
      dBt.array() += (dS.row(r).transpose() * v.transpose()).array() * (T(1) - H.array().square());
    }
  }
};

}  // namespace qkscope::tiled::detail
