// native/bench/wasm_profile.cpp — where the time of the wasm SIMD tiled forward goes, at
// L = 512, d = 64, one thread (NOTES.md, "The tiled kernels in the browser module"):
// the whole cpu::attention_forward, then its parts alone on the same 64 x 256 tiles: the two
// GEMMs (S = Qt K^T, acc += P V) and the exp pass (exp_shifted over every row segment), with
// wasm_exp.hpp and with Eigen's exp; and both exps' accuracy against exp in double.
// Last, the whole forward for several tile shapes (block_q x block_k).
// Built with the tiled module's flags: cmake --build --preset wasm --target qkscope_wasm_profile
// Run: node build/wasm/qkscope_wasm_profile.cjs
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <vector>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/cpu/wasm_gemm.hpp"

using namespace qkscope;

/// Fastest of `repeats` calls after a warm-up: on a shared machine the minimum is the run least
/// disturbed by other processes.
template <class F>
double min_ms(F&& f, int repeats = 31) {
  f();
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return *std::min_element(t.begin(), t.end());
}

int main() {
  const Eigen::Index L = 512, d = 64, bq = 64, bk = 256;
  const Mat<float> Q = Mat<float>::Random(L, d), K = Mat<float>::Random(L, d), V = Mat<float>::Random(L, d);
  AttentionConfig<float> cfg;
  cpu::TiledOptions opt;
  opt.threads = 1;
  float sink = 0;
  const double whole = min_ms([&] { sink += cpu::attention_forward<float>(Q, K, V, {}, cfg, opt).output(0, 0); });
  Mat<float> S(bq, bk), acc(bq, d), Qt(bq, d);
  const double gemm = min_ms([&] {
    for (Eigen::Index i0 = 0; i0 < L; i0 += bq) {
      acc.setZero();
      Qt.noalias() = 0.125f * Q.middleRows(i0, bq);
      for (Eigen::Index j0 = 0; j0 < L; j0 += bk) {
        S.noalias() = Qt * K.middleRows(j0, bk).transpose();
        acc.noalias() += S * V.middleRows(j0, bk);
      }
      sink += acc(0, 0);
    }
  });
  // The same products by wasm_gemm.hpp.
  const double micro = min_ms([&] {
    for (Eigen::Index i0 = 0; i0 < L; i0 += bq) {
      Qt.noalias() = 0.125f * Q.middleRows(i0, bq);
      for (Eigen::Index j0 = 0; j0 < L; j0 += bk) {
        cpu::detail::gemm_f32(int(bq), int(bk), int(d), Qt.data(), int(d), K.data() + j0 * d, int(d), true, S.data(), int(bk), false);
        cpu::detail::gemm_f32(int(bq), int(d), int(bk), S.data(), int(bk), V.data() + j0 * d, int(d), false, acc.data(), int(d),
                              j0 > 0);
      }
      sink += acc(0, 0);
    }
  });
  Mat<float> X = Mat<float>::Random(bq, bk);
  Vec<float> tmp;
  const double exps = min_ms([&] {
    for (Eigen::Index t = 0; t < (L / bq) * (L / bk); ++t) {
      for (Eigen::Index r = 0; r < bq; ++r) {
        auto row = S.row(r);
        row = X.row(r);
        cpu::detail::exp_shifted(row, 1.0f, false, tmp);
      }
      sink += S(0, 0);
    }
  });
  // The forward's own row pass on the same tiles: row max, then exp_shift_sum (shift, exp, sum).
  const double row_pass = min_ms([&] {
    for (Eigen::Index t = 0; t < (L / bq) * (L / bk); ++t) {
      S = X;
      float s = 0;
      for (Eigen::Index r = 0; r < bq; ++r) {
        auto row = S.row(r);
        s += cpu::detail::exp_shifted_sum(row, cpu::detail::segment_max(row), false, tmp, 1.0f);
      }
      sink += s;
    }
  });
  const double copies = min_ms([&] {  // the S = X copies alone, to subtract from row_pass
    for (Eigen::Index t = 0; t < (L / bq) * (L / bk); ++t) {
      S = X;
      sink += S(bq - 1, bk - 1);
    }
  });
  // The same exponentials by Eigen 3.4's pexp (emulated SSE), as before wasm_exp.hpp.
  const double eigen_exps = min_ms([&] {
    for (Eigen::Index t = 0; t < (L / bq) * (L / bk); ++t) {
      for (Eigen::Index r = 0; r < bq; ++r) {
        tmp = (X.row(r).array() - 1.0f).matrix().transpose();
        S.row(r) = tmp.array().exp().matrix().transpose();
      }
      sink += S(0, 0);
    }
  });
  // Accuracy of exp_array and of Eigen's exp against exp in double over [-87, 88].
  const int N = 1 << 20;
  std::vector<float> in(N), out(N);
  for (int k = 0; k < N; ++k) in[k] = -87.0f + 175.0f * float(k) / float(N - 1);
  cpu::detail::exp_array(in.data(), out.data(), N);
  const Eigen::Map<const Vec<float>> inv(in.data(), N);
  const Vec<float> eig = inv.array().exp().matrix();
  double rel = 0, rel_eigen = 0;
  for (int k = 0; k < N; ++k) {
    const double ref = std::exp(double(in[k]));
    rel = std::max(rel, std::abs(out[k] - ref) / ref);
    rel_eigen = std::max(rel_eigen, std::abs(eig(k) - ref) / ref);
  }
  // Tile shapes (block_q x block_k) for the whole forward: the native default is 64 x 256.
  std::vector<std::pair<int, int>> blocks = {{64, 256}, {32, 256}, {128, 256}, {64, 128}, {64, 512}, {128, 128}, {128, 512}};
  std::vector<double> block_ms;
  for (const auto& [b_q, b_k] : blocks) {
    cpu::TiledOptions o = opt;
    o.block_q = b_q;
    o.block_k = b_k;
    block_ms.push_back(min_ms([&] { sink += cpu::attention_forward<float>(Q, K, V, {}, cfg, o).output(0, 0); }));
  }
  std::printf("L = %d, d = %d, tiles %d x %d, fastest of 31 (sink %g)\n", int(L), int(d), int(bq), int(bk), double(sink));
  std::printf("  whole tiled forward  %.3f ms\n", whole);
  std::printf("  two GEMMs per tile   %.3f ms (%.0f%%)\n", gemm, 100 * gemm / whole);
  std::printf("  same, wasm_gemm.hpp   %.3f ms (%.0f%%)\n", micro, 100 * micro / whole);
  std::printf("  exp pass (L^2 exps)  %.3f ms (%.0f%%), wasm_exp.hpp\n", exps, 100 * exps / whole);
  std::printf("  same with Eigen exp  %.3f ms\n", eigen_exps);
  std::printf("  row pass (max, exp_shift_sum) %.3f ms (%.0f%%), without its tile copies\n", row_pass - copies,
              100 * (row_pass - copies) / whole);
  std::printf("exp on %d points of [-87, 88] vs exp in double: max rel error %.3g (wasm_exp.hpp), %.3g (Eigen)\n",
              N, rel, rel_eigen);
  std::printf("whole forward by tile shape:");
  for (std::size_t k = 0; k < blocks.size(); ++k)
    std::printf(" %dx%d %.3f ms;", blocks[k].first, blocks[k].second, block_ms[k]);
  std::printf("\n");
  return 0;
}
