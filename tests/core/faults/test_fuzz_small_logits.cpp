// Fuzzer findings of 2026-12-03 (docs/RELIABILITY.md), once the harness drew small ordinary
// inputs and temperatures from 10^[-4, 0]: scores near 0 that 1 / tau amplifies, a scale
// that makes the scaled queries subnormal, and a key under cosine's norm floor. Each case
// is the finding's input with its right value (the double reference, under the suite's
// tolerance rule with the core in float as the bar).
#include <catch2/catch.hpp>

#include "faults/tiled_check.hpp"
#include "pipeline/emulate.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/convert.hpp"

using namespace qkscope;

using qktest::one_thread;
using qktest::tiled_matches;

TEST_CASE("tiled dot with scale 1e-40: queries are not pre-scaled into subnormals (fuzzer seeds 3 and 6)",
          "[faults][reliability][tiled]") {
  // scale / tau = 1e-40 made the pre-scaled query -0.519 a subnormal -5.19e-41 (2.7e-5 off,
  // dL/dtau 1.6e-5 off), and -5.2e-6 became 0 (dL/dtau 0 instead of 4.1e25). Such tiles now
  // scale their scores, as the core does.
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = 1e-40;
  const Matrix dO = qktest::mat<float>({{1}});
  SECTION("q = -0.519 (seed 3 of 2026-12-02)") {
    tiled_matches(qktest::mat<float>({{-0.519119501}}), qktest::mat<float>({{0}, {-0.7007761}, {1.66153499e35}}),
                  qktest::mat<float>({{0}, {-2.98915318e38}, {1}}), dO, {}, c);
  }
  SECTION("q = -5.19e-6, scaled to 0 in float") {
    const Matrix Q = qktest::mat<float>({{-5.19149035e-06}}),
                 K = qktest::mat<float>({{2.37553823e+33}, {9.99999975e-06}, {9.99999975e-06}}),
                 V = qktest::mat<float>({{-3}, {-2.98915318e+38}, {1}});
    tiled_matches(Q, K, V, dO, {}, c);
  }
}

TEST_CASE("tiled additive at tau = 1e-4 near 0 takes the direct tanh (fuzzer)", "[faults][reliability][tiled][score]") {
  // The fused tanh's absolute error (~1.5e-7 per tanh) times 1 / tau = 1e4 passed the core's,
  // which is relative near 0; the direct tanh is accurate there.
  AttentionConfig<float> c;
  c.score = "additive";
  const auto p = init_params<float>("additive", 1, 1, 3, 7);
  SECTION("inputs near 1e-8 (seed 2): logsumexp was 6e-5 off where the rule allows 1e-6") {
    c.temperature = 1.02751385e-4;
    tiled_matches(qktest::mat<float>({{9.99999994e-09}}),
                  qktest::mat<float>({{9.99999994e-09}, {9.99999994e-09}, {2.05490203e-08}}),
                  qktest::mat<float>({{0}, {0}, {1}}), qktest::mat<float>({{1}}), p, c);
  }
  SECTION("keys at 0 beside one at 2.03: a bound taken at the largest projections kept the fused form") {
    // logsumexp 2.5e-4 off where the rule allowed 6.5e-5; the bound is now the core's least
    // error over all pairs.
    c.temperature = 1e-4;
    tiled_matches(qktest::mat<float>({{0.00999999978}, {-2}}), qktest::mat<float>({{0}, {2.03128099}, {0}}),
                  qktest::mat<float>({{1}, {-1}, {0.5}}), qktest::mat<float>({{1}, {-1}}), p, c);
  }
}

