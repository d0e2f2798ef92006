// qkscope/norm/softmax.hpp — softmax normalizer p_j = exp(z_j / tau) / sum_l exp(z_l / tau)
// (Bridle 1990; temperature as in Hinton, Vinyals & Dean 2015, eq. 1).
// Differentiable, every unmasked key gets p > 0, rows sum to 1.
#pragma once

#include "qkscope/norm/row.hpp"

namespace qkscope::norm {

struct Softmax {
  static constexpr const char* name = "softmax";
  static constexpr const char* label = "Softmax";
  static constexpr const char* tex = R"(p_j=\frac{e^{z_j/\tau}}{\sum_l e^{z_l/\tau}})";
  static constexpr bool soft = true;  // requires tau > 0
  static constexpr bool shift_invariant = true;  // same weights for z + c: sum_j dL/dz_j = 0
  /// Computable key block by key block with a running max and sum (Milakov & Gimelshein
  /// 2018): the tiled CPU kernels and the CUDA kernels run it; others fall back to the core.
  static constexpr bool online = true;
  using Options = NoOptions;

  template <class T>
  static void forward(const Row<T>& r, T* p) {
    stable_softmax(r.z, r.n, r.tau, nullptr, p);
  }
  template <class T>
  static double backward(const Row<T>& r, const T* p, const T* dp, T* dz) {
    return softmax_backward(r.z, p, dp, r.n, r.tau, dz);
  }
};

}  // namespace qkscope::norm
