// Multi-head attention (mha/multi_head.hpp) forward as a specification: against the
// plain-loop reference of mha_case.hpp under the one tolerance rule (float fast path vs
// naive float reference vs double reference); GQA/MQA against MHA with the KV heads
// repeated explicitly (only in this test); cross-attention; per-sequence key lengths
// (0 included); per-head ALiBi slopes.
#include "mha/mha_case.hpp"
#include "support/gradcheck.hpp"

using namespace qktest::mha;

TEST_CASE("multi-head attention equals a plain-loop reference for scaled_dot and bilinear scores",
          "[mha]") {
  const Dims dims[] = {
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // everything of size 1
      {2, 4, 4, 8, 8, 4, 4, 3, 2, 5},  // B = 2, odd d_k
      {3, 5, 5, 7, 7, 3, 3, 5, 4, 2},  // odd everything
  };
  for (const char* score : {"scaled_dot", "bilinear"})
    for (const Dims& d : dims)
      for (bool self : {false, true}) {
        INFO("score " << score << ", B=" << d.B << " L=" << d.L_q << " H=" << d.H << " d_k=" << d.d_k
                      << (self ? ", self-attention" : ""));
        check_against_reference(make_case(d, score, 1 + d.H, self));
      }
}

TEST_CASE("GQA (H=4, H_kv=2) and MQA (H_kv=1) equal MHA with the KV heads repeated explicitly",
          "[mha][gqa]") {
  for (Eigen::Index H_kv : {2, 1}) {
    INFO("H = 4, H_kv = " << H_kv);
    const Dims d{2, 3, 5, 6, 4, 4, H_kv, 3, 2, 3};
    Case gqa = make_case(d, "bilinear", 17);
    gqa.key_lengths = {5, 3};
    // The repeated version: head h gets its own copy of KV head h / (H / H_kv).
    Case rep = gqa;
    rep.d.H_kv = d.H;
    const Eigen::Index group = d.H / H_kv;
    rep.w.W_K.resize(d.d_model_kv, d.H * d.d_k);
    rep.w.W_V.resize(d.d_model_kv, d.H * d.d_v);
    for (Eigen::Index h = 0; h < d.H; ++h) {
      rep.w.W_K.middleCols(h * d.d_k, d.d_k) = gqa.w.W_K.middleCols((h / group) * d.d_k, d.d_k);
      rep.w.W_V.middleCols(h * d.d_v, d.d_v) = gqa.w.W_V.middleCols((h / group) * d.d_v, d.d_v);
    }
    // Forward: GQA float vs repeated float vs repeated double, and the loop reference.
    const auto fast = multi_head_forward<float>(gqa.X_q.cast<float>(), gqa.X_kv.cast<float>(),
                                                cast_weights<float>(gqa.w), config_of<float>(gqa));
    const auto rep32 = multi_head_forward<float>(rep.X_q.cast<float>(), rep.X_kv.cast<float>(),
                                                 cast_weights<float>(rep.w), config_of<float>(rep));
    const auto rep64 = multi_head_forward<double>(rep.X_q, rep.X_kv, rep.w, config_of<double>(rep));
    CHECK_MATCHES_REFERENCE("output vs repeated KV", fast.output, rep32.output, rep64.output);
    for (Eigen::Index h = 0; h < d.H; ++h)
      CHECK_MATCHES_REFERENCE("weights of head " + std::to_string(h) + " vs repeated KV",
                              fast.head(1, h).weights, rep32.head(1, h).weights, rep64.head(1, h).weights);
    check_against_reference(gqa);
    CHECK(fast.K.cols() == H_kv * d.d_k);  // K is projected once per KV head

    // Backward: the shared KV head receives the sum over its group of the repeated grads.
    detail::Rng rng(5);
    const MatrixD G = qktest::randn(rng, d.B * d.L_q, d.d_out);
    const auto cg = config_of<double>(gqa), cr = config_of<double>(rep);
    const auto fg = multi_head_forward<double>(gqa.X_q, gqa.X_kv, gqa.w, cg);
    const auto gg = multi_head_backward<double>(gqa.X_q, gqa.X_kv, gqa.w, cg, fg, G);
    const auto gr = multi_head_backward<double>(rep.X_q, rep.X_kv, rep.w, cr, rep64, G);
    MatrixD dW_K = MatrixD::Zero(d.d_model_kv, H_kv * d.d_k), dW_V = MatrixD::Zero(d.d_model_kv, H_kv * d.d_v);
    for (Eigen::Index h = 0; h < d.H; ++h) {
      dW_K.middleCols((h / group) * d.d_k, d.d_k) += gr.dW_K.middleCols(h * d.d_k, d.d_k);
      dW_V.middleCols((h / group) * d.d_v, d.d_v) += gr.dW_V.middleCols(h * d.d_v, d.d_v);
    }
    CHECK_GRAD("dW_K = group sum", gg.dW_K, dW_K);
    CHECK_GRAD("dW_V = group sum", gg.dW_V, dW_V);
    CHECK_GRAD("dX_kv", gg.dX_kv, gr.dX_kv);
    CHECK_GRAD("dX_q", gg.dX_q, gr.dX_q);
    CHECK_GRAD("dW_Q", gg.dW_Q, gr.dW_Q);
    CHECK_GRAD("dW_O", gg.dW_O, gr.dW_O);
    for (Eigen::Index h = 0; h < d.H; ++h)
      CHECK_GRAD("dW (bilinear) of head " + std::to_string(h), gg.dscore_params[std::size_t(h)].W,
                 gr.dscore_params[std::size_t(h)].W);
  }
}

