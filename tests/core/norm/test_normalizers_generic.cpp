// Generic tests over the registry of normalizers (TEMPLATE_LIST_TEST_CASE over Normalizers):
// each one matches the double reference on boundary shapes with its options set away from
// their defaults, gives a fully masked row zero weights, output and gradient, and is reachable
// by name with its options described as data (what the wasm bindings export).
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <type_traits>

#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"

using namespace qkscope;

// Update with the list in norm/registry.hpp: a normalizer added there without tests fails here.
static_assert(std::tuple_size_v<Normalizers> == 5, "a normalizer was added or removed: update the tests");

namespace {

/// Sets every numeric option one above its lower bound (top_k = 2, seed = 1), so that the
/// test runs each normalizer away from its defaults; booleans keep their default.
template <class N>
void set_options(NormalizerOptions& all) {
  norm::for_each_field(all.get<N>(), [](const auto& f, auto& v) {
    using M = std::decay_t<decltype(v)>;
    if constexpr (!std::is_same_v<M, bool>) v = M(f.min + 1);
  });
}

template <class T, class N>
AttentionConfig<T> config_for(const MaskSpec& mask) {
  AttentionConfig<T> c;
  c.score = "dot";
  c.normalizer = N::name;
  c.temperature = 0.8;
  c.mask = mask;
  set_options<N>(c.norm_options);
  return c;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("every normalizer matches the double reference, fully masked rows included",
                        "[norm][generic]", Normalizers) {
  using N = TestType;
  detail::Rng rng(5);
  for (const qktest::Shape& s : qktest::kShapes) {
    MaskSpec none, causal, empty_row;
    causal.causal = true;
    causal.alignment = CausalAlignment::bottom_right;
    empty_row.keep = KeepMask::Constant(s.L_q, s.L_k, true);
    empty_row.keep.row(s.L_q - 1).setConstant(false);
    for (const MaskSpec& mask : {none, causal, empty_row}) {
      const MatrixD Q = qktest::randn(rng, s.L_q, s.d_q), K = qktest::randn(rng, s.L_k, s.d_q),
                    V = qktest::randn(rng, s.L_k, s.d_v);
      const auto c64 = config_for<double, N>(mask);
      const auto c32 = config_for<float, N>(mask);
      INFO(N::name << ", L_q=" << s.L_q << " L_k=" << s.L_k << " d=" << s.d_q
                   << (mask.causal ? ", causal" : mask.keep.size() ? ", last row fully masked" : ""));
      const auto ref = reference::attention<double>(Q, K, V, {}, c64);
      const auto naive = reference::attention<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), {}, c32);
      const auto fast = attention_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), {}, c32);
      CHECK_MATCHES_REFERENCE("weights", fast.weights, naive.weights, ref.weights);
      CHECK_MATCHES_REFERENCE("output", fast.output, naive.output, ref.output);
      for (Eigen::Index i = 0; i < s.L_q; ++i) {
        const bool any = (ref.masked_scores.row(i).array() > -std::numeric_limits<double>::infinity()).any();
        CHECK(fast.weights.row(i).sum() == Approx(any ? 1.0 : 0.0).margin(1e-6));
        CHECK((fast.weights.row(i).array() >= 0).all());
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("every normalizer gives a fully masked row zero weights, output and gradient",
                        "[norm][generic]", Normalizers) {
  using N = TestType;
  detail::Rng rng(9);
  const MatrixD Q = qktest::randn(rng, 3, 4), K = qktest::randn(rng, 5, 4), V = qktest::randn(rng, 5, 2);
  MaskSpec mask;
  mask.keep = KeepMask::Constant(3, 5, true);
  mask.keep.row(1).setConstant(false);
  const auto cfg = config_for<double, N>(mask);
  const auto f = attention_forward<double>(Q, K, V, {}, cfg);
  const auto g = attention_backward<double>(Q, K, V, {}, cfg, f, MatrixD::Ones(3, 2));
  INFO(N::name);
  CHECK(f.weights.row(1).isZero(0));
  CHECK(f.output.row(1).isZero(0));
  CHECK(g.dQ.row(1).isZero(0));
  CHECK(f.logsumexp(1) == -std::numeric_limits<double>::infinity());
  CHECK(std::isfinite(g.dtemperature));
}

TEMPLATE_LIST_TEST_CASE("every normalizer is found by name and describes its options as data",
                        "[norm][generic]", Normalizers) {
  using N = TestType;
  bool visited = false;
  visit_normalizer(N::name, [&](auto n) { visited = std::is_same_v<decltype(n), N>; });
  CHECK(visited);

  const auto infos = normalizer_infos();
  const auto* info = &infos[detail::IndexIn<N, Normalizers>::value];
  CHECK(std::string(info->name) == N::name);
  CHECK(info->soft == N::soft);
  const typename N::Options defaults{};
  std::size_t k = 0;
  norm::for_each_field(defaults, [&](const auto& f, const auto& v) {
    REQUIRE(k < info->options.size());
    CHECK(std::string(info->options[k].name) == f.name);
    CHECK(info->options[k].default_value == double(v));
    ++k;
  });
  CHECK(k == info->options.size());

  // Defaults are valid; a number below its bound is rejected, naming the option.
  CHECK_NOTHROW(norm::validate_options(N::name, defaults));
  norm::for_each_field(defaults, [&](const auto& f, const auto& v) {
    using M = std::decay_t<decltype(v)>;
    if constexpr (!std::is_same_v<M, bool>) {
      if (f.min > double(std::numeric_limits<M>::lowest())) {
        AttentionConfig<double> c;
        c.normalizer = N::name;
        c.norm_options.template get<N>().*(f.member) = M(f.min - 1);
        const MatrixD X = MatrixD::Identity(2, 2);
        CHECK_THROWS_WITH(attention_forward<double>(X, X, X, {}, c),
                          Catch::Contains(f.name) && Catch::Contains("must be >="));
      }
    }
  });
}
