// The CUDA kernels (native/cuda, every version 1-5) run on the CPU interpreter
// (native/cuda/emu): the same kernel source, thread by thread, checked against the double
// reference with cases.hpp's rule. Runs on any machine that builds native/cuda, GPU or not.
// Sizes straddle the kernels' 64-row/64-key blocks (and v2's 16): 1, 63, 64, 65, 129, L_q != L_k.
// Compiled only into qkscope_cuda_tests (tests/CMakeLists.txt globs tests/core too).
#if defined(QKSCOPE_CUDA_TESTS)
#include "cuda/cases.hpp"
#include "emu/schedule.hpp"
#include "kernels/params.hpp"

using namespace qkscope;
using qkcuda::Heads;
using qkcuda::Size;

namespace {

cuda::Options interp(int version, cuda::Precision p = cuda::Precision::fp32) {
  cuda::Options o;
  o.version = version;
  o.precision = p;
  o.interpret = true;
  return o;
}

cuda::Precision precision_for(int version, int i) {
  if (version <= 3) return cuda::Precision::fp32;
  return i % 2 ? cuda::Precision::bf16 : cuda::Precision::fp16;
}

}  // namespace

/// Restores the interpreter's default thread order when a test ends.
struct ScheduleGuard {
  qkemu::Schedule saved = qkemu::schedule();
  ~ScheduleGuard() { qkemu::set_schedule(saved); }
};

TEST_CASE("interpreter: every kernel version matches the double reference for every score, mask and bias",
          "[cuda][interpreter]") {
  // Both greedy thread orders: warp 0 (or warp 3/7) runs ahead of the others between barriers,
  // so a barrier missing between warps shows up as poisoned or stale shared memory.
  ScheduleGuard guard;
  const auto order = GENERATE(qkemu::Schedule::lowest_first, qkemu::Schedule::highest_first);
  qkemu::set_schedule(order);
  INFO("interpreter schedule " << (order == qkemu::Schedule::lowest_first ? "lowest_first" : "highest_first"));
  detail::Rng rng(11);
  for (int version = 1; version <= 5; ++version) {
    // Two query blocks and three key blocks of 64; odd widths where the version allows them.
    const Size s = version == 5 ? Size{65, 130, 16, 8} : Size{65, 130, 7, 5};
    const auto ms = qkcuda::masks(s.L_q, s.L_k);
    int i = 0;
    for (const std::string& score : qkcuda::scores_for(version)) {
      for (std::size_t m = 0; m < ms.size(); m += 2, ++i) {  // each score sees half the masks, all scores all
        const auto& [name, mask] = ms[(m + std::size_t(i)) % ms.size()];
        qkcuda::check(score, s, name, mask, i % 3, interp(version, precision_for(version, i)), Heads{}, rng, false);
      }
    }
  }
}

TEST_CASE("interpreter: block boundaries 1, 63, 64, 65, 129 with L_q != L_k, causal and biased", "[cuda][interpreter]") {
  detail::Rng rng(12);
  const Size sizes[] = {{1, 1, 8, 8}, {63, 64, 8, 16}, {64, 65, 16, 8}, {129, 63, 8, 8}, {17, 129, 8, 8}};
  MaskSpec br;
  br.causal = true;
  br.alignment = CausalAlignment::bottom_right;
  for (int version = 1; version <= 5; ++version)
    for (const Size& s : sizes)
      qkcuda::check("scaled_dot", s, "causal bottom_right", br, 2, interp(version, precision_for(version, int(s.L_q))),
                    Heads{}, rng, false);
}

TEST_CASE("interpreter: GQA by index mapping, per-head ALiBi slopes and per-sequence key lengths",
          "[cuda][interpreter]") {
  detail::Rng rng(13);
  const Heads gqa{2, 4, 2, true, {70, 23}};  // batch 2, 4 query heads on 2 kv heads
  MaskSpec tl;
  tl.causal = true;
  for (int version = 1; version <= 5; ++version)
    qkcuda::check("scaled_dot", Size{33, 70, 16, 8}, "causal top_left", tl, 0, interp(version, precision_for(version, 0)),
                  gqa, rng, false);
  const Heads mqa{1, 3, 1, false, {}};  // multi-query: three heads share one kv head
  qkcuda::check("additive", Size{20, 40, 6, 5}, "none", {}, 1, interp(3), mqa, rng, false);
}

