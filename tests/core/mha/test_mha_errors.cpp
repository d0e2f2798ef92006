// Multi-head attention argument errors: each names the argument and the shape or value.
#include "mha/mha_case.hpp"

using namespace qktest::mha;

TEST_CASE("multi-head arguments are validated and errors name the argument", "[mha][errors]") {
  const Dims d{2, 3, 4, 5, 3, 4, 2, 3, 2, 3};
  const Case c = make_case(d, "bilinear", 71);
  const auto cfg = config_of<double>(c);
  const auto fwd = [&](const MultiHeadWeights<double>& w, const MultiHeadConfig<double>& m) {
    return multi_head_forward<double>(c.X_q, c.X_kv, w, m);
  };
  using Catch::Contains;
  REQUIRE_NOTHROW(fwd(c.w, cfg));

  SECTION("H % H_kv != 0 names both") {
    auto m = cfg;
    m.heads = 6;
    m.kv_heads = 4;
    CHECK_THROWS_AS(fwd(c.w, m), std::invalid_argument);
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("heads (H = 6)") && Contains("kv_heads (H_kv = 4)"));
  }
  SECTION("wrong weight shapes name the weight and its expected shape") {
    auto w = c.w;
    w.W_Q = MatrixD::Zero(d.d_model, d.H * d.d_k + 1);
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_Q") && Contains("(5, 12)") && Contains("(5, 13)"));
    w = c.w;
    w.W_K = MatrixD::Zero(d.d_model, d.H_kv * d.d_k);  // d_model instead of d_model_kv
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_K") && Contains("(3, 6)"));
    w = c.w;
    w.W_V = MatrixD::Zero(d.d_model_kv, d.H * d.d_v);  // H instead of H_kv heads
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_V") && Contains("(3, 4)"));
    w = c.w;
    w.W_O = MatrixD::Zero(d.H * d.d_k, d.d_out);
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("W_O") && Contains("8 rows"));
    w = c.w;
    w.score_params.pop_back();
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("score_params") && Contains("H = 4"));
    w = c.w;
    w.score_params[3].W = MatrixD::Zero(2, 2);
    CHECK_THROWS_WITH(fwd(w, cfg), Contains("batch 0, head 3") && Contains("params.W"));
  }
  SECTION("bad key_lengths name key_lengths and the batch index") {
    auto m = cfg;
    m.key_lengths = {4, -1};
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("key_lengths[1]") && Contains("batch index 1"));
    m.key_lengths = {5, 4};
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("key_lengths[0]") && Contains("batch index 0") &&
                                       Contains("L_k = 4"));
    m.key_lengths = {4};
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("key_lengths") && Contains("B = 2"));
  }
  SECTION("batch rows, head widths and the backward's arguments") {
    auto m = cfg;
    m.batch = 4;  // 6 query rows are not 4 blocks
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("X_q") && Contains("B = 4"));
    m = cfg;
    m.d_k = 0;
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("d_k"));
    m = cfg;
    m.alibi = true;
    m.attention.bias.alibi_slope = 0.5;
    CHECK_THROWS_WITH(fwd(c.w, m), Contains("alibi"));
    const auto f = fwd(c.w, cfg);
    CHECK_THROWS_WITH(multi_head_backward<double>(c.X_q, c.X_kv, c.w, cfg, f, MatrixD::Zero(6, 2)),
                      Contains("grad_output") && Contains("(6, 3)"));
  }
}
