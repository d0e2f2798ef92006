// qkscope/score/cosine.hpp — cosine score f(q, k) = q . k / (|q| |k|), in [-1, 1].
// Used for retrieval-style attention (cosine indexes) and Swin-v2's scaled cosine
// attention (Liu et al. 2022, eq. 2), typically with a temperature < 1.
// Zero-vector policy: each vector is divided by max(|x|, eps) on its own, so
// cos(0, x) = 0 and no 0/0 can occur (fault case B12 in tests/data/fault_cases.json:
// eps^2 underflows in fp32, so the norms are never multiplied before dividing).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "qkscope/detail/check.hpp"
#include "qkscope/cpu/wasm_gemm.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/score/tied_keys.hpp"

namespace qkscope::score {

struct Cosine {
  static constexpr const char* name = "cosine";
  static constexpr const char* label = "Cosine similarity";
  static constexpr const char* tex =
      R"(f(\mathbf q,\mathbf k)=\frac{\mathbf q^\top\mathbf k}{\max(\lVert\mathbf q\rVert,\epsilon)\,\max(\lVert\mathbf k\rVert,\epsilon)})";
  static constexpr const char* params = "";
  static constexpr bool same_dim = true;
  static constexpr bool hidden = false;
  /// q . k per pair (2 d) plus the row norms (2 d per query and per key row).
  static double flops(const ScoreShape& s, double pairs, Eigen::Index /*d_h*/) {
    return 2.0 * double(s.d_k) * pairs + 2.0 * double(s.d_k) * double(s.L_q + s.L_k);
  }
  /// Norm floor; 1e-8 like torch.nn.functional.cosine_similarity.
  static constexpr double eps = 1e-8;

  static double default_scale(const ScoreShape&) { return 1.0; }
  template <class T>
  static void validate(const ScoreShape& s, const ScoreParams<T>&) {
    detail::require(s.d_q == s.d_k, [&] {
      return "query and key must have the same width d for cosine scores, got d_q = " + std::to_string(s.d_q) +
             ", d_k = " + std::to_string(s.d_k);
    });
  }
  template <class T>
  static ScoreParams<T> init(const ScoreShape&, Eigen::Index, std::uint64_t) {
    return {};
  }

