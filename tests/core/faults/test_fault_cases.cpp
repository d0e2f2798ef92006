// Every case of shared/cases/attention_faults.json as a test of qkscope, one TEST_CASE per
// case id. The inputs and expected values are copied from the JSON (it lives outside the
// repo); each block names its case id. Translation into qkscope's API: bool masks are
// "true = may attend"; a key_padding mask ("True = ignore") is inverted or given as a
// key length. Where a case offers policies, qkscope's (cases/README.md) is tested:
// fully masked rows give zero weights, output and gradient; hard/top-k ties go to the
// lowest key index; soft normalizers need tau > 0 and the tau -> 0 limit is 'hard'.
//
// Precision of the checks: the JSON writes values to 6 significant digits, and values in
// [0.01, 0.1) to 6 decimals (0.047426). A value e passes when |x - e| <= half a unit of
// e's 6th significant digit (5e-7 at least when |e| >= 0.01), plus 4 ulps of the type
// computed in (the JSON's rounding and the computation's add up). Zeros the policy
// promises (masked weights, fully masked rows) are checked exactly.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "support/random.hpp"

using namespace qkscope;
namespace qp = qkscope::precision;
using Catch::Matchers::Contains;
using half = Eigen::half;
using bf16 = Eigen::bfloat16;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T = double>
Mat<T> mat(std::initializer_list<std::initializer_list<double>> rows) {
  Mat<T> m(Eigen::Index(rows.size()), Eigen::Index(rows.begin()->size()));
  Eigen::Index i = 0;
  for (const auto& r : rows) {
    Eigen::Index j = 0;
    for (double x : r) m(i, j++) = qp::round_to<T>(x);
    ++i;
  }
  return m;
}

KeepMask keep_mask(std::initializer_list<std::initializer_list<bool>> rows) {
  KeepMask m(Eigen::Index(rows.size()), Eigen::Index(rows.begin()->size()));
  Eigen::Index i = 0;
  for (const auto& r : rows) {
    Eigen::Index j = 0;
    for (bool x : r) m(i, j++) = x;
    ++i;
  }
  return m;
}

/// |x - e| within half a unit of the JSON's last digit plus 4 ulps of the compute type.
bool sig6(double x, double e, double eps) {
  if (std::isnan(x)) return false;
  if (e == 0) return std::abs(x) <= 5e-7;
  const double a = std::abs(e);
  const double unit6 = std::pow(10.0, std::floor(std::log10(a)) - 5);
  const double half_unit = std::max(0.5 * unit6, a >= 0.01 ? 5e-7 : 0.0);
  return std::abs(x - e) <= half_unit + 4 * eps * a;
}

/// Checks the entries of `got` (row-major) against `expected` to 6 significant digits.
template <class Derived>
void check_sig6(const std::string& what, const Eigen::MatrixBase<Derived>& got,
                const std::vector<double>& expected, double eps) {
  REQUIRE(std::size_t(got.size()) == expected.size());
  std::size_t k = 0;
  for (Eigen::Index i = 0; i < got.rows(); ++i)
    for (Eigen::Index j = 0; j < got.cols(); ++j, ++k) {
      const double x = double(got(i, j));
      INFO(what << "[" << k << "]: got " << x << ", expected " << expected[k]);
      CHECK(sig6(x, expected[k], eps));
    }
}

template <class T>
double eps_of() {
  return double(std::numeric_limits<T>::epsilon());
}

template <class T>
AttentionConfig<T> dot_config(double scale = 1.0) {
  AttentionConfig<T> c;
  c.score = "dot";
  c.scale = scale;
  return c;
}

/// Feeds a given score matrix (L_q, L_k) through the core: Q = scores, K = I, dot, scale 1
/// gives raw scores equal to `scores` exactly (products with 1 and sums of zeros).
template <class T>
AttentionResult<T> from_scores(const Mat<T>& scores, const Mat<T>& V, AttentionConfig<T> c) {
  return attention_forward<T>(scores, Mat<T>::Identity(scores.cols(), scores.cols()), V, {}, c);
}

}  // namespace

