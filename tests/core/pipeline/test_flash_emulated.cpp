// The pipeline functors (qkscope/pipeline/) driven by the CUDA kernels' loop structure
// (emulate.hpp) against the double reference, on sizes that sweep the block boundaries
// (1, B-1, B, B+1, 2B+1, L_q != L_k), both causal alignments, windows, key lengths 0..L_k,
// fully masked rows and blocks, every bias, a temperature, and GQA head mapping.
//   forward:  emulated float vs reference<double>, bar set by reference<float> (compare.hpp)
//   backward: emulated float vs the core's attention_backward<double>, bar by the core in float
#include <catch2/catch.hpp>

#include <cfloat>

#include "qkscope/qkscope.hpp"
#include "qkscope/pipeline/pipeline.hpp"
#include "reference/reference.hpp"
#include "support/cases.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "pipeline/emulate.hpp"
#include "../../fuzz/perturbed.hpp"  // farthest_of

using namespace qkscope;

namespace {

struct Blocks {
  int Br, Bc;
};
struct Size {
  Eigen::Index L_q, L_k, d, d_v;
};

/// The scoring function's form (its prepare hook) as the CUDA kernels read it: dot-product rows
/// or the additive projections; raw(i, j) reads them exactly as a kernel thread does.
struct Prepared {
  score::KernelRows<float> rows;
  explicit Prepared(const std::string& score, const Matrix& Q, const Matrix& K, const ScoreParams<float>& p)
      : rows(visit_score(score, [&](auto f) { return score::kernel_rows<decltype(f)>(Q, K, p, 1, true); })) {}
  qktile::RawFn<float> raw() const {
    const Matrix &A = rows.q, &B = rows.k;
    if (rows.additive)
      return [this, &A, &B](int i, int j) {
        float s = 0;
        for (Eigen::Index h = 0; h < rows.add_v.size(); ++h) s += rows.add_v(h) * pipeline::tanh_(A(i, h) + B(j, h));
        return s;
      };
    return [&A, &B](int i, int j) {
      float s = 0;
      for (Eigen::Index k = 0; k < A.cols(); ++k) s += A(i, k) * B(j, k);
      return s;
    };
  }
};

double scale_of(const std::string& score, Eigen::Index L_q, Eigen::Index L_k, Eigen::Index d) {
  return visit_score(score, [&](auto f) { return decltype(f)::default_scale(ScoreShape{L_q, L_k, d, d}); });
}

template <class T>
Eigen::Map<const Mat<T>> as_mat(const std::vector<T>& v, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<const Mat<T>>(v.data(), rows, cols);
}

/// One configuration: forward (and backward for the dot family) against the references.
void check_case(const std::string& score, const Size& s, const std::string& mask_name, const MaskSpec& mask,
                int bias_kind, const Blocks& blk, detail::Rng& rng, bool backward) {
  const auto sc = qktest::score_case(score, s.L_q, s.L_k, s.d, s.d_v, mask, bias_kind, rng);
  const auto& [Q, K, V, G, Qf, Kf, Vf, Gf, p64, p32, c64, c32] = sc;
  INFO("score " << score << ", L_q=" << s.L_q << " L_k=" << s.L_k << " d=" << s.d << " d_v=" << s.d_v
                << ", blocks " << blk.Br << "x" << blk.Bc << ", mask " << mask_name << ", bias kind "
                << bias_kind);

  const MaskFn mfn = resolve_mask(c32.mask, s.L_q, s.L_k);
  const pipeline::Logits<float> lg{mfn,
                               score_mods(c32.bias, scale_of(score, s.L_q, s.L_k, s.d), c32.temperature, mfn.offset)};
  std::vector<std::uint8_t> map;
  pipeline::BlockClassifier bc{lg.mask, blk.Br, blk.Bc, nullptr};
  if (lg.mask.keep) {
    map.resize(std::size_t(bc.num_q_blocks()) * bc.num_k_blocks());
    pipeline::build_block_map(lg.mask, blk.Br, blk.Bc, map.data());
    bc.map = map.data();
  }
  const Prepared pr(score, Qf, Kf, p32);
  const auto fwd = qktile::flash_forward<float>(pr.raw(), Vf.data(), int(s.d_v), lg, bc);
  const Matrix out = as_mat(fwd.out, s.L_q, s.d_v);
  const Vector lse = Eigen::Map<const Vector>(fwd.lse.data(), s.L_q);

  const auto ref = reference::attention<double>(Q, K, V, p64, c64);
  const auto naive = reference::attention<float>(Qf, Kf, Vf, p32, c32);
  CHECK_MATCHES_REFERENCE("output", out, naive.output, ref.output);
  CHECK_MATCHES_REFERENCE("logsumexp", lse, naive.logsumexp, ref.logsumexp);
  for (Eigen::Index i = 0; i < s.L_q; ++i)
    if (ref.logsumexp(i) == -std::numeric_limits<double>::infinity()) CHECK(out.row(i).isZero(0));

  if (!backward || pr.rows.additive) return;
  const auto f64 = attention_forward<double>(Q, K, V, p64, c64);
  const auto g64 = attention_backward<double>(Q, K, V, p64, c64, f64, G);
  const auto f32 = attention_forward<float>(Qf, Kf, Vf, p32, c32);
  const auto g32 = attention_backward<float>(Qf, Kf, Vf, p32, c32, f32, Gf);
  const int d = int(pr.rows.q.cols());
  const auto gr = qktile::flash_backward<float>(pr.rows.q.data(), pr.rows.k.data(), d, Vf.data(), int(s.d_v),
                                                out.data(), fwd.lse.data(), Gf.data(), lg, bc);
  const ScoreGrads<float> back = pr.rows.back(as_mat(gr.dQs, s.L_q, d), as_mat(gr.dKs, s.L_k, d));
  const Matrix &dQ = back.dQ, &dK = back.dK;
  // The kernels take D = dO . O (Dao 2023), the core sum_j p_j (dp_j - b) with b the dp of the
  // row's key of largest p (norm/row.hpp). D as one float number is off by eps |D| at best,
  // and in a row that one key carries, dp - D of that key is far smaller than D: the float core
  // is then far more accurate than the kernels' form can be. The bar is the farther of the
  // float core and of what moving each D_i by eps |D_i| does (the emulation in double).
  const std::vector<double> q64(pr.rows.q.data(), pr.rows.q.data() + pr.rows.q.size()),
      k64(pr.rows.k.data(), pr.rows.k.data() + pr.rows.k.size()), V64(Vf.data(), Vf.data() + Vf.size()),
      O64(out.data(), out.data() + out.size()), lse64(fwd.lse.begin(), fwd.lse.end()), G64(Gf.data(), Gf.data() + Gf.size());
  const pipeline::Logits<double> lg64{mfn, score_mods(c64.bias, scale_of(score, s.L_q, s.L_k, s.d), c64.temperature, mfn.offset)};
  const auto e0 = qktile::flash_backward<double>(q64.data(), k64.data(), d, V64.data(), int(s.d_v), O64.data(),
                                                 lse64.data(), G64.data(), lg64, bc);
  // Both directions: a row's move of D can cancel another's in dK's sums over rows.
  auto moved = [&](double D_rel) {
    const auto e = qktile::flash_backward<double>(q64.data(), k64.data(), d, V64.data(), int(s.d_v), O64.data(),
                                                  lse64.data(), G64.data(), lg64, bc, D_rel);
    auto diff = [&](const std::vector<double>& a, const std::vector<double>& b, Eigen::Index rows) {
      return Matrix((as_mat(a, rows, d) - as_mat(b, rows, d)).cast<float>());
    };
    return pr.rows.back(diff(e.dQs, e0.dQs, s.L_q), diff(e.dKs, e0.dKs, s.L_k));
  };
  const ScoreGrads<float> up = moved(double(FLT_EPSILON)), down = moved(-double(FLT_EPSILON));
  auto check = [&](const char* what, const Matrix& fast, const Matrix& core32, const MatrixD& core64, const Matrix& u,
                   const Matrix& dn) {
    const MatrixD bar = qkfuzz::farthest_of(
        core64, {core32.cast<double>(), core64 + u.cast<double>(), core64 + dn.cast<double>()});
    CHECK_MATCHES_REFERENCE(what, fast, bar, core64);
  };
  check("dQ", dQ, g32.dQ, g64.dQ, up.dQ, down.dQ);
  check("dK", dK, g32.dK, g64.dK, up.dK, down.dK);
  CHECK_MATCHES_REFERENCE("dV", as_mat(gr.dV, s.L_k, s.d_v), g32.dV, g64.dV);
  // Both passes visit exactly the blocks the forward visited.
  CHECK(gr.visited_a == fwd.visited);
  CHECK(gr.visited_b == fwd.visited);
}

}  // namespace

