// The float tiled additive dL/dtau from logits in double (cpu/temperature_grad.hpp,
// double_logit_row; docs/RELIABILITY.md, "Fixed on 2026-12-07, twenty-third session"). Four
// fuzz inputs at tau = 1 whose rows' error bounds looked ordinary left the float rows' dL/dtau
// 1.02-2.4 times the fuzz harness's bar: the fused tanh's ~1.3 eps per unit and each z's
// rounding moved every weight and difference. The right value is the double core's; the tiled
// path now forms x = (z_j - z0) / tau and the weights from the same double tiles that the
// double core's logits agree with to ~1e-13, so only dP (float, as in the core) is left.
#include <catch2/catch.hpp>

#include <cmath>

#include "faults/harness_bar.hpp"
#include "faults/tiled_check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"
#include "support/random.hpp"

using namespace qkscope;

TEST_CASE("additive dL/dtau beside a dO of 1.6e38, tau 1 (fuzzer -t1, twenty-first session)",
          "[faults][reliability][tiled][score]") {
  // Row 5's share -2.67363e35 carries dL/dtau; the float row gave -2.67359e35 (1.3e-5 relative,
  // 1.24 times the bar). In double: 2.6e-7 (dP's float rounding).
  AttentionConfig<float> c;
  c.score = "additive";
  const Matrix Q = qktest::mat<float>({{-0.252647072f, -0.277647078f, -0.277647078f, -0.277647078f, -0.277647078f},
                                       {-0.397640467f, 0.200000003f, 0.100000001f, 0.100000001f, 0.100000001f},
                                       {-0.369519055f, 0.397354126f, -0.221508786f, 0.205483481f, 0.100000001f},
                                       {-0.275769055f, 0, 0, 0, -0.200000003f},
                                       {0.206240088f, 0.100000001f, 0, -0.400000006f, -0.400000006f},
                                       {0, -0.374096692f, -0.0266056303f, -0.0266666654f, -0.0266666654f},
                                       {-0.0281250011f, 0, 0, 0, -0.398541659f}}),
               K = qktest::mat<float>({{-0.0266666654f, -0.0266666654f, -0.0266666654f, -0.0266666654f, -0.0266666654f},
                                       {-0.0266666654f, -0.400000006f, 0, 0, 0},
                                       {0, 0, 0.200000003f, -0.205355763f, -0.0266666654f},
                                       {-0.0266666654f, -0.372634798f, 0, -0.399844259f, 0.100000001f},
                                       {0.100000001f, 0.100000001f, 59.2999992f, -0.200000003f, 0.206240088f},
                                       {0.100000001f, 0, -0.400000006f, 0, 0},
                                       {0, 0, 0, 0, -0.371875018f},
                                       {0.400000006f, -0.0266666654f, -0.0266666654f, -0.0266666654f, -0.400000006f}}),
               V = qktest::mat<float>({{0, 0, 0},
                                       {0, -0.266666651f, -0.266666651f},
                                       {-0.266666651f, -0.266666651f, -0.266666651f},
                                       {-0.266666651f, -0.266666889f, 0},
                                       {0, 0, 0},
                                       {0, 0, 0},
                                       {0, 2, -2.05355763f},
                                       {-0.266666651f, -0.266635656f, 1.77254915f}}),
               dO = qktest::mat<float>({{1.77254915f, 1.77254915f, 1.77254915f},
                                        {1.77254915f, 1.77254915f, 1.77254915f},
                                        {1.77254915f, 1.77254915f, 1.77254915f},
                                        {1.77251768f, -3.72634792f, 0},
                                        {-3.99844265f, -2, 1},
                                        {1, 593, 1.57105577e+38f},
                                        {0, 2.05490208f, 1}});
  const auto p = qktest::additive_params(
      qktest::mat<float>({{-0.0580730215f, -0.723809302f, 0.200242907f, -0.0766349584f, 0.24210912f},
                          {-0.670835197f, 0.424483299f, 1.1381799f, -0.467917889f, 0.0150036486f},
                          {-0.126128778f, 0.518084645f, -0.0905319303f, -0.163908884f, -0.101325065f},
                          {0.581921279f, 0.171774819f, 0.0379676223f, 0.378865629f, 0.502957642f}}),
      qktest::mat<float>({{0.323414385f, -0.298549324f, 0.0434248894f, 0.0297296718f, 0.395906866f},
                          {-0.309940755f, -0.625939012f, -0.0699176565f, 0.396014601f, 0.000262538641f},
                          {-0.819138408f, -0.210319281f, -0.215650976f, 0.0295533538f, -0.220593438f},
                          {0.0256989636f, -0.19769685f, -0.477800965f, -0.303574502f, -0.767998934f}}),
      {-0.753581345f, -0.47149685f, -0.179465786f, 0.202081606f}, {0, 2.05490398f, 0, 0});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-6, {1, 3, 8});
}

