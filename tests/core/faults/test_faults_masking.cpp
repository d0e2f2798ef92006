// Fault cases about masking (tests/data/fault_cases.json B01, B06, B07, B17): fully masked
// rows, mask polarity, additive vs boolean masks, and the axis key padding applies to.
// qkscope's policy: bool masks are "true = may attend", key padding can be given as a key
// length (no polarity), and a fully masked row has zero weights, output and gradient.
#include "faults/checks.hpp"

using namespace qktest::faults;
using qktest::fault_case;
using Catch::Matchers::Contains;

TEST_CASE("B01: a fully masked row gives zero weights, zero output and zero gradient",
          "[faults][mask]") {
  const auto B = fault_case("B01");
  const auto in = B["inputs"], ex = B["expected"];
  const double scale = ex["scale"].number();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const Mat<T> Q = as<T>(in["q"]), K = as<T>(in["k"]), V = as<T>(in["v"]);
    AttentionConfig<T> c;  // scaled_dot: default scale 1/sqrt(d_k)
    c.mask.keep = in["keep"].keep();
    const auto r = attention_forward<T>(Q, K, V, {}, c);
    CHECK(r.scale == Approx(scale).epsilon(1e-15));
    check_sig6(r.weights.row(0), ex["weights"][0], eps_of<T>());
    check_sig6(r.output.row(0), ex["out"][0], eps_of<T>());
    CHECK(r.weights.row(1).isZero(0));
    CHECK(r.output.row(1).isZero(0));
    CHECK(r.logsumexp(1) == -std::numeric_limits<T>::infinity());
    // grad of sum(out): dO = ones. Row 1 of dQ is exactly 0 and nothing is NaN.
    const auto g = attention_backward<T>(Q, K, V, {}, c, r, Mat<T>::Ones(2, 2));
    check_sig6(g.dQ.row(1), ex["grad_q_of_sum_out_row1"], eps_of<T>());
    CHECK(g.dQ.row(1).isZero(0));
    CHECK(g.dQ.allFinite());
    CHECK(g.dK.allFinite());
    CHECK(g.dV.allFinite());
    CHECK(g.dV.isApprox(r.weights.transpose() * Mat<T>::Ones(2, 2)));
  };
  run(float{});
  run(double{});

  SECTION("every normalizer gives the zero row, in fp32 and in fp16/bf16 storage") {
    for (const auto& n : normalizer_infos()) {
      AttentionConfig<float> c;
      c.mask.keep = in["keep"].keep();
      c.normalizer = n.name;
      INFO("normalizer " << n.name);
      const auto rh = qp::attention_forward_mixed(as<half>(in["q"]), as<half>(in["k"]), as<half>(in["v"]),
                                                  ScoreParams<half>{}, c);
      const auto rb = qp::attention_forward_mixed(as<bf16>(in["q"]), as<bf16>(in["k"]), as<bf16>(in["v"]),
                                                  ScoreParams<bf16>{}, c);
      CHECK(rh.fp32.weights.row(1).isZero(0));
      CHECK(rb.fp32.weights.row(1).isZero(0));
      CHECK(qp::widen<float>(rh.output).row(1).isZero(0));
      CHECK(qp::widen<float>(rb.output).row(1).isZero(0));
      CHECK(rh.fp32.weights.allFinite());
    }
  }
  SECTION("the reported bug and the alternative policy, reproduced by naive masked_fill") {
    // The case's scores in fp32; -inf fill gives the NaN row (buggy), a finite fill the
    // uniform row whose output is the mean of v.
    const Mat<float> S = (scale * as<double>(in["q"]) * as<double>(in["k"]).transpose()).cast<float>();
    const KeepMask keep = in["keep"].keep();
    const auto bug = qp::naive::masked_fill_softmax<float>(S, keep, -kInf);
    check_exact(bug.weights.row(1), B["buggy"]["weights_row1_with_inf_fill"]);
    CHECK(bug.diag.nan_rows == std::vector<Eigen::Index>{Eigen::Index(B["buggy"]["nan_rows"][0].number())});
    const auto alt = qp::naive::masked_fill_softmax<float>(S, keep, in["finite_fill"].number());
    const MatrixD out_alt = alt.weights * as<double>(in["v"]);
    check_sig6(out_alt.row(1), ex["finite_fill_out_row1"], eps_of<float>());
  }
}

