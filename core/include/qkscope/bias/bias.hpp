// qkscope/bias/bias.hpp — the description of the score modifiers and additive biases
// (BiasSpec), their validation, and score_mods(), which turns them into the pipeline's
// functor (pipeline/mods.hpp, the one implementation). Applied in this fixed order to the
// scaled scores s = scale * f(q, k):
//   1. softcap      s <- c tanh(s / c)            (Gemma 2 Team 2024, §2; Grok-1)
//   2. ALiBi        s <- s - m |j - (i + o)|      (Press, Smith & Lewis 2022, §3)
//   3. relative     s <- s + r[clip(j - (i + o), -R, R) + R]   (Shaw et al. 2018; unbucketed table)
//   4. T5           s <- s + t[bucket(j - (i + o))]   (Raffel et al. 2020, §2.1; t5_buckets.hpp)
//   5. dense bias   s <- s + B_ij                 (any additive mask/bias, e.g. 0 / -inf)
// o is the mask's diagonal offset (0 top-left, L_k - L_q bottom-right), so ALiBi and the
// relative positions measure distance from the same diagonal the causal mask and the window
// use: with bottom-right alignment (KV-cache decoding, L_q = 1, L_k = 5) the query sits at
// key 4 and sees offsets -4 ... 0, not 0 ... 4.
#pragma once

#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "qkscope/bias/t5_buckets.hpp"
#include "qkscope/detail/check.hpp"
#include "qkscope/norm/options.hpp"
#include "qkscope/pipeline/mods.hpp"
#include "qkscope/types.hpp"

