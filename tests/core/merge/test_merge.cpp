// Mergeable attention states (merge/merge.hpp): split the keys at every position, run
// attention_forward on each part (complementary keep masks on top of causal/window masks),
// merge, and compare with the one-pass result: under the tolerance rule against the double
// reference, and bit for bit where no arithmetic happens (an empty part is the identity;
// the merge is commutative).
#include <catch2/catch.hpp>

#include <limits>
#include <string>

#include "qkscope/cpu/attention.hpp"
#include "qkscope/merge/merge.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

struct Case {
  Eigen::Index L_q, L_k, d, d_v;
};
const Case kCases[] = {{1, 1, 1, 1}, {1, 6, 3, 2}, {5, 2, 2, 3}, {4, 7, 5, 2}, {7, 4, 3, 1}};

std::vector<std::pair<std::string, MaskSpec>> base_masks() {
  std::vector<std::pair<std::string, MaskSpec>> out{{"none", {}}};
  MaskSpec c;
  c.causal = true;
  out.push_back({"causal top_left", c});
  c.alignment = CausalAlignment::bottom_right;
  out.push_back({"causal bottom_right", c});
  MaskSpec w;
  w.window_left = 1;
  w.window_right = 0;
  out.push_back({"window(1,0)", w});
  return out;
}

/// base AND (keys in [lo, hi)).
MaskSpec part(MaskSpec m, Eigen::Index L_q, Eigen::Index L_k, Eigen::Index lo, Eigen::Index hi) {
  m.keep = KeepMask::Constant(L_q, L_k, false);
  m.keep.middleCols(lo, hi - lo).setConstant(true);
  return m;
}

template <class T>
AttentionResult<T> run(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V, const MaskSpec& m) {
  AttentionConfig<T> cfg;
  cfg.mask = m;
  cfg.temperature = 0.8;
  return attention_forward<T>(Q, K, V, {}, cfg);
}

}  // namespace

TEST_CASE("splitting the keys at every position and merging gives the one-pass result", "[merge]") {
  detail::Rng rng(41);
  for (const auto& c : kCases)
    for (const auto& [mname, base] : base_masks()) {
      const MatrixD Q = qktest::randn(rng, c.L_q, c.d, 1.5), K = qktest::randn(rng, c.L_k, c.d, 1.5);
      const MatrixD V = qktest::randn(rng, c.L_k, c.d_v);
      const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>();
      AttentionConfig<double> rcfg;
      rcfg.mask = base;
      rcfg.temperature = 0.8;
      const auto ref = reference::attention<double>(Q, K, V, {}, rcfg);
      AttentionConfig<float> ncfg;
      ncfg.mask = base;
      ncfg.temperature = 0.8;
      const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, ncfg);
      const auto whole = run<float>(Qf, Kf, Vf, part(base, c.L_q, c.L_k, 0, c.L_k));
      for (Eigen::Index s = 0; s <= c.L_k; ++s) {
        const auto a = run<float>(Qf, Kf, Vf, part(base, c.L_q, c.L_k, 0, s));
        const auto b = run<float>(Qf, Kf, Vf, part(base, c.L_q, c.L_k, s, c.L_k));
        const auto m = merge_attention_states<float>(a.output, a.logsumexp, b.output, b.logsumexp);
        const std::string what = mname + ", (L_q, L_k) = (" + std::to_string(c.L_q) + ", " + std::to_string(c.L_k) +
                                 "), split at " + std::to_string(s);
        CHECK_MATCHES_REFERENCE(what + " output", m.output, naive.output, ref.output);
        const MatrixD lse_ref = ref.logsumexp, lse_naive = naive.logsumexp.cast<double>();
        CHECK_MATCHES_REFERENCE(what + " logsumexp", MatrixD(m.logsumexp.cast<double>()), lse_naive, lse_ref);
        INFO(what);
        if (s == 0 || s == c.L_k) {  // one part empty: the other comes back unchanged
          CHECK(m.output == whole.output);
          CHECK(m.logsumexp == whole.logsumexp);
        }
        for (Eigen::Index i = 0; i < c.L_q; ++i) {  // rows where one side saw no key
          if (b.logsumexp(i) == -std::numeric_limits<float>::infinity()) {
            CHECK(m.output.row(i) == a.output.row(i));
            CHECK(m.logsumexp(i) == a.logsumexp(i));
          } else if (a.logsumexp(i) == -std::numeric_limits<float>::infinity()) {
            CHECK(m.output.row(i) == b.output.row(i));
            CHECK(m.logsumexp(i) == b.logsumexp(i));
          }
        }
        const auto swapped = merge_attention_states<float>(b.output, b.logsumexp, a.output, a.logsumexp);
        CHECK(swapped.output == m.output);
        CHECK(swapped.logsumexp == m.logsumexp);
      }
    }
}