// ---- B01 ---------------------------------------------------------------------------------
TEST_CASE("B01: a fully masked row gives zero weights, zero output and zero gradient",
          "[faults][mask]") {
  // shared/cases B01: q = k = I2, v = [[1,2],[3,4]], keep [[T,T],[F,F]], scale 1/sqrt(2).
  auto run = [](auto tag) {
    using T = decltype(tag);
    const Mat<T> Q = mat<T>({{1, 0}, {0, 1}}), K = Q, V = mat<T>({{1, 2}, {3, 4}});
    AttentionConfig<T> c;  // scaled_dot: default scale 1/sqrt(d_k) = 1/sqrt(2)
    c.mask.keep = keep_mask({{true, true}, {false, false}});
    const auto r = attention_forward<T>(Q, K, V, {}, c);
    CHECK(r.scale == Approx(1 / std::sqrt(2.0)).epsilon(1e-15));
    check_sig6("weights row 0", r.weights.row(0), {0.669762, 0.330238}, eps_of<T>());
    check_sig6("out row 0", r.output.row(0), {1.660477, 2.660477}, eps_of<T>());
    CHECK(r.weights.row(1).isZero(0));
    CHECK(r.output.row(1).isZero(0));
    CHECK(r.logsumexp(1) == -std::numeric_limits<T>::infinity());
    // grad of sum(out): dO = ones. Row 1 of dQ is exactly 0 and nothing is NaN.
    const auto g = attention_backward<T>(Q, K, V, {}, c, r, Mat<T>::Ones(2, 2));
    check_sig6("grad_q_row1_of_sum_out", g.dQ.row(1), {0.0, 0.0}, eps_of<T>());
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
      c.mask.keep = keep_mask({{true, true}, {false, false}});
      c.normalizer = n.name;
      INFO("normalizer " << n.name);
      const auto rh = qp::attention_forward_mixed(mat<half>({{1, 0}, {0, 1}}), mat<half>({{1, 0}, {0, 1}}),
                                                  mat<half>({{1, 2}, {3, 4}}), ScoreParams<half>{}, c);
      const auto rb = qp::attention_forward_mixed(mat<bf16>({{1, 0}, {0, 1}}), mat<bf16>({{1, 0}, {0, 1}}),
                                                  mat<bf16>({{1, 2}, {3, 4}}), ScoreParams<bf16>{}, c);
      CHECK(rh.fp32.weights.row(1).isZero(0));
      CHECK(rb.fp32.weights.row(1).isZero(0));
      CHECK(qp::widen<float>(rh.output).row(1).isZero(0));
      CHECK(qp::widen<float>(rb.output).row(1).isZero(0));
      CHECK(rh.fp32.weights.allFinite());
    }
  }
  SECTION("the reported bug and the alternative policy, reproduced by naive masked_fill") {
    // Scores of B01 in fp32; -inf fill gives the NaN row (buggy), a finite fill the
    // uniform row whose output is the mean of v = [2, 3] (alt_policy_uniform_fill_out_row1).
    Mat<float> S(2, 2);
    S << float(1 / std::sqrt(2.0)), 0, 0, float(1 / std::sqrt(2.0));
    const KeepMask keep = keep_mask({{true, true}, {false, false}});
    const auto bug = qp::naive::masked_fill_softmax<float>(S, keep, -kInf);
    CHECK(bug.weights.row(1).array().isNaN().all());
    CHECK(bug.diag.nan_rows == std::vector<Eigen::Index>{1});
    const auto alt = qp::naive::masked_fill_softmax<float>(S, keep, -1e9);
    const MatrixD out_alt = alt.weights * mat<double>({{1, 2}, {3, 4}});
    check_sig6("alt_policy_uniform_fill_out_row1", out_alt.row(1), {2.0, 3.0}, eps_of<float>());
  }
}

// ---- B03 ---------------------------------------------------------------------------------
TEST_CASE("B03: a mask fill constant outside the fp16 range never reaches fp16 arithmetic",
          "[faults][precision]") {
  // shared/cases B03: q = [[1,1]], k = [[1,0],[0,1],[1,1]], v = k, keep [T,T,F],
  // scale 1/sqrt(2), float16 storage.
  const Mat<half> Q = mat<half>({{1, 1}}), K = mat<half>({{1, 0}, {0, 1}, {1, 1}}), V = K;
  AttentionConfig<float> c;
  c.mask.keep = keep_mask({{true, true, false}});
  const auto r = qp::attention_forward_mixed(Q, K, V, ScoreParams<half>{}, c);
  // The scores as fp16 would hold them (the case's fp16_scores).
  const Mat<half> s16 = qp::to_storage<half>(r.fp32.scores);
  check_sig6("fp16_scores", qp::widen<double>(s16), {0.707031, 0.707031, 1.414062}, 0);
  check_sig6("weights", r.fp32.weights, {0.5, 0.5, 0.0}, eps_of<float>());
  CHECK(r.fp32.weights(0, 2) == 0);
  check_sig6("out", r.fp32.output, {0.5, 0.5}, eps_of<float>());
  CHECK(qp::widen<double>(r.output) == mat<double>({{0.5, 0.5}}));  // exact in fp16
  // The constants: fp16(-1e9) = -inf, fp16(-1e4) = -10000, finfo.min, min + 1.4140625.
  CHECK(qp::stored_value<half>(-1e9) == -kInf);
  CHECK(qp::stored_value<half>(-1e4) == -10000.0);
  CHECK(qp::finfo<half>().min == -65504.0);
  CHECK(qp::stored_value<half>(-65504.0 + 1.4140625) == -65504.0);
  // PyTorch raises for -1e9 in fp16; the naive fill (modelled) stores -inf and the row
  // with a kept key is still right; qkscope needs no fill at all.
  for (double fill : {-1e4, -1e9, -kInf, qp::finfo<half>().min, qp::finfo<float>().min}) {
    INFO("fill " << fill);
    const auto o = qp::naive::masked_fill_softmax<half>(s16, c.mask.keep, fill);
    check_sig6("naive weights", o.weights, {0.5, 0.5, 0.0}, eps_of<half>());
    CHECK(o.diag.pytorch_raises == (fill == -1e9 || fill == qp::finfo<float>().min));
  }
}

