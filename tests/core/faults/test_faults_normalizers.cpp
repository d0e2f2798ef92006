// Fault cases about the normalizer (tests/data/fault_cases.json B13, B14): temperature 0
// and the tau -> 0 limit, ties under softmax, hard and top-1, and the straight-through
// Gumbel-softmax (forward one-hot, backward the soft gradient).
#include "faults/checks.hpp"
#include "support/random.hpp"

using namespace qktest::faults;
using qktest::fault_case;
using Catch::Matchers::Contains;

TEST_CASE("B13: temperature 0 is rejected for soft normalizers; tau -> 0 reaches the hard "
          "limit without NaN; ties split for softmax and go to the lowest index for hard",
          "[faults][temperature]") {
  const auto B = fault_case("B13");
  const auto in = B["inputs"], ex = B["expected"];
  const Mat<double> z = as(in["logits"]), Vz = Mat<double>::Identity(3, 3);
  for (const auto& n : normalizer_infos()) {
    AttentionConfig<double> c = dot_config<double>();
    c.normalizer = n.name;
    c.temperature = 0;
    INFO("normalizer " << n.name);
    if (n.soft) {
      CHECK_THROWS_AS(from_scores<double>(z, Vz, c), std::invalid_argument);
      CHECK_THROWS_WITH(from_scores<double>(z, Vz, c), Contains("temperature") && Contains("hard"));
    } else {
      check_sig6(from_scores<double>(z, Vz, c).weights, ex["hard_weights"], 0);
    }
  }
  AttentionConfig<double> c = dot_config<double>();
  c.temperature = in["tau_small"].number();
  check_sig6(from_scores<double>(z, Vz, c).weights, ex["weights_tau_small"], eps_of<double>());

  const Mat<double> tie = as(in["tie_logits"]), Vt = as(in["tie_v"]);
  auto sweep = [&](auto tag, std::vector<double> taus) {
    using T = decltype(tag);
    for (double tau : taus) {
      INFO("tau " << tau << ", " << qp::finfo<T>().name);
      AttentionConfig<T> s = dot_config<T>();
      s.temperature = tau;
      const auto a = from_scores<T>(z.cast<T>(), Vz.cast<T>(), s);
      CHECK(a.weights.allFinite());
      if (tau <= 1e-3) check_exact(a.weights, ex["hard_weights"]);  // one-hot, no NaN
      const auto t = from_scores<T>(tie.cast<T>(), Vt.cast<T>(), s);
      check_sig6(t.weights, ex["tie_soft_limit"], eps_of<T>());
      if (tau <= 1e-3) check_sig6(t.output, ex["tie_soft_limit_out"], eps_of<T>());
    }
  };
  sweep(double{}, {1e-1, 1e-3, 1e-10, 1e-30, 1e-300, std::numeric_limits<double>::denorm_min()});
  sweep(float{}, {1e-1, 1e-3, 1e-10, 1e-30, 1e-38, 1e-44});
  // Hard and top-1: ties go to the lowest key index (ONNX Hardmax), one-hot sums to 1.
  for (const char* name : {"hard", "topk_softmax"}) {
    AttentionConfig<double> h = dot_config<double>();
    h.normalizer = name;
    h.norm_options.get<qkscope::norm::TopKSoftmax>().top_k = 1;
    const auto t = from_scores<double>(tie, Vt, h);
    INFO(name);
    check_exact(t.weights, ex["tie_hard"]);
    check_sig6(t.output, ex["tie_hard_out"], 0);
  }
}

TEST_CASE("B13: a soft-normalizer temperature that rounds to 0 in fp32 is an error, not NaN",
          "[faults][temperature]") {
  // tau = 1e-46 is > 0 in double but 0.0f in float: (z - max) / 0 would be 0/0 = NaN.
  const auto B = fault_case("B13");
  AttentionConfig<float> c = dot_config<float>();
  c.temperature = 1e-46;
  bool finite = false;
  try {
    finite = from_scores<float>(as<float>(B["inputs"]["logits"]), Mat<float>::Identity(3, 3), c).weights.allFinite();
  } catch (const std::invalid_argument&) {
    finite = true;  // a clear error would also be a fix
  }
  CHECK(finite);
}

