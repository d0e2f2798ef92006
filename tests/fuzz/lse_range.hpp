// tests/fuzz/lse_range.hpp — the fuzz harness's reference logsumexp where it lies past float's
// range (docs/RELIABILITY.md, "The bar"): used by fuzz_attention.cpp, tested by
// tests/core/faults/test_fuzz_bar_lse_range.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/types.hpp"

namespace qkfuzz {

/// The reference logsumexp as float can hold it, for `fast` to be compared with. An entry past
/// float's range (m / tau = 1e40) is +-inf in float on every path, by IEEE rounding: from
/// FLT_MAX + ulp / 2 = 0x1.ffffffp+127 on (just below, FLT_MAX); so it is wherever every run on
/// moved inputs lies past the range on the same side. Where one does not, the logit is
/// ill-conditioned past float's range, and the entry is held to the bar's own rule instead:
/// fast within the farthest moved run's distance from ref, or +-inf where a moved run lies past
/// the range on that side; such an entry is then given fast's value (it matches). The case:
/// terms of 1.06e35 cancelling to -1.9e23 in q.k at scale -1 and tau 1e-40: the double core's
/// logsumexp 1.9e63, float's sum of the terms 0, so float's logsumexp 0 on every path, and the
/// runs on inputs moved by one rounding reach 1.3e68 above and -inf below
/// (`dot-logsumexp-tau1e-40-twentythird-2026-12-07-w6`, twenty-fifth session).
inline qkscope::VectorD lse_in_float(const qkscope::VectorD& ref, const qkscope::Vector& fast,
                                    const std::vector<const qkscope::VectorD*>& moved) {
  const double top = std::numeric_limits<float>::max(), inf = std::numeric_limits<double>::infinity();
  qkscope::VectorD out = ref;
  for (Eigen::Index i = 0; i < ref.size(); ++i) {
    const double x = ref(i);
    if (!(std::abs(x) > top)) continue;
    const double clamped = std::copysign(std::abs(x) >= 0x1.ffffffp+127 ? inf : top, x);
    out(i) = clamped;
    bool robust = true, up = false, down = false;
    double reach = 0;
    for (const qkscope::VectorD* m : moved) {
      if (m->size() != ref.size()) continue;
      const double v = (*m)(i);
      if (!(std::abs(v) > top && (v > 0) == (x > 0))) robust = false;
      if (std::abs(v) > top) (v > 0 ? up : down) = true;
      if (std::isfinite(v)) reach = std::max(reach, std::abs(v - x));
    }
    if (robust || i >= fast.size()) continue;
    const double y = fast(i);
    if (std::isfinite(y) ? std::abs(y - x) <= reach : std::isinf(y) && (y > 0 ? up : down)) out(i) = y;
  }
  return out;
}

}  // namespace qkfuzz
