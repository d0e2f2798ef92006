// Mixed-precision attention (precision/mixed.hpp): fp16/bf16 storage, fp32 math.
//
// The tolerance rule for reduced-precision inputs (compare.hpp's rule, with its inputs
// stated): the inputs are first rounded to the storage type S; that rounding is part of
// the problem, not an error of the computation. Then
//   fast  = attention_forward_mixed<S>              (fp32 math on the stored values)
//   ref   = reference::attention<double>            on the stored values, widened exactly
//   naive = reference::attention<float>             on the same stored values
// and  max|fast - ref| <= 2 max|naive - ref| + 1e-6 (1 + max|ref|)  (FlashAttention's rule).
// The output rounded to S may in addition be half an ulp of S away:
//   |out_S - ref| <= tol + (eps_S / 2) |ref| + denorm_min_S.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"
#include "support/random.hpp"

using namespace qkscope;
namespace qp = qkscope::precision;
using qktest::Shape;

namespace {

template <class S>
ScoreParams<S> params_to(const ScoreParams<double>& p) {
  ScoreParams<S> q;
  q.W = qp::to_storage<S>(p.W);
  q.W_q = qp::to_storage<S>(p.W_q);
  q.W_k = qp::to_storage<S>(p.W_k);
  q.v = qp::to_storage<S>(p.v);
  q.b = qp::to_storage<S>(p.b);
  q.w = qp::to_storage<S>(p.w);
  return q;
}

template <class U, class S>
ScoreParams<U> params_widen(const ScoreParams<S>& p) {
  return {qp::widen<U>(p.W), qp::widen<U>(p.W_q), qp::widen<U>(p.W_k),
          qp::widen<U>(p.v), qp::widen<U>(p.b),   qp::widen<U>(p.w)};
}


std::vector<std::pair<std::string, MaskSpec>> masks(const Shape& s) {
  std::vector<std::pair<std::string, MaskSpec>> out;
  out.push_back({"none", {}});
  MaskSpec pad;
  pad.key_length = (s.L_k + 1) / 2;
  out.push_back({"key_length", pad});
  MaskSpec br;
  br.causal = true;
  br.alignment = CausalAlignment::bottom_right;
  out.push_back({"causal bottom_right", br});
  MaskSpec empty;
  empty.keep = KeepMask::Constant(s.L_q, s.L_k, true);
  empty.keep.row(s.L_q - 1).setConstant(false);
  out.push_back({"last row fully masked", empty});
  return out;
}

bool row_fully_masked(const MatrixD& masked_scores, Eigen::Index i) {
  return !(masked_scores.row(i).array() > -std::numeric_limits<double>::infinity()).any();
}

}  // namespace

