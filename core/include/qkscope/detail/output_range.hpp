// qkscope/detail/output_range.hpp — keeps attention's output O = P V within the range of T.
// Every registered normalizer gives a convex row (weights >= 0 summing to 1, or all 0), so
// O_ic = sum_j P_ij V_jc lies within the range of the values V_jc. Rounded weights can sum to
// 1 + a few ulps, and over values near max(T) the product then rounds past it: three keys with
// V = FLT_MAX and float weights summing to 1.00000004 gave O = inf where the exact output is
// FLT_MAX (fuzzer finding). Why a clamp to +-max(T) is then right within rounding: let the
// row's rounded weights sum to 1 + delta (delta: the normalizer's own rounding, a few ulps for
// softmax and for sparsemax, whose float rows sum their support in double). In any
// summation order, a partial sum passes max(T) only if the weights on values within
// O(L_k eps + delta) of +max(T) (or of -max(T), for -inf) sum to at least 1 - O(L_k eps); the
// rest of the row weighs O(L_k eps + delta), so the exact O_ic is within O(L_k eps + delta)
// max(T) of that end, as close as the product of those weights could be. Two partial sums of
// opposite infinities (NaN) would need weights summing to ~2, so a non-finite entry is +-inf.
#pragma once

#include <algorithm>
#include <limits>

#include "qkscope/types.hpp"

namespace qkscope::detail {

/// O (L_q, d_v) = P V with P's rows convex and V finite: each +-inf entry becomes +-max(T);
/// finite entries are unchanged. O(L_q d_v).
template <class T>
void settle_overflowed_output(Mat<T>& O) {
  constexpr T top = std::numeric_limits<T>::max();
  for (T& o : O.reshaped()) o = std::min(std::max(o, -top), top);
}

}  // namespace qkscope::detail
