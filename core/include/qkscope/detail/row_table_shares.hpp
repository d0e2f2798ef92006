// qkscope/detail/row_table_shares.hpp — one query row's shares of the relative and T5 tables'
// gradients (Shaw et al. 2018; Raffel et al. 2020, §2.1), for rows whose dz sum to 0:
//   d table[k] = sum_i share_i[k],   share_i[k] = sum_{j : pair (i, j) reads k} dz_ij
// Under a shift-invariant normalizer sum_k share_i[k] = sum_j dz_ij = 0 exactly (each visible
// pair reads one entry of each table). Summed as rounded, the shares of keys that all read one
// entry do not cancel: two keys in one T5 bucket with dz of +-5e20 gave -5.9e20 where the value
// is 0 (fuzzer findings). So per row and table, the entry holding more than half of the row's
// sum |dz| takes minus the sum of the other entries' shares (0 when it holds them all): its
// error is then the others' rounding, smaller than its own (the tied-key split's idea,
// score/tied_keys.hpp). Used by the core's double backward (attention.hpp) and the tiled one
// (cpu/position_grad.hpp). Cost O(entries touched) per row, at most one per visible key: a slot
// per table entry, filled once and reset after each row.
#pragma once

#include <cmath>
#include <vector>

#include "qkscope/detail/compensated_sum.hpp"

namespace qkscope::detail {

/// One table entry's compensated sum (and, for a row's share, its sum of |dz|).
struct TableEntry {
  int k;
  double sum, comp, abs;
};

/// One table's shares of the current row.
class RowTableShares {
 public:
  void resize(int n) {
    if (int(slot_.size()) != n) slot_.assign(std::size_t(n), -1);
  }
  void add(int k, double dz) {
    if (k != last_) {  // neighbouring keys mostly read one entry: look it up once per run
      int& s = slot_[std::size_t(k)];
      if (s < 0) {
        s = int(touched_.size());
        touched_.push_back({k, 0, 0, 0});
      }
      last_ = k;
      at_ = std::size_t(s);
    }
    TableEntry& e = touched_[at_];
    compensated_add(e.sum, e.comp, dz);
    e.abs += std::abs(dz);
  }
  /// Calls out(k, sum, compensation) for each entry the row touched, after the rule, and
  /// clears the row.
  template <class Out>
  void flush(Out&& out) {
    const TableEntry* top = nullptr;  // the first of the largest sum |dz|
    double total = 0;
    for (const TableEntry& e : touched_) {
      total += e.abs;
      if (!top || e.abs > top->abs) top = &e;
    }
    const bool split = top && top->abs > total - top->abs;  // false for NaN: they propagate
    double s = 0, c = 0;  // the others' shares
    for (const TableEntry& e : touched_) {
      slot_[std::size_t(e.k)] = -1;
      if (split && &e == top) continue;
      out(e.k, e.sum, e.comp);
      compensated_add(s, c, e.sum);
      c += e.comp;
    }
    if (split) out(top->k, -s, -c);
    touched_.clear();
    last_ = -1;
  }
  /// flush into sum[k] + comp[k] (compensated).
  void flush(double* sum, double* comp) {
    flush([&](int k, double s, double c) {
      compensated_add(sum[k], comp[k], s);
      comp[k] += c;
    });
  }

 private:
  std::vector<int> slot_;  // per table entry: its index in touched_, or -1
  std::vector<TableEntry> touched_;  // the row's shares (compensated) and their sums of |dz|
  int last_ = -1;          // the entry add saw last, at touched_[at_]
  std::size_t at_ = 0;
};

/// The relative table's and the T5 table's shares of one row (Mods: pipeline::ScoreMods).
struct PositionRowShares {
  RowTableShares rel, t5;
  template <class Mods>
  void resize(const Mods& m) {
    rel.resize(m.relative ? 2 * m.R + 1 : 0);
    t5.resize(m.t5 ? m.buckets.num_buckets : 0);
  }
  template <class Mods>
  void add(const Mods& m, int i, int j, double dz) {
    if (dz == 0) return;  // masked keys (and exact zeros) add nothing
    if (m.relative) rel.add(m.relative_index(i, j), dz);
    if (m.t5) t5.add(m.t5_index(i, j), dz);
  }
};

}  // namespace qkscope::detail
