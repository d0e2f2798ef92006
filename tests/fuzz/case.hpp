// tests/fuzz/case.hpp — turns fuzzer bytes into one attention call: shapes (0, 1, odd,
// L_q != L_k), entries (ordinary, huge up to FLT_MAX, denormal, NaN, inf), every scoring
// function and normalizer of the registries (and unknown names), scale, temperature
// (0, negative, denormal, near and past the float maximum), key padding, causal band
// (both alignments), sliding window, keep mask, softcap, ALiBi, relative table (odd and
// even lengths), dense bias with -inf entries, T5 buckets and table, top-k, hard Gumbel and
// its seed.
// Every choice reads bytes through FuzzedDataProvider, so the corpus mutates them freely.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "qkscope/qkscope.hpp"

namespace qkfuzz {

using namespace qkscope;

/// One entry: mostly ordinary numbers, sometimes the edges of float.
inline float value(FuzzedDataProvider& f) {
  const float fmax = std::numeric_limits<float>::max();
  switch (f.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return 0.0f;
    case 1: return float(f.ConsumeIntegralInRange<int>(-3, 3));
    case 2: return (f.ConsumeBool() ? 1 : -1) * fmax * f.ConsumeFloatingPointInRange<float>(0.5f, 1.0f);
    case 3: return (f.ConsumeBool() ? 1 : -1) * std::ldexp(1.0f, f.ConsumeIntegralInRange<int>(60, 127));
    case 4: return (f.ConsumeBool() ? 1 : -1) * std::ldexp(1.0f, -f.ConsumeIntegralInRange<int>(60, 149));
    case 5: return f.ConsumeIntegralInRange<int>(0, 40) == 0 ? std::numeric_limits<float>::quiet_NaN()
                                                             : f.ConsumeFloatingPoint<float>();
    case 6: return f.ConsumeIntegralInRange<int>(0, 40) == 0 ? -std::numeric_limits<float>::infinity()
                                                             : float(f.ConsumeIntegralInRange<int>(-1000, 1000));
    default: return f.ConsumeFloatingPointInRange<float>(-4.0f, 4.0f);
  }
}

inline Matrix matrix(FuzzedDataProvider& f, Eigen::Index rows, Eigen::Index cols) {
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = value(f);
  return m;
}

/// A temperature or scale from the edges of double and float.
inline double edge_number(FuzzedDataProvider& f) {
  switch (f.ConsumeIntegralInRange<int>(0, 13)) {
    case 0: return 1.0;
    case 1: return 0.0;
    case 2: return -1.0;
    case 3: return 1e-40;   // float denormal
    case 4: return 1e-46;   // rounds to 0 in float
    case 5: return 3.4e38;  // just under FLT_MAX
    case 6: return 1e39;    // above FLT_MAX
    case 7: return std::numeric_limits<double>::quiet_NaN();
    case 8: return std::numeric_limits<double>::infinity();
    case 9: return 1e-3;
    case 10: return std::ldexp(1.0, f.ConsumeIntegralInRange<int>(-160, 140));
    case 11: return std::pow(10.0, f.ConsumeFloatingPointInRange<double>(-3, -1));  // small tau
    default: return f.ConsumeFloatingPointInRange<double>(0.05, 4.0);
  }
}

struct Case {
  Matrix Q, K, V, dO;
  ScoreParams<float> params;
  AttentionConfig<float> cfg;
};

inline Case make_case(FuzzedDataProvider& f) {
  Case c;
  const auto scores = score_infos();
  const auto norms = normalizer_infos();
  const int si = f.ConsumeIntegralInRange<int>(0, int(scores.size()));  // size() = unknown
  const int ni = f.ConsumeIntegralInRange<int>(0, int(norms.size()) + 2);
  c.cfg.score = si < int(scores.size()) ? scores[si].name : "no_such_score";
  c.cfg.normalizer = ni < int(norms.size()) ? norms[ni].name : ni == int(norms.size()) ? "Softmax" : "softmax";

  const Eigen::Index L_q = f.ConsumeIntegralInRange<int>(0, 7), L_k = f.ConsumeIntegralInRange<int>(0, 9);
  const Eigen::Index d_q = f.ConsumeIntegralInRange<int>(0, 5);
  const Eigen::Index d_k = f.ConsumeIntegralInRange<int>(0, 15) == 0 ? f.ConsumeIntegralInRange<int>(0, 5) : d_q;
  const Eigen::Index d_v = f.ConsumeIntegralInRange<int>(0, 3);
  const Eigen::Index d_h = f.ConsumeIntegralInRange<int>(1, 4);
  const Eigen::Index L_v = f.ConsumeIntegralInRange<int>(0, 20) == 0 ? L_k + 1 : L_k;
  c.Q = matrix(f, L_q, d_q);
  c.K = matrix(f, L_k, d_k);
  c.V = matrix(f, L_v, d_v);
  c.dO = matrix(f, L_q, d_v);

  const std::uint64_t seed = f.ConsumeIntegral<std::uint64_t>();
  if (si < int(scores.size()) && d_q > 0 && d_k > 0) {
    c.params = init_params<float>(c.cfg.score, d_q, d_k, d_h, seed);
    // Perturb some parameter entries (huge, NaN, ...), sometimes the shape too.
    for (Vector* v : {&c.params.v, &c.params.b, &c.params.w})
      if (v->size() && f.ConsumeIntegralInRange<int>(0, 3) == 0) (*v)(f.ConsumeIntegralInRange<Eigen::Index>(0, v->size() - 1)) = value(f);
    for (Matrix* m : {&c.params.W, &c.params.W_q, &c.params.W_k})
      if (m->size() && f.ConsumeIntegralInRange<int>(0, 3) == 0) m->data()[f.ConsumeIntegralInRange<Eigen::Index>(0, m->size() - 1)] = value(f);
    // A wrong-sized v: its entries kept where they fit, the rest 0 (a bare resize left them
    // uninitialised, so whether a NaN check threw depended on the heap: valgrind, 2026-12-06).
    if (f.ConsumeIntegralInRange<int>(0, 30) == 0) {
      Vector v = Vector::Zero(d_h + 1);
      const Eigen::Index n = std::min(v.size(), c.params.v.size());
      v.head(n) = c.params.v.head(n);
      c.params.v = v;
    }
  }

  auto& cfg = c.cfg;
  if (f.ConsumeIntegralInRange<int>(0, 4) == 0) cfg.scale = edge_number(f) * (f.ConsumeBool() ? 1 : -1);
  cfg.temperature = f.ConsumeIntegralInRange<int>(0, 2) == 0 ? edge_number(f) : 1.0;
  cfg.norm_options.get<norm::TopKSoftmax>().top_k = f.ConsumeIntegralInRange<int>(-1, 10);
  cfg.norm_options.get<norm::GumbelSoftmax>().hard = f.ConsumeBool();
  cfg.norm_options.get<norm::GumbelSoftmax>().seed = seed;

  MaskSpec& m = cfg.mask;
  if (f.ConsumeIntegralInRange<int>(0, 3) == 0) m.key_length = f.ConsumeIntegralInRange<Eigen::Index>(-1, L_k + 1);
  m.causal = f.ConsumeIntegralInRange<int>(0, 3) == 0;
  m.alignment = f.ConsumeBool() ? CausalAlignment::bottom_right : CausalAlignment::top_left;
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) m.window_left = f.ConsumeIntegralInRange<Eigen::Index>(-1, 4);
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) m.window_right = f.ConsumeIntegralInRange<Eigen::Index>(-1, 4);
  if (f.ConsumeIntegralInRange<int>(0, 4) == 0) {
    const Eigen::Index kr = f.ConsumeIntegralInRange<int>(0, 25) == 0 ? L_q + 1 : L_q;
    m.keep.resize(kr, L_k);
    for (Eigen::Index i = 0; i < m.keep.size(); ++i) m.keep.data()[i] = f.ConsumeIntegralInRange<int>(0, 3) != 0;
  }

  BiasSpec<float>& b = cfg.bias;
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) b.softcap = f.ConsumeBool() ? edge_number(f) : f.ConsumeFloatingPointInRange<double>(0.5, 50);
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) b.alibi_slope = f.ConsumeBool() ? edge_number(f) : 0.25;
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) {
    b.relative.resize(f.ConsumeIntegralInRange<int>(0, 5));
    for (Eigen::Index i = 0; i < b.relative.size(); ++i) b.relative(i) = value(f);
  }
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) {
    b.dense = matrix(f, L_q, f.ConsumeIntegralInRange<int>(0, 25) == 0 ? L_k + 1 : L_k);
    for (Eigen::Index i = 0; i < b.dense.size(); ++i)
      if (f.ConsumeIntegralInRange<int>(0, 4) == 0) b.dense.data()[i] = -std::numeric_limits<float>::infinity();
  }
  if (f.ConsumeIntegralInRange<int>(0, 5) == 0) {
    // T5 bucketing (also num_buckets < 2, max_distance < 1) and a table of num_buckets or
    // another count of entries.
    b.t5 = T5Buckets{f.ConsumeBool(), f.ConsumeIntegralInRange<int>(-1, 9), f.ConsumeIntegralInRange<int>(-1, 20)};
    b.t5_table.resize(f.ConsumeIntegralInRange<int>(0, 25) == 0 ? f.ConsumeIntegralInRange<int>(0, 9)
                                                                 : std::max(b.t5->num_buckets, 0));
    for (Eigen::Index i = 0; i < b.t5_table.size(); ++i) b.t5_table(i) = value(f);
  }
  // Drawn last, so that the inputs of the seed corpus keep their cases (0 when the bytes
  // run out: no change). Scores near 0 with a temperature that is no power of two: queries
  // and keys scaled by 10^-k, tau from 10^[-4, 0] (a reviewer's checker found the additive
  // and neg_sq_euclidean families with such draws, which the entries above rarely make).
  const int tail = f.ConsumeIntegralInRange<int>(0, 7);
  if (tail & 1) {
    const float s = float(std::pow(10.0, -f.ConsumeIntegralInRange<int>(1, 8)));
    c.Q *= s;
    if (f.ConsumeBool()) c.K *= s;
  }
  if (tail & 2) c.cfg.temperature = std::pow(10.0, f.ConsumeFloatingPointInRange<double>(-4, 0));
  return c;
}