TEST_CASE("interpreter: fused additive attention with d_h in several 32-wide chunks and d_v up to 512",
          "[cuda][interpreter]") {
  detail::Rng rng(14);
  MaskSpec win;
  win.window_left = 9;
  for (int version = 1; version <= 3; ++version) {
    qkcuda::check("additive", Size{19, 70, 37, 24}, "window(9,-)", win, 1, interp(version), Heads{}, rng, false);
  }
  qkcuda::check("additive", Size{17, 65, 8, 300}, "none", {}, 0, interp(3), Heads{}, rng, false);
}

TEST_CASE("interpreter: additive version 3 splits the keys over CTAs and keeps tanhf where e^{2x} would overflow",
          "[cuda][interpreter]") {
  // 2 query blocks of 16 rows and 4 key blocks of 64: four CTAs share each query block's keys
  // (v3_kv_splits), the first one sees a window-masked key block only in part. Amplitude 1: every
  // d_h chunk takes the e^{2A} e^{2B} product; amplitude 60: |A|, |B| pass kExpLimit = 40 and the
  // chunks fall back to tanhf (the product would give inf * 0 = NaN there).
  const Eigen::Index L_q = 20, L_k = 200, d = 12, d_h = 40, d_v = 9;
  REQUIRE(cuda::kern::v3_kv_splits(true, 2, int(L_k)) == 4);
  REQUIRE(cuda::kern::v3_kv_splits(false, 2, int(L_k)) == 1);
  detail::Rng rng(16);
  for (double amp : {1.0, 60.0}) {
    const MatrixD Q = qktest::randn(rng, L_q, d, amp), K = qktest::randn(rng, L_k, d, amp),
                  V = qktest::randn(rng, L_k, d_v);
    const auto p64 = init_params<double>("additive", d, d, d_h, 11);
    const auto p32 = p64.cast<float>();
    AttentionConfig<double> c64;
    c64.score = "additive";
    c64.mask.window_left = 150;
    AttentionConfig<float> c32;
    c32.score = "additive";
    c32.mask.window_left = 150;
    const auto ref = reference::attention<double>(Q, K, V, p64, c64);
    const auto naive = reference::attention<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), p32, c32);
    const auto r = cuda::attention_forward(Q.cast<float>(), K.cast<float>(), V.cast<float>(), p32, c32, interp(3));
    const double max_a = (Q * p64.W_q.transpose()).cwiseAbs().maxCoeff();
    INFO("amplitude " << amp << ", max |A| " << max_a);
    if (amp > 1) REQUIRE(max_a > 40);
    CHECK_MATCHES_REFERENCE("output", r.output, naive.output, ref.output);
    CHECK_MATCHES_REFERENCE("logsumexp", r.logsumexp, naive.logsumexp, ref.logsumexp);
  }
}

TEST_CASE("interpreter: version 3 backward (recompute P from logsumexp) matches the core's gradients",
          "[cuda][interpreter]") {
  detail::Rng rng(15);
  const Size s{65, 70, 9, 6};
  const auto ms = qkcuda::masks(s.L_q, s.L_k);
  int i = 0;
  for (const std::string& score : qkcuda::scores_for(3, true))
    for (std::size_t m = 0; m < ms.size(); m += 3, ++i) {
      const auto& [name, mask] = ms[(m + std::size_t(i)) % ms.size()];
      qkcuda::check(score, s, name, mask, i % 3, interp(3), Heads{}, rng, true);
    }
  MaskSpec tl;
  tl.causal = true;
  qkcuda::check("scaled_dot", Size{33, 70, 16, 8}, "causal top_left", tl, 0, interp(3), Heads{2, 4, 2, true, {70, 23}},
                rng, true);
  qkcuda::check("dot", Size{1, 1, 3, 2}, "none", {}, 0, interp(3), Heads{}, rng, true);
}

TEST_CASE("interpreter, exhaustive: every version x score x mask x bias x boundary size", "[cuda][interpreter][.slow]") {
  // Hidden (minutes): build/native/native/cuda/qkscope_cuda_tests "[.slow]"
  detail::Rng rng(17);
  for (int version = 1; version <= 5; ++version) {
    const std::vector<Size> sizes = version == 5 ? std::vector<Size>{{1, 1, 8, 8}, {63, 64, 16, 8}, {65, 130, 8, 16}, {129, 63, 8, 8}}
                                                 : std::vector<Size>{{1, 1, 1, 1}, {63, 64, 5, 3}, {65, 130, 7, 9}, {129, 63, 3, 5}};
    int i = 0;
    for (const std::string& score : qkcuda::scores_for(version))
      for (const Size& s : sizes)
        for (const auto& [name, mask] : qkcuda::masks(s.L_q, s.L_k))
          for (int bias = 0; bias < 3; ++bias, ++i)
            qkcuda::check(score, s, name, mask, bias, interp(version, precision_for(version, i)), Heads{}, rng,
                          version == 3 && qkcuda::has_backward(score));
  }
}

