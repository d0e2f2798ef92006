// qkscope/cpu/exact_dtau.hpp — dL/dtemperature recomputed from directly computed scores.
// The tiled backward forms dL/dtau = -(1/tau) sum_ij p^_ij (dP_ij - D_i)(x_ij - x0_i)
// (flash_backward.hpp) from the fast form's logits. A form that cancels large terms
// (neg_sq_euclidean's expanded square, cosine's float dot product of unit rows) leaves
// each logit up to r = eps * cancellation * |scale| / tau of rounding (logit_range.hpp),
// so x - x0 is off by up to 2 r and dL/dtau by up to 2 r sens / tau, with
// sens = sum_ij p^_ij |dP_ij - D_i| (FlashGrads::dtau_sensitivity). Where the logits are
// nearly equal (queries near 1e-6 at tau = 0.03: reviewer finding), that is most of the
// value. When the bound passes a tenth of the tolerance rule's floor, 1e-7 (1 + |dtau|)
// (core/reference/tolerance.hpp), dtau is recomputed here in double: z from the scoring
// function's own forward (differences, no cancellation) through the same modifiers and
// mask (TileOps), the softmax of each row from its own maximum, dP = dO V^T, and D as the
// core's softmax backward forms it (shifted by the dP of the first key with P > 0).
// O(L_q L_k (d + d_v)); the other gradients keep the tiled values.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "qkscope/cpu/tile_ops.hpp"
#include "qkscope/score/registry.hpp"

namespace qkscope::cpu::detail {

/// May the rounding r of every logit move this dL/dtau past a tenth of the rule's floor?
inline bool dtau_needs_exact(double rounding, double sensitivity, double tau, double dtau) {
  return rounding > 0 && std::isfinite(dtau) && 2 * rounding * sensitivity / tau > 1e-7 * (1 + std::abs(dtau));
}

/// dL/dtemperature of one head (Q, K, V: its inputs, dO: dL/dO), in double.
template <class T>
double exact_dtemperature(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V, const Mat<T>& dO,
                          const ScoreParams<T>& p, const std::string& score, const TileOps<T>& ops) {
  const double tau = double(ops.tau);
  const Eigen::MatrixXd Vd = V.template cast<double>();
  double acc = 0;
  visit_score(score, [&](auto f) {
    using F = decltype(f);
    std::vector<double> P(K.rows()), dP(K.rows());
    for (Eigen::Index i = 0; i < Q.rows(); ++i) {
      const Mat<T> q = Q.middleRows(i, 1);
      Mat<T> z = F::template forward<T>(q, K, p);  // (1, L_k) raw scores
      ops.z(z, i, 0);                               // z = x tau, as the kernels
      double m = -std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < z.cols(); ++j) {
        if (!ops.mask(int(i), int(j))) z(0, j) = -std::numeric_limits<T>::infinity();
        m = std::max(m, double(z(0, j)));
      }
      if (!std::isfinite(m)) continue;  // fully masked row: no gradient
      double sum = 0;
      for (Eigen::Index j = 0; j < z.cols(); ++j) sum += (P[j] = std::exp((double(z(0, j)) - m) / tau));
      const Eigen::VectorXd dOi = dO.row(i).template cast<double>().transpose();
      double b = std::numeric_limits<double>::quiet_NaN(), c = 0;
      for (Eigen::Index j = 0; j < z.cols(); ++j) {
        P[j] /= sum;
        if (!(P[j] > 0)) continue;
        dP[j] = Vd.row(j).dot(dOi);
        if (std::isnan(b)) b = dP[j];
        c += P[j] * (dP[j] - b);
      }
      double row = 0;
      for (Eigen::Index j = 0; j < z.cols(); ++j)
        if (P[j] > 0) row += P[j] * ((dP[j] - b) - c) * ((double(z(0, j)) - m) / tau);
      acc += row;
    }
  });
  return -acc / tau;
}

}  // namespace qkscope::cpu::detail
