// qkscope/norm/row.hpp — what every normalizer sees: one row of logits z (masked
// keys are -inf), the temperature tau, and per-normalizer options. Normalizers
// work on raw pointers so the same code serves CPU, wasm and (later) CUDA.
//
// Contract shared by all normalizers:
//   weights p = N(z / tau) over the finite entries; masked entries get p = 0;
//   a row with no finite entry gets p = 0 everywhere (fully masked row);
//   backward returns dL/dz (0 on masked entries) and dL/dtau.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "qkscope/types.hpp"

namespace qkscope::norm {

/// Options of the normalizers (each reads its own).
struct NormOptions {
  int top_k = 1;            // topk_softmax: keys kept per row (>= 1)
  bool hard = false;        // gumbel_softmax: straight-through one-hot forward
  std::uint64_t seed = 0;   // gumbel_softmax: noise seed
};

/// One row of logits handed to a normalizer.
template <class T>
struct Row {
  const T* z;          // (n) logits, -inf where masked
  Eigen::Index n;      // L_k
  T tau;               // temperature
  const T* noise;      // (n) Gumbel noise or nullptr
  const NormOptions* opt;
};

template <class T>
inline bool is_valid(T z) { return z > -std::numeric_limits<T>::infinity(); }

/// Largest finite logit and its lowest index; index -1 when the row is fully masked.
template <class T>
inline Eigen::Index argmax_lowest(const T* z, Eigen::Index n) {
  Eigen::Index best = -1;
  for (Eigen::Index j = 0; j < n; ++j)
    if (is_valid(z[j]) && (best < 0 || z[j] > z[best])) best = j;
  return best;
}

/// Stable softmax of y_j = (z_j - max) / tau over entries with keep[j] (all valid
/// ones when keep == nullptr). Subtracting the max *before* dividing by tau keeps
/// tau -> 0 finite: every exponent is <= 0 and the maxima give exp(0) = 1, so the
/// limit is the (tie-splitting) argmax instead of inf - inf = NaN.
template <class T>
inline void stable_softmax(const T* z, Eigen::Index n, T tau, const char* keep, T* p) {
  T m = -std::numeric_limits<T>::infinity();
  for (Eigen::Index j = 0; j < n; ++j)
    if (is_valid(z[j]) && (!keep || keep[j]) && z[j] > m) m = z[j];
  if (!is_valid(m)) {  // nothing to attend to
    for (Eigen::Index j = 0; j < n; ++j) p[j] = T(0);
    return;
  }
  T sum = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    p[j] = (is_valid(z[j]) && (!keep || keep[j])) ? std::exp((z[j] - m) / tau) : T(0);
    sum += p[j];
  }
  for (Eigen::Index j = 0; j < n; ++j) p[j] /= sum;  // sum >= 1: the max contributes exp(0)
}

/// Softmax Jacobian-vector product: dy = p * (dp - p . dp), then dz = dy / tau.
/// Returns dL/dtau = -sum_j dz_j (z_j - c) / tau for the shift c (the result is
/// independent of c because sum_j dz_j = 0; the shift keeps it finite).
template <class T>
inline T softmax_backward(const T* z, const T* p, const T* dp, Eigen::Index n, T tau, T* dz) {
  T dot = 0, c = -std::numeric_limits<T>::infinity();
  for (Eigen::Index j = 0; j < n; ++j) dot += p[j] * dp[j];
  for (Eigen::Index j = 0; j < n; ++j)
    if (p[j] > 0 && z[j] > c) c = z[j];
  T dtau = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    dz[j] = p[j] > 0 ? p[j] * (dp[j] - dot) / tau : T(0);
    if (p[j] > 0) dtau -= dz[j] * (z[j] - c) / tau;
  }
  return dtau;
}

}  // namespace qkscope::norm