TEST_CASE("pipeline functors in the kernels' loop structure match the double reference across block boundaries",
          "[pipeline]") {
  detail::Rng rng(2025);
  // B = 4 (and a 4 x 3 grid, so query and key blocks disagree): 1, B-1, B, B+1, 2B+1.
  const Size sizes[] = {{1, 1, 1, 1}, {3, 4, 3, 2}, {4, 5, 5, 3}, {5, 9, 3, 1}, {9, 3, 5, 2}, {9, 9, 7, 4}};
  for (const Blocks blk : {Blocks{4, 4}, Blocks{4, 3}})
    for (const ScoreInfo& score : score_infos())  // every registered scoring function
      for (const Size& s : sizes)
        for (const auto& [name, mask] : qktest::mask_cases(s.L_q, s.L_k, blk.Br, blk.Bc))
          for (int bias_kind = 0; bias_kind < 3; ++bias_kind)
            check_case(score.name, s, name, mask, bias_kind, blk, rng, /*backward=*/true);
}

TEST_CASE("pipeline functors with the CUDA kernels' own 64 x 64 blocks match the reference at 1, 63, 64, 65, 129",
          "[pipeline]") {
  detail::Rng rng(64);
  const Size sizes[] = {{1, 1, 8, 4}, {63, 64, 8, 4}, {65, 63, 5, 3}, {129, 65, 8, 4}, {64, 129, 3, 2}};
  for (const char* score : {"scaled_dot", "additive"})
    for (const Size& s : sizes)
      for (const auto& [name, mask] : qktest::mask_cases(s.L_q, s.L_k, 64, 64))
        check_case(score, s, name, mask, name == "none" ? 2 : 0, Blocks{64, 64}, rng, /*backward=*/true);
}

