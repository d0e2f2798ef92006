// qkscope/norm/sparsemax.hpp — sparsemax p = argmin_{p in simplex} |p - z/tau|^2
// (Martins & Astudillo 2016, eq. 2; closed form by sorting, Algorithm 1 / Prop. 1).
// Exact zeros outside the support S; differentiable almost everywhere with
// Jacobian diag(s) - s s^T / |S| (eq. 13), s the support indicator.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "qkscope/norm/row.hpp"

namespace qkscope::norm {

struct Sparsemax {
  static constexpr const char* name = "sparsemax";
  static constexpr const char* label = "Sparsemax";
  static constexpr const char* tex = R"(p=\arg\min_{p\in\Delta}\lVert p-\mathbf z/\tau\rVert^2)";
  static constexpr bool soft = true;
  static constexpr bool shift_invariant = true;  // same weights for z + c: sum_j dL/dz_j = 0
  using Options = NoOptions;

  /// Shift-invariance lets us use y = (z - max) / tau, finite for any tau > 0.
  /// Float rows form y, the sums and the threshold in double: in float the threshold's
  /// absolute error, O(|S| eps max|y|), was the whole of a weight near the support's edge (one
  /// weight 16 % off at L_k = 300, the rows summing to 1.00129: review, eighteenth session).
  template <class T>
  static void forward(const Row<T>& r, T* p) {
    using Acc = std::conditional_t<(sizeof(T) < sizeof(double)), double, T>;
    const Eigen::Index best = argmax_lowest(r.z, r.n);
    for (Eigen::Index j = 0; j < r.n; ++j) p[j] = T(0);
    if (best < 0) return;
    const Acc m = r.z[best], tau = r.tau;
    std::vector<Acc> y;
    for (Eigen::Index j = 0; j < r.n; ++j)
      if (is_valid(r.z[j])) y.push_back(scaled_gap(Acc(r.z[j]), m, tau));
    std::sort(y.begin(), y.end(), [](Acc a, Acc b) { return a > b; });
    Acc cumsum = 0, threshold = 0;
    for (std::size_t k = 0; k < y.size(); ++k) {
      cumsum += y[k];
      if (Acc(1) + Acc(k + 1) * y[k] > cumsum) threshold = (cumsum - Acc(1)) / Acc(k + 1);
      else break;  // the support condition fails for every later k too (y sorted)
    }
    for (Eigen::Index j = 0; j < r.n; ++j)
      if (is_valid(r.z[j])) p[j] = T(std::max(Acc(0), scaled_gap(Acc(r.z[j]), m, tau) - threshold));
  }
  /// dy = s * (dp - mean_S dp); dz = dy / tau; dtau = -sum_j dz_j (z_j - m) / tau.
  template <class T>
  static double backward(const Row<T>& r, const T* p, const T* dp, T* dz) {
    // dp shifted by its first supported entry (the result does not depend on the shift):
    // equal dp on the support give dz = 0 exactly.
    T sum = 0, m = -std::numeric_limits<T>::infinity(), base = 0;
    Eigen::Index support = 0;
    for (Eigen::Index j = 0; j < r.n; ++j)
      if (p[j] > 0) {
        if (!support) base = dp[j];
        sum += dp[j] - base;
        ++support;
        m = std::max(m, r.z[j]);
      }
    const T mean = support ? sum / T(support) : T(0);
    // dtau = -(1/tau) sum_j g_j (z_j - m) / tau, g_j = tau dz_j, summed before the last
    // division (|z_j - m| / tau < 1 on the support): a tiny tau overflows once, to +-inf,
    // instead of adding +inf and -inf terms (NaN; fuzzer finding at tau = 1e-40). Float rows
    // sum in double.
    using Acc = std::conditional_t<(sizeof(T) < sizeof(double)), double, T>;
    Acc acc = 0;
    for (Eigen::Index j = 0; j < r.n; ++j) {
      const T g = p[j] > 0 ? (dp[j] - base) - mean : T(0);
      dz[j] = g / r.tau;
      if (p[j] > 0 && r.z[j] != m) acc += Acc(g) * Acc(scaled_gap(r.z[j], m, r.tau));  // no inf * 0
    }
    return double(-acc / Acc(r.tau));
  }
};

}  // namespace qkscope::norm
