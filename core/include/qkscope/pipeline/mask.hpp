// qkscope/pipeline/mask.hpp — the one mask predicate (mask/mask.hpp's MaskSpec resolved by
// resolve_mask), as a POD functor that the core, the CPU tiled kernels and the CUDA kernels
// all call, plus block iteration bounds and block classification (FlexAttention's BlockMask).
//   allowed(i, j) = j < key_length  and  (!causal or d <= 0)  and  (!window or -left <= d <= right)
//                   and keep[i, j],   with d = j - (i + offset)     (cuDNN diagonal-band model)
// A query block [i0, i1) only visits key blocks that meet keys_for(i0, i1); a key block
// [j0, j1) only visits query blocks that meet queries_for(j0, j1) (backward). Inside those
// ranges a block is classified: empty (skipped), full (no per-element test) or partial.
// The band tests are exact for rectangles; an explicit keep mask is exact only through a
// block map built once on the host (build_block_map). Sources: FlashAttention-2 (Dao 2023,
// §3.1 "causal masking": skip blocks above the diagonal), FlexAttention BlockMask (2024).
#pragma once

#include "qkscope/pipeline/host_device.hpp"

namespace qkscope::pipeline {

/// Largest sequence length the functors take (positions and window sums stay in int).
inline constexpr long long kMaxLength = 1LL << 29;

/// How much of a (query block, key block) rectangle may attend.
enum class BlockKind : std::uint8_t { empty = 0, partial = 1, full = 2 };

/// Half-open index range [begin, end); empty when begin >= end.
struct Range {
  int begin = 0, end = 0;
  QKSCOPE_HOST_DEVICE bool empty() const { return begin >= end; }
};

/// Resolved mask: allowed(i, j) for 0 <= i < L_q, 0 <= j < L_k. Built by resolve_mask.
struct Mask {
  int L_q = 0, L_k = 0;
  int key_length = 0;     // keys j >= key_length are masked (<= L_k)
  int offset = 0;         // query i sits on the diagonal key i + offset
  bool causal = false, windowed = false;
  int left = 0, right = 0;                 // window widths (>= 0) when windowed
  const std::uint8_t* keep = nullptr;      // optional (L_q, L_k) row-major, nonzero = may attend

  /// The diagonal band and key padding only (no keep mask).
  QKSCOPE_HOST_DEVICE bool band(int i, int j) const {
    if (j >= key_length) return false;
    const int d = j - (i + offset);
    if (causal && d > 0) return false;
    if (windowed && (d < -left || d > right)) return false;
    return true;
  }
  /// May query i attend to key j? (0 <= i < L_q, 0 <= j < L_k)
  QKSCOPE_HOST_DEVICE bool operator()(int i, int j) const {
    return band(i, j) && (!keep || keep[offset_t(i) * L_k + j] != 0);
  }
  /// The same mask with keys >= n also masked (per-sequence key lengths).
  QKSCOPE_HOST_DEVICE Mask with_key_length(int n) const {
    Mask m = *this;
    m.key_length = imin(key_length, imax(n, 0));
    return m;
  }

  /// Keys some query in [i0, i1) may see through the band: exact for the band (every key
  /// inside is visible from at least one of the rows), a superset when keep is set.
  QKSCOPE_HOST_DEVICE Range keys_for(int i0, int i1) const {
    if (i0 >= i1) return {0, 0};
    int b = 0, e = key_length;
    if (causal) e = imin(e, i1 - 1 + offset + 1);
    if (windowed) {
      b = imax(b, i0 + offset - left);
      e = imin(e, i1 - 1 + offset + right + 1);
    }
    return {b, e};
  }
  /// Queries in [0, L_q) that may see some key of [j0, j1) through the band (exact for
  /// the band, a superset when keep is set).
  QKSCOPE_HOST_DEVICE Range queries_for(int j0, int j1) const {
    const int jv = imin(j1, key_length);  // visible keys end
    if (j0 >= jv) return {0, 0};
    int b = 0, e = L_q;
    if (causal) b = imax(b, j0 - offset);
    if (windowed) {
      b = imax(b, j0 - offset - right);
      e = imin(e, jv - 1 - offset + left + 1);
    }
    return {b, e};
  }

