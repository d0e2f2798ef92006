// Bad input is a std::invalid_argument whose message names the argument and the
// shape or value at fault; nothing aborts and nothing returns NaN.
#include <catch2/catch.hpp>

#include <limits>

#include "qkscope/qkscope.hpp"

using namespace qkscope;
using Catch::Contains;

namespace {
struct Call {
  Matrix Q = Matrix::Random(3, 4), K = Matrix::Random(5, 4), V = Matrix::Random(5, 2);
  ScoreParams<float> params;
  AttentionConfig<float> cfg;
  AttentionResult<float> run() const { return attention_forward<float>(Q, K, V, params, cfg); }
};
}  // namespace

TEST_CASE("shape mismatches name the argument and both shapes", "[errors]") {
  Call c;
  c.V = Matrix::Random(4, 2);
  CHECK_THROWS_AS(c.run(), std::invalid_argument);
  CHECK_THROWS_WITH(c.run(), Contains("value") && Contains("L_k = 5") && Contains("(4, 2)"));
  Call d;
  d.K = Matrix::Random(5, 3);
  d.V = Matrix::Random(5, 2);
  CHECK_THROWS_WITH(d.run(), Contains("d_q = 4") && Contains("d_k = 3"));
}

TEST_CASE("zero sizes are rejected", "[errors]") {
  Call c;
  c.Q = Matrix(0, 4);
  CHECK_THROWS_WITH(c.run(), Contains("query") && Contains("(0, 4)"));
  Call d;
  d.V = Matrix(5, 0);
  CHECK_THROWS_WITH(d.run(), Contains("value") && Contains("non-empty"));
}

TEST_CASE("non-finite inputs are rejected with their position", "[errors]") {
  Call c;
  c.K(2, 1) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(c.run(), Contains("key must be finite") && Contains("(2, 1)"));
  Call d;
  d.Q(0, 0) = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(d.run(), Contains("query must be finite"));
}

TEST_CASE("temperature must be finite and > 0 for soft normalizers", "[errors]") {
  for (double tau : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    Call c;
    c.cfg.temperature = tau;
    CHECK_THROWS_WITH(c.run(), Contains("temperature"));
  }
}

TEST_CASE("unknown scoring function and normalizer list the known names", "[errors]") {
  Call c;
  c.cfg.score = "dott";
  CHECK_THROWS_WITH(c.run(), Contains("'dott'") && Contains("scaled_dot") && Contains("additive"));
  Call d;
  d.cfg.normalizer = "softmin";
  CHECK_THROWS_WITH(d.run(), Contains("'softmin'") && Contains("sparsemax"));
}

TEST_CASE("parameter shapes are checked per scoring function", "[errors]") {
  Call c;
  c.cfg.score = "bilinear";
  CHECK_THROWS_WITH(c.run(), Contains("params.W") && Contains("(4, 4)") && Contains("(0, 0)"));
  c.params = init_params<float>("additive", 4, 4, 3, 0);
  c.cfg.score = "additive";
  CHECK_NOTHROW(c.run());
  c.params.W_k = Matrix::Random(3, 5);
  CHECK_THROWS_WITH(c.run(), Contains("params.W_k") && Contains("(3, 4)") && Contains("(3, 5)"));
  c.params = init_params<float>("linear_concat", 4, 4, 0, 0);
  c.cfg.score = "linear_concat";
  c.params.w.conservativeResize(7);
  CHECK_THROWS_WITH(c.run(), Contains("params.w") && Contains("d_q + d_k = 8") && Contains("got 7"));
  CHECK_THROWS_WITH(init_params<float>("additive", 4, 4, 0, 0), Contains("d_h"));
}

TEST_CASE("mask arguments: key length range, window widths, keep-mask shape", "[errors]") {
  Call c;
  c.cfg.mask.key_length = 6;
  CHECK_THROWS_WITH(c.run(), Contains("key_length") && Contains("L_k = 5") && Contains("got 6"));
  c.cfg.mask.key_length = -1;
  CHECK_THROWS_WITH(c.run(), Contains("got -1"));
  Call d;
  d.cfg.mask.window_left = -2;
  CHECK_THROWS_WITH(d.run(), Contains("window") && Contains("left = -2"));
  Call e;
  e.cfg.mask.keep = KeepMask::Constant(5, 3, true);
  CHECK_THROWS_WITH(e.run(), Contains("mask.keep") && Contains("(3, 5)") && Contains("(5, 3)"));
}

