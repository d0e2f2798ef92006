// wasm/src/api_positions.hpp — T5's bucketed relative positions (qkscope/bias/t5_buckets.hpp)
// for the full module: the bucket of every (query, key) pair, for display. The bias itself is
// a forward() option. Same conventions as api.hpp: plain JS values, errors via guarded().
#pragma once

#include "api.hpp"
#include "qkscope/bias/bias.hpp"

namespace qkscope::wasm {
namespace {

const char* const kT5Keys[] = {"queries", "keys", "numBuckets", "maxDistance", "bidirectional", "causalAlignment"};

val js_t5_buckets(val opts) {
  return guarded("t5Buckets", [&] {
    if (!is_object(opts) || opts.isArray())
      fail("options must be an object {queries, keys, numBuckets, maxDistance, bidirectional}, got " + describe(opts));
    reject_unknown_keys(opts, "options", kT5Keys);
    const Eigen::Index L_q = integer(opts["queries"], "queries", 0, 1 << 12);
    const Eigen::Index L_k = absent(opts["keys"]) ? L_q : integer(opts["keys"], "keys", 0, 1 << 12);
    T5Buckets b;  // T5's defaults 32, 128, true
    read_fields(opts, b);
    const bool bottom_right = read_alignment(opts["causalAlignment"]) == CausalAlignment::bottom_right;
    const Eigen::Index offset = bottom_right ? L_k - L_q : 0;
    return to_js(Matrix(t5_bucket_matrix(b, L_q, L_k, offset).cast<float>()));
  });
}

}  // namespace
}  // namespace qkscope::wasm
