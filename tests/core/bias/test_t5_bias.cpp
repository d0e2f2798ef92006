// T5 relative position bias (BiasSpec::t5 + t5_table) and the diagonal alignment of relative
// positions: through attention_forward against the reference under the tolerance rule, the
// table gradient against central finite differences, the tiled kernels, one table per head in
// multi-head attention, L_q != L_k under both alignments, and errors.
#include <catch2/catch.hpp>

#include "qkscope/qkscope.hpp"
#include "qkscope/cpu/attention.hpp"
#include "qkscope/detail/logit_range.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/gradcheck.hpp"
#include "support/random.hpp"

using namespace qkscope;

namespace {

struct Case {
  Eigen::Index L_q, L_k;
};
const Case kCases[] = {{1, 5}, {5, 1}, {3, 7}, {7, 3}, {6, 6}, {9, 9}};

template <class T>
AttentionConfig<T> t5_config(bool bidirectional, CausalAlignment a, bool causal, const Vec<T>& table) {
  AttentionConfig<T> c;
  c.mask.causal = causal;
  c.mask.alignment = a;
  c.bias.t5 = T5Buckets{bidirectional, int(table.size()), 6};
  c.bias.t5_table = table;
  return c;
}

}  // namespace

TEST_CASE("T5 bias: attention_forward matches the reference in both directions and alignments", "[bias][t5]") {
  qkscope::detail::Rng rng(51);
  for (const auto& c : kCases)
    for (const bool bi : {true, false})
      for (const auto a : {CausalAlignment::top_left, CausalAlignment::bottom_right})
        for (const bool causal : {false, true}) {
          const MatrixD Q = qktest::randn(rng, c.L_q, 3), K = qktest::randn(rng, c.L_k, 3), V = qktest::randn(rng, c.L_k, 2);
          const VectorD table = qktest::randn_vec(rng, 8, 1.5);
          const auto ref = reference::attention<double>(Q, K, V, {}, t5_config<double>(bi, a, causal, table));
          const auto naive = reference::attention<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), {},
                                                        t5_config<float>(bi, a, causal, table.cast<float>()));
          const auto fast = attention_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), {},
                                                     t5_config<float>(bi, a, causal, table.cast<float>()));
          const std::string what = std::string(bi ? "bidirectional" : "causal buckets") +
                                   (a == CausalAlignment::bottom_right ? ", bottom_right" : ", top_left") +
                                   (causal ? ", causal mask" : "") + ", (L_q, L_k) = (" + std::to_string(c.L_q) +
                                   ", " + std::to_string(c.L_k) + ")";
          CHECK_MATCHES_REFERENCE(what + " scores", fast.scores, naive.scores, ref.scores);
          CHECK_MATCHES_REFERENCE(what + " weights", fast.weights, naive.weights, ref.weights);
          CHECK_MATCHES_REFERENCE(what + " output", fast.output, naive.output, ref.output);
        }
}

TEST_CASE("T5 bias: the table's gradient matches central finite differences", "[bias][t5][grad]") {
  qkscope::detail::Rng rng(52);
  for (const auto& c : kCases)
    for (const auto a : {CausalAlignment::top_left, CausalAlignment::bottom_right}) {
      qktest::Problem p;
      p.Q = qktest::randn(rng, c.L_q, 3);
      p.K = qktest::randn(rng, c.L_k, 3);
      p.V = qktest::randn(rng, c.L_k, 2);
      p.cfg = t5_config<double>(true, a, true, qktest::randn_vec(rng, 8));
      const MatrixD G = qktest::randn(rng, c.L_q, 2);
      const auto f = attention_forward<double>(p.Q, p.K, p.V, {}, p.cfg);
      const auto g = attention_backward<double>(p.Q, p.K, p.V, {}, p.cfg, f, G);
      INFO("(L_q, L_k) = (" << c.L_q << ", " << c.L_k << ")" << (a == CausalAlignment::bottom_right ? " bottom_right" : ""));
      CHECK_GRAD("dt5_table", g.dt5_table, qktest::numeric_grad(p, p.cfg.bias.t5_table, G));
      CHECK_GRAD("dQ", g.dQ, qktest::numeric_grad(p, p.Q, G));
    }
}

