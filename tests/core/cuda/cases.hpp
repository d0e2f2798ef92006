// tests/core/cuda/cases.hpp — one configuration of the CUDA backend (native/cuda) checked
// against the double reference, shared by the GPU tests and the CPU-interpreter tests.
//   fp32 versions (1-3): bar = naive float32 math (reference<float>), compare.hpp's rule.
//   fp16/bf16 versions (4-5): bar = naive half-precision attention as a framework computes it:
//     the (preprocessed) query/key rows and V rounded to the format, both products accumulated
//     in fp32, softmax in fp32, P rounded before P V (a cuBLAS matmul-softmax-matmul in fp16).
//   backward (3): bar = the core's attention_backward in float, against it in double.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "qkscope/qkscope.hpp"
#include "qkscope_cuda.hpp"
#include "reference/reference.hpp"
#include "support/cases.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

namespace qkcuda {

using namespace qkscope;

struct Size {
  Eigen::Index L_q, L_k, d, d_v;
};

struct Heads {
  int batch = 1, heads = 1, kv_heads = 1;
  bool alibi = false;                    // per-head slopes alibi_slopes(heads)
  std::vector<Eigen::Index> key_lengths; // per sequence, or empty
};

/// The shared mask cases (support/cases.hpp) with the kernels' 64 x 64 blocks.
inline qktest::MaskCases masks(Eigen::Index L_q, Eigen::Index L_k) { return qktest::mask_cases(L_q, L_k, 64, 64); }

/// Whether scoring function F runs in the additive form (the fused tanh kernels: versions 1-3,
/// forward only) rather than as dot-product rows (every version, backward on version 3).
template <class F>
constexpr bool additive_form() {
  using Form = decltype(F::template prepare<float>(std::declval<const Matrix&>(), std::declval<const Matrix&>(),
                                                   std::declval<const ScoreParams<float>&>()));
  return std::is_same_v<Form, score::AdditiveForm<float>>;
}

/// Every registered scoring function (registry order) that kernel `version` runs: all of them on
/// versions 1-3, the dot-product forms on the tensor-core versions 4-5 and in the backward.
inline std::vector<std::string> scores_for(int version, bool backward = false) {
  std::vector<std::string> out;
  std::apply([&](auto... f) {
    ((((version <= 3 && !backward) || !additive_form<decltype(f)>()) ? out.push_back(decltype(f)::name) : void()), ...);
  }, ScoreFunctions{});
  return out;
}
inline bool has_backward(const std::string& score) {
  return visit_score(score, [](auto f) { return !additive_form<decltype(f)>(); });
}

template <class E>
Matrix round_to(const Matrix& m) {
  return m.template cast<E>().template cast<float>();
}

/// Naive half-precision attention (see the file header) of one head, from the float reference.
/// What is rounded is what a framework would hand its fp16 attention: the scoring function's
/// query/key rows after its prepare hook (score/forms.hpp's dot_rows: cosine's normalised rows,
/// bilinear's Q W, linear_concat's [Q w_q, 1] and [1, K w_k], ...), scored as a plain dot
/// product with the call's scale.
template <class E>
Matrix naive_low_precision(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& p,
                           const AttentionConfig<float>& c) {
  Matrix Qs, Ks;
  visit_score(c.score, [&](auto f) {
    auto rows = score::kernel_rows<decltype(f)>(Q, K, p, 1, false);
    Qs = std::move(rows.q);
    Ks = std::move(rows.k);
  });
  AttentionConfig<float> dot = c;
  dot.score = "dot";
  dot.scale = c.scale.value_or(
      visit_score(c.score, [&](auto f) { return decltype(f)::default_scale(ScoreShape{Q.rows(), K.rows(), Q.cols(), K.cols()}); }));
  const Matrix Vr = round_to<E>(V);
  const auto r = reference::attention<float>(round_to<E>(Qs), round_to<E>(Ks), Vr, {}, dot);
  return round_to<E>(r.weights) * Vr;
}

/// Runs one configuration through cuda::attention_forward (and the backward when asked) and
/// checks every head against its own reference.
inline void check(const std::string& score, const Size& size, const std::string& mask_name, const MaskSpec& mask,
                  int bias_kind, const cuda::Options& opt, const Heads& hs, detail::Rng& rng, bool backward) {
  Size s = size;
  // linear_concat's weights do not depend on the query (a_i cancels in the softmax), so its output
  // holds only d_v independent values; with few of them the max-error ratio to naive half math is
  // a coin flip around 1 (measured over 40 seeds at L_k 63, bf16: 90th percentile 1.97x at d_v 5,
  // 1.38x at d_v 64). Low-precision runs use d_v >= 64 so that the 2x rule means something.
  if (opt.precision != cuda::Precision::fp32 && score == "linear_concat") s.d_v = std::max<Eigen::Index>(s.d_v, 64);
  const int nq = hs.batch * hs.heads, nkv = hs.batch * hs.kv_heads;
  const MatrixD Q = qktest::randn(rng, nq * s.L_q, s.d), K = qktest::randn(rng, nkv * s.L_k, s.d),
                V = qktest::randn(rng, nkv * s.L_k, s.d_v), G = qktest::randn(rng, nq * s.L_q, s.d_v);
  auto p64 = init_params<double>(score, s.d, s.d, 5, 11);
  if (p64.b.size()) p64.b = qktest::randn_vec(rng, 5, 0.3);
  const auto p32 = p64.cast<float>();
  const auto c64 = qktest::config_case<double>(score, mask, bias_kind, s.L_q, s.L_k);
  const auto c32 = qktest::config_case<float>(score, mask, bias_kind, s.L_q, s.L_k);
  const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>(), Gf = G.cast<float>();
  cuda::Options o = opt;
  o.batch = hs.batch;
  o.heads = hs.heads;
  o.kv_heads = hs.kv_heads;
  o.key_lengths = hs.key_lengths;
  const auto slopes = hs.alibi ? alibi_slopes(hs.heads) : std::vector<double>{};
  o.alibi_slopes = slopes;
  INFO("version " << o.version << ", score " << score << ", L_q=" << s.L_q << " L_k=" << s.L_k << " d=" << s.d
                  << " d_v=" << s.d_v << ", mask " << mask_name << ", bias kind " << bias_kind << ", heads "
                  << hs.batch << "x" << hs.heads << "/" << hs.kv_heads << (o.interpret ? ", interpreter" : ", GPU"));
  const cuda::Result r = cuda::attention_forward(Qf, Kf, Vf, p32, c32, o);
  REQUIRE(r.output.rows() == nq * s.L_q);
  std::optional<AttentionGrads<float>> g;
  if (backward) {
    o.frozen_tables = true;  // the kernels give no table gradients (checked in the refusal test)
    g = cuda::attention_backward(Qf, Kf, Vf, p32, c32, r, Gf, o);
  }

  MatrixD dK_ref = MatrixD::Zero(K.rows(), K.cols()), dV_ref = MatrixD::Zero(V.rows(), V.cols());
  Matrix dK_naive = Matrix::Zero(K.rows(), K.cols()), dV_naive = Matrix::Zero(V.rows(), V.cols());
  for (int bh = 0; bh < nq; ++bh) {
    const int b = bh / hs.heads, h = bh % hs.heads, kv = b * hs.kv_heads + h / (hs.heads / hs.kv_heads);
    INFO("head " << bh << " (sequence " << b << ", head " << h << ", kv head " << kv << ")");
    auto h64 = c64;
    auto h32 = c32;
    if (!hs.key_lengths.empty()) {
      const Eigen::Index kl = std::min(hs.key_lengths[b], mask.key_length.value_or(s.L_k));
      h64.mask.key_length = kl;
      h32.mask.key_length = kl;
    }
    if (hs.alibi) {
      h64.bias.alibi_slope = slopes[h];
      h32.bias.alibi_slope = slopes[h];
    }
    const auto rows_q = [&](const auto& M) { return M.middleRows(bh * s.L_q, s.L_q).eval(); };
    const auto rows_k = [&](const auto& M) { return M.middleRows(kv * s.L_k, s.L_k).eval(); };
    const MatrixD Qh = rows_q(Q), Kh = rows_k(K), Vh = rows_k(V);
    const Matrix Qhf = rows_q(Qf), Khf = rows_k(Kf), Vhf = rows_k(Vf);
    const auto ref = reference::attention<double>(Qh, Kh, Vh, p64, h64);
    const Matrix out = rows_q(r.output);
    const Vector lse = r.logsumexp.segment(bh * s.L_q, s.L_q);
    if (o.precision == cuda::Precision::fp32) {
      const auto naive = reference::attention<float>(Qhf, Khf, Vhf, p32, h32);
      CHECK_MATCHES_REFERENCE("output", out, naive.output, ref.output);
      CHECK_MATCHES_REFERENCE("logsumexp", lse, naive.logsumexp, ref.logsumexp);
    } else {
      const Matrix naive = o.precision == cuda::Precision::fp16
                               ? naive_low_precision<Eigen::half>(Qhf, Khf, Vhf, p32, h32)
                               : naive_low_precision<Eigen::bfloat16>(Qhf, Khf, Vhf, p32, h32);
      CHECK_MATCHES_REFERENCE("output", out, naive, ref.output);
      for (Eigen::Index i = 0; i < s.L_q; ++i) CHECK((std::isinf(lse(i)) == std::isinf(ref.logsumexp(i))));
    }
    for (Eigen::Index i = 0; i < s.L_q; ++i)
      if (ref.logsumexp(i) == -std::numeric_limits<double>::infinity()) {
        CHECK(out.row(i).isZero(0));
        CHECK(lse(i) == -std::numeric_limits<float>::infinity());
      }
    if (!g) continue;
    const auto f64 = attention_forward<double>(Qh, Kh, Vh, p64, h64);
    const MatrixD Gh = rows_q(G);
    const auto g64 = attention_backward<double>(Qh, Kh, Vh, p64, h64, f64, Gh);
    const auto f32 = attention_forward<float>(Qhf, Khf, Vhf, p32, h32);
    const auto g32 = attention_backward<float>(Qhf, Khf, Vhf, p32, h32, f32, Matrix(rows_q(Gf)));
    CHECK_MATCHES_REFERENCE("dQ", Matrix(rows_q(g->dQ)), g32.dQ, g64.dQ);
    dK_ref.middleRows(kv * s.L_k, s.L_k) += g64.dK;  // GQA: a kv head's gradient sums its group
    dV_ref.middleRows(kv * s.L_k, s.L_k) += g64.dV;
    dK_naive.middleRows(kv * s.L_k, s.L_k) += g32.dK;
    dV_naive.middleRows(kv * s.L_k, s.L_k) += g32.dV;
    if (nq == 1 && p64.W.size()) CHECK_MATCHES_REFERENCE("dW", g->dparams.W, g32.dparams.W, g64.dparams.W);
    if (nq == 1 && p64.w.size()) CHECK_MATCHES_REFERENCE("dw", g->dparams.w, g32.dparams.w, g64.dparams.w);
  }
  if (g) {
    CHECK_MATCHES_REFERENCE("dK", g->dK, dK_naive, dK_ref);
    CHECK_MATCHES_REFERENCE("dV", g->dV, dV_naive, dV_ref);
  }
}

}  // namespace qkcuda
