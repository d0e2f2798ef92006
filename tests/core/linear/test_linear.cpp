// Linear attention (linear/attention.hpp) against the plain-loop reference
// (reference/linear.hpp) under the one tolerance rule, gradients against central finite
// differences of the reference, the normaliser policy, fp16/bf16 storage, and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <string>

#include "qkscope/linear/linear.hpp"
#include "reference/linear.hpp"
#include "support/compare.hpp"
#include "support/gradcheck.hpp"
#include "support/random.hpp"

using namespace qkscope;
using namespace qkscope::linear;

namespace {

struct Case {
  Eigen::Index L_q, L_k, d, d_v;
};
// Length 1, L_q != L_k both ways, odd widths.
const Case kCases[] = {{1, 1, 1, 1}, {1, 5, 3, 2}, {5, 1, 2, 3}, {3, 7, 4, 2}, {7, 3, 5, 1}, {6, 6, 3, 4}};

struct Variant {
  std::string name;
  bool favor, orthogonal, causal;
  CausalAlignment align;
};
const Variant kVariants[] = {
    {"elu non-causal", false, false, false, CausalAlignment::top_left},
    {"elu causal top_left", false, false, true, CausalAlignment::top_left},
    {"elu causal bottom_right", false, false, true, CausalAlignment::bottom_right},
    {"favor+ orthogonal non-causal", true, true, false, CausalAlignment::top_left},
    {"favor+ iid non-causal", true, false, false, CausalAlignment::top_left},
    {"favor+ orthogonal causal top_left", true, true, true, CausalAlignment::top_left},
    {"favor+ orthogonal causal bottom_right", true, true, true, CausalAlignment::bottom_right},
};

template <class T>
FeatureMap<T> make_map(const Variant& v, Eigen::Index m, Eigen::Index d, std::uint64_t seed) {
  return v.favor ? favor_features<T>(m, d, seed, 0, v.orthogonal) : elu_features<T>();
}

template <class T>
reference::LinearResult<T> ref_of(const Variant& v, const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                  const FeatureMap<double>& phi) {
  const Eigen::Index o = v.causal && v.align == CausalAlignment::bottom_right ? K.rows() - Q.rows() : 0;
  return reference::linear_attention<T>(Q, K, V, v.favor, phi.W.cast<T>(), phi.data_scale, v.causal, o);
}

LinearConfig config_of(const Variant& v) { return {v.causal, v.align}; }

}  // namespace

TEST_CASE("linear attention matches the reference for every feature map, shape and alignment", "[linear]") {
  qkscope::detail::Rng rng(11);
  for (const auto& v : kVariants)
    for (const auto& c : kCases) {
      const Eigen::Index m = 2 * c.d + 3;  // > d: more than one orthogonal block
      const MatrixD Q = qktest::randn(rng, c.L_q, c.d, 0.7), K = qktest::randn(rng, c.L_k, c.d, 0.7);
      const MatrixD V = qktest::randn(rng, c.L_k, c.d_v);
      const auto phi_d = make_map<double>(v, m, c.d, 5);
      const auto phi_f = make_map<float>(v, m, c.d, 5);
      const auto ref = ref_of<double>(v, Q, K, V, phi_d);
      const auto naive = ref_of<float>(v, Matrix(Q.cast<float>()), Matrix(K.cast<float>()), Matrix(V.cast<float>()), phi_d);
      const auto fast = linear_attention_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), phi_f,
                                                        config_of(v));
      const std::string what = v.name + " (L_q, L_k, d, d_v) = (" + std::to_string(c.L_q) + ", " +
                                std::to_string(c.L_k) + ", " + std::to_string(c.d) + ", " + std::to_string(c.d_v) + ")";
      CHECK_MATCHES_REFERENCE(what + " output", fast.output, naive.output, ref.output);
      CHECK_MATCHES_REFERENCE(what + " weights", implied_weights(fast, config_of(v)), naive.weights, ref.weights);
    }
}