TEST_CASE("relative positions follow the causal alignment's diagonal (L_q = 1, L_k = 5)", "[bias][t5][mask]") {
  // KV-cache decoding: one new query after 4 cached keys. Bottom-right puts it at key 4, so
  // ALiBi, the relative table and T5 all see offsets j - 4 = -4 ... 0; top-left puts it at
  // key 0 (offsets 0 ... 4).
  const Matrix Q = Matrix::Zero(1, 2), K = Matrix::Ones(5, 2), V = Matrix::Ones(5, 1);
  Vector rel(9);
  rel << 0, 1, 2, 3, 4, 5, 6, 7, 8;  // r[k] = k: the bias is the clipped offset + 4
  for (const auto a : {CausalAlignment::top_left, CausalAlignment::bottom_right}) {
    const int o = a == CausalAlignment::bottom_right ? 4 : 0;
    AttentionConfig<float> cfg;
    cfg.mask.alignment = a;
    cfg.bias.relative = rel;
    const auto r = attention_forward<float>(Q, K, V, {}, cfg);
    AttentionConfig<float> alibi;
    alibi.mask.alignment = a;
    alibi.bias.alibi_slope = 1.0;
    const auto al = attention_forward<float>(Q, K, V, {}, alibi);
    AttentionConfig<float> t5;
    t5.mask.alignment = a;
    t5.bias.t5 = T5Buckets{true, 8, 4};
    t5.bias.t5_table = Vector::LinSpaced(8, 0, 7);  // the bias is the bucket number
    const auto tr = attention_forward<float>(Q, K, V, {}, t5);
    for (int j = 0; j < 5; ++j) {
      INFO((o ? "bottom_right" : "top_left") << ", key " << j);
      CHECK(r.scores(0, j) == float(j - o + 4));
      CHECK(al.scores(0, j) == -float(std::abs(j - o)));
      CHECK(tr.scores(0, j) == float(T5Buckets{true, 8, 4}.bucket(j - o)));
    }
  }
}

TEST_CASE("T5 bias in the tiled kernels: forward against the reference, table gradient against the core",
          "[bias][t5][tiled]") {
  qkscope::detail::Rng rng(53);
  cpu::TiledOptions opt;
  opt.block_q = 4;
  opt.block_k = 4;
  opt.threads = 1;
  for (const auto& c : kCases)
    for (const auto a : {CausalAlignment::top_left, CausalAlignment::bottom_right}) {
      const MatrixD Q = qktest::randn(rng, c.L_q, 3), K = qktest::randn(rng, c.L_k, 3), V = qktest::randn(rng, c.L_k, 2);
      const VectorD table = qktest::randn_vec(rng, 10);
      const auto cd = t5_config<double>(false, a, true, table);
      const auto cf = t5_config<float>(false, a, true, table.cast<float>());
      const Matrix Qf = Q.cast<float>(), Kf = K.cast<float>(), Vf = V.cast<float>();
      const auto ref = reference::attention<double>(Q, K, V, {}, cd);
      const auto naive = reference::attention<float>(Qf, Kf, Vf, {}, cf);
      const auto t = cpu::attention_forward<float>(Qf, Kf, Vf, {}, cf, opt);
      const std::string what = "(L_q, L_k) = (" + std::to_string(c.L_q) + ", " + std::to_string(c.L_k) + ")";
      CHECK_MATCHES_REFERENCE("tiled output " + what, t.output, naive.output, ref.output);
      const Matrix G = qktest::randn<float>(rng, c.L_q, 2);
      const auto tg = cpu::attention_backward<float>(Qf, Kf, Vf, {}, cf, t, G, opt);
      const auto f64 = attention_forward<double>(Q, K, V, {}, cd);
      const auto g64 = attention_backward<double>(Q, K, V, {}, cd, f64, G.cast<double>());
      const auto f32 = attention_forward<float>(Qf, Kf, Vf, {}, cf);
      const auto g32 = attention_backward<float>(Qf, Kf, Vf, {}, cf, f32, G);
      CHECK_MATCHES_REFERENCE("tiled dt5_table " + what, tg.dt5_table, g32.dt5_table, g64.dt5_table);
    }
}

TEST_CASE("T5 table entries near -FLT_MAX: the tiled path still attends (the fold-safety bound counts the table)",
          "[bias][t5][tiled][reliability]") {
  // One visible key whose T5 bias is -3.4e38 (finite) at tau = 0.5: the core divides
  // (z - max) = 0 by tau and returns V; folding z / tau = -inf would read the key as masked.
  AttentionConfig<float> c;
  c.score = "dot";
  c.temperature = 0.5;
  c.bias.t5 = T5Buckets{true, 4, 4};
  c.bias.t5_table = Vector::Constant(4, -3.4e38f);
  const Matrix Q = Matrix::Constant(1, 1, 1.0f), K = Q, V = Matrix::Constant(1, 1, 2.0f);
  cpu::TiledOptions opt;
  opt.threads = 1;
  CHECK_FALSE(qkscope::detail::logits_fold_safe<float>("dot", Q, K, {}, 1.0, 0.5, c.bias, 1, 1));
  CHECK(attention_forward<float>(Q, K, V, {}, c).output(0, 0) == 2.0f);
  CHECK(cpu::attention_forward<float>(Q, K, V, {}, c, opt).output(0, 0) == 2.0f);
  c.bias.t5_table.setZero();
  CHECK(qkscope::detail::logits_fold_safe<float>("dot", Q, K, {}, 1.0, 0.5, c.bias, 1, 1));
}

