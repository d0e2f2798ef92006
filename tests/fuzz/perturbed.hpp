// tests/fuzz/perturbed.hpp — the third bar of the harness's float fast paths: the core in
// double on the case's inputs rounded once more. Every float input x (Q, K, V, dO, the
// scoring parameters, the bias tables) and the temperature, an explicit scale, softcap and
// ALiBi slope become x (1 + d) with |d| = 2^-24 (half of float's epsilon) and a random sign
// from a fixed stream, so the run is reproducible. The rule (core/reference/tolerance.hpp)
// compares against naive math in float; one float evaluation can be luckier than its own
// error model (products that happen to be exact, keys tied in the logits that stay tied):
// it was exact where the answer cancels to 1e-9 of its terms, and no float method is then
// within twice its error. Where the answer moves this much when its inputs round once, a
// float path is held to that (docs/RELIABILITY.md, "The bar").
#pragma once

#include <cstdint>

#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"

namespace qkfuzz {

/// x (1 + s 2^-24) for each entry, s = +-1 from a xorshift stream (fixed seed per call).
class Rounding {
 public:
  double next(double x) {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return x * (1 + ((s_ & 1) ? 1 : -1) * 0x1p-24);
  }
  template <class M>
  void apply(M& m) {
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = next(m.data()[i]);
  }

 private:
  std::uint64_t s_ = 0x9E3779B97F4A7C15ull;
};

struct PerturbedReference {
  bool ok = false;
  qkscope::AttentionResult<double> fwd;
  qkscope::AttentionGrads<double> grads;
};

/// The double core's forward and backward on the inputs rounded once more (ok = false when
/// it throws on them, e.g. a temperature moved past a limit).
inline PerturbedReference perturbed_reference(const qkscope::MatrixD& Q, const qkscope::MatrixD& K,
                                              const qkscope::MatrixD& V, const qkscope::MatrixD& dO,
                                              const qkscope::ScoreParams<double>& params,
                                              const qkscope::AttentionConfig<double>& cfg) {
  Rounding r;
  qkscope::MatrixD q = Q, k = K, v = V, g = dO;
  for (auto* m : {&q, &k, &v, &g}) r.apply(*m);
  qkscope::ScoreParams<double> p = params;
  for (auto* m : {&p.W, &p.W_q, &p.W_k}) r.apply(*m);
  for (auto* m : {&p.v, &p.b, &p.w}) r.apply(*m);
  qkscope::AttentionConfig<double> c = cfg;
  c.temperature = r.next(c.temperature);
  if (c.scale) c.scale = r.next(*c.scale);
  if (c.bias.softcap) c.bias.softcap = r.next(*c.bias.softcap);
  if (c.bias.alibi_slope) c.bias.alibi_slope = r.next(*c.bias.alibi_slope);
  r.apply(c.bias.relative);
  r.apply(c.bias.dense);
  r.apply(c.bias.t5_table);
  PerturbedReference out;
  try {
    out.fwd = qkscope::attention_forward<double>(q, k, v, p, c);
    out.grads = qkscope::attention_backward<double>(q, k, v, p, c, out.fwd, g);
    out.ok = true;
  } catch (const std::invalid_argument&) {
  }
  return out;
}

}  // namespace qkfuzz