TEST_CASE("linear attention gradients match central finite differences of the reference", "[linear][grad]") {
  // Spread 4: log-features far apart, so the stabiliser's column maxima (and, causal, their
  // rescaling as later keys raise them) are exercised.
  qkscope::detail::Rng rng(12);
  for (const double spread : {0.7, 4.0})
  for (const auto& v : kVariants)
    for (const auto& c : kCases) {
      const Eigen::Index m = c.d + 2;
      MatrixD Q = qktest::randn(rng, c.L_q, c.d, spread), K = qktest::randn(rng, c.L_k, c.d, spread);
      MatrixD V = qktest::randn(rng, c.L_k, c.d_v);
      const MatrixD G = qktest::randn(rng, c.L_q, c.d_v);
      const auto phi = make_map<double>(v, m, c.d, 6);
      const auto fwd = linear_attention_forward<double>(Q, K, V, phi, config_of(v));
      const auto g = linear_attention_backward<double>(Q, K, V, phi, config_of(v), fwd, G);
      auto fd = [&](MatrixD& X) {
        MatrixD out = MatrixD::Zero(X.rows(), X.cols());
        for (Eigen::Index n = 0; n < X.size(); ++n) {
          const double x0 = X.data()[n], h = 1e-6 * std::max(1.0, std::abs(x0));
          X.data()[n] = x0 + h;
          const double up = (ref_of<double>(v, Q, K, V, phi).output.array() * G.array()).sum();
          X.data()[n] = x0 - h;
          const double down = (ref_of<double>(v, Q, K, V, phi).output.array() * G.array()).sum();
          X.data()[n] = x0;
          out.data()[n] = (up - down) / (2 * h);
        }
        return out;
      };
      INFO(v.name << ", spread " << spread << " (L_q, L_k, d, d_v) = (" << c.L_q << ", " << c.L_k << ", " << c.d << ", " << c.d_v << ")");
      CHECK_GRAD("dQ", g.dQ, fd(Q));
      CHECK_GRAD("dK", g.dK, fd(K));
      CHECK_GRAD("dV", g.dV, fd(V));
    }
}

TEST_CASE("FAVOR+ approaches exact softmax attention with error falling like 1/sqrt(m)", "[linear][favor]") {
  // Mean relative output error over 32 fixed seeds against softmax(Q K^T / sqrt d) V from the
  // attention reference, for m = 256 ... 8192. An unbiased estimator with variance ~ 1/m gives
  // a log-log slope of -1/2 once m is large enough for the ratio O = num / den to be in its
  // linear regime (below m ~ 256 the bounded weights flatten it to about -0.4); a biased one
  // (wrong scale, missing |x|^2/2 term) flattens to 0. Least-squares slope over the 6 points.
  const Eigen::Index L = 16, d = 8, seeds = 32;
  for (const bool orthogonal : {true, false}) {
    std::vector<double> x, y;
    for (Eigen::Index m = 256; m <= 8192; m *= 2) {
      double sum = 0;
      for (std::uint64_t seed = 0; seed < std::uint64_t(seeds); ++seed) {
        qkscope::detail::Rng rng(1000 + seed);
        const MatrixD Q = qktest::randn(rng, L, d, 0.5), K = qktest::randn(rng, L, d, 0.5), V = qktest::randn(rng, L, d);
        const auto exact = reference::attention<double>(Q, K, V, {}, AttentionConfig<double>{}).output;
        const auto phi = favor_features<double>(m, d, 77 + seed, 0, orthogonal);
        sum += (linear_attention_forward<double>(Q, K, V, phi).output - exact).norm() / exact.norm();
      }
      x.push_back(std::log(double(m)));
      y.push_back(std::log(sum / double(seeds)));
    }
    const double mx = std::accumulate(x.begin(), x.end(), 0.0) / double(x.size());
    const double my = std::accumulate(y.begin(), y.end(), 0.0) / double(y.size());
    double sxy = 0, sxx = 0;
    for (std::size_t n = 0; n < x.size(); ++n) {
      sxy += (x[n] - mx) * (y[n] - my);
      sxx += (x[n] - mx) * (x[n] - mx);
    }
    const double slope = sxy / sxx;
    INFO((orthogonal ? "orthogonal" : "iid") << " directions: mean error " << std::exp(y.front()) << " at m = 256, "
                                              << std::exp(y.back()) << " at m = 8192, slope " << slope);
    CHECK(slope < -0.4);
    CHECK(slope > -0.6);
  }
}

