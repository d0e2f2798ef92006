// qkscope/mha/multi_head.hpp — multi-head attention over a batch, with grouped-query
// (GQA) and multi-query (MQA) key/value sharing, per-head ALiBi and key padding.
//   MultiHead(X_q, X_kv) = Concat(head_1, ..., head_H) W_O
//   head_h = Attention(X_q W_Q^h, X_kv W_K^{kv(h)}, X_kv W_V^{kv(h)}),  kv(h) = h / (H / H_kv)
// Sources: Vaswani et al. 2017, "Attention Is All You Need", §3.2.2 (MultiHead);
// Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models", §2.2;
// Shazeer 2019, "Fast Transformer Decoding" (MQA, H_kv = 1);
// Press, Smith & Lewis 2022, "ALiBi", §3 (head h slope alibi_slopes(H)[h]).
// Each (sequence, head) is one call of the single-head attention_forward/backward, so
// every scoring function, mask, bias and normalizer works per head unchanged.
//   config.hpp   batch layout, MultiHeadConfig/Weights/Result/Grads, validation
//   forward.hpp  multi_head_forward
//   backward.hpp multi_head_backward
#pragma once

#include "qkscope/mha/backward.hpp"
#include "qkscope/mha/config.hpp"
#include "qkscope/mha/forward.hpp"
