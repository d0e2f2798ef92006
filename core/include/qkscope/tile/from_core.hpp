// qkscope/tile/from_core.hpp — host only: the core's resolved mask (MaskFn) and biases
// (BiasSpec) as the tile PODs of tile.hpp. The PODs point into the core objects' storage
// (keep mask, relative table, dense bias): keep those alive while the PODs are used.
// Throws std::invalid_argument when a length does not fit the tile's int positions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "qkscope/attention.hpp"
#include "qkscope/tile/tile.hpp"

namespace qkscope::tile {

/// Largest sequence length the tile functors take (positions and window sums stay in int).
inline constexpr Eigen::Index kMaxLength = Eigen::Index(1) << 29;

/// The core's resolved mask as a tile::Mask. Window widths are clamped to L_q + L_k (wider
/// windows see the same keys), so every bound computation stays inside int.
inline Mask to_tile(const MaskFn& m) {
  static_assert(sizeof(bool) == 1, "keep masks are read as bytes");
  qkscope::detail::require(m.L_q <= kMaxLength && m.L_k <= kMaxLength,
                           "tile: L_q and L_k must be <= 2^29, got " +
                               qkscope::detail::shape_str(m.L_q, m.L_k));
  Mask t;
  t.L_q = int(m.L_q);
  t.L_k = int(m.L_k);
  t.key_length = int(m.key_length);
  t.offset = int(m.offset);
  t.causal = m.causal;
  t.windowed = m.windowed;
  const Eigen::Index wide = m.L_q + m.L_k;
  t.left = int(std::min(m.left, wide));
  t.right = int(std::min(m.right, wide));
  t.keep = m.keep ? reinterpret_cast<const std::uint8_t*>(m.keep->data()) : nullptr;
  return t;
}

/// The score modifiers of `b` (validated by the caller) for a call with this scale,
/// temperature and mask offset. Points into b.relative and b.dense.
template <class T>
ScoreMods<T> to_tile(const BiasSpec<T>& b, double scale, double temperature, const MaskFn& m) {
  ScoreMods<T> s;
  s.scale = T(scale);
  s.inv_tau = T(1.0 / temperature);
  s.scale_tau = s.scale * s.inv_tau;
  s.softcap = b.softcap.has_value();
  if (s.softcap) s.cap = T(*b.softcap);
  s.alibi = b.alibi_slope.has_value();
  if (s.alibi) s.slope = T(*b.alibi_slope);
  s.offset = int(m.offset);
  if (b.relative.size()) {
    s.relative = b.relative.data();
    s.R = int(b.relative.size() / 2);
  }
  if (b.dense.size()) {
    s.dense = b.dense.data();
    s.ld = b.dense.cols();
  }
  return s;
}

}  // namespace qkscope::tile
