// tests/wasm/kernels/tiled_edges.cpp — the wasm SIMD tile products (cpu/wasm_gemm.hpp)
// and the tiled kernels that use them, compiled with the tiled module's flags, at the
// shapes the JS API cannot reach: tiles of 1 x 1 and odd sizes (block_q, block_k), d = 1 and
// d not a multiple of 4, L_q != L_k, row / column remainders of the 4 x 8 register block,
// fully masked rows. Everything is held to the double reference under the one tolerance rule
// (core/reference/tolerance.hpp; the bar is naive math in float).
//   gemm_f32 vs a double product (bar: the same product by plain float loops)
//   attention_forward<float> vs reference::attention<double> (bar: reference<float>)
//   the row pass's SIMD pieces (cpu/wasm_exp.hpp) on edge values: exp_array and exp_shift_sum
//   give std::exp bit for bit outside [-87, 88] (NaN, -inf, denormal results) and at most
//   1.2e-7 relative error inside; max_array is the scalar max for every length and position
// The backward reaches these products only through the recomputed S (tests/wasm/tiled.test.mjs
// covers attentionBackward at the module's tile shape).
// (No threads in this build: the native suite checks 1 vs 3 threads bitwise; each work item
// here sums in a fixed order whatever thread runs it.)
// Prints one line per failure and exits 1 if any; run by tests/wasm/tiled-kernels.test.mjs.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/cpu/wasm_exp.hpp"
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

void fail_exp(const std::string& what) {
  ++failures;
  std::printf("FAIL %s\n", what.c_str());
}

/// One exp result against std::exp: the same bits outside [-87, 88] (and for NaN), else 1.2e-7.
void check_exp(const std::string& what, float a, float got) {
  ++checks;
  const float want = std::exp(a);
  const bool same = std::isnan(want) ? std::isnan(got) : got == want;
  if (!(a >= -87.0f && a <= 88.0f)) {
    if (!same) fail_exp(what + ": exp(" + std::to_string(a) + ") = " + std::to_string(got) + ", std::exp gives " + std::to_string(want));
    return;
  }
  const double rel = std::abs(double(got) - std::exp(double(a))) / std::exp(double(a));
  if (!(rel <= 1.2e-7)) fail_exp(what + ": exp(" + std::to_string(a) + ") off by " + std::to_string(rel) + " relative");
}

/// exp_array, exp_shift_sum and max_array on rows of every length 1..67 holding edge values at
/// every position: the lanes the SIMD range tests send to std::exp, and in-range values.
void row_pass_cases(detail::Rng& rng) {
  const float ninf = -std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float edges[] = {-87.0f, -87.00001f, -87.5f, -100.0f, -103.9f, -104.0f, -150.0f, -1e30f, ninf, nan,
                         88.0f, 88.00001f, 88.7f, 89.0f, 1e30f, 0.0f, -0.0f, 1e-40f};
  for (int n = 1; n <= 67; ++n)
    for (const float e : edges)
      for (int pos = 0; pos < n; pos += (n > 9 ? 5 : 1)) {
        std::vector<float> x(n);
        for (float& v : x) v = float(rng.uniform() * 40.0 - 30.0);
        x[pos] = e;
        const std::string what = "n=" + std::to_string(n) + " pos=" + std::to_string(pos);
        std::vector<float> y(n);
        cpu::detail::exp_array(x.data(), y.data(), std::size_t(n));
        for (int k = 0; k < n; ++k) check_exp("exp_array " + what, x[k], y[k]);
        // max_array: the scalar max (NaN aside: it may be skipped, as documented).
        if (!std::isnan(e)) {
          ++checks;
          float m = x[0];
          for (float v : x) m = std::max(m, v);
          if (cpu::detail::max_array(x.data(), std::size_t(n)) != m) fail_exp("max_array " + what);
        }
        // exp_shift_sum with the row max as the shift (its precondition) and tau = 1 or 1e-3:
        // every entry is exp((x - m) / tau) of exp_array's kind, the sum within n ulps.
        float m = x[0];
        for (float v : x) m = std::max(m, v);
        if (std::isnan(e) || m == ninf) continue;  // the forward skips rows whose max is -inf
        for (const float inv_tau : {1.0f, 1000.0f}) {
          std::vector<float> z = x;
          const float s = cpu::detail::exp_shift_sum(z.data(), std::size_t(n), m, inv_tau);
          double want_sum = 0;
          for (int k = 0; k < n; ++k) {
            const float a = (x[k] - m) * inv_tau;
            check_exp("exp_shift_sum " + what, a, z[k]);
            want_sum += double(z[k]);
          }
          ++checks;
          if (!(std::abs(double(s) - want_sum) <= 1e-7 * n * want_sum)) fail_exp("exp_shift_sum's sum " + what);
        }
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
  detail::Rng gemm_rng(11), attention_rng(12), row_rng(13);
  gemm_cases(gemm_rng);
  row_pass_cases(row_rng);
  attention_cases(attention_rng);
  std::printf("%d checks, %d failures\n", checks, failures);
  return failures == 0 ? 0 : 1;
}
