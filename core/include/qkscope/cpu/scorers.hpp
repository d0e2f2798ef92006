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
#include <cstdint>
#include <cstring>
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

/// DotScorer's reference key, or -1 for none (then dQs = dS K as usual): a key that another
/// key equals exactly (that group's dS then cancel exactly), not zero (then both sums are the
/// same), with finite entries; among those, the one nearest the mean of the finite keys (tied
/// keys that dominate are found there). Any choice is safe: DotScorer keeps, entry by entry,
/// the sum with the smaller rounding bound (a rule that took the reference from the key
/// norms alone, without that check, made dQ 0.42 off for a padded key of 1e20: review).
template <class T>
Eigen::Index reference_row(const Mat<T>& K) {
  // Scalar loops: this runs once per call, and Eigen's vectorised expressions cost wasm size.
  const Eigen::Index n = K.rows(), d = K.cols();
  std::vector<double> mean(std::size_t(d), 0.0), norm2(std::size_t(n), 0.0);
  double finite = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    for (Eigen::Index c = 0; c < d; ++c) norm2[std::size_t(j)] += double(K(j, c)) * double(K(j, c));
    if (!std::isfinite(norm2[std::size_t(j)])) continue;  // the mean of the finite keys
    finite += 1;
    for (Eigen::Index c = 0; c < d; ++c) mean[std::size_t(c)] += double(K(j, c));
  }
  for (double& m : mean) m /= std::max(finite, 1.0);
  // Tied keys are found by hashing each finite, non-zero key into an open-addressed table
  // (O(L_k d) expected; comparing every pair cost O(L_k^2 d), and std::sort ~1 KB of wasm).
  // The hash reads -0 as 0, since -0 == 0 ties as well.
  const std::size_t slots = 2 * std::size_t(n) + 1;
  std::vector<Eigen::Index> table(slots, -1);
  std::vector<char> tied(std::size_t(n), 0);
  for (Eigen::Index j = 0; j < n; ++j) {
    if (!(std::isfinite(norm2[std::size_t(j)]) && norm2[std::size_t(j)] > 0)) continue;
    std::uint64_t h = 1469598103934665603ull;
    for (Eigen::Index c = 0; c < d; ++c) {
      const double x = K(j, c) == 0 ? 0.0 : double(K(j, c));
      std::uint64_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      h = (h ^ bits) * 1099511628211ull;
    }
    for (std::size_t s = std::size_t(h % slots);; s = (s + 1) % slots) {
      const Eigen::Index k = table[s];
      if (k < 0) {
        table[s] = j;
        break;
      }
      bool same = true;
      for (Eigen::Index c = 0; c < d && same; ++c) same = K(k, c) == K(j, c);
      if (same) {
        tied[std::size_t(k)] = tied[std::size_t(j)] = 1;
        break;
      }
    }
  }
  Eigen::Index best = -1;
  double d_best = std::numeric_limits<double>::infinity();
  for (Eigen::Index j = 0; j < n; ++j) {
    if (!tied[std::size_t(j)]) continue;
    double dist = 0;
    for (Eigen::Index c = 0; c < d; ++c) dist += (double(K(j, c)) - mean[std::size_t(c)]) * (double(K(j, c)) - mean[std::size_t(c)]);
    if (dist < d_best) d_best = dist, best = j;
  }
  return best;
}