TEST_CASE("FAVOR+ projection: orthogonal rows within each block, chi-distributed norms, seeded", "[linear][favor]") {
  const Eigen::Index d = 6, m = 4 * d + 3;
  const MatrixD W = favor_projection(m, d, 9);
  CHECK(W == favor_projection(m, d, 9));
  CHECK(W != favor_projection(m, d, 10));
  for (Eigen::Index b0 = 0; b0 < m; b0 += d) {
    const Eigen::Index n = std::min(d, m - b0);
    const MatrixD B = W.middleRows(b0, n);
    MatrixD G = B * B.transpose();
    for (Eigen::Index i = 0; i < n; ++i) G(i, i) = 0;
    INFO("block at row " << b0);
    CHECK(G.cwiseAbs().maxCoeff() < 1e-12 * B.squaredNorm());
  }
  // E|w|^2 = d for rows ~ N(0, I_d); over 4000 rows the mean is within ~0.1 of d.
  const MatrixD big = favor_projection(4000, d, 3);
  CHECK(big.rowwise().squaredNorm().mean() == Approx(double(d)).margin(0.25));
}

TEST_CASE("linear attention: a row with no visible key gets output 0 and gradient 0", "[linear]") {
  // Bottom-right alignment with L_q > L_k: the first L_q - L_k queries see no key.
  const Matrix K = Matrix::Constant(2, 3, 0.25f), V = Matrix::Ones(2, 2), Q = Matrix::Constant(5, 3, 0.1f);
  for (const bool favor : {false, true}) {
    const auto phi = favor ? favor_features<float>(8, 3, 1) : elu_features<float>();
    const LinearConfig cfg{true, CausalAlignment::bottom_right};
    const auto c = linear_attention_forward<float>(Q, K, V, phi, cfg);
    CHECK(c.output.topRows(3).isZero());
    CHECK(c.denominator.head(3).isZero());
    CHECK((c.denominator.tail(2).array() >= 1).all());
    CHECK(c.output.bottomRows(2).isApprox(Matrix::Ones(2, 2)));
    const auto g = linear_attention_backward<float>(Q, K, V, phi, cfg, c, Matrix::Ones(5, 2));
    CHECK(g.dQ.topRows(3).isZero());
    CHECK(g.dQ.allFinite());
    CHECK(g.dK.allFinite());
    CHECK(g.dV.allFinite());
    CHECK(implied_weights(c, cfg).topRows(3).isZero());
  }
}

TEMPLATE_TEST_CASE("linear attention: features far below the others do not underflow the output", "[linear][stabiliser]",
                   float, double) {
  using M = Mat<TestType>;
  const auto elu = elu_features<TestType>();
  // elu + 1, d = 1: phi(q) is a common factor of every pair, so O = sum_j phi(k_j) v_j / sum_j phi(k_j)
  // whatever q is, also where phi(q) = e^q underflows.
  M K(3, 1), V(3, 1);
  K << 0.5, -1, 2;
  V << 1, 2, 3;
  const double e1 = std::exp(-1.0), want = (1.5 * 1 + e1 * 2 + 3 * 3) / (1.5 + e1 + 3);  // 2.30814
  for (const double q : {0.0, -88.0, -100.0, -200.0, -1000.0, -1e30}) {
    const auto r = linear_attention_forward<TestType>(M::Constant(1, 1, TestType(q)), K, V, elu);
    INFO("q = " << q);
    CHECK(double(r.output(0, 0)) == Approx(want).epsilon(1e-6));
  }
  // Keys whose features e^-100, e^-120 underflow float: weights 1 : e^-20.
  M K2(2, 1), V2(2, 1);
  K2 << -100, -120;
  V2 << 1, 2;
  const double e20 = std::exp(-20.0);
  CHECK(double(linear_attention_forward<TestType>(M::Ones(1, 1), K2, V2, elu).output(0, 0)) ==
        Approx((1 + 2 * e20) / (1 + e20)).epsilon(1e-6));
  // elu + 1 of 1e20: phi(q) . phi(k) = 2e40 overflows float, the ratio does not.
  M Q3(1, 2), K3(2, 2), V3(2, 1);
  Q3 << 1e20, 1e20;
  K3 << 1e20, 1e20, 1, 1;
  V3 << 1, 2;
  for (const bool causal : {false, true})
    CHECK(double(linear_attention_forward<TestType>(Q3, K3, V3, elu, {causal, CausalAlignment::top_left}).output(0, 0)) ==
          Approx(1).epsilon(1e-6));
  // FAVOR+, one key: the output is its value whatever the features are.
  const auto favor = favor_features<TestType>(64, 1, 0, 1);
  CHECK(double(linear_attention_forward<TestType>(M::Constant(1, 1, 30), M::Constant(1, 1, -30), M::Constant(1, 1, 7),
                                                  favor).output(0, 0)) == Approx(7).epsilon(1e-6));
  // Causal FAVOR+: row 0 sees key 0 only, whatever the later key is.
  for (const double k1 : {0.0, 5.0, 10.0, 20.0}) {
    M Q(2, 1), K4(2, 1), V4(2, 1);
    Q << 0, 0;
    K4 << 20, k1;
    V4 << 7, 1;
    const auto r = linear_attention_forward<TestType>(Q, K4, V4, favor, {true, CausalAlignment::top_left});
    const auto ref = reference::linear_attention<double>(Q.template cast<double>(), K4.template cast<double>(),
                                                         V4.template cast<double>(), true,
                                                         favor.W.template cast<double>(), favor.data_scale, true, 0);
    INFO("k1 = " << k1);
    CHECK(double(r.output(0, 0)) == Approx(7).epsilon(1e-6));
    CHECK(double(r.output(1, 0)) == Approx(ref.output(1, 0)).epsilon(1e-4));
  }
}