TEST_CASE("tiled relative-bias gradient of a table entry every pair reads is 0 at tau = 1e-3 (fuzzer seed 6)",
          "[faults][reliability][tiled][bias]") {
  // One table entry (R = 0) read by every key of the row: its gradient is sum_j dz_j = 0
  // exactly. Float dz of size 1e3 summed to 6.1e-5; they are now gathered in double.
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 1e-3;
  c.mask.window_left = 3;
  c.bias.relative = Vector::Zero(1);
  const Matrix Q = qktest::mat<float>({{0.00999999978}}),
               K = qktest::mat<float>({{0.0398818851}, {0.0204574671}, {0.00999999978}}),
               V = qktest::mat<float>({{-3}, {0}, {-3}}), dO = qktest::mat<float>({{2.0549016}});
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread());
  REQUIRE(tg.drelative.size() == 1);
  CHECK(std::abs(tg.drelative(0)) <= 1e-6);
}

TEST_CASE("cosine key under the norm floor with dO near 5e37: tiled and core agree (fuzzer)",
          "[faults][reliability][tiled][score]") {
  // dK of the key is dxhat / 1e-8, and dxhat cancels two terms of 2.8e37 exactly; one
  // rounding of either moves dK by ~1e38. The core's float backward reported an overflow, the
  // tiled path returned 0; the tiled backward bounds its gradients first (detail::grads_fit)
  // and hands such calls to the core. With the softmax backward's shift at the key of largest
  // P (norm/row.hpp) the two terms no longer round, and the core gives dK = 0 as the double
  // core does; both paths return it.
  AttentionConfig<float> c;
  c.score = "cosine";
  const Matrix Q = qktest::mat<float>({{1.53027363e+38}, {-1.80294371}, {3.24518554e+32}}),
               K = qktest::mat<float>({{-0.93357563}, {-7.70371978e-34}}), V = qktest::mat<float>({{-0.788602829}, {2.11760902}}),
               dO = qktest::mat<float>({{-0.392194271}, {4.93743013e+37}, {4.93743013e+37}});
  const auto f = attention_forward<float>(Q, K, V, {}, c);
  std::string core_error, tiled_error;
  try {
    (void)attention_backward<float>(Q, K, V, {}, c, f, dO);
  } catch (const std::invalid_argument& e) {
    core_error = e.what();
  }
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
  try {
    (void)cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread());
  } catch (const std::invalid_argument& e) {
    tiled_error = e.what();
  }
  CHECK(core_error.empty());
  CHECK(tiled_error == core_error);
  CHECK(attention_backward<float>(Q, K, V, {}, c, f, dO).dK.isZero(0));
  CHECK(cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread()).dK.isZero(0));
  // With dO of 1 the bound holds and the tiled path runs, within the rule.
  tiled_matches(Q, K, V, qktest::mat<float>({{-0.392194271}, {1}, {1}}), {}, c);
}

TEST_CASE("the CUDA tile functors subtract the row maximum before dividing by tau (fuzzer seed 3)",
          "[faults][reliability][pipeline]") {
  // Keys 2e-6 apart at tau = 9.4e-4: folding 1 / tau into the logits first rounded each of
  // them (about -2189) by 1.3e-4, the whole difference between the keys; output 1.3e-5 off.
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 0.000938747998;
  const Matrix Q = qktest::mat<float>({{1}}), K = qktest::mat<float>({{-2.05490208}, {-2.05490208}, {-2.05490017}}),
               V = qktest::mat<float>({{0}, {1}, {1}});
  const auto core = attention_forward<float>(Q, K, V, {}, c);
  const auto ref = attention_forward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {},
                                             qktest::config_as<double>(c));
  const MaskFn mfn = resolve_mask(c.mask, 1, 3);
  const pipeline::Logits<float> lg{mfn, score_mods(c.bias, core.scale, c.temperature, mfn.offset)};
  for (int bk = 1; bk <= 3; ++bk) {
    const auto emu = qktile::flash_forward<float>([&](int i, int j) { return float(Q.row(i).dot(K.row(j))); },
                                                  V.data(), 1, lg, pipeline::BlockClassifier{lg.mask, 1, bk, nullptr});
    CHECK_MATCHES_REFERENCE("tile functors output", Eigen::Map<const Matrix>(emu.out.data(), 1, 1), core.output,
                            ref.output);
    CHECK_MATCHES_REFERENCE("tile functors logsumexp", Eigen::Map<const Vector>(emu.lse.data(), 1), core.logsumexp,
                            ref.logsumexp);
  }
}