// ---- B04 ---------------------------------------------------------------------------------
TEST_CASE("B04: finfo(fp16).min + score <= -16 overflows to -inf in fp16; qkscope gives zero "
          "weights for fully masked rows and never depends on the cliff",
          "[faults][precision]") {
  // shared/cases B04: rows A, B fully masked with bias finfo(fp16).min, row C half masked.
  const Mat<half> scores = mat<half>({{-20, -17}, {-10, -5}, {2, -20}});
  const Mat<half> bias = mat<half>({{-65504, -65504}, {-65504, -65504}, {0, -65504}});
  const auto bug = qp::naive::additive_mask_softmax<half>(scores, bias);
  CHECK(bug.logits.row(0) == mat<double>({{-kInf, -kInf}}));            // fp16_sum_rowA
  CHECK(bug.logits.row(1) == mat<double>({{-65504, -65504}}));          // fp16_sum_rowB
  CHECK(bug.logits.row(2) == mat<double>({{2, -kInf}}));                // fp16_sum_rowC
  CHECK(qp::stored_value<half>(-65504.0 - 16) == -kInf);
  CHECK(qp::stored_value<half>(-65504.0 - 15) == -65504.0);
  CHECK(bug.weights.row(0).array().isNaN().all());                      // buggy rowA
  CHECK(bug.weights.row(1) == mat<double>({{0.5, 0.5}}));               // buggy rowB
  CHECK(bug.diag.nan_rows == std::vector<Eigen::Index>{0});

  // qkscope: the same masks as booleans, fp16 storage, fp32 math.
  AttentionConfig<float> c = dot_config<float>();
  c.mask.keep = keep_mask({{false, false}, {false, false}, {true, false}});
  const auto r = qp::attention_forward_mixed(scores, mat<half>({{1, 0}, {0, 1}}), mat<half>({{1, 0}, {0, 1}}),
                                             ScoreParams<half>{}, c);
  CHECK(r.fp32.weights.row(0).isZero(0));  // policy_zero_rows_weights_rowA
  CHECK(r.fp32.weights.row(1).isZero(0));  // policy_zero_rows_weights_rowB
  check_sig6("weights_rowC_all_policies", r.fp32.weights.row(2), {1.0, 0.0}, eps_of<float>());

  // The documented alternative: finite finfo.min added in fp32 (dense bias).
  AttentionConfig<float> f = dot_config<float>();
  f.bias.dense = qp::widen<float>(bias);
  const auto a = from_scores<float>(qp::widen<float>(scores), Mat<float>::Identity(2, 2), f);
  check_sig6("policy_fp32_finite_min_weights_rowA", a.weights.row(0), {0.047426, 0.952574}, eps_of<float>());
  check_sig6("policy_fp32_finite_min_weights_rowB", a.weights.row(1), {0.006692851, 0.993307}, eps_of<float>());
  check_sig6("weights_rowC_all_policies (fp32 min)", a.weights.row(2), {1.0, 0.0}, eps_of<float>());
}

// ---- B05 ---------------------------------------------------------------------------------
TEST_CASE("B05: a bf16 mask bias from finfo(fp32).min is -inf and 0 * -inf = NaN; qkscope "
          "masks with booleans combined by AND",
          "[faults][precision]") {
  // shared/cases B05: scores [1,2,3], keep [1,1,0], v = [[1],[2],[3]], bias in bf16.
  const Mat<float> scores = mat<float>({{1, 2, 3}}), V = mat<float>({{1}, {2}, {3}});
  const KeepMask keep = keep_mask({{true, true, false}});
  CHECK(qp::stored_value<bf16>(qp::finfo<float>().min) == -kInf);        // bf16(finfo_f32_min)
  CHECK(qp::finfo<bf16>().min == Approx(-3.389531e+38).epsilon(1e-6));   // finfo_bf16_min
  const Mat<bf16> min2 = mat<bf16>({{qp::finfo<bf16>().min}});
  CHECK(qp::naive::combine_additive_masks<bf16>(min2, min2).bias(0, 0) == -kInf);

  const auto bug = qp::naive::extended_mask_attention<bf16>(scores, keep, qp::finfo<float>().min, V);
  CHECK(std::isnan(bug.bias(0, 0)));
  CHECK(std::isnan(bug.bias(0, 1)));
  CHECK(bug.bias(0, 2) == -kInf);
  CHECK(bug.weights.array().isNaN().all());
  CHECK(std::isnan(bug.output(0, 0)));
  CHECK(bug.diag.pytorch_raises);

  const auto good = qp::naive::extended_mask_attention<bf16>(scores, keep, qp::finfo<bf16>().min, V);
  check_sig6("bias", good.bias, {0.0, 0.0, -3.389531e+38}, eps_of<float>());
  check_sig6("weights", good.weights, {0.268941, 0.731059, 0.0}, eps_of<float>());
  check_sig6("out_fp32", good.output, {1.731059}, eps_of<float>());

  // qkscope: keep mask in bf16 storage, fp32 math; output rounded to bf16.
  AttentionConfig<float> c = dot_config<float>();
  c.mask.keep = keep;
  const auto r = qp::attention_forward_mixed(qp::to_storage<bf16>(scores), mat<bf16>({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}),
                                             qp::to_storage<bf16>(V), ScoreParams<bf16>{}, c);
  check_sig6("weights (qkscope)", r.fp32.weights, {0.268941, 0.731059, 0.0}, eps_of<float>());
  check_sig6("out_fp32 (qkscope)", r.fp32.output, {1.731059}, eps_of<float>());
  CHECK(qp::as_double(r.output(0, 0)) == 1.734375);  // out_bf16_rounded
  // Two masks (padding + causal-like keep) combine by AND: no plane is ever summed.
  c.mask.key_length = 2;
  const auto r2 = qp::attention_forward_mixed(qp::to_storage<bf16>(scores), mat<bf16>({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}),
                                              qp::to_storage<bf16>(V), ScoreParams<bf16>{}, c);
  CHECK(r2.fp32.weights == r.fp32.weights);
}

