// qkscope/norm/topk.hpp — top-k softmax: softmax over the k largest logits of the row,
// 0 elsewhere (as in Zhao et al. 2019 "Explicit Sparse Transformer", eq. 6-7).
// Exactly min(k, #unmasked) keys are kept; ties at the k-th value go to the lowest
// key index; k >= L_k is plain softmax. Gradient flows through the kept keys only.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

#include "qkscope/norm/row.hpp"

namespace qkscope::norm {

struct TopKSoftmax {
  static constexpr const char* name = "topk_softmax";
  static constexpr const char* label = "Top-k softmax";
  static constexpr const char* tex = R"(p=\operatorname{softmax}\big(\operatorname{top}_k(\mathbf z)/\tau\big))";
  static constexpr bool soft = true;
  static constexpr bool shift_invariant = true;  // same weights for z + c: sum_j dL/dz_j = 0

  struct Options {
    int top_k = 1;  // keys kept per row
    static constexpr auto fields() {
      return std::tuple{Field<Options, int>{"top_k", &Options::top_k, 1, "keys kept per row (k >= 1)"}};
    }
  };

  /// keep[j] = true for the k largest valid logits (stable: lower index wins ties).
  template <class T>
  static std::vector<char> selection(const Row<T, Options>& r) {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < r.n; ++j)
      if (is_valid(r.z[j])) idx.push_back(j);
    std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) { return r.z[a] > r.z[b]; });
    std::vector<char> keep(r.n, 0);
    const std::size_t k = std::min<std::size_t>(idx.size(), std::size_t(std::max(r.opt->top_k, 1)));
    for (std::size_t t = 0; t < k; ++t) keep[idx[t]] = 1;
    return keep;
  }
  template <class T>
  static void forward(const Row<T, Options>& r, T* p) {
    const auto keep = selection(r);
    stable_softmax(r.z, r.n, r.tau, keep.data(), p);
  }
  template <class T>
  static double backward(const Row<T, Options>& r, const T* p, const T* dp, T* dz) {
    return softmax_backward(r.z, p, dp, r.n, r.tau, dz);
  }
};

}  // namespace qkscope::norm
