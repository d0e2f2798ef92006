// qkscope/norm/gumbel.hpp — Gumbel-softmax p = softmax((z + g) / tau), g_j ~ Gumbel(0, 1)
// (Jang, Gu & Poole 2017, eq. 1; Maddison, Mnih & Teh 2017). Noise is seeded: noise()
// draws one (L_q, L_k) grid per call, row-major, from Options::seed; the attention call
// hands row i of it to row i.
// Hard variant: forward is the one-hot of argmax(z + g) (ties to the lowest index),
// backward is the soft gradient (straight-through estimator, Jang et al. 2017 §2.2).
#pragma once

#include <cstdint>
#include <vector>

#include "qkscope/detail/rng.hpp"
#include "qkscope/norm/row.hpp"

namespace qkscope::norm {

struct GumbelSoftmax {
  static constexpr const char* name = "gumbel_softmax";
  static constexpr const char* label = "Gumbel-softmax";
  static constexpr const char* tex = R"(p_j=\frac{e^{(z_j+g_j)/\tau}}{\sum_l e^{(z_l+g_l)/\tau}},\ g_j\sim\mathrm{Gumbel}(0,1))";
  static constexpr bool soft = true;
  static constexpr bool shift_invariant = true;  // same weights for z + c: sum_j dL/dz_j = 0

  struct Options {
    std::uint64_t seed = 0;  // noise seed
    bool hard = false;       // straight-through one-hot forward
    static constexpr auto fields() {
      return std::tuple{
          Field<Options, std::uint64_t>{"seed", &Options::seed, 0, "seed of the Gumbel noise"},
          Field<Options, bool>{"hard", &Options::hard, 0, "one-hot forward, soft gradient (straight-through)"}};
    }
  };

  /// g ~ Gumbel(0, 1) for the whole (L_q, L_k) grid, row-major from o.seed: the same
  /// values on every platform (detail::Rng).
  template <class T>
  static Mat<T> noise(const Options& o, Eigen::Index L_q, Eigen::Index L_k) {
    detail::Rng rng(o.seed);
    Mat<T> g(L_q, L_k);
    for (Eigen::Index i = 0; i < g.size(); ++i) g.data()[i] = T(rng.gumbel());
    return g;
  }

  template <class T>
  static void perturbed(const Row<T, Options>& r, std::vector<T>& y) {
    y.resize(r.n);
    for (Eigen::Index j = 0; j < r.n; ++j) y[j] = is_valid(r.z[j]) ? r.z[j] + r.noise[j] : r.z[j];
  }
  template <class T>
  static void forward(const Row<T, Options>& r, T* p) {
    std::vector<T> y;
    perturbed(r, y);
    if (r.opt->hard) {
      const Eigen::Index best = argmax_lowest(y.data(), r.n);
      for (Eigen::Index j = 0; j < r.n; ++j) p[j] = T(j == best ? 1 : 0);
    } else {
      stable_softmax(y.data(), r.n, r.tau, nullptr, p);
    }
  }
  /// Soft: softmax backward on z + g. Hard: the same soft gradient (straight-through).
  template <class T>
  static double backward(const Row<T, Options>& r, const T* p, const T* dp, T* dz) {
    std::vector<T> y, soft(r.n);
    perturbed(r, y);
    const T* ps = p;
    if (r.opt->hard) {
      stable_softmax(y.data(), r.n, r.tau, nullptr, soft.data());
      ps = soft.data();
    }
    return softmax_backward(y.data(), ps, dp, r.n, r.tau, dz);
  }
};

}  // namespace qkscope::norm
