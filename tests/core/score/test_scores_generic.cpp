// Generic tests over the registry of scoring functions (TEMPLATE_LIST_TEST_CASE):
// every scoring function x mask x normalizer, forward against the double reference
// (float fast path vs naive float32, one tolerance rule) and backward against
// central finite differences of the reference, on boundary shapes.
#include <catch2/catch.hpp>

#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/cases.hpp"
#include "support/compare.hpp"
#include "support/gradcheck.hpp"
#include "support/random.hpp"

using namespace qkscope;
using qktest::Shape;

namespace {

template <class F>
std::vector<Shape> shapes_for() {
  std::vector<Shape> v(std::begin(qktest::kShapes), std::end(qktest::kShapes));
  if (!F::same_dim) v.insert(v.end(), std::begin(qktest::kMixedShapes), std::end(qktest::kMixedShapes));
  return v;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("every scoring function x mask x normalizer matches the double reference",
                        "[score][generic]", ScoreFunctions) {
  using F = TestType;
  detail::Rng rng(42);
  for (const Shape& s : shapes_for<F>()) {
    const MatrixD Q = qktest::randn(rng, s.L_q, s.d_q), K = qktest::randn(rng, s.L_k, s.d_k),
                  V = qktest::randn(rng, s.L_k, s.d_v);
    const auto p64 = init_params<double>(F::name, s.d_q, s.d_k, s.d_h, 7);
    const auto p32 = p64.template cast<float>();
    for (const auto& [mask_name, mask] : qktest::mask_cases(s.L_q, s.L_k)) {
      for (const bool biased : {false, true})
      for (const auto& ninfo : normalizer_infos()) {
        AttentionConfig<double> c64;
        c64.score = F::name;
        c64.mask = mask;
        if (biased) {  // every score modifier at once: softcap -> ALiBi -> relative -> T5 -> dense
          c64.bias.softcap = 3.0;
          c64.bias.alibi_slope = 0.25;
          c64.bias.relative = qktest::randn_vec(rng, 3, 0.5);
          c64.bias.dense = qktest::randn(rng, s.L_q, s.L_k, 0.5);
          detail::Rng t5rng(7);  // own stream: the other draws stay as they were
          c64.bias.t5 = T5Buckets{true, 6, 4};
          c64.bias.t5_table = qktest::randn_vec(t5rng, 6, 0.5);
        }
        c64.normalizer = ninfo.name;
        c64.temperature = 0.7;
        c64.norm_options.get<qkscope::norm::TopKSoftmax>().top_k = 2;
        c64.norm_options.get<qkscope::norm::GumbelSoftmax>().seed = 3;
        AttentionConfig<float> c32;
        c32.score = c64.score;
        c32.mask = mask;
        c32.normalizer = c64.normalizer;
        c32.temperature = 0.7;
        c32.norm_options = c64.norm_options;
        c32.bias = {c64.bias.softcap, c64.bias.alibi_slope, c64.bias.relative.cast<float>(),
                    c64.bias.dense.cast<float>(), c64.bias.t5, c64.bias.t5_table.cast<float>()};
        INFO("biases " << (biased ? "softcap+alibi+relative+T5+dense" : "none"));
        INFO("score " << F::name << ", shape L_q=" << s.L_q << " L_k=" << s.L_k << " d_q=" << s.d_q
                      << " d_k=" << s.d_k << ", mask " << mask_name << ", normalizer " << ninfo.name);
        const auto ref = reference::attention<double>(Q, K, V, p64, c64);
        const auto naive = reference::attention<float>(Q.cast<float>(), K.cast<float>(),
                                                       V.cast<float>(), p32, c32);
        const auto fast = attention_forward<float>(Q.cast<float>(), K.cast<float>(),
                                                   V.cast<float>(), p32, c32);
        CHECK_MATCHES_REFERENCE("raw_scores", fast.raw_scores, naive.raw_scores, ref.raw_scores);
        CHECK_MATCHES_REFERENCE("masked_scores", fast.masked_scores, naive.masked_scores, ref.masked_scores);
        CHECK_MATCHES_REFERENCE("weights", fast.weights, naive.weights, ref.weights);
        CHECK_MATCHES_REFERENCE("output", fast.output, naive.output, ref.output);
        CHECK_MATCHES_REFERENCE("logsumexp", fast.logsumexp, naive.logsumexp, ref.logsumexp);
        CHECK(fast.weights.allFinite());
        CHECK(fast.output.allFinite());
        // Row sums: 1, or 0 for rows with no visible key.
        for (Eigen::Index i = 0; i < s.L_q; ++i) {
          const bool any = (ref.masked_scores.row(i).array() > -std::numeric_limits<double>::infinity()).any();
          CHECK(fast.weights.row(i).sum() == Approx(any ? 1.0 : 0.0).margin(1e-6));
        }
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("every scoring function's gradients match finite differences of the reference",
                        "[score][generic][grad]", ScoreFunctions) {
  using F = TestType;
  detail::Rng rng(7);
  for (const Shape& s : shapes_for<F>()) {
    for (const auto& [mask_name, mask] : qktest::mask_cases(s.L_q, s.L_k)) {
      for (const auto& ninfo : normalizer_infos()) {
        qktest::Problem pr;
        pr.Q = qktest::randn(rng, s.L_q, s.d_q);
        pr.K = qktest::randn(rng, s.L_k, s.d_k);
        pr.V = qktest::randn(rng, s.L_k, s.d_v);
        pr.params = init_params<double>(F::name, s.d_q, s.d_k, s.d_h, 11);
        if (pr.params.b.size()) pr.params.b = qktest::randn_vec(rng, s.d_h, 0.3);
        pr.cfg.score = F::name;
        pr.cfg.mask = mask;
        pr.cfg.normalizer = ninfo.name;
        pr.cfg.temperature = 0.9;
        pr.cfg.norm_options.get<qkscope::norm::TopKSoftmax>().top_k = 2;
        pr.cfg.norm_options.get<qkscope::norm::GumbelSoftmax>().seed = 5;
        pr.cfg.bias.softcap = 4.0;
        pr.cfg.bias.alibi_slope = 0.3;
        pr.cfg.bias.relative = qktest::randn_vec(rng, 5, 0.5);
        pr.cfg.bias.dense = qktest::randn(rng, s.L_q, s.L_k, 0.5);
        detail::Rng t5rng(9);  // own stream: the other draws stay as they were
        pr.cfg.bias.t5 = T5Buckets{false, 6, 4};
        pr.cfg.bias.t5_table = qktest::randn_vec(t5rng, 6, 0.5);
        const MatrixD G = qktest::randn(rng, s.L_q, s.d_v);
        INFO("score " << F::name << ", shape L_q=" << s.L_q << " L_k=" << s.L_k << " d_q=" << s.d_q
                      << " d_k=" << s.d_k << ", mask " << mask_name << ", normalizer " << ninfo.name);

        const auto fwd = attention_forward<double>(pr.Q, pr.K, pr.V, pr.params, pr.cfg);
        const auto g = attention_backward<double>(pr.Q, pr.K, pr.V, pr.params, pr.cfg, fwd, G);
        qktest::Problem x = pr;
        CHECK_GRAD("dQ", g.dQ, qktest::numeric_grad(x, x.Q, G));
        CHECK_GRAD("dK", g.dK, qktest::numeric_grad(x, x.K, G));
        CHECK_GRAD("dV", g.dV, qktest::numeric_grad(x, x.V, G));
        using Scalar1 = Eigen::Matrix<double, 1, 1>;
        const Scalar1 dtau_analytic(g.dtemperature), dtau_numeric(qktest::numeric_dtemperature(x, G));
        CHECK_GRAD("dtemperature", dtau_analytic, dtau_numeric);
        CHECK_GRAD("d bias.relative", g.drelative, qktest::numeric_grad(x, x.cfg.bias.relative, G));
        CHECK_GRAD("d bias.dense", g.ddense, qktest::numeric_grad(x, x.cfg.bias.dense, G));
        CHECK_GRAD("d bias.t5_table", g.dt5_table, qktest::numeric_grad(x, x.cfg.bias.t5_table, G));
        auto& P = x.params;
        const auto& dP = g.dparams;
        if (P.W.size()) CHECK_GRAD("dW", dP.W, qktest::numeric_grad(x, P.W, G));
        if (P.W_q.size()) CHECK_GRAD("dW_q", dP.W_q, qktest::numeric_grad(x, P.W_q, G));
        if (P.W_k.size()) CHECK_GRAD("dW_k", dP.W_k, qktest::numeric_grad(x, P.W_k, G));
        if (P.v.size()) CHECK_GRAD("dv", dP.v, qktest::numeric_grad(x, P.v, G));
        if (P.b.size()) CHECK_GRAD("db", dP.b, qktest::numeric_grad(x, P.b, G));
        if (P.w.size()) CHECK_GRAD("dw", dP.w, qktest::numeric_grad(x, P.w, G));
        // A fully masked row contributes nothing anywhere.
        for (Eigen::Index i = 0; i < s.L_q; ++i)
          if (!(fwd.masked_scores.row(i).array() > -std::numeric_limits<double>::infinity()).any()) {
            CHECK(g.dQ.row(i).isZero(0));
            CHECK(fwd.output.row(i).isZero(0));
            CHECK(fwd.logsumexp(i) == -std::numeric_limits<double>::infinity());
          }
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("every scoring function states its FLOP count and whether it has a hidden width",
                        "[score][registry]", ScoreFunctions) {
  using F = TestType;
  const ScoreShape s{5, 7, 4, 4};
  // Affine in the number of pairs, with a positive cost per pair; the benchmarks divide by it.
  const double f0 = F::flops(s, 0.0, 3), f1 = F::flops(s, 35.0, 3), f2 = F::flops(s, 70.0, 3);
  CHECK(f1 > f0);
  CHECK(f0 >= 0.0);
  CHECK(f2 - f1 == Approx(f1 - f0));
  CHECK(score_flops(F::name, s, 35.0, 3) == f1);
  CHECK(F::flops(ScoreShape{5, 7, 4, 8}, 35.0, 3) > F::flops(ScoreShape{5, 7, 4, 4}, 35.0, 3));
  // `hidden` says the truth: the seeded parameters' size follows d_h exactly when it is set.
  const auto p3 = F::template init<float>(s, 3, 1), p6 = F::template init<float>(s, 6, 1);
  const bool follows = p3.v.size() != p6.v.size() || p3.W_q.rows() != p6.W_q.rows();
  CHECK(F::hidden == follows);
  CHECK(score_has_hidden(F::name) == F::hidden);
  CHECK((F::flops(s, 35.0, 6) > F::flops(s, 35.0, 3)) == F::hidden);
}
