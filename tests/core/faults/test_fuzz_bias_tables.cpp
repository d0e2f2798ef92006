// Fuzzer findings (docs/RELIABILITY.md): the gradient of a relative-position or T5 table
// entry gathers dL/dz of every pair that reads it. The tiled backward summed those per key
// tile in double and then added the tiles; where two tied keys of one row carry dz of +-1e37
// in different tiles, another row's -0.18 was added to one of them first and rounded away
// (T5 entry 0 where -0.182689), and where every pair reads one entry, the sum that is 0 came
// out -43959. The sums now carry a compensation (detail/compensated_sum.hpp, Neumaier 1974).
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/detail/compensated_sum.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"
#include "support/random.hpp"

using namespace qkscope;

TEST_CASE("compensated_add keeps what a cancelling pair would round away", "[tiled]") {
  double s = 0, c = 0;
  for (const double x : {1e37, -0.18, -1e37}) detail::compensated_add(s, c, x);
  CHECK(s + c == -0.18);
  s = c = 0;
  for (const double x : {-0.18, 1e37, -1e37, 2.5}) detail::compensated_add(s, c, x);
  CHECK(s + c == 2.32);
}

TEST_CASE("tiled T5 table gradient beside dz of +-1e37 on tied keys (fuzzer, sixth session)",
          "[faults][reliability][tiled]") {
  // neg_sq_euclidean, unidirectional T5 buckets: row 1 reads bucket 0 through keys 1 and 2
  // (tied at 0, dz = -+1.06e37), row 2 through key 2 alone (dz = -0.182689). The tiled path gave
  // dt5_table(0) = 0 at block_k 1 and 2.
  AttentionConfig<float> c;
  c.score = "neg_sq_euclidean";
  c.bias.t5 = T5Buckets{false, 9, 14};
  c.bias.t5_table = qktest::vec({0, -1.66153499e+35f, -3, 0, 0, 0, 0, 0, 0});
  const Matrix Q = qktest::mat<float>({{1}, {2.0548768f}, {-3}}), K = qktest::mat<float>({{0}, {0}, {0}}),
               V = qktest::mat<float>({{-3}, {0}, {4}}), dO = qktest::mat<float>({{0}, {1.0633824e+37f}, {-0.577696085f}});
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, attention_forward<double>(Qd, Kd, Vd, {}, cd),
                                              dO.cast<double>());
  REQUIRE(g64.dt5_table(0) == Approx(-0.182689).epsilon(1e-5));
  for (const Eigen::Index bk : {1, 2, 3}) {
    INFO("block_k " << bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, qktest::one_thread(bk));
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, qktest::one_thread(bk));
    CHECK(double(g.dt5_table(0)) == Approx(g64.dt5_table(0)).epsilon(1e-6));
    qktest::matches_under_harness_bar(Q, K, V, dO, {}, c, qktest::one_thread(bk));
  }
}

TEST_CASE("tiled relative table of one entry read by every pair: its gradient is 0 (fuzzer, fifth session)",
          "[faults][reliability][tiled]") {
  // dot at tau = 1e-4 over keys tied at 0, dO of 5e30: each row's dz add up to 0, and the tiled
  // path gave -43959.4 (the rows' dz of ~1e34 added per key tile first).
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = 1;
  c.temperature = 1e-4;
  c.bias.relative = qktest::vec({1});
  c.mask.keep = KeepMask(2, 3);
  c.mask.keep << true, true, true, true, true, false;
  const Matrix Q = qktest::mat<float>({{-0.0396874994f}, {0}}), K = qktest::mat<float>({{0}, {0}, {0}}),
               V = qktest::mat<float>({{3.96875f}, {0}, {-3}}), dO = qktest::mat<float>({{3.96875f}, {5.0706024e+30f}});
  for (const Eigen::Index bk : {1, 2, 3}) {
    INFO("block_k " << bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, qktest::one_thread(bk));
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, qktest::one_thread(bk));
    CHECK(std::abs(double(g.drelative(0))) <= 1e-6);
  }
}

