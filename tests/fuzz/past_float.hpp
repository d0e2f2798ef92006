// When the double core's gradient past float's range settles that the true gradient is past it.
// The fuzz harness (fuzz_attention.cpp) accepts a float core that overflowed beside a tiled
// backward that returned only where no gradient is past float; it took the double core's value
// as the truth, but the double core rounds too. Where its own rounding is past float, its value
// settles nothing: keys that tie make sum_j dS_ij k_j exactly 0, and the double core's rounding
// of dS (~5e18 in a row of 5e34) times a key of 1.6e32 gave 9e49 (fuzz -z4, twenty-sixth
// session; docs/RELIABILITY.md, "The bar").
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <Eigen/Core>

#include "qkscope/qkscope.hpp"

namespace qkfuzz {

/// The double core's own rounding error at an entry, estimated from float runs of the same
/// algorithm: first-order error analysis makes an algorithm's error proportional to its unit
/// roundoff, and double's is 2^-29 of float's; 2^-20 leaves 2^9 to spare. The runs on moved
/// inputs (perturbed.hpp) add the inputs' conditioning, which double's rounding of
/// intermediates meets at 2^-29 of the same size too.
inline constexpr double kDoubleOverFloatError = 0x1p-20;

/// The double core with the queries (queries = true) or the keys in reverse order, its
/// gradients put back in order (the same permutation as reversed.hpp's float runs, and only
/// where nothing depends on a position: empty otherwise). Another order of every double sum
/// over queries or over keys: where the double core's value is its own rounding, another order
/// gives another value; where the value is settled, the same to ~1e-16.
inline std::optional<qkscope::AttentionGrads<double>> reversed_double(
    const qkscope::MatrixD& Q, const qkscope::MatrixD& K, const qkscope::MatrixD& V, const qkscope::MatrixD& dO,
    const qkscope::ScoreParams<double>& p, const qkscope::AttentionConfig<double>& cfg, bool queries) {
  const auto& m = cfg.mask;
  const auto& b = cfg.bias;
  if (m.causal || m.window_left || m.window_right || b.alibi_slope || b.relative.size() || b.t5 ||
      (!queries && m.key_length))
    return std::nullopt;
  qkscope::MatrixD q = Q, k = K, v = V, g = dO;
  qkscope::AttentionConfig<double> c = cfg;
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
    auto gr = qkscope::attention_backward<double>(q, k, v, p, c, qkscope::attention_forward<double>(q, k, v, p, c), g);
    if (queries) {
      gr.dQ = gr.dQ.colwise().reverse().eval();
      if (gr.ddense.size()) gr.ddense = gr.ddense.colwise().reverse().eval();
    } else {
      gr.dK = gr.dK.colwise().reverse().eval();
      gr.dV = gr.dV.colwise().reverse().eval();
      if (gr.ddense.size()) gr.ddense = gr.ddense.rowwise().reverse().eval();
    }
    return gr;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

/// Whether some entry of ref (the double core) is past float's range beyond its own rounding:
/// |ref_e| > FLT_MAX and either
///   |ref_e| - 2^-20 max_runs |run_e - ref_e| > FLT_MAX over the float runs finite at e (none
///   finite: settled), or
///   every reordered double run (reversed_double; at least one) is within 2^-20 |ref_e| of it.
/// The first alone excused a true past-float gradient that the double core holds exactly: a
/// run on moved inputs parts keys that tie, whose differences the double core forms without
/// rounding (a linear concat dw_k of 2e39 moved by 6e54: review); such a value is the same in
/// every order. R, X: Eigen matrices or vectors of double.
template <class R, class X>
bool past_float_settled(const R& ref, const std::vector<const X*>& runs, const std::vector<const X*>& reordered = {}) {
  const double top = std::numeric_limits<float>::max();
  for (Eigen::Index e = 0; e < ref.size(); ++e) {
    const double r = ref.data()[e];
    if (!(std::abs(r) > top)) continue;
    double spread = 0;
    for (const X* x : runs)
      if (x && x->size() == ref.size() && std::isfinite(double(x->data()[e])))
        spread = std::max(spread, std::abs(double(x->data()[e]) - r));
    if (std::abs(r) - kDoubleOverFloatError * spread > top) return true;
    bool same = false;
    for (const X* x : reordered) {
      if (!x || x->size() != ref.size()) continue;
      same = std::abs(double(x->data()[e]) - r) <= kDoubleOverFloatError * std::abs(r);
      if (!same) break;
    }
    if (same) return true;
  }
  return false;
}

}  // namespace qkfuzz