TEST_CASE("causal linear attention: appending later keys never changes earlier rows", "[linear][stabiliser]") {
  // Large inputs: exponents spread over hundreds, so any maximum over future keys would
  // underflow earlier rows. The prefix run does the same arithmetic: equal bit for bit.
  qkscope::detail::Rng rng(41);
  for (const bool favor : {false, true})
    for (const double spread : {1.0, 8.0, 30.0}) {
      const Eigen::Index L = 9, d = 3;
      const Matrix Q = qktest::randn(rng, L, d, spread).cast<float>(), K = qktest::randn(rng, L, d, spread).cast<float>();
      const Matrix V = qktest::randn(rng, L, 2).cast<float>();
      const auto phi = favor ? favor_features<float>(16, d, 3, 1) : elu_features<float>();
      const LinearConfig cfg{true, CausalAlignment::top_left};
      const auto full = linear_attention_forward<float>(Q, K, V, phi, cfg);
      const MatrixD W = phi.W.cast<double>();
      const auto ref = reference::linear_attention<double>(Q.cast<double>(), K.cast<double>(), V.cast<double>(), favor, W,
                                                           phi.data_scale, true, 0);
      INFO((favor ? "favor+" : "elu") << ", spread " << spread);
      REQUIRE(full.output.allFinite());
      for (Eigen::Index p = 1; p < L; ++p) {
        const auto prefix = linear_attention_forward<float>(Q.topRows(p), K.topRows(p), V.topRows(p), phi, cfg);
        INFO("prefix of " << p);
        CHECK(prefix.output == full.output.topRows(p));
      }
      // Every row a weighted mean of the values it sees: within the values' range, and near
      // the double reference (a row's weights can be dominated by one key: 1e-3 of the range).
      CHECK((full.output.cast<double>() - ref.output).cwiseAbs().maxCoeff() <= 1e-3 * (1 + V.cwiseAbs().maxCoeff()));
    }
}

TEST_CASE("FAVOR+ stays finite where the unstabilised features underflow", "[linear][favor]") {
  // |x| ~ 40 with scale 1/sqrt(d): every exponent w.a - |a|^2/2 is below -104, where exp
  // underflows to 0 in float, so without the stabiliser every row would be 0 / 0.
  qkscope::detail::Rng rng(21);
  const Eigen::Index d = 4, m = 32;
  const MatrixD Q = qktest::randn(rng, 5, d, 20), K = qktest::randn(rng, 6, d, 20), V = qktest::randn(rng, 6, 3);
  const auto phi_d = favor_features<double>(m, d, 2);
  REQUIRE(favor_exponents<double>(phi_d, Q).maxCoeff() < -104);
  REQUIRE(favor_exponents<double>(phi_d, K).maxCoeff() < -104);
  const auto ref = reference::linear_attention<double>(Q, K, V, true, phi_d.W, phi_d.data_scale, false, 0);
  const auto naive = reference::linear_attention<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), true,
                                                        phi_d.W.cast<float>(), phi_d.data_scale, false, 0);
  const auto fast = linear_attention_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(),
                                                    favor_features<float>(m, d, 2));
  REQUIRE(fast.output.allFinite());
  CHECK_MATCHES_REFERENCE("large inputs", fast.output, naive.output, ref.output);
}