TEST_CASE("tiled backward: a T5 table or temperature gradient that overflows float throws as the core does",
          "[bias][t5][tiled][reliability]") {
  // Causal, buckets {diagonal, past} = {delta, 0}, zero scores: P_ii is about 1/2 over many
  // rows, and with values rising to 4e37 every row adds ~1e37 of the same sign to dL/dt[0]:
  // the sum passes FLT_MAX while dQ, dK (zero inputs) and dV stay finite. The tiled path
  // returned dt5_table = (inf, -inf), and a dtemperature beyond float, where the core throws.
  const Eigen::Index L = 256;
  const Matrix Q = Matrix::Zero(L, 1), K = Matrix::Zero(L, 1), G = Matrix::Ones(L, 1);
  Matrix V(L, 1);
  for (Eigen::Index j = 0; j < L; ++j) V(j, 0) = float(4e37 * double(j + 1) / double(L));
  cpu::TiledOptions opt;
  opt.threads = 1;
  for (const auto& [delta, what] : {std::pair{4.0f, "dL/dbias.t5_table"}, std::pair{3.0f, "dL/dtemperature"}}) {
    AttentionConfig<float> c;
    c.score = "dot";
    c.mask.causal = true;
    c.bias.t5 = T5Buckets{false, 2, 1};  // bucket 0: r = 0 (and the masked future), 1: the past
    c.bias.t5_table = Vector(2);
    c.bias.t5_table << delta, 0.f;
    INFO("t5_table = (" << delta << ", 0)");
    const auto f = attention_forward<float>(Q, K, V, {}, c);
    CHECK_THROWS_WITH(attention_backward<float>(Q, K, V, {}, c, f, G), Catch::Contains(what));
    const auto t = cpu::attention_forward<float>(Q, K, V, {}, c, opt);
    REQUIRE_FALSE(t.fallback);  // the forward ran tiled: the backward's own check is what is tested
    CHECK_THROWS_WITH(cpu::attention_backward<float>(Q, K, V, {}, c, t, G, opt), Catch::Contains(what));
  }
}

TEST_CASE("multi-head attention: one T5 table per head, with its gradient", "[bias][t5][mha]") {
  qkscope::detail::Rng rng(54);
  const Eigen::Index B = 2, H = 2, L = 5, d_model = 4;
  MultiHeadConfig<double> cfg;
  cfg.batch = B;
  cfg.heads = H;
  cfg.d_k = 3;
  cfg.d_v = 2;
  cfg.attention.mask.causal = true;
  cfg.attention.bias.t5 = T5Buckets{false, 6, 8};
  cfg.t5_tables = qktest::randn(rng, H, 6);
  MultiHeadWeights<double> w;
  w.W_Q = qktest::randn(rng, d_model, H * 3);
  w.W_K = qktest::randn(rng, d_model, H * 3);
  w.W_V = qktest::randn(rng, d_model, H * 2);
  w.W_O = qktest::randn(rng, H * 2, d_model);
  const MatrixD X = qktest::randn(rng, B * L, d_model), G = qktest::randn(rng, B * L, d_model);
  const auto f = multi_head_forward<double>(X, X, w, cfg);
  // Head 1 of sequence 0 is single-head attention with its own table.
  AttentionConfig<double> one = cfg.attention;
  one.bias.t5_table = cfg.t5_tables.row(1).transpose();
  const auto h1 = attention_forward<double>(f.Q.block(0, 3, L, 3), f.K.block(0, 3, L, 3), f.V.block(0, 2, L, 2), {}, one);
  CHECK((h1.output - f.heads[1].output).cwiseAbs().maxCoeff() < 1e-12);
  const auto g = multi_head_backward<double>(X, X, w, cfg, f, G);
  MatrixD num = MatrixD::Zero(H, 6);
  for (Eigen::Index n = 0; n < num.size(); ++n) {
    const double x0 = cfg.t5_tables.data()[n], h = 1e-6;
    cfg.t5_tables.data()[n] = x0 + h;
    const double up = (multi_head_forward<double>(X, X, w, cfg).output.array() * G.array()).sum();
    cfg.t5_tables.data()[n] = x0 - h;
    const double down = (multi_head_forward<double>(X, X, w, cfg).output.array() * G.array()).sum();
    cfg.t5_tables.data()[n] = x0;
    num.data()[n] = (up - down) / (2 * h);
  }
  CHECK_GRAD("dt5_tables", g.dt5_tables, num);
}