TEST_CASE("bias arguments: shape, NaN, softcap, a 0/1 matrix passed as bias", "[errors]") {
  Call c;
  c.cfg.bias.dense = Matrix::Zero(3, 4);
  CHECK_THROWS_WITH(c.run(), Contains("bias.dense") && Contains("(3, 5)"));
  c.cfg.bias.dense = Matrix::Zero(3, 5);
  c.cfg.bias.dense(1, 1) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(c.run(), Contains("NaN"));
  c.cfg.bias.dense = Matrix::Ones(3, 5);
  CHECK_THROWS_WITH(c.run(), Contains("keep mask"));
  c.cfg.bias.dense(0, 0) = -std::numeric_limits<float>::infinity();  // -inf bias is a valid mask
  CHECK_NOTHROW(c.run());
  Call d;
  d.cfg.bias.softcap = 0;
  CHECK_THROWS_WITH(d.run(), Contains("softcap"));
  Call e;
  e.cfg.bias.relative = Vector::Zero(4);
  CHECK_THROWS_WITH(e.run(), Contains("odd length"));
}

TEST_CASE("top-k needs k >= 1; non-finite scale and overflowing scores are errors, not NaN", "[errors]") {
  Call c;
  c.cfg.normalizer = "topk_softmax";
  c.cfg.norm_options.get<qkscope::norm::TopKSoftmax>().top_k = 0;
  CHECK_THROWS_WITH(c.run(), Contains("top_k") && Contains("got 0"));
  Call d;
  d.cfg.scale = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(d.run(), Contains("scale"));
  Call e;
  e.Q *= 1e30f;
  e.K *= 1e30f;
  CHECK_THROWS_WITH(e.run(), Contains("overflowed"));
}

TEST_CASE("backward checks the shape of grad_output", "[errors]") {
  Call c;
  const auto r = c.run();
  CHECK_THROWS_WITH(attention_backward<float>(c.Q, c.K, c.V, c.params, c.cfg, r, Matrix::Ones(3, 3)),
                    Contains("grad_output") && Contains("(3, 2)"));
}

TEST_CASE("a score that overflows to -inf is an error, not a silent mask", "[errors]") {
  Call c;
  c.cfg.score = "dot";
  c.Q = Matrix::Constant(1, 1, 1e20f);
  c.K = Matrix::Constant(2, 1, -1e20f);
  c.V = Matrix::Ones(2, 1);
  CHECK_THROWS_WITH(c.run(), Contains("overflowed") && Contains("-inf"));
}

TEST_CASE("non-finite scoring parameters are rejected by name, even under a full mask", "[errors]") {
  Call c;
  c.cfg.score = "bilinear";
  c.params.W = Matrix::Constant(4, 4, std::numeric_limits<float>::quiet_NaN());
  CHECK_THROWS_WITH(c.run(), Contains("params.W must be finite"));
  c.cfg.mask.key_length = 0;
  CHECK_THROWS_WITH(c.run(), Contains("params.W must be finite"));
}

TEST_CASE("backward rejects a forward result from other inputs and a bad temperature", "[errors]") {
  Call c;
  const AttentionResult<float> empty;
  CHECK_THROWS_WITH(attention_backward<float>(c.Q, c.K, c.V, c.params, c.cfg, empty, Matrix::Ones(3, 2)),
                    Contains("fwd.raw_scores") && Contains("(3, 5)"));
  const auto r = c.run();
  auto cfg = c.cfg;
  cfg.temperature = 0;
  CHECK_THROWS_WITH(attention_backward<float>(c.Q, c.K, c.V, c.params, cfg, r, Matrix::Ones(3, 2)),
                    Contains("temperature"));
}

TEST_CASE("softcap and ALiBi slope must be representable in the compute precision", "[errors]") {
  Call c;
  c.cfg.bias.softcap = 1e-46;  // > 0 in double, 0 in float
  CHECK_THROWS_WITH(c.run(), Contains("softcap") && Contains("1e-46"));
  Call d;
  d.cfg.bias.alibi_slope = 1e300;  // inf in float
  CHECK_THROWS_WITH(d.run(), Contains("alibi_slope"));
}

TEST_CASE("helpers reject sizes they cannot build instead of asserting or hanging", "[errors]") {
  CHECK_THROWS_WITH(adjacency_mask(-1, 2, {}, true), Contains("L_q and L_k must be >= 0"));
  CHECK_THROWS_WITH(alibi_slopes(std::numeric_limits<int>::max()), Contains("[1, 65536]"));
}
