// qkscope/cpu/exact_lse.hpp — logsumexp rows recomputed from directly computed scores.
// A fast form that cancels large terms (neg_sq_euclidean's 2 qc.kc - |qc|^2 - |kc|^2,
// score/forms.hpp) leaves each logit about eps * cancellation * scale / tau of rounding. The
// rounding common to a row cancels in the weights and the output, but the logsumexp carries
// it whole, and the logsumexp can sit near 0 while the cancelled terms are large (a query on
// a key cluster far from the mean key, at small tau). Rows where that bound passes the
// tolerance rule's floor, 1e-6 (1 + |lse|) (core/reference/tolerance.hpp), get their
// logsumexp recomputed here from the scoring function's own forward (differences, no
// cancellation) through the same pipeline (TileOps: biases, scale, tau; Mask), summed in
// double. O(L_k d) per such row; other rows and the output keep the tiled values.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "qkscope/cpu/tile_ops.hpp"
#include "qkscope/score/registry.hpp"

namespace qkscope::cpu::detail {

/// Could a logit rounding of `rounding` move logsumexp value `lse` past the rule's floor?
inline bool lse_needs_exact(double rounding, double lse) {
  return rounding > 0 && std::isfinite(lse) && rounding > 1e-6 * (1 + std::abs(lse));
}

/// For every head n (heads[n].Q, .K) and row i of r[n].logsumexp that lse_needs_exact:
/// recomputes that entry. `score` is the registered scoring function, `p` its parameters.
template <class T, class Heads, class Results>
void exact_logsumexp_rows(const Heads& heads, const ScoreParams<T>& p, const std::string& score,
                          const TileOps<T>& ops, double rounding, Results& r) {
  if (!(rounding > 0)) return;
  visit_score(score, [&](auto f) {
    using F = decltype(f);
    // Only forms that cancel (those with the differences hooks: negative squared Euclidean)
    // get here with rounding > 0: the others' forward is not instantiated here (the tiled
    // wasm module's size; cosine's refine_tile does not make it one).
    if constexpr (requires { &F::template grad_k_from_differences<T>; })
    for (std::size_t n = 0; n < heads.size(); ++n) {
      auto& lse = r[n].logsumexp;
      for (Eigen::Index i = 0; i < lse.size(); ++i) {
        if (!lse_needs_exact(rounding, double(lse(i)))) continue;
        const Mat<T> q = heads[n].Q->middleRows(i, 1);
        Mat<T> z = F::template forward<T>(q, *heads[n].K, p);  // (1, L_k) raw scores
        ops.z(z, i, 0);                                         // z = x tau, as the kernels
        double m = -std::numeric_limits<double>::infinity();
        for (Eigen::Index j = 0; j < z.cols(); ++j) {
          if (!ops.mask(int(i), int(j))) z(0, j) = -std::numeric_limits<T>::infinity();
          m = std::max(m, double(z(0, j)));
        }
        if (!std::isfinite(m)) continue;  // the tiled value (-inf, or an overflow it reports)
        const double tau = double(ops.tau);
        double s = 0;
        for (Eigen::Index j = 0; j < z.cols(); ++j) s += std::exp((double(z(0, j)) - m) / tau);
        lse(i) = T(m / tau + std::log(s));
      }
    }
  });
}

}  // namespace qkscope::cpu::detail