TEST_CASE("additive dL/dtau with queries of 1e23 and a T5 table, scale 1e-3 (fuzzer -e4, sixteenth session)",
          "[faults][reliability][tiled][score]") {
  // -1.07493e15 where the double core has -1.07423e15 (6.6e-4 relative, 2.42 times the bar):
  // row 0's z, each rounded beside a common part, moved its weights. In double: 2e-12.
  AttentionConfig<float> c;
  c.score = "additive";
  c.scale = 0.001f;
  c.bias.t5 = T5Buckets{true, 2, 20};
  c.bias.t5_table = qktest::vec({0, 0});
  const Matrix Q = qktest::mat<float>({{1.54742512e+23f}, {1.54742512e+23f}, {1.54742512e+23f}, {9.90352078e+24f},
                                       {0.00100000005f}, {0}, {-0.00307006855f}}),
               K = qktest::mat<float>({{0.00205482403f}, {0.00100000005f}, {0.00206241151f}, {-0.00372634805f}, {0},
                                       {-0.00399844302f}, {0.00100000005f}, {0.00100000005f}}),
               V = qktest::mat<float>({{1, -2, 2},
                                       {1, 3.99826145f, 1},
                                       {1, 1, 1},
                                       {-2, -1.80837917f, 1},
                                       {2.41785164e+24f, 1, -3},
                                       {-3, 2.05481529f, 1},
                                       {1, 1, 2},
                                       {1, 2, 0}}),
               dO = qktest::mat<float>({{1, -1, 0},
                                        {-4.7019774e-38f, -4.7019774e-38f, -4.7019774e-38f},
                                        {-4.7019774e-38f, -4.7019774e-38f, -4.7019774e-38f},
                                        {-4.7019774e-38f, -4.7019774e-38f, -4.7019774e-38f},
                                        {-8.67361738e-19f, 0, 0},
                                        {0, 0, -0.706755161f},
                                        {0, 0, 0}});
  const auto p = qktest::additive_params(
      qktest::mat<float>({{-0.452757746f}, {0}, {-0.988604128f}, {0.252462715f}}),
      qktest::mat<float>({{1.59999359f}, {0.0942334011f}, {-1.06935346f}, {-0.825064421f}}),
      {0.0558370128f, 0.496657968f, -0.149375439f, -0.0912888274f}, {0, 0, 0, 0});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-9, {1, 3, 8});
}

TEST_CASE("additive dL/dtau beside a dO of 1.2e38 over keys tied at 0.01 (fuzzer -s2, twentieth session)",
          "[faults][reliability][tiled][score]") {
  // -3.41293e33 where the double core has -3.41285e33 (2.4e-5 relative, 1.02 times the bar).
  // In double: 1.9e-8.
  AttentionConfig<float> c;
  c.score = "additive";
  const Matrix Q = qktest::mat<float>({{1.54742501e+24f}, {0.0399999991f}, {0.039955616f}, {1.54742501e+24f},
                                       {6.18970006e+24f}, {0.0206240751f}, {0.00999999978f}}),
               K = qktest::mat<float>({{0.039698191f}, {-0.0399902351f}, {0.00999999978f}, {0.00999999978f},
                                       {0.00999999978f}, {0.00999999978f}, {0.00999999978f}, {0}}),
               V = qktest::mat<float>({{1, 3.99826145f, 1},
                                       {1, 1, 2},
                                       {-2, 2.03537083f, 1},
                                       {2.05880833f, -3, -3},
                                       {2.05481529f, 1, 1},
                                       {1, 2, 1},
                                       {2, 1, 1},
                                       {0, 2.02138567f, 3.99989796f}}),
               dO = qktest::mat<float>({{2.06247044f, 1, 3.99243116f},
                                        {1.22283956e+38f, 0, 0},
                                        {-3.99844265f, 3.99826145f, 1},
                                        {1, 1, 1},
                                        {-2, 1.00974196e-28f, 1},
                                        {1, 2.41785164e+24f, 2.05485773f},
                                        {4, -2, 2.06240749f}});
  const auto p = qktest::additive_params(
      qktest::mat<float>({{1.11743903f}, {-0.0856055468f}, {-1.30508626f}, {-0.71463716f}}),
      qktest::mat<float>({{0.045198746f}, {-0.412730396f}, {1.92233872f}, {-0.383333147f}}),
      {0.0332600102f, -3.99844265f, -0.615352809f, 1.12627172f}, {0, 0, 0, 0});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-7, {1, 3, 8});
}

