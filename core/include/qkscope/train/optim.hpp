// qkscope/train/optim.hpp — AdamW and global-norm gradient clipping.
//   Clipping (Pascanu, Mikolov & Bengio 2013, Alg. 2): n = sqrt(sum of every squared
//   gradient entry); if n > c, every gradient is multiplied by c / n.
//   Adam (Kingma & Ba 2015, Alg. 1), bias-corrected moments:
//     m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,
//     m^ = m / (1 - b1^t),    v^ = v / (1 - b2^t)
//   with decoupled weight decay (AdamW, Loshchilov & Hutter 2019, Alg. 2, eta_t = 1):
//     theta = theta - lr (m^ / (sqrt(v^) + eps) + wd theta)
//   Weight decay applies to matrices only (not to the vectors b_out, score v, b, w).
#pragma once

#include <cmath>
#include <string>

#include "qkscope/detail/check.hpp"
#include "qkscope/train/model.hpp"

namespace qkscope::train {

struct AdamWConfig {
  double lr = 1e-2;            // learning rate, finite and > 0
  double beta1 = 0.9;          // in [0, 1)
  double beta2 = 0.999;        // in [0, 1)
  double eps = 1e-8;           // > 0
  double weight_decay = 0.0;   // decoupled, finite and >= 0
  double clip_norm = 1.0;      // global-norm clip threshold, > 0; inf = no clipping
};

/// Checks every field; std::invalid_argument names the field and its value.
inline void validate(const AdamWConfig& a) {
  using detail::num;
  using detail::require;
  require(std::isfinite(a.lr) && a.lr > 0, "lr (learning rate) must be finite and > 0, got " + num(a.lr));
  require(a.beta1 >= 0 && a.beta1 < 1, "beta1 must be in [0, 1), got " + num(a.beta1));
  require(a.beta2 >= 0 && a.beta2 < 1, "beta2 must be in [0, 1), got " + num(a.beta2));
  require(std::isfinite(a.eps) && a.eps > 0, "eps must be finite and > 0, got " + num(a.eps));
  require(std::isfinite(a.weight_decay) && a.weight_decay >= 0,
          "weight_decay must be finite and >= 0, got " + num(a.weight_decay));
  require(!std::isnan(a.clip_norm) && a.clip_norm > 0, "clip_norm must be > 0, got " + num(a.clip_norm));
}

/// Global L2 norm of every gradient entry (accumulated in double). NaN or inf when any
/// entry is non-finite.
template <class T>
double global_norm(ModelParams<T>& grads) {
  double s = 0;
  for_each_tensor<T>(grads, grads, [&](const std::string&, auto& g, auto&) {
    for (Eigen::Index i = 0; i < g.size(); ++i) s += double(g.data()[i]) * double(g.data()[i]);
  });
  return std::sqrt(s);
}

/// Adam moments for every parameter tensor, and the step count t.
template <class T>
class AdamW {
 public:
  explicit AdamW(const AdamWConfig& c) : c_(c) { validate(c_); }

  /// One update of `params` with `grads` (same structure, grads already clipped).
  void update(ModelParams<T>& params, ModelParams<T>& grads) {
    ++t_;
    const double b1t = 1 - std::pow(c_.beta1, double(t_)), b2t = 1 - std::pow(c_.beta2, double(t_));
    // Moments are kept in the same structure as the parameters (resized to zeros on first use).
    std::size_t k = 0;
    for_each_tensor<T>(params, grads, [&](const std::string&, auto& p, auto& g) {
      if (m_.size() <= k) m_.emplace_back(Vec<T>::Zero(p.size())), v_.emplace_back(Vec<T>::Zero(p.size()));
      Vec<T>& m = m_[k];
      Vec<T>& v = v_[k];
      const bool decay = p.rows() > 1 && p.cols() > 1;
      for (Eigen::Index i = 0; i < p.size(); ++i) {
        const double gi = double(g.data()[i]);
        const double mi = c_.beta1 * double(m(i)) + (1 - c_.beta1) * gi;
        const double vi = c_.beta2 * double(v(i)) + (1 - c_.beta2) * gi * gi;
        m(i) = T(mi);
        v(i) = T(vi);
        const double pi = double(p.data()[i]);
        const double upd = (mi / b1t) / (std::sqrt(vi / b2t) + c_.eps) + (decay ? c_.weight_decay * pi : 0.0);
        p.data()[i] = T(pi - c_.lr * upd);
      }
      ++k;
    });
  }
  long steps() const { return t_; }
  const AdamWConfig& config() const { return c_; }

 private:
  AdamWConfig c_;
  long t_ = 0;
  std::vector<Vec<T>> m_, v_;
};

/// Multiplies every gradient by clip / n when n = global_norm > clip; returns n.
template <class T>
double clip_global_norm(ModelParams<T>& grads, double clip) {
  const double n = global_norm(grads);
  if (std::isfinite(n) && n > clip) {
    const T f = T(clip / n);
    for_each_tensor<T>(grads, grads, [&](const std::string&, auto& g, auto&) { g *= f; });
  }
  return n;
}

}  // namespace qkscope::train
