// tests/fuzz/fuzz_attention.cpp — libFuzzer harness over the public C++ API: the core
// forward and backward (float), the tiled CPU path, mixed precision (fp16 and bf16 storage)
// and the tile functors the CUDA kernels are built from (in the kernels' loop structure,
// tests/core/pipeline/emulate.hpp, wherever logits_fold_safe admits the fast path), on one
// case from case.hpp.
// Properties (any violation traps, and libFuzzer keeps the input):
//   - every call returns or throws std::invalid_argument with a message (anything else,
//     a crash or a sanitizer report is a finding);
//   - inputs are finite (or the call threw), so every returned number is finite: weights
//     in [0, 1], each row summing to 1 or all zero, all zero only when no key is visible;
//     output, entropy and gradients finite; logsumexp not NaN;
//   - the tiled path succeeds exactly when the core does, with the same message when both
//     refuse, and its output and logsumexp match the double reference under the test
//     suite's one tolerance rule (the bar: core float, and the core on inputs within
//     rounding of the case's: perturbed.hpp); its gradients are finite and match too;
//   - the mixed-precision path never returns a non-finite number.
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "case.hpp"
#include "perturbed.hpp"
#include "lse_range.hpp"
#include "past_float.hpp"
#include "reversed.hpp"
#include "qkscope/detail/logit_range.hpp"
#include "qkscope/cpu/attention.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "pipeline/emulate.hpp"
#include "support/convert.hpp"

using namespace qkscope;
using qkfuzz::Case;
using qkfuzz::all_finite;
using qkfuzz::finding;