namespace qkscope {

/// T5Buckets' fields as bindings read them (declared in bias/t5_buckets.hpp).
constexpr auto T5Buckets::fields() {
  using norm::Field;
  return std::tuple{
      Field<T5Buckets, int>{"num_buckets", &T5Buckets::num_buckets, 2, "number of buckets (T5: 32)"},
      Field<T5Buckets, int>{"max_distance", &T5Buckets::max_distance, 1,
                            "distance from which all positions share the last bucket (T5: 128)"},
      Field<T5Buckets, bool>{"bidirectional", &T5Buckets::bidirectional, 0,
                             "buckets for both directions (encoder); false: past only (decoder)"}};
}

/// Additive biases and score modifiers of one attention head.
template <class T>
struct BiasSpec {
  /// Softcap c > 0 (logit soft-capping); none when empty.
  std::optional<double> softcap;
  /// ALiBi slope m >= 0 of this head (see alibi_slopes()); none when empty.
  std::optional<double> alibi_slope;
  /// Relative-position table r of odd length 2R+1: bias r[clip(j - (i + o), -R, R) + R],
  /// o the mask's diagonal offset (as for ALiBi). Learnable.
  Vec<T> relative;
  /// Dense additive bias (L_q, L_k); entries may be -inf (masked), never NaN or +inf.
  Mat<T> dense;
  /// T5 bucketing (bias/t5_buckets.hpp); with it, t5_table holds one learnable bias per
  /// bucket: s <- s + t5_table[bucket(j - (i + o))] (Raffel et al. 2020, §2.1). Applied
  /// after the relative table, before the dense bias. (Last here so that brace
  /// initialisation {softcap, alibi_slope, relative, dense} keeps its meaning.)
  std::optional<T5Buckets> t5;
  Vec<T> t5_table;  // (num_buckets)
};

/// ALiBi slopes for n heads, head h gets slopes[h]. For n a power of two the geometric
/// sequence 2^(-8/n), 2^(-16/n), ...; otherwise the construction of the ALiBi authors'
/// reference code (also BLOOM, MPT): the slopes of the closest lower power of two p,
/// followed by every other slope of 2p, up to n in total.
inline std::vector<double> alibi_slopes(int n) {
  detail::require(n >= 1 && n <= 65536,
                  "alibi_slopes: head count must be in [1, 65536], got " + std::to_string(n));
  auto pow2 = [](int m) {
    std::vector<double> s(m);
    const double start = std::pow(2.0, -8.0 / m);
    for (int i = 0; i < m; ++i) s[i] = std::pow(start, i + 1);
    return s;
  };
  int p = 1;
  while (p * 2 <= n) p *= 2;
  auto slopes = pow2(p);
  if (p != n) {
    const auto extra = pow2(2 * p);
    for (int i = 0; int(slopes.size()) < n; i += 2) slopes.push_back(extra[i]);
  }
  return slopes;
}

/// Builds a keep mask (L_q, L_k) from a graph's edge list: edge (i, j) lets node i
/// attend to node j (GAT, Velickovic et al. 2018, eq. 3 "masked attention").
/// self_loops adds (i, i) for i < min(L_q, L_k). Throws for an out-of-range edge.
inline KeepMask adjacency_mask(Eigen::Index L_q, Eigen::Index L_k,
                               const std::vector<std::pair<Eigen::Index, Eigen::Index>>& edges,
                               bool self_loops) {
  detail::require(L_q >= 0 && L_k >= 0, "adjacency_mask: L_q and L_k must be >= 0, got (L_q, L_k) = " +
                                           detail::shape_str(L_q, L_k));
  KeepMask keep = KeepMask::Constant(L_q, L_k, false);
  for (const auto& [i, j] : edges) {
    detail::require(i >= 0 && i < L_q && j >= 0 && j < L_k,
                    "edges: edge (" + std::to_string(i) + ", " + std::to_string(j) +
                        ") is outside (L_q, L_k) = " + detail::shape_str(L_q, L_k));
    keep(i, j) = true;
  }
  if (self_loops)
    for (Eigen::Index i = 0; i < std::min(L_q, L_k); ++i) keep(i, i) = true;
  return keep;
}

namespace detail {

/// Checks a BiasSpec against (L_q, L_k).
template <class T>
void validate_bias(const BiasSpec<T>& b, Eigen::Index L_q, Eigen::Index L_k) {
  if (b.softcap) {
    require_positive(*b.softcap, "bias.softcap");
    require(T(*b.softcap) > T(0) && std::isfinite(double(T(*b.softcap))),
            "bias.softcap " + num(*b.softcap) + " is not representable (rounds to 0 or inf) in this precision");
  }
  if (b.alibi_slope)
    require(std::isfinite(*b.alibi_slope) && *b.alibi_slope >= 0 &&
                std::isfinite(double(T(*b.alibi_slope))),
            "bias.alibi_slope must be finite and >= 0 in this precision, got " + num(*b.alibi_slope));
  if (b.relative.size()) {
    require(b.relative.size() % 2 == 1,
            "bias.relative must have odd length 2R+1, got " + std::to_string(b.relative.size()));
    require_finite(b.relative, "bias.relative");
  }
  if (b.t5) {
    validate_t5(*b.t5, "bias.t5");
    require(b.t5_table.size() == b.t5->num_buckets,
            "bias.t5_table must have num_buckets = " + std::to_string(b.t5->num_buckets) + " entries, got " +
                std::to_string(b.t5_table.size()));
    require_finite(b.t5_table, "bias.t5_table");
  } else {
    require(b.t5_table.size() == 0, "bias.t5_table is set but bias.t5 (the bucketing) is not");
  }
  if (b.dense.size()) {
    require_shape(b.dense, L_q, L_k, "bias.dense (L_q x L_k)");
    bool only01 = true;
    for (Eigen::Index i = 0; i < b.dense.size(); ++i) {
      const double x = b.dense.data()[i];
      if (std::isnan(x) || x == std::numeric_limits<double>::infinity())
        fail("bias.dense must not contain NaN or +inf, got " + num(x) + " at flat index " +
             std::to_string(i));
      only01 = only01 && (x == 0 || x == 1);
    }
    // A 0/1 keep matrix passed as an additive bias silently unmasks (fault case B07,
    // tests/data/fault_cases.json).
    require(!only01 || b.dense.isZero(),
            "bias.dense holds only 0 and 1: it is added to the scores, it does not mask; pass a "
            "keep mask (mask.keep, true = may attend) instead");
  }
}

}  // namespace detail

/// The (L_q, L_k) T5 bucket of every pair with diagonal offset o (for display and tests).
/// Throws std::invalid_argument for num_buckets < 2, max_distance < 1, or a negative L_q or L_k.
inline Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> t5_bucket_matrix(
    const T5Buckets& b, Eigen::Index L_q, Eigen::Index L_k, Eigen::Index offset) {
  detail::validate_t5(b, "t5");
  detail::require(L_q >= 0, "t5_bucket_matrix: L_q must be >= 0, got " + std::to_string(L_q));
  detail::require(L_k >= 0, "t5_bucket_matrix: L_k must be >= 0, got " + std::to_string(L_k));
  Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(L_q, L_k);
  for (Eigen::Index i = 0; i < L_q; ++i)
    for (Eigen::Index j = 0; j < L_k; ++j) out(i, j) = b.bucket(j - (i + offset));
  return out;
}

/// The modifiers of `b` (validated by detail::validate_bias) as the pipeline's POD functor
/// (pipeline/mods.hpp) for a call with this scale and temperature and the mask's diagonal
/// offset. Points into b.relative, b.t5_table and b.dense: keep b alive while it is used.
template <class T>
pipeline::ScoreMods<T> score_mods(const BiasSpec<T>& b, double scale, double temperature, int offset) {
  pipeline::ScoreMods<T> s;
  s.scale = T(scale);
  s.inv_tau = T(1.0 / temperature);
  s.scale_tau = s.scale * s.inv_tau;
  s.softcap = b.softcap.has_value();
  if (s.softcap) s.cap = T(*b.softcap);
  s.alibi = b.alibi_slope.has_value();
  if (s.alibi) s.slope = T(*b.alibi_slope);
  s.offset = offset;
  if (b.relative.size()) {
    s.relative = b.relative.data();
    s.R = int(b.relative.size() / 2);
  }
  if (b.t5) {
    s.t5 = b.t5_table.data();
    s.buckets = *b.t5;
  }
  if (b.dense.size()) {
    s.dense = b.dense.data();
    s.ld = b.dense.cols();
  }
  return s;
}

}  // namespace qkscope
