// Fault cases about reduced precision and overflow (tests/data/fault_cases.json B03, B04,
// B05, B16): mask constants outside the fp16/bf16 range, finfo.min additive masks that
// overflow, and softmax without the row maximum. Each case checks qkscope's result (fp16 /
// bf16 storage, fp32 math, boolean masks: no fill constant anywhere) and reproduces the
// reported failure with precision/naive.hpp.
#include "faults/checks.hpp"

using namespace qktest::faults;
using qktest::fault_case;

TEST_CASE("B03: a mask fill constant outside the fp16 range never reaches fp16 arithmetic",
          "[faults][precision]") {
  const auto B = fault_case("B03");
  const auto in = B["inputs"], ex = B["expected"];
  const Mat<half> Q = as<half>(in["q"]), K = as<half>(in["k"]), V = as<half>(in["v"]);
  AttentionConfig<float> c;  // scaled_dot, default scale 1/sqrt(2)
  c.mask.keep = in["keep"].keep();
  const auto r = qp::attention_forward_mixed(Q, K, V, ScoreParams<half>{}, c);
  // The scores as fp16 would hold them.
  const Mat<half> s16 = qp::to_storage<half>(r.fp32.scores);
  check_sig6(qp::widen<double>(s16), ex["fp16_scores"], 0);
  check_sig6(r.fp32.weights, ex["weights"], eps_of<float>());
  CHECK(r.fp32.weights(0, 2) == 0);
  check_sig6(r.fp32.output, ex["out"], eps_of<float>());
  check_exact(qp::widen<double>(r.output), ex["out"]);  // exact in fp16
  // The constants: fp16(-1e9) = -inf, fp16(-1e4) = -10000, finfo.min, min + 1.4140625.
  for (std::size_t i = 0; i < ex["fp16_of"].size(); ++i) {
    const auto pair = ex["fp16_of"][i];
    CHECK(qp::stored_value<half>(pair[0].number()) == pair[1].number());
  }
  CHECK(qp::finfo<half>().min == ex["fp16_min"].number());
  // PyTorch raises for -1e9 in fp16; the naive fill (modelled) stores -inf and the row
  // with a kept key is still right; qkscope needs no fill at all. The fills include
  // finfo(fp16).min and finfo(fp32).min.
  for (std::size_t i = 0; i < in["naive_fills"].size(); ++i) {
    const auto f = in["naive_fills"][i];
    const double fill = f["fill"].number();
    INFO("fill " << fill);
    const auto o = qp::naive::masked_fill_softmax<half>(s16, c.mask.keep, fill);
    check_sig6(o.weights, ex["weights"], eps_of<half>());
    CHECK(o.diag.pytorch_raises == f["pytorch_raises"].boolean());
  }
}

TEST_CASE("B04: finfo(fp16).min + score <= -16 overflows to -inf in fp16; qkscope gives zero "
          "weights for fully masked rows and never depends on the cliff",
          "[faults][precision]") {
  // Rows A, B fully masked with bias finfo(fp16).min, row C half masked.
  const auto B = fault_case("B04");
  const auto in = B["inputs"], ex = B["expected"];
  const Mat<half> scores = as<half>(in["scores"]), bias = as<half>(in["bias"]);
  const auto bug = qp::naive::additive_mask_softmax<half>(scores, bias);
  check_exact(bug.logits, ex["fp16_sums"]);
  for (std::size_t i = 0; i < ex["fp16_of"].size(); ++i) {
    const auto pair = ex["fp16_of"][i];
    CHECK(qp::stored_value<half>(pair[0].number()) == pair[1].number());
  }
  check_exact(bug.weights.topRows(2), B["buggy"]["weights_rows_AB"]);  // NaN row A, uniform row B
  CHECK(bug.diag.nan_rows == std::vector<Eigen::Index>{Eigen::Index(B["buggy"]["nan_rows"][0].number())});

  // qkscope: the same masks as booleans, fp16 storage, fp32 math.
  AttentionConfig<float> c = dot_config<float>();
  c.mask.keep = in["keep"].keep();
  const Mat<half> I2 = Mat<half>::Identity(2, 2);
  const auto r = qp::attention_forward_mixed(scores, I2, I2, ScoreParams<half>{}, c);
  CHECK(r.fp32.weights.row(0).isZero(0));  // fully masked rows A and B: zero weights
  CHECK(r.fp32.weights.row(1).isZero(0));
  check_sig6(r.fp32.weights.row(2), ex["weights_rowC"], eps_of<float>());

  // The documented alternative: finite finfo.min added in fp32 (dense bias).
  AttentionConfig<float> f = dot_config<float>();
  f.bias.dense = qp::widen<float>(bias);
  const auto a = from_scores<float>(qp::widen<float>(scores), Mat<float>::Identity(2, 2), f);
  check_sig6(a.weights, ex["fp32_bias_weights"], eps_of<float>());
}

