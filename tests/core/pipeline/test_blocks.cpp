// Block iteration bounds and block classification (qkscope/pipeline/mask.hpp), checked
// against brute force: a kernel visits exactly the blocks that hold at least one visible
// (query, key) pair, calls "full" only blocks where every pair is visible, and the bounds
// agree with the core's MaskFn element by element. Plus the small functors' contracts:
// online softmax (merge, empty rows), score-modifier gradients, GQA mapping.
#include <catch2/catch.hpp>

#include "qkscope/qkscope.hpp"
#include "qkscope/pipeline/pipeline.hpp"
#include "reference/reference.hpp"
#include "support/random.hpp"

using namespace qkscope;
using pipeline::BlockKind;

namespace {

std::vector<std::pair<std::string, MaskSpec>> band_masks() {
  std::vector<std::pair<std::string, MaskSpec>> out;
  out.push_back({"none", {}});
  for (auto al : {CausalAlignment::top_left, CausalAlignment::bottom_right}) {
    const std::string a = al == CausalAlignment::top_left ? " top_left" : " bottom_right";
    MaskSpec c;
    c.causal = true;
    c.alignment = al;
    out.push_back({"causal" + a, c});
    for (auto [l, r] : {std::pair{0, 0}, {3, 0}, {0, 2}, {5, 7}, {1, 100}}) {
      MaskSpec w;
      w.alignment = al;
      w.window_left = l;
      w.window_right = r;
      out.push_back({"window(" + std::to_string(l) + "," + std::to_string(r) + ")" + a, w});
      w.causal = true;
      out.push_back({"causal window(" + std::to_string(l) + "," + std::to_string(r) + ")" + a, w});
    }
    MaskSpec lo;  // only a left width: the right side is unbounded
    lo.alignment = al;
    lo.window_left = 4;
    out.push_back({"window(4,-)" + a, lo});
  }
  return out;
}

struct Count {
  int visible = 0, area = 0;
};

/// Brute-force census of block (qb, kb) over the padded block area.
Count census(const MaskFn& m, int Br, int Bc, int qb, int kb) {
  Count c;
  c.area = Br * Bc;
  for (int i = qb * Br; i < (qb + 1) * Br; ++i)
    for (int j = kb * Bc; j < (kb + 1) * Bc; ++j)
      if (i < m.L_q && j < m.L_k && m(i, j)) ++c.visible;
  return c;
}

void check_blocks(const std::string& name, const MaskSpec& spec, Eigen::Index L_q, Eigen::Index L_k, int Br,
                  int Bc, bool with_map) {
  const pipeline::Mask tm = resolve_mask(spec, L_q, L_k);
  std::vector<std::uint8_t> map;
  pipeline::BlockClassifier bc{tm, Br, Bc, nullptr};
  if (with_map) {
    map.resize(std::size_t(bc.num_q_blocks()) * bc.num_k_blocks());
    pipeline::build_block_map(tm, Br, Bc, map.data());
    bc.map = map.data();
  }
  INFO("mask " << name << ", L_q=" << L_q << " L_k=" << L_k << ", blocks " << Br << "x" << Bc
               << (with_map ? ", block map" : ""));
  // Element by element, the pipeline's mask is the oracle's mask rule.
  for (int i = 0; i < L_q; ++i)
    for (int j = 0; j < L_k; ++j) REQUIRE(tm(i, j) == reference::allowed(spec, L_q, L_k, i, j));
  for (int qb = 0; qb < bc.num_q_blocks(); ++qb) {
    const pipeline::Range kr = bc.key_blocks(qb);
    for (int kb = 0; kb < bc.num_k_blocks(); ++kb) {
      INFO("block (" << qb << ", " << kb << ")");
      const Count c = census(tm, Br, Bc, qb, kb);
      const BlockKind k = bc(qb, kb);
      const bool visited = kb >= kr.begin && kb < kr.end && k != BlockKind::empty;
      if (tm.keep && !with_map)
        CHECK((visited || c.visible == 0));  // without the map a keep mask only skips band-empty blocks
      else
        CHECK(visited == (c.visible > 0));  // skipped blocks are exactly the fully masked ones
      if (k == BlockKind::full) CHECK(c.visible == c.area);
      // Without a keep mask (or with the exact map) a partial block is really partial or padded.
      if (k == BlockKind::partial && (!tm.keep || with_map))
        CHECK((c.visible < c.area || (qb + 1) * Br > L_q || (kb + 1) * Bc > L_k));
      // Backward's bounds: the key block's query range contains every visible query block.
      const pipeline::Range qr = bc.query_blocks(kb);
      if (c.visible > 0) CHECK((qb >= qr.begin && qb < qr.end));
    }
    // The key range is tight for the band: its first and last blocks hold visible pairs.
    if (!kr.empty() && !tm.keep) {
      CHECK(census(tm, Br, Bc, qb, kr.begin).visible > 0);
      CHECK(census(tm, Br, Bc, qb, kr.end - 1).visible > 0);
    }
  }
  for (int kb = 0; kb < bc.num_k_blocks(); ++kb) {
    const pipeline::Range qr = bc.query_blocks(kb);
    if (!qr.empty() && !tm.keep) {
      CHECK(census(tm, Br, Bc, qr.begin, kb).visible > 0);
      CHECK(census(tm, Br, Bc, qr.end - 1, kb).visible > 0);
    }
  }
}

}  // namespace

