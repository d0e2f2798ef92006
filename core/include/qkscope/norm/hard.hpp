// qkscope/norm/hard.hpp — hard attention: one-hot at argmax_j z_j (Xu et al. 2015, §4.1
// "stochastic hard attention", here its deterministic argmax form). Ties go to the
// lowest key index (ONNX Hardmax's rule), so the one-hot always sums to exactly 1.
// Not differentiable: its gradient w.r.t. the logits is 0 almost everywhere (train it
// with REINFORCE or the straight-through Gumbel variant instead). Temperature is
// ignored (argmax is invariant to it), so tau = 0 is allowed here.
#pragma once

#include "qkscope/norm/row.hpp"

namespace qkscope::norm {

struct Hard {
  static constexpr const char* name = "hard";
  static constexpr const char* label = "Hard (argmax)";
  static constexpr const char* tex = R"(p=\operatorname{onehot}\big(\arg\max_j z_j\big))";
  static constexpr bool soft = false;
  static constexpr bool shift_invariant = true;  // same weights for z + c: sum_j dL/dz_j = 0
  using Options = NoOptions;

  template <class T>
  static void forward(const Row<T>& r, T* p) {
    const Eigen::Index best = argmax_lowest(r.z, r.n);
    for (Eigen::Index j = 0; j < r.n; ++j) p[j] = T(j == best ? 1 : 0);
  }
  template <class T>
  static double backward(const Row<T>& r, const T*, const T*, T* dz) {
    for (Eigen::Index j = 0; j < r.n; ++j) dz[j] = T(0);
    return 0;
  }
};

}  // namespace qkscope::norm