TEST_CASE("the CUDA tile functors' backward: a one-key row has P = 1 exactly at a small tau (review finding)",
          "[faults][reliability][pipeline]") {
  // A shift in z (lse tau) rounded twice: P = 1.0000075 at tau = 1e-3 and 0.995 at 1e-4, so dV
  // of the only key was off by as much. The weight is e^{z / tau - lse}, rounded as the forward.
  for (const double tau : {1e-3, 1e-4}) {
    AttentionConfig<float> c;
    c.score = "dot";
    c.temperature = tau;
    const float q = tau == 1e-3 ? 0.0864199027f : 7.77777004f;
    const Matrix Q = qktest::mat<float>({{q}}), K = qktest::mat<float>({{1}}), V = qktest::mat<float>({{0.5}}),
                 dO = qktest::mat<float>({{1}});
    const auto core = attention_forward<float>(Q, K, V, {}, c);
    const MaskFn mfn = resolve_mask(c.mask, 1, 1);
    const pipeline::Logits<float> lg{mfn, score_mods(c.bias, core.scale, c.temperature, mfn.offset)};
    const pipeline::BlockClassifier bc{lg.mask, 1, 1, nullptr};
    const auto fwd = qktile::flash_forward<float>([&](int, int) { return q; }, V.data(), 1, lg, bc);
    const auto g = qktile::flash_backward<float>(Q.data(), K.data(), 1, V.data(), 1, fwd.out.data(), fwd.lse.data(),
                                                 dO.data(), lg, bc);
    CHECK(g.dV[0] == 1.0f);
  }
}

TEST_CASE("tiled backward at tau = 8e37: lse tau past the float range keeps P (review finding)",
          "[faults][reliability][tiled]") {
  // 80 keys of equal logit: lse = log 80 = 4.38, lse tau = 3.5e38 > FLT_MAX. The shift was
  // rounded to float (inf) and every recomputed P was 0, so dV = 0 where it is 1/80.
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 8e37;
  const Matrix Q = qktest::mat<float>({{1}}), K = Matrix::Zero(80, 1), V = Matrix::Ones(80, 1), dO = qktest::mat<float>({{1}});
  cpu::TiledOptions o;
  o.threads = 1;
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, o);
  REQUIRE_FALSE(t.fallback);
  const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, o);
  for (Eigen::Index j = 0; j < 80; ++j) CHECK(g.dV(j, 0) == Approx(1.0 / 80).epsilon(1e-6));
}

TEST_CASE("tiled fused additive with tied keys: dQ takes the row split, 0 where it is 0 (fuzzer, 2026-12-03)",
          "[faults][reliability][tiled][score]") {
  // Keys tied to 1e-19 give equal (1 - t^2) on every key, so dA = v (1 - t^2) sum_j dS_ij = 0.
  // The fused form summed dS (1 - t^2) of size 1 / tau = 1e3 per block: dQ -2.8e-5 (the
  // core: 0). It now takes the direct form's split (cpu/additive.hpp, grad_q_rows).
  AttentionConfig<float> c;
  c.score = "additive";
  c.temperature = 0.000938716038;
  ScoreParams<float> p;
  p.W_q = qktest::mat<float>({{-0.229291156f, 0.00625491375f, 0.553721607f}, {0.63565892f, -0.117126562f, 0.315888643f},
                              {-0.630319118f, -1.14677107f, -0.088315241f}, {0.168700978f, -0.0351572745f, 0.264523208f}});
  p.W_k = qktest::mat<float>({{0.410518527f, 0.636901379f, -1.17694354f}, {-0.0329669528f, -0.682304144f, -0.245424941f},
                              {0.298820347f, -0.63748163f, -0.126442924f}, {-0.256950438f, 0.375216961f, 1.39859784f}});
  p.v = qktest::vec({0.0913447812f, -0.642030895f, -0.168408006f, -0.96844703f});
  p.b = qktest::vec({0, 0, 0, 0});
  const Matrix Q = qktest::mat<float>({{3.99828434f, 0, -3.49793196f}});
  const Matrix K = qktest::mat<float>({{0, -8.67361738e-19f, 0}, {0, 0, 0}, {0, 0, 0}});
  const Matrix V = qktest::mat<float>({{0, 0, 4}, {-3.99999213f, 1.83670992e-40f, -3.99999905f}, {-2, 0, 0}});
  const Matrix dO = qktest::mat<float>({{-3.96877956f, 1, 1}});
  for (const Eigen::Index block_k : {1, 2, 3}) {
    const auto g = tiled_matches(Q, K, V, dO, p, c, block_k);
    CHECK(g.dQ.cwiseAbs().maxCoeff() <= 1e-6f);
  }
}

