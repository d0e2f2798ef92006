// qkscope/cpu/additive_differences.hpp — the additive score's exact raw differences
//   S_ij - S_ir = sum_h v_h (tanh(A_ih + B_jh) - tanh(A_ih + B_rh))
// for the tiled dL/dtau's exact pass (cpu/temperature_grad.hpp), each unit's difference from
// the keys' own, tanh(B_jh - B_rh) (1 - t_j t_r) (score/tanh_difference.hpp), so tied keys give
// 0 exactly and near-tied ones keep their digits.
// (Moved out of cpu/additive.hpp; the float backward forms dL/dtau from its double tiles instead:
// cpu/temperature_grad.hpp, double_logit_row.)
#pragma once

#include <cmath>
#include <algorithm>
#include <limits>
#include <vector>

#include "qkscope/score/tanh_difference.hpp"
#include "qkscope/cpu/scorers.hpp"

namespace qkscope::cpu::detail {

/// out[j] = S_ij - S_ir (in double) for the keys of `blocks`, and err[j] a bound on its error.
/// A (L_q, d_h), B (L_k, d_h), v (d_h): the projections and the unit weights; K and W_k: the
/// inputs B came from, whose B_jh - B_rh is taken in double (O(d_k) per unit: T's B carried
/// eps (|B_j| + |B_r|) of rounding, which for keys 1e-4 tau apart was most of the difference,
/// a whole-row dL/dtau 13 times the bar: review). err bounds the rest: the factor
/// 1 - t_j t_r from the rounded x (a few eps, and eps |x| each for x's rounding) times
/// |v_h (t_jh - t_rh)|. Scalar (std::tanh, as the core's
/// exact pass): only rows temperature_rows flags take it.
template <class T>
void additive_raw_differences(const Mat<T>& A, const Mat<T>& B, const Vec<T>& v, const Mat<T>& K, const Mat<T>& W_k,
                              Eigen::Index i, Eigen::Index r, const std::vector<Eigen::Index>& blocks,
                              Eigen::Index block_k, double* out, double* err) {
  using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
  const Eigen::Index L_k = B.rows(), dh = v.size();
  const double eps = double(std::numeric_limits<T>::epsilon());
  Row t_r(dh), c_r(dh);
  for (Eigen::Index h = 0; h < dh; ++h) {
    const T x = A(i, h) + B(r, h);
    t_r(h) = std::tanh(x);
    c_r(h) = score::tanh_complement(x, t_r(h));
  }
  for (const Eigen::Index j0 : blocks)
    for (Eigen::Index j = j0, e = std::min(j0 + block_k, L_k); j < e; ++j) {
      double s = 0, bound = 0;
      for (Eigen::Index h = 0; h < dh; ++h) {
        const T b_j = B(j, h), b_r = B(r, h), x = A(i, h) + b_j, t = std::tanh(x);
        double delta = 0;
        for (Eigen::Index k = 0; k < K.cols(); ++k) delta += double(W_k(h, k)) * (double(K(j, k)) - double(K(r, k)));
        // Unconditionally: tanh_difference<double> tests t_j t_r > 1/2 in double, which a float
        // product of 0.5 + 2^-26 passes where a float test would not (m 41 % off: review).
        const T c_j = score::tanh_complement(x, t);
        const double d = double(v(h)) * score::tanh_difference(std::tanh(delta), double(t), double(t_r(h)),
                                                               double(c_j), double(c_r(h)));
        s += d;
        bound += std::abs(d) * (4 + 2 * (std::abs(double(x)) + std::abs(double(A(i, h)) + double(b_r))));
      }
      out[j] = s;
      err[j] = eps * bound;
    }
}

}  // namespace qkscope::cpu::detail
