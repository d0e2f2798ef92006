// Numerics torture suite: hostile but valid inputs on every CPU path. For each case the
// core (float), the tiled CPU kernels (small odd tiles) and, where logits_fold_safe admits
// the fast path, the tile functors the CUDA kernels are built from (tests/core/pipeline/
// emulate.hpp) either all match the double reference under the suite's one tolerance rule
// (support/compare.hpp, the reference run in float as the bar), or all refuse with the same
// std::invalid_argument message. Cases: huge and tiny logits, all-equal scores, -inf bias
// entries, fully masked rows and sequences, temperature near 0 and near the float maximum,
// d = 4096, L_q = 1 with 4096 keys and the reverse; fp16/bf16 overflow and fully masked
// heads on the mixed-precision and multi-head paths. Runs in about a second.
#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <string>

#include "qkscope/detail/logit_range.hpp"
#include "qkscope/qkscope.hpp"
#include "qkscope/cpu/attention.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "pipeline/emulate.hpp"
#include "support/convert.hpp"

using namespace qkscope;
using Catch::Matchers::Contains;

namespace {

struct Torture {
  std::string name;
  Matrix Q, K, V;
  AttentionConfig<float> cfg;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}


/// Runs one case on every path and checks "all agree with the reference or all refuse alike".
void torture(const Torture& t) {
  INFO("case: " << t.name);
  const Matrix dO = Matrix::Constant(t.Q.rows(), t.V.cols(), 0.5f);
  AttentionResult<float> core;
  AttentionGrads<float> core_g;
  const std::string e_core = error_of([&] { core = attention_forward<float>(t.Q, t.K, t.V, {}, t.cfg); });
  cpu::TiledOptions opt;
  opt.block_q = 3;
  opt.block_k = 5;
  opt.threads = 1;
  cpu::TiledResult<float> fast;
  const std::string e_fast = error_of([&] { fast = cpu::attention_forward<float>(t.Q, t.K, t.V, {}, t.cfg, opt); });
  CHECK(e_core == e_fast);
  if (!e_core.empty() || !e_fast.empty()) return;

  const MatrixD Qd = t.Q.cast<double>(), Kd = t.K.cast<double>(), Vd = t.V.cast<double>();
  const auto cd = qktest::config_as<double>(t.cfg);
  const auto ref = reference::attention<double>(Qd, Kd, Vd, {}, cd);
  const auto naive = reference::attention<float>(t.Q, t.K, t.V, {}, t.cfg);
  CHECK(core.weights.allFinite());
  CHECK(core.output.allFinite());
  CHECK_MATCHES_REFERENCE("core output", core.output, naive.output, ref.output);
  CHECK_MATCHES_REFERENCE("tiled output", fast.output, naive.output, ref.output);
  // A logsumexp past FLT_MAX (m / tau = 1e40) is +inf in float on every path (IEEE overflow).
  VectorD lse = ref.logsumexp;
  for (Eigen::Index i = 0; i < lse.size(); ++i)
    if (std::abs(lse(i)) > std::numeric_limits<float>::max()) lse(i) *= std::numeric_limits<double>::infinity();
  CHECK_MATCHES_REFERENCE("tiled logsumexp", fast.logsumexp, core.logsumexp, lse);
  for (Eigen::Index i = 0; i < core.weights.rows(); ++i) {
    const double s = core.weights.row(i).cast<double>().sum();
    CHECK((s == 0 || std::abs(s - 1) < 1e-5));
  }

  // Backward: both paths agree with the double core, or both refuse alike.
  const std::string eb_core = error_of([&] { core_g = attention_backward<float>(t.Q, t.K, t.V, {}, t.cfg, core, dO); });
  AttentionGrads<float> fast_g;
  const std::string eb_fast =
      error_of([&] { fast_g = cpu::attention_backward<float>(t.Q, t.K, t.V, {}, t.cfg, fast, dO, opt); });
  CHECK(eb_core == eb_fast);
  if (eb_core.empty() && eb_fast.empty()) {
    const auto fd = attention_forward<double>(Qd, Kd, Vd, {}, cd);
    const auto gd = attention_backward<double>(Qd, Kd, Vd, {}, cd, fd, dO.cast<double>());
    CHECK(core_g.dQ.allFinite());
    CHECK(core_g.dK.allFinite());
    CHECK_MATCHES_REFERENCE("tiled dV", fast_g.dV, core_g.dV, gd.dV);
    CHECK_MATCHES_REFERENCE("tiled dQ", fast_g.dQ, core_g.dQ, gd.dQ);
  }

  // The CUDA kernels' tile functors, when the fast path may fold 1 / tau into the logits.
  const double scale = core.scale;
  if (t.cfg.score == "dot" || t.cfg.score == "scaled_dot") {
    if (detail::logits_fold_safe<float>(t.cfg.score, t.Q, t.K, {}, scale, t.cfg.temperature, t.cfg.bias,
                                        t.Q.rows(), t.K.rows()) &&
        t.cfg.normalizer == "softmax") {
      const MaskFn mfn = resolve_mask(t.cfg.mask, t.Q.rows(), t.K.rows());
      const pipeline::Logits<float> lg{mfn, score_mods(t.cfg.bias, scale, t.cfg.temperature, mfn.offset)};
      const auto emu = qktile::flash_forward<float>(
          [&](int i, int j) { return float(t.Q.row(i).dot(t.K.row(j))); }, t.V.data(), int(t.V.cols()), lg,
          pipeline::BlockClassifier{lg.mask, 4, 8, nullptr});
      const Eigen::Map<const Matrix> out(emu.out.data(), t.Q.rows(), t.V.cols());
      CHECK_MATCHES_REFERENCE("tile functors output", out, naive.output, ref.output);
    }
  }
}

Matrix filled(Eigen::Index r, Eigen::Index c, float x) { return Matrix::Constant(r, c, x); }

}  // namespace

