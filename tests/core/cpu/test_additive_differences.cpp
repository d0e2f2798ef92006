// cpu/additive_differences.hpp: the additive score's exact raw differences
// S_ij - S_ir = sum_h v_h (tanh(A_ih + B_jh) - tanh(A_ih + B_rh)), each unit's from the keys'
// own difference, with a bound on their error. Since the twenty-third session the double tiled
// backward's dL/dtau is their only caller (the float one forms its rows from double tiles), so
// they are checked here directly, in double: against the same difference in long double from
// B_j - B_r taken in long double from the keys, on keys from tied to far apart.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "qkscope/cpu/additive_differences.hpp"

using namespace qkscope;

namespace {

/// S_ij - S_ir in long double (64-bit significand), B's difference from the keys: each unit's
/// tanh difference as tanh(delta) (1 - t_j t_r) (the addition formula), which keeps its digits
/// for near-tied keys where tanhl(x_j) - tanhl(x_r) would not.
/// `terms` receives sum_h |v_h (t_jh - t_rh)|, the size the error bound is relative to.
long double long_double_difference(const Mat<double>& A, const Mat<double>& K, const Mat<double>& W_k, const Vec<double>& v,
                      Eigen::Index i, Eigen::Index j, Eigen::Index r, double& terms) {
  long double s = 0, abs_sum = 0;
  for (Eigen::Index h = 0; h < v.size(); ++h) {
    long double bj = 0, br = 0, delta = 0;
    for (Eigen::Index k = 0; k < K.cols(); ++k) {
      bj += (long double)W_k(h, k) * K(j, k);
      br += (long double)W_k(h, k) * K(r, k);
      delta += (long double)W_k(h, k) * ((long double)K(j, k) - K(r, k));
    }
    const long double tj = tanhl(A(i, h) + bj), tr = tanhl(A(i, h) + br);
    const long double d = (long double)v(h) * tanhl(delta) * (1 - tj * tr);
    s += d;
    abs_sum += fabsl(d);
  }
  terms = double(abs_sum);
  return s;
}

}  // namespace

TEST_CASE("additive raw differences in double: tied keys give 0, others within their bound of long double",
          "[tiled][score]") {
  std::mt19937_64 rng(20261207);
  std::normal_distribution<double> n(0, 1);
  for (const double gap : {0.0, 1e-12, 1e-8, 1e-4, 1.0}) {
    CAPTURE(gap);
    const Eigen::Index L_q = 3, L_k = 7, d = 5, d_h = 6;
    Mat<double> Q(L_q, d), K(L_k, d), W_q(d_h, d), W_k(d_h, d);
    Vec<double> v(d_h);
    for (auto* m : {&Q, &W_q, &W_k})
      for (Eigen::Index x = 0; x < m->size(); ++x) m->data()[x] = n(rng);
    for (Eigen::Index x = 0; x < d_h; ++x) v(x) = n(rng);
    // Keys near key 0: key j at gap j times a random direction (key 6 far).
    for (Eigen::Index k = 0; k < d; ++k) K(0, k) = n(rng);
    for (Eigen::Index j = 1; j < L_k; ++j)
      for (Eigen::Index k = 0; k < d; ++k) K(j, k) = K(0, k) + (j == 6 ? 2.0 : double(j) * gap) * n(rng);
    const Mat<double> A = Q * W_q.transpose(), B = K * W_k.transpose();
    const std::vector<Eigen::Index> blocks{0, 3, 6};
    std::vector<double> out(L_k), err(L_k);
    for (Eigen::Index i = 0; i < L_q; ++i) {
      cpu::detail::additive_raw_differences(A, B, v, K, W_k, i, 0, blocks, 3, out.data(), err.data());
      CHECK(out[0] == 0);  // the reference key itself
      for (Eigen::Index j = 1; j < L_k; ++j) {
        CAPTURE(i, j);
        double terms = 0;
        const long double want = long_double_difference(A, K, W_k, v, i, j, 0, terms);
        if (gap == 0 && j < 6) {
          CHECK(out[j] == 0);  // tied keys: exactly 0
          continue;
        }
        // Within its own bound; and the bound is a few ulp of the units' terms (not of their sum,
        // which may cancel).
        CHECK(std::abs((long double)out[j] - want) <= (long double)err[j]);
        CHECK(err[j] <= 1e-13 * terms);
      }
    }
  }
}
