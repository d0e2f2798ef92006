// qkscope/mha/forward.hpp — multi-head attention forward: project, run the single-head
// attention_forward per (sequence b, head h), concatenate, project back.
//   MultiHead(X_q, X_kv) = Concat(head_1, ..., head_H) W_O,
//   head_h = Attention(X_q W_Q^h, X_kv W_K^{kv(h)}, X_kv W_V^{kv(h)})
// (Vaswani et al. 2017, §3.2.2), kv(h) = h / (H / H_kv) (GQA, Ainslie et al. 2023;
// MQA, Shazeer 2019 for H_kv = 1). Batch layout and shapes: mha/config.hpp.
#pragma once

#include <stdexcept>
#include <vector>

#include "qkscope/attention.hpp"
#include "qkscope/bias/bias.hpp"
#include "qkscope/detail/product_range.hpp"
#include "qkscope/mha/config.hpp"

namespace qkscope {

/// Multi-head attention forward; returns the output and every head's intermediates.
///   X_q  (B*L_q, d_model)     queries, B sequences as row blocks (mha/config.hpp)
///   X_kv (B*L_k, d_model_kv)  keys/values; pass X_q again for self-attention
///   w    W_Q (d_model, H*d_k), W_K (d_model_kv, H_kv*d_k), W_V (d_model_kv, H_kv*d_v),
///        W_O (H*d_v, d_out), score_params (H entries or empty = seeded defaults)
/// Returns output (B*L_q, d_out), projections, concat (B*L_q, H*d_v) and heads[b*H + h]
/// (weights (L_q, L_k), logsumexp, entropy, ... of attention_forward).
/// The KV heads are never repeated: query heads of one group read the same K/V slice.
/// A sequence with key_lengths[b] = 0 has zero head outputs, hence a zero output.
/// Throws std::invalid_argument naming the argument for: H % H_kv != 0 (naming both),
/// batch rows not divisible by B, any weight shape, score_params count, key_lengths
/// (count, or an entry < 0 or > L_k, naming the batch index), alibi set twice, and
/// every single-head error (prefixed with its batch and head), and for a projection (Q, K, V
/// or the output) whose exact value is past the range of T (detail/product_range.hpp; an
/// entry that overflowed only in summation order is formed again and returned).
template <class T>
MultiHeadResult<T> multi_head_forward(const Mat<T>& X_q, const Mat<T>& X_kv,
                                      const MultiHeadWeights<T>& w, const MultiHeadConfig<T>& cfg) {
  const detail::MhaShape s = detail::check_mha(X_q, X_kv, w, cfg);
  const std::vector<ScoreParams<T>> params = detail::head_params(w, cfg, s);
  const std::vector<double> slopes = cfg.alibi ? alibi_slopes(int(s.H)) : std::vector<double>{};

  MultiHeadResult<T> r;
  r.batch = s.B;
  r.num_heads = s.H;
  r.L_q = s.L_q;
  r.L_k = s.L_k;
  r.Q = X_q * w.W_Q;   // (B*L_q, H*d_k)
  r.K = X_kv * w.W_K;  // (B*L_k, H_kv*d_k)
  r.V = X_kv * w.W_V;  // (B*L_k, H_kv*d_v)
  detail::settle_product(r.Q, X_q, w.W_Q, "the query projection Q = X_q W_Q");
  detail::settle_product(r.K, X_kv, w.W_K, "the key projection K = X_kv W_K");
  detail::settle_product(r.V, X_kv, w.W_V, "the value projection V = X_kv W_V");
  r.concat.resize(s.B * s.L_q, s.H * s.d_v);
  r.heads.resize(std::size_t(s.B * s.H));
  for (Eigen::Index b = 0; b < s.B; ++b) {
    AttentionConfig<T> c = detail::sequence_config(cfg, b);
    for (Eigen::Index g = 0; g < s.H_kv; ++g) {
      // One K/V slice per KV head, read by all s.group query heads that map to it.
      const Mat<T> K_g = r.K.block(b * s.L_k, g * s.d_k, s.L_k, s.d_k);  // (L_k, d_k)
      const Mat<T> V_g = r.V.block(b * s.L_k, g * s.d_v, s.L_k, s.d_v);  // (L_k, d_v)
      for (Eigen::Index h = g * s.group; h < (g + 1) * s.group; ++h) {
        const Mat<T> Q_h = r.Q.block(b * s.L_q, h * s.d_k, s.L_q, s.d_k);  // (L_q, d_k)
        if (cfg.alibi) c.bias.alibi_slope = slopes[std::size_t(h)];
        if (cfg.t5_tables.size()) c.bias.t5_table = cfg.t5_tables.row(h).transpose();
        AttentionResult<T>& out = r.heads[std::size_t(b * s.H + h)];
        try {
          out = attention_forward<T>(Q_h, K_g, V_g, params[std::size_t(h)], c);
        } catch (const std::invalid_argument& e) {
          detail::rethrow_head(e, b, h);
        }
        r.concat.block(b * s.L_q, h * s.d_v, s.L_q, s.d_v) = out.output;
      }
    }
  }
  r.output = r.concat * w.W_O;  // (B*L_q, d_out)
  detail::settle_product(r.output, r.concat, w.W_O, "the output projection concat W_O");
  return r;
}

}  // namespace qkscope
