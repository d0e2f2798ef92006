// qkscope/cpu/scorers.hpp — tile scorers of the dot family and of linear concat for the
// tiled kernels (flash.hpp, flash_backward.hpp). A scorer gives the raw scores of one
// (query tile, key block) pair and the gradients back through them:
//   scores(i0, bq, j0, bk, S)             S (bq, bk) = raw scores
//   grad_q(i0, bq, j0, bk, dS, dQt)       dQt (bq, q_width) += dL/d(query side)
//   grad_k(i0, bq, j0, bk, dS, dKt, ext)  dKt (bk, k_width) += dL/d(key side), ext += extra
//   q_width(), k_width(), extra_size()
//   grad_q_by_rows (static constexpr bool), and where it is true
//   grad_q_rows(i0, bq, blocks, block_k, dS_rows, R, dQt, ext)
//                                         (ext += the extra parameters' row-wise part)
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
#include "qkscope/score/additive.hpp"
#include "qkscope/score/tied_keys.hpp"
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

/// Dot-family scorer: S = Qs Ks^T on blocks (Eigen GEMM; wasm_gemm.hpp with wasm SIMD). Qs, Ks
/// are the pre-processed rows (Q, normalised Q for cosine, Q W for bilinear).
/// dQs_i = sum_j dS_ij k_j. Where keys tie (parallel cosine keys), the float dS of size 1 / tau
/// sum to 0 only in exact arithmetic and leave a residue that a cosine query under the norm
/// floor multiplies by 1e8 (dQ -12207 where 0: fuzzer finding). So where keys tie, each query
/// row takes as its reference k_ref the tied group that carries most of the row's sum |dS|
/// (score/tied_keys.hpp, shared with the core's backward), forms each entry of dQs also as
/// the split sum_j dS_ij (k_jc - k_ref,c), where that group's terms are exactly 0, and keeps
/// per entry whichever of the two sums has the smaller rounding bound, sum_j |dS_ij| |k_jc|
/// against sum_j |dS_ij| |k_jc - k_ref,c|. The
/// split equals dQs only where the row's sum of dS is 0: it needs R_i = 0 (R_i the row's sum of
/// dS in double, 0 without a softcap; with one, the split failed the harness's bar in a
/// reviewer's cases where the plain sum passed) and the row's float dS to add up to 0 within
/// their rounding (split_consistent). Per entry, because either form can be far worse: a tied
/// group at P ~ 0 beside attended keys whose dS cancel put eps |dS| |k_ref| into the split
/// (17 times the rule's bar: review), and the plain sum is 62,456 times past it where the tied
/// group carries the row. Per row by weight, because a reference fixed per call (the tied key
/// nearest the mean) missed the group that carries the row when there are two (dQ 5,893 times
/// the bar: review), and so did one per query tile (the group carrying most of the tile) for
/// the tile's rows leaning on another group (5,890 times the bar at block_q = 64: review). The
/// split products run once per distinct reference of the tile, over its rows only.
template <class T>
struct DotScorer {
  const Mat<T>* Qs;
  const Mat<T>* Ks;
  std::vector<Eigen::Index> group;  // tied_groups(*Ks); empty: no tied keys
  /// Forms whose products can cancel large terms (negative squared Euclidean's 2 qc.kc -
  /// |qc|^2 - |kc|^2): the scoring function's refine_tile hook, fn(*this, i0, bq, j0, bk, S),
  /// checks a tile of the form's scores and recomputes the entries from differences where the
  /// rounding left would pass the core's (the hook's docstring). The gradients still go
  /// through the form's rows (the core's backward takes the same expanded sums). Null fn: the
  /// form's products are the scores. Cosine sets only fn (and whole), and only at large
  /// |scale| / tau (its refine_prepare): there it forms each tile in double, and its
  /// gradients stay grad_q's and grad_k's (null grad_k, grad_q).
  struct Refine {
    const Mat<T>* Q = nullptr;
    /// The keys as given. A form with these hooks holds them shifted by a constant in its
    /// first K->cols() columns (negative squared Euclidean's k - mu), so grad_q_rows' split
    /// takes key differences from them: exact where the shifted keys round an offset far
    /// below the shift away.
    const Mat<T>* K = nullptr;
    const void* form = nullptr;
    /// Returns whether it recomputed any entry of the tile.
    bool (*fn)(const Refine&, Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, TileRef<T>) = nullptr;
    /// The form's grad_k_from_differences, for the tiles fn recomputed (grad_k_refined).
    void (*grad_k)(const Refine&, Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, const ConstTileRef<T>&,
                   Mat<T>&) = nullptr;
    /// The form's grad_q_rows_from_differences (i0, bq, blocks, block_k, dS_rows, dQt, keep),
    /// after grad_q_rows' sums: rows whose centred sums cancel, from differences; entries with
    /// keep[r k_width + c] != 0 (the tied-group split taken) stay.
    void (*grad_q)(const Refine&, Eigen::Index, Eigen::Index, const std::vector<Eigen::Index>&, Eigen::Index,
                   const Mat<T>&, Mat<T>&, const char*) = nullptr;
    /// fn forms every entry of the tile itself (DotForm::refine_all), so the tile's GEMM is
    /// skipped.
    bool whole = false;
  } refine{};
  /// backward: group the tied keys (only grad_q_rows reads them; O(L_k d) per call).
  static DotScorer make(const Mat<T>* Qs, const Mat<T>* Ks, bool backward) {
    return {Qs, Ks, backward ? score::tied_groups(*Ks) : std::vector<Eigen::Index>{}};
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
    scores_refined(i0, bq, j0, bk, S);
  }
  /// scores, returning whether the refine hook recomputed the tile from differences.
  bool scores_refined(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, TileRef<T> S) const {
    if (!(refine.fn && refine.whole)) product_abt<T>(Qs->middleRows(i0, bq), Ks->middleRows(j0, bk), S);
    return refine.fn && refine.fn(refine, i0, bq, j0, bk, S);
  }
  /// Without tied keys, per key block while its dS is in cache: dQt += dS K_block (with them,
  /// grad_q_rows forms both sums).
  void grad_q(Eigen::Index, Eigen::Index, Eigen::Index j0, Eigen::Index bk, const ConstTileRef<T>& dS,
              Mat<T>& dQt) const {
    if (group.empty()) dQt.noalias() += dS * Ks->middleRows(j0, bk);
  }
  /// With tied keys, after the tile's blocks: each row's reference, then both sums and their
  /// bounds. Every product has the operand types of grad_q's (one GEMM instantiation: wasm size).
  void grad_q_rows(Eigen::Index i0, Eigen::Index bq, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                   const Mat<T>& dS, const double* R, Mat<T>& dQt, Vec<T>&) const {
    // An entry that took the tied-group split keeps it: its bound is the split's, and the
    // differences q_i - k_j carry the group's offsets that float dS cannot resolve (members at
    // +-1e-8 under dS of 3e22: the sign of dQ flipped, review of the rows below). The row's
    // other entries may still be retaken (a whole row kept left a column centred, 171 % off:
    // review, eleventh session, score/neg_sq_euclidean.hpp).
    std::vector<char> split(std::size_t(bq * Ks->cols()), 0);
    tied_rows(bq, blocks, block_k, dS, R, dQt, split);
    if (refine.grad_q) refine.grad_q(refine, i0, bq, blocks, block_k, dS, dQt, split.data());
  }
  /// grad_q_rows' sums where keys tie (above); split[r k_width + c] = 1 where entry (r, c) took
  /// the split.
  void tied_rows(Eigen::Index bq, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, const Mat<T>& dS,
                 const double* R, Mat<T>& dQt, std::vector<char>& split_mask) const {
    if (group.empty()) return;
    const Eigen::Index d = Ks->cols(), L_k = dS.cols();
    // Per row, its reference group, where it may split (score::tied_reference).
    const score::KeyBlocks keys{blocks.data(), blocks.size(), block_k, L_k};
    std::vector<double> weight(std::size_t(L_k), 0.0);
    std::vector<Eigen::Index> ref(std::size_t(bq), -1);
    for (Eigen::Index r = 0; r < bq; ++r)
      ref[std::size_t(r)] = score::tied_reference(dS.data() + r * L_k, keys, group, weight, R[r], L_k);
    Mat<T> plain = Mat<T>::Zero(bq, d);
    for (const Eigen::Index j0 : blocks) {
      const Eigen::Index bk = std::min(block_k, L_k - j0);
      const ConstTileRef<T> ds = dS.middleCols(j0, bk);
      plain.noalias() += ds * Ks->middleRows(j0, bk);
    }
    // Per distinct reference (lowest first), over only its rows, gathered: the split
    // sum_j dS_ij (k_j - k_ref) (with R_i = 0 the split's whole form) and both bounds; per entry
    // the sum of the smaller bound. The GEMM work stays ~bq bk d per sum for any number of
    // references. Rows without one keep the plain sum.
    // The split's key differences from the keys as given where the form's key rows are them
    // shifted (Refine::K): the centred keys of negative squared Euclidean round a key's offset
    // of -6.8e-23 beside a mean of 1.57 away, which left dQ -1.43e-9 where it is 9.764e-6
    // (fuzzer finding). Each k_j - k_ref is then one rounding of the difference itself. But
    // the reference group's own members (tied in the shifted keys, so 0 there) add their
    // offsets only where that sum keeps 12 bits over eps sum |dS_ij| |k_j - k_ref|: members
    // at -1e-8 and 1e-8 under dS of 3e17 whose true share is ~0 gave float noise of ~350
    // where dQ is 39.6 (0, or the sign flipped, where dropping them was right: review).
    // Only forms with the differences hooks shift their keys (cosine's refine has none, and
    // its K are not its unit rows).
    const Mat<T>* raw = refine.grad_q ? refine.K : nullptr;
    const Eigen::Index d_raw = raw ? raw->cols() : 0;
    const double eps = double(std::numeric_limits<T>::epsilon());
    std::vector<Eigen::Index> rows;
    Mat<T> G, Kc(std::min(block_k, L_k), d), Ka(Kc.rows(), d), Kca(Kc.rows(), d);
    for (Eigen::Index g = -1;;) {
      Eigen::Index next = -1;  // the smallest reference above g
      for (Eigen::Index r = 0; r < bq; ++r)
        if (ref[std::size_t(r)] > g && (next < 0 || ref[std::size_t(r)] < next)) next = ref[std::size_t(r)];
      if (next < 0) break;
      g = next;
      rows.clear();
      for (Eigen::Index r = 0; r < bq; ++r)
        if (ref[std::size_t(r)] == g) rows.push_back(r);
      const Eigen::Index n = Eigen::Index(rows.size());
      Mat<T> split = Mat<T>::Zero(n, d), plain_bound = split, split_bound = split;
      std::vector<double> own(std::size_t(n * d_raw), 0.0), own_abs = own;  // the members' offsets (n, d_raw)
      for (const Eigen::Index j0 : blocks) {
        const Eigen::Index bk = std::min(block_k, L_k - j0);
        for (Eigen::Index r = 0; r < bk; ++r) {
          const bool member = group[std::size_t(j0 + r)] == g;
          for (Eigen::Index c = 0; c < d; ++c) {
            Kc(r, c) = c < d_raw && !member ? (*raw)(j0 + r, c) - (*raw)(g, c) : (*Ks)(j0 + r, c) - (*Ks)(g, c);
            Ka(r, c) = std::abs((*Ks)(j0 + r, c));
            Kca(r, c) = std::abs(Kc(r, c));
          }
          if (!member || d_raw == 0) continue;
          for (Eigen::Index c = 0; c < d_raw; ++c) {
            const double off = double((*raw)(j0 + r, c) - (*raw)(g, c));
            if (off == 0) continue;
            for (Eigen::Index i = 0; i < n; ++i) {
              const double w = double(dS(rows[std::size_t(i)], j0 + r));
              own[std::size_t(i * d_raw + c)] += w * off;
              own_abs[std::size_t(i * d_raw + c)] += std::abs(w * off);
            }
          }
        }
        // One buffer: the rows' dS, then their |dS| in place.
        G.resize(n, bk);
        for (Eigen::Index i = 0; i < n; ++i)
          for (Eigen::Index c = 0; c < bk; ++c) G(i, c) = dS(rows[std::size_t(i)], j0 + c);
        const ConstTileRef<T> gathered = G;
        split.noalias() += gathered * static_cast<const Mat<T>&>(Kc).middleRows(0, bk);
        for (Eigen::Index i = 0; i < n; ++i)
          for (Eigen::Index c = 0; c < bk; ++c) G(i, c) = std::abs(G(i, c));
        plain_bound.noalias() += gathered * static_cast<const Mat<T>&>(Ka).middleRows(0, bk);
        split_bound.noalias() += gathered * static_cast<const Mat<T>&>(Kca).middleRows(0, bk);
      }
      for (Eigen::Index i = 0; i < n; ++i) {
        const Eigen::Index r = rows[std::size_t(i)];
        for (Eigen::Index c = 0; c < d; ++c)
          if (split_bound(i, c) <= plain_bound(i, c)) {  // the split on a tie, as dS_times_keys
            split_mask[std::size_t(r * d + c)] = 1;
            const double o = c < d_raw ? own[std::size_t(i * d_raw + c)] : 0.0;
            const bool keeps = std::abs(o) > 0x1p12 * eps * (c < d_raw ? own_abs[std::size_t(i * d_raw + c)] : 0.0);
            plain(r, c) = keeps ? T(double(split(i, c)) + o) : split(i, c);
          }
      }
    }
    for (Eigen::Index r = 0; r < bq; ++r)
      for (Eigen::Index c = 0; c < d; ++c) dQt(r, c) += plain(r, c);
  }
  void grad_k(Eigen::Index i0, Eigen::Index bq, Eigen::Index, Eigen::Index, const ConstTileRef<T>& dS,
              Mat<T>& dKt, Vec<T>&) const {
    dKt.noalias() += dS.transpose() * Qs->middleRows(i0, bq);
  }
  /// grad_k for a tile that scores_refined recomputed: the form's dK from differences, where
  /// it has that hook (returns false, adding nothing, where not: cosine's tiles are only
  /// formed more precisely, and its dK is grad_k's).
  bool grad_k_refined(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, const ConstTileRef<T>& dS,
                      Mat<T>& dKt) const {
    if (!refine.grad_k) return false;
    refine.grad_k(refine, i0, bq, j0, bk, dS, dKt);
    return true;
  }
};

