// The CUDA kernels on the GPU: every version, every scoring function, masks, biases, GQA and
// the version 3 backward, against the double reference (cases.hpp's rule), on sizes that sweep
// the 64-blocks (1, 63, 64, 65, 129, L_q != L_k, head dims 8..128) — wider than the interpreter's sweep
// because a GPU runs it in seconds. Without a usable device each test prints
// WARN("no CUDA device: skipped") and passes (Catch2 v2 has no SKIP).
// Compiled only into qkscope_cuda_tests (tests/CMakeLists.txt globs tests/core too).
#if defined(QKSCOPE_CUDA_TESTS)
#include <cstdlib>

#include "cuda/cases.hpp"

using namespace qkscope;
using qkcuda::Heads;
using qkcuda::Size;

namespace {

/// QKSCOPE_CUDA_TESTS_INTERPRET=1 runs these GPU sweeps on the CPU interpreter instead
/// (minutes): a preview of the device run, same cases, same bars.
bool on_interpreter() {
  const char* e = std::getenv("QKSCOPE_CUDA_TESTS_INTERPRET");
  return e && std::string(e) == "1";
}

bool have_gpu() {
  if (on_interpreter()) return true;
  std::string why;
  if (cuda::device_available(&why)) return true;
  WARN("no CUDA device: skipped (" << why << ")");
  return false;
}

cuda::Options gpu(int version, cuda::Precision p) {
  cuda::Options o;
  o.version = version;
  o.precision = p;
  o.interpret = on_interpreter();
  return o;
}

}  // namespace

TEST_CASE("GPU: without a usable device the API says why and throws std::runtime_error", "[cuda][gpu]") {
  if (on_interpreter()) return;
  std::string why;
  if (cuda::device_available(&why)) {
    CHECK(why.empty());
    CHECK(cuda::device_description().find("sm_") != std::string::npos);
    return;
  }
  WARN("no CUDA device: skipped (" << why << ")");
  CHECK_FALSE(why.empty());
  detail::Rng rng(1);
  const Matrix Q = qktest::randn<float>(rng, 3, 4);
  CHECK_THROWS_AS(cuda::attention_forward(Q, Q, Q, {}, {}), std::runtime_error);
}

TEST_CASE("GPU: every version matches the double reference across 64-blocks, masks, biases and scores",
          "[cuda][gpu]") {
  if (!have_gpu()) return;
  detail::Rng rng(21);
  // The CPU references dominate the run time: bias kinds are cycled over the masks, not crossed.
  const Size sizes[] = {{1, 1, 8, 8}, {63, 64, 16, 8}, {65, 63, 64, 64}, {129, 129, 128, 128}, {129, 300, 72, 40}};
  int k = 0;
  for (int version = 1; version <= 5; ++version)
    for (const std::string& score : qkcuda::scores_for(version))
      for (const Size& s : sizes)
        for (const auto& [name, mask] : qkcuda::masks(s.L_q, s.L_k))
          for (auto prec : version <= 3 ? std::vector{cuda::Precision::fp32}
                                        : std::vector{cuda::Precision::fp16, cuda::Precision::bf16})
            qkcuda::check(score, s, name, mask, k++ % 3, gpu(version, prec), Heads{}, rng, false);
}

TEST_CASE("GPU: GQA, MQA, per-head ALiBi and per-sequence key lengths", "[cuda][gpu]") {
  if (!have_gpu()) return;
  detail::Rng rng(22);
  MaskSpec br;
  br.causal = true;
  br.alignment = CausalAlignment::bottom_right;
  for (int version = 1; version <= 5; ++version) {
    const auto prec = version <= 3 ? cuda::Precision::fp32 : cuda::Precision::bf16;
    qkcuda::check("scaled_dot", Size{100, 150, 64, 64}, "causal bottom_right", br, 0, gpu(version, prec),
                  Heads{2, 8, 2, true, {150, 61}}, rng, false);
    qkcuda::check("scaled_dot", Size{65, 65, 128, 128}, "none", {}, 1, gpu(version, prec), Heads{1, 4, 1, false, {}},
                  rng, false);
  }
}

TEST_CASE("GPU: version 3 backward matches the core's gradients", "[cuda][gpu]") {
  if (!have_gpu()) return;
  detail::Rng rng(23);
  const Size sizes[] = {{1, 1, 8, 8}, {63, 65, 16, 8}, {129, 64, 64, 64}, {130, 200, 128, 128}, {70, 70, 33, 17}};
  for (const std::string& score : qkcuda::scores_for(3, true))
    for (const Size& s : sizes)
      for (const auto& [name, mask] : qkcuda::masks(s.L_q, s.L_k))
        qkcuda::check(score, s, name, mask, int(s.L_q) % 3, gpu(3, cuda::Precision::fp32), Heads{}, rng, true);
  MaskSpec tl;
  tl.causal = true;
  qkcuda::check("scaled_dot", Size{96, 128, 64, 64}, "causal top_left", tl, 0, gpu(3, cuda::Precision::fp32),
                Heads{2, 4, 2, true, {128, 50}}, rng, true);
}

TEST_CASE("GPU and interpreter run the same kernels: results agree to float rounding", "[cuda][gpu]") {
  if (on_interpreter() || !have_gpu()) return;
  detail::Rng rng(24);
  const Matrix Q = qktest::randn<float>(rng, 130, 64), K = qktest::randn<float>(rng, 200, 64),
               V = qktest::randn<float>(rng, 200, 64);
  AttentionConfig<float> cfg;
  cfg.mask.causal = true;
  for (int version = 1; version <= 5; ++version) {
    cuda::Options o;
    o.version = version;
    o.precision = version <= 3 ? cuda::Precision::fp32 : cuda::Precision::fp16;
    const auto g = cuda::attention_forward(Q, K, V, {}, cfg, o);
    o.interpret = true;
    const auto c = cuda::attention_forward(Q, K, V, {}, cfg, o);
    INFO("version " << version);
    CHECK((g.output - c.output).cwiseAbs().maxCoeff() < 1e-4f);
    CHECK((g.logsumexp - c.logsumexp).cwiseAbs().maxCoeff() < 1e-4f);
  }
  // Additive on version 3: 9 query blocks, 4 key blocks -> four CTAs per query block and the
  // combine kernel (v3_kv_splits), e^{2x} product terms; compute-sanitizer runs this test too.
  AttentionConfig<float> add;
  add.score = "additive";
  add.mask.causal = true;
  const auto pa = init_params<float>("additive", 64, 64, 40, 7);
  cuda::Options o;
  o.version = 3;
  const auto g = cuda::attention_forward(Q, K, V, pa, add, o);
  o.interpret = true;
  const auto c = cuda::attention_forward(Q, K, V, pa, add, o);
  CHECK((g.output - c.output).cwiseAbs().maxCoeff() < 1e-4f);
  CHECK((g.logsumexp - c.logsumexp).cwiseAbs().maxCoeff() < 1e-4f);
}
#endif  // QKSCOPE_CUDA_TESTS