// ---- B06 ---------------------------------------------------------------------------------
TEST_CASE("B06: key padding 'True = ignore' is inverted to qkscope's 'true = may attend'; "
          "padding keys get weight exactly 0",
          "[faults][mask]") {
  // shared/cases B06: q = [[1,0]], k = I2, v = [[1,2],[3,4]], key 1 is padding, scale 1.
  const Mat<float> Q = mat<float>({{1, 0}}), K = mat<float>({{1, 0}, {0, 1}}), V = mat<float>({{1, 2}, {3, 4}});
  const std::vector<bool> key_padding_mask = {false, true};  // True = ignore (other API)
  AttentionConfig<float> c = dot_config<float>();
  c.mask.keep.resize(1, 2);
  for (Eigen::Index j = 0; j < 2; ++j) c.mask.keep(0, j) = !key_padding_mask[std::size_t(j)];
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  check_sig6("weights", r.weights, {1.0, 0.0}, eps_of<float>());
  CHECK(r.weights(0, 1) == 0);
  check_sig6("out", r.output, {1.0, 2.0}, eps_of<float>());
  // Lengths have no polarity: key_length = 1 is the same mask.
  AttentionConfig<float> l = dot_config<float>();
  l.mask.key_length = 1;
  CHECK(attention_forward<float>(Q, K, V, {}, l).weights == r.weights);
  // The bug, expressible: the padding mask handed over without inversion attends to padding.
  AttentionConfig<float> b = dot_config<float>();
  b.mask.keep = keep_mask({{false, true}});
  const auto bug = attention_forward<float>(Q, K, V, {}, b);
  check_sig6("buggy weights", bug.weights, {0.0, 1.0}, eps_of<float>());
  check_sig6("buggy out", bug.output, {3.0, 4.0}, eps_of<float>());
  // An all-False padding mask passed uninverted masks every key: zeros, never NaN.
  b.mask.keep = keep_mask({{false, false}});
  const auto none = attention_forward<float>(Q, K, V, {}, b);
  CHECK(none.weights.isZero(0));
  CHECK(none.output.isZero(0));
}

// ---- B07 ---------------------------------------------------------------------------------
TEST_CASE("B07: a 0/1 float matrix passed as an additive bias is rejected; causal masking "
          "via the keep mask, the causal flag or a 0/-inf bias agree",
          "[faults][mask]") {
  // shared/cases B07: q = k = I2, v = [[1,2],[3,4]], intended causal, scale 1.
  const Mat<float> Q = mat<float>({{1, 0}, {0, 1}}), K = Q, V = mat<float>({{1, 2}, {3, 4}});
  AttentionConfig<float> c = dot_config<float>();
  c.mask.causal = true;
  const auto r = attention_forward<float>(Q, K, V, {}, c);
  check_sig6("weights", r.weights, {1.0, 0.0, 0.268941, 0.731059}, eps_of<float>());
  check_sig6("out", r.output, {1.0, 2.0, 2.462117, 3.462117}, eps_of<float>());
  AttentionConfig<float> k = dot_config<float>();
  k.mask.keep = keep_mask({{true, false}, {true, true}});  // tril(ones) as a keep mask
  CHECK(attention_forward<float>(Q, K, V, {}, k).weights == r.weights);
  AttentionConfig<float> a = dot_config<float>();
  a.bias.dense = mat<float>({{0, -kInf}, {0, 0}});  // correct_additive_mask
  CHECK(attention_forward<float>(Q, K, V, {}, a).weights == r.weights);
  // The bug: the float 0/1 matrix as an additive bias. Rejected, naming the keep mask.
  AttentionConfig<float> bug = dot_config<float>();
  bug.bias.dense = mat<float>({{1, 0}, {1, 1}});  // float_mask_passed
  CHECK_THROWS_AS(attention_forward<float>(Q, K, V, {}, bug), std::invalid_argument);
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, bug), Contains("mask"));
  bug.bias.dense = Mat<float>::Ones(2, 2);
  CHECK_THROWS_WITH(attention_forward<float>(Q, K, V, {}, bug), Contains("mask"));
  bug.bias.dense = Mat<float>::Zero(2, 2);  // an all-zero bias is a no-op, accepted
  CHECK_NOTHROW(attention_forward<float>(Q, K, V, {}, bug));
}

