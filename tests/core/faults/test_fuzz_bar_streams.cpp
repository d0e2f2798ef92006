// The harness's bar samples each rounding both ways (tests/fuzz/perturbed.hpp, kInputStreams and
// kWeightStreams; docs/RELIABILITY.md, "The bar"). With three independent sign streams, a logit
// whose one rounding decides the answer was moved the harmless way in all three runs one time
// in eight, and the bar then missed what float legitimately does there: the finding below,
// cosine keys 1.3e-15 from a tie at tau = 0.0018, where the tiled path's logit is one ulp from
// -1 and its dV 3.3e-5 off, 7.3 times the bar. Each stream now comes with its reverse.
// And runs that move x and -x by the same factor keep them opposite: the first seed is also
// read as directions (kDirectionalStreams), which parts them (the last test below).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"

using namespace qkscope;

TEST_CASE("harness bar: each sign stream comes with its reverse", "[faults][reliability][bar]") {
  qkfuzz::Signs a(0x9E3779B97F4A7C15ull), b(0x9E3779B97F4A7C15ull, true);
  int ups = 0;
  for (int k = 0; k < 1000; ++k) {
    const bool x = a.next();
    ups += x;
    REQUIRE(b.next() == !x);
  }
  CHECK(ups > 400);  // a stream, not a constant
  CHECK(ups < 600);
  const auto paired = [](const auto& streams) {
    std::set<std::pair<std::uint64_t, bool>> all(std::begin(streams), std::end(streams));
    CHECK(all.size() == std::size(streams));
    for (const auto& [seed, opposite] : streams) CHECK(all.count({seed, !opposite}) == 1);
  };
  paired(qkfuzz::kInputStreams);
  paired(qkfuzz::kWeightStreams);
  paired(qkfuzz::kDirectionalStreams);
  // The directional runs read a seed of the factor runs (the first) the other way.
  for (const auto& d : qkfuzz::kDirectionalStreams)
    CHECK(std::count(std::begin(qkfuzz::kInputStreams), std::end(qkfuzz::kInputStreams), d) == 1);
}

TEST_CASE("tiled cosine dV beside keys 1.3e-15 from a tie at tau = 0.0018 (fuzzer, 2026-12-06)",
          "[faults][reliability][tiled][bar]") {
  // tests/fuzz/fixed/cosine-dV-fourteenth-2026-12-06: a window of one key to the right
  // (bottom-right alignment) leaves row 5 keys 3 and 4, whose cosines with the query are -1 and
  // -1 + 1.3e-15: each weight 0.5, dV_3 = 4 * 0.5 = 2. In float the second cosine is -1 or one
  // ulp above it (-1 + 6e-8): both are float evaluations of it, and the second moves dV_3 by
  // 6e-8 / tau * 2 = 3.3e-5. The tiled path gives 2.00003.
  const float a = -0.0299999993f, b = 0.0324705876f;
  Matrix Q(7, 3), K(5, 3);
  for (int i = 0; i < 6; ++i) Q.row(i) << a, a, a;
  Q.row(6) << a, b, b;
  K << b, b, b, b, b, 0.0324694999f, 1.58456321e+27f, 0, 2.46519027e-34f, b, b, b, b, b, 0.0324705839f;
  const Matrix V = qktest::mat<float>({{-3.96875048f}, {0}, {0}, {2}, {0}});
  const Matrix dO = qktest::mat<float>({{1}, {-3}, {0}, {1.05879118e-22f}, {-3}, {4}, {0}});
  AttentionConfig<float> c;
  c.score = "cosine";
  c.temperature = 0.0018215760347379301;
  c.mask.window_left = 0;
  c.mask.window_right = 1;
  c.mask.alignment = CausalAlignment::bottom_right;
  const ScoreParams<float> p;
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>(), dOd = dO.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, p.cast<double>(), cd,
                                              attention_forward<double>(Qd, Kd, Vd, p.cast<double>(), cd), dOd);
  REQUIRE(std::abs(g64.dV(3, 0) - 2) < 1e-6);
  // Every tiling the fuzzer draws passes the harness's bar.
  qktest::under_bar_at_tilings(Q, K, V, dO, p, c);
  // The bar comes from a reversed stream: the runs of the seeds as drawn stay within 2.4e-7 of
  // dV_3 (z_4 moved down to -1, or not at all), so three such runs set a bar of ~4.5e-6, under
  // the tiled path's 3.3e-5 (the finding).
  const auto runs = qkfuzz::perturbed_references(Qd, Kd, Vd, dOd, p.cast<double>(), cd, Q, K, V, dO, p, c);
  // and the float run, the nearest-rounding run, the directional runs
  REQUIRE(runs.size() == std::size(qkfuzz::kInputStreams) + 2 + std::size(qkfuzz::kDirectionalStreams));
  double as_drawn = 0, reversed = 0;
  for (std::size_t r = 0; r < std::size(qkfuzz::kInputStreams); ++r) {
    REQUIRE(runs[r].grads_ok);
    double& farthest = qkfuzz::kInputStreams[r].second ? reversed : as_drawn;
    farthest = std::max(farthest, std::abs(runs[r].grads.dV(3, 0) - g64.dV(3, 0)));
  }
  CHECK(as_drawn < 1e-6);
  CHECK(reversed > 3e-5);
}

