// Linear concat's column sums (docs/RELIABILITY.md, "Fixed on 2026-12-07, twenty-sixth
// session"). dw_k = K^T c with c_j = sum_i dL/draw_ij: where keys tie their columns cancel, and
// the float c_j (summed in float by both paths) left that cancellation at ulp(|c_j|): 4e11 where
// the value is 0 (fuzz input linear-concat-dw-softcap-twentysixth-2026-12-07-aa1), 1.2-1.4 times
// the fuzz bar in three older inputs. The column sums are now in double and K^T c is taken about
// the key of largest |c_j| with the total from the exact row sums (score/linear_concat.hpp,
// grads_from_sums). Right values: exact 0 where every visible key of a row ties, else
// tests/fuzz/mpmath_oracle.py's (dw_k of -c3 and the fourteenth session's input) or, for dK under
// a softcap, the double core.
#include <catch2/catch.hpp>

#include <cmath>
#include <tuple>

#include "faults/harness_bar.hpp"
#include "faults/tilings.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"

using namespace qkscope;
using Catch::Matchers::WithinRel;

namespace {

using LinearConcatCase = qktest::FaultCall;

LinearConcatCase linear_concat(Matrix Q, Matrix K, Matrix V, Matrix dO, float w_q, float w_k) {
  LinearConcatCase a{std::move(Q), std::move(K), std::move(V), std::move(dO), {}, {}};
  a.c.score = "linear_concat";
  a.p.w.resize(2);
  a.p.w << w_q, w_k;
  return a;
}

// -aa1 (the twenty-sixth session's loop): keys 0-3 tie at 1; a value of 2.6e33; a softcap of
// 0.0326 that the scores (-0.496) saturate, x = -15.2. Every row's visible keys tie, so
// dw_k = sum_i s'_i sum_j dL/dz_ij = 0 exactly.
LinearConcatCase case_aa1() {
  auto a = linear_concat(qktest::mat({{1}, {1}, {-2}, {0}, {0}}),
                         qktest::mat({{1}, {1}, {1}, {1}, {0}, {-1.05879118e-22}, {-3}, {-3.62264967}, {1}}),
                         qktest::mat({{2.59614843e+33}, {0}, {1}, {0}, {0}, {0}, {0}, {0}, {-2.06795153e-25}}),
                         qktest::mat({{0}, {-0.28125}, {-3.68622375}, {-6.77626358e-21}, {0}}), -0.544802725f,
                         0.0485560223f);
  a.c.bias.softcap = 0.032638146704936283;
  a.c.mask.causal = true;
  a.c.mask.window_left = 3;
  return a;
}

// -y1 (twenty-fourth session): every query and key is 4, a T5 table and ALiBi 1e-40: every key
// ties, so dw_k = 4 sum_ij dS_ij = 0 exactly.
LinearConcatCase case_y1() {
  auto a = linear_concat(qktest::mat({{4}, {4}, {4}, {4}, {4}, {4}}),
                         qktest::mat({{4}, {4}, {4}, {4}, {4}, {4}, {4}}),
                         qktest::mat({{4}, {4}, {4}, {4}, {0}, {1}, {0}}),
                         qktest::mat({{4}, {4}, {4}, {4}, {-2.05593824}, {-2}}), -0.213199019f, -0.641587794f);
  a.c.bias.alibi_slope = 9.9999999999999993e-41;
  a.c.bias.t5 = T5Buckets{true, 5, 16};
  a.c.bias.t5_table = qktest::mat({{-3.62505484, 0, -8.67361738e-19, 0, 0}}).row(0).transpose();
  return a;
}

// -c3 (fifteenth session): eight keys tie at -3 beside one at 2, values 4 and -469; window 0.
LinearConcatCase case_c3() {
  auto a = linear_concat(qktest::mat({{-0.0299999993}, {0}, {0}, {-0.0299999993}, {0.0299999993}, {0.0299999993}}),
                         qktest::mat({{-3}, {-3}, {-3}, {-3}, {-3}, {2}, {-3}, {-3}, {-3}}),
                         qktest::mat({{-3}, {0}, {4}, {4}, {4}, {4}, {-469}, {-469}, {-469}}),
                         qktest::mat({{-469}, {-469}, {-469}, {-469}, {-469}, {-469}}), -0.783702135f, -0.820428729f);
  a.c.mask.window_left = 0;
  return a;
}

// linear-concat-dw-tied-keys-fourteenth-2026-12-06: six keys tie at 0.04 beside 0.0399240181,
// a value of 2.5e27, a keep mask, scale -0.0074.
LinearConcatCase case_fourteenth() {
  const double k = 0.0399999991;
  auto a = linear_concat(qktest::mat({{k}, {k}, {k}}), qktest::mat({{k}, {k}, {k}, {k}, {k}, {k}, {0.0399240181}}),
                         qktest::mat({{2.03125}, {0}, {0}, {0}, {0}, {0}, {2.47588008e+27}}),
                         qktest::mat({{0}, {0}, {3}}), 0.851161122f, -0.323243558f);
  a.c.scale = -0.0074148025690704443;
  a.c.mask.keep = KeepMask(3, 7);
  a.c.mask.keep << 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1;
  return a;
}

AttentionGrads<float> core_float(const LinearConcatCase& a) { return qktest::core_float_grads(a); }

// fn(grads) for the tiled backward at every tiling the fuzzer draws (one thread).
template <class Fn>
void tiled_grads_at_tilings(const LinearConcatCase& a, Fn&& fn) {
  qktest::tiled_forward_at_tilings(a, [&](const cpu::TiledResult<float>& t, const cpu::TiledOptions& o) {
    fn(cpu::attention_backward<float>(a.Q, a.K, a.V, a.p, a.c, t, a.dO, o), o);
  });
}

}  // namespace

