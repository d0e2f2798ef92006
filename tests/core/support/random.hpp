// tests/core/support/random.hpp — seeded random inputs for the tests.
#pragma once

#include <random>

#include "qkscope/detail/rng.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/types.hpp"

namespace qktest {

/// (rows, cols) matrix with N(0, sd^2) entries from `rng`.
template <class T = double>
qkscope::Mat<T> randn(qkscope::detail::Rng& rng, Eigen::Index rows, Eigen::Index cols, double sd = 1.0) {
  qkscope::Mat<T> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = T(sd * rng.normal());
  return m;
}

template <class T = double>
qkscope::Vec<T> randn_vec(qkscope::detail::Rng& rng, Eigen::Index n, double sd = 1.0) {
  qkscope::Vec<T> v(n);
  for (Eigen::Index i = 0; i < n; ++i) v(i) = T(sd * rng.normal());
  return v;
}

/// (rows, cols) float matrix with entries uniform in [-spread, spread) from `rng`.
inline qkscope::Matrix uniform(Eigen::Index rows, Eigen::Index cols, std::mt19937_64& rng, float spread = 1) {
  std::uniform_real_distribution<float> u(-spread, spread);
  qkscope::Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

/// Additive parameters: W_q (d_h, d_q), W_k (d_h, d_k) and v uniform in [-1, 1), b in
/// [-0.1, 0.1), from `rng` in that order.
inline qkscope::ScoreParams<float> additive_uniform(Eigen::Index d_q, Eigen::Index d_k, Eigen::Index d_h,
                                                    std::mt19937_64& rng) {
  qkscope::ScoreParams<float> p;
  p.W_q = uniform(d_h, d_q, rng);
  p.W_k = uniform(d_h, d_k, rng);
  p.v = uniform(d_h, 1, rng).col(0);
  p.b = uniform(d_h, 1, rng, 0.1f).col(0);
  return p;
}

/// Shapes that sweep the boundaries: length 1, L_q != L_k both ways, odd widths.
struct Shape {
  Eigen::Index L_q, L_k, d_q, d_k, d_v, d_h;
};
inline const Shape kShapes[] = {
    {1, 1, 1, 1, 1, 1}, {1, 5, 3, 3, 2, 4}, {5, 1, 2, 2, 3, 2},
    {3, 7, 4, 4, 2, 3}, {7, 3, 5, 5, 1, 5}, {6, 6, 3, 3, 4, 7},
};
/// The same with d_q != d_k, for scoring functions that allow it.
inline const Shape kMixedShapes[] = {{4, 6, 3, 5, 2, 4}, {5, 2, 6, 1, 3, 3}};

}  // namespace qktest
