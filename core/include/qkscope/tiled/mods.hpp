// qkscope/tiled/mods.hpp — the element-wise part of the pipeline on one (query tile,
// key tile) block: raw -> scale -> softcap -> ALiBi -> relative -> dense -> mask -> / tau,
// exactly the order of attention.hpp, plus its backward, and the mask geometry the tiled
// kernels use to touch only visible keys.
//   x_ij = mask_ij ? bias(scale * raw_ij) / tau : -inf
// Masking is done by ranges, not by writing -inf: the band part of every mask (key
// padding, causal, sliding window) gives each query row one exact visible key range
// [lo, hi), and the kernels run max / exp / sum on that range only. Only an explicit keep
// mask or a dense bias (which may hold -inf) can hide keys inside it ("general" tiles).
#pragma once

#include <cmath>
#include <limits>
#include <utility>

#include "qkscope/attention.hpp"

namespace qkscope::tiled::detail {

enum class TileKind { empty, full, partial };

/// Whether no / every / some (i, j) in [i0, i1) x [j0, j1) may attend. `empty` and `full`
/// are exact claims (the band tests are exact for rectangles); `partial` means "check".
inline TileKind classify_tile(const MaskFn& m, Eigen::Index i0, Eigen::Index i1, Eigen::Index j0,
                              Eigen::Index j1) {
  const Eigen::Index jv = std::min(j1, m.key_length);  // visible keys end
  if (j0 >= jv) return TileKind::empty;
  const Eigen::Index dmin = j0 - (i1 - 1 + m.offset), dmax = (jv - 1) - (i0 + m.offset);
  if (m.causal && dmin > 0) return TileKind::empty;
  if (m.windowed && (dmax < -m.left || dmin > m.right)) return TileKind::empty;
  const Eigen::Index dmax_all = (j1 - 1) - (i0 + m.offset);
  bool full = jv == j1 && (!m.causal || dmax_all <= 0) &&
              (!m.windowed || (dmin >= -m.left && dmax_all <= m.right));
  if (m.keep) {
    const auto blk = m.keep->block(i0, j0, i1 - i0, j1 - j0);
    if (!full) {
      bool any = false;
      for (Eigen::Index i = i0; i < i1 && !any; ++i)
        for (Eigen::Index j = j0; j < j1 && !any; ++j) any = m(i, j);
      return any ? TileKind::partial : TileKind::empty;
    }
    if (!blk.any()) return TileKind::empty;
    full = blk.all();
  }
  return full ? TileKind::full : TileKind::partial;
}

/// Keys [lo, hi) that the band part of the mask (key padding, causal, window) leaves
/// visible to query row i; lo == hi when none. Both ends are non-decreasing in i.
inline std::pair<Eigen::Index, Eigen::Index> band_range(const MaskFn& m, Eigen::Index i) {
  Eigen::Index lo = 0, hi = m.key_length;
  const Eigen::Index c = i + m.offset;  // the diagonal key of row i
  if (m.causal) hi = std::min(hi, c + 1);
  if (m.windowed) {
    lo = std::max(lo, c - m.left);
    hi = std::min(hi, c + m.right + 1);
  }
  lo = std::min(lo, m.key_length);
  return {lo, std::max(lo, hi)};
}

/// The range of band_range(i) clipped to the key block [j0, j0 + bk), in block coordinates.
inline std::pair<Eigen::Index, Eigen::Index> block_range(const MaskFn& m, Eigen::Index i,
                                                         Eigen::Index j0, Eigen::Index bk) {
  const auto [lo, hi] = band_range(m, i);
  const Eigen::Index a = std::clamp<Eigen::Index>(lo - j0, 0, bk),
                     b = std::clamp<Eigen::Index>(hi - j0, 0, bk);
  return {a, std::max(a, b)};
}

/// The element-wise pipeline for one attention call, resolved once.
template <class T>
struct TileMods {
  using Ref = Eigen::Ref<Mat<T>>;
  MaskFn mask;
  T scale = 1, inv_tau = 1, tau = 1;
  const BiasSpec<T>* bias = nullptr;
  bool softcap = false, positional = false;  // positional: ALiBi, relative or dense
  bool dense = false;                        // a dense bias may hold -inf
  T cap = 1, alibi = 0;
  Eigen::Index R = 0;

