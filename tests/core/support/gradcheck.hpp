// tests/core/support/gradcheck.hpp — central finite differences of the double
// reference, for L = sum(G .* O): the independent check of every analytic gradient.
#pragma once

#include <functional>
#include <vector>

#include "reference/reference.hpp"

namespace qktest {

using namespace qkscope;

/// Inputs of one attention call, in double, as one bundle the FD loop can perturb.
struct Problem {
  MatrixD Q, K, V;
  ScoreParams<double> params;
  AttentionConfig<double> cfg;
};

inline double loss_of(const Problem& p, const MatrixD& G) {
  const auto r = reference::attention<double>(p.Q, p.K, p.V, p.params, p.cfg);
  return (r.output.array() * G.array()).sum();
}

/// d loss / d x for every entry of `x` (a member of a copy of `p`), by central differences
/// with step h * max(1, |x|). Entries that are -inf (masked bias) get gradient 0.
template <class M>
M numeric_grad(Problem& p, M& x, const MatrixD& G, double h = 1e-6) {
  M g = M::Zero(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    double& xi = x.data()[i];
    if (!std::isfinite(xi)) continue;
    const double orig = xi, step = h * std::max(1.0, std::abs(orig));
    xi = orig + step;
    const double up = loss_of(p, G);
    xi = orig - step;
    const double down = loss_of(p, G);
    xi = orig;
    g.data()[i] = (up - down) / (2 * step);
  }
  return g;
}

inline double numeric_dtemperature(Problem& p, const MatrixD& G, double h = 1e-6) {
  const double t = p.cfg.temperature, step = h * std::max(1.0, t);
  p.cfg.temperature = t + step;
  const double up = loss_of(p, G);
  p.cfg.temperature = t - step;
  const double down = loss_of(p, G);
  p.cfg.temperature = t;
  return (up - down) / (2 * step);
}

/// Gradient agreement for FD: |a - n| <= 1e-5 * (1 + max|n|) over the whole array.
template <class A, class B>
bool grads_agree(const A& analytic, const B& numeric, std::string& why) {
  if (analytic.size() != numeric.size()) {
    why = "size " + std::to_string(analytic.size()) + " vs " + std::to_string(numeric.size());
    return false;
  }
  if (!numeric.size()) return true;
  const double scale = 1 + numeric.cwiseAbs().maxCoeff();
  const double err = (analytic - numeric).cwiseAbs().maxCoeff();
  why = "max abs err " + std::to_string(err) + " (scale " + std::to_string(scale) + ")";
  return err <= 1e-5 * scale && analytic.allFinite();
}

}  // namespace qktest

#define CHECK_GRAD(name, analytic, numeric)                          \
  do {                                                               \
    std::string qk_why_;                                             \
    const bool qk_ok_ = ::qktest::grads_agree(analytic, numeric, qk_why_); \
    INFO(std::string(name) + ": " + qk_why_);                        \
    CHECK(qk_ok_);                                                   \
  } while (0)
