// qkscope/bias/t5_buckets.hpp — T5's bucketed relative positions (Raffel et al. 2020, §2.1;
// the reference implementation is Mesh TensorFlow's _relative_position_bucket, reproduced
// by Hugging Face's T5Attention). A relative position r = j - (i + o) (key minus the query's
// aligned diagonal, o as for ALiBi and the causal mask) is mapped to one of num_buckets
// buckets, and the score gets a learned scalar per (head, bucket):  s <- s + table[bucket(r)].
//   bidirectional: half the buckets for r <= 0 and half for r > 0 (offset n = num_buckets / 2);
//   causal (unidirectional): only r <= 0 counts, r > 0 shares bucket 0 (masked anyway).
// Within a half of n buckets, the first n / 2 distances are exact (bucket = |r|), the rest
// logarithmic up to max_distance:
//   bucket = n/2 + floor(log(|r| / (n/2)) / log(max_distance / (n/2)) * (n - n/2)),
// capped at n - 1, so every |r| >= max_distance shares the last bucket. Computed in fp32 in
// the reference's order of operations, so the buckets are those of released T5 checkpoints.
// Degenerate sizes are defined rather than NaN: with n/2 = 0 (num_buckets 2 or 3,
// bidirectional) each side is one bucket; with max_distance <= n/2 every non-exact distance
// goes to the last bucket.
// POD and Eigen-free, like the pipeline functors (pipeline/), so CUDA device code can bucket too.
#pragma once

#include <stdexcept>
#include <string>

#include "qkscope/pipeline/host_device.hpp"

namespace qkscope {

/// Bucketing parameters of a T5 relative position bias.
struct T5Buckets {
  bool bidirectional = true;  // false for causal (decoder) self-attention
  int num_buckets = 32;       // >= 2; T5 uses 32
  int max_distance = 128;     // >= 1; T5 uses 128

  /// The fields above, described as a normalizer's options are (name, member, lower bound,
  /// doc; norm/options.hpp), so bindings read and check them without naming them. Defined
  /// in bias/bias.hpp (host code only).
  static constexpr auto fields();

  /// The bucket of relative position r = j - (i + o), in [0, num_buckets).
  QKSCOPE_HOST_DEVICE int bucket(long long r) const {
    int ret = 0, n = num_buckets;
    if (bidirectional) {
      n /= 2;
      if (r > 0) ret = n;
      r = r < 0 ? -r : r;
    } else {
      r = r < 0 ? -r : 0;
    }
    const int exact = n / 2;
    if (r < exact) return ret + int(r);
    if (exact == 0 || max_distance <= exact) return ret + n - 1;
    // T5's order: log(float(r) / exact) / log(max_distance / exact) * (n - exact), fp32.
    const float l = pipeline::log_(float(r) / float(exact));
    const float span = float(pipeline::log_(double(max_distance) / double(exact)));
    const float x = l / span * float(n - exact);
    const long long large = exact + (long long)(x);  // truncation toward zero, like .to(long)
    return ret + int(large < n - 1 ? large : n - 1);
  }
};

namespace detail {

/// Throws std::invalid_argument naming `name` for num_buckets < 2 or max_distance < 1.
inline void validate_t5(const T5Buckets& b, const std::string& name) {
  if (b.num_buckets < 2)
    throw std::invalid_argument(name + ".num_buckets must be >= 2, got " + std::to_string(b.num_buckets));
  if (b.max_distance < 1)
    throw std::invalid_argument(name + ".max_distance must be >= 1, got " + std::to_string(b.max_distance));
}

}  // namespace detail
}  // namespace qkscope