TEST_CASE("block bounds visit exactly the blocks with a visible pair, for every band mask", "[pipeline]") {
  const std::pair<Eigen::Index, Eigen::Index> shapes[] = {{1, 1}, {3, 4}, {4, 4}, {5, 4}, {9, 4},
                                                          {4, 9}, {9, 9}, {13, 6}, {6, 13}, {1, 17}};
  for (const auto& [name, base] : band_masks())
    for (const auto& [L_q, L_k] : shapes)
      for (const auto& [Br, Bc] : {std::pair{4, 4}, {4, 3}, {2, 5}, {1, 1}, {64, 64}})
        for (Eigen::Index kl : {L_k, L_k / 2, Eigen::Index(0)}) {
          MaskSpec spec = base;
          if (kl != L_k) spec.key_length = kl;
          check_blocks(name + (kl != L_k ? ", key_length " + std::to_string(kl) : ""), spec, L_q, L_k, Br, Bc,
                       false);
        }
}

TEST_CASE("keep masks: the block map makes skipping exact, and per-sequence key lengths still apply",
          "[pipeline]") {
  detail::Rng rng(3);
  const Eigen::Index L_q = 11, L_k = 13;
  MaskSpec spec;
  spec.keep = KeepMask::Constant(L_q, L_k, true);
  spec.keep.block(0, 0, 4, 4).setConstant(false);     // one whole block empty
  spec.keep.block(4, 8, 4, 4).setConstant(false);     // another
  for (Eigen::Index j = 0; j < L_k; ++j) spec.keep(10, j) = rng.uniform() < 0.3;  // a ragged row
  spec.keep.row(9).setConstant(false);                // a fully masked row
  check_blocks("keep", spec, L_q, L_k, 4, 4, true);
  check_blocks("keep, no map", spec, L_q, L_k, 4, 4, false);
  spec.causal = true;
  check_blocks("keep + causal", spec, L_q, L_k, 4, 4, true);

  // A map coarser than the kernel's blocks (4 x 4 map, 2 x 4 blocks): still never skips a
  // visible pair, and "full" is still exact.
  {
    const pipeline::Mask km = resolve_mask(spec, L_q, L_k);
    std::vector<std::uint8_t> coarse(std::size_t(pipeline::ceil_div(int(L_q), 4) * pipeline::ceil_div(int(L_k), 4)));
    pipeline::build_block_map(km, 4, 4, coarse.data());
    const pipeline::BlockClassifier fine{km, 2, 4, coarse.data(), 4, 4};
    for (int qb = 0; qb < fine.num_q_blocks(); ++qb)
      for (int kb = 0; kb < fine.num_k_blocks(); ++kb) {
        int visible = 0, area = 0;
        for (int i = qb * 2; i < std::min<int>((qb + 1) * 2, L_q); ++i)
          for (int j = kb * 4; j < std::min<int>((kb + 1) * 4, L_k); ++j) {
            visible += km(i, j);
            ++area;
          }
        INFO("fine block (" << qb << ", " << kb << ")");
        if (visible > 0) CHECK(fine(qb, kb) != BlockKind::empty);
        if (fine(qb, kb) == BlockKind::full) CHECK(visible == area);
      }
  }
  // A block map built for the call's mask combined with a shorter per-sequence key length.
  const pipeline::Mask tm = resolve_mask(spec, L_q, L_k);
  std::vector<std::uint8_t> map(std::size_t(pipeline::ceil_div(int(L_q), 4) * pipeline::ceil_div(int(L_k), 4)));
  pipeline::build_block_map(tm, 4, 4, map.data());
  const pipeline::BlockClassifier bc{tm.with_key_length(5), 4, 4, map.data()};
  for (int qb = 0; qb < bc.num_q_blocks(); ++qb)
    for (int kb = 0; kb < bc.num_k_blocks(); ++kb) {
      int visible = 0;
      for (int i = qb * 4; i < std::min<int>((qb + 1) * 4, L_q); ++i)
        for (int j = kb * 4; j < std::min<int>((kb + 1) * 4, L_k); ++j) visible += bc.mask(i, j);
      INFO("block (" << qb << ", " << kb << ")");
      CHECK((bc(qb, kb) == BlockKind::empty) == (visible == 0));
    }
}