inline std::string num(double x) {  // every digit of a double: a test must rebuild the case
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

/// Prints the case (in full when small) to stderr, headed by `what`.
inline void describe(const std::string& what, const Case& c) {
  std::fprintf(stderr,
               "%s\n  score %s, normalizer %s, L_q %ld, L_k %ld, d_q %ld, d_k %ld, d_v %ld,"
               " temperature %.17g, scale %s\n",
               what.c_str(), c.cfg.score.c_str(), c.cfg.normalizer.c_str(), long(c.Q.rows()),
               long(c.K.rows()), long(c.Q.cols()), long(c.K.cols()), long(c.V.cols()), c.cfg.temperature,
               c.cfg.scale ? num(*c.cfg.scale).c_str() : "default");
  // Small cases in full, so that a finding can become a test without a debugger.
  if (c.Q.size() + c.K.size() + c.V.size() <= 64) {
    auto print = [](const char* name, const Matrix& m) {
      std::fprintf(stderr, "  %s =", name);
      for (Eigen::Index i = 0; i < m.rows(); ++i) {
        std::fprintf(stderr, " [");
        for (Eigen::Index j = 0; j < m.cols(); ++j) std::fprintf(stderr, " %.9g", double(m(i, j)));
        std::fprintf(stderr, " ]");
      }
      std::fprintf(stderr, "\n");
    };
    print("Q", c.Q);
    print("K", c.K);
    print("V", c.V);
    print("dO", c.dO);
    const auto& b = c.cfg.bias;
    const auto& m = c.cfg.mask;
    std::fprintf(stderr, "  mask: key_length %ld, causal %d, window %ld/%ld; bias: softcap %s, alibi %s, relative %ld, t5 %d, dense %ld\n",
                 long(m.key_length.value_or(-1)), int(m.causal), long(m.window_left.value_or(-1)),
                 long(m.window_right.value_or(-1)), b.softcap ? num(*b.softcap).c_str() : "-",
                 b.alibi_slope ? num(*b.alibi_slope).c_str() : "-", long(b.relative.size()), int(bool(b.t5)),
                 long(b.dense.size()));
    // The keep mask and the causal alignment change the case as much as the rest (a finding's
    // test once missed its keep mask: the dQ it checked was another case's).
    if (m.causal || m.window_left || m.window_right)  // the window's diagonal too
      std::fprintf(stderr, "  causal alignment: %s\n", m.alignment == CausalAlignment::bottom_right ? "bottom_right" : "top_left");
    if (m.keep.size()) {
      std::fprintf(stderr, "  keep (%ld x %ld) =", long(m.keep.rows()), long(m.keep.cols()));
      for (Eigen::Index i = 0; i < m.keep.rows(); ++i) {
        std::fprintf(stderr, " [");
        for (Eigen::Index j = 0; j < m.keep.cols(); ++j) std::fprintf(stderr, " %d", int(bool(m.keep(i, j))));
        std::fprintf(stderr, " ]");
      }
      std::fprintf(stderr, "\n");
    }
    if (b.relative.size()) {  // the table itself (a finding's test needs its values)
      std::fprintf(stderr, "  relative table =");
      for (Eigen::Index i = 0; i < b.relative.size(); ++i) std::fprintf(stderr, " %.9g", double(b.relative(i)));
      std::fprintf(stderr, "\n");
    }
    if (b.dense.size()) print("dense", b.dense);
    if (b.t5) {
      std::fprintf(stderr, "  t5: bidirectional %d, num_buckets %d, max_distance %d, table =", int(b.t5->bidirectional),
                   b.t5->num_buckets, b.t5->max_distance);
      for (Eigen::Index i = 0; i < b.t5_table.size(); ++i) std::fprintf(stderr, " %.9g", double(b.t5_table(i)));
      std::fprintf(stderr, "\n");
    }
    // The scoring function's parameters (init_params of the case's seed, then perturbed).
    const auto& p = c.params;
    for (const auto& [name, m] : {std::pair<const char*, const Matrix*>{"W", &p.W}, {"W_q", &p.W_q}, {"W_k", &p.W_k}})
      if (m->size()) print(name, *m);
    for (const auto& [name, v] : {std::pair<const char*, const Vector*>{"v", &p.v}, {"b", &p.b}, {"w", &p.w}})
      if (v->size()) print(name, Matrix(v->transpose()));
  }
}

#ifdef QKSCOPE_FUZZ_STUDY
/// study.cpp's build: a finding is thrown and counted, not fatal.
struct Found {
  std::string what;
};
#endif

/// Stops the run with the case description: libFuzzer saves the input as a crash file.
[[noreturn]] inline void finding(const std::string& what, const Case& c) {
#ifdef QKSCOPE_FUZZ_STUDY
  (void)c;
  throw Found{what};
#else
  describe("FUZZ FINDING: " + what, c);
  __builtin_trap();
#endif
}

template <class M>
bool all_finite(const M& m) {
  return m.size() == 0 || m.array().isFinite().all();
}

}  // namespace qkfuzz
