// qkscope/detail/compensated_sum.hpp — Neumaier's compensated summation (Neumaier 1974,
// "Rundungsfehleranalyse einiger Verfahren zur Summation endlicher Summen", ZAMM 54): the
// running sum s and a correction c that keeps what each addition rounded away, so that
// 1e37 + (-0.18) + (-1e37) gives -0.18 instead of 0. Used where the tiled backward gathers a
// bias table's gradient (cpu/flash_backward.hpp): one entry is read by pairs of many rows and
// key tiles, whose dL/dz of 1e37 cancel while a row's -0.18 must survive (fuzzer finding).
#pragma once

#include <cmath>

namespace qkscope::detail {

/// s + c += x. Finite inputs only (an infinite x or s leaves c NaN).
inline void compensated_add(double& s, double& c, double x) {
  const double t = s + x;
  c += std::abs(s) >= std::abs(x) ? (s - t) + x : (x - t) + s;
  s = t;
}

}  // namespace qkscope::detail
