// wasm/src/api_positions.hpp — T5's bucketed relative positions (qkscope/bias/t5_buckets.hpp)
// for the full module: the bucket of every (query, key) pair, for display. The bias itself is
// a forward() option. Same conventions as api.hpp: plain JS values, errors via guarded().
#pragma once

#include "api.hpp"
#include "qkscope/bias/bias.hpp"

namespace qkscope::wasm {
namespace {

const char* const kT5Keys[] = {"queries", "keys", "numBuckets", "maxDistance", "bidirectional", "causalAlignment"};

/// T5Buckets from {numBuckets, maxDistance, bidirectional} (T5's defaults 32, 128, true).
T5Buckets read_t5(const val& o) {
  T5Buckets b;
  if (!absent(o["numBuckets"])) b.num_buckets = int(integer(o["numBuckets"], "numBuckets", -kMaxIndex, kMaxIndex));
  if (!absent(o["maxDistance"])) b.max_distance = int(integer(o["maxDistance"], "maxDistance", -kMaxIndex, kMaxIndex));
  if (!absent(o["bidirectional"])) b.bidirectional = boolean(o["bidirectional"], "bidirectional");
  return b;
}

val js_t5_buckets(val opts) {
  return guarded("t5Buckets", [&] {
    if (!is_object(opts) || opts.isArray())
      fail("options must be an object {queries, keys, numBuckets, maxDistance, bidirectional}, got " + describe(opts));
    reject_unknown_keys(opts, "options", kT5Keys);
    const Eigen::Index L_q = integer(opts["queries"], "queries", 0, 1 << 12);
    const Eigen::Index L_k = absent(opts["keys"]) ? L_q : integer(opts["keys"], "keys", 0, 1 << 12);
    const T5Buckets b = read_t5(opts);
    Eigen::Index offset = 0;
    if (const val a = opts["causalAlignment"]; !absent(a)) {
      const std::string s = string(a, "causalAlignment");
      if (s == "bottom_right") offset = L_k - L_q;
      else if (s != "top_left") fail("causalAlignment must be 'top_left' or 'bottom_right', got '" + s + "'");
    }
    return to_js(Matrix(t5_bucket_matrix(b, L_q, L_k, offset).cast<float>()));
  });
}

}  // namespace
}  // namespace qkscope::wasm