TEST_CASE("merging three parts in either grouping matches the reference", "[merge]") {
  detail::Rng rng(42);
  const Eigen::Index L_q = 6, L_k = 9;
  const MatrixD Q = qktest::randn(rng, L_q, 4, 2), K = qktest::randn(rng, L_k, 4, 2), V = qktest::randn(rng, L_k, 3);
  const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>();
  AttentionConfig<double> rcfg;
  rcfg.temperature = 0.8;
  const auto ref = reference::attention<double>(Q, K, V, {}, rcfg);
  AttentionConfig<float> ncfg;
  ncfg.temperature = 0.8;
  const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, ncfg);
  const auto a = run<float>(Qf, Kf, Vf, part({}, L_q, L_k, 0, 2));
  const auto b = run<float>(Qf, Kf, Vf, part({}, L_q, L_k, 2, 7));
  const auto c = run<float>(Qf, Kf, Vf, part({}, L_q, L_k, 7, 9));
  const auto ab = merge_attention_states<float>(a.output, a.logsumexp, b.output, b.logsumexp);
  const auto ab_c = merge_attention_states<float>(ab.output, ab.logsumexp, c.output, c.logsumexp);
  const auto bc = merge_attention_states<float>(b.output, b.logsumexp, c.output, c.logsumexp);
  const auto a_bc = merge_attention_states<float>(a.output, a.logsumexp, bc.output, bc.logsumexp);
  CHECK_MATCHES_REFERENCE("(a + b) + c", ab_c.output, naive.output, ref.output);
  CHECK_MATCHES_REFERENCE("a + (b + c)", a_bc.output, naive.output, ref.output);
}

TEST_CASE("two empty states merge to output 0 and logsumexp -inf; large lse gaps do not overflow", "[merge]") {
  const float ninf = -std::numeric_limits<float>::infinity();
  const Matrix o = Matrix::Zero(2, 3);
  const Vector e = Vector::Constant(2, ninf);
  const auto m = merge_attention_states<float>(o, e, o, e);
  CHECK(m.output.isZero());
  CHECK(m.logsumexp(0) == ninf);
  CHECK(m.logsumexp(1) == ninf);
  // lse values far beyond exp's range: only differences are exponentiated.
  Matrix oa = Matrix::Ones(1, 2), ob = -Matrix::Ones(1, 2);
  Vector la(1), lb(1);
  la << 1000.f;
  lb << 1000.f;
  const auto big = merge_attention_states<float>(oa, la, ob, lb);
  CHECK(big.output.isZero());
  CHECK(big.logsumexp(0) == Approx(1000 + std::log(2.0)));
  lb << -1000.f;
  const auto far = merge_attention_states<float>(oa, la, ob, lb);
  CHECK(far.output == oa);
  CHECK(far.logsumexp(0) == 1000.f);
}

