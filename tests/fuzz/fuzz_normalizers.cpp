// tests/fuzz/fuzz_normalizers.cpp — libFuzzer harness over one row of logits through every
// normalizer of the registry (norm/registry.hpp), float and double, with Gumbel noise
// drawn from the seeded generator or injected from Exp(1) draws that may be 0.
// Logits: ordinary, huge (up to FLT_MAX), denormal, -inf (masked), all equal, all masked.
// Properties (violations trap):
//   - weights finite, in [0, 1], summing to 1 when some logit is finite, all 0 otherwise;
//   - weights match the double reference (reference::normalize) under the test suite's
//     tolerance rule, with the reference run in float as the bar (ties of hard / top-k go
//     to the lowest index in both);
//   - backward (dL/dz and dL/dtau) finite for finite dL/dp, 0 on masked entries;
//   - temperatures: from 1e-40 (float denormal) to 3.4e38.
#include <stdexcept>

#include "case.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"

using namespace qkscope;

namespace {

[[noreturn]] void row_finding(const std::string& what, const char* norm, const std::vector<float>& z, float tau) {
  std::string zs;
  for (float x : z) zs += std::to_string(x) + " ";
  std::fprintf(stderr, "FUZZ FINDING: %s\n  normalizer %s, tau %.9g, z = [ %s]\n", what.c_str(), norm, double(tau),
               zs.c_str());
  __builtin_trap();
}

float row_value(FuzzedDataProvider& f) {
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) return -std::numeric_limits<float>::infinity();
  const float x = qkfuzz::value(f);
  return std::isnan(x) || x == std::numeric_limits<float>::infinity() ? 0.0f : x;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider f(data, size);
  const auto infos = normalizer_infos();
  const int n = f.ConsumeIntegralInRange<int>(1, 12);
  std::vector<float> z(n), dp(n), noise(n);
  const bool equal = f.ConsumeIntegralInRange<int>(0, 7) == 0;
  for (int j = 0; j < n; ++j) z[j] = equal && j ? z[0] : row_value(f);
  for (int j = 0; j < n; ++j) dp[j] = f.ConsumeFloatingPointInRange<float>(-4, 4);
  // Gumbel noise: the generator's, or g = -log(E) from injected Exp(1) draws (E = 0 included).
  detail::Rng rng(f.ConsumeIntegral<std::uint64_t>());
  const bool injected = f.ConsumeBool();
  for (int j = 0; j < n; ++j)
    noise[j] = float(injected ? detail::gumbel_from_exponential(f.ConsumeIntegralInRange<int>(0, 3) == 0
                                                                     ? 0.0
                                                                     : f.ConsumeFloatingPointInRange<double>(0, 20))
                              : rng.gumbel());
  const double tau_d = qkfuzz::edge_number(f);
  const float tau = float(tau_d);
  if (!(tau > 0) || !std::isfinite(tau)) return 0;  // the callers reject these (attention.hpp)
  NormalizerOptions opt;
  opt.get<norm::TopKSoftmax>().top_k = f.ConsumeIntegralInRange<int>(1, n + 1);
  opt.get<norm::GumbelSoftmax>().hard = f.ConsumeBool();
  bool any_valid = false;
  for (float x : z) any_valid = any_valid || norm::is_valid(x);

  for (const auto& info : infos) {
    std::vector<float> p(n), dz(n);
    float dtau = 0;
    visit_normalizer(info.name, [&](auto N) {
      using NN = decltype(N);
      const norm::Row<float, typename NN::Options> row{z.data(), n, tau, noise.data(), &opt.get<NN>()};
      NN::forward(row, p.data());
      dtau = NN::backward(row, p.data(), dp.data(), dz.data());
    });
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      if (!(p[j] >= 0 && p[j] <= 1)) row_finding("weight not in [0, 1]", info.name, z, tau);
      if (!norm::is_valid(z[j]) && p[j] != 0) row_finding("masked key got weight", info.name, z, tau);
      if (!norm::is_valid(z[j]) && dz[j] != 0) row_finding("masked key got gradient", info.name, z, tau);
      sum += p[j];
    }
    if (any_valid ? std::abs(sum - 1) > 1e-5 * n : sum != 0) row_finding("weights do not sum to 1 or 0", info.name, z, tau);
    // dz may overflow for tau near 0 (its true value is not representable): then it is inf,
    // never NaN; attention_backward turns that into an error.
    for (int j = 0; j < n; ++j)
      if (std::isnan(dz[j])) row_finding("dz is NaN", info.name, z, tau);
    if (std::isnan(dtau)) row_finding("dtau is NaN", info.name, z, tau);

    std::vector<double> zd(z.begin(), z.end()), nd(noise.begin(), noise.end());
    const auto ref = reference::normalize<double>(info.name, zd, double(tau), opt, nd.data());
    const auto naive = reference::normalize<float>(info.name, z, tau, opt, noise.data());
    using Row = Eigen::Map<const Eigen::RowVectorXf>;
    const auto rep = qktest::compare(info.name, Row(p.data(), n), Row(naive.data(), n),
                                     Eigen::Map<const Eigen::RowVectorXd>(ref.data(), n));
    if (!rep.ok) row_finding("weights differ from the reference: " + rep.text, info.name, z, tau);
  }
  return 0;
}
