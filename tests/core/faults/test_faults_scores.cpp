// Fault cases about scoring functions (tests/data/fault_cases.json B12, B19): cosine of a
// zero or huge vector, and Luong's "general" score and attentional hidden state.
#include <cfloat>

#include "faults/checks.hpp"

using namespace qktest::faults;
using qktest::fault_case;

TEST_CASE("B12: cosine scores of a zero vector are 0, not 0/0 = NaN, for every tiny magnitude",
          "[faults][score]") {
  const auto B = fault_case("B12");
  const auto in = B["inputs"], ex = B["expected"];
  auto run = [&](auto tag) {
    using T = decltype(tag);
    AttentionConfig<T> c;
    c.score = "cosine";
    const Mat<T> Q = as<T>(in["q"]), K = as<T>(in["k"]), V = as<T>(in["v"]);
    const auto r = attention_forward<T>(Q, K, V, {}, c);
    check_sig6(r.raw_scores, ex["scores"], eps_of<T>());
    check_sig6(r.weights, ex["weights"], eps_of<T>());
    check_sig6(r.output, ex["out"], eps_of<T>());
    const auto g = attention_backward<T>(Q, K, V, {}, c, r, Mat<T>::Ones(1, 2));
    CHECK(g.dQ.allFinite());
    CHECK(g.dK.allFinite());
    // cos([0,0],[0,0]) and cos([0,0],[0.6,0.8]) are 0.
    const auto z = attention_forward<T>(Q, as<T>(in["k_zero_and_unit"]), V, {}, c);
    check_exact(z.raw_scores, ex["scores_zero_and_unit"]);
    // Whole kind: any magnitude from 0 up through the eps floor gives finite scores in [-1, 1].
    for (double m : {0.0, double(std::numeric_limits<T>::denorm_min()), 1e-30, 1e-20, 1e-9, 1e-8, 1e-7, 1.0, 1e10}) {
      Mat<T> q(1, 2), k(3, 2), v(3, 1);
      q << T(m), T(-m);
      k << T(m), T(m), T(0), T(m), T(m), T(0);
      v << T(1), T(2), T(3);
      const auto s = attention_forward<T>(q, k, v, {}, c);
      const auto gs = attention_backward<T>(q, k, v, {}, c, s, Mat<T>::Ones(1, 1));
      INFO("magnitude " << m);
      CHECK(s.raw_scores.allFinite());
      CHECK(s.raw_scores.cwiseAbs().maxCoeff() <= T(1 + 1e-6));
      CHECK(gs.dQ.allFinite());
      CHECK(gs.dK.allFinite());
    }
  };
  run(float{});
  run(double{});
  // f32(FLT_MIN * FLT_MIN) = 0: why norms must never be multiplied before dividing.
  volatile float fmin = FLT_MIN;
  CHECK(fmin * fmin == 0.0f);
}

TEST_CASE("B12: cosine of a large fp32 vector with itself is 1 (norms do not overflow)",
          "[faults][score]") {
  // A plain sqrt(sum x^2) overflows in float for |x| > ~1.8e19: x / inf = 0 and the cosine
  // becomes 0 instead of 1. bfloat16 storage reaches these magnitudes (max 3.39e38).
  const auto B = fault_case("B12");
  AttentionConfig<float> c;
  c.score = "cosine";
  const Mat<float> x = as<float>(B["inputs"]["large"]);
  const auto r = attention_forward<float>(x, x, Mat<float>::Ones(1, 1), {}, c);
  CHECK(r.raw_scores(0, 0) == Approx(float(B["expected"]["cos_large_with_itself"].number())));
}

TEST_CASE("B19: Luong attention: 'general' is bilinear with W_a, and h~ = tanh(W_c [c; h_t]) "
          "from the core's context",
          "[faults][score]") {
  const auto B = fault_case("B19");
  const auto in = B["inputs"], ex = B["expected"];
  const Mat<double> h_t = as(in["h_t"]), h_s = as(in["h_s"]), W_c = as(in["W_c"]);
  AttentionConfig<double> c;
  c.score = "dot";
  const auto r = attention_forward<double>(h_t, h_s, h_s, {}, c);
  check_sig6(r.weights, ex["a_dot"], eps_of<double>());
  check_sig6(r.output, ex["context"], eps_of<double>());
  Eigen::VectorXd cat(4);
  cat << r.output.row(0).transpose(), h_t.row(0).transpose();  // [c; h_t]
  const Eigen::VectorXd pre = W_c * cat;
  const Eigen::VectorXd h_tilde = pre.array().tanh();
  check_sig6(h_tilde.transpose(), ex["h_tilde"], eps_of<double>());
  check_sig6(pre.transpose(), B["buggy"]["h_tilde_without_tanh"], eps_of<double>());
  CHECK((h_tilde - pre).cwiseAbs().maxCoeff() > 0.5);

  ScoreParams<double> p;
  p.W = as(in["W_a"]);
  AttentionConfig<double> g;
  g.score = "bilinear";
  const auto rg = attention_forward<double>(h_t, h_s, h_s, p, g);
  check_sig6(rg.weights, ex["a_general"], eps_of<double>());
  CHECK(rg.weights != r.weights);  // "general computed as dot" would give a_dot
  p.W = Mat<double>::Identity(2, 2);  // general with W_a = I is dot
  CHECK(attention_forward<double>(h_t, h_s, h_s, p, g).weights == r.weights);
}
