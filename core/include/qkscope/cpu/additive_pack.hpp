// qkscope/cpu/additive_pack.hpp — the fused additive form's packet arithmetic (cpu/additive.hpp):
// tanh(a + b) = 1 - 2 / (p + 1) with p = e^{2a} e^{2b}, and 1 - tanh^2 = (p r) r, in Eigen
// packets of T (the header comment of cpu/additive.hpp has the error analysis).
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
};


}  // namespace qkscope::cpu::detail
