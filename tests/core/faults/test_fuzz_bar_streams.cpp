// The harness's bar samples each rounding both ways (tests/fuzz/perturbed.hpp, kInputStreams and
// kWeightStreams; docs/RELIABILITY.md, "The bar"). With three independent sign streams, a logit
// whose one rounding decides the answer was moved the harmless way in all three runs one time
// in eight, and the bar then missed what float legitimately does there: the finding below,
// cosine keys 1.3e-15 from a tie at tau = 0.0018, where the tiled path's logit is one ulp from
// -1 and its dV 3.3e-5 off, 7.3 times the bar. Each stream now comes with its reverse.
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
  for (const Eigen::Index bq : {1, 2, 3, 4})
    for (const Eigen::Index bk : {1, 2, 3, 4}) {
      CAPTURE(bq, bk);
      auto o = qktest::one_thread(bk);
      o.block_q = bq;
      qktest::matches_under_harness_bar(Q, K, V, dO, p, c, o);
    }
  // The bar comes from a reversed stream: the runs of the seeds as drawn stay within 2.4e-7 of
  // dV_3 (z_4 moved down to -1, or not at all), so three such runs set a bar of ~4.5e-6, under
  // the tiled path's 3.3e-5 (the finding).
  const auto runs = qkfuzz::perturbed_references(Qd, Kd, Vd, dOd, p.cast<double>(), cd, Q, K, V, dO, p, c);
  REQUIRE(runs.size() == std::size(qkfuzz::kInputStreams) + 2);  // and the float run, the nearest-rounding run
  double as_drawn = 0, reversed = 0;
  for (std::size_t r = 0; r < std::size(qkfuzz::kInputStreams); ++r) {
    REQUIRE(runs[r].grads_ok);
    double& farthest = qkfuzz::kInputStreams[r].second ? reversed : as_drawn;
    farthest = std::max(farthest, std::abs(runs[r].grads.dV(3, 0) - g64.dV(3, 0)));
  }
  CHECK(as_drawn < 1e-6);
  CHECK(reversed > 3e-5);
}
