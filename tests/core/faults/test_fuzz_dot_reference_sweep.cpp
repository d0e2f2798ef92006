// Seeded sweep of the dot family's tiled dQ where keys tie (cpu/scorers.hpp: DotScorer forms
// each dQ entry as the plain sum or the sum about a tied reference key, whichever has the
// smaller rounding bound). A reviewer's differential checker found either single form failing
// on such inputs (the split up to 17 times past the rule's bar, the plain sum up to 62,456
// times); this keeps a few hundred of those shapes in the normal test run. The bar is the
// fuzz harness's (docs/RELIABILITY.md, "The bar"): the farthest from the reference of the core
// in float and the core on inputs within rounding of the case's (tests/fuzz/perturbed.hpp),
// because at tau ~ 1e-3 one float run of the core can be far luckier than float's error model.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../../fuzz/perturbed.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/detail/rng.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/tiled_check.hpp"

using namespace qkscope;

namespace {

/// Keys with a tied group: g copies of one key, the others random, one of them sometimes
/// near 0 in a coordinate (keys the query attends to that sit far from the tied group).
/// The comparisons that tell the per-entry choice from either single form are the cases of
/// test_fuzz_dot_reference_key.cpp; this sweep guards every shape against gross errors.
Matrix tied_keys(detail::Rng& rng, Eigen::Index L_k, Eigen::Index d) {
  Matrix K = qktest::randn<float>(rng, L_k, d);
  const Eigen::Index g = 2 + Eigen::Index(rng.uniform() * double(L_k - 1));  // 2 .. L_k
  const Eigen::Index src = Eigen::Index(rng.uniform() * double(L_k));
  // Sometimes the tied group is huge (1 to 1e6 times the others): a reference key that may
  // only be used where its bound is small (it was not, once: dQ 0.42 off for a padded key).
  if (rng.uniform() < 0.3) K.row(src) *= float(std::pow(10.0, 6 * rng.uniform()));
  for (Eigen::Index k = 0, j = src; k < std::min(g, L_k); ++k, j = (j + 1) % L_k) K.row(j) = K.row(src);
  if (rng.uniform() < 0.5) K(Eigen::Index(rng.uniform() * double(L_k)), 0) *= 1e-3f;
  return K;
}

/// Of the evaluations given, the one farthest from ref (the harness's `farthest`).
MatrixD farthest(const MatrixD& ref, const std::vector<MatrixD>& runs) {
  MatrixD best = ref;
  double worst = -1;
  for (const MatrixD& x : runs) {
    if (x.rows() != ref.rows() || x.cols() != ref.cols()) continue;
    const double err = (x - ref).cwiseAbs().maxCoeff();
    if (err > worst) worst = err, best = x;
  }
  return best;
}

}  // namespace

TEST_CASE("tiled dot family: dQ with tied keys matches the reference on seeded shapes",
          "[faults][reliability][tiled][score]") {
  detail::Rng rng(20261204);
  for (int n = 0; n < 240; ++n) {
    const Eigen::Index L_q = 1 + Eigen::Index(rng.uniform() * 5), L_k = 2 + Eigen::Index(rng.uniform() * 8),
                       d = 1 + Eigen::Index(rng.uniform() * 4);
    AttentionConfig<float> c;
    c.score = rng.uniform() < 0.6 ? "dot" : "cosine";
    c.temperature = std::pow(10.0, -3 * rng.uniform());
    c.mask.causal = rng.uniform() < 0.25;
    if (rng.uniform() < 0.3) c.mask.key_length = 1 + int(rng.uniform() * double(L_k));
    const double q_scale = std::pow(10.0, 2 * rng.uniform() - 1);
    const Matrix Q = qktest::randn<float>(rng, L_q, d, q_scale);
    const Matrix K = tied_keys(rng, L_k, d);
    const Matrix V = qktest::randn<float>(rng, L_k, 2);
    const Matrix dO = qktest::randn<float>(rng, L_q, 2, std::pow(10.0, 3 * rng.uniform()));
    auto o = qktest::one_thread_small_tiles();
    o.block_k = 1 + Eigen::Index(rng.uniform() * 3);
    CAPTURE(n, c.score, L_q, L_k, d, c.temperature, c.mask.causal, o.block_k);

    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
    REQUIRE_FALSE(t.fallback);
    const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
    const auto cd = qktest::config_as<double>(c);
    const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>(), dOd = dO.cast<double>();
    const auto f64 = attention_forward<double>(Qd, Kd, Vd, {}, cd);
    const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, f64, dOd);
    const auto f32 = attention_forward<float>(Q, K, V, {}, c);
    const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
    auto runs = qkfuzz::perturbed_references(Qd, Kd, Vd, dOd, {}, cd, Q, K, V, dO, {}, c);
    for (const bool queries : {true, false}) runs.push_back(qkfuzz::reversed(Q, K, V, dO, {}, c, queries));
    std::vector<MatrixD> out{f32.output.cast<double>()}, dq{g32.dQ.cast<double>()}, dk{g32.dK.cast<double>()},
        dv{g32.dV.cast<double>()};
    for (const auto& r : runs)
      if (r.ok) out.push_back(r.fwd.output), dq.push_back(r.grads.dQ), dk.push_back(r.grads.dK), dv.push_back(r.grads.dV);
    const MatrixD ref_out = reference::attention<double>(Qd, Kd, Vd, {}, cd).output;
    CHECK_MATCHES_REFERENCE("tiled output", t.output, farthest(ref_out, out), ref_out);
    CHECK_MATCHES_REFERENCE("tiled dQ", tg.dQ, farthest(g64.dQ, dq), g64.dQ);
    CHECK_MATCHES_REFERENCE("tiled dK", tg.dK, farthest(g64.dK, dk), g64.dK);
    CHECK_MATCHES_REFERENCE("tiled dV", tg.dV, farthest(g64.dV, dv), g64.dV);
  }
}
