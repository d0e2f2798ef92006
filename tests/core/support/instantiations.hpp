// tests/core/support/instantiations.hpp — explicit instantiation declarations of the heavy
// templates that most test files call, forced into every test file by tests/CMakeLists.txt.
// Without them each of ~50 test files instantiated and optimised the same functions again
// (the tiled CPU kernels for every scoring function, the core forward and backward, the
// double reference): most of a fault test's ~60 s compile. They are instantiated once, in
// support/instantiations.cpp. Build time only: the library stays header-only for its users.
#pragma once

#include "qkscope/cpu/attention.hpp"
#include "qkscope/qkscope.hpp"
#include "reference/reference.hpp"

// EXTERN: `extern` here, empty in instantiations.cpp.
#define QKSCOPE_TEST_INSTANTIATIONS(EXTERN)                                                                    \
  EXTERN template qkscope::AttentionResult<float> qkscope::attention_forward<float>(                           \
      const qkscope::Mat<float>&, const qkscope::Mat<float>&, const qkscope::Mat<float>&,                      \
      const qkscope::ScoreParams<float>&, const qkscope::AttentionConfig<float>&);                             \
  EXTERN template qkscope::AttentionResult<double> qkscope::attention_forward<double>(                         \
      const qkscope::Mat<double>&, const qkscope::Mat<double>&, const qkscope::Mat<double>&,                   \
      const qkscope::ScoreParams<double>&, const qkscope::AttentionConfig<double>&);                           \
  EXTERN template qkscope::AttentionGrads<float> qkscope::attention_backward<float>(                           \
      const qkscope::Mat<float>&, const qkscope::Mat<float>&, const qkscope::Mat<float>&,                      \
      const qkscope::ScoreParams<float>&, const qkscope::AttentionConfig<float>&,                              \
      const qkscope::AttentionResult<float>&, const qkscope::Mat<float>&);                                     \
  EXTERN template qkscope::AttentionGrads<double> qkscope::attention_backward<double>(                         \
      const qkscope::Mat<double>&, const qkscope::Mat<double>&, const qkscope::Mat<double>&,                   \
      const qkscope::ScoreParams<double>&, const qkscope::AttentionConfig<double>&,                            \
      const qkscope::AttentionResult<double>&, const qkscope::Mat<double>&);                                   \
  EXTERN template std::vector<qkscope::cpu::TiledResult<float>> qkscope::cpu::attention_forward_batch<float>(  \
      const std::vector<qkscope::cpu::HeadInputs<float>>&, const qkscope::ScoreParams<float>&,                 \
      const qkscope::AttentionConfig<float>&, const qkscope::cpu::TiledOptions&);                              \
  EXTERN template std::vector<qkscope::AttentionGrads<float>> qkscope::cpu::detail::backward_impl<float>(      \
      const std::vector<qkscope::cpu::HeadInputs<float>>&, const qkscope::ScoreParams<float>&,                 \
      const qkscope::AttentionConfig<float>&, const std::vector<const qkscope::cpu::TiledResult<float>*>&,     \
      const std::vector<const qkscope::Mat<float>*>&, const qkscope::cpu::TiledOptions&);                      \
  EXTERN template qkscope::reference::Result<double> qkscope::reference::attention<double>(                    \
      const qkscope::Mat<double>&, const qkscope::Mat<double>&, const qkscope::Mat<double>&,                   \
      const qkscope::ScoreParams<double>&, const qkscope::AttentionConfig<double>&);

QKSCOPE_TEST_INSTANTIATIONS(extern)