TEST_CASE("B14: hard attention ties go to the lowest index (the one-hot sums to 1); "
          "straight-through forward is the one-hot, backward the soft gradient",
          "[faults][hard]") {
  const auto B = fault_case("B14");
  const auto in = B["inputs"], ex = B["expected"];
  // Tie: logits log(y_soft), so softmax gives y_soft back.
  const Mat<double> logits = as(in["tie_y_soft"]).unaryExpr([](double y) { return std::log(y); });
  const Mat<double> Vt = as(in["tie_v"]);
  AttentionConfig<double> h = dot_config<double>();
  h.normalizer = "hard";
  const auto t = from_scores<double>(logits, Vt, h);
  check_exact(t.weights, ex["tie_y_hard"]);
  CHECK(t.weights.sum() == 1.0);
  check_sig6(t.output, ex["tie_out"], 0);

  // Gradient: logits, tau 1, zero noise, upstream grads e0 and e1. Our noise g is seeded,
  // so each query row holds z - g_i: the perturbed logits are z (to rounding).
  const std::uint64_t seed = 17;
  const Mat<double> g = qkscope::norm::GumbelSoftmax::noise<double>({seed}, 2, 3);
  const Mat<double> zq = as(in["grad_logits"]).replicate(2, 1) - g;
  const Mat<double> I3 = Mat<double>::Identity(3, 3), dO = as(in["grad_upstream"]);
  AttentionConfig<double> st = dot_config<double>();
  st.normalizer = "gumbel_softmax";
  st.norm_options.get<qkscope::norm::GumbelSoftmax>().seed = seed;
  st.norm_options.get<qkscope::norm::GumbelSoftmax>().hard = true;
  AttentionConfig<double> soft = st;
  soft.norm_options.get<qkscope::norm::GumbelSoftmax>().hard = false;
  const auto fs = attention_forward<double>(zq, I3, I3, {}, soft);
  check_sig6(fs.weights.row(0), ex["grad_y_soft"], eps_of<double>());
  const auto fh = attention_forward<double>(zq, I3, I3, {}, st);
  check_exact(fh.weights, ex["grad_forward"]);  // bit-exact one-hot
  const auto gh = attention_backward<double>(zq, I3, I3, {}, st, fh, dO);
  check_sig6(gh.dQ, ex["grad_logits"], eps_of<double>());  // dQ = dL/dlogits (K = I, scale 1)

  // The ST property on random inputs: forward = one-hot(argmax(z + g)), backward = the soft
  // Gumbel-softmax backward with the same seed.
  detail::Rng rng(3);
  const MatrixD Q = qktest::randn(rng, 4, 3), K = qktest::randn(rng, 5, 3), V = qktest::randn(rng, 5, 2);
  const MatrixD G = qktest::randn(rng, 4, 2);
  AttentionConfig<double> rh;
  rh.normalizer = "gumbel_softmax";
  rh.norm_options.get<qkscope::norm::GumbelSoftmax>().seed = 9;
  rh.norm_options.get<qkscope::norm::GumbelSoftmax>().hard = true;
  rh.temperature = 0.5;
  AttentionConfig<double> rs = rh;
  rs.norm_options.get<qkscope::norm::GumbelSoftmax>().hard = false;
  const auto hf = attention_forward<double>(Q, K, V, {}, rh);
  const auto sf = attention_forward<double>(Q, K, V, {}, rs);
  const MatrixD noise = qkscope::norm::GumbelSoftmax::noise<double>({9}, 4, 5);
  for (Eigen::Index i = 0; i < 4; ++i) {
    Eigen::Index best;
    (hf.masked_scores.row(i) + noise.row(i)).maxCoeff(&best);
    for (Eigen::Index j = 0; j < 5; ++j) CHECK(hf.weights(i, j) == (j == best ? 1.0 : 0.0));
  }
  const auto hg = attention_backward<double>(Q, K, V, {}, rh, hf, G);
  const auto sg = attention_backward<double>(Q, K, V, {}, rs, sf, G);
  CHECK(hg.dQ.isApprox(sg.dQ, 1e-12));
  CHECK(hg.dK.isApprox(sg.dK, 1e-12));
  CHECK(!hg.dQ.isZero(1e-9));  // the soft gradient flows (a plain one-hot would give 0)
}
