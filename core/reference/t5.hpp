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
  return base + std::min(n - 1, exact + int(std::floor(frac * (n - exact))));
}

}  // namespace qkscope::reference
