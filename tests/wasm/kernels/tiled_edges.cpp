// tests/wasm/kernels/tiled_edges.cpp — the wasm SIMD tile products (cpu/wasm_gemm.hpp)
// and the tiled kernels that use them, compiled with the tiled module's flags, at the
// shapes the JS API cannot reach: tiles of 1 x 1 and odd sizes (block_q, block_k), d = 1 and
// d not a multiple of 4, L_q != L_k, row / column remainders of the 4 x 8 register block,
// fully masked rows. Everything is held to the double reference under the one tolerance rule
// (core/reference/tolerance.hpp; the bar is naive math in float).
//   gemm_f32 vs a double product (bar: the same product by plain float loops)
//   attention_forward<float> vs reference::attention<double> (bar: reference<float>)
// The backward reaches these products only through the recomputed S (tests/wasm/tiled.test.mjs
// covers attentionBackward at the module's tile shape).
// (No threads in this build: the native suite checks 1 vs 3 threads bitwise; each work item
// here sums in a fixed order whatever thread runs it.)
// Prints one line per failure and exits 1 if any; run by tests/wasm/tiled-kernels.test.mjs.
#include <cstdio>
#include <string>
#include <vector>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/cpu/wasm_gemm.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "reference/tolerance.hpp"
#include "support/cases.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

int failures = 0, checks = 0;

template <class A, class B, class C>
void check(const std::string& what, const A& fast, const B& naive, const C& ref) {
  ++checks;
  const auto c = reference::compare(what, fast, naive, ref);
  if (!c.ok) {
    ++failures;
    std::printf("FAIL %s\n", c.text.c_str());
  }
}

/// gemm_f32 on every remainder of the 4 x 8 block, B plain and transposed, = and +=.
void gemm_cases(detail::Rng& rng) {
  const int sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 17};
  for (int m : sizes)
    for (int n : sizes)
      for (int k : {1, 3, 4, 5, 64, 67})
        for (int bt = 0; bt < 2; ++bt)
          for (int add = 0; add < 2; ++add) {
            const MatrixD A = qktest::randn(rng, m, k), B = qktest::randn(rng, k, n), C0 = qktest::randn(rng, m, n);
            const Matrix Af = A.cast<float>(), Bf = B.cast<float>(), Btf = Bf.transpose(), C0f = C0.cast<float>();
            Matrix C = C0f, naive = add ? C0f : Matrix::Zero(m, n);
            for (int i = 0; i < m; ++i)
              for (int j = 0; j < n; ++j)
                for (int p = 0; p < k; ++p) naive(i, j) += Af(i, p) * Bf(p, j);
            const MatrixD ref = (add ? C0 : MatrixD::Zero(m, n)) + A * B;
            cpu::detail::gemm_f32(m, n, k, Af.data(), k, bt ? Btf.data() : Bf.data(), bt ? k : n, bt, C.data(), n,
                                  add);
            check("gemm m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                      (bt ? " B^T" : "") + (add ? " +=" : " ="),
                  C, naive, ref);
          }
}

struct Size {
  Eigen::Index L_q, L_k, d, d_v;
};

/// The tiled forward on the dot family with tiny and odd tiles.
void attention_cases(detail::Rng& rng) {
  const Size sizes[] = {{1, 1, 1, 1}, {3, 7, 1, 2}, {7, 3, 5, 1}, {9, 13, 6, 9}, {17, 11, 3, 5}, {33, 70, 67, 13}};
  const std::pair<Eigen::Index, Eigen::Index> tiles[] = {{1, 1}, {1, 5}, {3, 1}, {5, 7}, {64, 256}};
  for (const std::string score : {"scaled_dot", "dot", "cosine", "bilinear"})
    for (const Size& s : sizes)
      for (const auto& [bq, bk] : tiles)
        for (const auto& [mask_name, mask] : qktest::mask_cases(s.L_q, s.L_k, bq, bk)) {
          const auto sc = qktest::score_case(score, s.L_q, s.L_k, s.d, s.d_v, mask, 0, rng);
          const std::string what = score + " L_q=" + std::to_string(s.L_q) + " L_k=" + std::to_string(s.L_k) +
                                   " d=" + std::to_string(s.d) + " d_v=" + std::to_string(s.d_v) + " tiles " +
                                   std::to_string(bq) + "x" + std::to_string(bk) + ", " + mask_name;
          const cpu::TiledOptions opt{bq, bk, 1};
          const auto ref = reference::attention<double>(sc.Q, sc.K, sc.V, sc.p64, sc.c64);
          const auto naive = reference::attention<float>(sc.Qf, sc.Kf, sc.Vf, sc.p32, sc.c32);
          const auto fast = cpu::attention_forward<float>(sc.Qf, sc.Kf, sc.Vf, sc.p32, sc.c32, opt);
          if (fast.fallback) {
            ++failures;
            std::printf("FAIL %s: not on the tiled path\n", what.c_str());
          }
          check(what + ": output", fast.output, naive.output, ref.output);
          check(what + ": logsumexp", fast.logsumexp, naive.logsumexp, ref.logsumexp);
        }
}

}  // namespace

int main() {
  detail::Rng gemm_rng(11), attention_rng(12);
  gemm_cases(gemm_rng);
  attention_cases(attention_rng);
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