TEMPLATE_TEST_CASE("linear attention on fp16/bf16 storage computes in fp32 and rounds the output once",
                   "[linear][precision]", Eigen::half, Eigen::bfloat16) {
  qkscope::detail::Rng rng(31);
  const MatrixD Q0 = qktest::randn(rng, 5, 4, 3), K0 = qktest::randn(rng, 7, 4, 3), V0 = qktest::randn(rng, 7, 3);
  const auto Qs = precision::to_storage<TestType>(Q0), Ks = precision::to_storage<TestType>(K0),
             Vs = precision::to_storage<TestType>(V0);
  const MatrixD Q = precision::widen<double>(Qs), K = precision::widen<double>(Ks), V = precision::widen<double>(Vs);
  for (const bool favor : {false, true}) {
    const auto phi = favor ? favor_features<float>(16, 4, 1) : elu_features<float>();
    const auto r = linear_attention_forward_mixed<TestType>(Qs, Ks, Vs, phi, {true, CausalAlignment::top_left});
    const MatrixD W = phi.W.template cast<double>();
    const auto ref = reference::linear_attention<double>(Q, K, V, favor, W, phi.data_scale, true, 0);
    const auto naive = reference::linear_attention<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), favor,
                                                          phi.W, phi.data_scale, true, 0);
    CHECK_MATCHES_REFERENCE(favor ? "favor+ fp32 compute" : "elu fp32 compute", r.fp32.output, naive.output, ref.output);
    CHECK(r.output == precision::to_storage<TestType>(r.fp32.output));
    CHECK((r.fp32.denominator.array() > 0).all());
  }
}

TEST_CASE("linear attention rejects bad input with errors naming the argument", "[linear][errors]") {
  using Catch::Matchers::Contains;
  const Matrix Q = Matrix::Ones(2, 3), K = Matrix::Ones(4, 3), V = Matrix::Ones(4, 2);
  CHECK_THROWS_WITH(favor_features<float>(0, 3, 1), Contains("feature count m must be >= 1, got 0"));
  CHECK_THROWS_WITH(favor_projection(-2, 3, 1), Contains("feature count m must be >= 1, got -2"));
  CHECK_THROWS_AS(favor_features<float>(0, 3, 1), std::invalid_argument);
  const auto phi = favor_features<float>(8, 3, 1);
  CHECK_THROWS_WITH(linear_attention_forward<float>(Matrix::Ones(2, 5), Matrix::Ones(4, 5), V, phi),
                    Contains("query must have width d = 3"));
  CHECK_THROWS_WITH(linear_attention_forward<float>(Q, Matrix::Ones(4, 2), V, phi), Contains("key must have the width d = 3"));
  CHECK_THROWS_WITH(linear_attention_forward<float>(Q, K, Matrix::Ones(3, 2), phi), Contains("value must have L_k = 4"));
  CHECK_THROWS_WITH(linear_attention_forward<float>(Matrix(0, 3), K, V, phi), Contains("query must be non-empty"));
  CHECK_THROWS_WITH(linear_attention_forward<float>(Q, Matrix(0, 3), Matrix(0, 2), phi), Contains("key must be non-empty"));
  CHECK_THROWS_WITH(favor_features<float>(4, 4, 1, -1), Contains("scale must be finite and >= 0"));
  CHECK_THROWS_WITH(favor_features<float>(4, 4, 1, -1e-30), Contains("got -1e-30"));
  CHECK(favor_features<float>(4, 4, 1, 0).data_scale == Approx(std::sqrt(0.5)));  // 0: 1/sqrt(d)
  // A scale outside float's range would give equal features (output = mean of V) or
  // every exponent -inf; it is named instead. Double holds both.
  CHECK_THROWS_WITH(favor_features<float>(4, 4, 1, 1e-300), Contains("favor: scale 1e-300 is not representable"));
  CHECK_THROWS_WITH(favor_features<float>(4, 4, 1, 1e40), Contains("favor: scale 1e+40 is not representable"));
  CHECK(favor_features<double>(4, 4, 1, 1e-300).data_scale == Approx(1e-150));
  Matrix bad = Q;
  bad(1, 2) = NAN;
  CHECK_THROWS_WITH(linear_attention_forward<float>(bad, K, V, phi), Contains("query must be finite"));
  const auto f = linear_attention_forward<float>(Q, K, V, phi);
  CHECK_THROWS_WITH(linear_attention_backward<float>(Q, K, V, phi, {}, f, Matrix::Ones(3, 2)),
                    Contains("grad_output must have shape (2, 2)"));
  // A fwd of other inputs is named, never read out of bounds.
  const Matrix G = Matrix::Ones(2, 2);
  const auto other_q = linear_attention_forward<float>(Matrix::Ones(3, 3), K, V, phi);
  CHECK_THROWS_WITH(linear_attention_backward<float>(Q, K, V, phi, {}, other_q, G), Contains("fwd.output must have shape (2, 2)"));
  CHECK_THROWS_WITH(linear_attention_backward<float>(Q, K, V, phi, {}, LinearResult<float>{}, G),
                    Contains("fwd.output must have shape (2, 2), got (0, 0)"));
  const LinearConfig causal{true, CausalAlignment::top_left};
  const auto other_k = linear_attention_forward<float>(Q, Matrix::Ones(6, 3), Matrix::Ones(6, 2), phi, causal);
  CHECK_THROWS_WITH(linear_attention_backward<float>(Q, K, V, phi, causal, other_k, G), Contains("fwd.k_features must have shape (4, 8)"));
  CHECK_THROWS_WITH(linear_attention_backward<float>(Q, K, V, phi, causal, f, G), Contains("fwd.key_max (causal) must have shape (4, 8)"));
  CHECK_THROWS_WITH(linear_attention_backward<float>(Q, K, V, favor_features<float>(5, 3, 1), {}, f, G),
                    Contains("fwd.q_features must have shape (2, 5)"));
  CHECK_THROWS_AS(implied_weights(f, causal), std::invalid_argument);
}

