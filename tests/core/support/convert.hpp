// tests/core/support/convert.hpp — one copy of the test-side conversions: a configuration or
// a forward result in another precision (the double reference of a float case, or a double
// forward rounded to float as a second naive evaluation), and small matrices from literals.
#pragma once

#include <cstdint>

#include <initializer_list>

#include "qkscope/attention.hpp"

namespace qktest {

/// cfg with its biases in U (every other field copied).
template <class U, class T>
qkscope::AttentionConfig<U> config_as(const qkscope::AttentionConfig<T>& c) {
  qkscope::AttentionConfig<U> o;
  o.score = c.score;
  o.scale = c.scale;
  o.temperature = c.temperature;
  o.mask = c.mask;
  o.normalizer = c.normalizer;
  o.norm_options = c.norm_options;
  o.bias.softcap = c.bias.softcap;
  o.bias.alibi_slope = c.bias.alibi_slope;
  o.bias.relative = c.bias.relative.template cast<U>();
  o.bias.t5 = c.bias.t5;
  o.bias.t5_table = c.bias.t5_table.template cast<U>();
  o.bias.dense = c.bias.dense.template cast<U>();
#if UINTPTR_MAX == 0xffffffffffffffffu
  // A new BiasSpec field must be copied above too: a reference computed without it passes
  // for a wrong value (the T5 table was missed once; fuzzer finding). Its size changes then.
  static_assert(sizeof(qkscope::BiasSpec<float>) == 104, "BiasSpec changed: copy its new field in config_as");
#endif
  return o;
}

/// Every intermediate of a forward result rounded to U.
template <class U, class T>
qkscope::AttentionResult<U> result_as(const qkscope::AttentionResult<T>& r) {
  return {r.raw_scores.template cast<U>(), r.scores.template cast<U>(),    r.masked_scores.template cast<U>(),
          r.weights.template cast<U>(),    r.output.template cast<U>(),    r.logsumexp.template cast<U>(),
          r.entropy.template cast<U>(),    r.max_weight.template cast<U>(), r.scale};
}

/// A matrix from rows of literals: mat({{1, 2}, {3, 4}}).
template <class T = float>
qkscope::Mat<T> mat(std::initializer_list<std::initializer_list<double>> rows) {
  qkscope::Mat<T> m(Eigen::Index(rows.size()), Eigen::Index(rows.begin()->size()));
  Eigen::Index i = 0;
  for (const auto& r : rows) {
    Eigen::Index j = 0;
    for (double x : r) m(i, j++) = T(x);
    ++i;
  }
  return m;
}

}  // namespace qktest
