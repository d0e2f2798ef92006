// qkscope/cpu/double_slopes.hpp — the raw scores in double for the softcap's slopes in the
// tiled backward (cpu/flash_backward.hpp, RowSums), from scorers that keep double tiles of
// their float scores (cpu/additive.hpp: every float additive backward prepares them).
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
