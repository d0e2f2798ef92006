// qkscope/score/cosine.hpp — cosine score f(q, k) = q . k / (|q| |k|), in [-1, 1].
// Used for retrieval-style attention (cosine indexes) and Swin-v2's scaled cosine
// attention (Liu et al. 2022, eq. 2), typically with a temperature < 1.
// Zero-vector policy: each vector is divided by max(|x|, eps) on its own, so
// cos(0, x) = 0 and no 0/0 can occur (fault case B12 in tests/data/fault_cases.json:
// eps^2 underflows in fp32, so the norms are never multiplied before dividing).
#pragma once

#include "qkscope/detail/check.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"

namespace qkscope::score {

struct Cosine {
  static constexpr const char* name = "cosine";
  static constexpr const char* label = "Cosine similarity";
  static constexpr const char* tex =
      R"(f(\mathbf q,\mathbf k)=\frac{\mathbf q^\top\mathbf k}{\max(\lVert\mathbf q\rVert,\epsilon)\,\max(\lVert\mathbf k\rVert,\epsilon)})";
  static constexpr const char* params = "";
  static constexpr bool same_dim = true;
  /// Norm floor; 1e-8 like torch.nn.functional.cosine_similarity.
  static constexpr double eps = 1e-8;

  static double default_scale(const ScoreShape&) { return 1.0; }
  template <class T>
  static void validate(const ScoreShape& s, const ScoreParams<T>&) {
    detail::require(s.d_q == s.d_k, "query and key must have the same width d for cosine scores, "
                                    "got d_q = " + std::to_string(s.d_q) +
                                    ", d_k = " + std::to_string(s.d_k));
  }
  template <class T>
  static ScoreParams<T> init(const ScoreShape&, Eigen::Index, std::uint64_t) {
    return {};
  }

  /// Row norms clamped below at eps: n_i = max(|x_i|, eps). stableNorm rescales before
  /// squaring, so |x| up to the type's max (bf16/fp32 ~3.4e38) does not overflow to inf.
  template <class T>
  static Vec<T> clamped_norms(const Mat<T>& X) {
    Vec<T> n(X.rows());
    for (Eigen::Index i = 0; i < X.rows(); ++i) n(i) = std::max(X.row(i).stableNorm(), T(eps));
    return n;
  }
  /// S = Qhat Khat^T with xhat_i = x_i / max(|x_i|, eps).  (L_q, L_k)
  template <class T>
  static Mat<T> forward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&) {
    const Mat<T> Qh = clamped_norms(Q).cwiseInverse().asDiagonal() * Q;
    const Mat<T> Kh = clamped_norms(K).cwiseInverse().asDiagonal() * K;
    return Qh * Kh.transpose();
  }
  /// Through xhat = x / n: dx = (dxhat - xhat (xhat . dxhat)) / n when |x| > eps,
  /// and dx = dxhat / eps on the clamped branch (xhat is linear in x there).
  template <class T>
  static void backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&, const Mat<T>& dS,
                       ScoreGrads<T>& g) {
    const Vec<T> nq = clamped_norms(Q), nk = clamped_norms(K);
    const Mat<T> Qh = nq.cwiseInverse().asDiagonal() * Q;
    const Mat<T> Kh = nk.cwiseInverse().asDiagonal() * K;
    g.dQ = through_normalize(Q, Qh, nq, Mat<T>(dS * Kh));
    g.dK = through_normalize(K, Kh, nk, Mat<T>(dS.transpose() * Qh));
  }
  /// Fast paths (score/forms.hpp): the dot product of the normalised rows.
  template <class T>
  static DotForm<T> prepare(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&) {
    return {clamped_norms(Q).cwiseInverse().asDiagonal() * Q, clamped_norms(K).cwiseInverse().asDiagonal() * K};
  }
  template <class T>
  static void prepared_backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&, const DotForm<T>& f,
                                FormGrads<T>& fg, ScoreGrads<T>& g) {
    g.dQ = through_normalize(Q, f.q, clamped_norms(Q), fg.dq);
    g.dK = through_normalize(K, f.k, clamped_norms(K), fg.dk);
  }

 private:
  template <class T>
  static Mat<T> through_normalize(const Mat<T>& X, const Mat<T>& Xh, const Vec<T>& n,
                                  const Mat<T>& dXh) {
    Mat<T> dX(X.rows(), X.cols());
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      const bool clamped = X.row(i).stableNorm() <= T(eps);
      if (clamped)
        dX.row(i) = dXh.row(i) / n(i);
      else
        dX.row(i) = (dXh.row(i) - Xh.row(i) * Xh.row(i).dot(dXh.row(i))) / n(i);
    }
    return dX;
  }
};

}  // namespace qkscope::score
