// qkscope/score/tied_keys.hpp — the query gradient of the dot family where keys tie,
// dQs_i = sum_j dS_ij k_j (dot and scaled dot; cosine's normalised keys; bilinear before W^T),
// shared by the core's backward (dS_times_keys) and the tiled one (cpu/scorers.hpp,
// DotScorer::tied_rows): both take each row's reference here; the core forms the sums over
// whole rows in scalar loops (wasm size), the tiled path by GEMM per distinct reference over a
// query tile's key blocks.
// Why: the float or double dS of a row sum to 0 only in exact arithmetic (softmax is
// shift-invariant), so over keys that tie their residue, about eps sum_j |dS_ij|, is
// multiplied by the tied key: a query at 0 over three keys tied at 9.7e24 with dS of 1e37 got
// dQ 1.1e46 in the double core where it is exactly 0 (fuzzer finding, 2026-12-05). Such a row
// takes as its reference k_ref the tied group carrying most of its sum |dS| and forms each
// entry also as the split sum_j dS_ij (k_jc - k_ref,c) + k_ref,c R_i, where the reference
// group's own terms are exactly 0, keeping per entry whichever of the two sums has the smaller
// rounding bound (sum_j |dS_ij| |k_jc| against sum_j |dS_ij| |k_jc - k_ref,c|). Only rows whose
// exact sum R_i of dS is 0 split (R_i: detail::row_sums_of_grad_raw in the core, the row sums
// in double of flash_backward.hpp), and only where the float dS add up to it within their own
// rounding (split_check.hpp). cpu/scorers.hpp's DotScorer says why per entry and per row.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "qkscope/score/split_check.hpp"
#include "qkscope/types.hpp"

namespace qkscope::score {

/// Groups of tied keys: group[j] = the lowest index of the keys equal to key j
/// where at least two keys are equal, else -1; empty where no key ties. Keys with a non-finite
/// entry are never in a group, nor are zero keys unless zero_ties: where the plain sum runs over
/// K itself, both sums are then the same; where it runs over shifted keys (negative squared
/// Euclidean's centred keys, dS_times_keys' plain_keys), zero keys are not zero there, and keys
/// tied at 0 beside a far key kept the centred sum: every visible key at 0 gave a float dQ of
/// 327.75 where it is exactly 0 (|q| ~ 1e3, dO ~ 1e6; the r qc term of a row that did not split).
/// Keys are hashed into an open-addressed table, O(L_k d) expected: every 64-bit word goes
/// through splitmix64's finaliser first, since a plain FNV-style fold left keys that differ
/// only in sign (entries +-1) in neighbouring slots and the probing quadratic (4096 keys:
/// 105-188 ms; review). -0 hashes as 0, since -0 == 0 ties as well. Scalar loops: wasm size.
template <class T>
EIGEN_DONT_INLINE std::vector<Eigen::Index> tied_groups(const Mat<T>& K, bool zero_ties = false) {
  const Eigen::Index n = K.rows(), d = K.cols();
  const std::size_t slots = 2 * std::size_t(n) + 1;
  std::vector<Eigen::Index> table(slots, -1), group(std::size_t(n), -1);
  bool any = false;
  for (Eigen::Index j = 0; j < n; ++j) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull;
    bool finite = true, nonzero = false;
    for (Eigen::Index c = 0; c < d; ++c) {
      const double x = double(K(j, c));
      if (!std::isfinite(x)) {
        finite = false;
        break;
      }
      nonzero = nonzero || x != 0;
      std::uint64_t w;
      const double y = x == 0 ? 0.0 : x;
      std::memcpy(&w, &y, sizeof w);
      w ^= w >> 30, w *= 0xBF58476D1CE4E5B9ull, w ^= w >> 27, w *= 0x94D049BB133111EBull, w ^= w >> 31;
      h = (h ^ w) * 0x100000001B3ull;
    }
    if (!finite || (!nonzero && !zero_ties)) continue;
    for (std::size_t s = std::size_t(h % slots);; s = (s + 1) % slots) {
      const Eigen::Index k = table[s];
      if (k < 0) {
        table[s] = j;
        break;
      }
      bool same = true;
      for (Eigen::Index c = 0; c < d && same; ++c) same = K(k, c) == K(j, c);
      if (same) {
        group[std::size_t(k)] = group[std::size_t(j)] = k;
        any = true;
        break;
      }
    }
  }
  if (!any) group.clear();
  return group;
}

