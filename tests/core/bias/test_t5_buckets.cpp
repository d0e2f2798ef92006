// T5 bucketed relative positions (bias/t5_buckets.hpp): the bucket function against the
// plain double reference over a wide range of offsets, against values of T5's released
// rule, its structure (exact half, logarithmic half, cap), degenerate sizes, and errors.
#include <catch2/catch.hpp>

#include "qkscope/bias/bias.hpp"
#include "reference/t5.hpp"

using namespace qkscope;

TEST_CASE("T5 buckets match the double reference for every offset up to 20000", "[bias][t5]") {
  for (const int nb : {2, 3, 4, 5, 8, 9, 16, 32, 33, 64, 128})
    for (const int md : {1, 4, 16, 64, 100, 128, 256, 1000, 1024})
      for (const bool bi : {true, false}) {
        const T5Buckets b{bi, nb, md};
        for (long long r = -20000; r <= 20000; ++r) {
          const int got = b.bucket(r), want = reference::t5_bucket(r, bi, nb, md);
          if (got != want) {
            INFO("num_buckets " << nb << ", max_distance " << md << ", bidirectional " << bi << ", r " << r);
            REQUIRE(got == want);
          }
          if (got < 0 || got >= nb) {
            INFO("bucket out of range: " << got);
            REQUIRE(false);
          }
        }
      }
}

TEST_CASE("T5 buckets with T5's sizes (32 buckets, max distance 128) give the released rule's values", "[bias][t5]") {
  // Values of Mesh TensorFlow's / Hugging Face's _relative_position_bucket (relative_position
  // = memory - query), bidirectional encoder and causal decoder.
  const long long r[] = {-200, -128, -127, -64, -20, -8, -7, -1, 0, 1, 7, 8, 9, 15, 16, 20, 50, 100, 127, 128, 1000};
  const int enc[] = {15, 15, 15, 14, 10, 8, 7, 1, 0, 17, 23, 24, 24, 25, 26, 26, 29, 31, 31, 31, 31};
  const int dec[] = {31, 31, 31, 26, 17, 8, 7, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const T5Buckets encoder{true, 32, 128}, decoder{false, 32, 128};
  for (std::size_t n = 0; n < std::size(r); ++n) {
    INFO("r = " << r[n]);
    CHECK(encoder.bucket(r[n]) == enc[n]);
    CHECK(decoder.bucket(r[n]) == dec[n]);
  }
}

TEST_CASE("T5 buckets on edges that are integers (num_buckets 9, max_distance 128) follow T5's fp32 rule",
          "[bias][t5]") {
  // Causal, n = 9, exact = 4: bucket 4 + k starts at 4 * 32^(k/5) = 8, 16, 32, 64, an exact
  // power of two, where log ratios in double can round just below k (the double reference
  // used to put r = -64 in bucket 7). Values of Hugging Face's _relative_position_bucket
  // (transformers' T5Attention) computed with PyTorch 1.13.
  const long long r[] = {-70, -65, -64, -63, -33, -32, -31, -17, -16, -15, -9, -8, -7, -4, -3, 0};
  const int hf[] = {8, 8, 8, 7, 7, 7, 6, 6, 6, 5, 5, 5, 4, 4, 3, 0};
  const T5Buckets b{false, 9, 128};
  for (std::size_t n = 0; n < std::size(r); ++n) {
    INFO("r = " << r[n]);
    CHECK(b.bucket(r[n]) == hf[n]);
    CHECK(reference::t5_bucket(r[n], false, 9, 128) == hf[n]);
  }
}

TEST_CASE("T5 buckets: exact near the diagonal, monotone and logarithmic beyond, capped", "[bias][t5]") {
  const T5Buckets b{false, 32, 128};
  for (long long d = 0; d < 16; ++d) CHECK(b.bucket(-d) == d);  // the exact half
  int prev = 0, changes = 0;
  for (long long d = 16; d <= 4096; ++d) {
    const int k = b.bucket(-d);
    CHECK(k >= prev);
    changes += k != prev;
    prev = k;
  }
  CHECK(prev == 31);
  CHECK(changes == 16);  // buckets 16 ... 31 each reached once
  CHECK(b.bucket(-127) == 31);
  CHECK(b.bucket(-1000000) == 31);
  // Logarithmic buckets: bucket 16 + k starts at 16 * 8^(k/16), i.e. 1.139x apart.
  CHECK(b.bucket(-16) == 16);
  CHECK(b.bucket(-18) == 16);
  CHECK(b.bucket(-19) == 17);  // 16 * 1.139 = 18.2
  CHECK(b.bucket(-66) == 26);
  CHECK(b.bucket(-67) == 27);  // 16 * 8^(11/16) = 66.8
}

TEST_CASE("T5 bucket matrix follows the diagonal offset; bad sizes throw naming the field", "[bias][t5][errors]") {
  using Catch::Matchers::Contains;
  const T5Buckets b{true, 8, 16};
  const auto tl = t5_bucket_matrix(b, 2, 5, 0), br = t5_bucket_matrix(b, 2, 5, 3);
  CHECK(tl(0, 0) == 0);
  CHECK(tl(1, 0) == 1);  // key before the query: r = -1
  CHECK(br(0, 3) == 0);  // bottom-right: query 0 sits at key 3
  CHECK(br(1, 4) == 0);
  CHECK(br(1, 0) == b.bucket(-4));
  CHECK_THROWS_WITH(t5_bucket_matrix({true, 1, 16}, 2, 2, 0), Contains("t5.num_buckets must be >= 2, got 1"));
  CHECK_THROWS_WITH(t5_bucket_matrix({true, 8, 0}, 2, 2, 0), Contains("t5.max_distance must be >= 1, got 0"));
  CHECK_THROWS_AS(t5_bucket_matrix({false, -3, 16}, 2, 2, 0), std::invalid_argument);
  CHECK_THROWS_WITH(t5_bucket_matrix(T5Buckets{}, -1, 2, 0), Contains("L_q must be >= 0, got -1"));
  CHECK_THROWS_WITH(t5_bucket_matrix(T5Buckets{}, 2, -4, 0), Contains("L_k must be >= 0, got -4"));
  CHECK(t5_bucket_matrix(T5Buckets{}, 0, 3, 0).size() == 0);
}
