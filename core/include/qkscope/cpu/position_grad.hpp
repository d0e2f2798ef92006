// qkscope/cpu/position_grad.hpp — the tiled backward's gradients of the relative and T5 bias
// tables, gathered per query row in pass B (flash_backward.hpp):
//   d table[k] = sum_tiles sum_rows share_i[k],   share_i[k] = sum_{j : (i, j) reads k} dz_ij
// Each row's shares go through detail/row_table_shares.hpp's rule (the entry holding more than
// half of the row's sum |dz| takes minus the others'), which needs sum_j dz_ij = 0: this
// kernel is the softmax's (the online normalizers', all shift-invariant: cpu/attention.hpp),
// whose D makes sum_j P_ij (dP_ij - D_i) = 0. A query tile keeps only the entries its rows
// touched (at most L_k + bq of a relative table): a dense part per tile made a relative table
// of R = 65535 ~100 times slower (the fourteenth session's reverted attempt).
#pragma once

#include <vector>

#include <Eigen/Core>

#include "qkscope/detail/compensated_sum.hpp"
#include "qkscope/detail/row_table_shares.hpp"

namespace qkscope::cpu::detail {

/// One entry's compensated sum (abs unused): k indexes the relative table's 2R+1 entries, then
/// the T5 table's. One type with the rows' entries: one vector instantiation in the wasm module.
using TableSum = qkscope::detail::TableEntry;

/// A query tile's sums over the entries its rows touched (a slot per entry, reset by take).
class TileTableSums {
 public:
  void resize(int n) {
    if (int(slot_.size()) != n) slot_.assign(std::size_t(n), -1);
  }
  void add(int k, double s, double c) {
    int& at = slot_[std::size_t(k)];
    if (at < 0) {
      at = int(sums_.size());
      sums_.push_back({k, 0, 0, 0});
    }
    TableSum& e = sums_[std::size_t(at)];
    qkscope::detail::compensated_add(e.sum, e.comp, s);
    e.comp += c;
  }
  /// The tile's sums (in the order touched), leaving it empty.
  std::vector<TableSum> take() {
    for (const TableSum& e : sums_) slot_[std::size_t(e.k)] = -1;
    std::vector<TableSum> out;
    out.swap(sums_);
    return out;
  }

 private:
  std::vector<int> slot_;
  std::vector<TableSum> sums_;
};

/// Per-thread state of position_rows.
struct PositionScratch {
  qkscope::detail::PositionRowShares row;
  TileTableSums tile;
};

/// The shares of one query tile's rows (dz: (bq, L_k), read over the visible blocks), row by
/// row under the rule; returns the tile's sums. Not inlined: one copy for all the scorers'
/// flash_backward (the wasm tiled module's budget).
template <class Mods, class Dz>
[[gnu::noinline]] std::vector<TableSum> position_rows(const Mods& m, PositionScratch& w, const Dz& dz, Eigen::Index i0,
                                    const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, Eigen::Index L_k) {
  const int n_rel = m.relative ? 2 * m.R + 1 : 0;
  w.row.resize(m);  // once per thread and table size: the slots stay reset between rows
  w.tile.resize(n_rel + (m.t5 ? m.buckets.num_buckets : 0));
  for (Eigen::Index r = 0; r < dz.rows(); ++r) {
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index j = j0, e = std::min(j0 + block_k, L_k); j < e; ++j) w.row.add(m, int(i0 + r), int(j), dz(r, j));
    int offset = 0;  // one closure type for both tables: one flush in the wasm module
    const auto out = [&](int k, double s, double c) { w.tile.add(offset + k, s, c); };
    w.row.rel.flush(out);
    offset = n_rel;
    w.row.t5.flush(out);
  }
  return w.tile.take();
}

/// d table = the tiles' sums, added per entry in tile order (independent of the thread count).
[[gnu::noinline]] inline Eigen::VectorXd reduce_tables(const std::vector<TableSum>* tiles, Eigen::Index n_tiles, Eigen::Index n_pos) {
  Eigen::VectorXd s = Eigen::VectorXd::Zero(n_pos), c = Eigen::VectorXd::Zero(n_pos);
  for (Eigen::Index t = 0; t < n_tiles; ++t)
    for (const TableSum& e : tiles[t]) {
      qkscope::detail::compensated_add(s(e.k), c(e.k), e.sum);
      c(e.k) += e.comp;
    }
  return s + c;
}

}  // namespace qkscope::cpu::detail