/// The reference group of one row of dS (dS_row[j], j in `keys`) for the split
/// above: the tied group whose members carry the largest sum |dS_ij| (ties: the lowest index),
/// or -1 where the row may not split: R != 0 (the row's exact sum of dS), its float dS do not
/// add up to R within their rounding (split_consistent, with n keys: the dominant key of a row
/// with P = 1.0f can have dS rounded to 0 beside keys of P ~ 1e-16 whose dS are not, and the
/// split then gave dQ 0 where it is -2.8e19: fuzzer finding), or no tied key has dS.
/// `weight` is scratch of at least L_k zeros, left zero. Scalar loops: wasm size.
template <class T>
EIGEN_DONT_INLINE Eigen::Index tied_reference(const T* dS_row, const KeyBlocks& keys,
                                              const std::vector<Eigen::Index>& group, std::vector<double>& weight,
                                              double R, Eigen::Index n) {
  T sum = 0, abs_sum = 0;
  keys.each([&](Eigen::Index j) {
    sum += dS_row[j];
    abs_sum += std::abs(dS_row[j]);
    if (group[std::size_t(j)] >= 0) weight[std::size_t(group[std::size_t(j)])] += std::abs(double(dS_row[j]));
  });
  Eigen::Index best = -1;
  double best_weight = 0;
  keys.each([&](Eigen::Index j) {
    const Eigen::Index g = group[std::size_t(j)];
    if (g < 0) return;
    const double w = weight[std::size_t(g)];
    weight[std::size_t(g)] = 0;  // read once per row (a group's later keys see 0)
    if (w > best_weight || (w == best_weight && best >= 0 && g < best)) best = g, best_weight = w;
  });
  return R == 0 && split_consistent(sum, abs_sum, R, n) ? best : -1;
}

/// Per key, its largest |entry| (the keys the plain sum runs over), or inf where one is not
/// finite: lossy_row_reference's bound. O(L_k d).
template <class T>
EIGEN_DONT_INLINE std::vector<double> key_magnitudes(const Mat<T>& K) {
  std::vector<double> m(std::size_t(K.rows()), 0.0);
  for (Eigen::Index j = 0; j < K.rows(); ++j)
    for (Eigen::Index c = 0; c < K.cols(); ++c) {
      const double x = std::abs(double(K(j, c)));
      m[std::size_t(j)] = std::isfinite(x) ? std::max(m[std::size_t(j)], x) : std::numeric_limits<double>::infinity();
    }
  return m;
}

/// The key a row of dS K may split about where no tied group carries it, or -1 (the double
/// core only: dS_times_keys). R_i = 0 makes sum_j dS_ij k_j = sum_j dS_ij (k_j - c) for any
/// centre c; about 0 (or neg_sq's mean key) a row whose keys sit together far from that centre
/// keeps eps |dS| |k| of error where its terms' differences are exact: one query at 0.01 over
/// keys 5.4e-22 and -1.1e-24 with dS of +-3.04e17 got dQ 0 from the double core's centred keys
/// (mean 3.3e-3 over every key, which rounds the keys' offsets away) where it is 3.3e-4, the
/// tiled path's (its centred keys tie in float, and its tied split takes differences of the keys
/// as given: fuzzer, 2026-12-06). Only rows whose plain sum keeps fewer than 34 bits (the neg_sq
/// retake's rule in double), eps sum_j |dS_ij| kmax_j above 2^-34 of the row's largest |out_row|
/// entry (d entries), with every key of nonzero dS finite and the dS adding up to R = 0
/// (split_consistent over the row's L_k keys); the reference is the row's largest-|dS| key (the
/// lowest index on a tie). O(L_k + d).
template <class T>
EIGEN_DONT_INLINE Eigen::Index lossy_row_reference(const T* dS_row, Eigen::Index L_k, const T* out_row, Eigen::Index d,
                                                   const std::vector<double>& kmax, double R) {
  if (R != 0) return -1;
  T sum = 0, abs_sum = 0;
  double bound = 0, best_w = 0;
  Eigen::Index best = -1;
  for (Eigen::Index j = 0; j < L_k; ++j) {
    const T w = dS_row[j];
    if (w == T(0)) continue;
    const double a = std::abs(double(w));
    if (!std::isfinite(kmax[std::size_t(j)]) || !std::isfinite(a)) return -1;
    sum += w;
    abs_sum += std::abs(w);
    bound += a * kmax[std::size_t(j)];
    if (a > best_w) best_w = a, best = j;
  }
  double largest = 0;
  for (Eigen::Index c = 0; c < d; ++c) largest = std::max(largest, std::abs(double(out_row[c])));
  const double eps = std::numeric_limits<T>::epsilon();
  if (best < 0 || eps * bound <= 0x1p-34 * largest || !split_consistent(sum, abs_sum, R, L_k)) return -1;
  return best;
}