TEST_CASE("core relative table: a row's dz kept beside another row's tied dz of +-8e34 (fuzzer, ninth session)",
          "[faults][reliability]") {
  // Additive, bottom-right alignment (offset -1), a keep mask: row 3 reads entry 2 through
  // keys 3 and 4 (tied, dO 1.66e35: dz = -+8.3e34), row 2 through key 2 (dz 0.2469), row 4
  // through key 4 (0.3592). The core added dz pair by pair in plain double, so row 2's share
  // was rounded away into -8.3e34 (0.359 in the float and the double core; the tiled path,
  // compensated, had it right). Right values: 60-digit evaluation of sum P (dP - D) per entry.
  AttentionConfig<float> c;
  c.score = "additive";
  c.mask.alignment = CausalAlignment::bottom_right;
  c.mask.keep = KeepMask(6, 5);
  c.mask.keep << 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1;
  c.bias.relative = qktest::vec({2.9333334f, 2.91648769f, 2.93334961f});
  ScoreParams<float> p;
  p.W_q = qktest::mat<float>({{0.547394395f}, {1.22957897f}});
  p.W_k = qktest::mat<float>({{-0.36100316f}, {-0.394597113f}});
  p.v = qktest::vec({4.59177481e-41f, 0.461165309f});
  p.b = qktest::vec({0, 0});
  const Matrix Q = qktest::mat<float>({{9.99999997e-07f}, {1.66153499e+29f}, {9.99999997e-07f}, {9.99999997e-07f},
                                       {-1.99999999e-06f}, {0}}),
               K = qktest::mat<float>({{0}, {0}, {-3.39677748e+32f}, {0}, {0}}),
               V = qktest::mat<float>({{0}, {0}, {1}, {1}, {3}}),
               dO = qktest::mat<float>({{1.66153499e+35f}, {1}, {1}, {1.66153499e+35f}, {1}, {1}});
  const double truth[3] = {-0.83778733634234892, 0.23176514487324132, 0.6060221914691076};
  const auto cd = qktest::config_as<double>(c);
  const ScoreParams<double> pd = p.cast<double>();
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, pd, cd, attention_forward<double>(Qd, Kd, Vd, pd, cd),
                                              dO.cast<double>());
  const auto g32 = attention_backward<float>(Q, K, V, p, c, attention_forward<float>(Q, K, V, p, c), dO);
  for (int k = 0; k < 3; ++k) {
    CAPTURE(k, g64.drelative(k), g32.drelative(k));
    CHECK(std::abs(g64.drelative(k) - truth[k]) <= 1e-9 * std::abs(truth[k]));
    CHECK(std::abs(double(g32.drelative(k)) - truth[k]) <= 1e-6 * std::abs(truth[k]));
  }
  for (const Eigen::Index bk : {1, 2, 3}) {
    const auto t = cpu::attention_forward<float>(Q, K, V, p, c, qktest::one_thread(bk));
    const auto g = cpu::attention_backward<float>(Q, K, V, p, c, t, dO, qktest::one_thread(bk));
    for (int k = 0; k < 3; ++k) {
      CAPTURE(bk, k, g.drelative(k));
      CHECK(std::abs(double(g.drelative(k)) - truth[k]) <= 1e-6 * std::abs(truth[k]));
    }
  }
}

