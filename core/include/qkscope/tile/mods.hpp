// qkscope/tile/mods.hpp — the element-wise part of the pipeline for one score, as a POD
// functor (the GPU/host twin of tiled/mods.hpp's TileMods):
//   x_ij = mask_ij ? bias(scale * raw_ij) / tau : -inf
//   bias: softcap c tanh(s / c) -> ALiBi - m |j - (i + o)| -> relative r[clip(j - i, -R, R) + R]
//         -> dense B_ij            (bias/bias.hpp, in that order; Gemma 2, Press et al. 2022,
//                                   Shaw et al. 2018)
// and its backward dL/draw = dL/dx / tau * (softcap ? 1 - tanh^2(scale raw / c) : 1) * scale.
// Without softcap or positional terms x = (scale / tau) raw in one multiply, as tiled/mods.hpp.
#pragma once

#include "qkscope/tile/mask.hpp"

namespace qkscope::tile {

template <class T>
struct ScoreMods {
  T scale = 1, inv_tau = 1;
  T scale_tau = 1;                 // scale * inv_tau (the plain path)
  bool softcap = false;
  T cap = 1;
  bool alibi = false;
  T slope = 0;                     // ALiBi slope of this head
  int offset = 0;                  // the mask's diagonal offset (ALiBi distance)
  const T* relative = nullptr;     // 2R+1 entries, or nullptr
  int R = 0;
  const T* dense = nullptr;        // (L_q, L_k) row-major with leading dimension ld, or nullptr
  offset_t ld = 0;

  QKSCOPE_HOST_DEVICE bool plain() const { return !softcap && !alibi && !relative && !dense; }

  /// The same modifiers with another ALiBi slope (per-head slopes).
  QKSCOPE_HOST_DEVICE ScoreMods with_slope(T m) const {
    ScoreMods r = *this;
    r.alibi = true;
    r.slope = m;
    return r;
  }

  /// Logit x_ij of an allowed pair (no mask test).
  QKSCOPE_HOST_DEVICE T logit(T raw, int i, int j) const {
    if (plain()) return scale_tau * raw;
    T s = scale * raw;
    if (softcap) s = cap * tanh_(s / cap);
    if (alibi) s -= slope * T(iabs(j - (i + offset)));
    if (relative) s += relative[iclamp(j - i, -R, R) + R];
    if (dense) s += dense[offset_t(i) * ld + j];
    return s * inv_tau;
  }

  /// dL/draw from dL/dx (0 stays exactly 0, whatever raw holds).
  QKSCOPE_HOST_DEVICE T grad_raw(T dx, T raw) const {
    if (dx == T(0)) return T(0);
    T g = dx * inv_tau;  // dL/dz
    if (softcap) {
      const T t = tanh_(scale * raw / cap);
      g *= T(1) - t * t;
    }
    return g * scale;
  }
};

/// Mask and modifiers together: the logit of entry (i, j) of a block of kind `kind`,
/// -inf where masked or outside (L_q, L_k) (block padding). Full blocks skip the test.
template <class T>
struct Logits {
  Mask mask;
  ScoreMods<T> mods;

  QKSCOPE_HOST_DEVICE T operator()(T raw, int i, int j, BlockKind kind) const {
    if (kind != BlockKind::full && !(i < mask.L_q && j < mask.L_k && mask(i, j))) return neg_inf<T>();
    return mods.logit(raw, i, j);
  }
};

}  // namespace qkscope::tile