  /// Exact for the band on [i0, i1) x [j0, j1) (non-empty, inside (L_q, L_k)).
  QKSCOPE_HOST_DEVICE BlockKind classify_band(int i0, int i1, int j0, int j1) const {
    const int jv = imin(j1, key_length);
    if (j0 >= jv) return BlockKind::empty;
    const int dmin = j0 - (i1 - 1 + offset), dmax = (jv - 1) - (i0 + offset);
    if (causal && dmin > 0) return BlockKind::empty;
    if (windowed && (dmax < -left || dmin > right)) return BlockKind::empty;
    const int dmax_all = (j1 - 1) - (i0 + offset);
    const bool full = jv == j1 && (!causal || dmax_all <= 0) &&
                      (!windowed || (dmin >= -left && dmax_all <= right));
    return full ? BlockKind::full : BlockKind::partial;
  }
  /// Band classification; with a keep mask every non-empty block is "partial" (check each
  /// element) unless a block map says more (BlockClassifier).
  QKSCOPE_HOST_DEVICE BlockKind classify(int i0, int i1, int j0, int j1) const {
    const BlockKind k = classify_band(i0, i1, j0, j1);
    return (keep && k != BlockKind::empty) ? BlockKind::partial : k;
  }
  /// Exact classification, scanning the keep mask when there is one (host: block maps).
  QKSCOPE_HOST_DEVICE BlockKind classify_exact(int i0, int i1, int j0, int j1) const {
    const BlockKind k = classify_band(i0, i1, j0, j1);
    if (!keep || k == BlockKind::empty) return k;
    int n = 0;
    for (int i = i0; i < i1; ++i)
      for (int j = j0; j < j1; ++j) n += (*this)(i, j) ? 1 : 0;
    if (n == 0) return BlockKind::empty;
    return n == (i1 - i0) * (j1 - j0) ? BlockKind::full : BlockKind::partial;
  }
};

/// Fills map[qb * ceil(L_k / Bc) + kb] with the exact kind of every (Br x Bc) block
/// (clipped to (L_q, L_k)). Built on the host for keep masks: O(L_q L_k) once per call.
QKSCOPE_HOST_DEVICE inline void build_block_map(const Mask& m, int Br, int Bc, std::uint8_t* map) {
  const int nqb = ceil_div(m.L_q, Br), nkb = ceil_div(m.L_k, Bc);
  for (int qb = 0; qb < nqb; ++qb)
    for (int kb = 0; kb < nkb; ++kb)
      map[offset_t(qb) * nkb + kb] = std::uint8_t(m.classify_exact(
          qb * Br, imin((qb + 1) * Br, m.L_q), kb * Bc, imin((kb + 1) * Bc, m.L_k)));
}

/// What a kernel with (Br x Bc) blocks asks about block (qb, kb): the clipped block's kind,
/// from the block map when there is one, and never "full" when the block runs past L_q or
/// L_k (the padding rows/columns need the per-element test, which treats them as masked).
/// The map may be coarser than the kernel's blocks (map_Br a multiple of Br, map_Bc of Bc):
/// a block inside an empty (full) map block is empty (full), otherwise partial.
struct BlockClassifier {
  Mask mask;
  int Br = 1, Bc = 1;
  const std::uint8_t* map = nullptr;  // from build_block_map(mask, map_Br, map_Bc) or nullptr
  int map_Br = 0, map_Bc = 0;         // the map's block shape; 0 = (Br, Bc)

  QKSCOPE_HOST_DEVICE int num_q_blocks() const { return ceil_div(mask.L_q, Br); }
  QKSCOPE_HOST_DEVICE int num_k_blocks() const { return ceil_div(mask.L_k, Bc); }

  QKSCOPE_HOST_DEVICE BlockKind operator()(int qb, int kb) const {
    const int i0 = qb * Br, j0 = kb * Bc;
    const int i1 = imin(i0 + Br, mask.L_q), j1 = imin(j0 + Bc, mask.L_k);
    if (i0 >= i1 || j0 >= j1) return BlockKind::empty;
    BlockKind k;
    if (map) {
      const int mBr = map_Br ? map_Br : Br, mBc = map_Bc ? map_Bc : Bc;
      k = BlockKind(map[offset_t(i0 / mBr) * ceil_div(mask.L_k, mBc) + j0 / mBc]);
    } else {
      k = mask.classify(i0, i1, j0, j1);
    }
    // The map was built for the unreduced key length: key padding still applies.
    if (map && k != BlockKind::empty) {
      const BlockKind band = mask.classify_band(i0, i1, j0, j1);
      if (band == BlockKind::empty) k = BlockKind::empty;
      else if (band == BlockKind::partial) k = BlockKind::partial;
    }
    if (k == BlockKind::full && (i0 + Br > mask.L_q || j0 + Bc > mask.L_k)) k = BlockKind::partial;
    return k;
  }
  /// Key blocks a query block must visit: [begin, end) from the band bounds.
  QKSCOPE_HOST_DEVICE Range key_blocks(int qb) const {
    const Range r = mask.keys_for(qb * Br, imin((qb + 1) * Br, mask.L_q));
    if (r.empty()) return {0, 0};
    return {r.begin / Bc, ceil_div(r.end, Bc)};
  }
  /// Query blocks a key block must visit (backward): [begin, end).
  QKSCOPE_HOST_DEVICE Range query_blocks(int kb) const {
    const Range r = mask.queries_for(kb * Bc, imin((kb + 1) * Bc, mask.L_k));
    if (r.empty()) return {0, 0};
    return {r.begin / Br, ceil_div(r.end, Br)};
  }
};

}  // namespace qkscope::pipeline
