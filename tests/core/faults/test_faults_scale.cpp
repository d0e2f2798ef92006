// Fault cases about the softmax scale (tests/data/fault_cases.json B09, B10): the default is
// 1/sqrt(d_k) of the head, and an explicit scale, 0 included, is used as given.
#include <optional>

#include "faults/checks.hpp"

using namespace qktest::faults;
using qktest::fault_case;

TEST_CASE("B09: the default scale is 1/sqrt(head_dim), not 1/sqrt(d_model), 1/sqrt(num_heads), "
          "1/head_dim or a division by head_dim^-0.5",
          "[faults][scale]") {
  // One head of d_model 8, 2 heads, head_dim 4.
  const auto B = fault_case("B09");
  const auto in = B["inputs"], ex = B["expected"];
  const Mat<double> Q = as(in["q"]), K = as(in["k"]), V = as(in["v"]);
  AttentionConfig<double> c;  // scaled_dot, scale unset
  const auto r = attention_forward<double>(Q, K, V, {}, c);
  CHECK(r.scale == ex["scale"].number());
  check_sig6(r.raw_scores, ex["raw_scores"], eps_of<double>());
  check_sig6(r.weights, ex["weights"], eps_of<double>());
  check_sig6(r.output, ex["out"], eps_of<double>());
  // Each wrong scale, passed explicitly, gives the case's buggy weights (and differs).
  const auto wrong = B["buggy"]["wrong_scales"];
  for (std::size_t i = 0; i < wrong.size(); ++i) {
    AttentionConfig<double> e;
    e.scale = wrong[i]["scale"].number();
    const auto b = attention_forward<double>(Q, K, V, {}, e);
    INFO("scale " << *e.scale << ": " << wrong[i]["why"].text());
    check_sig6(b.weights, wrong[i]["weights"], eps_of<double>());
    CHECK(std::abs(b.weights(0, 0) - r.weights(0, 0)) > 1e-3);
  }
}

TEST_CASE("B10: an explicit scale reaches the computation (1.0 and 0.25 differ from the "
          "default 0.5); scale 0 is used as given and gives uniform weights",
          "[faults][scale]") {
  const auto B = fault_case("B10");
  const auto in = B["inputs"];
  const auto table = B["expected"]["by_scale"];  // scale null: the default
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const Mat<T> Q = as<T>(in["q"]), K = as<T>(in["k"]), V = as<T>(in["v"]);
    std::vector<Mat<T>> seen;
    for (std::size_t i = 0; i < table.size(); ++i) {
      AttentionConfig<T> c;
      if (!table[i]["scale"].is_null()) c.scale = table[i]["scale"].number();
      const auto r = attention_forward<T>(Q, K, V, {}, c);
      INFO("scale " << (c.scale ? std::to_string(*c.scale) : "default"));
      check_sig6(r.weights, table[i]["weights"], eps_of<T>());
      CHECK(r.output == r.weights);  // v = I
      for (const auto& prev : seen) CHECK(prev != r.weights);  // every scale is visible
      seen.push_back(r.weights);
    }
  };
  run(float{});
  run(double{});
}
