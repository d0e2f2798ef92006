// tests/fuzz/reversed.hpp — one run of the fuzz harness's bar (perturbed.hpp): the core in
// float with the queries, or the keys, in reverse order (docs/RELIABILITY.md, "The bar").
#pragma once

#include "perturbed.hpp"

namespace qkfuzz {

/// The core in float with the queries (queries = true) or the keys in reverse order, its
/// results put back in order: another order of every float sum over queries (dK, dV, the
/// score parameters, dL/dtau) or over keys (output, logsumexp, dQ). Where a result cancels to
/// far below its terms (keys tied, dv = t sum_j dS_ij with sum_j dS_ij = 0 and dS of 3e35), its
/// error is the order's luck: a tiled dv 3 times the core's (5.9e28 against 2.0e28, the value
/// ~0). The same call only where nothing depends on a position: no causal band, window,
/// ALiBi, relative or T5 bias, and for keys no key padding (ok = false otherwise).
inline PerturbedReference reversed(const qkscope::Matrix& Q, const qkscope::Matrix& K, const qkscope::Matrix& V,
                                   const qkscope::Matrix& dO, const qkscope::ScoreParams<float>& p,
                                   const qkscope::AttentionConfig<float>& cfg, bool queries) {
  PerturbedReference r;
  const auto& m = cfg.mask;
  const auto& b = cfg.bias;
  if (m.causal || m.window_left || m.window_right || b.alibi_slope || b.relative.size() || b.t5 ||
      (!queries && m.key_length))
    return r;
  qkscope::Matrix q = Q, k = K, v = V, g = dO;
  qkscope::AttentionConfig<float> c = cfg;
  if (queries) {
    q = Q.colwise().reverse();
    g = dO.colwise().reverse();
    if (c.mask.keep.size()) c.mask.keep = cfg.mask.keep.colwise().reverse();
    if (c.bias.dense.size()) c.bias.dense = cfg.bias.dense.colwise().reverse();
  } else {
    k = K.colwise().reverse();
    v = V.colwise().reverse();
    if (c.mask.keep.size()) c.mask.keep = cfg.mask.keep.rowwise().reverse();
    if (c.bias.dense.size()) c.bias.dense = cfg.bias.dense.rowwise().reverse();
  }
  try {
    const auto f = qkscope::attention_forward<float>(q, k, v, p, c);
    auto gr = float_core_backward(q, k, v, p, c, f, g);
    r.fwd = qktest::result_as<double>(f);
    if (queries) {
      r.fwd.output = r.fwd.output.colwise().reverse().eval();
      r.fwd.logsumexp = r.fwd.logsumexp.reverse().eval();
      gr.dQ = gr.dQ.colwise().reverse().eval();
      if (gr.ddense.size()) gr.ddense = gr.ddense.colwise().reverse().eval();
    } else {
      gr.dK = gr.dK.colwise().reverse().eval();
      gr.dV = gr.dV.colwise().reverse().eval();
      if (gr.ddense.size()) gr.ddense = gr.ddense.rowwise().reverse().eval();
    }
    r.grads = std::move(gr);
    r.ok = r.grads_ok = true;
  } catch (const std::invalid_argument&) {
  }
  return r;
}

}  // namespace qkfuzz