TEST_CASE("torture: huge, tiny and equal logits, -inf biases and fully masked rows agree on every path",
          "[torture]") {
  detail::Rng rng(2024);
  const Matrix Q = qktest::randn<float>(rng, 5, 4), K = qktest::randn<float>(rng, 7, 4),
               V = qktest::randn<float>(rng, 7, 3);
  std::vector<Torture> cases;
  auto add = [&](std::string name, Matrix q, Matrix k, AttentionConfig<float> c) {
    cases.push_back({std::move(name), std::move(q), std::move(k), V, std::move(c)});
  };
  AttentionConfig<float> dot;
  dot.score = "dot";
  add("logits near +-3e38", Q * 8e18f, K * 1e18f, dot);
  add("logits past FLT_MAX (refused)", Q * 1e20f, K * 1e20f, dot);
  add("tiny logits 1e-38", Q * 1e-19f, K * 1e-19f, dot);
  add("denormal logits", Q * 1e-22f, K * 1e-22f, dot);
  add("all-equal scores", filled(5, 4, 0), K, dot);
  add("all-equal huge scores", filled(5, 4, 1e19f), filled(7, 4, 1e18f), dot);
  for (double tau : {1e-3, 1e-30, 1e-38, 1e-40, 1e-45, 1e-46, 1e30, 1e38, 3.4e38, 3.41e38, 1e39}) {
    AttentionConfig<float> c;
    c.temperature = tau;
    add("scaled_dot, temperature " + detail::num(tau), Q, K, c);
    add("huge logits, temperature " + detail::num(tau), Q * 1e18f, K * 1e18f, c);
  }
  AttentionConfig<float> cos;
  cos.score = "cosine";
  cos.temperature = 1e-3;
  add("cosine at tau 1e-3 with huge vectors", Q * 3e38f, K * 3e38f, cos);
  AttentionConfig<float> masked = dot;
  masked.bias.dense = filled(5, 7, 0.5f);
  masked.bias.dense.row(1).setConstant(-std::numeric_limits<float>::infinity());
  masked.bias.dense(2, 3) = -std::numeric_limits<float>::infinity();
  add("-inf dense bias: a fully masked row and one masked key", Q, K, masked);
  AttentionConfig<float> big_bias = dot;
  big_bias.bias.dense = filled(5, 7, -3.4e38f);
  big_bias.temperature = 0.5;
  add("dense bias -3.4e38 at tau 0.5", Q, K, big_bias);
  AttentionConfig<float> none = dot;
  none.mask.key_length = 0;
  add("whole sequence masked (key_length 0)", Q, K, none);
  AttentionConfig<float> causal = dot;
  causal.mask.causal = true;
  causal.mask.window_left = 0;
  causal.mask.window_right = 0;
  add("causal + zero-width window: only the diagonal", Q, K, causal);
  AttentionConfig<float> soft = dot;
  soft.bias.softcap = 1e-30;
  add("softcap 1e-30", Q, K, soft);
  AttentionConfig<float> alibi = dot;
  alibi.bias.alibi_slope = 1e37;
  add("ALiBi slope 1e37", Q, K, alibi);
  for (const auto& t : cases) torture(t);
}

