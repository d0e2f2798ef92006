// qkscope/cpu/tile_ops.hpp — the pipeline's per-element functors (pipeline/: mask, score
// modifiers, block classification) applied to the Eigen tiles of the CPU kernels, plus the
// row ranges the kernels use to touch only visible keys.
//   x_ij = mask_ij ? mods(raw_ij) : -inf      (pipeline::ScoreMods::logit, pipeline::Mask)
// Masking is done by ranges, not by writing -inf: the band part of every mask (key
// padding, causal, sliding window) gives each query row one exact visible key range
// [lo, hi) (pipeline::Mask::keys_for), and the kernels run max / exp / sum on that range
// only. Only an explicit keep mask or a dense bias (which may hold -inf) can hide keys
// inside it ("general" tiles). Without modifiers the logits are one vectorised multiply.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "qkscope/attention.hpp"
#include "qkscope/cpu/wasm_exp.hpp"

namespace qkscope::cpu::detail {

/// The range of the band keys of query row i clipped to the key block [j0, j0 + bk), in
/// block coordinates; lo == hi when none.
inline std::pair<Eigen::Index, Eigen::Index> block_range(const pipeline::Mask& m, Eigen::Index i,
                                                         Eigen::Index j0, Eigen::Index bk) {
  const pipeline::Range r = m.keys_for(int(i), int(i) + 1);
  const Eigen::Index a = std::clamp<Eigen::Index>(r.begin - j0, 0, bk),
                     b = std::clamp<Eigen::Index>(r.end - j0, 0, bk);
  return {a, std::max(a, b)};
}

/// Exact kind of the tile [i0, i1) x [j0, j1) (keep mask scanned when there is one).
inline pipeline::BlockKind classify_tile(const pipeline::Mask& m, Eigen::Index i0, Eigen::Index i1,
                                         Eigen::Index j0, Eigen::Index j1) {
  return m.classify_exact(int(i0), int(i1), int(j0), int(j1));
}

/// The element-wise pipeline of one attention call, resolved once, on Eigen tiles.
template <class T>
struct TileOps {
  using Ref = Eigen::Ref<Mat<T>>;
  pipeline::Mask mask;
  pipeline::ScoreMods<T> mods;
  T tau = 1;

  TileOps(const pipeline::Mask& m, double scale, double temperature, const BiasSpec<T>& b)
      : mask(m), mods(score_mods(b, scale, temperature, m.offset)), tau(T(temperature)) {}

  /// Logits are raw * scale / tau (logits()); the tiled kernels work on z = x tau (z()).
  bool plain() const { return mods.plain(); }
  /// Keys inside a row's band range can still be hidden (keep mask) or -inf (dense bias).
  bool general() const { return mask.keep != nullptr || mods.dense != nullptr; }

  /// 1 / tau in T: the kernels work on z = x tau and divide (z - max) by tau in exp_shifted.
  T inv_tau() const { return mods.inv_tau; }
  /// Factor of the plain path from raw scores to z (the kernels may fold it into Q).
  T z_factor() const { return mods.scale; }
  /// In place: raw scores S (bq, bk) with top-left entry (i0, j0) -> z = x tau, before masking.
  void z(Ref S, Eigen::Index i0, Eigen::Index j0) const {
    if (plain()) {
      if (mods.scale != T(1)) S *= mods.scale;
      return;
    }
    for (Eigen::Index r = 0; r < S.rows(); ++r)
      for (Eigen::Index c = 0; c < S.cols(); ++c) S(r, c) = mods.z(S(r, c), int(i0 + r), int(j0 + c));
  }

  /// In place: raw scores S (bq, bk) with top-left entry (i0, j0) -> logits, before masking.
  void logits(Ref S, Eigen::Index i0, Eigen::Index j0) const {
    if (plain()) {
      S *= mods.scale_tau;
      return;
    }
    for (Eigen::Index r = 0; r < S.rows(); ++r)
      for (Eigen::Index c = 0; c < S.cols(); ++c) S(r, c) = mods.logit(S(r, c), int(i0 + r), int(j0 + c));
  }

  /// Sets masked entries of row r (columns [lo, hi) of the block, inside the band) to -inf.
  void apply_keep(Ref S, Eigen::Index r, Eigen::Index i, Eigen::Index j0, Eigen::Index lo,
                  Eigen::Index hi) const {
    if (!mask.keep) return;
    const T ninf = -std::numeric_limits<T>::infinity();
    for (Eigen::Index c = lo; c < hi; ++c)
      if (!mask(int(i), int(j0 + c))) S(r, c) = ninf;
  }