TEST_CASE("B06: key padding 'True = ignore' is inverted to qkscope's 'true = may attend'; "
          "padding keys get weight exactly 0",
          "[faults][mask]") {
  // The case's key-padding mask (true = ignore) is given in the data file inverted, as keep.
  const auto B = fault_case("B06");
  const auto in = B["inputs"];
  const Mat<float> Q = as<float>(in["q"]), K = as<float>(in["k"]), V = as<float>(in["v"]);
  AttentionConfig<float> c = dot_config<float>();
  c.mask.keep = in["keep"].keep();
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  check_sig6(r.weights, B["expected"]["weights"], eps_of<float>());
  CHECK(r.weights(0, 1) == 0);
  check_sig6(r.output, B["expected"]["out"], eps_of<float>());
  // Lengths have no polarity: the key length is the same mask.
  AttentionConfig<float> l = dot_config<float>();
  l.mask.key_length = Eigen::Index(in["key_length"].number());
  CHECK(attention_forward<float>(Q, K, V, {}, l).weights == r.weights);
  // The bug, expressible: the padding mask handed over without inversion attends to padding.
  AttentionConfig<float> b = dot_config<float>();
  b.mask.keep = in["keep_uninverted"].keep();
  const auto bug = attention_forward<float>(Q, K, V, {}, b);
  check_sig6(bug.weights, B["buggy"]["weights"], eps_of<float>());
  check_sig6(bug.output, B["buggy"]["out"], eps_of<float>());
  // An all-False padding mask passed uninverted masks every key: zeros, never NaN.
  b.mask.keep = in["keep_all_false"].keep();
  const auto none = attention_forward<float>(Q, K, V, {}, b);
  CHECK(none.weights.isZero(0));
  CHECK(none.output.isZero(0));
}

TEST_CASE("B07: a 0/1 float matrix passed as an additive bias is rejected; causal masking "
          "via the keep mask, the causal flag or a 0/-inf bias agree",
          "[faults][mask]") {
  const auto B = fault_case("B07");
  const auto in = B["inputs"];
  const Mat<float> Q = as<float>(in["q"]), K = as<float>(in["k"]), V = as<float>(in["v"]);
  AttentionConfig<float> c = dot_config<float>();
  c.mask.causal = true;
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  check_sig6(r.weights, B["expected"]["weights"], eps_of<float>());
  check_sig6(r.output, B["expected"]["out"], eps_of<float>());
  AttentionConfig<float> k = dot_config<float>();
  k.mask.keep = in["keep"].keep();  // tril(ones) as a keep mask
  CHECK(attention_forward<float>(Q, K, V, {}, k).weights == r.weights);
  AttentionConfig<float> a = dot_config<float>();
  a.bias.dense = as<float>(in["additive_mask"]);
  CHECK(attention_forward<float>(Q, K, V, {}, a).weights == r.weights);
  // The bug: the float 0/1 matrix as an additive bias. Rejected, naming the keep mask.
  AttentionConfig<float> bug = dot_config<float>();
  bug.bias.dense = as<float>(in["float_mask_passed"]);
  CHECK_THROWS_AS(attention_forward<float>(Q, K, V, {}, bug), std::invalid_argument);
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, bug), Contains("mask"));
  bug.bias.dense = Mat<float>::Ones(2, 2);
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, bug), Contains("mask"));
  bug.bias.dense = Mat<float>::Zero(2, 2);  // an all-zero bias is a no-op, accepted
  CHECK_NOTHROW(attention_forward<float>(Q, K, V, {}, bug));
}

TEST_CASE("B17: key padding masks key columns, not query rows; a padded query row gets keys-only "
          "attention, or zeros when it is masked too",
          "[faults][mask]") {
  const auto B = fault_case("B17");
  const auto in = B["inputs"], ex = B["expected"];
  const Mat<float> x = as<float>(in["x"]);  // q = k = v = x
  AttentionConfig<float> c = dot_config<float>();
  c.mask.key_length = Eigen::Index(in["key_length"].number());
  const auto r = attention_forward<float>(x, x, x, {}, c);
  check_sig6(r.weights.topRows(2), ex["weights_rows01"], eps_of<float>());
  CHECK(r.weights.col(2).isZero(0));
  check_sig6(r.output.topRows(2), ex["out_rows01"], eps_of<float>());
  check_sig6(r.output.row(2), ex["out_row2_keys_only"], eps_of<float>());
  // The same as an explicit keep mask (columns), and with the padded query masked too.
  AttentionConfig<float> k = dot_config<float>();
  k.mask.keep = in["keep_keys"].keep();
  CHECK(attention_forward<float>(x, x, x, {}, k).weights == r.weights);
  k.mask.keep.row(2).setConstant(false);
  const auto z = attention_forward<float>(x, x, x, {}, k);
  check_sig6(z.output.row(2), ex["out_row2_query_masked"], eps_of<float>());
  CHECK(z.output.row(2).isZero(0));
  // The bug: padding applied to the query axis (row 2) instead of the key axis.
  AttentionConfig<float> q = dot_config<float>();
  q.mask.keep = in["keep_query_axis"].keep();
  const auto bug = attention_forward<float>(x, x, x, {}, q);
  check_sig6(bug.weights.topRows(2), B["buggy"]["weights_rows01"], eps_of<float>());
  check_sig6(bug.output.topRows(2), B["buggy"]["out_rows01"], eps_of<float>());
  CHECK(bug.weights.row(2).isZero(0));  // no finite fill: zeros, not the uniform 1/3
}
