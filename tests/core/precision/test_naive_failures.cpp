// The naive mode (precision/naive.hpp) reproduces each documented failure exactly, for every
// fill value and every precision, and the correct path (precision/mixed.hpp) gives the right
// weights on the same inputs. The expected outcome of each naive call is predicted from the
// format's range alone (a constant overflows iff it lies beyond finfo.min - half_ulp_at_max),
// not from the rounding code under test. Sources: tests/data/fault_cases.json B01, B03, B04,
// B05, B16.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "support/random.hpp"

using namespace qkscope;
namespace qp = qkscope::precision;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<double>& fills() {
  static const std::vector<double> f = {-1e4, -1e9, -kInf, qp::finfo<Eigen::half>().min,
                                        qp::finfo<Eigen::bfloat16>().min, qp::finfo<float>().min};
  return f;
}

/// Independent prediction: a value overflows S iff |x| >= max + half an ulp (or it is inf).
template <class S>
bool overflows_in(double x) {
  const auto fi = qp::finfo<S>();
  return std::isinf(x) || std::abs(x) >= fi.max + fi.half_ulp_at_max;
}

}  // namespace

TEMPLATE_TEST_CASE("naive masked_fill + softmax in the storage type: a fill that overflows gives "
                   "NaN on fully masked rows, a finite fill gives uniform weights there",
                   "[precision][naive][fill]", Eigen::half, Eigen::bfloat16, float) {
  using S = TestType;
  const auto fi = qp::finfo<S>();
  detail::Rng rng(8);
  const Mat<S> scores = qp::to_storage<S>(qktest::randn(rng, 3, 4, 2.0));
  KeepMask keep = KeepMask::Constant(3, 4, true);
  keep(0, 2) = false;             // row 0: partially masked
  keep.row(1).setConstant(false); // row 1: fully masked
  const auto right = qp::masked_softmax<S>(scores, keep);
  REQUIRE(right.diag.ok());
  CHECK(right.weights.row(1).isZero(0));
  for (double fill : fills()) {
    INFO(fi.name << ", fill " << fill);
    const bool to_inf = overflows_in<S>(fill);
    qp::Outcome o;
    REQUIRE_NOTHROW(o = qp::naive::masked_fill_softmax<S>(scores, keep, fill));
    CHECK(o.diag.constant_requested == fill);
    CHECK(std::isinf(o.diag.constant_stored) == to_inf);
    CHECK(o.diag.pytorch_raises == (std::isfinite(fill) && to_inf));
    // Row 0 (a kept key exists) is right for every fill, to the storage type's accuracy.
    CHECK((o.weights.row(0) - right.weights.row(0)).cwiseAbs().maxCoeff() <= 4 * fi.eps);
    CHECK(o.weights(0, 2) == 0);
    CHECK(o.weights.row(2).allFinite());
    // Row 1 (no kept key): NaN when the fill became -inf, else uniform 1/L_k (in S).
    if (to_inf) {
      CHECK(o.weights.row(1).array().isNaN().all());
      CHECK(o.diag.nan_rows == std::vector<Eigen::Index>{1});
      CHECK(o.diag.nan_count == 4);
      CHECK_FALSE(o.diag.ok());
    } else {
      CHECK(o.weights.row(1).isConstant(qp::as_double(S(S(1) / S(4)))));
      CHECK(o.diag.ok());
    }
    CHECK(o.diag.inf.row(1).all() == to_inf);
    CHECK_FALSE(o.diag.summary.empty());
  }
}

TEMPLATE_TEST_CASE("naive additive finfo.min mask in the storage type: score + min overflows to "
                   "-inf exactly from score <= -half_ulp_at_max (the fp16 -16 cliff)",
                   "[precision][naive][additive]", Eigen::half, Eigen::bfloat16, float) {
  using S = TestType;
  const auto fi = qp::finfo<S>();
  const double h = fi.half_ulp_at_max;
  // Fully masked rows [s, s]: NaN from the cliff on, quietly uniform before it.
  std::vector<double> ss = {0.0, -h / 4, -h / 2, -h, -2 * h};
  if (std::is_same_v<S, Eigen::half>)
    for (double s = -40; s <= 0; s += 0.25) ss.push_back(s);  // every quarter around -16
  KeepMask none = KeepMask::Constant(1, 2, false);
  const Mat<S> bias = qp::naive::finfo_min_bias<S>(none);
  CHECK(qp::as_double(bias(0, 0)) == fi.min);
  for (double s : ss) {
    INFO(fi.name << ", score " << s);
    Mat<S> scores(1, 2);
    scores.setConstant(qp::round_to<S>(s));
    REQUIRE(qp::as_double(scores(0, 0)) == s);  // every s above is representable
    const auto o = qp::naive::additive_mask_softmax<S>(scores, bias);
    const bool cliff = s <= -h;
    CHECK(std::isinf(o.logits(0, 0)) == cliff);
    CHECK(o.weights.array().isNaN().all() == cliff);
    if (!cliff) CHECK(o.weights == MatrixD::Constant(1, 2, 0.5));  // uniform: wrong, silently
    // qkscope: the same row as a keep mask gives zeros, whatever s.
    const auto r = qp::masked_softmax<S>(scores, none);
    CHECK(r.weights.isZero(0));
  }
}