// --- Shared buckets (fuzzer, thirteenth and fourteenth sessions; fixed in the fifteenth) ---
// A row's dz sum to exactly 0 (softmax), so a table entry that all of a row's visible keys
// read gets exactly 0 from that row. Summing the rounded dz left -7.4e19, -1.8e19 and
// -5.9e20 (tiled) where 0; per row and table the entry holding more than half of the row's
// sum |dz| now takes minus the others' shares (detail/row_table_shares.hpp), in the tiled
// path and in the double core, the fuzz harness's reference.
namespace {

// Dot scores, one query at -1.94515 over two keys (causal, bottom right), the fuzzer's inputs.
struct SharedCase {
  float k0, k1, v0, v1, dO, scale;
  T5Buckets buckets;
  float t0;
};
const SharedCase kShared[] = {
    {-6.77626358e-21f, 3.36995459f, 1.33341455f, 1.13988227e+38f, 2.05485582f, 1, {true, 3, 16}, -3},
    {-6.77626358e-21f, 2.70833349f, 1.22916651f, 1, 1.13990418e+38f, -1, {true, 3, 1}, 0},
    {-0.956501961f, 1.33333349f, 835, 2.57547031e+38f, 1, -1, {true, 3, 16}, -3}};

// masked: a third key after the two, masked out (it reads relative entry 1).
AttentionConfig<float> shared_config(const SharedCase& x, bool t5, bool relative, bool masked) {
  AttentionConfig<float> c;
  c.score = "dot";
  c.scale = x.scale;
  c.mask.causal = true;
  c.mask.alignment = CausalAlignment::bottom_right;
  if (t5) {
    c.bias.t5 = x.buckets;
    c.bias.t5_table = qktest::vec({x.t0, 0, 0});
  }
  // R = 0 (keys 0 and 1 read entry 0); with the masked key R = 1 (entries 0, 0 and 1: offset 2).
  if (relative) c.bias.relative = masked ? qktest::vec({0.25f, -1, 2}) : qktest::vec({0.25f});
  if (masked) {
    c.mask.keep = KeepMask(1, 3);
    c.mask.keep << true, true, false;
  }
  return c;
}

void check_shared(const SharedCase& x, bool t5, bool relative, bool masked) {
  const AttentionConfig<float> c = shared_config(x, t5, relative, masked);
  const Matrix Q = qktest::mat<float>({{-1.94514966f}});
  const Matrix K = masked ? qktest::mat<float>({{x.k0}, {x.k1}, {3}}) : qktest::mat<float>({{x.k0}, {x.k1}}),
               V = masked ? qktest::mat<float>({{x.v0}, {x.v1}, {7}}) : qktest::mat<float>({{x.v0}, {x.v1}}),
               dO = qktest::mat<float>({{x.dO}});
  const auto cd = qktest::config_as<double>(c);
  const MatrixD Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
  const auto g64 = attention_backward<double>(Qd, Kd, Vd, {}, cd, attention_forward<double>(Qd, Kd, Vd, {}, cd),
                                              dO.cast<double>());
  if (t5) CHECK(g64.dt5_table.isZero(0));
  if (relative) CHECK(g64.drelative.isZero(0));
  for (const Eigen::Index bk : {1, 2, 3, 64}) {
    CAPTURE(x.dO, x.v1, bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, qktest::one_thread(bk));
    const auto g = cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, qktest::one_thread(bk));
    if (t5) CHECK(g.dt5_table.isZero(0));
    if (relative) CHECK(g.drelative.isZero(0));
    qktest::matches_under_harness_bar(Q, K, V, dO, {}, c, qktest::one_thread(bk));
  }
}

}  // namespace

TEST_CASE("T5 table: a row whose keys all read one bucket gives it exactly 0, tiled and double core (fuzzer)",
          "[faults][reliability][tiled]") {
  for (const SharedCase& x : kShared) check_shared(x, true, false, false);
}

TEST_CASE("relative table and a masked key: the row's shared entry is exactly 0 (fifteenth session)",
          "[faults][reliability][tiled]") {
  for (const SharedCase& x : kShared) {
    check_shared(x, false, true, false);
    check_shared(x, false, true, true);  // the masked key's entry 1 gets 0 too (dz = 0)
    check_shared(x, true, true, true);
  }
}

