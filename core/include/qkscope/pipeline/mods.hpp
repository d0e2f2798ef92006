// qkscope/pipeline/mods.hpp — the element-wise part of the pipeline for one score, as a POD
// functor: the one implementation of the score modifiers that the core's all-intermediates
// path (attention.hpp), the CPU tiled kernels (cpu/) and the CUDA kernels (native/cuda/)
// all call. For an allowed pair (i, j):
//   s_ij = scale * raw_ij
//   s_ij = c tanh(s_ij / c)             softcap      (Gemma 2 Team 2024, §2; Grok-1)
//   s_ij = s_ij - m |j - (i + o)|       ALiBi        (Press, Smith & Lewis 2022, §3)
//   s_ij = s_ij + r[clip(j - (i + o), -R, R) + R]   relative (Shaw et al. 2018; unbucketed table)
//   s_ij = s_ij + t[bucket(j - (i + o))]  T5          (Raffel et al. 2020, §2.1; bias/t5_buckets.hpp)
//   z_ij = s_ij + B_ij                  dense bias   (may hold -inf = masked)
//   x_ij = z_ij / tau                   the logit the softmax sees
// o is the mask's diagonal offset (0 top-left, L_k - L_q bottom-right), so ALiBi penalises
// distance, and the relative and T5 tables read positions, from the same diagonal the causal
// mask and the window use. The backward is
// dL/draw = dL/dx / tau * (softcap ? 1 - tanh^2(scale raw / c) : 1) * scale.
// Without softcap or positional terms x = (scale / tau) raw in one multiply.
#pragma once

#include "qkscope/bias/t5_buckets.hpp"
#include "qkscope/pipeline/mask.hpp"
#include "qkscope/pipeline/softmax.hpp"

namespace qkscope::pipeline {

template <class T>
struct ScoreMods {
  T scale = 1, inv_tau = 1;
  T scale_tau = 1;                 // scale * inv_tau (the plain path)
  bool softcap = false;
  T cap = 1;
  bool alibi = false;
  T slope = 0;                     // ALiBi slope of this head
  int offset = 0;                  // the mask's diagonal offset (ALiBi, relative and T5 positions)
  const T* relative = nullptr;     // 2R+1 entries, or nullptr
  int R = 0;
  const T* t5 = nullptr;           // T5 table, buckets.num_buckets entries, or nullptr
  T5Buckets buckets{};
  const T* dense = nullptr;        // (L_q, L_k) row-major with leading dimension ld, or nullptr
  offset_t ld = 0;

  /// No modifier: x = scale_tau * raw.
  QKSCOPE_HOST_DEVICE bool plain() const { return !softcap && !alibi && !relative && !t5 && !dense; }

  /// The same modifiers with another ALiBi slope (per-head slopes).
  QKSCOPE_HOST_DEVICE ScoreMods with_slope(T m) const {
    ScoreMods r = *this;
    r.alibi = true;
    r.slope = m;
    return r;
  }

  /// Entry of the relative-position table that pair (i, j) reads: clip(j - (i + o), -R, R) + R.
  QKSCOPE_HOST_DEVICE int relative_index(int i, int j) const { return iclamp(j - (i + offset), -R, R) + R; }
  /// Entry of the T5 table that pair (i, j) reads: bucket(j - (i + o)).
  QKSCOPE_HOST_DEVICE int t5_index(int i, int j) const { return buckets.bucket(j - (i + offset)); }

  /// The softcap c tanh(s / c) in U (T, or double where a kernel forms logit differences in
  /// double: cpu/temperature_grad.hpp). Where |s / c| < 2^-12 in float (2^-27 in double),
  /// c tanh(s / c) = s (1 - (s/c)^2 / 3 + ...) rounds to s: s itself, because s / c can be
  /// subnormal there and keep only ~20 bits (a cap of 3.4e38 over s ~ 0.3 put 1e-6 of rounding
  /// in every logit, which tau = 1e-4 made an output 0.45 % off in the tiled path: fuzzer,
  /// nineteenth session). The test reads s and the cap only, so it stays off the tanh's path
  /// (NOTES.md).
  template <class U>
  QKSCOPE_HOST_DEVICE static U softcapped(U s, U c) {
    constexpr U linear = sizeof(U) == 4 ? U(2.44140625e-4) : U(7.450580596923828e-9);
    if ((s < U(0) ? -s : s) < c * linear) return s;
    return c * tanh_(s / c);
  }
  QKSCOPE_HOST_DEVICE T capped(T s) const { return softcapped(s, cap); }