TEST_CASE("tiled neg_sq_euclidean with softcap 1e-40: the form's rounding may not decide the cap's slope (fuzzer)",
          "[faults][reliability][tiled][bias]") {
  // Every logit saturates the cap, so dQ is 0 (the core in float and in double). The tiled
  // form 2 qc.kc - |qc|^2 - |kc|^2 (around the mean key 0.25) rounded raw -1e-16 to 0, so
  // the slope 1 - tanh^2(raw / c) was 1 and dQ -1.9e22. A cap below the form's rounding
  // bound now hands the call to the core (detail::logits_fold_safe).
  AttentionConfig<float> c;
  c.score = "neg_sq_euclidean";
  c.bias.softcap = 1e-40;
  const Matrix Q = Matrix::Constant(7, 1, 9.99999994e-09f);
  const Matrix K = qktest::mat<float>({{1}, {1}, {0}, {0}, {0}, {0}, {0}, {0}});
  const Matrix V = qktest::mat<float>({{-1.52156854f}, {0}, {0}, {0}, {0}, {503}, {0}, {0}});
  const Matrix dO = qktest::mat<float>({{3.96140813e+28f}, {0}, {0}, {0}, {-2.93873588e-39f}, {2.2958874e-41f}, {3.999897f}});
  const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, one_thread());
  CHECK(t.fallback);
  const auto tg = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, one_thread());
  CHECK(tg.dQ.cwiseAbs().maxCoeff() == 0.0f);
  const auto cd = qktest::config_as<double>(c);
  const auto f64 = attention_forward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, cd);
  const auto g64 = attention_backward<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), {}, cd, f64,
                                              dO.cast<double>());
  const auto f32 = attention_forward<float>(Q, K, V, {}, c);
  const auto g32 = attention_backward<float>(Q, K, V, {}, c, f32, dO);
  CHECK_MATCHES_REFERENCE("tiled output", t.output, f32.output, f64.output);
  CHECK_MATCHES_REFERENCE("tiled dK", tg.dK, g32.dK, g64.dK);
  CHECK_MATCHES_REFERENCE("tiled dV", tg.dV, g32.dV, g64.dV);
  // An ordinary cap (Gemma 2's 50) on ordinary inputs keeps the fast path.
  AttentionConfig<float> g = c;
  g.bias.softcap = 50.0;
  const Matrix Qo = qktest::mat<float>({{0.3f, -1.2f}, {0.8f, 0.1f}}), Ko = qktest::mat<float>({{1, 0}, {-0.5f, 2}, {0.2f, 0.2f}});
  CHECK(detail::logits_fold_safe<float>(g.score, Qo, Ko, {}, 1.0, 1.0, g.bias, 2, 3));
  g.bias.softcap = 1e-6;
  CHECK_FALSE(detail::logits_fold_safe<float>(g.score, Qo, Ko, {}, 1.0, 1.0, g.bias, 2, 3));
}