TEST_CASE("multi-head attention with GQA: per-head and shared T5 tables both get their gradient", "[bias][t5][mha]") {
  // A shared attention.bias.t5_table was accepted but its gradient was dropped; per-head
  // tables with kv_heads < heads index the query head, not the kv head.
  qkscope::detail::Rng rng(55);
  const Eigen::Index B = 2, H = 4, H_kv = 2, L = 5, d_model = 4;
  for (const bool shared : {false, true}) {
    MultiHeadConfig<double> cfg;
    cfg.batch = B;
    cfg.heads = H;
    cfg.kv_heads = H_kv;
    cfg.d_k = 3;
    cfg.d_v = 2;
    cfg.attention.mask.causal = true;
    cfg.attention.mask.alignment = CausalAlignment::bottom_right;
    cfg.attention.bias.t5 = T5Buckets{true, 6, 8};
    if (shared) cfg.attention.bias.t5_table = qktest::randn_vec(rng, 6);
    else cfg.t5_tables = qktest::randn(rng, H, 6);
    MultiHeadWeights<double> w;
    w.W_Q = qktest::randn(rng, d_model, H * 3);
    w.W_K = qktest::randn(rng, d_model, H_kv * 3);
    w.W_V = qktest::randn(rng, d_model, H_kv * 2);
    w.W_O = qktest::randn(rng, H * 2, d_model);
    const MatrixD Xq = qktest::randn(rng, B * 3, d_model), Xkv = qktest::randn(rng, B * L, d_model);
    const MatrixD G = qktest::randn(rng, B * 3, d_model);
    const auto f = multi_head_forward<double>(Xq, Xkv, w, cfg);
    const auto g = multi_head_backward<double>(Xq, Xkv, w, cfg, f, G);
    double* table = shared ? cfg.attention.bias.t5_table.data() : cfg.t5_tables.data();
    MatrixD num = shared ? MatrixD::Zero(6, 1) : MatrixD::Zero(H, 6);  // same (row-major) layout as the tables
    for (Eigen::Index n = 0; n < num.size(); ++n) {
      const double x0 = table[n], h = 1e-6;
      table[n] = x0 + h;
      const double up = (multi_head_forward<double>(Xq, Xkv, w, cfg).output.array() * G.array()).sum();
      table[n] = x0 - h;
      const double down = (multi_head_forward<double>(Xq, Xkv, w, cfg).output.array() * G.array()).sum();
      table[n] = x0;
      num.data()[n] = (up - down) / (2 * h);
    }
    INFO((shared ? "shared table" : "per-head tables"));
    REQUIRE(num.cwiseAbs().maxCoeff() > 1e-3);  // the table matters: the check can fail
    if (shared) {
      CHECK(g.dt5_tables.size() == 0);
      CHECK_GRAD("dt5_table", MatrixD(g.dt5_table), num);
    } else {
      CHECK(g.dt5_table.size() == 0);
      CHECK_GRAD("dt5_tables", g.dt5_tables, num);
    }
  }
}

TEST_CASE("T5 and relative tables reject bad input, naming the argument", "[bias][t5][errors]") {
  using Catch::Matchers::Contains;
  const Matrix X = Matrix::Ones(3, 2);
  auto run = [&](const BiasSpec<float>& b) {
    AttentionConfig<float> c;
    c.bias = b;
    return attention_forward<float>(X, X, X, {}, c);
  };
  BiasSpec<float> b;
  b.relative = Vector::Zero(4);
  CHECK_THROWS_WITH(run(b), Contains("bias.relative must have odd length 2R+1, got 4"));
  b = {};
  b.t5 = T5Buckets{true, 1, 8};
  b.t5_table = Vector::Zero(1);
  CHECK_THROWS_WITH(run(b), Contains("bias.t5.num_buckets must be >= 2, got 1"));
  b.t5 = T5Buckets{true, 4, 0};
  b.t5_table = Vector::Zero(4);
  CHECK_THROWS_WITH(run(b), Contains("bias.t5.max_distance must be >= 1, got 0"));
  b.t5 = T5Buckets{true, 4, 8};
  b.t5_table = Vector::Zero(5);
  CHECK_THROWS_WITH(run(b), Contains("bias.t5_table must have num_buckets = 4 entries, got 5"));
  b.t5.reset();
  CHECK_THROWS_WITH(run(b), Contains("bias.t5_table is set but bias.t5 (the bucketing) is not"));
  b = {};
  b.t5 = T5Buckets{true, 4, 8};
  b.t5_table = Vector::Zero(4);
  b.t5_table(2) = NAN;
  CHECK_THROWS_WITH(run(b), Contains("bias.t5_table must be finite"));
  CHECK_THROWS_AS(run(b), std::invalid_argument);
}
