// qkscope/cpu/scorers.hpp — tile scorers of the dot family and of linear concat for the
// tiled kernels (flash.hpp, flash_backward.hpp). A scorer gives the raw scores of one
// (query tile, key block) pair and the gradients back through them:
//   scores(i0, bq, j0, bk, S)             S (bq, bk) = raw scores
//   grad_q(i0, bq, j0, bk, dS, dQt)       dQt (bq, q_width) += dL/d(query side)
//   grad_k(i0, bq, j0, bk, dS, dKt, ext)  dKt (bk, k_width) += dL/d(key side), ext += extra
//   q_width(), k_width(), extra_size()
//   grad_q_by_rows (static constexpr bool), and where it is true
//   grad_q_rows(i0, bq, blocks, block_k, dS_rows, R, dQt)
//                                         after grad_q (where the scorer has one, per
//                                         block) or instead of it: the backward calls it once per
//                                         query tile: dS_rows (bq, L_k) holds the blocks
//                                         starting at `blocks`, R (bq) each row's sum of dS
//                                         formed in double (flash_backward.hpp, RowSums). A
//                                         query gradient built on sum_j dS_ij is then 0
//                                         where the softmax makes it so, instead of float
//                                         rounding of dS of size 1 / tau
// Optional (dot family): scale_queries(i0, bq, c, Qt) and scores_from(Qt, j0, bk, S), so
// the forward scales a query tile once instead of every (bq, bk) score block.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "qkscope/cpu/wasm_gemm.hpp"
#include "qkscope/types.hpp"

namespace qkscope::cpu::detail {

template <class T>
using TileRef = Eigen::Ref<Mat<T>>;
template <class T>
using ConstTileRef = Eigen::Ref<const Mat<T>>;

/// S (rows, bk) = A B_t^T for A (rows, w) and B_t (bk, w), both contiguous row-major. With
/// wasm SIMD the float product runs on wasm_gemm.hpp (Eigen's emulated-SSE GEMM is slower
/// there); elsewhere Eigen.
template <class T, class A, class B>
void product_abt(const A& a, const B& b, TileRef<T> S) {
#if defined(__wasm_simd128__)
  if constexpr (std::is_same_v<T, float>) {
    gemm_f32(int(a.rows()), int(b.rows()), int(a.cols()), a.data(), int(a.outerStride()), b.data(),
             int(b.outerStride()), true, S.data(), int(S.outerStride()), false);
    return;
  }
#endif
  S.noalias() = a * b.transpose();
}

/// DotScorer's reference key, or -1 for none (then dQs = dS K as usual). A reference is
/// taken only where it helps and cannot hurt:
///  - it must be tied: another key equals it exactly (then that group's dS cancel exactly);
///  - its norm is at most 1.25 x the smallest key norm, so the added rounding,
///    eps |k_ref| sum_j |dS_ij| twice, is at most 2.5 x the plain sum's bound
///    eps sum_j |dS_ij| |k_j|. A reference taken from any key was unbounded: a huge padded
///    or never-attended key made dQ wrong by eps |k_ref| |dS| (reviewer: a key of 1e20 past
///    key_length gave dQ off by 0.42);
///  - among those, the key nearest the mean key (tied keys that dominate are found there).
/// Keys with a non-finite entry never qualify.
template <class T>
Eigen::Index reference_row(const Mat<T>& K) {
  // Scalar loops: this runs once per call, and Eigen's vectorised expressions cost wasm size.
  const Eigen::Index n = K.rows(), d = K.cols();
  std::vector<double> mean(std::size_t(d), 0.0), norm2(std::size_t(n), 0.0);
  double min_norm2 = std::numeric_limits<double>::infinity(), finite = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    for (Eigen::Index c = 0; c < d; ++c) norm2[std::size_t(j)] += double(K(j, c)) * double(K(j, c));
    if (!std::isfinite(norm2[std::size_t(j)])) continue;  // the mean of the finite keys
    min_norm2 = std::min(min_norm2, norm2[std::size_t(j)]);
    finite += 1;
    for (Eigen::Index c = 0; c < d; ++c) mean[std::size_t(c)] += double(K(j, c));
  }
  for (double& m : mean) m /= std::max(finite, 1.0);
  Eigen::Index best = -1;
  double d_best = std::numeric_limits<double>::infinity();
  for (Eigen::Index j = 0; j < n; ++j) {
    if (!(norm2[std::size_t(j)] <= 1.5625 * min_norm2)) continue;  // 1.25^2; NaN and Inf fail
    double dist = 0;
    for (Eigen::Index c = 0; c < d; ++c) dist += (double(K(j, c)) - mean[std::size_t(c)]) * (double(K(j, c)) - mean[std::size_t(c)]);
    if (dist < d_best) d_best = dist, best = j;
  }
  if (best < 0) return -1;
  for (Eigen::Index j = 0; j < n; ++j) {
    if (j == best) continue;
    bool same = true;
    for (Eigen::Index c = 0; c < d && same; ++c) same = K(j, c) == K(best, c);
    if (same) return best;
  }
  return -1;
}