namespace {

struct Outcome {
  bool ok = false;
  std::string error;
};

template <class Fn>
Outcome attempt(Fn&& fn) {
  Outcome o;
  try {
    fn();
    o.ok = true;
  } catch (const std::invalid_argument& e) {
    o.error = e.what();
  }
  return o;
}

void check_forward(const Case& c, const AttentionResult<float>& r) {
  if (!all_finite(r.weights) || !all_finite(r.output) || !all_finite(r.entropy))
    finding("core forward returned a non-finite weight, output or entropy", c);
  if (r.logsumexp.array().isNaN().any()) finding("core forward returned a NaN logsumexp", c);
  for (Eigen::Index i = 0; i < r.weights.rows(); ++i) {
    double sum = 0;
    bool visible = false;
    for (Eigen::Index j = 0; j < r.weights.cols(); ++j) {
      const float p = r.weights(i, j);
      if (!(p >= 0 && p <= 1)) finding("weight outside [0, 1]", c);
      sum += p;
      visible = visible || r.masked_scores(i, j) > -std::numeric_limits<float>::infinity();
    }
    if (visible ? std::abs(sum - 1) > 1e-5 * double(r.weights.cols()) + 1e-6 : sum != 0)
      finding("weight row " + std::to_string(i) + " sums to " + std::to_string(sum) +
                  (visible ? " with visible keys" : " with no visible key"),
              c);
  }
}

template <class G>
void check_grads_finite(const Case& c, const G& g, const char* path) {
  if (!all_finite(g.dQ) || !all_finite(g.dK) || !all_finite(g.dV) || !all_finite(g.dparams.W) ||
      !all_finite(g.dparams.W_q) || !all_finite(g.dparams.W_k) || !all_finite(g.dparams.v) ||
      !all_finite(g.dparams.b) || !all_finite(g.dparams.w) || !all_finite(g.drelative) ||
      !all_finite(g.ddense) || !all_finite(g.dt5_table) || !std::isfinite(g.dtemperature))
    finding(std::string(path) + " backward returned a non-finite gradient", c);
}

template <class A, class B, class C>
void match(const Case& c, const char* what, const A& fast, const B& bar, const C& ref) {
  const auto rep = qktest::compare(what, fast, bar, ref);
  if (!rep.ok) finding("tiled path differs from the reference: " + rep.text, c);
}

/// The bar of the rule: of the evaluations given (float runs of the core; `moved`: runs on
/// inputs within rounding of the case's, perturbed.hpp), the one farthest from ref (finite
/// entries, as compare counts them); null pointers are skipped.
template <class R, class X, class... M>
MatrixD farthest(const R& ref, const std::vector<const X*>& moved, const M*... m) {
  MatrixD best = ref.template cast<double>();
  double worst = -1;
  auto consider = [&](const auto* x) {
    if (!x || x->rows() != ref.rows() || x->cols() != ref.cols()) return;
    const MatrixD xd = x->template cast<double>();
    double err = 0;
    for (Eigen::Index i = 0; i < ref.rows(); ++i)
      for (Eigen::Index j = 0; j < ref.cols(); ++j)
        if (std::isfinite(double(ref(i, j))) && std::isfinite(xd(i, j)))
          err = std::max(err, std::abs(xd(i, j) - double(ref(i, j))));
    if (err > worst) {
      worst = err;
      best = xd;
    }
  };
  (consider(m), ...);
  for (const X* x : moved) consider(x);
  return best;
}

MatrixD wide(const Matrix& m) { return m.cast<double>(); }

ScoreParams<double> wide(const ScoreParams<float>& p) {
  ScoreParams<double> d;
  d.W = p.W.cast<double>();
  d.W_q = p.W_q.cast<double>();
  d.W_k = p.W_k.cast<double>();
  d.v = p.v.cast<double>();
  d.b = p.b.cast<double>();
  d.w = p.w.cast<double>();
  return d;
}

/// r and g are the core's results, valid when core (core_bwd) is ok.
void tiled_path(FuzzedDataProvider& f, const Case& c, const Outcome& core, const AttentionResult<float>* r,
                const Outcome& core_bwd, const AttentionGrads<float>* g) {
  cpu::TiledOptions opt;
  opt.block_q = f.ConsumeIntegralInRange<int>(1, 4);
  opt.block_k = f.ConsumeIntegralInRange<int>(1, 4);
  opt.threads = 1;
  cpu::TiledResult<float> t;
  const Outcome tf = attempt([&] { t = cpu::attention_forward(c.Q, c.K, c.V, c.params, c.cfg, opt); });
  if (tf.ok != core.ok || tf.error != core.error)
    finding("tiled forward and core disagree: core '" + (core.ok ? "ok" : core.error) + "', tiled '" +
                (tf.ok ? "ok" : tf.error) + "'",
            c);
  if (!tf.ok) return;
  if (!all_finite(t.output) || t.logsumexp.array().isNaN().any())
    finding("tiled forward returned a non-finite output or a NaN logsumexp", c);
  const auto cd = qktest::config_as<double>(c.cfg);
  const auto pd = wide(c.params);
  if (!cpu::tiled_supported(c.cfg)) {  // the core's own result, passed through
    if (t.output != r->output) finding("tiled fallback output differs from the core", c);
    return;
  }
  const auto ref = reference::attention<double>(wide(c.Q), wide(c.K), wide(c.V), pd, cd);
  const MatrixD Qd = wide(c.Q), Kd = wide(c.K), Vd = wide(c.V);
  auto prs = qkfuzz::perturbed_references(Qd, Kd, Vd, wide(c.dO), pd, cd, c.Q, c.K, c.V, c.dO, c.params, c.cfg);
  for (const bool queries : {true, false})
    prs.push_back(qkfuzz::reversed(c.Q, c.K, c.V, c.dO, c.params, c.cfg, queries));
  // One field of every evaluation on moved inputs that ran: P([](auto& e) -> auto& { ... }).
  // Fields of the gradients only from runs whose backward ran (grads_ok).
  auto P = [&](auto field, bool grads = false) {
    using X = std::remove_cvref_t<decltype(field(prs[0]))>;
    std::vector<const X*> v;
    for (const auto& e : prs)
      if (e.ok && (!grads || e.grads_ok)) v.push_back(&field(e));
    return v;
  };
  match(c, "tiled output", t.output, farthest(ref.output, P([](auto& e) -> auto& { return e.fwd.output; }), &r->output),
        ref.output);
  const auto lse_moved = P([](auto& e) -> auto& { return e.fwd.logsumexp; });
  const VectorD lse_ref = qkfuzz::lse_in_float(ref.logsumexp, t.logsumexp, lse_moved);
  match(c, "tiled logsumexp", t.logsumexp, farthest(lse_ref, lse_moved, &r->logsumexp), lse_ref);

  // The CUDA kernels' tile functors (dot-product scores), where the host may launch them.
  if ((c.cfg.score == "dot" || c.cfg.score == "scaled_dot") && c.Q.cols() > 0 &&
      qkscope::detail::logits_fold_safe<float>(c.cfg.score, c.Q, c.K, c.params, r->scale, c.cfg.temperature,
                                               c.cfg.bias, c.Q.rows(), c.K.rows()) &&
      qkscope::detail::values_accumulate_safe<float>(qkscope::detail::max_abs(c.V), c.K.rows())) {
    const MaskFn mfn = resolve_mask(c.cfg.mask, c.Q.rows(), c.K.rows());
    const pipeline::Logits<float> lg{mfn, score_mods(c.cfg.bias, r->scale, c.cfg.temperature, mfn.offset)};
    const auto emu = qktile::flash_forward<float>(
        [&](int i, int j) { return float(c.Q.row(i).dot(c.K.row(j))); }, c.V.data(), int(c.V.cols()), lg,
        pipeline::BlockClassifier{lg.mask, int(opt.block_q), int(opt.block_k), nullptr});
    match(c, "tile functors output", Eigen::Map<const Matrix>(emu.out.data(), c.Q.rows(), c.V.cols()),
          farthest(ref.output, P([](auto& e) -> auto& { return e.fwd.output; }), &r->output), ref.output);
  }

  AttentionGrads<float> tg;
  const Outcome tb = attempt([&] { tg = cpu::attention_backward(c.Q, c.K, c.V, c.params, c.cfg, t, c.dO, opt); });
  // A core that overflowed where the tiled path returned is no finding when the tiled gradients
  // match the double reference (checked below, the bar without the core's own run): float
  // cannot settle such a call robustly, and the core's rounding took it past the range (dP - D
  // of 1e28 where it is 0, times a key of 3e32: fuzz 2026-12-04, fifth session). The reverse,
  // a tiled path that overflowed where the core returned, is none where the double core's
  // gradient is past float beyond its own rounding (below): the tiled path takes rows that
  // cancel below float P in double (cpu/row_shift.hpp), where the core's P may round the
  // gradient into range. Both overflowing with the same message is agreement; naming another
  // entry, the tiled refusal is held to the same test. Any other disagreement is a finding.
  const auto overflowed = [](const Outcome& o) { return !o.ok && o.error.rfind("gradient overflowed", 0) == 0; };
  const bool core_overflowed = overflowed(core_bwd), tiled_overflowed = overflowed(tb);
  const bool overflow_only = (core_overflowed && (tb.ok || tiled_overflowed)) || (tiled_overflowed && core_bwd.ok);
  if ((tb.ok != core_bwd.ok || tb.error != core_bwd.error) && !overflow_only)
    finding("tiled backward and core disagree: core '" + (core_bwd.ok ? "ok" : core_bwd.error) +
                "', tiled '" + (tb.ok ? "ok" : tb.error) + "'",
            c);
  if (!tb.ok && (!tiled_overflowed || tb.error == core_bwd.error)) return;
  if (tb.ok) check_grads_finite(c, tg, "tiled");
  // Gradients against the core in double, under the rule; the bar is the largest error of
  // four float evaluations of the core (from its float forward; from the double forward
  // rounded to float, as in tests/core/cpu; the same with the weights rounded up or down at
  // random; with the queries or the keys in reverse order) and of the runs on inputs and
  // logits within rounding of the case's (perturbed.hpp): one run's rounding can be far
  // luckier than usual.
  if (!core_overflowed && (!core_bwd.ok || !g)) return;
  AttentionResult<double> f64;
  AttentionGrads<double> g64;
  if (const Outcome d = attempt([&] {
        f64 = attention_forward<double>(Qd, Kd, Vd, pd, cd);
        g64 = attention_backward<double>(Qd, Kd, Vd, pd, cd, f64, wide(c.dO));
      });
      !d.ok) {
    // A core overflow is accepted only where the double core says the tiled gradients are
    // right (below); a tiled one where the double core overflowed too (past double is past
    // float).
    if (core_overflowed && tb.ok) finding("the core overflowed, the tiled backward returned, and the double core refused", c);
    if (!tb.ok && !overflowed(d)) finding("the tiled backward overflowed and the double core refused otherwise", c);
    return;
  }
  // The core's own run; where it overflowed, the same on a scaled dO (perturbed.hpp,
  // float_core_backward), as are the float runs below.
  std::optional<AttentionGrads<double>> gc;
  if (!core_overflowed) gc = qkfuzz::grads_as_double(*g);
  else attempt([&] { gc = qkfuzz::float_core_backward(c.Q, c.K, c.V, c.params, c.cfg, *r, c.dO); });
  const auto f32b = qktest::result_as<float>(f64);
  AttentionGrads<double> gb;
  const bool gb_ok = attempt([&] { gb = qkfuzz::float_core_backward(c.Q, c.K, c.V, c.params, c.cfg, f32b, c.dO); }).ok;
  if (!gb_ok && !core_overflowed && tb.ok) return;
  // The same with each weight rounded up or down at random (perturbed.hpp, kWeightStreams).
  std::vector<AttentionGrads<double>> gr;
  for (const auto& [seed, opposite] : qkfuzz::kWeightStreams) {
    qkfuzz::Signs s(seed, opposite);
    const auto f32r = qkfuzz::weights_rounded_randomly(f64, s);
    AttentionGrads<double> x;
    if (attempt([&] { x = qkfuzz::float_core_backward(c.Q, c.K, c.V, c.params, c.cfg, f32r, c.dO); }).ok)
      gr.push_back(std::move(x));
  }
  // The float runs of one gradient (field: it in an AttentionGrads): on moved inputs, with the
  // weights rounded at random, after the core's own two (gc, gb) where they ran (farthest keeps
  // the first of equally far runs).
  auto runs = [&](auto field) {
    using X = std::remove_cvref_t<decltype(field(g64))>;
    std::vector<const X*> v;
    if (gc) v.push_back(&field(*gc));
    if (gb_ok) v.push_back(&field(gb));
    for (const X* x : P([&](auto& e) -> auto& { return field(e.grads); }, true)) v.push_back(x);
    for (const auto& x : gr) v.push_back(&field(x));
    return v;
  };
  using S1 = Eigen::Matrix<double, 1, 1>;
  std::vector<S1> t_values;  // dL/dtemperature as 1 x 1 matrices, in the order of runs()
  if (gc) t_values.push_back(S1(gc->dtemperature));
  if (gb_ok) t_values.push_back(S1(gb.dtemperature));
  for (const auto& e : prs)
    if (e.grads_ok) t_values.push_back(S1(e.grads.dtemperature));
  for (const auto& x : gr) t_values.push_back(S1(x.dtemperature));
  std::vector<const S1*> t_runs;
  for (const auto& x : t_values) t_runs.push_back(&x);
  const S1 t_ref(g64.dtemperature);
  const auto fields = std::make_tuple(
      std::pair{"tiled dQ", [](auto& x) -> auto& { return x.dQ; }},
      std::pair{"tiled dK", [](auto& x) -> auto& { return x.dK; }},
      std::pair{"tiled dV", [](auto& x) -> auto& { return x.dV; }},
      std::pair{"tiled dW", [](auto& x) -> auto& { return x.dparams.W; }},
      std::pair{"tiled dW_q", [](auto& x) -> auto& { return x.dparams.W_q; }},
      std::pair{"tiled dW_k", [](auto& x) -> auto& { return x.dparams.W_k; }},
      std::pair{"tiled dv", [](auto& x) -> auto& { return x.dparams.v; }},
      std::pair{"tiled db", [](auto& x) -> auto& { return x.dparams.b; }},
      std::pair{"tiled dw", [](auto& x) -> auto& { return x.dparams.w; }},
      std::pair{"tiled drelative", [](auto& x) -> auto& { return x.drelative; }},
      std::pair{"tiled dt5_table", [](auto& x) -> auto& { return x.dt5_table; }},
      std::pair{"tiled ddense", [](auto& x) -> auto& { return x.ddense; }});
  if (core_overflowed || !tb.ok) {
    // A gradient past float settles the call only where the double core's own rounding cannot
    // account for it (past_float.hpp); a refusal is then right and any finite value wrong.
    // Elsewhere the tiled gradients meet the bar below, and a tiled refusal is wrong.
    bool past = qkfuzz::past_float_settled(t_ref, t_runs);
    std::apply([&](const auto&... f) { ((past = past || qkfuzz::past_float_settled(f.second(g64), runs(f.second))), ...); },
               fields);
    if (!tb.ok) {  // the core returned, or overflowed naming another entry
      if (!past) finding("the tiled backward overflowed where the double core's gradient is not settled past float", c);
      return;
    }
    if (past) finding("the core overflowed and the tiled backward returned where the double core's gradient is past float", c);
  }
  // Each gradient against the double core under the rule, the bar the farthest of the runs.
  std::apply(
      [&](const auto&... f) {
        auto grad = [&](const char* what, auto field) {
          const auto& ref = field(g64);
          if (ref.size()) match(c, what, field(tg), farthest(ref, runs(field)), ref);
        };
        (grad(f.first, f.second), ...);
      },
      fields);
  match(c, "tiled dtemperature", S1(tg.dtemperature), farthest(t_ref, t_runs), t_ref);
}

template <class S>
void mixed_path(const Case& c) {
  precision::MixedResult<S> m;
  const Mat<S> Q = c.Q.cast<S>(), K = c.K.cast<S>(), V = c.V.cast<S>();
  const Outcome o = attempt([&] { m = precision::attention_forward_mixed<S, float>(Q, K, V, c.params, c.cfg); });
  if (!o.ok) return;
  if (!all_finite(m.fp32.weights) || !all_finite(m.fp32.output))
    finding("mixed precision forward returned a non-finite weight or output", c);
  AttentionGrads<float> g;
  const Outcome b = attempt([&] { g = precision::attention_backward_mixed<S, float>(Q, K, V, c.params, c.cfg, m, c.dO); });
  if (b.ok) check_grads_finite(c, g, "mixed precision");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider f(data, size);
  const Case c = qkfuzz::make_case(f);
  // QKSCOPE_FUZZ_DESCRIBE=1: print every case (to turn an input into a Catch2 test).
  static const bool show = std::getenv("QKSCOPE_FUZZ_DESCRIBE") != nullptr;
  if (show) qkfuzz::describe("case", c);

  AttentionResult<float> r;
  const Outcome core = attempt([&] { r = attention_forward<float>(c.Q, c.K, c.V, c.params, c.cfg); });
  if (!core.ok && core.error.empty()) finding("core forward threw an empty message", c);
  AttentionGrads<float> g;
  Outcome bwd;
  if (core.ok) {
    check_forward(c, r);
    bwd = attempt([&] { g = attention_backward<float>(c.Q, c.K, c.V, c.params, c.cfg, r, c.dO); });
    if (bwd.ok) check_grads_finite(c, g, "core");
  }
  const int path = f.ConsumeIntegralInRange<int>(0, 3);
  if (path <= 1) tiled_path(f, c, core, &r, bwd, &g);
  else if (path == 2) mixed_path<Eigen::half>(c);
  else mixed_path<Eigen::bfloat16>(c);
  return 0;
}
