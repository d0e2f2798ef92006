// core/reference/t5.hpp — T5's relative position bucket in plain double arithmetic (tests
// only), written from the paper's description (Raffel et al. 2020, §2.1: "each embedding
// corresponds to a range of possible key-query offsets"; the released code's rule: half
// the buckets exact, the rest logarithmically spaced up to max_distance, bidirectional
// halves for encoders, past-only for decoders). Independent of qkscope::T5Buckets, which
// computes in fp32.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace qkscope::reference {

/// Bucket of relative position r = key - query (aligned), in [0, num_buckets).
inline int t5_bucket(long long r, bool bidirectional, int num_buckets, int max_distance) {
  int base = 0, n = num_buckets;
  long long dist;
  if (bidirectional) {
    n = num_buckets / 2;
    base = r > 0 ? n : 0;
    dist = std::llabs(r);
  } else {
    dist = std::max(-r, 0LL);  // the future shares bucket 0
  }
  const int exact = n / 2;
  if (dist < exact) return base + int(dist);
  if (exact == 0 || max_distance <= exact) return base + n - 1;
  const double frac = std::log(double(dist) / exact) / std::log(double(max_distance) / exact);
  // The bucket edges dist = exact (max_distance / exact)^(k / (n - exact)) can be integers
  // (powers of two for num_buckets 9, max_distance 128): there frac * (n - exact) is an integer
  // in real arithmetic, and the two rounded logs may land just below it (3.9999999999999996).
  // A relative nudge of 1e-12 (the logs' error is ~1e-16) puts such a dist where real
  // arithmetic and T5's fp32 code do; checked against Hugging Face's _relative_position_bucket
  // for |r| <= 20000 over 214 configurations (num_buckets 4-320, max_distance 3-100000).
  return base + std::min(n - 1, exact + int(std::floor(frac * (n - exact) * (1 + 1e-12))));
}

}  // namespace qkscope::reference
