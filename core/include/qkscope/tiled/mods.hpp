// qkscope/tiled/mods.hpp — the element-wise part of the pipeline on one (query tile,
// key tile) block: raw -> scale -> softcap -> ALiBi -> relative -> dense -> mask -> / tau,
// exactly the order of attention.hpp, plus its backward, and the tile mask classifier.
//   x_ij = mask_ij ? bias(scale * raw_ij) / tau : -inf
#pragma once

#include <cmath>
#include <limits>

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

/// P = exp(X) in place with exp(-inf) = 0 exactly: Eigen's vectorised pexp clamps its
/// argument at about -88.4 and returns ~3e-39 for -inf, which would give masked keys
/// weight and fully masked rows a finite logsumexp. `may_have_ninf` false skips the select.
template <class T>
void exp_masked(Mat<T>& X, bool may_have_ninf) {
  if (may_have_ninf)
    X = (X.array() == -std::numeric_limits<T>::infinity()).select(T(0), X.array().exp());
  else
    X = X.array().exp();
}

/// The element-wise pipeline for one attention call, resolved once.
template <class T>
struct TileMods {
  using MatT = Mat<T>;
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

  /// X = logits of the raw scores S (bq, bk) whose top-left entry is (i0, j0).
  void logits(const MatT& S, Eigen::Index i0, Eigen::Index j0, TileKind kind, MatT& X) const {
    if (!softcap && !positional) {
      X.noalias() = (scale * inv_tau) * S;
    } else {
      X.noalias() = scale * S;
      if (softcap) X = cap * (X.array() / cap).tanh().matrix();
      if (positional) {
        const auto& b = *bias;
        for (Eigen::Index r = 0; r < X.rows(); ++r)
          for (Eigen::Index c = 0; c < X.cols(); ++c) {
            const Eigen::Index i = i0 + r, j = j0 + c;
            T& x = X(r, c);
            if (b.alibi_slope) x -= alibi * T(std::abs(j - (i + mask.offset)));
            if (b.relative.size()) x += b.relative(qkscope::detail::relative_index(i, j, R));
            if (b.dense.size()) x += b.dense(i, j);
          }
      }
      X *= inv_tau;
    }
    if (kind == TileKind::partial) {
      const T ninf = -std::numeric_limits<T>::infinity();
      for (Eigen::Index r = 0; r < X.rows(); ++r)
        for (Eigen::Index c = 0; c < X.cols(); ++c)
          if (!mask(i0 + r, j0 + c)) X(r, c) = ninf;
    }
  }

  /// From dX = dL/dx (0 where masked) to dL/draw in place; S is the raw-score tile.
  /// Accumulates bias gradients when asked (drel: 2R+1, ddense: (L_q, L_k)).
  void backward(MatT& dX, const MatT& S, Eigen::Index i0, Eigen::Index j0, T* drel,
                Mat<T>* ddense) const {
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

}  // namespace qkscope::tiled::detail
