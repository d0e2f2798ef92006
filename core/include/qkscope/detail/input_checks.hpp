// qkscope/detail/input_checks.hpp — the checks of one attention call's inputs that need no
// result type: shapes, finite parameters, the temperature and the scale as numbers of the
// compute type T. attention.hpp calls them first; the tiled paths (cpu/) call the same ones,
// so every path refuses the same input with the same message. Each throws
// std::invalid_argument naming the argument and the bad shape or value.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "qkscope/detail/check.hpp"
#include "qkscope/score/params.hpp"

namespace qkscope::detail {

template <class T>
ScoreShape check_inputs(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V) {
  require_nonempty(Q, "query");
  require_nonempty(K, "key");
  require_nonempty(V, "value");
  require(V.rows() == K.rows(), [&] {
    return "value must have L_k = " + std::to_string(K.rows()) + " rows (one per key), got shape " + shape_of(V);
  });
  require_finite(Q, "query");
  require_finite(K, "key");
  require_finite(V, "value");
  return {Q.rows(), K.rows(), Q.cols(), K.cols()};
}

/// Every parameter the caller set must be finite (a NaN W would otherwise surface as a
/// misleading "scores overflowed", or vanish under a full mask).
template <class T>
void check_params_finite(const ScoreParams<T>& p) {
  require_finite(p.W, "params.W");
  require_finite(p.W_q, "params.W_q");
  require_finite(p.W_k, "params.W_k");
  require_finite(p.v, "params.v");
  require_finite(p.b, "params.b");
  require_finite(p.w, "params.w");
}

inline void check_temperature(double tau, bool soft, const std::string& normalizer) {
  if (soft)
    require(tau > 0 && std::isfinite(tau), [&] {
      return "temperature must be finite and > 0 for normalizer '" + normalizer + "', got " + num(tau) +
             " (use normalizer 'hard' for the tau -> 0 limit)";
    });
  else
    require(tau >= 0 && std::isfinite(tau), [&] { return "temperature must be finite and >= 0, got " + num(tau); });
}

/// The temperature as T: finite (1e39 is +inf in float, and (z - m) / inf would make a
/// soft normalizer uniform and its logsumexp NaN) and, for soft normalizers, not 0
/// (1e-46 is 0 in float: (z - max) / 0 = NaN).
template <class T>
void check_temperature_in(double tau, bool soft, const std::string& normalizer) {
  check_temperature(tau, soft, normalizer);
  require(std::isfinite(double(T(tau))), [&] {
    return "temperature " + num(tau) + " overflows to inf in this precision (largest finite value " +
           num(double(std::numeric_limits<T>::max())) + ")";
  });
  require(!soft || T(tau) > T(0), [&] {
    return "temperature " + num(tau) +
           " underflows to 0 in this precision; use normalizer 'hard' for the tau -> 0 limit";
  });
}

/// A finite scale must also be a number of T: past T's maximum every score is inf or NaN,
/// and a nonzero scale that rounds to 0 in T (1e-50 in float) would silently make every
/// score 0 (uniform weights). Denormal scales are kept (they are nonzero). Throws
/// std::invalid_argument naming `scale`.
template <class T>
void check_scale_in(double scale) {
  require(std::isfinite(double(T(scale))), [&] {  // messages built only on failure (hot path)
    return "scale " + num(scale) + " overflows to inf in this precision (largest finite value " +
           num(double(std::numeric_limits<T>::max())) + ")";
  });
  require(scale == 0 || T(scale) != T(0), [&] {
    return "scale " + num(scale) + " underflows to 0 in this precision (smallest nonzero value " +
           num(double(std::numeric_limits<T>::denorm_min())) + "); pass scale = 0 if that is meant";
  });
}

}  // namespace qkscope::detail