TEST_CASE("linear concat -aa1: tied keys under a saturated softcap (fuzz, twenty-sixth session)",
          "[faults][reliability][fuzz][tiled]") {
  const auto a = case_aa1();
  // Columns 0 and 1 carry c_0 = -c_1 = 4.5e19 (dK_0 = -2.204e18). The softcap's slope there,
  // 1 - tanh^2(-15.2), is 0 in float and 1.4e-4 relative off in double (mpmath: dK_0 =
  // -2.203962602e18; the double core -2.204263e18): docs/RELIABILITY.md, "Open".
  const auto g64 = qktest::double_core_grads(a.Q, a.K, a.V, a.dO, a.p, a.c);
  CHECK(core_float(a).dparams.w(1) == 0.0f);
  CHECK(g64.dparams.w(1) == 0.0);  // before: -1682
  tiled_grads_at_tilings(a, [&](const AttentionGrads<float>& t, const cpu::TiledOptions& o) {
    CHECK_THAT(double(t.dK(0, 0)), WithinRel(g64.dK(0, 0), 1e-5));
    CHECK_THAT(double(t.dK(1, 0)), WithinRel(g64.dK(1, 0), 1e-5));
    CHECK(t.dparams.w(1) == 0.0f);  // before: 4.06e11
    qktest::matches_under_harness_bar(a.Q, a.K, a.V, a.dO, a.p, a.c, o);
  });
}

TEST_CASE("linear concat: every key tied gives dw_k = 0 exactly (fuzz -y1)", "[faults][reliability][fuzz][tiled]") {
  const auto a = case_y1();
  CHECK(core_float(a).dparams.w(1) == 0.0f);  // before: 4.7e-7
  tiled_grads_at_tilings(a, [&](const AttentionGrads<float>& t, const cpu::TiledOptions& o) {
    CHECK(t.dparams.w(1) == 0.0f);  // before: up to 7.6e-6, 1.37 times the bar
    qktest::matches_under_harness_bar(a.Q, a.K, a.V, a.dO, a.p, a.c, o);
  });
}

TEST_CASE("linear concat: dw_k over keys tied beside one other (fuzz -c3, fourteenth session's input)",
          "[faults][reliability][fuzz][tiled]") {
  // Right values: tests/fuzz/mpmath_oracle.py (60 digits) on the inputs as the harness prints
  // them, not the double core, which runs the same grads_from_sums as the float paths.
  struct Entry {
    const char* name;
    LinearConcatCase a;
    double right;
  };
  for (const Entry& entry : {Entry{"c3", case_c3(), -15149.0518198068}, Entry{"fourteenth", case_fourteenth(), 5.81196549699691e20}}) {
    const LinearConcatCase& a = entry.a;
    const double right = entry.right;
    INFO(entry.name);
    CHECK_THAT(qktest::double_core_grads(a.Q, a.K, a.V, a.dO, a.p, a.c).dparams.w(1), WithinRel(right, 1e-9));
    // The float core before: 5.81219e20 where 5.81197e20 (fourteenth).
    CHECK_THAT(double(core_float(a).dparams.w(1)), WithinRel(right, 1e-6));
    tiled_grads_at_tilings(a, [&](const AttentionGrads<float>& t, const cpu::TiledOptions& o) {
      CHECK_THAT(double(t.dparams.w(1)), WithinRel(right, 1e-6));  // before: 1.2-1.4 times the bar
      qktest::matches_under_harness_bar(a.Q, a.K, a.V, a.dO, a.p, a.c, o);
    });
  }
}