/// Separable scorer S_ij = a_i + c_j (linear concat): O(L_q L_k) with no GEMM. dL/da_i =
/// sum_j dS_ij is the backward's row sum R_i (grad_q_rows): a_i shifts every logit of its
/// row alike, so without a softcap it is exactly 0 (summing float dS of size 1e4 at
/// tau = 1e-4 gave -5.4e-4: fuzzer finding).
/// With da64, dc64 (the backward; SeparableForm's, sized L_q and L_k) the same sums are also
/// kept in double, for the form's prepared_backward: each query tile's rows and each key
/// tile's columns have one writer (flash_backward.hpp's passes B and A).
template <class T>
struct SeparableScorer {
  const Vec<T>* a;
  const Vec<T>* c;
  double* da64 = nullptr;
  double* dc64 = nullptr;
  Eigen::Index q_width() const { return 1; }
  Eigen::Index k_width() const { return 1; }
  Eigen::Index extra_size() const { return 0; }
  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, TileRef<T> S) const {
    for (Eigen::Index r = 0; r < bq; ++r)
      S.row(r) = c->segment(j0, bk).transpose().array() + (*a)(i0 + r);
  }
  static constexpr bool grad_q_by_rows = true;
  void grad_q_rows(Eigen::Index i0, Eigen::Index bq, const std::vector<Eigen::Index>&, Eigen::Index, const Mat<T>&,
                   const double* R, Mat<T>& dQt, Vec<T>&) const {
    for (Eigen::Index r = 0; r < bq; ++r) {
      dQt(r, 0) += T(R[r]);
      if (da64) da64[i0 + r] += R[r];
    }
  }
  void grad_k(Eigen::Index, Eigen::Index, Eigen::Index j0, Eigen::Index bk, const ConstTileRef<T>& dS,
              Mat<T>& dKt, Vec<T>&) const {
    dKt.col(0) += dS.colwise().sum().transpose();
    if (dc64)
      for (Eigen::Index k = 0; k < bk; ++k) dc64[j0 + k] += dS.col(k).template cast<double>().sum();
  }
};

}  // namespace qkscope::cpu::detail