// ---- B09 ---------------------------------------------------------------------------------
TEST_CASE("B09: the default scale is 1/sqrt(head_dim), not 1/sqrt(d_model), 1/sqrt(num_heads), "
          "1/head_dim or a division by head_dim^-0.5",
          "[faults][scale]") {
  // shared/cases B09: one head of d_model 8, 2 heads, head_dim 4; v = I2, raw scores [4,0].
  const Mat<double> Q = mat({{1, 1, 1, 1}}), K = mat({{1, 1, 1, 1}, {0, 0, 0, 0}}), V = mat({{1, 0}, {0, 1}});
  AttentionConfig<double> c;  // scaled_dot, scale unset
  const auto r = attention_forward<double>(Q, K, V, {}, c);
  CHECK(r.scale == 0.5);
  check_sig6("raw_scores", r.raw_scores, {4, 0}, eps_of<double>());
  check_sig6("weights", r.weights, {0.880797, 0.119203}, eps_of<double>());
  check_sig6("out", r.output, {0.880797, 0.119203}, eps_of<double>());
  // Each wrong scale, passed explicitly, gives the case's buggy weights (and differs).
  const std::vector<std::pair<double, std::vector<double>>> wrong = {
      {1 / std::sqrt(8.0), {0.80443, 0.19557}},     // 1/sqrt(d_model)
      {0.25, {0.731059, 0.268941}},                 // 1/d_head
      {1 / std::sqrt(2.0), {0.944193, 0.055807}},   // 1/sqrt(num_heads)
      {2.0, {0.999665, 0.0003353501}}};             // divide by d**-0.5
  for (const auto& [s, w] : wrong) {
    AttentionConfig<double> e;
    e.scale = s;
    const auto b = attention_forward<double>(Q, K, V, {}, e);
    INFO("scale " << s);
    check_sig6("buggy weights", b.weights, w, eps_of<double>());
    CHECK(std::abs(b.weights(0, 0) - r.weights(0, 0)) > 1e-3);
  }
}

// ---- B10 ---------------------------------------------------------------------------------
TEST_CASE("B10: an explicit scale reaches the computation (1.0 and 0.25 differ from the "
          "default 0.5); scale 0 is used as given and gives uniform weights",
          "[faults][scale]") {
  // shared/cases B10: q = [[1,1,0,0]], k = [[1,1,0,0],[0,0,0,0]], v = I2, raw [2,0].
  auto run = [](auto tag) {
    using T = decltype(tag);
    const Mat<T> Q = mat<T>({{1, 1, 0, 0}}), K = mat<T>({{1, 1, 0, 0}, {0, 0, 0, 0}}), V = mat<T>({{1, 0}, {0, 1}});
    const std::vector<std::pair<std::optional<double>, std::vector<double>>> table = {
        {std::nullopt, {0.731059, 0.268941}},
        {1.0, {0.880797, 0.119203}},
        {0.25, {0.622459, 0.377541}},
        {0.0, {0.5, 0.5}}};  // the "literal 0 default" bug's value, correct for an explicit 0
    std::vector<Mat<T>> seen;
    for (const auto& [s, w] : table) {
      AttentionConfig<T> c;
      c.scale = s;
      const auto r = attention_forward<T>(Q, K, V, {}, c);
      INFO("scale " << (s ? std::to_string(*s) : "default"));
      check_sig6("weights", r.weights, w, eps_of<T>());
      CHECK(r.output == r.weights);  // out_equals_weights_since_v_is_I
      for (const auto& prev : seen) CHECK(prev != r.weights);  // every scale is visible
      seen.push_back(r.weights);
    }
  };
  run(float{});
  run(double{});
}

// ---- B12 ---------------------------------------------------------------------------------
TEST_CASE("B12: cosine scores of a zero vector are 0, not 0/0 = NaN, for every tiny magnitude",
          "[faults][score]") {
  // shared/cases B12: q = [[0,0]], k = I2, v = [[1,2],[3,4]], tau = 1.
  auto run = [](auto tag) {
    using T = decltype(tag);
    AttentionConfig<T> c;
    c.score = "cosine";
    const Mat<T> V = mat<T>({{1, 2}, {3, 4}});
    const auto r = attention_forward<T>(mat<T>({{0, 0}}), mat<T>({{1, 0}, {0, 1}}), V, {}, c);
    check_sig6("scores", r.raw_scores, {0.0, 0.0}, eps_of<T>());
    check_sig6("weights", r.weights, {0.5, 0.5}, eps_of<T>());
    check_sig6("out", r.output, {2.0, 3.0}, eps_of<T>());
    const auto g = attention_backward<T>(mat<T>({{0, 0}}), mat<T>({{1, 0}, {0, 1}}), V, {}, c, r,
                                         Mat<T>::Ones(1, 2));
    CHECK(g.dQ.allFinite());
    CHECK(g.dK.allFinite());
    // cos([0,0],[0,0]) and cos([0,0],[0.6,0.8]) are 0.
    const auto z = attention_forward<T>(mat<T>({{0, 0}}), mat<T>({{0, 0}, {0.6, 0.8}}), V, {}, c);
    CHECK(z.raw_scores.isZero(0));
    // Whole kind: any magnitude from 0 up through the eps floor gives finite scores in [-1, 1].
    for (double m : {0.0, double(std::numeric_limits<T>::denorm_min()), 1e-30, 1e-20, 1e-9, 1e-8, 1e-7, 1.0, 1e10}) {
      const Mat<T> q = mat<T>({{m, -m}}), k = mat<T>({{m, m}, {0, m}, {m, 0}});
      const auto s = attention_forward<T>(q, k, mat<T>({{1}, {2}, {3}}), {}, c);
      const auto gs = attention_backward<T>(q, k, mat<T>({{1}, {2}, {3}}), {}, c, s, Mat<T>::Ones(1, 1));
      INFO("magnitude " << m);
      CHECK(s.raw_scores.allFinite());
      CHECK(s.raw_scores.cwiseAbs().maxCoeff() <= T(1 + 1e-6));
      CHECK(gs.dQ.allFinite());
      CHECK(gs.dK.allFinite());
    }
  };
  run(float{});
  run(double{});
  // f32(FLT_MIN * FLT_MIN) = 0: why norms must never be multiplied before dividing.
  volatile float fmin = FLT_MIN;
  CHECK(fmin * fmin == 0.0f);
}