TEST_CASE("interpreter: unsupported configurations throw std::invalid_argument naming them", "[cuda][interpreter]") {
  detail::Rng rng(16);
  const Matrix Q = qktest::randn<float>(rng, 4, 6), K = qktest::randn<float>(rng, 5, 6), V = qktest::randn<float>(rng, 5, 6);
  AttentionConfig<float> cfg;
  auto throws = [&](const AttentionConfig<float>& c, const cuda::Options& o, const std::string& needle,
                    const ScoreParams<float>& p = {}) {
    INFO("expecting a message containing: " << needle);
    CHECK_THROWS_WITH(cuda::attention_forward(Q, K, V, p, c, o), Catch::Contains(needle));
    CHECK_THROWS_AS(cuda::attention_forward(Q, K, V, p, c, o), std::invalid_argument);
  };
  auto c = cfg;
  c.normalizer = "sparsemax";
  throws(c, interp(3), "normalizer 'sparsemax' is not supported by the CUDA backend");
  throws(cfg, interp(4), "precision must be fp16 or bf16");
  throws(cfg, interp(2, cuda::Precision::fp16), "takes fp32 inputs");
  throws(cfg, interp(0), "kernel version must be 1..5");
  throws(cfg, interp(5, cuda::Precision::fp16), "multiples of 8");
  c = cfg;
  c.score = "additive";
  throws(c, interp(4, cuda::Precision::bf16), "score 'additive' is not supported by kernel version 4",
         init_params<float>("additive", 6, 6, 4, 1));
  const Matrix Qw = qktest::randn<float>(rng, 4, 136), Kw = qktest::randn<float>(rng, 5, 136);
  CHECK_THROWS_WITH(cuda::attention_forward(Qw, Kw, V, {}, cfg, interp(4, cuda::Precision::fp16)),
                    Catch::Contains("head dims up to 128"));
  cuda::Options o = interp(3);
  o.heads = 3;
  throws(cfg, o, "batch * heads * L_q rows");
  o = interp(3);
  o.key_lengths = {7};
  throws(cfg, o, "key_lengths entries must be in [0, L_k = 5]");
  o = interp(3);
  o.alibi_slopes = {0.5, 0.25};
  throws(cfg, o, "one slope per head");
  CHECK_NOTHROW(cuda::attention_forward(Q, K, V, {}, cfg, interp(3)));
}

TEST_CASE("interpreter: the backward refuses learnable relative and T5 tables unless they are frozen",
          "[cuda][interpreter][t5]") {
  // The kernels compute no table gradient: an empty dt5_table must not pass for one.
  detail::Rng rng(18);
  const Matrix Q = qktest::randn<float>(rng, 4, 6), K = qktest::randn<float>(rng, 5, 6), V = qktest::randn<float>(rng, 5, 3);
  const Matrix G = qktest::randn<float>(rng, 4, 3);
  AttentionConfig<float> t5;
  t5.bias.t5 = T5Buckets{true, 6, 8};
  t5.bias.t5_table = qktest::randn_vec<float>(rng, 6);
  AttentionConfig<float> rel;
  rel.bias.relative = qktest::randn_vec<float>(rng, 5);
  for (const auto& [c, name] : {std::pair{t5, "bias.t5_table"}, std::pair{rel, "bias.relative"}}) {
    INFO(name);
    cuda::Options o = interp(3);
    const cuda::Result f = cuda::attention_forward(Q, K, V, {}, c, o);
    CHECK_THROWS_WITH(cuda::attention_backward(Q, K, V, {}, c, f, G, o),
                      Catch::Contains(std::string("the CUDA backward does not compute dL/d") + name) &&
                          Catch::Contains("frozen_tables"));
    CHECK_THROWS_AS(cuda::attention_backward(Q, K, V, {}, c, f, G, o), std::invalid_argument);
    o.frozen_tables = true;  // held fixed: dQ is the core's, the table gradients stay empty
    const auto g = cuda::attention_backward(Q, K, V, {}, c, f, G, o);
    const auto cf = attention_forward<float>(Q, K, V, {}, c);
    const auto cg = attention_backward<float>(Q, K, V, {}, c, cf, G);
    CHECK((g.dQ - cg.dQ).cwiseAbs().maxCoeff() <= 1e-5f * (1 + cg.dQ.cwiseAbs().maxCoeff()));
    CHECK(g.dt5_table.size() == 0);
    CHECK(g.drelative.size() == 0);
  }
}
#endif  // QKSCOPE_CUDA_TESTS