TEST_CASE("large logits: the online softmax rescales without overflow, like the reference", "[pipeline]") {
  detail::Rng rng(9);
  const Size s{9, 11, 5, 3};
  MaskSpec br;
  br.causal = true;
  br.alignment = CausalAlignment::bottom_right;
  for (const Blocks blk : {Blocks{4, 4}, Blocks{2, 3}}) {
    // inputs with sd 8: logits up to a few hundred, e^x overflows float without the shift
    const MatrixD Q = qktest::randn(rng, s.L_q, s.d, 8.0), K = qktest::randn(rng, s.L_k, s.d, 8.0),
                  V = qktest::randn(rng, s.L_k, s.d_v);
    AttentionConfig<double> c64;
    c64.score = "dot";
    c64.mask = br;
    AttentionConfig<float> c32;
    c32.score = "dot";
    c32.mask = br;
    const MaskFn mfn = resolve_mask(c32.mask, s.L_q, s.L_k);
    const pipeline::Logits<float> lg{mfn, score_mods(c32.bias, 1.0, 1.0, mfn.offset)};
    const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>();
    const auto fwd = qktile::flash_forward<float>(
        [&](int i, int j) { return float(Qf.row(i).dot(Kf.row(j))); }, Vf.data(), int(s.d_v), lg,
        pipeline::BlockClassifier{lg.mask, blk.Br, blk.Bc, nullptr});
    const auto ref = reference::attention<double>(Q, K, V, {}, c64);
    const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, c32);
    CHECK_MATCHES_REFERENCE("output", as_mat(fwd.out, s.L_q, s.d_v), naive.output, ref.output);
    CHECK(Eigen::Map<const Vector>(fwd.lse.data(), s.L_q).allFinite());
  }
}

