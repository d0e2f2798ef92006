// qkscope/detail/rng.hpp — a tiny seeded generator with the same output on every
// platform. Why: std::normal_distribution differs between libstdc++ (native) and
// libc++ (Emscripten), and the tutorial must show the same parameters as the
// native benchmark for the same seed.
#pragma once

#include <cmath>
#include <cstdint>

namespace qkscope::detail {

/// Gumbel noise g = -log(E) from an Exp(1) draw E, with E clamped below at FLT_MIN
/// (2^-126): an E that is 0 (or rounded to 0 in a narrow type) would give g = +inf and a
/// softmax of inf - inf. E = 0 then acts as its limit, a one-hot at that key
/// (the E = 0 draws reported for CPU and XLA samplers, docs/RELIABILITY.md).
inline double gumbel_from_exponential(double E) {
  constexpr double kMinE = 0x1.0p-126;
  return -std::log(E > kMinE ? E : kMinE);
}

/// SplitMix64 (Steele, Lea & Flood 2014) with Box-Muller normals.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in the open interval (0, 1): never exactly 0 or 1, so log(u) and log(-log u)
  /// are finite. (k + 0.5) 2^-53 for k = 2^53 - 1 is 1 - 2^-54, which rounds to exactly 1.0
  /// (a tie, to even); clamping to the largest double below 1 keeps every other draw as is.
  double uniform() {
    const double u = (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53;
    return u < 1.0 ? u : 0x1.fffffffffffffp-1;
  }
  /// Standard normal via Box-Muller (one of the pair; simplicity over speed).
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Standard Gumbel(0, 1): -log(-log U) (Gumbel 1954; used by Jang et al. 2017), in
  /// [-3.6, 36.8] for every draw (finite in float, bfloat16 and half).
  double gumbel() { return gumbel_from_exponential(-std::log(uniform())); }

 private:
  std::uint64_t state_;
};

}  // namespace qkscope::detail