TEST_CASE("B12: cosine of a large fp32 vector with itself is 1 (norms do not overflow)",
          "[faults][score]") {
  // A plain sqrt(sum x^2) overflows in float for |x| > ~1.8e19: x / inf = 0 and the cosine
  // becomes 0 instead of 1. bfloat16 storage reaches these magnitudes (max 3.39e38).
  AttentionConfig<float> c;
  c.score = "cosine";
  const Mat<float> x = mat<float>({{1e20, 0}});
  const auto r = attention_forward<float>(x, x, mat<float>({{1}}), {}, c);
  CHECK(r.raw_scores(0, 0) == Approx(1.0f));
}

// ---- B13 ---------------------------------------------------------------------------------
TEST_CASE("B13: temperature 0 is rejected for soft normalizers; tau -> 0 reaches the hard "
          "limit without NaN; ties split for softmax and go to the lowest index for hard",
          "[faults][temperature]") {
  // shared/cases B13: logits [1,3,2]; tie logits [3,3,1] with v [[1,0],[0,1],[5,5]].
  const Mat<double> z = mat({{1, 3, 2}}), Vz = Mat<double>::Identity(3, 3);
  for (const auto& n : normalizer_infos()) {
    AttentionConfig<double> c = dot_config<double>();
    c.normalizer = n.name;
    c.temperature = 0;
    INFO("normalizer " << n.name);
    if (n.soft) {
      CHECK_THROWS_AS(from_scores<double>(z, Vz, c), std::invalid_argument);
      CHECK_THROWS_WITH(from_scores<double>(z, Vz, c), Contains("temperature") && Contains("hard"));
    } else {
      check_sig6("tau=0 (limit / hard argmax)", from_scores<double>(z, Vz, c).weights, {0.0, 1.0, 0.0}, 0);
    }
  }
  AttentionConfig<double> c = dot_config<double>();
  c.temperature = 0.01;
  check_sig6("tau=0.01 (stable softmax)", from_scores<double>(z, Vz, c).weights,
             {1.383897e-87, 1.0, 3.720076e-44}, eps_of<double>());

  const Mat<double> tie = mat({{3, 3, 1}}), Vt = mat({{1, 0}, {0, 1}, {5, 5}});
  auto sweep = [&](auto tag, std::vector<double> taus) {
    using T = decltype(tag);
    for (double tau : taus) {
      INFO("tau " << tau << ", " << qp::finfo<T>().name);
      AttentionConfig<T> s = dot_config<T>();
      s.temperature = tau;
      const auto a = from_scores<T>(z.cast<T>(), Vz.cast<T>(), s);
      CHECK(a.weights.allFinite());
      if (tau <= 1e-3) CHECK(a.weights == mat<T>({{0, 1, 0}}));  // one-hot, no NaN
      const auto t = from_scores<T>(tie.cast<T>(), Vt.cast<T>(), s);
      check_sig6("tie tau->0+ soft limit", t.weights, {0.5, 0.5, 0.0}, eps_of<T>());
      if (tau <= 1e-3) check_sig6("tie soft-limit out", t.output, {0.5, 0.5}, eps_of<T>());
    }
  };
  sweep(double{}, {1e-1, 1e-3, 1e-10, 1e-30, 1e-300, std::numeric_limits<double>::denorm_min()});
  sweep(float{}, {1e-1, 1e-3, 1e-10, 1e-30, 1e-38, 1e-44});
  // Hard and top-1: ties go to the lowest key index (ONNX Hardmax), one-hot sums to 1.
  for (const char* name : {"hard", "topk_softmax"}) {
    AttentionConfig<double> h = dot_config<double>();
    h.normalizer = name;
    h.norm_options.top_k = 1;
    const auto t = from_scores<double>(tie, Vt, h);
    INFO(name);
    CHECK(t.weights == mat({{1, 0, 0}}));  // tie hardmax (first index)
    check_sig6("tie hardmax out", t.output, {1.0, 0.0}, 0);
  }
}

TEST_CASE("B13: a soft-normalizer temperature that rounds to 0 in fp32 is an error, not NaN",
          "[faults][temperature]") {
  // tau = 1e-46 is > 0 in double but 0.0f in float: (z - max) / 0 would be 0/0 = NaN.
  AttentionConfig<float> c = dot_config<float>();
  c.temperature = 1e-46;
  bool finite = false;
  try {
    finite = from_scores<float>(mat<float>({{1, 3, 2}}), Mat<float>::Identity(3, 3), c).weights.allFinite();
  } catch (const std::invalid_argument&) {
    finite = true;  // a clear error would also be a fix
  }
  CHECK(finite);
}

