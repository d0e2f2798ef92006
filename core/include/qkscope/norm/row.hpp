// qkscope/norm/row.hpp — what every normalizer sees: one row of logits z (masked
// keys are -inf), the temperature tau, its per-call noise (if it samples) and its own
// options (norm/options.hpp). Normalizers work on raw pointers so the same code serves
// CPU, wasm and (later) CUDA.
//
// Contract shared by all normalizers:
//   weights p = N(z / tau) over the finite entries; masked entries get p = 0;
//   a row with no finite entry gets p = 0 everywhere (fully masked row);
//   backward returns dL/dz (0 on masked entries) and dL/dtau.
#pragma once

#include <cmath>
#include <type_traits>
#include <cstdint>
#include <limits>

#include "qkscope/norm/options.hpp"
#include "qkscope/types.hpp"

namespace qkscope::norm {

/// One row of logits handed to a normalizer whose options are O.
template <class T, class O = NoOptions>
struct Row {
  const T* z;          // (n) logits, -inf where masked
  Eigen::Index n;      // L_k
  T tau;               // temperature
  const T* noise;      // (n) this row of the normalizer's noise, or nullptr
  const O* opt;        // the normalizer's own options
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

/// (z - m) / tau for finite z and m without intermediate overflow: z - m can exceed the
/// type's maximum (z = -3e38, m = 3e38) while (z - m) / tau is representable for a large
/// tau (3.4e38 gives -1.76). Then both are divided first; the quotients are at most
/// |z| / tau and |m| / tau, so only a true overflow of the result remains (-> -inf, exp 0).
template <class T>
inline T scaled_gap(T z, T m, T tau) {
  const T d = z - m;
  if (std::isfinite(d)) return d / tau;
  return z / tau - m / tau;
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
    p[j] = (is_valid(z[j]) && (!keep || keep[j])) ? std::exp(scaled_gap(z[j], m, tau)) : T(0);
    sum += p[j];
  }
  for (Eigen::Index j = 0; j < n; ++j) p[j] /= sum;  // sum >= 1: the max contributes exp(0)
}

/// Softmax Jacobian-vector product: dy = p * (dp - p . dp), then dz = dy / tau.
/// dp is first shifted by the dp of the key of largest p (the lowest index among ties; p . 1 = 1
/// makes the result independent of the shift): equal dp then give dz = 0 exactly instead of p
/// times the rounding of p . dp, which 1 / tau or a later rescaling would blow up, and the key
/// that carries the row has dp - shift = 0, so its dz = -p (p . (dp - shift)) sums only the
/// other keys' small shares. A shift by the first attended key instead left that key
/// eps |dp_first - dp_top| of error: with p = [5e-17, 1, 5e-17] and dp = [0, -1e34, -20] the
/// top key's dz came out 0 where it is -9e18 (in double too; fuzzer and review findings).
/// Returns dL/dtau = -sum_j dz_j (z_j - c) / tau for the shift c, in double: a float row past
/// FLT_MAX may be cancelled by another row (the caller sums rows in double). (The result is
/// independent of c because sum_j dz_j = 0; the shift keeps it finite).
template <class T>
inline double softmax_backward(const T* z, const T* p, const T* dp, Eigen::Index n, T tau, T* dz) {
  T dot = 0, c = -std::numeric_limits<T>::infinity(), base = 0;
  for (Eigen::Index j = 0, top = -1; j < n; ++j)
    if (p[j] > 0 && (top < 0 || p[j] > p[top])) top = j, base = dp[j];
  for (Eigen::Index j = 0; j < n; ++j) dot += p[j] * (dp[j] - base);
  for (Eigen::Index j = 0; j < n; ++j)
    if (p[j] > 0 && z[j] > c) c = z[j];
  // dtau = -(1/tau) sum_j g_j (z_j - c) / tau with g_j = tau dz_j, summed before the last
  // division: each term is finite (|(z_j - c) / tau| < 104 wherever p_j > 0), so a tiny tau
  // gives one overflow at the end (+-inf, which attention_backward reports) instead of
  // +inf and -inf terms adding to NaN (fuzzer finding: tau = 1e-40, z within 1e-39 of c).
  // Float rows sum in double, so that many large terms cannot overflow the sum either.
  using Acc = std::conditional_t<(sizeof(T) < sizeof(double)), double, T>;
  Acc acc = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const T g = p[j] > 0 ? p[j] * ((dp[j] - base) - dot) : T(0);
    dz[j] = g / tau;
    if (p[j] > 0 && z[j] != c) acc += Acc(g) * Acc(scaled_gap(z[j], c, tau));  // a zero gap adds exactly 0
  }
  return double(-acc / Acc(tau));
}

}  // namespace qkscope::norm
