// qkscope/cpu/position_grad.hpp — the tiled backward's gradients of the relative and T5 bias
// tables (Shaw et al. 2018; Raffel et al. 2020, §2.1), gathered per query row.
//   d table[k] = sum_ij [pair (i, j) reads entry k] dz_ij,   dz = dL/dz (flash_backward.hpp)
// Every visible pair of a row reads exactly one entry of each table, and sum_j dz_ij = 0
// exactly (the softmax is shift-invariant), so a row's shares of one table sum to 0. Summed
// as rounded, the shares of keys that all fall into one entry did not: two keys in one T5
// bucket, dz of +-5e20 each, gave -5.9e20 where the value is 0 (fuzzer findings). Per row and
// table, the entry holding more than half of the row's sum |dz| therefore takes minus the
// other entries' shares (0 when it holds all of them), in the spirit of the tied-key split
// (score/tied_keys.hpp): its error is then the others' rounding, smaller than its own.
#pragma once

#include <cmath>

#include <Eigen/Core>

#include "qkscope/detail/compensated_sum.hpp"

namespace qkscope::cpu::detail {

/// One query tile's rows' shares of the tables: entries [0, n_rel) the relative table's,
/// [n_rel, n_rel + n_t5) the T5 table's.
struct RowPositionShares {
  Eigen::Index n_rel = 0, n_t5 = 0;
  Eigen::MatrixXd acc;  // (rows, 3 n_pos): per entry the sum, its compensation, the sum of |dz|
  Eigen::Index n_pos() const { return n_rel + n_t5; }
  void reset(Eigen::Index rows, Eigen::Index rel, Eigen::Index t5) {
    n_rel = rel;
    n_t5 = t5;
    acc.setZero(rows, 3 * n_pos());
  }
  void add(Eigen::Index r, Eigen::Index k, double dz) {
    const Eigen::Index n = n_pos();
    qkscope::detail::compensated_add(acc(r, k), acc(r, n + k), dz);
    acc(r, 2 * n + k) += std::abs(dz);
  }
  /// Adds every row's shares, after the rule above, into part: n_pos sums, then their n_pos
  /// compensations (flash_backward.hpp reduces such parts in tile order).
  void flush(double* part) const {
    const Eigen::Index n = n_pos();
    for (Eigen::Index r = 0; r < acc.rows(); ++r)
      for (const auto& [k0, len] : {std::pair{Eigen::Index(0), n_rel}, std::pair{n_rel, n_t5}}) {
        Eigen::Index top = -1;
        double total = 0;
        for (Eigen::Index k = k0; k < k0 + len; ++k) {
          total += acc(r, 2 * n + k);
          if (top < 0 || acc(r, 2 * n + k) > acc(r, 2 * n + top)) top = k;
        }
        const bool split = top >= 0 && acc(r, 2 * n + top) > total - acc(r, 2 * n + top);
        double s = 0, c = 0;  // minus the top entry's share: the others' sum
        for (Eigen::Index k = k0; k < k0 + len; ++k) {
          if (split && k == top) continue;
          qkscope::detail::compensated_add(part[k], part[n + k], acc(r, k));
          part[n + k] += acc(r, n + k);
          if (split) {
            qkscope::detail::compensated_add(s, c, acc(r, k));
            c += acc(r, n + k);
          }
        }
        if (split) {
          qkscope::detail::compensated_add(part[top], part[n + top], -s);
          part[n + top] -= c;
        }
      }
  }
};

}  // namespace qkscope::cpu::detail