TEST_CASE("merge_attention_states rejects mismatched or invalid states, naming the argument", "[merge][errors]") {
  using Catch::Matchers::Contains;
  const Matrix o = Matrix::Ones(3, 2);
  const Vector l = Vector::Zero(3);
  CHECK_THROWS_WITH(merge_attention_states<float>(o, l, Matrix::Ones(3, 4), l),
                    Contains("o_b (shape of o_a) must have shape (3, 2), got (3, 4)"));
  CHECK_THROWS_WITH(merge_attention_states<float>(o, Vector::Zero(2), o, l), Contains("lse_a must have L_q = 3 entries"));
  CHECK_THROWS_WITH(merge_attention_states<float>(o, l, o, Vector::Zero(4)), Contains("lse_b must have L_q = 3 entries"));
  CHECK_THROWS_WITH(merge_attention_states<float>(Matrix(0, 2), Vector(0), Matrix(0, 2), Vector(0)),
                    Contains("o_a must be non-empty"));
  Vector bad = l;
  bad(1) = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(merge_attention_states<float>(o, l, o, bad), Contains("lse_b must be finite or -inf, got inf at 1"));
  bad(1) = NAN;
  CHECK_THROWS_WITH(merge_attention_states<float>(o, bad, o, l), Contains("lse_a must be finite or -inf"));
  Matrix on = o;
  on(2, 1) = NAN;
  CHECK_THROWS_WITH(merge_attention_states<float>(o, l, on, l), Contains("o_b must be finite"));
  CHECK_THROWS_AS(merge_attention_states<float>(o, l, on, l), std::invalid_argument);
}

TEST_CASE("tiled forward on two key parts, merged, matches the reference (T5, causal both alignments, tau)",
          "[merge][cpu]") {
  // The split-KV use: the tiled kernels' (output, logsumexp) are states too; both sides of the
  // merge run the same merge_scales (merge/scales.hpp) inside the kernels' online softmax.
  detail::Rng rng(43);
  const Eigen::Index L_q = 5, L_k = 9;
  const MatrixD Q = qktest::randn(rng, L_q, 4), K = qktest::randn(rng, L_k, 4), V = qktest::randn(rng, L_k, 3);
  const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>();
  cpu::TiledOptions opt;
  opt.block_q = 2;
  opt.block_k = 3;
  opt.threads = 1;
  for (const auto a : {CausalAlignment::top_left, CausalAlignment::bottom_right}) {
    AttentionConfig<double> cd;
    cd.mask.causal = true;
    cd.mask.alignment = a;
    cd.temperature = 0.7;
    cd.bias.t5 = T5Buckets{true, 8, 8};
    cd.bias.t5_table = VectorD::LinSpaced(8, -1, 1);
    AttentionConfig<float> cf;
    cf.mask = cd.mask;
    cf.temperature = cd.temperature;
    cf.bias.t5 = cd.bias.t5;
    cf.bias.t5_table = cd.bias.t5_table.cast<float>();
    const auto ref = reference::attention<double>(Q, K, V, {}, cd);
    const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, cf);
    for (Eigen::Index s = 0; s <= L_k; ++s) {
      AttentionConfig<float> ca = cf, cb = cf;
      ca.mask = part(cf.mask, L_q, L_k, 0, s);
      cb.mask = part(cf.mask, L_q, L_k, s, L_k);
      const auto pa = cpu::attention_forward<float>(Qf, Kf, Vf, {}, ca, opt);
      const auto pb = cpu::attention_forward<float>(Qf, Kf, Vf, {}, cb, opt);
      const auto m = merge_attention_states<float>(pa.output, pa.logsumexp, pb.output, pb.logsumexp);
      const std::string what = std::string(a == CausalAlignment::bottom_right ? "bottom_right" : "top_left") +
                               ", split at " + std::to_string(s);
      CHECK_MATCHES_REFERENCE(what + " output", m.output, naive.output, ref.output);
      const MatrixD lse_ref = ref.logsumexp, lse_naive = naive.logsumexp.cast<double>();
      CHECK_MATCHES_REFERENCE(what + " logsumexp", MatrixD(m.logsumexp.cast<double>()), lse_naive, lse_ref);
    }
  }
}
