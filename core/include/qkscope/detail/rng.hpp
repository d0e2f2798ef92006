// qkscope/detail/rng.hpp — a tiny seeded generator with the same output on every
// platform. Why: std::normal_distribution differs between libstdc++ (native) and
// libc++ (Emscripten), and the tutorial must show the same parameters as the
// native benchmark for the same seed.
#pragma once

#include <cmath>
#include <cstdint>

namespace qkscope::detail {

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
  /// Uniform in the open interval (0, 1): never exactly 0, so log() is finite.
  double uniform() { return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53; }
  /// Standard normal via Box-Muller (one of the pair; simplicity over speed).
  double normal() {
    const double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  /// Standard Gumbel(0, 1): -log(-log U) (Gumbel 1954; used by Jang et al. 2017).
  double gumbel() { return -std::log(-std::log(uniform())); }

 private:
  std::uint64_t state_;
};

}  // namespace qkscope::detail