TEST_CASE("linear attention: finite inputs that overflow float throw naming the input, never NaN", "[linear][errors]") {
  using Catch::Matchers::Contains;
  Matrix Q(1, 2), K(2, 2), V(2, 1), G(1, 1);
  Q << 1e20f, 1e20f;
  K << 1e20f, 1e20f, 1, 1;
  V << 1, 2;
  G << 1;
  const auto elu = elu_features<float>();
  for (const bool causal : {false, true}) {
    LinearConfig c;
    c.causal = causal;
    // elu + 1 grows linearly: phi(q) . phi(k) = 2e40 would overflow float; the stabilised
    // features do not, and the output and gradients are finite.
    const auto r = linear_attention_forward<float>(Q, K, V, elu, c);
    CHECK(r.output(0, 0) == Approx(1).epsilon(1e-6));
    const auto g = linear_attention_backward<float>(Q, K, V, elu, c, r, G);
    CHECK((g.dQ.allFinite() && g.dK.allFinite() && g.dV.allFinite()));
  }
  // FAVOR+: |x|^2 = 2e60 overflows float; named for the query and for the key.
  const auto favor = favor_features<float>(16, 2, 0);
  Matrix big(1, 2), bigK(2, 2), small = Matrix::Ones(1, 2);
  big << 1e30f, 1e30f;
  bigK << 1e30f, 1e30f, 1, 1;
  CHECK_THROWS_WITH(linear_attention_forward<float>(big, bigK, V, favor),
                    Contains("query row 0 overflows the FAVOR+ feature map"));
  CHECK_THROWS_WITH(linear_attention_forward<float>(small, bigK, V, favor),
                    Contains("key row 0 overflows the FAVOR+ feature map"));
  // S = sum_j phi(k_j) v_j^T overflows for values near the float maximum...
  const Matrix Qs = Matrix::Ones(1, 2), Ks = Matrix::Ones(2, 2);
  const Matrix Vhuge = Matrix::Constant(2, 1, 3e38f);
  CHECK_THROWS_WITH(linear_attention_forward<float>(Qs, Ks, Vhuge, elu), Contains("value: the key-value state"));
  // ...but 1e37 is representable: equal values average to exactly themselves, gradients finite.
  const Matrix Vbig = Matrix::Constant(2, 1, 1e37f);
  const auto f = linear_attention_forward<float>(Qs, Ks, Vbig, elu);
  CHECK(f.output(0, 0) == Approx(1e37).epsilon(1e-6));
  const auto g = linear_attention_backward<float>(Qs, Ks, Vbig, elu, {}, f, G);
  CHECK(g.dQ.allFinite());
  CHECK(g.dK.allFinite());
  CHECK(g.dV.allFinite());
  CHECK(g.dV.sum() == Approx(1).epsilon(1e-6));  // the weights sum to 1
  // dL/d(denominator) = -G . O / den = -1e38 * 1e37 / den overflows: the gradient is named.
  CHECK_THROWS_WITH(linear_attention_backward<float>(Qs, Ks, Vbig, elu, {}, f, Matrix::Constant(1, 1, 1e38f)),
                    Contains("grad_output: the gradient dQuery overflowed at (0, 0)"));
}