TEST_CASE("tiled additive dQ over keys 1 and -1 under a softcap (fuzzer -w1, twenty-third session)",
          "[faults][reliability][tiled][bar]") {
  // tests/fuzz/fixed/additive-dQ-softcap-twentythird-2026-12-07-w1. Row 2: a query of 0 over
  // keys 1 and -1 (key 0 masked), so B_2 = -B_1, S_2 = -S_1, the softcap's slopes and each
  // unit's 1 - t^2 are equal, and dQ = W_q^T sum_h v_h u_h (dS_1 + dS_2) is exactly 0 with
  // dS = +-7.6e37 (dO 8.5e37). The core's tanh is odd, so its float and double runs give 0
  // too, and so did every run of the bar that moved the keys by the same factor, which keeps
  // them opposite. Parting them by one rounding moves dQ by ~4e30; the tiled path's fused tanh
  // (1 - 2 / (e^{2a} e^{2b} + 1)) is not odd and gives 2.8e30. The directional runs part them.
  AttentionConfig<float> c;
  c.score = "additive";
  c.bias.softcap = 0.50151062009466785;
  KeepMask keep(4, 3);
  keep << true, true, true, true, true, true, false, true, true, false, false, false;
  c.mask.keep = keep;
  const Matrix Q = qktest::mat<float>({{0}, {-3}, {0}, {3.99993086f}}), K = qktest::mat<float>({{1}, {1}, {-1}}),
               V = qktest::mat<float>({{0}, {-3}, {2.36862755f}}),
               dO = qktest::mat<float>({{2.36862755f}, {2.36862755f}, {8.47995275e+37f}, {2.36862755f}});
  const auto p = qktest::additive_params(qktest::mat<float>({{-0.433696181f}, {-1.73848259f}}),
                                         qktest::mat<float>({{-1.72670615f}, {-1.18199217f}}),
                                         {0.853289127f, -0.610607684f}, {0, 0});
  const auto cd = qktest::config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>(), dOd = dO.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, pd, cd, attention_forward<double>(Qd, Kd, Vd, pd, cd), dOd);
  REQUIRE(g64.dQ(2, 0) == 0);
  // The keys parted by one rounding: dQ of ~4e30 (the sign depends on which way).
  MatrixD parted = Kd;
  parted(1, 0) *= 1 + 0x1p-24;
  const auto gp = attention_backward<double>(Qd, parted, Vd, pd, cd, attention_forward<double>(Qd, parted, Vd, pd, cd), dOd);
  CHECK(std::abs(gp.dQ(2, 0)) > 1e30);
  // Every factor run keeps the keys opposite and dQ(2, 0) at 0; a directional run parts them.
  const auto runs = qkfuzz::perturbed_references(Qd, Kd, Vd, dOd, pd, cd, Q, K, V, dO, p, c);
  REQUIRE(runs.size() == std::size(qkfuzz::kInputStreams) + 2 + std::size(qkfuzz::kDirectionalStreams));
  for (std::size_t r = 0; r < std::size(qkfuzz::kInputStreams); ++r) {
    REQUIRE(runs[r].grads_ok);
    CHECK(runs[r].grads.dQ(2, 0) == 0);
  }
  double directional = 0;
  for (std::size_t r = runs.size() - std::size(qkfuzz::kDirectionalStreams); r < runs.size(); ++r) {
    REQUIRE(runs[r].grads_ok);
    directional = std::max(directional, std::abs(runs[r].grads.dQ(2, 0)));
  }
  CHECK(directional > 1e30);
  // Every tiling the fuzzer draws passes the harness's bar (key blocks 1-3 gave 2.8e30).
  qktest::under_bar_at_tilings(Q, K, V, dO, p, c);
}
