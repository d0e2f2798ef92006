// core/reference/linear.hpp — plain-loop oracle for kernelised ("linear") attention (tests
// only). Independent of qkscope/linear/: no prefix sums, no GEMMs, no shared stabiliser.
// It forms every pair's similarity explicitly,
//   sim_ij = phi(q_i) . phi(k_j),   w_ij = sim_ij / sum_{visible j'} sim_ij',   O_i = sum_j w_ij v_j,
// with elu + 1 (Katharopoulos et al. 2020, eq. 7) or FAVOR+ features (Choromanski et al.
// 2021, Lemma 1) phi_r(x) = exp(s w_r . x - s^2 |x|^2 / 2) / sqrt(m). FAVOR+ similarities
// are summed as exp(e_q + e_k - c_i) with c_i the largest exponent pair of row i (a
// log-sum-exp shift of its own), so double never overflows for test inputs.
// The projection W is data (drawn by the core from a seed), not math.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/types.hpp"

namespace qkscope::reference {

template <class T>
struct LinearResult {
  Mat<T> weights;  // (L_q, L_k), 0 where not visible
  Mat<T> output;   // (L_q, d_v)
};

/// favor = false: elu + 1; true: FAVOR+ with projection W (m, d) and input scale s.
/// causal: query i sees keys j <= i + offset.
template <class T>
LinearResult<T> linear_attention(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V, bool favor,
                                 const Mat<T>& W, double s, bool causal, Eigen::Index offset) {
  const Eigen::Index L_q = Q.rows(), L_k = K.rows(), d = Q.cols(), d_v = V.cols();
  const Eigen::Index m = favor ? W.rows() : d;
  auto exponents = [&](const Mat<T>& X, Eigen::Index i) {  // FAVOR+ exponent of each feature
    std::vector<T> e(m);
    T sq = 0;
    for (Eigen::Index c = 0; c < d; ++c) sq += T(s) * X(i, c) * T(s) * X(i, c);
    for (Eigen::Index r = 0; r < m; ++r) {
      T p = 0;
      for (Eigen::Index c = 0; c < d; ++c) p += W(r, c) * T(s) * X(i, c);
      e[r] = p - sq / 2;
    }
    return e;
  };
  auto elu1 = [](T x) { return x > 0 ? x + 1 : std::exp(x); };
  LinearResult<T> out;
  out.weights = Mat<T>::Zero(L_q, L_k);
  out.output = Mat<T>::Zero(L_q, d_v);
  for (Eigen::Index i = 0; i < L_q; ++i) {
    std::vector<T> sim(L_k, T(0));
    const auto eq = favor ? exponents(Q, i) : std::vector<T>();
    std::vector<std::vector<T>> ek(L_k);
    T c = -std::numeric_limits<T>::infinity();
    for (Eigen::Index j = 0; j < L_k; ++j) {
      if (causal && j > i + offset) continue;
      if (!favor) continue;
      ek[j] = exponents(K, j);
      for (Eigen::Index r = 0; r < m; ++r) c = std::max(c, eq[r] + ek[j][r]);
    }
    T total = 0;
    for (Eigen::Index j = 0; j < L_k; ++j) {
      if (causal && j > i + offset) continue;
      T v = 0;
      for (Eigen::Index r = 0; r < m; ++r)
        v += favor ? std::exp(eq[r] + ek[j][r] - c) / T(m) : elu1(Q(i, r)) * elu1(K(j, r));
      sim[j] = v;
      total += v;
    }
    if (!(total > 0)) continue;
    for (Eigen::Index j = 0; j < L_k; ++j) {
      out.weights(i, j) = sim[j] / total;
      for (Eigen::Index c2 = 0; c2 < d_v; ++c2) out.output(i, c2) += out.weights(i, j) * V(j, c2);
    }
  }
  return out;
}

}  // namespace qkscope::reference