namespace {

// The exact gradient of each table entry in long double from the double core's z (masked: -inf):
// an entry's share of row i is sum over pairs with j in the entry and l outside of it of
// P_j P_l (dP_j - dP_l) / tau (pairs inside the entry cancel; sum_l P_l = 1).
template <class Index>
std::vector<long double> exact_table(const MatrixD& z, const MatrixD& V, const MatrixD& dO, double tau, int n, Index index) {
  std::vector<long double> out(std::size_t(n), 0.0L);
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    long double m = -INFINITY, sum = 0;
    for (Eigen::Index j = 0; j < z.cols(); ++j) m = std::max<long double>(m, z(i, j));
    if (m == -INFINITY) continue;
    std::vector<long double> P(std::size_t(z.cols())), dP(std::size_t(z.cols()), 0.0L);
    for (Eigen::Index j = 0; j < z.cols(); ++j) {
      P[std::size_t(j)] = z(i, j) == -INFINITY ? 0.0L : std::exp((z(i, j) - m) / tau);
      sum += P[std::size_t(j)];
      for (Eigen::Index d = 0; d < V.cols(); ++d) dP[std::size_t(j)] += (long double)dO(i, d) * V(j, d);
    }
    for (Eigen::Index j = 0; j < z.cols(); ++j)
      for (Eigen::Index l = 0; l < z.cols(); ++l)
        if (index(int(i), int(j)) != index(int(i), int(l)))
          out[std::size_t(index(int(i), int(j)))] +=
              P[std::size_t(j)] / sum * (P[std::size_t(l)] / sum) * (dP[std::size_t(j)] - dP[std::size_t(l)]) / tau;
  }
  return out;
}

}  // namespace