TEST_CASE("torture: d = 4096, L_q = 1 with 4096 keys, 4096 queries with 1 key", "[torture]") {
  detail::Rng rng(4096);
  AttentionConfig<float> c;
  const Matrix Qw = qktest::randn<float>(rng, 2, 4096), Kw = qktest::randn<float>(rng, 3, 4096);
  torture({"d = 4096", Qw, Kw, qktest::randn<float>(rng, 3, 2), c});
  const Matrix q1 = qktest::randn<float>(rng, 1, 8), Klong = qktest::randn<float>(rng, 4096, 8);
  torture({"L_q = 1, L_k = 4096", q1, Klong, qktest::randn<float>(rng, 4096, 2), c});
  AttentionConfig<float> c2 = c;
  c2.temperature = 1e-3;
  torture({"L_q = 1, L_k = 4096, tau 1e-3", q1 * 30.0f, Klong, qktest::randn<float>(rng, 4096, 2), c2});
  const Matrix Qlong = qktest::randn<float>(rng, 4096, 8), k1 = qktest::randn<float>(rng, 1, 8);
  torture({"L_q = 4096, L_k = 1", Qlong, k1, qktest::randn<float>(rng, 1, 3), c});
}

TEST_CASE("torture: fp16/bf16 storage overflow is refused or stays finite, never NaN", "[torture][precision]") {
  AttentionConfig<float> c;
  c.score = "dot";
  // fp16 max 65504: values and products are formed in fp32, so q . k = 4.3e9 is fine.
  const Mat<Eigen::half> H = Matrix::Constant(2, 2, 65504.0f).cast<Eigen::half>();
  const auto r = precision::attention_forward_mixed<Eigen::half, float>(H, H, H, {}, c);
  CHECK(r.fp32.output.allFinite());
  CHECK(double(r.output(0, 0)) == 65504.0);
  // bf16 holds 3e38, whose fp32 product overflows: refused, naming the scores.
  const Mat<Eigen::bfloat16> B = Matrix::Constant(2, 2, 3e38f).cast<Eigen::bfloat16>();
  CHECK_THROWS_WITH((precision::attention_forward_mixed<Eigen::bfloat16, float>(B, B, B, {}, c)),
                    Contains("scores overflowed"));
  // A value above the fp16 maximum is inf in storage: refused, naming the argument.
  const Mat<Eigen::half> Hinf = Matrix::Constant(1, 1, 70000.0f).cast<Eigen::half>();
  CHECK_THROWS_WITH((precision::attention_forward_mixed<Eigen::half, float>(Hinf, Hinf, Hinf, {}, c)),
                    Contains("query must be finite"));
}

TEST_CASE("torture: a fully masked sequence in a multi-head call gives zero output for every head",
          "[torture][mha]") {
  detail::Rng rng(5);
  MultiHeadConfig<float> c;
  c.batch = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.d_k = 3;
  c.d_v = 2;
  c.key_lengths = {0, 3};
  MultiHeadWeights<float> w;
  w.W_Q = qktest::randn<float>(rng, 5, 12);
  w.W_K = qktest::randn<float>(rng, 5, 6);
  w.W_V = qktest::randn<float>(rng, 5, 4);
  w.W_O = qktest::randn<float>(rng, 8, 5);
  const Matrix X = qktest::randn<float>(rng, 6, 5) * 1e3f;
  const auto r = multi_head_forward<float>(X, X, w, c);
  REQUIRE(r.output.allFinite());
  CHECK(r.output.topRows(3).isZero(0));
  CHECK_FALSE(r.output.bottomRows(3).isZero(0));
  c.attention.temperature = 1e39;
  CHECK_THROWS_WITH(multi_head_forward<float>(X, X, w, c), Contains("temperature"));
}
