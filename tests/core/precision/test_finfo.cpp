// finfo<T>() and round_to<S>() (precision/finfo.hpp): the limits of each storage type and
// rounding once, to nearest even, checked against an exhaustive oracle built from every
// fp16 / bf16 bit pattern.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "qkscope/qkscope.hpp"

using namespace qkscope;
namespace qp = qkscope::precision;
using half = Eigen::half;
using bf16 = Eigen::bfloat16;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Value of a 16-bit pattern, decoded by hand (no Eigen): sign, exponent, fraction.
double decode(std::uint16_t bits, int exp_bits, int frac_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (bits >> frac_bits) & ((1 << exp_bits) - 1);
  const int f = bits & ((1 << frac_bits) - 1);
  const double sign = (bits >> 15) ? -1.0 : 1.0;
  if (e == (1 << exp_bits) - 1) return f ? std::nan("") : sign * kInf;
  if (e == 0) return sign * std::ldexp(double(f), 1 - bias - frac_bits);
  return sign * std::ldexp(double(f | (1 << frac_bits)), e - bias - frac_bits);
}

/// Round-to-nearest-even oracle: the non-negative finite values of the format, in order,
/// with "inf" as the next value after max (its pattern is even, so max + half ulp -> inf).
struct Oracle {
  std::vector<double> values;
  std::vector<std::uint16_t> patterns;
  Oracle(int exp_bits, int frac_bits) {
    const std::uint16_t inf_pattern = std::uint16_t(((1 << exp_bits) - 1) << frac_bits);
    for (std::uint32_t b = 0; b < inf_pattern; ++b) {
      values.push_back(decode(std::uint16_t(b), exp_bits, frac_bits));
      patterns.push_back(std::uint16_t(b));
    }
    const double max = values.back();
    values.push_back(max + (max - values[values.size() - 2]));  // stands for inf
    patterns.push_back(inf_pattern);
  }
  double round(double x) const {
    const double a = std::abs(x);
    auto it = std::lower_bound(values.begin(), values.end(), a);
    double r;
    if (it == values.end()) r = kInf;
    else if (*it == a || it == values.begin()) r = *it;
    else {
      const std::size_t hi = std::size_t(it - values.begin()), lo = hi - 1;
      const double dlo = a - values[lo], dhi = values[hi] - a;
      const std::size_t pick = dlo < dhi ? lo : dhi < dlo ? hi : (patterns[lo] % 2 == 0 ? lo : hi);
      r = values[pick];
    }
    if (r == values.back()) r = kInf;
    return std::signbit(x) ? -r : r;
  }
};

}  // namespace

