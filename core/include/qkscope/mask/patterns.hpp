// qkscope/mask/patterns.hpp — fixed sparse attention patterns as keep masks (true = may
// attend), for forward()'s MaskSpec::keep:
// - sliding window of half-width w around the aligned diagonal (Longformer, Beltagy et al.
//   2020, §3.1): key j visible from query i when |j - (i + o)| <= w;
// - g global tokens (Longformer §3.1; BigBird's "ITC" variant, Zaheer et al. 2020, §2):
//   the tokens at positions 0 ... g-1 see every key and are seen by every query, i.e.
//   queries with 0 <= i + o < g and keys j < g;
// - r random keys per query (BigBird, Zaheer et al. 2020, §2, the random graph of Erdős–
//   Rényi type): each row gets r keys drawn uniformly without replacement, seeded, from the
//   keys the window and global tokens leave out (all of them when fewer remain).
// o is the diagonal offset of the mask's alignment (0 top-left, L_k - L_q bottom-right):
// query i sits at key position i + o. Everything about a row depends on that position only
// (the random keys too: each row draws from a stream seeded by (seed, i + o)), so with
// bottom-right alignment a block of the last queries (KV-cache decoding, L_q = 1) gets
// exactly the bottom rows of the square pattern.
// The pattern is the paper's token-level graph; BigBird's kernels use blocks of tokens
// instead, which changes speed, not which graph is meant.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/mask/mask.hpp"
#include "qkscope/types.hpp"

namespace qkscope {

/// Window + global + random pattern (each part optional).
struct SparsePattern {
  /// Half-width w >= 0 of the sliding window; empty = no window part.
  std::optional<Eigen::Index> window;
  /// Number g >= 0 of global tokens (the first g positions).
  Eigen::Index global = 0;
  /// Random keys r >= 0 per query row.
  Eigen::Index random = 0;
  /// Seed of the random keys.
  std::uint64_t seed = 0;
  /// Diagonal alignment for L_q != L_k: where query i sits (position i + o) for the
  /// window, the global tokens and the random keys' streams.
  CausalAlignment alignment = CausalAlignment::top_left;
};

/// The (L_q, L_k) keep mask of `p`. Throws std::invalid_argument naming the field for a
/// negative length, window, global or random count. Same seed, same mask on every platform.
inline KeepMask sparse_pattern_mask(Eigen::Index L_q, Eigen::Index L_k, const SparsePattern& p) {
  detail::require(L_q >= 0 && L_k >= 0, "sparse_pattern_mask: L_q and L_k must be >= 0, got (L_q, L_k) = " +
                                            detail::shape_str(L_q, L_k));
  if (p.window)
    detail::require(*p.window >= 0, "pattern.window must be >= 0, got " + std::to_string(*p.window));
  detail::require(p.global >= 0, "pattern.global must be >= 0, got " + std::to_string(p.global));
  detail::require(p.random >= 0, "pattern.random must be >= 0, got " + std::to_string(p.random));
  const Eigen::Index o = p.alignment == CausalAlignment::bottom_right ? L_k - L_q : 0;
  KeepMask keep = KeepMask::Constant(L_q, L_k, false);
  for (Eigen::Index i = 0; i < L_q; ++i)
    for (Eigen::Index j = 0; j < L_k; ++j) {
      const Eigen::Index d = j - (i + o);
      const Eigen::Index pos = i + o;  // the query's position among the keys
      keep(i, j) = (p.window && d >= -*p.window && d <= *p.window) || (pos >= 0 && pos < p.global) || j < p.global;
    }
  if (p.random == 0) return keep;
  std::vector<Eigen::Index> free;
  for (Eigen::Index i = 0; i < L_q; ++i) {
    // One stream per position (SplitMix64 of a seed mixed with the position), so a row's
    // random keys do not depend on how many rows precede it in this call.
    detail::Rng rng(detail::Rng(p.seed ^ (0xD1B54A32D192ED03ull * std::uint64_t(i + o))).next_u64());
    free.clear();
    for (Eigen::Index j = 0; j < L_k; ++j)
      if (!keep(i, j)) free.push_back(j);
    // Partial Fisher-Yates: the first r entries of a uniform shuffle of the free keys
    // (the modulo bias of 64-bit draws over n <= 2^30 keys is below 2^-34).
    const Eigen::Index r = std::min<Eigen::Index>(p.random, Eigen::Index(free.size()));
    for (Eigen::Index t = 0; t < r; ++t) {
      const auto n = std::uint64_t(free.size()) - std::uint64_t(t);
      const Eigen::Index pick = t + Eigen::Index(rng.next_u64() % n);
      std::swap(free[t], free[pick]);
      keep(i, free[t]) = true;
    }
  }
  return keep;
}

}  // namespace qkscope