  /// Row norms clamped below at eps: n_i = max(|x_i|, eps). Float rows are summed in
  /// double (no overflow up to 3.4e38, and |x| of a one-entry row is exact); double rows
  /// use stableNorm, which rescales before squaring.
  template <class T>
  static Vec<T> clamped_norms(const Mat<T>& X) {
    Vec<T> n(X.rows());
    for (Eigen::Index i = 0; i < X.rows(); ++i) n(i) = T(std::max(norm_of(X.row(i)), eps));
    return n;
  }
  /// Unit rows xhat_i = x_i / max(|x_i|, eps), each rounded once from double for float
  /// inputs: parallel rows then get the same xhat, so their cosines tie exactly.
  template <class T>
  static Mat<T> unit_rows(const Mat<T>& X, Vec<T>& n) {
    n = clamped_norms(X);
    Mat<T> U(X.rows(), X.cols());
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      const double d = std::max(norm_of(X.row(i)), eps);
      if constexpr (std::is_same_v<T, float>)
        U.row(i) = (X.row(i).template cast<double>() / d).template cast<float>();
      else
        U.row(i) = X.row(i) / T(d);
    }
    return U;
  }
  /// S = Qhat Khat^T clamped to [-1, 1] (rounding can give 1.0000001 for x . x).  (L_q, L_k)
  /// Float inputs: formed in double and rounded once, so cos(x, x) = 1 and parallel keys
  /// tie exactly ('hard' then takes the lowest index, as for any tie).
  template <class T>
  static Mat<T> forward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p) {
    (void)p;
    if constexpr (std::is_same_v<T, float>) {
      const MatrixD Qd = Q.template cast<double>(), Kd = K.template cast<double>();
      return forward<double>(Qd, Kd, {}).template cast<float>();
    } else {
      Vec<T> nq, nk;
      const Mat<T> Qh = unit_rows(Q, nq), Kh = unit_rows(K, nk);
      return (Qh * Kh.transpose()).cwiseMax(T(-1)).cwiseMin(T(1));
    }
  }
  /// Through xhat = x / n: dx = (dxhat - xhat (xhat . dxhat)) / n when |x| > eps,
  /// and dx = dxhat / eps on the clamped branch (xhat is linear in x there).
  /// dS Kh's rows over tied (parallel) keys as the tiled path forms them (tied_keys.hpp; R:
  /// each row's exact sum of dS).
  template <class T>
  static void backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&, const Mat<T>& dS,
                       ScoreGrads<T>& g, const Eigen::VectorXd& R) {
    Vec<T> nq, nk;
    const Mat<T> Qh = unit_rows(Q, nq), Kh = unit_rows(K, nk);
    g.dQ = through_normalize(Q, Qh, nq, dS_times_keys(dS, Kh, R));
    g.dK = through_normalize(K, Kh, nk, Mat<T>(dS.transpose() * Qh));
  }
  /// Fast paths (score/forms.hpp): the dot product of the normalised rows, formed as the
  /// core forms them (unit_rows: divided in double, rounded once). Multiplying by a float
  /// 1 / n lost the row: for |x| near 3e38, 1 / n is a subnormal float with few digits.
  template <class T>
  static DotForm<T> prepare(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&) {
    Vec<T> nq, nk;
    DotForm<T> f{unit_rows(Q, nq), unit_rows(K, nk)};
    // dx = (dxhat - ...) / n: a row near or under the norm floor multiplies its gradient by
    // up to 1 / eps = 1e8.
    const double n_min = std::min(nq.size() ? double(nq.minCoeff()) : 1.0, nk.size() ? double(nk.minCoeff()) : 1.0);
    f.grad_gain = std::max(1.0, 1.0 / n_min);
    return f;
  }
  /// The fast paths' tile check (cpu/scorers.hpp, DotScorer::Refine), where refine_prepare
  /// asks for it. Their float GEMM of the unit rows carries about sqrt(d) eps of rounding per
  /// score (up to d eps), the core's scores (formed in double, rounded once) eps / 2, and the
  /// softmax multiplies both by |scale| / tau: at tau = 1e-4 the tiled dV came out 24 times
  /// the rule's bar from the core (fuzzer finding), and at d = 64, tau = 0.01 (Swin-v2's
  /// smallest) 25 of 40 seeded comparisons failed it. So above refine_gain the tiles are
  /// formed in double from unit rows in double, kept once per call here, and rounded once, as
  /// the core forms its scores (bit for bit but for the GEMMs' order of summation). Costs
  /// there (L = 512, d = 64, one thread): forward 1.4-1.55x, backward 1.2x natively, 1.6-1.7x
  /// in the tiled wasm module (native/bench/NOTES.md); memory 16 (L_q + L_k) d bytes per head
  /// for the double rows. Double rows: their GEMMs already have the core's precision.
  /// refine_gain: seeded comparisons (scale 1; output, dQ, dK, dV) fail the rule from
  /// |scale| / tau ~ 50 at every d tried (1 to 128) and pass at 8 (d 1 to 2048); the fuzz
  /// study's cases flag from 16 (none at 8). Not covered by the gain: dL/dtau at a small scale
  /// and tau together (scale = tau = 1e-5, nearly parallel keys), where 1 / tau magnifies
  /// the float GEMM's rounding of near-equal scores past the rule's floor (review; open,
  /// docs/RELIABILITY.md).
  static constexpr double refine_gain = 8;
  template <class T>
  static bool refine_prepare(DotForm<T>& f, const Mat<T>& Q, const Mat<T>& K, double score_gain) {
    if constexpr (!std::is_same_v<T, float>) return false;
    else {
      if (!(score_gain > refine_gain)) return false;
      Vec<double> n;
      f.q64 = unit_rows<double>(Q.template cast<double>(), n);
      f.k64 = unit_rows<double>(K.template cast<double>(), n);
      f.refine_all = true;  // refine_tile forms every entry (the fast paths skip their GEMM)
      return true;
    }
  }
  template <class T>
  static bool refine_tile(const Mat<T>&, const Mat<T>&, const DotForm<T>& f, Eigen::Index i0, Eigen::Index bq,
                          Eigen::Index j0, Eigen::Index bk, Eigen::Ref<Mat<T>> S) {
#if defined(__wasm_simd128__)
    if constexpr (std::is_same_v<T, float>) {  // Eigen's double GEMM is slow and large there
      cpu::detail::gemm_f64_abt(int(bq), int(bk), int(f.q64.cols()), f.q64.row(i0).data(), int(f.q64.cols()),
                                f.k64.row(j0).data(), int(f.k64.cols()), -1.0, 1.0, S.data(), int(S.outerStride()));
      return true;
    }
#endif
    S = (f.q64.middleRows(i0, bq) * f.k64.middleRows(j0, bk).transpose())
            .cwiseMax(-1.0)
            .cwiseMin(1.0)
            .template cast<T>();
    return true;
  }
  template <class T>
  static void prepared_backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&, const DotForm<T>& f,
                                FormGrads<T>& fg, ScoreGrads<T>& g) {
    g.dQ = through_normalize(Q, f.q, clamped_norms(Q), fg.dq);
    g.dK = through_normalize(K, f.k, clamped_norms(K), fg.dk);
  }

 private:
  template <class Row>
  static double norm_of(const Row& x) {
    if constexpr (std::is_same_v<typename Row::Scalar, float>) return x.template cast<double>().norm();
    else {  // on a copy: stableNorm's rounding of a row in place depends on its alignment, and
            // equal keys got norms an ulp apart, so they did not tie (review)
      const Eigen::Matrix<typename Row::Scalar, 1, Eigen::Dynamic> y = x;
      return double(y.stableNorm());
    }
  }
  template <class T>
  static Mat<T> through_normalize(const Mat<T>& X, const Mat<T>& Xh, const Vec<T>& n,
                                  const Mat<T>& dXh) {
    Mat<T> dX(X.rows(), X.cols());
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      const bool clamped = norm_of(X.row(i)) <= eps;
      if (clamped)
        dX.row(i) = dXh.row(i) / n(i);
      else
        dX.row(i) = (dXh.row(i) - Xh.row(i) * Xh.row(i).dot(dXh.row(i))) / n(i);
    }
    return dX;
  }
};

}  // namespace qkscope::score