/// Dot-family scorer: S = Qs Ks^T on blocks (Eigen GEMM; wasm_gemm.hpp with wasm SIMD). Qs, Ks
/// are the pre-processed rows (Q, normalised Q for cosine, Q W for bilinear).
/// dQs_i = sum_j dS_ij k_j. Where keys tie (parallel cosine keys), the float dS of size 1 / tau
/// sum to 0 only in exact arithmetic and leave a residue that a cosine query under the norm
/// floor multiplies by 1e8 (dQ -12207 where 0: fuzzer finding). With a reference key
/// (reference_row: a tied key) each entry of dQs is also formed as
/// sum_j dS_ij (k_jc - k_ref,c) + R_i k_ref,c (R_i the row's sum of dS in double, 0 without
/// a softcap), where the tied group's terms are exactly 0, and the entry keeps whichever of
/// the two sums has the smaller rounding bound, sum_j |dS_ij| |k_jc| against
/// sum_j |dS_ij| |k_jc - k_ref,c| + |R_i| |k_ref,c|. Per entry, because either form can be
/// far worse: a tied group at P ~ 0 beside attended keys whose dS cancel put eps |dS| |k_ref|
/// into the split form (17 times the rule's bar: review), and the plain sum is 62,456 times
/// past it where the tied group carries the row.
template <class T>
struct DotScorer {
  const Mat<T>* Qs;
  const Mat<T>* Ks;
  Eigen::Index ref = -1;  // reference_row(*Ks); -1: none
  /// With a reference: K - k_ref, |K| and |K - k_ref| (L_k, d), formed once per call.
  Mat<T> Kc, Ka, Kca;
  static DotScorer make(const Mat<T>* Qs, const Mat<T>* Ks) {
    DotScorer s{Qs, Ks, reference_row(*Ks), {}, {}, {}};
    if (s.ref < 0) return s;
    const Eigen::Index n = Ks->rows(), d = Ks->cols();
    s.Kc.resize(n, d), s.Ka.resize(n, d), s.Kca.resize(n, d);
    for (Eigen::Index j = 0; j < n; ++j)  // scalar loops: wasm size
      for (Eigen::Index c = 0; c < d; ++c) {
        s.Kc(j, c) = (*Ks)(j, c) - (*Ks)(s.ref, c);
        s.Ka(j, c) = std::abs((*Ks)(j, c));
        s.Kca(j, c) = std::abs(s.Kc(j, c));
      }
    return s;
  }
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
  /// Per key block, while its dS is in cache: dQt += dS K_block (without a reference; with
  /// one, grad_q_rows forms both sums).
  void grad_q(Eigen::Index, Eigen::Index, Eigen::Index j0, Eigen::Index bk, const ConstTileRef<T>& dS,
              Mat<T>& dQt) const {
    if (ref < 0) dQt.noalias() += dS * Ks->middleRows(j0, bk);
  }
  /// With a reference, after the row's blocks: both sums and their bounds, entry by entry.
  /// Every product has the operand types of grad_q's (one GEMM instantiation: wasm size).
  void grad_q_rows(Eigen::Index, Eigen::Index bq, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                   const Mat<T>& dS, const double* R, Mat<T>& dQt) const {
    if (ref < 0) return;
    const Eigen::Index d = Ks->cols(), L_k = dS.cols();
    Mat<T> plain = Mat<T>::Zero(bq, d), split = plain, plain_bound = plain, split_bound = plain, adS;
    for (const Eigen::Index j0 : blocks) {
      const Eigen::Index bk = std::min(block_k, L_k - j0);
      const ConstTileRef<T> ds = dS.middleCols(j0, bk);
      adS = ds.cwiseAbs();
      const ConstTileRef<T> ads = adS;
      plain.noalias() += ds * Ks->middleRows(j0, bk);
      split.noalias() += ds * static_cast<const Mat<T>&>(Kc).middleRows(j0, bk);
      plain_bound.noalias() += ads * static_cast<const Mat<T>&>(Ka).middleRows(j0, bk);
      split_bound.noalias() += ads * static_cast<const Mat<T>&>(Kca).middleRows(j0, bk);
    }
    for (Eigen::Index r = 0; r < bq; ++r)
      for (Eigen::Index c = 0; c < d; ++c) {
        const double kr = double((*Ks)(ref, c));
        const bool use_split = double(split_bound(r, c)) + std::abs(R[r] * kr) < double(plain_bound(r, c));
        dQt(r, c) += use_split ? T(double(split(r, c)) + R[r] * kr) : plain(r, c);
      }
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
