// qkscope/mha/backward.hpp — multi-head attention backward. With O = C W_O and
// C = Concat_h(head_h):  dW_O = C^T dO,  dC = dO W_O^T;  each head's slice of dC goes
// through attention_backward; Q = X_q W_Q gives dW_Q = X_q^T dQ, dX_q = dQ W_Q^T, and
// likewise for K and V, where a KV head shared by a group of query heads (GQA/MQA)
// receives the sum of their gradients (Ainslie et al. 2023; Shazeer 2019).
#pragma once

#include <stdexcept>
#include <vector>

#include "qkscope/attention.hpp"
#include "qkscope/bias/bias.hpp"
#include "qkscope/detail/product_range.hpp"
#include "qkscope/mha/backward_sums.hpp"
#include "qkscope/mha/config.hpp"

namespace qkscope {

/// Backward of multi_head_forward for dOutput = dL/d output (B*L_q, d_out). `fwd` must
/// be the result of multi_head_forward with the same arguments. Returns dX_q, dX_kv,
/// dW_Q, dW_K, dW_V, dW_O (shapes of their arguments), dscore_params (H entries, summed
/// over the batch), the shared biases' gradients and dL/dtemperature.
/// Self-attention (X_kv is X_q): the gradient w.r.t. X is dX_q + dX_kv; the caller sums.
/// Throws std::invalid_argument for the forward's errors, a dOutput of the wrong shape or not finite,
/// or a `fwd` that does not match (B, H, L_q, L_k), and for a gradient past the range of T
/// ("gradient overflowed" or "... overflowed", naming it; products are settled as in the
/// forward, detail/product_range.hpp).
template <class T>
MultiHeadGrads<T> multi_head_backward(const Mat<T>& X_q, const Mat<T>& X_kv,
                                      const MultiHeadWeights<T>& w, const MultiHeadConfig<T>& cfg,
                                      const MultiHeadResult<T>& fwd, const Mat<T>& dOutput) {
  const detail::MhaShape s = detail::check_mha(X_q, X_kv, w, cfg);
  detail::require(Eigen::Index(fwd.heads.size()) == s.B * s.H && fwd.batch == s.B &&
                      fwd.num_heads == s.H && fwd.L_q == s.L_q && fwd.L_k == s.L_k,
                  "fwd must be the multi_head_forward result of the same call: (B, H, L_q, L_k) = (" +
                      std::to_string(s.B) + ", " + std::to_string(s.H) + ", " + std::to_string(s.L_q) +
                      ", " + std::to_string(s.L_k) + "), got (" + std::to_string(fwd.batch) + ", " +
                      std::to_string(fwd.num_heads) + ", " + std::to_string(fwd.L_q) + ", " +
                      std::to_string(fwd.L_k) + ")");
  detail::require_shape(dOutput, s.B * s.L_q, s.d_out, "grad_output (B*L_q x d_out)");
  detail::require_finite(dOutput, "grad_output");
  const std::vector<ScoreParams<T>> params = detail::head_params(w, cfg, s);
  const std::vector<double> slopes = cfg.alibi ? alibi_slopes(int(s.H)) : std::vector<double>{};

  MultiHeadGrads<T> g;
  g.dW_O = fwd.concat.transpose() * dOutput;            // (H*d_v, d_out)
  Mat<T> dC = dOutput * w.W_O.transpose();               // (B*L_q, H*d_v)
  detail::settle_product(g.dW_O, fwd.concat.transpose(), dOutput, "dL/dW_O = concat^T grad_output");
  detail::settle_product(dC, dOutput, w.W_O.transpose(), "dL/dconcat = grad_output W_O^T");
  Mat<T> dQ = Mat<T>::Zero(s.B * s.L_q, s.H * s.d_k);
  Mat<T> dK = Mat<T>::Zero(s.B * s.L_k, s.H_kv * s.d_k);
  Mat<T> dV = Mat<T>::Zero(s.B * s.L_k, s.H_kv * s.d_v);
  std::vector<AttentionGrads<T>> heads(std::size_t(s.B * s.H));  // summed after the loop
  for (Eigen::Index b = 0; b < s.B; ++b) {
    AttentionConfig<T> c = detail::sequence_config(cfg, b);
    for (Eigen::Index kv = 0; kv < s.H_kv; ++kv) {
      const Mat<T> K_g = fwd.K.block(b * s.L_k, kv * s.d_k, s.L_k, s.d_k);
      const Mat<T> V_g = fwd.V.block(b * s.L_k, kv * s.d_v, s.L_k, s.d_v);
      for (Eigen::Index h = kv * s.group; h < (kv + 1) * s.group; ++h) {
        const Mat<T> Q_h = fwd.Q.block(b * s.L_q, h * s.d_k, s.L_q, s.d_k);
        const Mat<T> dO_h = dC.block(b * s.L_q, h * s.d_v, s.L_q, s.d_v);
        if (cfg.alibi) c.bias.alibi_slope = slopes[std::size_t(h)];
        if (cfg.t5_tables.size()) c.bias.t5_table = cfg.t5_tables.row(h).transpose();
        AttentionGrads<T>& hg = heads[std::size_t(b * s.H + h)];
        try {
          hg = attention_backward<T>(Q_h, K_g, V_g, params[std::size_t(h)], c,
                                     fwd.heads[std::size_t(b * s.H + h)], dO_h);
        } catch (const std::invalid_argument& e) {
          detail::rethrow_head(e, b, h);
        }
        dQ.block(b * s.L_q, h * s.d_k, s.L_q, s.d_k) = hg.dQ;
        hg.dQ = Mat<T>();
      }
    }
  }
  detail::sum_head_gradients(heads, s, cfg.t5_tables.size() != 0, dK, dV, g);
  heads.clear();
  g.dW_Q = X_q.transpose() * dQ;   // (d_model, H*d_k)
  g.dW_K = X_kv.transpose() * dK;  // (d_model_kv, H_kv*d_k)
  g.dW_V = X_kv.transpose() * dV;  // (d_model_kv, H_kv*d_v)
  g.dX_q = dQ * w.W_Q.transpose();                                // (B*L_q, d_model)
  g.dX_kv = dK * w.W_K.transpose() + dV * w.W_V.transpose();      // (B*L_k, d_model_kv)
  detail::settle_product(g.dW_Q, X_q.transpose(), dQ, "dL/dW_Q = X_q^T dQ");
  detail::settle_product(g.dW_K, X_kv.transpose(), dK, "dL/dW_K = X_kv^T dK");
  detail::settle_product(g.dW_V, X_kv.transpose(), dV, "dL/dW_V = X_kv^T dV");
  detail::settle_product(g.dX_q, dQ, w.W_Q.transpose(), "dL/dX_q = dQ W_Q^T");
  if (!detail::all_finite(g.dX_kv.data(), std::size_t(g.dX_kv.size()))) {
    // One product [dK dV] [W_K W_V]^T: a part may overflow where the sum does not (review).
    Mat<T> dKV(dK.rows(), dK.cols() + dV.cols()), W_KV(w.W_K.rows(), w.W_K.cols() + w.W_V.cols());
    dKV << dK, dV;
    W_KV << w.W_K, w.W_V;
    detail::settle_product(g.dX_kv, dKV, W_KV.transpose(), "dL/dX_kv = dK W_K^T + dV W_V^T");
  }
  return g;
}

}  // namespace qkscope
