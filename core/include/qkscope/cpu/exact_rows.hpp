// qkscope/cpu/exact_rows.hpp — the logits in double of the tiled backward's rows whose P are
// taken again in double (RowShift kind 2, row_shift.hpp): per query row in pass B, per tile in
// pass A (flash_backward.hpp), from the scorer's raw scores in double where it has them, else
// from T's z. W: the backward's per-thread scratch (rowX, rowZ64).
#pragma once

#include <algorithm>
#include <vector>

#include "qkscope/cpu/double_slopes.hpp"
#include "qkscope/cpu/row_shift.hpp"
#include "qkscope/cpu/temperature_grad.hpp"

namespace qkscope::cpu::detail {

/// Raw scores in double (out, by absolute key index, over the keys of `blocks`) to z through the
/// modifiers (logit64), for a row of kind 2 (RowShift). One copy per T, not per scorer.
template <class T>
EIGEN_DONT_INLINE void raw_to_logits64(const pipeline::ScoreMods<T>& m, Eigen::Index i,
                                       const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, Eigen::Index L_k,
                                       double* out) {
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index k = j0, e = std::min(j0 + block_k, L_k); k < e; ++k) out[k] = logit64(m, int(i), int(k), out[k]);
}

/// Pass B's rows of kind 2 (marked 3 by row_shifts) where the scorer has no scores in
/// double: z64 from T's z, then D again (exact_row_shift). One copy per T.
template <class T, class W>
EIGEN_DONT_INLINE void exact_rows_from_float(W& w, Eigen::Index i0, const std::vector<Eigen::Index>& blocks,
                                             Eigen::Index block_k, Eigen::Index L_k, const Vec<T>& lse, T tau,
                                             const Eigen::VectorXd& inv_sum, RowShift& D) {
  for (Eigen::Index r = 0; r < w.rowX.rows(); ++r) {
    if (D.p64[std::size_t(i0 + r)] != 3) continue;
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index k = j0, e = std::min(j0 + block_k, L_k); k < e; ++k) w.rowZ64(r, k) = double(w.rowX(r, k));
    exact_row_shift<T>(w, r, i0 + r, blocks, block_k, L_k, lse, tau, inv_sum, D);
  }
}

/// Pass B's rows of kind 2: their z in double into w.rowZ64 (the scorer's raw scores in double
/// through the modifiers where it has them, else T's z), then D again from P in double.
template <class T, class Scorer, class W>
void exact_rows(const Scorer& sc, const TileOps<T>& ops, W& w, Eigen::Index i0,
                const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, Eigen::Index L_k, const Vec<T>& lse,
                const Eigen::VectorXd& inv_sum, RowShift& D) {
  w.rowZ64.resize(w.rowX.rows(), L_k);
  if constexpr (DoubleRawScores<Scorer>) {
    for (Eigen::Index r = 0; r < w.rowX.rows(); ++r) {
      if (D.p64[std::size_t(i0 + r)] != 3) continue;
      double* out = w.rowZ64.row(r).data();
      sc.double_scores(i0 + r, blocks, block_k, out);
      raw_to_logits64(ops.mods, i0 + r, blocks, block_k, L_k, out);
      exact_row_shift<T>(w, r, i0 + r, blocks, block_k, L_k, lse, ops.tau, inv_sum, D);
    }
  } else {
    exact_rows_from_float(w, i0, blocks, block_k, L_k, lse, ops.tau, inv_sum, D);
  }
}

/// The z in double of one tile's rows of kind 2 (pass A), row-major (bq, bk) in a per-thread
/// buffer, or null where it has none: T's z (X) as double (other rows' entries unset).
template <class T>
EIGEN_DONT_INLINE double* float_tile_logits(const RowShift& D, Eigen::Index i0, const Eigen::Map<Mat<T>>& X) {
  thread_local std::vector<double> z64;
  bool any = false;
  for (Eigen::Index r = 0; r < X.rows(); ++r) any |= D.exact(i0 + r);
  if (!any) return nullptr;
  z64.resize(std::size_t(X.size()));
  for (Eigen::Index r = 0; r < X.rows(); ++r)
    if (D.exact(i0 + r))
      for (Eigen::Index c = 0; c < X.cols(); ++c) z64[std::size_t(r * X.cols() + c)] = double(X(r, c));
  return z64.data();
}

/// The rows of kind 2 of z64 (bq, bk) again from the scorer's raw scores in double through the
/// modifiers (out of line: the tile pass stays small where no row is of kind 2).
template <class T, class Scorer>
EIGEN_DONT_INLINE void double_tile_logits(const Scorer& sc, const pipeline::ScoreMods<T>& m, const RowShift& D,
                                          Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk,
                                          Eigen::Index L_k, double* z64) {
  thread_local std::vector<double> row;
  row.resize(std::size_t(L_k));
  const std::vector<Eigen::Index> block{j0};
  for (Eigen::Index r = 0; r < bq; ++r) {
    if (!D.exact(i0 + r)) continue;
    sc.double_scores(i0 + r, block, bk, row.data());
    raw_to_logits64(m, i0 + r, block, bk, L_k, row.data());
    for (Eigen::Index c = 0; c < bk; ++c) z64[r * bk + c] = row[std::size_t(j0 + c)];
  }
}

/// The same from the scorer's raw scores in double through the modifiers where it has them.
template <class T, class Scorer>
const double* exact_tile_logits(const Scorer& sc, const TileOps<T>& ops, const RowShift& D, Eigen::Index i0,
                                Eigen::Index j0, Eigen::Index L_k, const Eigen::Map<Mat<T>>& X) {
  double* z64 = float_tile_logits(D, i0, X);  // null where no row is of kind 2
  if constexpr (DoubleRawScores<Scorer>)
    if (z64) double_tile_logits(sc, ops.mods, D, i0, X.rows(), j0, X.cols(), L_k, z64);
  return z64;
}

}  // namespace qkscope::cpu::detail
