// qkscope/cpu/additive_pack.hpp — the fused additive form's packet arithmetic (cpu/additive.hpp):
// tanh(a + b) = 1 - 2 / (p + 1) with p = e^{2a} e^{2b}, and 1 - tanh^2 = (p r) r, in Eigen
// packets of T; for the small units, the addition formula tanh(a + b) = (ta + tb) / (1 + ta tb)
// from ta = tanh a, tb = tanh b (the header comment of cpu/additive.hpp has the error analysis).
#pragma once

#include <algorithm>
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
  /// -tanh(a + b) / 2 = 1 / (p + 1) - 1/2 for a = e^{2a}, e = e^{2b}, p = a e. Kept in
  /// (-1/2, 1/2) so that sums of v_h times it do not cancel; scaling by -2 is exact.
  static P half_neg_tanh(const P& a, const P& e) {
    const P one = ei::pset1<P>(T(1));
    return ei::psub(ei::pdiv(one, ei::pmadd(a, e, one)), ei::pset1<P>(T(0.5)));
  }
  /// tanh(a + b) from the exponentials (tests, and the scalar remainders).
  static P tanh_of(const P& a, const P& e) { return ei::pmul(ei::pset1<P>(T(-2)), half_neg_tanh(a, e)); }
  /// p = e^{2a} e^{2b} capped at max(T) / 4, so that p + 1 and p r stay finite.
  static P capped(const P& p) { return ei::pmin(p, ei::pset1<P>(std::numeric_limits<T>::max() / 4)); }
  /// r = 2 / (p + 1) = 1 - tanh(a + b), for a capped p.
  static P r_of(const P& p) { return ei::pdiv(ei::pset1<P>(T(2)), ei::padd(p, ei::pset1<P>(T(1)))); }
  /// 1 - tanh^2(a + b) = (p r) r for a capped p and its r (the header's comment).
  static P sech2(const P& p, const P& r) { return ei::pmul(ei::pmul(p, r), r); }
  static T sech2_scalar(T p) {
    p = std::min(p, std::numeric_limits<T>::max() / 4);
    const T r = T(2) / (p + T(1));
    return (p * r) * r;
  }
  /// The addition form's -tanh(a + b) / 2 = -(ta + tb) / (2 (1 + ta tb)), for ta = tanh a,
  /// tb = tanh b of a small unit (|ta|, |tb| <= tanh(1/2), so 1 + ta tb >= 0.78).
  static P half_neg_tanh_sum(const P& ta, const P& tb) {
    return ei::pdiv(ei::pmul(ei::pset1<P>(T(-0.5)), ei::padd(ta, tb)), ei::pmadd(ta, tb, ei::pset1<P>(T(1))));
  }
  /// u = 1 - tanh^2(a + b) and t = tanh(a + b) from (a, e): e^{2a}, e^{2b} (fused lanes) or,
  /// where `mask` is set, tanh a, tanh b (the addition form: u = (1 - ta^2)(1 - tb^2) q^2,
  /// t = (ta + tb) q with q = 1 / (1 + ta tb); each factor keeps a few ulp of relative error).
  /// A lane's other form may be inf or NaN; the select drops it.
  static void sech2_tanh(const P& a, const P& e, const P* mask, P& u, P& t) {
    const P one = ei::pset1<P>(T(1));
    const P p = capped(ei::pmul(a, e)), r = r_of(p);
    u = sech2(p, r);
    t = ei::psub(one, r);
    if (!mask) return;
    const P q = ei::pdiv(one, ei::pmadd(a, e, one));
    const P ux = ei::pmul(ei::pmul(ei::psub(one, ei::pmul(a, a)), ei::psub(one, ei::pmul(e, e))), ei::pmul(q, q));
    u = ei::pselect(*mask, ux, u);
    t = ei::pselect(*mask, ei::pmul(ei::padd(a, e), q), t);
  }
  /// sech2_tanh for one lane; sum: the addition form.
  static void sech2_tanh_scalar(T a, T e, bool sum, T& u, T& t) {
    if (sum) {
      const T q = T(1) / (a * e + T(1));
      u = ((T(1) - a * a) * (T(1) - e * e)) * (q * q);
      t = (a + e) * q;
      return;
    }
    const T p = std::min(a * e, std::numeric_limits<T>::max() / 4), r = T(2) / (p + T(1));
    u = (p * r) * r;
    t = T(1) - r;
  }
};


}  // namespace qkscope::cpu::detail