  TileMods(const MaskFn& m, double scale_, double temperature, const BiasSpec<T>& b)
      : mask(m), scale(T(scale_)), inv_tau(T(1.0 / temperature)), tau(T(temperature)), bias(&b) {
    softcap = b.softcap.has_value();
    if (softcap) cap = T(*b.softcap);
    if (b.alibi_slope) alibi = T(*b.alibi_slope);
    R = b.relative.size() / 2;
    positional = b.alibi_slope.has_value() || b.relative.size() || b.dense.size();
    dense = b.dense.size() > 0;
  }

  /// Logits are raw * scale / tau: the kernels may fold the factor into Q.
  bool plain() const { return !softcap && !positional; }
  /// Keys inside a row's band range can still be hidden (keep mask) or -inf (dense bias).
  bool general() const { return mask.keep != nullptr || dense; }

  /// In place: raw scores S (bq, bk) with top-left entry (i0, j0) -> logits, before masking.
  void logits(Ref S, Eigen::Index i0, Eigen::Index j0) const {
    if (plain()) {
      S *= scale * inv_tau;
      return;
    }
    S *= scale;
    if (softcap) S = cap * (S.array() / cap).tanh().matrix();
    if (positional) {
      const auto& b = *bias;
      for (Eigen::Index r = 0; r < S.rows(); ++r)
        for (Eigen::Index c = 0; c < S.cols(); ++c) {
          const Eigen::Index i = i0 + r, j = j0 + c;
          T& x = S(r, c);
          if (b.alibi_slope) x -= alibi * T(std::abs(j - (i + mask.offset)));
          if (b.relative.size()) x += b.relative(qkscope::detail::relative_index(i, j, R));
          if (b.dense.size()) x += b.dense(i, j);
        }
    }
    S *= inv_tau;
  }

  /// Sets keep-masked entries of row r (columns [lo, hi) of the block) to -inf.
  void apply_keep(Ref S, Eigen::Index r, Eigen::Index i, Eigen::Index j0, Eigen::Index lo,
                  Eigen::Index hi) const {
    if (!mask.keep) return;
    const T ninf = -std::numeric_limits<T>::infinity();
    for (Eigen::Index c = lo; c < hi; ++c)
      if (!(*mask.keep)(i, j0 + c)) S(r, c) = ninf;
  }

  /// From dX = dL/dx (0 where masked) to dL/draw in place; S is the raw-score tile.
  /// Accumulates bias gradients when asked (drel: 2R+1, ddense: (L_q, L_k)).
  void backward(Ref dX, const Eigen::Ref<const Mat<T>>& S, Eigen::Index i0, Eigen::Index j0,
                T* drel, Mat<T>* ddense) const {
    dX *= inv_tau;  // now dL/dz
    const auto& b = *bias;
    if (ddense && b.dense.size()) ddense->block(i0, j0, dX.rows(), dX.cols()) = dX;
    if (drel && b.relative.size())
      for (Eigen::Index r = 0; r < dX.rows(); ++r)
        for (Eigen::Index c = 0; c < dX.cols(); ++c)
          drel[qkscope::detail::relative_index(i0 + r, j0 + c, R)] += dX(r, c);
    if (softcap) {
      const auto t = (scale * S.array() / cap).tanh();
      dX = (dX.array() * (T(1) - t.square())).matrix();
    }
    dX *= scale;
  }
};

/// exp(x - m) on a row segment with exp(-inf) = 0 exactly. Eigen 3.4's vectorised pexp
/// clamps its argument at about -88.4 and returns ~3e-39 for -inf, so in general tiles
/// (keep mask, dense bias) the -inf entries are zeroed afterwards from a copy.
template <class Seg, class T>
void exp_shifted(Seg&& x, T m, bool may_have_ninf, Vec<T>& tmp) {
  if (!may_have_ninf) {
    x = (x.array() - m).exp().matrix();
    return;
  }
  const Eigen::Index n = x.size();
  tmp = x.transpose();
  x = (x.array() - m).exp().matrix();
  const T ninf = -std::numeric_limits<T>::infinity();
  for (Eigen::Index c = 0; c < n; ++c) x(c) = tmp(c) == ninf ? T(0) : x(c);
}

}  // namespace qkscope::tiled::detail