TEST_CASE("GQA index mapping and per-sequence key lengths: every (sequence, head) matches its own reference",
          "[pipeline]") {
  // batch 2, 4 query heads sharing 2 key/value heads; sequence 1 has only 3 valid keys.
  const pipeline::Heads heads{2, 4, 2};
  const int L_q = 5, L_k = 7, d = 4, d_v = 3;
  const int key_lengths[] = {7, 3};
  detail::Rng rng(77);
  std::vector<MatrixD> Q, K, V;
  for (int h = 0; h < heads.count(); ++h) Q.push_back(qktest::randn(rng, L_q, d));
  for (int g = 0; g < heads.kv_count(); ++g) {
    K.push_back(qktest::randn(rng, L_k, d));
    V.push_back(qktest::randn(rng, L_k, d_v));
  }
  const auto slopes = alibi_slopes(heads.heads);
  for (int bh = 0; bh < heads.count(); ++bh) {
    const int g = heads.kv_of(bh), b = heads.batch_of(bh), h = heads.head_of(bh);
    INFO("flat head " << bh << " (sequence " << b << ", head " << h << ") reads kv head " << g);
    CHECK(g / heads.kv_heads == b);  // never another sequence's keys
    CHECK(bh >= heads.first_query_head(g));
    CHECK(bh < heads.first_query_head(g) + heads.group());
    AttentionConfig<float> c32;
    c32.score = "scaled_dot";
    c32.mask.causal = true;
    c32.mask.alignment = CausalAlignment::bottom_right;
    const MaskFn mfn = resolve_mask(c32.mask, L_q, L_k);
    // The kernel's per-head view: the call's mask with the sequence's key length, the head's slope.
    pipeline::Logits<float> lg{mfn.with_key_length(key_lengths[b]),
                           score_mods(c32.bias, 0.5, 1.0, mfn.offset).with_slope(float(slopes[h]))};
    const Matrix Qf = Q[bh].cast<float>(), Kf = K[g].cast<float>(), Vf = V[g].cast<float>();
    const auto fwd = qktile::flash_forward<float>(
        [&](int i, int j) {
          float s = 0;
          for (int k = 0; k < d; ++k) s += Qf(i, k) * Kf(j, k);
          return s;
        },
        Vf.data(), d_v, lg, pipeline::BlockClassifier{lg.mask, 2, 3, nullptr});
    AttentionConfig<double> c64;
    c64.score = "scaled_dot";
    c64.mask = c32.mask;
    c64.mask.key_length = key_lengths[b];
    c64.bias.alibi_slope = slopes[h];
    AttentionConfig<float> n32 = c32;
    n32.mask.key_length = key_lengths[b];
    n32.bias.alibi_slope = slopes[h];
    const auto ref = reference::attention<double>(Q[bh], K[g], V[g], {}, c64);
    const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, n32);
    CHECK_MATCHES_REFERENCE("output", as_mat(fwd.out, L_q, d_v), naive.output, ref.output);
    CHECK_MATCHES_REFERENCE("logsumexp", Eigen::Map<const Vector>(fwd.lse.data(), L_q), naive.logsumexp,
                            ref.logsumexp);
  }
}