TEST_CASE("additive dL/dtau under a softcap of 0.5, tau 1 (fuzzer -m2, eighteenth session)",
          "[faults][reliability][tiled][score]") {
  // -0.532833 where the double core has -0.53282 (2.4e-5 relative, 1.10 times the bar). In
  // double: 2.2e-7.
  AttentionConfig<float> c;
  c.score = "additive";
  c.bias.softcap = 0.50000522242940593;
  const Matrix Q = qktest::mat<float>({{1, 1, 1}, {1, 0, 4}}),
               K = qktest::mat<float>({{3.99988222f, 0, -3.99844265f},
                                       {1, 1, 1},
                                       {1, 0, 1},
                                       {2, 1, 2.06076145f},
                                       {3.99826145f, 1, 1},
                                       {1, 1, 0},
                                       {0, 0, 0},
                                       {0, 0, 0}}),
               V = qktest::mat<float>({{0, 0, -1},
                                       {1, -3, 0},
                                       {0, -3.99999905f, 1},
                                       {2, 2.05490208f, 0},
                                       {-0.0614051819f, 1, 1},
                                       {2, -2, 1},
                                       {0, -1.11372542f, -1.10134792f},
                                       {1, 1, 0}}),
               dO = qktest::mat<float>({{0, 0, 0}, {-3, 2.24207754e-44f, -653}});
  const auto p = qktest::additive_params(
      qktest::mat<float>({{-0.088612169f, -0.921111703f, -0.151500925f}, {-0.897427499f, 0.862014234f, 0.312918216f}}),
      qktest::mat<float>({{-0.103612363f, 0.278130889f, -0.0780493468f}, {-0.336470872f, -0.379730135f, 0.275346637f}}),
      {-0.682868004f, 0.133451745f}, {0, 0});
  qktest::check_dtau(Q, K, V, dO, p, c, 1e-6, {1, 3, 8});
}

TEST_CASE("additive dL/dtau from double logits: random shapes, tied keys, huge values, masks (seeded sweep)",
          "[faults][reliability][tiled][score]") {
  // Shapes as the fuzz findings': L_q 1-7, L_k 2-9, d 1-5, d_h 1-4, entries N(0, 0.3) or one
  // of a few exact values (ties across rows and columns), sometimes two equal keys, a value
  // of 2^60-2^119 and a dO of 2^60-2^126; tau 1 or 10^-U(0,1); sometimes a softcap,
  // a causal mask or key padding (fully masked rows). dL/dtau (with the output and dV) under
  // the fuzz harness's bar. On the code before (float rows, exact differences where their
  // bounds called for them) 4 of these 42,000 cases fail (13 of 100,000 with this generator, at
  // tau 0.11 to 1; none after). At tau below 0.01 the same generator finds forward outputs past
  // the bar on both codes (2 of 100,000, d_h 1: the open additive output kind), so tau stays
  // at 0.1 and above here.
  detail::Rng rng(20261207);
  auto below = [&](int n) { return Eigen::Index(rng.uniform() * n); };  // 0 .. n - 1
  const float vals[] = {0.0f, 0.1f, -0.2667f, 0.4f, 1.0f, -1.0f, 0.0224f, 2.0f};
  int ran = 0;
  for (int n = 0; n < 42000; ++n) {
    const Eigen::Index L_q = 1 + below(7), L_k = 2 + below(8), d = 1 + below(5), d_h = 1 + below(4),
                       d_v = 1 + below(3);
    Matrix Q = qktest::randn<float>(rng, L_q, d, 0.3), K = qktest::randn<float>(rng, L_k, d, 0.3);
    for (Eigen::Index i = 0; i < Q.size(); ++i)
      if (rng.uniform() < 0.4) Q.data()[i] = vals[below(8)];
    for (Eigen::Index i = 0; i < K.size(); ++i)
      if (rng.uniform() < 0.4) K.data()[i] = vals[below(8)];
    if (rng.uniform() < 0.3) K.row(below(int(L_k))) = K.row(below(int(L_k)));
    Matrix V = qktest::randn<float>(rng, L_k, d_v, 2.0), dO = qktest::randn<float>(rng, L_q, d_v, 2.0);
    auto huge = [&](int lo, int span) { return float(std::ldexp(rng.uniform() < 0.5 ? 1.0 : -1.0, lo + int(below(span)))); };
    if (rng.uniform() < 0.5) V(below(int(L_k)), below(int(d_v))) = huge(60, 60);
    if (rng.uniform() < 0.5) dO(below(int(L_q)), below(int(d_v))) = huge(60, 67);
    ScoreParams<float> p;
    p.W_q = qktest::randn<float>(rng, d_h, d, 0.6);
    p.W_k = qktest::randn<float>(rng, d_h, d, 0.6);
    p.v = qktest::randn_vec<float>(rng, d_h);
    p.b = Vector::Zero(d_h);
    for (Eigen::Index h = 0; h < d_h; ++h)
      if (rng.uniform() < 0.3) p.b(h) = float(2 * rng.uniform());
    AttentionConfig<float> c;
    c.score = "additive";
    c.temperature = rng.uniform() < 0.5 ? 1.0 : std::pow(10.0, -rng.uniform());
    if (rng.uniform() < 0.2) c.bias.softcap = 0.5 + 4 * rng.uniform();
    if (rng.uniform() < 0.1) c.mask.causal = true;
    if (rng.uniform() < 0.1) c.mask.key_length = below(int(L_k));  // 0: every row fully masked
    INFO("case " << n << ": L_q " << L_q << ", L_k " << L_k << ", d " << d << ", d_h " << d_h << ", tau "
                 << c.temperature);
    ran += qktest::sweep_case_under_bar(Q, K, V, dO, p, c, [&] { return qktest::one_thread(1 + below(4)); },
                                     {.dqk = false, .weights = false, .vectors = false});
  }
  CHECK(ran > 20000);  // most cases reach the tiled path
}