TEST_CASE("double core tables: the row rule is never worse than adding each dz, against an exact reference",
          "[faults][reliability]") {
  // Seeded dot calls with keys often tied or equal in value, values up to 1e37 and small T5 /
  // relative tables (many keys share an entry), some masked. The plain compensated sum of the
  // core's own dz (read back as ddense through a zero dense bias) is what the core gave before.
  detail::Rng rng(0x5EED7AB1E5ull);
  int better = 0, entries = 0;
  double worst = 0;  // the largest excess error of the rule, in units of eps sum |dz|
  for (int it = 0; it < 1500; ++it) {
    const int L_q = 1 + int(rng.uniform() * 4), L_k = 2 + int(rng.uniform() * 6), d = 1 + int(rng.uniform() * 2);
    auto pick = [&](double x) { const double u = rng.uniform(); return u < 0.3 ? 0.0 : u < 0.5 ? x * 0 + 1.0 : x; };
    MatrixD Q(L_q, d), K(L_k, d), V(L_k, 1), dO(L_q, 1);
    for (Eigen::Index k = 0; k < Q.size(); ++k) Q.data()[k] = float(rng.normal());
    for (Eigen::Index k = 0; k < K.size(); ++k) K.data()[k] = float(pick(rng.normal()));
    const double big = std::pow(10.0, std::floor(rng.uniform() * 38));
    for (Eigen::Index k = 0; k < V.size(); ++k) V.data()[k] = float(rng.normal() * (rng.uniform() < 0.5 ? big : 1));
    for (Eigen::Index k = 0; k < dO.size(); ++k) dO.data()[k] = float(rng.normal() * (rng.uniform() < 0.3 ? big : 1));
    AttentionConfig<double> c;
    c.score = "dot";
    c.scale = rng.uniform() < 0.5 ? 1 : -1;
    c.temperature = rng.uniform() < 0.5 ? 1 : 0.05;
    c.mask.causal = rng.uniform() < 0.5;
    c.mask.alignment = rng.uniform() < 0.5 ? CausalAlignment::bottom_right : CausalAlignment::top_left;
    if (rng.uniform() < 0.3) {
      c.mask.keep = KeepMask(L_q, L_k);
      for (Eigen::Index k = 0; k < c.mask.keep.size(); ++k) c.mask.keep.data()[k] = rng.uniform() < 0.8;
    }
    c.bias.t5 = T5Buckets{rng.uniform() < 0.5, 2 + int(rng.uniform() * 3), 1 + int(rng.uniform() * 4)};
    c.bias.t5_table = qktest::randn_vec<double>(rng, c.bias.t5->num_buckets).cast<float>().cast<double>();
    c.bias.relative = qktest::randn_vec<double>(rng, 2 * int(rng.uniform() * 3) + 1).cast<float>().cast<double>();
    c.bias.dense = MatrixD::Zero(L_q, L_k);  // ddense = the core's dz
    const auto f = attention_forward<double>(Q, K, V, {}, c);
    const auto g = attention_backward<double>(Q, K, V, {}, c, f, dO);
    const auto mods = score_mods(c.bias, f.scale, 1.0, resolve_mask(c.mask, L_q, L_k).offset);
    auto compare = [&](const VectorD& got, int n, auto index) {
      std::vector<double> s(std::size_t(n), 0.0), comp(s), size(s);  // the plain sum; sum |dz|
      for (int i = 0; i < L_q; ++i)
        for (int j = 0; j < L_k; ++j) {
          const std::size_t k = std::size_t(index(i, j));
          detail::compensated_add(s[k], comp[k], g.ddense(i, j));
          size[k] += std::abs(g.ddense(i, j));
        }
      const auto exact = exact_table(f.masked_scores, V, dO, c.temperature, n, index);
      for (int k = 0; k < n; ++k) {
        const long double e_new = std::abs(got(k) - exact[std::size_t(k)]),
                          e_old = std::abs((s[std::size_t(k)] + comp[std::size_t(k)]) - exact[std::size_t(k)]);
        CAPTURE(it, k, got(k), s[std::size_t(k)] + comp[std::size_t(k)], double(exact[std::size_t(k)]));
        // Worse only by the reshuffled rounding of the dz themselves (a few ulp of sum |dz|).
        const double unit = std::numeric_limits<double>::epsilon() * size[std::size_t(k)];
        CHECK(e_new - e_old <= 4 * unit);
        if (unit > 0) worst = std::max(worst, double(e_new - e_old) / unit);
        better += e_new < e_old;
        ++entries;
      }
    };
    compare(g.dt5_table, c.bias.t5->num_buckets, [&](int i, int j) { return mods.t5_index(i, j); });
    compare(g.drelative, int(c.bias.relative.size()), [&](int i, int j) { return mods.relative_index(i, j); });
  }
  INFO(better << " of " << entries << " entries better");
  CHECK(better > 0);
  INFO(better << " of " << entries << " entries better than the plain sum; worst excess " << worst << " eps sum |dz|");
}

TEST_CASE("T5 table over three tied keys at 9.7e19: the tiled path's 0 (fuzzer, tenth session)", "[faults][reliability][tiled]") {
  // dot-dt5-table-2026-12-05: one query at 0 over three keys tied at 9.7e19 (all in bucket 0),
  // values up to 2.2e38: the tiled path gave -9.4e21 and the float core -1.0e31 (it still
  // does: the rule is kept out of the float core) where the value is 0.
  AttentionConfig<float> c;
  c.score = "dot";
  c.bias.t5 = T5Buckets{false, 9, 20};
  c.bias.t5_table = qktest::vec({0, 1, -3, 0, 0, 0, 0, -3.98303223f, 0});
  const Matrix Q = qktest::mat<float>({{0}}), K = qktest::mat<float>({{9.67140631e+19f}, {9.67140631e+19f}, {9.67140631e+19f}}),
               V = qktest::mat<float>({{1.66153499e+35f}, {-2}, {2.21538878e+38f}}), dO = qktest::mat<float>({{1.36458349f}});
  for (const Eigen::Index bk : {1, 2, 3}) {
    CAPTURE(bk);
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, qktest::one_thread(bk));
    REQUIRE_FALSE(t.fallback);
    CHECK(cpu::attention_backward<float>(Q, K, V, {}, c, t, dO, qktest::one_thread(bk)).dt5_table.isZero(0));
  }
}