TEST_CASE("online softmax: empty rows give lse -inf and output 0; merging partial states equals one pass",
          "[pipeline]") {
  using S = pipeline::OnlineSoftmax<double>;
  const double ninf = -std::numeric_limits<double>::infinity();
  S empty;
  CHECK(empty.rescale(ninf) == 0.0);  // alpha of an all -inf block: 0, never NaN
  CHECK(empty.p(ninf) == 0.0);
  CHECK(empty.inv_l() == 0.0);
  CHECK(empty.logsumexp() == ninf);

  const double x[] = {0.5, -3, 700, 699, ninf, 12};  // 700: e^x overflows without the shift
  S one;
  double m = ninf;
  for (double v : x) m = std::max(m, v);
  one.rescale(m);
  double sum = 0;
  for (double v : x) sum += one.p(v);
  one.add(sum);
  S a, b;  // two halves, then merged
  a.rescale(std::max({x[0], x[1], x[2]}));
  a.add(a.p(x[0]) + a.p(x[1]) + a.p(x[2]));
  b.rescale(std::max({x[3], x[4], x[5]}));
  b.add(b.p(x[3]) + b.p(x[4]) + b.p(x[5]));
  double aa, ab;
  a.merge(b, &aa, &ab);
  CHECK(a.logsumexp() == Approx(one.logsumexp()).epsilon(1e-15));
  CHECK(std::isfinite(one.logsumexp()));
  // Backward: the shift of a fully masked row makes every P exactly 0.
  CHECK(pipeline::exp_(ninf - pipeline::recompute_shift(ninf)) == 0.0);
  CHECK(pipeline::exp_(3.0 - pipeline::recompute_shift(ninf)) == 0.0);
  CHECK(pipeline::softmax_grad(0.0, 5.0, 2.0) == 0.0);
}

TEST_CASE("score modifiers: logit follows the pipeline order and grad_raw is its derivative", "[pipeline]") {
  detail::Rng rng(8);
  const Eigen::Index L_q = 4, L_k = 6;
  BiasSpec<double> b;
  b.softcap = 1.7;
  b.alibi_slope = 0.3;
  b.relative = qktest::randn_vec(rng, 5);
  b.t5 = T5Buckets{true, 6, 5};
  b.t5_table = qktest::randn_vec(rng, 6);
  b.dense = qktest::randn(rng, L_q, L_k);
  MaskSpec ms;
  ms.alignment = CausalAlignment::bottom_right;
  const MaskFn m = resolve_mask(ms, L_q, L_k);
  const double scale = 0.8, tau = 0.6;
  const auto mods = score_mods(b, scale, tau, m.offset);
  MatrixD raw = qktest::randn(rng, L_q, L_k, 2.0);
  // The oracle's order: dot scores of raw against the identity keys are raw itself.
  AttentionConfig<double> cfg;
  cfg.score = "dot";
  cfg.scale = scale;
  cfg.mask = ms;
  cfg.bias = b;
  const MatrixD s = reference::attention<double>(raw, MatrixD::Identity(L_k, L_k), MatrixD::Ones(L_k, 1), {}, cfg).scores;
  for (int i = 0; i < L_q; ++i)
    for (int j = 0; j < L_k; ++j) {
      CHECK(mods.logit(raw(i, j), i, j) == Approx(s(i, j) / tau).epsilon(1e-13));
      const double h = 1e-6;
      const double fd = (mods.logit(raw(i, j) + h, i, j) - mods.logit(raw(i, j) - h, i, j)) / (2 * h);
      CHECK(mods.grad_raw(1.0, raw(i, j)) == Approx(fd).epsilon(1e-7));
    }
  CHECK(mods.grad_raw(0.0, std::numeric_limits<double>::quiet_NaN()) == 0.0);  // masked stays exactly 0
  pipeline::ScoreMods<double> plain;
  plain.scale_tau = 0.25;
  CHECK(plain.plain());
  CHECK(plain.logit(8.0, 0, 0) == 2.0);
}

TEST_CASE("GQA mapping: MHA, GQA and MQA head groups partition the query heads", "[pipeline]") {
  for (auto [batch, heads, kv] : {std::tuple{1, 4, 4}, {2, 8, 2}, {3, 6, 1}, {2, 32, 8}}) {
    const pipeline::Heads hm{batch, heads, kv};
    std::vector<int> seen(std::size_t(hm.count()), 0);
    for (int g = 0; g < hm.kv_count(); ++g)
      for (int t = 0; t < hm.group(); ++t) {
        const int bh = hm.first_query_head(g) + t;
        CHECK(hm.kv_of(bh) == g);
        ++seen[std::size_t(bh)];
      }
    for (int c : seen) CHECK(c == 1);
  }
}