  /// s_ij: scale, softcap, ALiBi, relative and T5 positions, before the dense bias.
  QKSCOPE_HOST_DEVICE T modified(T raw, int i, int j) const {
    T s = scale * raw;
    if (softcap) s = capped(s);
    if (alibi) s -= slope * T(iabs(j - (i + offset)));
    if (relative) s += relative[relative_index(i, j)];
    if (t5) s += t5[t5_index(i, j)];
    return s;
  }
  /// z_ij from s_ij: adds the dense bias when there is one.
  QKSCOPE_HOST_DEVICE T add_dense(T s, int i, int j) const {
    return dense ? s + dense[offset_t(i) * ld + j] : s;
  }

  /// z_ij = x_ij * tau of an allowed pair (no mask test): the kernels that subtract the
  /// row maximum before dividing by tau, as the core does, work on z.
  QKSCOPE_HOST_DEVICE T z(T raw, int i, int j) const {
    if (plain()) return scale * raw;
    return add_dense(modified(raw, i, j), i, j);
  }

  /// Logit x_ij of an allowed pair (no mask test).
  QKSCOPE_HOST_DEVICE T logit(T raw, int i, int j) const {
    if (plain()) return scale_tau * raw;
    return add_dense(modified(raw, i, j), i, j) * inv_tau;
  }

  /// dL/dz from dL/dx (also the gradient of the relative and T5 table entries and of B_ij).
  QKSCOPE_HOST_DEVICE T grad_z(T dx) const { return dx * inv_tau; }
  /// dL/draw from dL/dz: through the softcap and the scale.
  /// In U: T, or double where dL/dz itself may not fit T (attention.hpp after a rescale).
  template <class U>
  QKSCOPE_HOST_DEVICE U grad_raw_from_z(U dz, U raw) const {
    if (softcap) dz *= softcap_slope(raw);
    return dz * U(scale);
  }
  /// d softcap(s) / ds = 1 - tanh^2(scale raw / c), evaluated in U: T here, double where
  /// the tiled backward sums a row's dL/draw in double (cpu/flash_backward.hpp).
  template <class U>
  QKSCOPE_HOST_DEVICE U softcap_slope(U raw) const {
    const U t = tanh_(U(scale) * raw / U(cap));
    return U(1) - t * t;
  }
  /// dL/draw from dL/dx (0 stays exactly 0, whatever raw holds).
  QKSCOPE_HOST_DEVICE T grad_raw(T dx, T raw) const {
    if (dx == T(0)) return T(0);
    return grad_raw_from_z(grad_z(dx), raw);
  }
};

/// Mask and modifiers together: z = x tau of entry (i, j) of a block of kind `kind` (the
/// logit before the division by tau, which the online softmax applies after subtracting the
/// row maximum: softmax.hpp), -inf where masked or outside (L_q, L_k) (block padding). Full
/// blocks skip the test.
template <class T>
struct Logits {
  Mask mask;
  ScoreMods<T> mods;

  QKSCOPE_HOST_DEVICE T operator()(T raw, int i, int j, BlockKind kind) const {
    if (kind != BlockKind::full && !(i < mask.L_q && j < mask.L_k && mask(i, j))) return neg_inf<T>();
    return mods.z(raw, i, j);
  }
  /// The backward's P of value z from its row's shift (shift_of): e^{z / tau - lse}. The
  /// product z / tau rounds as the forward's m / tau did, so a row's largest key gets exactly
  /// the exponent its lse was formed from (a one-key row has P = 1 exactly); a shift in z,
  /// lse tau, rounded twice (P = 1.0000075 at tau = 1e-3, 0.995 at 1e-4) and could overflow
  /// (tau = 8e37: lse tau = inf, every P 0) (reviewer findings).
  QKSCOPE_HOST_DEVICE T weight(T z, T shift) const { return exp_(z * mods.inv_tau - shift); }
  /// The shift of a saved logsumexp (recompute_shift: +inf for a fully masked row).
  QKSCOPE_HOST_DEVICE T shift_of(T lse) const { return recompute_shift(lse); }
};

}  // namespace qkscope::pipeline