/// Dot-family scorer: S = Qs Ks^T on blocks (Eigen GEMM; wasm_gemm.hpp with wasm SIMD). Qs, Ks are the pre-processed
/// rows (Q, normalised Q for cosine, Q W for bilinear).
/// With a reference key (reference_row: a tied key of about the smallest norm), dQs_i =
/// sum_j dS_ij k_j is formed as sum_j dS_ij (k_j - k_ref) + R_i k_ref, with R_i the
/// row's sum of dS in double (0 without a softcap): where keys tie (parallel cosine keys)
/// the float dS, of size 1 / tau and summing to 0 only in exact arithmetic, no longer leave
/// a residue, which a cosine query under the norm floor multiplies by 1e8 (dQ -12207 where
/// 0: fuzzer finding).
template <class T>
struct DotScorer {
  const Mat<T>* Qs;
  const Mat<T>* Ks;
  Eigen::Index ref = -1;  // reference_row(*Ks); -1: none
  Eigen::Index q_width() const { return Qs->cols(); }
  Eigen::Index k_width() const { return Ks->cols(); }
  Eigen::Index extra_size() const { return 0; }
  static constexpr bool grad_q_by_rows = true;
  void scale_queries(Eigen::Index i0, Eigen::Index bq, T c, Mat<T>& Qt) const {
    Qt.noalias() = c * Qs->middleRows(i0, bq);
  }
  void scores_from(const Mat<T>& Qt, Eigen::Index j0, Eigen::Index bk, TileRef<T> S) const {
    product_abt<T>(Qt, Ks->middleRows(j0, bk), S);
  }
  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, TileRef<T> S) const {
    product_abt<T>(Qs->middleRows(i0, bq), Ks->middleRows(j0, bk), S);
  }
  /// Per key block, while its dS is in cache: dQt += dS (K_block - k_ref), or dS K_block
  /// without a reference.
  void grad_q(Eigen::Index, Eigen::Index, Eigen::Index j0, Eigen::Index bk, const ConstTileRef<T>& dS,
              Mat<T>& dQt) const {
    if (ref < 0) {
      dQt.noalias() += dS * Ks->middleRows(j0, bk);
      return;
    }
    // Scalar loops and the product's operand types as for K itself (wasm size: an Eigen
    // expression here cost ~1 KB gzipped); a copy is 1 / bq of the product's work.
    Mat<T> Kc(bk, Ks->cols());
    for (Eigen::Index r = 0; r < bk; ++r)
      for (Eigen::Index c = 0; c < Ks->cols(); ++c) Kc(r, c) = (*Ks)(j0 + r, c) - (*Ks)(ref, c);
    dQt.noalias() += dS * static_cast<const Mat<T>&>(Kc).middleRows(0, bk);
  }
  /// After the row's blocks: dQt += R k_ref.
  void grad_q_rows(Eigen::Index, Eigen::Index bq, const std::vector<Eigen::Index>&, Eigen::Index, const Mat<T>&,
                   const double* R, Mat<T>& dQt) const {
    if (ref < 0) return;
    for (Eigen::Index r = 0; r < bq; ++r)
      if (R[r] != 0)
        for (Eigen::Index c = 0; c < Ks->cols(); ++c) dQt(r, c) += T(R[r]) * (*Ks)(ref, c);
  }
  void grad_k(Eigen::Index i0, Eigen::Index bq, Eigen::Index, Eigen::Index, const ConstTileRef<T>& dS,
              Mat<T>& dKt, Vec<T>&) const {
    dKt.noalias() += dS.transpose() * Qs->middleRows(i0, bq);
  }
};

/// Separable scorer S_ij = a_i + c_j (linear concat): O(L_q L_k) with no GEMM. dL/da_i =
/// sum_j dS_ij is the backward's row sum R_i (grad_q_rows): a_i shifts every logit of its
/// row alike, so without a softcap it is exactly 0 (summing float dS of size 1e4 at
/// tau = 1e-4 gave -5.4e-4: fuzzer finding).
template <class T>
struct SeparableScorer {
  const Vec<T>* a;
  const Vec<T>* c;
  Eigen::Index q_width() const { return 1; }
  Eigen::Index k_width() const { return 1; }
  Eigen::Index extra_size() const { return 0; }
  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, TileRef<T> S) const {
    for (Eigen::Index r = 0; r < bq; ++r)
      S.row(r) = c->segment(j0, bk).transpose().array() + (*a)(i0 + r);
  }
  static constexpr bool grad_q_by_rows = true;
  void grad_q_rows(Eigen::Index, Eigen::Index bq, const std::vector<Eigen::Index>&, Eigen::Index, const Mat<T>&,
                   const double* R, Mat<T>& dQt) const {
    for (Eigen::Index r = 0; r < bq; ++r) dQt(r, 0) += T(R[r]);
  }
  void grad_k(Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, const ConstTileRef<T>& dS,
              Mat<T>& dKt, Vec<T>&) const {
    dKt.col(0) += dS.colwise().sum().transpose();
  }
};

}  // namespace qkscope::cpu::detail