  /// From dX = dL/dx (0 where masked) to dL/draw in place; S is the raw-score tile.
  /// Writes the dense bias's gradient when asked (ddense: (L_q, L_k)). The tables' gradients
  /// are gathered by the caller, compensated (flash_backward.hpp's finish_tile).
  void backward(Ref dX, const Eigen::Ref<const Mat<T>>& S, Eigen::Index i0, Eigen::Index j0, Mat<T>* ddense) const {
    if (plain()) {  // grad_raw without modifiers, vectorised: (dx / tau) * scale
      dX *= mods.inv_tau;
      dX *= mods.scale;
      return;
    }
    for (Eigen::Index r = 0; r < dX.rows(); ++r)
      for (Eigen::Index c = 0; c < dX.cols(); ++c) {
        const int i = int(i0 + r), j = int(j0 + c);
        const T dz = mods.grad_z(dX(r, c));
        if (ddense && mods.dense) (*ddense)(i, j) = dz;
        dX(r, c) = mods.grad_raw_from_z(dz, S(r, c));
      }
  }
};

/// exp(x - m) on a row segment with exp(-inf) = 0 exactly. Eigen 3.4's vectorised pexp
/// clamps its argument at about -88.4 and returns ~3e-39 for -inf.
/// Below log(min normal) + 1 it returns the same ~3e-39 for every finite argument too (so a
/// key 200 below the row maximum kept a weight of 3e-39, times a large value): those
/// entries, rare, are recomputed with std::exp (0 for -inf, denormal or 0 below), as the
/// core computes them. With wasm SIMD, float rows use exp_array (wasm_exp.hpp): Eigen's
/// emulated-SSE pexp cost as much as a tile's two GEMMs there.
/// With inv_tau: exp((z - m) / tau) for z = x tau (the difference first, as the core).
template <class Seg, class T>
void exp_shifted(Seg&& x, T m, bool /*may_have_ninf*/, Vec<T>& tmp, T inv_tau = T(1)) {
  const Eigen::Index n = x.size();
  if (inv_tau == T(1)) tmp = (x.array() - m).matrix().transpose();
  else tmp = ((x.array() - m) * inv_tau).matrix().transpose();
#if defined(__wasm_simd128__)
  if constexpr (std::is_same_v<T, float>) {
    if (x.innerStride() == 1) {  // wasm_exp.hpp: already std::exp below its range
      exp_array(tmp.data(), x.data(), std::size_t(n));
      return;
    }
  }
#endif
  x = tmp.array().exp().matrix().transpose();
  const T low = T(std::log(double(std::numeric_limits<T>::min())) + 1.0);
  for (Eigen::Index c = 0; c < n; ++c)
    if (!(tmp(c) >= low)) x(c) = std::exp(tmp(c));
}

/// exp((z - c) / tau) for the backward's recomputed P (flash_backward.hpp), as accurate as
/// exp itself for any exponent e. Rounding e to T moves P by up to about 1.5 eps |e|
/// relative (z - c, 1 / tau and their product each round): 1.4e-6 for a key 22 below the
/// row's logsumexp, and where a gradient's larger terms cancel (tied keys, a value of 0 on
/// the top key) those small P are all of it (fuzzer findings: dQ and dL/dtau 1.4e-6 off, the
/// rule's floor 1e-6). For float, e is formed in double (z - c exact, one rounding by tau)
/// and split e = hi + lo with hi in float: P = exp(hi) (1 + lo), lo <= ulp(hi) / 2.
/// c is in double: lse tau can pass T's range (tau = 8e37, lse 4.4: float c = inf and every
/// P was 0; reviewer finding).
template <class Seg, class T>
void exp_shifted_split(Seg&& x, double c, T tau, Vec<T>& tmp, Vec<T>& lo) {
  eigen_assert(x.innerStride() == 1);
  if constexpr (!std::is_same_v<T, float>) {
    exp_shifted(x, T(c), true, tmp, T(1) / tau);
  } else {
    const Eigen::Index n = x.size();
    const double cd = c, inv_tau = 1.0 / double(tau);
    lo.resize(n);
    // Plain loops over contiguous floats, without branches, so that the compiler vectorises
    // the conversions (a row segment of a row-major tile is contiguous). For z = -inf,
    // lo = -inf - -inf = NaN, and the select below keeps P = 0 there.
    float* xp = &x.coeffRef(0);
    float* lp = lo.data();
    for (Eigen::Index k = 0; k < n; ++k) {
      const double e = (double(xp[k]) - cd) * inv_tau;
      const float hi = float(e);
      xp[k] = hi;
      lp[k] = float(e - double(hi));
    }
    exp_shifted(x, T(0), true, tmp);
    for (Eigen::Index k = 0; k < n; ++k) xp[k] = xp[k] > 0.0f ? xp[k] + xp[k] * lp[k] : xp[k];
  }
}

/// A recomputed weight P (exp_shifted_split, times the row's inverse sum inv_sum) in double: P
/// itself, or where P is below T's smallest normal number (3.7e-44 keeps only a few bits, 1.7 %
/// off), exp((z - shift) / tau) inv_sum again in double from the same z and shift = lse tau.
/// Beside dP - D of 1e38 such a P is a whole gradient (fuzzer findings: dL/dtau, dQ).
template <class T>
double exact_weight(T p, T z, double shift, double tau, double inv_sum) {
  return p >= std::numeric_limits<T>::min() || !(p > T(0)) ? double(p)
                                                            : std::exp((double(z) - shift) / tau) * inv_sum;
}

/// max of a non-empty row segment (wasm SIMD: max_array; Eigen's emulated pmax is slower).
template <class Seg>
auto segment_max(const Seg& x) {
  using T = std::decay_t<decltype(x.coeff(0))>;
#if defined(__wasm_simd128__)
  if constexpr (std::is_same_v<T, float>)
    if (x.innerStride() == 1) return max_array(x.data(), std::size_t(x.size()));
#endif
  return T(x.maxCoeff());
}

/// exp_shifted, then the segment's sum; with wasm SIMD one fused pass (exp_shift_sum).
template <class Seg, class T>
T exp_shifted_sum(Seg&& x, T m, bool may_have_ninf, Vec<T>& tmp, T inv_tau = T(1)) {
#if defined(__wasm_simd128__)
  if constexpr (std::is_same_v<T, float>)
    if (x.innerStride() == 1) return exp_shift_sum(x.data(), std::size_t(x.size()), m, inv_tau);
#endif
  exp_shifted(x, m, may_have_ninf, tmp, inv_tau);
  return T(x.sum());
}

}  // namespace qkscope::cpu::detail