TEMPLATE_TEST_CASE("naive (1 - keep) * MIN bias: MIN that overflows the storage type gives "
                   "0 * -inf = NaN on every kept key; two finfo.min planes sum to -inf",
                   "[precision][naive][extended]", Eigen::half, Eigen::bfloat16) {
  using S = TestType;
  const auto fi = qp::finfo<S>();
  const Mat<float> scores = (Mat<float>(2, 3) << 1, 2, 3, 0.5f, -1, 2).finished();
  const Mat<float> V = (Mat<float>(3, 1) << 1, 2, 3).finished();
  const KeepMask keep = (KeepMask(2, 3) << true, true, false, true, false, true).finished();
  const auto right = qp::masked_softmax<float>(scores, keep);
  for (double min_value : fills()) {
    INFO(fi.name << ", MIN " << min_value);
    const bool to_inf = overflows_in<S>(min_value);
    const auto o = qp::naive::extended_mask_attention<S>(scores, keep, min_value, V);
    for (Eigen::Index i = 0; i < keep.size(); ++i) {
      const double b = o.bias.data()[i];
      if (keep.data()[i]) CHECK((to_inf ? std::isnan(b) : b == 0));
      else CHECK(b == (to_inf ? -kInf : qp::stored_value<S>(min_value)));
    }
    CHECK(o.weights.array().isNaN().all() == to_inf);
    CHECK(o.output.array().isNaN().all() == to_inf);
    if (!to_inf) CHECK((o.weights - right.weights).cwiseAbs().maxCoeff() <= 1e-6);
  }
  CHECK(qp::naive::extended_mask_attention<S>(scores, keep, fi.min, V).diag.ok());
  // Two masks added as finfo.min planes (padding + causal): -inf where both mask.
  const KeepMask a = (KeepMask(1, 3) << true, false, false).finished();
  const KeepMask b = (KeepMask(1, 3) << true, true, false).finished();
  const auto sum = qp::naive::combine_additive_masks<S>(qp::naive::finfo_min_bias<S>(a),
                                                        qp::naive::finfo_min_bias<S>(b));
  CHECK(sum.bias == (MatrixD(1, 3) << 0, fi.min, -kInf).finished());
  CHECK(sum.diag.inf_count == 1);
  // qkscope combines masks by AND: the same two masks give the right, finite weights.
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = 1.0;
  c.mask.keep = a;
  c.mask.key_length = 2;
  const auto r = qp::attention_forward_mixed(qp::to_storage<S>(scores.topRows(1).eval()),
                                             qp::to_storage<S>(MatrixD::Identity(3, 3)),
                                             qp::to_storage<S>(V.cast<double>().eval()), ScoreParams<S>{}, c);
  CHECK(r.fp32.weights == Mat<float>((Mat<float>(1, 3) << 1, 0, 0).finished()));
}

TEMPLATE_TEST_CASE("naive softmax without max subtraction overflows once exp(score) exceeds "
                   "finfo.max; the core's softmax stays exact",
                   "[precision][naive][overflow]", Eigen::half, Eigen::bfloat16, float, double) {
  using S = TestType;
  const auto fi = qp::finfo<S>();
  const double x_ok = std::floor(std::log(fi.max)), x_bad = x_ok + 1;  // 11/12 fp16, 88/89 fp32, 709/710 fp64
  for (double x : {x_ok, x_bad}) {
    INFO(fi.name << ", scores [" << x << ", 0]");
    Mat<S> s(1, 2);
    s << qp::round_to<S>(x), S(0);
    REQUIRE(qp::as_double(s(0, 0)) == x);
    const auto o = qp::naive::softmax_no_max<S>(s);
    const double w0 = 1 / (1 + std::exp(-x)), w1 = std::exp(-x) / (1 + std::exp(-x));
    if (x == x_bad) {
      CHECK(std::isnan(o.weights(0, 0)));
      CHECK(o.weights(0, 1) == 0);
      CHECK(o.diag.inf(0, 0));
      CHECK(o.diag.nan_rows == std::vector<Eigen::Index>{0});
    } else {
      CHECK(o.diag.ok());
      CHECK(o.weights(0, 0) == Approx(w0).epsilon(4 * fi.eps));
    }
    // The core (fp32 math for storage types, the type itself for float/double) is right.
    AttentionConfig<float> c;
    c.score = "dot";
    c.scale = 1.0;
    MatrixD w;
    if constexpr (std::is_same_v<S, double>) {
      AttentionConfig<double> c64;
      c64.score = "dot";
      c64.scale = 1.0;
      w = attention_forward<double>(qp::widen<double>(s), MatrixD::Identity(2, 2), MatrixD::Identity(2, 2), {}, c64).weights;
    } else {
      const Mat<S> I = qp::to_storage<S>(MatrixD::Identity(2, 2));
      w = qp::attention_forward_mixed(s, I, I, ScoreParams<S>{}, c).fp32.weights.template cast<double>();
    }
    CHECK(w(0, 0) == Approx(w0).epsilon(1e-6));
    CHECK(w(0, 1) == Approx(w1).epsilon(1e-5));
  }
  // A sum that overflows while every exp is finite flushes the row to zeros (no NaN).
  if constexpr (std::is_same_v<S, Eigen::half>) {
    Mat<S> s(1, 2);
    s << S(11), S(11);
    const auto o = qp::naive::softmax_no_max<S>(s);
    CHECK(o.weights.isZero(0));
    CHECK(o.diag.overflow_rows == std::vector<Eigen::Index>{0});
    CHECK(o.diag.ok());
  }
}