TEST_CASE("finfo<T>() gives min, max, eps, tiny, denorm_min and the overflow half-ulp of each type",
          "[precision][finfo]") {
  const auto h = qp::finfo<half>();
  CHECK(h.min == -65504.0);
  CHECK(h.max == 65504.0);
  CHECK(h.eps == std::ldexp(1.0, -10));
  CHECK(h.tiny == std::ldexp(1.0, -14));
  CHECK(h.denorm_min == std::ldexp(1.0, -24));
  CHECK(h.half_ulp_at_max == 16.0);
  CHECK(h.digits == 11);
  const auto b = qp::finfo<bf16>();
  CHECK(b.max == (2 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  CHECK(b.min == -b.max);
  CHECK(b.min == Approx(-3.389531e38).epsilon(1e-6));
  CHECK(b.eps == std::ldexp(1.0, -7));
  CHECK(b.tiny == std::ldexp(1.0, -126));
  CHECK(b.denorm_min == std::ldexp(1.0, -133));
  CHECK(b.half_ulp_at_max == std::ldexp(1.0, 119));
  const auto f = qp::finfo<float>();
  CHECK(f.min == -double(FLT_MAX));
  CHECK(f.eps == double(FLT_EPSILON));
  CHECK(f.tiny == double(FLT_MIN));
  CHECK(f.half_ulp_at_max == std::ldexp(1.0, 103));
  const auto d = qp::finfo<double>();
  CHECK(d.max == DBL_MAX);
  CHECK(d.eps == DBL_EPSILON);
  CHECK(d.half_ulp_at_max == std::ldexp(1.0, 970));
  CHECK(std::string(h.name) == "float16");
  CHECK(std::string(b.name) == "bfloat16");
}

TEST_CASE("round_to stores the mask constants as the fault cases say", "[precision][finfo]") {
  CHECK(qp::stored_value<half>(-1e9) == -kInf);                          // B03
  CHECK(qp::stored_value<half>(-1e4) == -10000.0);                       // B03
  CHECK(qp::stored_value<half>(-65504.0 - 16) == -kInf);                 // B04: the tie rounds to even
  CHECK(qp::stored_value<half>(-65504.0 - 15) == -65504.0);              // B04
  CHECK(qp::stored_value<bf16>(qp::finfo<float>().min) == -kInf);        // B05
  CHECK(qp::stored_value<bf16>(2 * qp::finfo<bf16>().min) == -kInf);     // B05
  CHECK(qp::stored_value<half>(1 / std::sqrt(2.0)) == 0.70703125);       // B03 fp16 score
  CHECK(qp::stored_value<bf16>(1.731059) == 1.734375);                   // B05 output in bf16
  // Every type: max + half an ulp overflows, a little less does not.
  auto edge = [](auto tag) {
    using S = decltype(tag);
    const auto fi = qp::finfo<S>();
    INFO(fi.name);
    CHECK(qp::stored_value<S>(fi.min - fi.half_ulp_at_max) == -kInf);
    CHECK(qp::stored_value<S>(fi.min - fi.half_ulp_at_max / 2) == fi.min);
    CHECK(qp::classify_cast<S>(fi.min - fi.half_ulp_at_max) == qp::ValueCast::overflow_to_inf);
    CHECK(qp::classify_cast<S>(fi.min) == qp::ValueCast::exact);
    CHECK(qp::classify_cast<S>(fi.denorm_min / 4) == qp::ValueCast::underflow_to_zero);
    CHECK(qp::classify_cast<S>(-kInf) == qp::ValueCast::non_finite);
  };
  edge(half{});
  edge(bf16{});
  edge(float{});
  CHECK(qp::classify_cast<half>(0.1) == qp::ValueCast::rounded);
}

TEST_CASE("PyTorch's fill range check is modelled: finite values beyond finfo raise, inf does not",
          "[precision][finfo]") {
  CHECK(qp::pytorch_raises_on_fill<half>(-1e9));
  CHECK(qp::pytorch_raises_on_fill<half>(-65505.0));
  CHECK_FALSE(qp::pytorch_raises_on_fill<half>(-65504.0));
  CHECK_FALSE(qp::pytorch_raises_on_fill<half>(-1e4));
  CHECK_FALSE(qp::pytorch_raises_on_fill<half>(-kInf));
  CHECK(qp::pytorch_raises_on_fill<bf16>(qp::finfo<float>().min));
  CHECK_FALSE(qp::pytorch_raises_on_fill<bf16>(-1e9));
  CHECK_FALSE(qp::pytorch_raises_on_fill<float>(qp::finfo<float>().min));
}

TEMPLATE_TEST_CASE("round_to rounds once to nearest even, matching an exhaustive oracle; "
                   "no double rounding through float",
                   "[precision][finfo]", Eigen::half, Eigen::bfloat16) {
  using S = TestType;
  const bool is_half = std::is_same_v<S, half>;
  const Oracle oracle(is_half ? 5 : 8, is_half ? 10 : 7);
  const double tiny_step = std::ldexp(1.0, -30);
  std::size_t checked = 0;
  // Each pair of neighbours: the midpoint, just above, just below (relative 2^-30, far
  // below float's resolution, so a float intermediate would round to the midpoint first).
  for (std::size_t k = 0; k + 1 < oracle.values.size(); k += 7) {
    const double lo = oracle.values[k], hi = oracle.values[k + 1], mid = (lo + hi) / 2;
    for (double x : {lo, mid, mid * (1 + tiny_step), mid * (1 - tiny_step), -mid, -mid * (1 + tiny_step)}) {
      const double got = qp::stored_value<S>(x), want = oracle.round(x);
      if (got != want) {
        INFO("x = " << x << ": got " << got << ", oracle " << want);
        CHECK(got == want);
      }
      ++checked;
    }
  }
  CHECK(checked > 20000);
  // The example from the header: 1 + 2^-11 + 2^-40 rounds up in fp16 (float would tie first).
  if (is_half) CHECK(qp::stored_value<half>(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)) == 1 + std::ldexp(1.0, -10));
  // Matrices: to_storage / widen / round_trip agree with the scalar rounding.
  MatrixD M(2, 3);
  M << 0.1, -1e9, 1e-9, 65519.0, -65520.0, 3.14159;
  const MatrixD R = qp::round_trip<S>(M);
  for (Eigen::Index i = 0; i < M.size(); ++i) CHECK(R.data()[i] == oracle.round(M.data()[i]));
}
