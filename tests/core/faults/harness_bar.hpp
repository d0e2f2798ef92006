// tests/core/faults/harness_bar.hpp — the fuzz harness's check of the tiled CPU path, for
// Catch2 sweeps: forward and backward against the double core (the output against the
// reference), the bar being the farthest from it of the core in float and of the perturbed
// and reversed evaluations (tests/fuzz/perturbed.hpp; docs/RELIABILITY.md, "The bar"). Where
// one float run of the core is far luckier than float's error model (keys tied in the logits,
// tau ~ 1e-3), a fast path is held to what rounding the inputs once does, as in the fuzzer.
// tiled_check.hpp's tiled_matches is the stricter check (the float core alone as the bar).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <initializer_list>
#include <vector>

#include "../../fuzz/perturbed.hpp"
#include "../../fuzz/reversed.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"
#include "tiled_check.hpp"

namespace qktest {

/// What matches_under_harness_bar leaves out, for a sweep aimed at part of a path.
struct HarnessChecks {
  bool dtau = true;  // dL/dtemperature
  bool dqk = true;   // dQ and dK
  bool weights = true;  // the score's weight matrices: dW, dW_q, dW_k
  bool key_side = true;  // dK and dW_k (with dqk and weights)
  bool vectors = true;   // the score's vector parameters: dv, db, dw
};

/// The float runs the fuzz harness makes of a call's gradients, as double: the float core from
/// its own float forward (first; on a scaled dO where it overflows, as the harness), the
/// runs on moved inputs and with queries or keys reversed whose backward ran, then the float
/// backward from the double forward f64 with its weights rounded to nearest and up or down at
/// random (kWeightStreams: perturbed.hpp), each a sample of what holding P in float does.
/// `runs`: the perturbed and reversed evaluations (perturbed_references, reversed).
inline std::vector<qkscope::AttentionGrads<double>> harness_grad_runs(
    const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V, const qkscope::Matrix& dO,
    const qkscope::ScoreParams<float>& p, const qkscope::AttentionConfig<float>& c,
    const qkscope::AttentionResult<double>& f64, const std::vector<qkfuzz::PerturbedReference>& runs) {
  using namespace qkscope;
  std::vector<AttentionGrads<double>> all;
  const auto add_from = [&](const AttentionResult<float>& f) {
    try {
      all.push_back(qkfuzz::float_core_backward(Q, K, V, p, c, f, dO));
    } catch (const std::invalid_argument&) {  // past float on every scaled dO too: no run
    }
  };
  add_from(attention_forward<float>(Q, K, V, p, c));
  for (const auto& r : runs)
    if (r.grads_ok) all.push_back(r.grads);
  add_from(result_as<float>(f64));
  for (const auto& [seed, opposite] : qkfuzz::kWeightStreams) {
    qkfuzz::Signs s(seed, opposite);
    add_from(qkfuzz::weights_rounded_randomly(f64, s));
  }
  return all;
}

/// Checks output, dV and, unless `checks` leaves them out, the score's vector parameters'
/// gradients (dv, db, dw) the call has, dQ, dK, the weight matrices' and dL/dtemperature.
/// Requires the tiled path to run (no fallback to the core).
inline void matches_under_harness_bar(const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V,
                                      const qkscope::Matrix& dO, const qkscope::ScoreParams<float>& p,
                                      const qkscope::AttentionConfig<float>& c, const qkscope::cpu::TiledOptions& o,
                                      HarnessChecks checks = {}) {
  using namespace qkscope;
  using S1 = Eigen::Matrix<double, 1, 1>;
  const auto t = cpu::attention_forward<float>(Q, K, V, p, c, o);
  REQUIRE_FALSE(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, o);
  const auto cd = config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>(), dOd = dO.cast<double>();
  const auto f64 = attention_forward<double>(Qd, Kd, Vd, pd, cd);
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, pd, cd, f64, dOd);
  const auto f32 = attention_forward<float>(Q, K, V, p, c);
  auto runs = qkfuzz::perturbed_references(Qd, Kd, Vd, dOd, pd, cd, Q, K, V, dO, p, c);
  for (const bool queries : {true, false}) runs.push_back(qkfuzz::reversed(Q, K, V, dO, p, c, queries));
  auto wide = [](const auto& m) { return MatrixD(m.template cast<double>()); };
  std::vector<MatrixD> out{wide(f32.output)};
  for (const auto& r : runs)
    if (r.ok) out.push_back(r.fwd.output);
  const MatrixD ref_out = reference::attention<double>(Qd, Kd, Vd, pd, cd).output;
  CHECK_MATCHES_REFERENCE("tiled output", t.output, qkfuzz::farthest_of(ref_out, out), ref_out);
  const auto grad_runs = harness_grad_runs(Q, K, V, dO, p, c, f64, runs);
  // One entry per checked quantity: the tiled value, the double core's, and how to read it from
  // a run's gradients.
  auto check = [&](const char* name, const auto& tiled, const auto& core64, auto get) {
    if (core64.size() == 0) return;
    std::vector<MatrixD> bars;
    for (const auto& g : grad_runs) bars.push_back(wide(get(g)));
    CHECK_MATCHES_REFERENCE(name, tiled, qkfuzz::farthest_of(wide(core64), bars), wide(core64));
  };
  if (checks.dqk) {
    check("tiled dQ", tg.dQ, g64.dQ, [](const auto& g) -> const auto& { return g.dQ; });
    if (checks.key_side) check("tiled dK", tg.dK, g64.dK, [](const auto& g) -> const auto& { return g.dK; });
  }
  check("tiled dV", tg.dV, g64.dV, [](const auto& g) -> const auto& { return g.dV; });
  if (checks.weights) {
    check("tiled dW", tg.dparams.W, g64.dparams.W, [](const auto& g) -> const auto& { return g.dparams.W; });
    check("tiled dW_q", tg.dparams.W_q, g64.dparams.W_q,
          [](const auto& g) -> const auto& { return g.dparams.W_q; });
    if (checks.key_side)
      check("tiled dW_k", tg.dparams.W_k, g64.dparams.W_k,
            [](const auto& g) -> const auto& { return g.dparams.W_k; });
  }
  if (checks.vectors) {
    check("tiled dv", MatrixD(tg.dparams.v.cast<double>()), g64.dparams.v,
          [](const auto& g) -> const auto& { return g.dparams.v; });
    check("tiled db", MatrixD(tg.dparams.b.cast<double>()), g64.dparams.b,
          [](const auto& g) -> const auto& { return g.dparams.b; });
    check("tiled dw", MatrixD(tg.dparams.w.cast<double>()), g64.dparams.w,
          [](const auto& g) -> const auto& { return g.dparams.w; });
  }
  if (checks.dtau)
    check("tiled dtemperature", S1(tg.dtemperature), S1(g64.dtemperature),
          [](const auto& g) { return S1(g.dtemperature); });
}

