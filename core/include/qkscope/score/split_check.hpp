// qkscope/score/split_check.hpp — when a row's rounded dS may stand for its exact sum.
// The split forms (additive's dA and dv, score/additive.hpp; the dot family's query rows over
// tied keys, score/tied_keys.hpp) replace sum_j dS_ij x_j by x_r R_i + sum_j dS_ij (x_j - x_r)
// with R_i the row's exact sum of dS; that is the same sum only where the rounded dS add up to
// R_i within their own rounding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include <Eigen/Core>

namespace qkscope::score {

/// Whether a row's dS (float sum row_sum, sum of |dS| row_abs, n keys) add up to the exact
/// row sum R within their own rounding: R - sum dS T^2 assumes each dS_ij is within a few
/// eps |dS_ij|. A dS whose error is eps times a larger term (the dominant key of a one-hot
/// row, P = 1.0f, whose dS rounded to 0 beside P 1e-20 keys) gave dQ -4.1e-12 where it is
/// 4.1e-10 (review finding); such a row takes the plain sum.
/// The keys a row's sums run over: blocks of `width` keys starting at start[0 .. n), the last
/// cut at `end` (a tiled query tile's visited key blocks; the core's whole row is one block).
/// each(f) calls f(j) for every key, in order.
struct KeyBlocks {
  const Eigen::Index* start;
  std::size_t n;
  Eigen::Index width, end;
  template <class F>
  void each(F&& f) const {
    for (std::size_t b = 0; b < n; ++b)
      for (Eigen::Index j = start[b], e = std::min(start[b] + width, end); j < e; ++j) f(j);
  }
};

/// eps: the relative rounding of each dS (T's own; float's where float dS are summed in double:
/// cpu/additive.hpp, the backward's sums).
template <class T>
bool split_consistent(T row_sum, T row_abs, double R, Eigen::Index n,
                      double eps = double(std::numeric_limits<T>::epsilon())) {
  return std::abs(double(row_sum) - R) <= double(n + 4) * eps * double(row_abs);
}

}  // namespace qkscope::score