TEST_CASE("cross-attention with L_q != L_k and d_model != d_model_kv matches the reference",
          "[mha][cross]") {
  const Dims dims[] = {
      {2, 3, 6, 5, 4, 2, 2, 3, 3, 4},  // L_q < L_k
      {2, 6, 2, 4, 7, 3, 1, 2, 5, 3},  // L_q > L_k, MQA
      {1, 1, 5, 3, 2, 2, 2, 1, 1, 1},  // one query (decoding)
  };
  for (const char* score : {"scaled_dot", "bilinear"})
    for (const Dims& d : dims)
      for (bool causal : {false, true}) {
        INFO("score " << score << ", L_q=" << d.L_q << " L_k=" << d.L_k << " d_model=" << d.d_model
                      << " d_model_kv=" << d.d_model_kv << (causal ? ", causal bottom-right" : ""));
        Case c = make_case(d, score, 23);
        c.causal_bottom_right = causal;
        check_against_reference(c);
      }
}

TEST_CASE("per-sequence key lengths mask padded keys; key length 0 gives zero output and gradients",
          "[mha][padding]") {
  const Dims d{3, 4, 5, 6, 6, 2, 2, 3, 2, 3};
  Case c = make_case(d, "scaled_dot", 31);
  c.key_lengths = {5, 2, 0};
  check_against_reference(c);

  const auto cfg = config_of<double>(c);
  const auto f = multi_head_forward<double>(c.X_q, c.X_kv, c.w, cfg);
  for (Eigen::Index h = 0; h < d.H; ++h) {
    CHECK(f.head(1, h).weights.rightCols(3).isZero(0));  // keys 2.. of sequence 1 unseen
    CHECK(f.head(2, h).weights.isZero(0));
    CHECK((f.head(2, h).logsumexp.array() == -kInf).all());
    CHECK((f.head(2, h).entropy.array() == 0).all());
  }
  CHECK(f.concat.middleRows(2 * d.L_q, d.L_q).isZero(0));
  CHECK(f.output.middleRows(2 * d.L_q, d.L_q).isZero(0));  // 0 projected by W_O is 0
  CHECK_FALSE(f.output.middleRows(1 * d.L_q, d.L_q).isZero(0));

  detail::Rng rng(8);
  const MatrixD G = qktest::randn(rng, d.B * d.L_q, d.d_out);
  const auto g = multi_head_backward<double>(c.X_q, c.X_kv, c.w, cfg, f, G);
  CHECK(g.dX_q.middleRows(2 * d.L_q, d.L_q).isZero(0));
  CHECK(g.dX_kv.middleRows(2 * d.L_k, d.L_k).isZero(0));
  CHECK(g.dX_kv.middleRows(1 * d.L_k + 2, 3).isZero(0));  // padded keys of sequence 1
  CHECK_FALSE(g.dX_kv.middleRows(1 * d.L_k, 2).isZero(0));
}

TEST_CASE("ALiBi gives head h the slope alibi_slopes(H)[h] (H = 8 and H = 12)", "[mha][alibi]") {
  for (Eigen::Index H : {8, 12}) {
    INFO("H = " << H);
    // Press et al. 2022, §3: H = 8 -> 2^-1 ... 2^-8; H = 12 -> those 8, then every other
    // slope of the H = 16 sequence 2^-0.5, 2^-1, ...: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    std::vector<double> expected;
    for (int h = 0; h < 8; ++h) expected.push_back(std::pow(2.0, -(h + 1)));
    for (int h = 0; H == 12 && h < 4; ++h) expected.push_back(std::pow(2.0, -0.5 - h));
    const auto slopes = alibi_slopes(int(H));
    REQUIRE(slopes.size() == expected.size());
    for (std::size_t h = 0; h < slopes.size(); ++h) CHECK(slopes[h] == Approx(expected[h]).epsilon(1e-15));

    const Dims d{2, 4, 6, 5, 5, H, H == 8 ? 2 : H, 2, 2, 3};
    Case c = make_case(d, "scaled_dot", 41);
    c.slopes = expected;
    check_against_reference(c);
    c.causal_bottom_right = true;
    check_against_reference(c);

    // Per head, ALiBi changes the scores by exactly -m_h |j - (i + o)|.
    const auto with = multi_head_forward<double>(c.X_q, c.X_kv, c.w, config_of<double>(c));
    Case plain = c;
    plain.slopes.clear();
    const auto without = multi_head_forward<double>(c.X_q, c.X_kv, c.w, config_of<double>(plain));
    const Eigen::Index off = d.L_k - d.L_q;
    for (Eigen::Index h = 0; h < H; ++h)
      for (Eigen::Index i = 0; i < d.L_q; ++i)
        for (Eigen::Index j = 0; j < d.L_k; ++j)
          CHECK(with.head(1, h).scores(i, j) - without.head(1, h).scores(i, j) ==
                Approx(-expected[std::size_t(h)] * double(std::abs(j - (i + off)))).margin(1e-12));
  }
}
