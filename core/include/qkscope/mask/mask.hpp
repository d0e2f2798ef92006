// qkscope/mask/mask.hpp — which (query i, key j) pairs may attend. One polarity
// everywhere: true = may attend (PyTorch SDPA attn_mask, FlexAttention mask_mod).
// Parts combine by AND; each is a plain functor usable by tiled kernels.
//
// Causal alignment for L_q != L_k (cuDNN's diagonal-band model):
//   top_left:     key j visible from query i when j <= i
//   bottom_right: key j visible from query i when j <= i + (L_k - L_q)
//                 (the last query sees every key: KV-cache decoding; FlashAttention >= 2.1)
// Sliding window (Longformer, Beltagy et al. 2020; Mistral): with the same diagonal
// offset o, key j is visible when -left <= j - (i + o) <= right.
#pragma once

#include <optional>
#include <string>

#include "qkscope/detail/check.hpp"
#include "qkscope/types.hpp"

namespace qkscope {

enum class CausalAlignment { top_left, bottom_right };

/// Declarative mask description (all parts optional; AND-combined).
struct MaskSpec {
  /// Key padding: keys j >= key_length are masked. 0 masks every key. Default: none.
  std::optional<Eigen::Index> key_length;
  /// Causal band.
  bool causal = false;
  /// Diagonal alignment used by `causal` and by `window`.
  CausalAlignment alignment = CausalAlignment::top_left;
  /// Sliding window widths (keys left of / right of the diagonal), each >= 0.
  std::optional<Eigen::Index> window_left, window_right;
  /// Explicit keep mask (L_q, L_k), true = may attend; empty = none.
  KeepMask keep;
};

/// A MaskSpec resolved for concrete (L_q, L_k): a cheap predicate allowed(i, j).
struct MaskFn {
  Eigen::Index L_q = 0, L_k = 0;
  Eigen::Index key_length = 0;   // keys >= key_length masked
  Eigen::Index offset = 0;       // diagonal: query i is aligned with key i + offset
  bool causal = false, windowed = false;
  Eigen::Index left = 0, right = 0;
  const KeepMask* keep = nullptr;

  QKSCOPE_HOST_DEVICE bool operator()(Eigen::Index i, Eigen::Index j) const {
    if (j >= key_length) return false;
    const Eigen::Index d = j - (i + offset);
    if (causal && d > 0) return false;
    if (windowed && (d < -left || d > right)) return false;
    return !keep || (*keep)(i, j);
  }
};

/// Validates `spec` against (L_q, L_k) and resolves it. Throws std::invalid_argument
/// for a negative or too large key_length, negative window widths, or a keep mask
/// of the wrong shape. The returned MaskFn refers to spec.keep: keep spec alive.
inline MaskFn resolve_mask(const MaskSpec& spec, Eigen::Index L_q, Eigen::Index L_k) {
  MaskFn m;
  m.L_q = L_q;
  m.L_k = L_k;
  m.key_length = L_k;
  if (spec.key_length) {
    const auto n = *spec.key_length;
    detail::require(n >= 0 && n <= L_k, "mask.key_length must be in [0, L_k = " +
                                            std::to_string(L_k) + "], got " + std::to_string(n));
    m.key_length = n;
  }
  m.offset = spec.alignment == CausalAlignment::bottom_right ? L_k - L_q : 0;
  m.causal = spec.causal;
  if (spec.window_left || spec.window_right) {
    m.windowed = true;
    m.left = spec.window_left.value_or(L_q + L_k);
    m.right = spec.window_right.value_or(L_q + L_k);
    detail::require(m.left >= 0 && m.right >= 0,
                    "mask.window widths must be >= 0, got left = " + std::to_string(m.left) +
                        ", right = " + std::to_string(m.right));
  }
  if (spec.keep.size()) {
    detail::require_shape(spec.keep, L_q, L_k, "mask.keep (L_q x L_k)");
    m.keep = &spec.keep;
  }
  return m;
}

/// The keep mask as a dense (L_q, L_k) matrix (for display and tests).
inline KeepMask dense_mask(const MaskFn& m) {
  KeepMask out(m.L_q, m.L_k);
  for (Eigen::Index i = 0; i < m.L_q; ++i)
    for (Eigen::Index j = 0; j < m.L_k; ++j) out(i, j) = m(i, j);
  return out;
}

}  // namespace qkscope
