// qkscope/detail/grad_guards.hpp — what keeps the core's float backward (attention.hpp) from
// overflowing in an intermediate whose gradients are representable, and from returning a
// non-finite gradient: rescaled dP (linear in it, so scaled back at the end), the exact row
// sums of dL/draw that the row-sum scorers take, and the final finiteness check.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "qkscope/detail/check.hpp"

namespace qkscope {

template <class T>
struct AttentionGrads;

namespace detail {

/// When dP = dO V^T overflowed (or came near it), recomputes it as (dO 2^-a)(V 2^-b)^T with both factors
/// near 1 and returns 2^(a+b), the factor the normalizer's gradients must be multiplied by
/// (with unscale: in double it is +inf past 2^1023, for dO or V near DBL_MAX); returns 1 (dP
/// untouched) otherwise.
template <class T>
double rescale_if_overflowed(Mat<T>& dP, const Mat<T>& dO, const Mat<T>& V) {
  // Below max / 8, dP_j - dP_k and p . dP stay finite in the normalizer backward.
  if (dP.size() == 0 || (dP.array().isFinite().all() && dP.cwiseAbs().maxCoeff() < std::numeric_limits<T>::max() / 8))
    return 1;
  const int a = std::ilogb(double(dO.cwiseAbs().maxCoeff()));
  const int b = std::ilogb(double(V.cwiseAbs().maxCoeff())) + std::ilogb(double(V.cols())) + 1;
  // Scaled copies first: Eigen folds scalar factors of a product's operands out of the
  // GEMM (it would compute dO V^T and overflow again).
  const Mat<T> dOs = dO * T(std::ldexp(1.0, -a)), Vs = V * T(std::ldexp(1.0, -b));
  dP.noalias() = dOs * Vs.transpose();
  return std::ldexp(1.0, a + b);
}

/// x times a row's gradient scale (rescale_if_overflowed, row_rescale_exponent), where 0 stays
/// 0: in double the scale is +inf when dO and V are near DBL_MAX (2^1024 and more), and every
/// zero gradient then came out 0 * inf = NaN (dO = DBL_MAX over keys of one value, where dQ = 0:
/// nineteenth session); a nonzero x then gives +-inf, which the finite checks name.
inline double unscale(double x, double scale) { return x == 0 ? 0.0 : x * scale; }

/// The exponent e for one row whose dZ = dL/dz overflowed (or came near it) although its dP
/// did not: the row's normalizer backward, linear in dP, reruns on dP 2^-e (formed in double:
/// 2^-150 is 0 in float) so that the bound |dL/dz| <= 2 max |dP| / tau stays below max / 8.
/// 0 when the row is fine, or when dP itself is past that (the finite check names it). Per
/// row: one global factor pushed rows of small dP into subnormals (10% off, or all 0: review
/// finding).
template <class T>
int row_rescale_exponent(const T* dz, const T* dp, Eigen::Index n, double tau) {
  constexpr double top = double(std::numeric_limits<T>::max()) / 8;
  double max_dz = 0, max_dp = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const double a = std::abs(double(dz[j]));
    max_dz = a > max_dz || std::isnan(a) ? a : max_dz;  // a NaN stays (std::max would drop it)
    max_dp = std::max(max_dp, std::abs(double(dp[j])));
  }
  if (max_dz < top) return 0;  // false for NaN and inf
  const double bound = 2 * max_dp / tau;
  if (!(bound >= top) || !std::isfinite(bound)) return 0;
  return std::ilogb(bound / top) + 1;
}

/// One gradient must be finite: an overflow (tau near 0, huge inputs) is reported, naming it
/// and its first non-finite entry, never returned as inf or NaN.
template <class M>
void require_gradient_finite(const M& m, const char* name) {
  if (m.allFinite()) return;  // vectorised; the loop below names the first bad entry
  for (Eigen::Index i = 0; i < m.size(); ++i)
    if (!std::isfinite(double(m.data()[i])))
      fail(std::string("gradient overflowed: ") + name + " at flat index " + std::to_string(i) + " is " +
           num(double(m.data()[i])) + ", not representable in this precision (inputs, dO or 1/temperature too large)");
}

/// dL/dtemperature (kept in double) must be finite and representable in T; `what` names it
/// in the error, e.g. "dL/dtemperature (summed over heads and batch)".
template <class T>
void require_dtemperature_finite(double dtau, const char* what) {
  require(std::isfinite(dtau) && std::isfinite(double(T(dtau))),
          std::string("gradient overflowed: ") + what + " is " + num(dtau) + ", not representable in this precision");
}

/// Every gradient of one attention call must be finite (require_gradient_finite).
template <class T>
void require_gradients_finite(const AttentionGrads<T>& g) {
  const auto check = [](const auto& m, const char* name) { require_gradient_finite(m, name); };
  check(g.dQ, "dL/dquery");
  check(g.dK, "dL/dkey");
  check(g.dV, "dL/dvalue");
  check(g.dparams.W, "dL/dparams.W");
  check(g.dparams.W_q, "dL/dparams.W_q");
  check(g.dparams.W_k, "dL/dparams.W_k");
  check(g.dparams.v, "dL/dparams.v");
  check(g.dparams.b, "dL/dparams.b");
  check(g.dparams.w, "dL/dparams.w");
  check(g.drelative, "dL/dbias.relative");
  check(g.dt5_table, "dL/dbias.t5_table");
  check(g.ddense, "dL/dbias.dense");
  require_dtemperature_finite<T>(g.dtemperature, "dL/dtemperature");
}

/// R_i = sum_j dL/draw_ij of each query row, for the scorers whose query gradient is built on
/// it (linear concat's w_q term; the additive form where every tanh is near 0). dz = dZ 2^e_i
/// (row_scale), P the forward's weights, raw the raw scores. A shift-invariant normalizer
/// (p(z + c) = p(z)) has sum_j dL/dz_ij = 0 exactly, so without a softcap R_i = 0 (ALiBi,
/// relative, T5 and dense biases are shifts of z); with one, R_i = scale sum_j dz_ij
/// (s'_j - s'_ref) in double, s'_ref the slope at the row's key of largest P, as the tiled
/// backward's RowSums (cpu/flash_backward.hpp). Summing float dS of size 1e20 instead left
/// 3e13, which a query of 1e26 turned into an overflowed dL/dw (fuzzer finding). Otherwise
/// (a normalizer that is not shift-invariant) the plain double sum.
template <class T, class Mods>
Eigen::VectorXd row_sums_of_grad_raw(const Mat<T>& dZ, const Eigen::VectorXd& row_scale, const Mat<T>& raw,
                                     const Mat<T>& P, const Mods& mods, bool shift_invariant) {
  Eigen::VectorXd R = Eigen::VectorXd::Zero(dZ.rows());
  if (shift_invariant && !mods.softcap) return R;
  for (Eigen::Index i = 0; i < dZ.rows(); ++i) {
    double ref = 0;
    if (shift_invariant) {
      Eigen::Index best = -1;
      for (Eigen::Index j = 0; j < dZ.cols(); ++j)
        if (P(i, j) > T(0) && (best < 0 || P(i, j) > P(i, best))) best = j;
      if (best < 0) continue;  // no weight: no gradient
      ref = mods.softcap_slope(double(raw(i, best)));
    }
    double sum = 0;
    for (Eigen::Index j = 0; j < dZ.cols(); ++j)
      if (dZ(i, j) != T(0))
        sum += unscale(double(dZ(i, j)), row_scale(i)) * ((mods.softcap ? mods.softcap_slope(double(raw(i, j))) : 1.0) - ref);
    R(i) = sum * double(mods.scale);
  }
  return R;
}

}  // namespace detail
}  // namespace qkscope