TEST_CASE("B05: a bf16 mask bias from finfo(fp32).min is -inf and 0 * -inf = NaN; qkscope "
          "masks with booleans combined by AND",
          "[faults][precision]") {
  const auto B = fault_case("B05");
  const auto in = B["inputs"], ex = B["expected"];
  const Mat<float> scores = as<float>(in["scores"]), V = as<float>(in["v"]);
  const KeepMask keep = in["keep"].keep();
  const double fp32_min = in["fp32_min"].number();
  CHECK(qp::stored_value<bf16>(fp32_min) == ex["bf16_of_fp32_min"].number());
  CHECK(qp::finfo<bf16>().min == Approx(ex["bf16_min"].number()).epsilon(1e-6));
  const Mat<bf16> min2 = Mat<bf16>::Constant(1, 1, qp::round_to<bf16>(qp::finfo<bf16>().min));
  CHECK(qp::naive::combine_additive_masks<bf16>(min2, min2).bias(0, 0) == ex["bf16_of_min_plus_min"].number());

  const auto bug = qp::naive::extended_mask_attention<bf16>(scores, keep, fp32_min, V);
  check_exact(bug.bias, B["buggy"]["bias"]);
  check_exact(bug.weights, B["buggy"]["weights"]);
  check_exact(bug.output, B["buggy"]["out"]);
  CHECK(bug.diag.pytorch_raises);

  const auto good = qp::naive::extended_mask_attention<bf16>(scores, keep, qp::finfo<bf16>().min, V);
  check_sig6(good.bias, ex["bias"], eps_of<float>());
  check_sig6(good.weights, ex["weights"], eps_of<float>());
  check_sig6(good.output, ex["out"], eps_of<float>());

  // qkscope: keep mask in bf16 storage, fp32 math; output rounded to bf16.
  AttentionConfig<float> c = dot_config<float>();
  c.mask.keep = keep;
  const Mat<bf16> I3 = Mat<bf16>::Identity(3, 3);
  const auto r = qp::attention_forward_mixed(qp::to_storage<bf16>(scores), I3, qp::to_storage<bf16>(V),
                                             ScoreParams<bf16>{}, c);
  check_sig6(r.fp32.weights, ex["weights"], eps_of<float>());
  check_sig6(r.fp32.output, ex["out"], eps_of<float>());
  CHECK(qp::as_double(r.output(0, 0)) == ex["out_bf16"].number());
  // Two masks (padding + causal-like keep) combine by AND: no plane is ever summed.
  c.mask.key_length = 2;
  const auto r2 = qp::attention_forward_mixed(qp::to_storage<bf16>(scores), I3, qp::to_storage<bf16>(V),
                                              ScoreParams<bf16>{}, c);
  CHECK(r2.fp32.weights == r.fp32.weights);
}

TEST_CASE("B16: softmax subtracts the row max, so scores 1000 in fp32 and 12 in fp16 give "
          "finite weights",
          "[faults][precision]") {
  const auto B = fault_case("B16");
  const auto in = B["inputs"], ex = B["expected"], bug = B["buggy"];
  // fp32 scores with v.
  const auto a = from_scores<float>(as<float>(in["fp32_scores"]), as<float>(in["fp32_v"]), dot_config<float>());
  check_sig6(a.weights, ex["fp32_weights"], eps_of<float>());
  CHECK(a.weights(0, 2) == 0);
  check_sig6(a.output, ex["fp32_out"], eps_of<float>());
  // fp16 scores (storage fp16, math fp32).
  const Mat<half> I2 = Mat<half>::Identity(2, 2);
  const auto b = qp::attention_forward_mixed(as<half>(in["fp16_scores"]), I2, I2, ScoreParams<half>{}, dot_config<float>());
  check_sig6(b.fp32.weights, ex["fp16_weights"], eps_of<float>());
  // fp64 scores.
  const auto c = from_scores<double>(as(in["fp64_scores"]), Mat<double>::Identity(3, 3), dot_config<double>());
  check_exact(c.weights, ex["fp64_weights"]);
  // The naive failures, reproduced.
  check_exact(qp::naive::softmax_no_max<float>(as<float>(in["fp32_scores"])).weights, bug["fp32_weights"]);
  check_exact(qp::naive::softmax_no_max<half>(as<half>(in["fp16_scores"])).weights, bug["fp16_weights"]);
  for (std::size_t i = 0; i < bug["fp16_of_exp"].size(); ++i) {
    const auto pair = bug["fp16_of_exp"][i];
    CHECK(qp::stored_value<half>(std::exp(pair[0].number())) == pair[1].number());
  }
}