TEMPLATE_TEST_CASE("mixed-precision attention matches the double reference on the stored inputs "
                   "(fp16, bf16; every score x mask x normalizer, fully masked rows included)",
                   "[precision][mixed]", Eigen::half, Eigen::bfloat16) {
  using S = TestType;
  const qp::Finfo fi = qp::finfo<S>();
  detail::Rng rng(2024);
  for (const Shape& s : qktest::kShapes) {
    const Mat<S> Q = qp::to_storage<S>(qktest::randn(rng, s.L_q, s.d_q));
    const Mat<S> K = qp::to_storage<S>(qktest::randn(rng, s.L_k, s.d_k));
    const Mat<S> V = qp::to_storage<S>(qktest::randn(rng, s.L_k, s.d_v));
    const MatrixD Q64 = qp::widen<double>(Q), K64 = qp::widen<double>(K), V64 = qp::widen<double>(V);
    const MatrixD dense = qktest::randn(rng, s.L_q, s.L_k, 0.5);
    for (const char* score : {"scaled_dot", "cosine", "bilinear", "additive"}) {
      const ScoreParams<S> pS = params_to<S>(init_params<double>(score, s.d_q, s.d_k, s.d_h, 5));
      const ScoreParams<double> p64 = params_widen<double>(pS);
      const ScoreParams<float> p32 = params_widen<float>(pS);
      for (const auto& [mask_name, mask] : masks(s)) {
        for (const auto& n : normalizer_infos()) {
          AttentionConfig<float> c;
          c.score = score;
          c.mask = mask;
          c.normalizer = n.name;
          c.temperature = 0.7;
          c.norm_options.get<qkscope::norm::TopKSoftmax>().top_k = 2;
          c.norm_options.get<qkscope::norm::GumbelSoftmax>().seed = 3;
          if (mask_name == "key_length") {  // one variant with every bias
            c.bias.alibi_slope = 0.25;
            c.bias.dense = dense.cast<float>();
          }
          INFO(qp::finfo<S>().name << ", score " << score << ", L_q=" << s.L_q << " L_k=" << s.L_k
                                   << " d=" << s.d_q << ", mask " << mask_name << ", normalizer " << n.name);
          const auto fast = qp::attention_forward_mixed(Q, K, V, pS, c);
          const auto ref = reference::attention<double>(Q64, K64, V64, p64, qktest::config_as<double>(c));
          const auto naive = reference::attention<float>(qp::widen<float>(Q), qp::widen<float>(K),
                                                         qp::widen<float>(V), p32, c);
          CHECK_MATCHES_REFERENCE("masked_scores", fast.fp32.masked_scores, naive.masked_scores, ref.masked_scores);
          CHECK_MATCHES_REFERENCE("weights", fast.fp32.weights, naive.weights, ref.weights);
          CHECK_MATCHES_REFERENCE("logsumexp", fast.fp32.logsumexp, naive.logsumexp, ref.logsumexp);
          const auto rep = qktest::compare("output", fast.fp32.output, naive.output, ref.output);
          INFO(rep.text);
          CHECK(rep.ok);
          // The output rounded to S: exactly round_to<S> of the fp32 output, within half an ulp.
          REQUIRE(fast.output.rows() == s.L_q);
          CHECK(qp::widen<double>(fast.output) == qp::widen<double>(qp::to_storage<S>(fast.fp32.output)));
          const MatrixD outS = qp::widen<double>(fast.output);
          const double worst = ((outS - ref.output).cwiseAbs().array() -
                                (fi.eps / 2) * ref.output.cwiseAbs().array())
                                   .maxCoeff();
          CHECK(worst <= rep.tol + fi.denorm_min);
          CHECK(fast.fp32.weights.allFinite());
          for (Eigen::Index i = 0; i < s.L_q; ++i)
            if (row_fully_masked(ref.masked_scores, i)) {
              CHECK(fast.fp32.weights.row(i).isZero(0));
              CHECK(outS.row(i).isZero(0));
            }
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("the mixed path is the fp32 core on the widened inputs, forward and backward; "
                   "fully masked rows give zero gradient",
                   "[precision][mixed]", Eigen::half, Eigen::bfloat16, float) {
  using S = TestType;
  detail::Rng rng(11);
  const Mat<S> Q = qp::to_storage<S>(qktest::randn(rng, 5, 4)), K = qp::to_storage<S>(qktest::randn(rng, 6, 4));
  const Mat<S> V = qp::to_storage<S>(qktest::randn(rng, 6, 3));
  const Mat<float> dO = qktest::randn<float>(rng, 5, 3);
  AttentionConfig<float> c;
  c.mask.causal = true;
  c.mask.keep = KeepMask::Constant(5, 6, true);
  c.mask.keep.row(2).setConstant(false);
  const auto fwd = qp::attention_forward_mixed(Q, K, V, ScoreParams<S>{}, c);
  const auto core = attention_forward<float>(qp::widen<float>(Q), qp::widen<float>(K), qp::widen<float>(V), {}, c);
  CHECK(fwd.fp32.weights == core.weights);
  CHECK(fwd.fp32.output == core.output);
  const auto g = qp::attention_backward_mixed(Q, K, V, ScoreParams<S>{}, c, fwd, dO);
  const auto gc = attention_backward<float>(qp::widen<float>(Q), qp::widen<float>(K), qp::widen<float>(V), {}, c, core, dO);
  CHECK(g.dQ == gc.dQ);
  CHECK(g.dK == gc.dK);
  CHECK(g.dV == gc.dV);
  CHECK(g.dQ.row(2).isZero(0));
  CHECK(fwd.fp32.output.row(2).isZero(0));
  CHECK(g.dQ.allFinite());
  // round_output = false leaves the storage output empty; fp32 params are accepted too.
  const auto noround = qp::attention_forward_mixed(Q, K, V, ScoreParams<float>{}, c, false);
  CHECK(noround.output.size() == 0);
  CHECK(noround.fp32.output == core.output);
}

TEMPLATE_TEST_CASE("every fill value and every precision gives the same correct weights in the "
                   "mixed path, since a fill constant never reaches the arithmetic",
                   "[precision][mixed][fill]", Eigen::half, Eigen::bfloat16, float) {
  using S = TestType;
  detail::Rng rng(5);
  const Eigen::Index L_q = 4, L_k = 5;
  const Mat<S> Q = qp::to_storage<S>(qktest::randn(rng, L_q, 3)), K = qp::to_storage<S>(qktest::randn(rng, L_k, 3));
  const Mat<S> V = qp::to_storage<S>(qktest::randn(rng, L_k, 2));
  KeepMask keep = KeepMask::Constant(L_q, L_k, true);
  keep(0, 1) = keep(0, 3) = false;        // partially masked
  keep.row(2).setConstant(false);         // fully masked
  keep.block(3, 0, 1, 4).setConstant(false);  // one valid key
  AttentionConfig<float> base;
  base.mask.keep = keep;
  const auto want = qp::attention_forward_mixed(Q, K, V, ScoreParams<S>{}, base);
  AttentionConfig<double> c64;
  c64.mask.keep = keep;
  const auto ref = reference::attention<double>(qp::widen<double>(Q), qp::widen<double>(K), qp::widen<double>(V), {}, c64);
  const auto naive32 = reference::attention<float>(qp::widen<float>(Q), qp::widen<float>(K), qp::widen<float>(V), {}, base);
  CHECK_MATCHES_REFERENCE("weights (keep mask)", want.fp32.weights, naive32.weights, ref.weights);
  CHECK(want.fp32.weights.row(2).isZero(0));

  for (double fill : {-1e4, -1e9, -std::numeric_limits<double>::infinity(), qp::finfo<Eigen::half>().min,
                      qp::finfo<Eigen::bfloat16>().min, qp::finfo<float>().min}) {
    // The legacy additive plane as the old code stored it in S (0 keep, S(fill) masked).
    Mat<float> plane(L_q, L_k);
    for (Eigen::Index i = 0; i < plane.size(); ++i)
      plane.data()[i] = keep.data()[i] ? 0.0f : float(qp::stored_value<S>(fill));
    INFO(qp::finfo<S>().name << ", fill " << fill << " stored as " << qp::stored_value<S>(fill));
    // (1) Plane given alongside the keep mask: bitwise the same weights, whatever the fill.
    AttentionConfig<float> both = base;
    both.bias.dense = plane;
    const auto rb = qp::attention_forward_mixed(Q, K, V, ScoreParams<S>{}, both);
    CHECK(rb.fp32.weights == want.fp32.weights);
    CHECK(rb.fp32.output == want.fp32.output);
    // (2) Plane alone, added in fp32: rows with a kept key get the correct weights (exact
    // zeros on masked keys); a fully masked row is zeros (-inf fill) or softmax(s + fill)
    // (finite fill: fault case B04's "fp32 finite min" policy, tests/data/fault_cases.json) —
    // finite either way, and no -16 cliff since the sum is formed in fp32.
    AttentionConfig<float> only;
    only.bias.dense = plane;
    const auto ro = qp::attention_forward_mixed(Q, K, V, ScoreParams<S>{}, only);
    CHECK(ro.fp32.weights.allFinite());
    for (Eigen::Index i = 0; i < L_q; ++i) {
      if (keep.row(i).any()) {
        CHECK(ro.fp32.weights.row(i).isApprox(want.fp32.weights.row(i), 1e-6f));
        for (Eigen::Index j = 0; j < L_k; ++j)
          if (!keep(i, j)) CHECK(ro.fp32.weights(i, j) == 0);
      } else if (std::isinf(qp::stored_value<S>(fill))) {
        CHECK(ro.fp32.weights.row(i).isZero(0));
      } else {  // softmax of (s + fill) in fp32: sums to 1, uniform once fill swamps s
        CHECK(ro.fp32.weights.row(i).sum() == Approx(1.0).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("the mixed path rejects a soft-normalizer temperature that rounds to 0 in fp32",
          "[precision][mixed][temperature]") {
  const Mat<Eigen::half> Q = qp::to_storage<Eigen::half>(MatrixD::Identity(2, 2));
  AttentionConfig<float> c;
  c.temperature = 1e-46;  // > 0 in double, 0.0f in float
  CHECK_THROWS_AS(qp::attention_forward_mixed(Q, Q, Q, ScoreParams<Eigen::half>{}, c), std::invalid_argument);
  CHECK_THROWS_WITH(qp::attention_forward_mixed(Q, Q, Q, ScoreParams<Eigen::half>{}, c),
                    Catch::Matchers::Contains("float32"));
  c.temperature = 1e-44;  // a float subnormal: fine, the one-hot limit
  CHECK(qp::attention_forward_mixed(Q, Q, Q, ScoreParams<Eigen::half>{}, c).fp32.weights.allFinite());
  c.temperature = 1e-46;
  c.normalizer = "hard";  // the tau -> 0 limit ignores tau
  CHECK(qp::attention_forward_mixed(Q, Q, Q, ScoreParams<Eigen::half>{}, c).fp32.weights ==
        Mat<float>::Identity(2, 2));
  // Storage inf/NaN is rejected like any non-finite input.
  Mat<Eigen::half> bad = Q;
  bad(0, 0) = qp::round_to<Eigen::half>(1e9);  // fp16 overflow: inf
  CHECK_THROWS_AS(qp::attention_forward_mixed(bad, Q, Q, ScoreParams<Eigen::half>{}, AttentionConfig<float>{}),
                  std::invalid_argument);
}
