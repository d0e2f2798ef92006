// qkscope/cpu/double_slopes.hpp — the softcap's slopes in the tiled backward's row sums
// (RowSums, read by cpu/flash_backward.hpp's finish_tile), and the raw scores in double for
// them from scorers that keep double tiles of their float scores (cpu/additive.hpp: every
// float additive backward prepares them).
// Why: a row's R_i = (scale / tau) sum_j dx_ij (s'_j - s'_ref) rests on the differences of
// the slopes s' = 1 - tanh^2(scale S / cap), i.e. on differences of S. The float tiles hold S to
// ~eps |S| (the fused tanh: ~1.3 eps per unit), and where the keys' scores differ by 1.7e-6 at
// |S| ~ 0.3 that moved R by ~1 % (additive keys 1e-5 and 2e-5 under a softcap of 0.5: dQ 0.87 %
// off, 2.2 times the fuzz harness's bar; docs/RELIABILITY.md, "Fixed on 2026-12-07,
// twenty-fourth session"). The double tiles' error is ~eps_double per unit times sum_h |v_h|
// (their exp form's absolute error), some 1e9 times smaller.
#pragma once

#include <algorithm>
#include <vector>

#include <Eigen/Core>

#include "qkscope/types.hpp"

namespace qkscope::cpu::detail {

/// R_i = sum_j dL/draw_ij of each query row, for the scorers whose query gradient is built
/// on it (grad_q_by_rows). sum_j dx_ij = 0 exactly (D is the P-weighted mean of dP), so
/// without a softcap R_i = 0 (ALiBi, relative and dense biases shift a row alike) and it is
/// not summed at all: a double sum of dx of size 1e24 / tau leaves 1e8 where the float core
/// cancels to 0 (review finding). With a softcap of slope s'_j, R_i = (scale / tau)
/// sum_j dx_ij (s'_j - s'_ref) in double, s'_ref the slope at the row's key of largest P, so
/// tied and unbent rows give 0 exactly and the largest dx meet a slope near theirs (at the
/// first key with P > 0, a tiny P beside saturated keys left 2e15 where the value is 2e-6:
/// review finding). For these scorers dS itself takes the slope in double too (finish_tile):
/// a float slope 1 - tanh^2 near saturation is ~1e-7 absolute, 12% of a slope of 5e-7, which
/// R_i - sum dS t^2 (cpu/additive.hpp) then carried (review finding).
struct RowSums {
  double* sum = nullptr;        // (bq) R_i, accumulated over the row's blocks; null: not wanted
  const double* ref = nullptr;  // (bq) s'_ref
  /// The raw scores in double where the scorer has them (below), column j at
  /// j - s64_col0; null: the slopes from S itself.
  const Mat<double>* s64 = nullptr;
  Eigen::Index s64_col0 = 0;
};

/// Does the scorer give its raw scores in double (double_scores per row, double_tile per tile)?
template <class Scorer>
concept DoubleRawScores = Scorer::double_logits && requires(const Scorer& s, const std::vector<Eigen::Index>& b,
                                                            double* out, Mat<double>& m) {
  s.double_scores(Eigen::Index(0), b, Eigen::Index(1), out);
  s.double_tile(Eigen::Index(0), Eigen::Index(1), Eigen::Index(0), Eigen::Index(1), m);
};

/// out (bq, L_k) = the raw scores of queries [i0, i0 + bq) over the keys of `blocks` in double
/// (0 elsewhere); false (out untouched) where the scorer has none.
template <class Scorer>
bool double_raw_rows(const Scorer& sc, Eigen::Index i0, Eigen::Index bq, const std::vector<Eigen::Index>& blocks,
                     Eigen::Index block_k, Eigen::Index L_k, Mat<double>& out) {
  if constexpr (DoubleRawScores<Scorer>) {
    out.setZero(bq, L_k);
    std::vector<double> row(std::size_t(L_k), 0.0);
    for (Eigen::Index r = 0; r < bq; ++r) {
      sc.double_scores(i0 + r, blocks, block_k, row.data());
      for (const Eigen::Index j0 : blocks)
        for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c) out(r, c) = row[std::size_t(c)];
    }
    return true;
  } else {
    return false;
  }
}

/// out (bq, bk) = the raw scores of one tile in double, the same values as double_raw_rows';
/// false where the scorer has none. (Row by row through double_scores instead, the tiled wasm
/// module came out 209 B larger, gzipped.)
template <class Scorer>
bool double_raw_tile(const Scorer& sc, Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk,
                     Mat<double>& out) {
  if constexpr (DoubleRawScores<Scorer>) {
    sc.double_tile(i0, bq, j0, bk, out);
    return true;
  } else {
    return false;
  }
}

}  // namespace qkscope::cpu::detail