// ---- B14 ---------------------------------------------------------------------------------
TEST_CASE("B14: hard attention ties go to the lowest index (the one-hot sums to 1); "
          "straight-through forward is the one-hot, backward the soft gradient",
          "[faults][hard]") {
  // shared/cases B14, tie_case: y_soft [0.4,0.4,0.2], v [[1,0],[0,1],[5,5]].
  const Mat<double> logits = mat({{std::log(0.4), std::log(0.4), std::log(0.2)}});
  const Mat<double> Vt = mat({{1, 0}, {0, 1}, {5, 5}});
  AttentionConfig<double> h = dot_config<double>();
  h.normalizer = "hard";
  const auto t = from_scores<double>(logits, Vt, h);
  CHECK(t.weights == mat({{1, 0, 0}}));  // tie_y_hard
  CHECK(t.weights.sum() == 1.0);
  check_sig6("tie_out", t.output, {1.0, 0.0}, 0);

  // grad_case: logits [1,2,0], tau 1, zero noise, upstream grads e0 and e1. Our noise g is
  // seeded, so each query row holds z - g_i: the perturbed logits are z (to rounding).
  const std::uint64_t seed = 17;
  const Mat<double> g = qkscope::detail::gumbel_noise<double>(2, 3, seed);
  const Mat<double> zq = mat({{1, 2, 0}, {1, 2, 0}}) - g;
  const Mat<double> I3 = Mat<double>::Identity(3, 3), dO = mat({{1, 0, 0}, {0, 1, 0}});
  AttentionConfig<double> st = dot_config<double>();
  st.normalizer = "gumbel_softmax";
  st.norm_options.seed = seed;
  st.norm_options.hard = true;
  AttentionConfig<double> soft = st;
  soft.norm_options.hard = false;
  const auto fs = attention_forward<double>(zq, I3, I3, {}, soft);
  check_sig6("grad_y_soft", fs.weights.row(0), {0.244728, 0.665241, 0.090031}, eps_of<double>());
  const auto fh = attention_forward<double>(zq, I3, I3, {}, st);
  CHECK(fh.weights == mat({{0, 1, 0}, {0, 1, 0}}));  // grad_forward_ret, bit-exact one-hot
  const auto gh = attention_backward<double>(zq, I3, I3, {}, st, fh, dO);
  // dQ = dL/dlogits here (K = I, scale 1).
  check_sig6("dL/dlogits for g=[1,0,0]", gh.dQ.row(0), {0.184836, -0.162803, -0.022033}, eps_of<double>());
  check_sig6("dL/dlogits for g=[0,1,0]", gh.dQ.row(1), {-0.162803, 0.222695, -0.059892}, eps_of<double>());

  // The ST property on random inputs: forward = one-hot(argmax(z + g)), backward = the soft
  // Gumbel-softmax backward with the same seed.
  detail::Rng rng(3);
  const MatrixD Q = qktest::randn(rng, 4, 3), K = qktest::randn(rng, 5, 3), V = qktest::randn(rng, 5, 2);
  const MatrixD G = qktest::randn(rng, 4, 2);
  AttentionConfig<double> rh;
  rh.normalizer = "gumbel_softmax";
  rh.norm_options.seed = 9;
  rh.norm_options.hard = true;
  rh.temperature = 0.5;
  AttentionConfig<double> rs = rh;
  rs.norm_options.hard = false;
  const auto hf = attention_forward<double>(Q, K, V, {}, rh);
  const auto sf = attention_forward<double>(Q, K, V, {}, rs);
  const MatrixD noise = qkscope::detail::gumbel_noise<double>(4, 5, 9);
  for (Eigen::Index i = 0; i < 4; ++i) {
    Eigen::Index best;
    (hf.masked_scores.row(i) + noise.row(i)).maxCoeff(&best);
    for (Eigen::Index j = 0; j < 5; ++j) CHECK(hf.weights(i, j) == (j == best ? 1.0 : 0.0));
  }
  const auto hg = attention_backward<double>(Q, K, V, {}, rh, hf, G);
  const auto sg = attention_backward<double>(Q, K, V, {}, rs, sf, G);
  CHECK(hg.dQ.isApprox(sg.dQ, 1e-12));
  CHECK(hg.dK.isApprox(sg.dK, 1e-12));
  CHECK(!hg.dQ.isZero(1e-9));  // the soft gradient flows (a plain one-hot would give 0)
}

// ---- B16 ---------------------------------------------------------------------------------
TEST_CASE("B16: softmax subtracts the row max, so scores 1000 in fp32 and 12 in fp16 give "
          "finite weights",
          "[faults][precision]") {
  // shared/cases B16 caseA: fp32 scores [1000, 999, 0], v = [[1],[2],[3]].
  const auto a = from_scores<float>(mat<float>({{1000, 999, 0}}), mat<float>({{1}, {2}, {3}}), dot_config<float>());
  check_sig6("caseA_weights", a.weights, {0.731059, 0.268941, 0.0}, eps_of<float>());
  CHECK(a.weights(0, 2) == 0);
  check_sig6("caseA_out", a.output, {1.268941}, eps_of<float>());
  // caseB: fp16 scores [12, 11] (storage fp16, math fp32).
  const auto b = qp::attention_forward_mixed(mat<half>({{12, 11}}), mat<half>({{1, 0}, {0, 1}}),
                                             mat<half>({{1, 0}, {0, 1}}), ScoreParams<half>{}, dot_config<float>());
  check_sig6("caseB_weights", b.fp32.weights, {0.731059, 0.268941}, eps_of<float>());
  // caseC: fp64 scores [1, -10, 1000].
  const auto c = from_scores<double>(mat({{1, -10, 1000}}), Mat<double>::Identity(3, 3), dot_config<double>());
  CHECK(c.weights == mat({{0, 0, 1}}));  // caseC_weights
  // The naive failures, reproduced.
  const auto na = qp::naive::softmax_no_max<float>(mat<float>({{1000, 999, 0}}));
  CHECK(std::isnan(na.weights(0, 0)));
  CHECK(std::isnan(na.weights(0, 1)));
  CHECK(na.weights(0, 2) == 0);  // caseA_weights_naive
  const auto nb = qp::naive::softmax_no_max<half>(mat<half>({{12, 11}}));
  CHECK(std::isnan(nb.weights(0, 0)));
  CHECK(nb.weights(0, 1) == 0);  // caseB_weights_naive_fp16
  CHECK(qp::stored_value<half>(std::exp(12.0)) == kInf);
  CHECK(qp::stored_value<half>(std::exp(11.0)) == 59872.0);
}