/// dS K, (L_q, d), for the core's backward of the dot family, with each row whose keys tie
/// formed as above (R: each row's exact sum of dS). K is the key side as the scores use it
/// (cosine: the normalised keys). Throws nothing. Without ties: the GEMM and an O(L_k d) hash;
/// with them, O(L_k d) per row that splits.
/// Not inlined (nor are the two above): one copy per T in the wasm modules.
/// plain_keys, when given, are K shifted by a constant row (negative squared Euclidean's
/// centred keys): the plain sum is then dS plain_keys (equal to dS K where R_i = 0) with its
/// bound, while the ties and the split's differences come from K as given, since a shift can
/// round a key's small offset away and tie keys that are not equal (dQ -1.43e-9 where it is
/// 9.764e-6: fuzzer finding, cpu/scorers.hpp). split_mask, when given, gets 1 for each entry that
/// took the split, else 0 ((L_q, d) row-major).
template <class T>
EIGEN_DONT_INLINE Mat<T> dS_times_keys(const Mat<T>& dS, const Mat<T>& K, const Eigen::VectorXd& R,
                                       const Mat<T>* plain_keys = nullptr, std::vector<char>* split_mask = nullptr) {
  const Mat<T>& Kp = plain_keys ? *plain_keys : K;
  Mat<T> out = dS * Kp;
  if (split_mask) split_mask->assign(std::size_t(dS.rows() * K.cols()), 0);
  const std::vector<Eigen::Index> group = tied_groups(K, plain_keys != nullptr);
  // In double (the fuzz harness's reference for gradients), a row without a tied group may
  // also split, about its largest-|dS| key (lossy_row_reference): the float core and the core
  // wasm module are unchanged.
  constexpr bool any_key = std::is_same_v<T, double>;
  if (group.empty() && !any_key) return out;
  const Eigen::Index L_q = dS.rows(), L_k = K.rows();
  const Eigen::Index zero = 0;
  const KeyBlocks all{&zero, 1, L_k, L_k};
  std::vector<double> weight(std::size_t(L_k), 0.0);
  std::vector<Eigen::Index> ref(std::size_t(L_q), -1);
  if (!group.empty())
    for (Eigen::Index i = 0; i < L_q; ++i)
      ref[std::size_t(i)] = tied_reference(dS.data() + i * L_k, all, group, weight, R(i), L_k);  // row-major
  if constexpr (any_key) {
    const std::vector<double> kmax = key_magnitudes(Kp);  // Kp is K shifted: finite together
    for (Eigen::Index i = 0; i < L_q; ++i)
      if (ref[std::size_t(i)] < 0)
        ref[std::size_t(i)] = lossy_row_reference(dS.data() + i * L_k, L_k, out.data() + i * out.cols(), out.cols(),
                                                  kmax, R(i));
  }
  // Per row with a reference: the split sum_j dS_ij (k_jc - k_ref,c) (the reference group's
  // terms exactly 0) and both bounds, sum_j |dS_ij| |kp_jc| and sum_j |dS_ij| |k_jc - k_ref,c|;
  // per entry the sum of the smaller bound, the split on a tie: where every key is the same and
  // the plain form's keys are 0 there (neg_sq's centred keys), both bounds are 0 and only the
  // split drops the row's r qc term (float dQ 312.875 where it is 0). Scalar loops, keys outer and entries inner: the
  // tiled scorer's GEMMs per reference took 1.8 KB more of the tutorial's wasm budget
  // (native/bench/NOTES.md); this form costs every-key-tied calls about one more scalar
  // (L_q, L_k, d) product, and random keys nothing.
  const Eigen::Index d = K.cols();
  std::vector<double> acc(std::size_t(3 * d));  // per entry: the split (a T, held exactly), both bounds
  for (Eigen::Index i = 0; i < L_q; ++i) {
    const Eigen::Index g = ref[std::size_t(i)];
    if (g < 0) continue;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (Eigen::Index j = 0; j < L_k; ++j) {
      const T w = dS(i, j);
      if (w == T(0)) continue;
      const double a = std::abs(double(w));
      for (Eigen::Index c = 0; c < d; ++c) {
        const T diff = K(j, c) - K(g, c);
        double* e = &acc[std::size_t(3 * c)];
        e[0] = double(T(e[0]) + w * diff);
        e[1] += a * std::abs(double(Kp(j, c)));
        e[2] += a * std::abs(double(diff));
      }
    }
    for (Eigen::Index c = 0; c < d; ++c)
      if (const double* e = &acc[std::size_t(3 * c)]; e[2] <= e[1]) {
        out(i, c) = T(e[0]);
        if (split_mask) (*split_mask)[std::size_t(i * d + c)] = 1;
      }
  }
  return out;
}

}  // namespace qkscope::score