/// The tiled dL/dtau at each block_k of `blocks` (one thread) against the double core: within
/// `rel` of it, and under the fuzz harness's bar (the key side left out).
inline void check_dtau(const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V,
                       const qkscope::Matrix& dO, const qkscope::ScoreParams<float>& p,
                       const qkscope::AttentionConfig<float>& c, double rel, std::initializer_list<Eigen::Index> blocks) {
  using namespace qkscope;
  const double right = double_core_grads(Q, K, V, dO, p, c).dtemperature;
  for (const Eigen::Index bk : blocks) {
    INFO("block_k " << bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, p, c, one_thread(bk));
    REQUIRE_FALSE(t.fallback);
    const double dtau = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, one_thread(bk)).dtemperature;
    CHECK(std::abs(dtau - right) <= rel * std::abs(right));
    matches_under_harness_bar(Q, K, V, dO, p, c, one_thread(bk), {.key_side = false});
  }
}

/// One case of a seeded sweep: skipped (false) where the tiled forward falls back to the core
/// or the float core's backward refuses (a gradient past float: the fuzz harness's other
/// property); else checked under the harness's bar with the options `options()` gives (called
/// only then, so that a sweep's random stream does not depend on the skipped cases), true.
template <class Options>
bool sweep_case_under_bar(const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V,
                          const qkscope::Matrix& dO, const qkscope::ScoreParams<float>& p,
                          const qkscope::AttentionConfig<float>& c, Options&& options, HarnessChecks checks = {}) {
  using namespace qkscope;
  if (cpu::attention_forward<float>(Q, K, V, p, c, one_thread()).fallback) return false;
  try {
    (void)attention_backward<float>(Q, K, V, p, c, attention_forward<float>(Q, K, V, p, c), dO);
  } catch (const std::invalid_argument&) {
    return false;
  }
  matches_under_harness_bar(Q, K, V, dO, p, c, options(), checks);
  return true;
}

/// A seeded sweep's grid: fn(shape, tau, scale) for each shape x tau x scale, in that order
/// (the random stream follows it), each captured for the assertions fn makes.
struct SweepShape {
  Eigen::Index L_q, L_k, d, d_h;
};
template <class Fn>
void sweep_grid(std::initializer_list<SweepShape> shapes, std::initializer_list<double> taus,
                std::initializer_list<double> scales, Fn&& fn) {
  for (const SweepShape& s : shapes)
    for (const double tau : taus)
      for (const double scale : scales) {
        CAPTURE(s.L_q, s.L_k, s.d, s.d_h, tau, scale);
        fn(s, tau, scale);
      }
}

/// matches_under_harness_bar at each key block size of `blocks` (one thread).
inline void under_bar_at_blocks(const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V,
                                const qkscope::Matrix& dO, const qkscope::ScoreParams<float>& p,
                                const qkscope::AttentionConfig<float>& c, std::initializer_list<Eigen::Index> blocks) {
  for (const Eigen::Index bk : blocks) {
    CAPTURE(bk);
    matches_under_harness_bar(Q, K, V, dO, p, c, one_thread(bk));
  }
}

/// matches_under_harness_bar at every tiling the fuzzer draws (block_q and block_k 1-4, one
/// thread), and at each further block_k of `more_bk` with those block_q.
inline void under_bar_at_tilings(const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V,
                                 const qkscope::Matrix& dO, const qkscope::ScoreParams<float>& p,
                                 const qkscope::AttentionConfig<float>& c, std::initializer_list<Eigen::Index> more_bk = {}) {
  for (const Eigen::Index bq : {1, 2, 3, 4}) {
    auto at = [&](Eigen::Index bk) {
      CAPTURE(bq, bk);
      auto o = one_thread(bk);
      o.block_q = bq;
      matches_under_harness_bar(Q, K, V, dO, p, c, o);
    };
    for (const Eigen::Index bk : {1, 2, 3, 4}) at(bk);
    for (const Eigen::Index bk : more_bk) at(bk);
  }
}

}  // namespace qktest
