// qkscope/cpu/additive_pack.hpp — the fused additive form's packet arithmetic (cpu/additive.hpp):
// tanh(a + b) = 1 - 2 / (p + 1) with p = e^{2a} e^{2b}, and 1 - tanh^2 = (p r) r, in Eigen
// packets of T; for the small units, tanh(a + b) itself (the header comment of cpu/additive.hpp
// has the error analysis).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>

namespace qkscope::cpu::detail {

namespace ei = Eigen::internal;

/// Packets of T, and how many rows a micro-kernel keeps in registers.
template <class T>
struct AddPack {
  using P = typename ei::packet_traits<T>::type;
  static constexpr int size = ei::unpacket_traits<P>::size;
  static constexpr int rows = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS >= 32 ? 4 : 2;
  static constexpr int cols = size > 1 ? 4 : 1;  // packets of keys (forward), of h (backward)
  /// -tanh(a + b) / 2 for a = e^{2a}, e = e^{2b}, p = a e and q = 1 / (p + 1): q - 1/2 where
  /// p >= 1 (t >= 0, q <= 1/2 keeps its relative accuracy), 1/2 - p q below (t < 0, p q =
  /// (1 + t) / 2 <= 1/2 keeps its own). q - 1/2 alone left t near -1 with q's rounding, ~2 ulp
  /// of t (max 3 against the direct tanh's 0.55: native/bench/NOTES.md, "mirrored about 0").
  /// Kept in (-1/2, 1/2) so that sums of v_h times it do not cancel; scaling by -2 is exact.
  /// A product past the range gives q = 0, -1/2 (t = 1); one below it p q = 0, 1/2 (t = -1).
  static P half_neg_tanh(const P& a, const P& e) {
    const P one = ei::pset1<P>(T(1)), half = ei::pset1<P>(T(0.5));
    const P p = ei::pmul(a, e), q = ei::pdiv(one, ei::padd(p, one));
    return ei::pselect(ei::pcmp_lt(p, one), ei::psub(half, ei::pmul(p, q)), ei::psub(q, half));
  }
  /// The same for one value (lane 0 of a packet: the scalar remainders give the packets' bits).
  static T half_neg_tanh_scalar(T a, T e) { return ei::pfirst(half_neg_tanh(ei::pset1<P>(a), ei::pset1<P>(e))); }
  /// tanh(a + b) from the exponentials (tests, and the scalar remainders).
  static P tanh_of(const P& a, const P& e) { return ei::pmul(ei::pset1<P>(T(-2)), half_neg_tanh(a, e)); }
  /// p = e^{2a} e^{2b} capped at max(T) / 4, so that p + 1 and p r stay finite.
  static P capped(const P& p) { return ei::pmin(p, ei::pset1<P>(std::numeric_limits<T>::max() / 4)); }
  /// r = 2 / (p + 1) = 1 - tanh(a + b), for a capped p.
  static P r_of(const P& p) { return ei::pdiv(ei::pset1<P>(T(2)), ei::padd(p, ei::pset1<P>(T(1)))); }
  /// 1 - tanh^2(a + b) = (p r) r for a capped p and its r (the header's comment).
  static P sech2(const P& p, const P& r) { return ei::pmul(ei::pmul(p, r), r); }
  /// tanh(a + b) from p, r and q = p r = 1 + t: 1 - r where p >= 1, q - 1 below, so that t near
  /// -1 keeps its digits as near +1 (half_neg_tanh says why).
  static P tanh_pr(const P& p, const P& r, const P& q) {
    const P one = ei::pset1<P>(T(1));
    return ei::pselect(ei::pcmp_lt(p, one), ei::psub(q, one), ei::psub(one, r));
  }
  static T sech2_scalar(T p) {
    p = std::min(p, std::numeric_limits<T>::max() / 4);
    const T r = T(2) / (p + T(1));
    return (p * r) * r;
  }
  /// tanh of a packet: Eigen's vectorised tanh where it has one (float), else per lane. Not
  /// inlined: small units only, and one copy instead of one per micro-kernel shape keeps the
  /// lazily loaded wasm module ~KB smaller.
  EIGEN_DONT_INLINE static P tanh_packet(const P& x) {
    if constexpr (bool(ei::packet_traits<T>::HasTanh)) {
      return ei::ptanh(x);
    } else {
      T b[size];
      ei::pstoreu(b, x);
      for (T& y : b) y = std::tanh(y);
      return ei::ploadu<P>(b);
    }
  }
  /// The same tanh for one value (lane 0 of a packet): a small unit's scalar remainders give
  /// what its packets give, so tied keys stay tied across the two (std::tanh differed by an
  /// ulp and broke a tie: db 4.8e-4 where it is 0, review).
  static T tanh_scalar(T x) { return ei::pfirst(tanh_packet(ei::pset1<P>(x))); }
  /// A small unit's -tanh(a + b) / 2 from a and b themselves (cpu/additive.hpp): the core's
  /// direct tanh, accurate relative to |a + b| where the exp form's error is absolute.
  static P half_neg_tanh_direct(const P& a, const P& b) {
    return ei::pmul(ei::pset1<P>(T(-0.5)), tanh_packet(ei::padd(a, b)));
  }
  /// u = 1 - tanh^2(a + b) and t = tanh(a + b) from (a, e): e^{2a}, e^{2b} (exp-form lanes) or,
  /// where `mask` is set, a and b themselves (a small unit: t = tanh(a + b) directly, u = 1 - t^2,
  /// with |t| <= tanh 1 so u >= 0.42). A lane's other form may be inf or NaN; the select drops it.
  static void sech2_tanh(const P& a, const P& e, const P* mask, P& u, P& t) {
    const P one = ei::pset1<P>(T(1));
    const P p = capped(ei::pmul(a, e)), r = r_of(p), q = ei::pmul(p, r);
    u = ei::pmul(q, r);
    t = tanh_pr(p, r, q);
    if (!mask) return;
    const P td = tanh_packet(ei::padd(a, e));
    u = ei::pselect(*mask, ei::psub(one, ei::pmul(td, td)), u);
    t = ei::pselect(*mask, td, t);
  }
  /// sech2_tanh for one lane (the same operations, so the same bits); small: a small unit's
  /// lane. c (optional): 1 - |t| accurate relative to itself (score/tanh_difference.hpp): r where
  /// t >= 0 (r <= 1), p r = 1 + t below; 1 - |t| on a small unit's lane (|t| <= tanh 1).
  static void sech2_tanh_scalar(T a, T e, bool small, T& u, T& t, T* c = nullptr) {
    if (small) {
      t = tanh_scalar(a + e);
      u = T(1) - t * t;
      if (c) *c = T(1) - std::abs(t);
      return;
    }
    const T p = std::min(a * e, std::numeric_limits<T>::max() / 4), r = T(2) / (p + T(1)), q = p * r;
    u = q * r;
    t = p < T(1) ? q - T(1) : T(1) - r;
    if (c) *c = r <= T(1) ? r : q;
  }
};


}  // namespace qkscope::cpu::detail
