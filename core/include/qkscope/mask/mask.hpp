// qkscope/mask/mask.hpp — which (query i, key j) pairs may attend. One polarity
// everywhere: true = may attend (PyTorch SDPA attn_mask, FlexAttention mask_mod).
// Parts combine by AND. resolve_mask turns a MaskSpec into the pipeline's POD predicate
// (pipeline/mask.hpp), which every path calls.
//
// Causal alignment for L_q != L_k (cuDNN's diagonal-band model):
//   top_left:     key j visible from query i when j <= i
//   bottom_right: key j visible from query i when j <= i + (L_k - L_q)
//                 (the last query sees every key: KV-cache decoding; FlashAttention >= 2.1)
// Sliding window (Longformer, Beltagy et al. 2020; Mistral): with the same diagonal
// offset o, key j is visible when -left <= j - (i + o) <= right.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "qkscope/detail/check.hpp"
#include "qkscope/pipeline/mask.hpp"
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

/// A MaskSpec resolved for concrete (L_q, L_k): the pipeline's mask predicate
/// allowed(i, j) (pipeline/mask.hpp), the one the core and every kernel call.
using MaskFn = pipeline::Mask;

/// Validates `spec` against (L_q, L_k) and resolves it. Throws std::invalid_argument
/// for a negative or too large key_length, negative window widths, a keep mask of the
/// wrong shape, or L_q or L_k above 2^29. The returned MaskFn points into spec.keep: keep
/// spec alive. Window widths are clamped to L_q + L_k (wider windows see the same keys).
inline MaskFn resolve_mask(const MaskSpec& spec, Eigen::Index L_q, Eigen::Index L_k) {
  static_assert(sizeof(bool) == 1, "keep masks are read as bytes");
  detail::require(L_q <= pipeline::kMaxLength && L_k <= pipeline::kMaxLength,
                  [&] { return "mask: L_q and L_k must be <= 2^29, got " + detail::shape_str(L_q, L_k); });
  MaskFn m;
  m.L_q = int(L_q);
  m.L_k = int(L_k);
  m.key_length = int(L_k);
  if (spec.key_length) {
    const auto n = *spec.key_length;
    detail::require(n >= 0 && n <= L_k, "mask.key_length must be in [0, L_k = " +
                                            std::to_string(L_k) + "], got " + std::to_string(n));
    m.key_length = int(n);
  }
  m.offset = spec.alignment == CausalAlignment::bottom_right ? int(L_k - L_q) : 0;
  m.causal = spec.causal;
  if (spec.window_left || spec.window_right) {
    m.windowed = true;
    const Eigen::Index wide = L_q + L_k;
    const Eigen::Index left = spec.window_left.value_or(wide), right = spec.window_right.value_or(wide);
    detail::require(left >= 0 && right >= 0,
                    "mask.window widths must be >= 0, got left = " + std::to_string(left) +
                        ", right = " + std::to_string(right));
    m.left = int(std::min(left, wide));
    m.right = int(std::min(right, wide));
  }
  if (spec.keep.size()) {
    detail::require_shape(spec.keep, L_q, L_k, "mask.keep (L_q x L_k)");
    m.keep = reinterpret_cast<const std::uint8_t*>(spec.keep.data());
  }
  return m;
}

/// The keep mask as a dense (L_q, L_k) matrix (for display and tests).
inline KeepMask dense_mask(const MaskFn& m) {
  KeepMask out(m.L_q, m.L_k);
  for (int i = 0; i < m.L_q; ++i)
    for (int j = 0; j < m.L_k; ++j) out(i, j) = m(i, j);
  return out;
}

}  // namespace qkscope