// ---- B17 ---------------------------------------------------------------------------------
TEST_CASE("B17: key padding masks key columns, not query rows; a padded query row gets keys-only "
          "attention, or zeros when it is masked too",
          "[faults][mask]") {
  // shared/cases B17: q = k = v = x = [[1,0],[0,1],[5,5]], scale 1, key 2 is padding.
  const Mat<float> x = mat<float>({{1, 0}, {0, 1}, {5, 5}});
  AttentionConfig<float> c = dot_config<float>();
  c.mask.key_length = 2;  // key_padding_True_is_pad [F,F,T] as a length
  const auto r = attention_forward<float>(x, x, x, {}, c);
  check_sig6("weights_rows01", r.weights.topRows(2), {0.731059, 0.268941, 0.0, 0.268941, 0.731059, 0.0},
             eps_of<float>());
  CHECK(r.weights.col(2).isZero(0));
  check_sig6("out_rows01", r.output.topRows(2), {0.731059, 0.268941, 0.268941, 0.731059}, eps_of<float>());
  check_sig6("out_row2_policy_keys_only", r.output.row(2), {0.5, 0.5}, eps_of<float>());
  // The same as an explicit keep mask (columns), and with the padded query masked too.
  AttentionConfig<float> k = dot_config<float>();
  k.mask.keep = keep_mask({{true, true, false}, {true, true, false}, {true, true, false}});
  CHECK(attention_forward<float>(x, x, x, {}, k).weights == r.weights);
  k.mask.keep.row(2).setConstant(false);
  const auto z = attention_forward<float>(x, x, x, {}, k);
  check_sig6("out_row2_policy_zero_padded_queries", z.output.row(2), {0.0, 0.0}, eps_of<float>());
  CHECK(z.output.row(2).isZero(0));
  // The bug: padding applied to the query axis (row 2) instead of the key axis.
  AttentionConfig<float> q = dot_config<float>();
  q.mask.keep = keep_mask({{true, true, true}, {true, true, true}, {false, false, false}});
  const auto bug = attention_forward<float>(x, x, x, {}, q);
  check_sig6("buggy weights rows01", bug.weights.topRows(2),
             {0.017868, 0.006573263, 0.975559, 0.006573263, 0.017868, 0.975559}, eps_of<float>());
  check_sig6("buggy out rows01", bug.output.topRows(2), {4.895662, 4.884367, 4.884367, 4.895662}, eps_of<float>());
  CHECK(bug.weights.row(2).isZero(0));  // no finite fill: zeros, not the uniform 1/3
}

// ---- B19 ---------------------------------------------------------------------------------
TEST_CASE("B19: Luong attention: 'general' is bilinear with W_a, and h~ = tanh(W_c [c; h_t]) "
          "from the core's context",
          "[faults][score]") {
  // shared/cases B19: h_t = [1,0], h_s = I2, W_c = [[1,0,1,0],[0,1,0,1]], W_a = diag(2,1).
  const Mat<double> h_t = mat({{1, 0}}), h_s = mat({{1, 0}, {0, 1}});
  const Mat<double> W_c = mat({{1, 0, 1, 0}, {0, 1, 0, 1}});
  AttentionConfig<double> c;
  c.score = "dot";
  const auto r = attention_forward<double>(h_t, h_s, h_s, {}, c);
  check_sig6("a_dot", r.weights, {0.731059, 0.268941}, eps_of<double>());
  check_sig6("context", r.output, {0.731059, 0.268941}, eps_of<double>());
  Eigen::VectorXd cat(4);
  cat << r.output.row(0).transpose(), h_t.row(0).transpose();  // [c; h_t]
  const Eigen::VectorXd pre = W_c * cat;
  const Eigen::VectorXd h_tilde = pre.array().tanh();
  check_sig6("h_tilde", h_tilde.transpose(), {0.939181, 0.26264}, eps_of<double>());
  check_sig6("h_tilde without tanh (the bug)", pre.transpose(), {1.731059, 0.268941}, eps_of<double>());
  CHECK((h_tilde - pre).cwiseAbs().maxCoeff() > 0.5);

  ScoreParams<double> p;
  p.W = mat({{2, 0}, {0, 1}});  // W_a
  AttentionConfig<double> g;
  g.score = "bilinear";
  const auto rg = attention_forward<double>(h_t, h_s, h_s, p, g);
  check_sig6("a_general(W_a=diag(2,1))", rg.weights, {0.880797, 0.119203}, eps_of<double>());
  CHECK(rg.weights != r.weights);  // "general computed as dot" would give a_dot
  p.W = Mat<double>::Identity(2, 2);  // general with W_a = I is dot
  CHECK(attention_forward<double>(h_t, h_s, h_s, p, g).weights == r.weights);
}
