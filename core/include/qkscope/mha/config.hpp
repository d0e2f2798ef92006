// qkscope/mha/config.hpp — configuration, weights, results and shape checks of
// multi-head attention (see mha/multi_head.hpp for the formula and sources).
//
// Batch layout: a batch of B sequences is stored as B consecutive blocks of rows,
//   X_q  (B*L_q, d_model):    rows [b*L_q, (b+1)*L_q) are sequence b's queries,
//   X_kv (B*L_k, d_model_kv): rows [b*L_k, (b+1)*L_k) are sequence b's keys/values,
// so every sequence of a batch has the same (padded) length; the true key count of
// sequence b is key_lengths[b]. Head h occupies columns [h*d_k, (h+1)*d_k) of the
// projected Q = X_q W_Q, and KV head g columns [g*d_k, (g+1)*d_k) of K = X_kv W_K.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "qkscope/attention.hpp"
#include "qkscope/detail/check.hpp"

namespace qkscope {

/// Learnable parameters of one multi-head attention layer (no projection biases).
template <class T>
struct MultiHeadWeights {
  Mat<T> W_Q;  // (d_model, H * d_k)
  Mat<T> W_K;  // (d_model_kv, H_kv * d_k)
  Mat<T> W_V;  // (d_model_kv, H_kv * d_v)
  Mat<T> W_O;  // (H * d_v, d_out)
  /// Scoring-function parameters of each query head (H entries), e.g. W (d_k, d_k) for
  /// "bilinear". Empty = init_params(score, d_k, d_k, d_h, param_seed + h) for head h.
  std::vector<ScoreParams<T>> score_params;
};

/// Everything that configures a multi-head call besides the inputs and the weights.
template <class T>
struct MultiHeadConfig {
  Eigen::Index batch = 1;      // B: sequences stacked as row blocks (see the file header)
  int heads = 1;               // H: query heads
  std::optional<int> kv_heads; // H_kv: key/value heads (default H); H % H_kv == 0
                               //   H_kv == H: MHA; 1 < H_kv < H: GQA; H_kv == 1: MQA
  Eigen::Index d_k = 0;        // per-head query/key width, >= 1
  Eigen::Index d_v = 0;        // per-head value width, >= 1
  /// Shared by every (sequence, head): score name, scale, temperature, mask, normalizer,
  /// bias (softcap, relative table, dense (L_q, L_k)). Leave bias.alibi_slope empty when
  /// `alibi` is on, and mask.key_length is AND-combined with key_lengths.
  AttentionConfig<T> attention;
  /// ALiBi: head h gets slope alibi_slopes(H)[h] (Press, Smith & Lewis 2022, §3).
  bool alibi = false;
  /// T5 relative position bias with one learnable table per head (Raffel et al. 2020,
  /// §2.1): head h adds t5_tables(h, bucket(j - (i + o))), with the bucketing of
  /// attention.bias.t5. (H, num_buckets); empty = none. Leave attention.bias.t5_table empty
  /// then (attention.bias.t5_table alone is one table shared by every head: dt5_table).
  Mat<T> t5_tables;
  /// Key padding per sequence: keys j >= key_lengths[b] of sequence b are masked;
  /// 0 masks the whole sequence (output 0). Empty = every key valid. B entries.
  std::vector<Eigen::Index> key_lengths;
  /// Hidden width d_h used by default "additive" parameters (0 = d_k), and their seed.
  Eigen::Index score_hidden = 0;
  std::uint64_t param_seed = 0;
};

/// Output and per-(sequence, head) intermediates of multi_head_forward.
template <class T>
struct MultiHeadResult {
  Mat<T> output;  // concat_h(head_h) W_O                          (B*L_q, d_out)
  Mat<T> Q;       // X_q W_Q                                        (B*L_q, H*d_k)
  Mat<T> K;       // X_kv W_K                                       (B*L_k, H_kv*d_k)
  Mat<T> V;       // X_kv W_V                                       (B*L_k, H_kv*d_v)
  Mat<T> concat;  // head outputs side by side, before W_O          (B*L_q, H*d_v)
  /// Single-head results (weights (L_q, L_k), logsumexp, entropy, ...), index b*H + h.
  std::vector<AttentionResult<T>> heads;
  Eigen::Index batch = 0, num_heads = 0, L_q = 0, L_k = 0;

  const AttentionResult<T>& head(Eigen::Index b, Eigen::Index h) const {
    detail::require(b >= 0 && b < batch && h >= 0 && h < num_heads,
                    "head(b, h): (" + std::to_string(b) + ", " + std::to_string(h) +
                        ") is outside (B, H) = " + detail::shape_str(batch, num_heads));
    return heads[std::size_t(b * num_heads + h)];
  }
};

/// Gradients of a scalar loss L given dL/d output.
/// Self-attention (X_q and X_kv the same matrix): dL/dX = dX_q + dX_kv (the caller sums).
template <class T>
struct MultiHeadGrads {
  Mat<T> dX_q, dX_kv;                    // (B*L_q, d_model), (B*L_k, d_model_kv)
  Mat<T> dW_Q, dW_K, dW_V, dW_O;         // shapes of the weights
  std::vector<ScoreParams<T>> dscore_params;  // H entries, summed over the batch
  Vec<T> drelative;                      // of attention.bias.relative (empty if unused)
  Mat<T> dt5_tables;                     // of t5_tables, (H, num_buckets) (empty if unused)
  Vec<T> dt5_table;                      // of attention.bias.t5_table, one table shared by every
                                         //   head, summed over heads and batch (empty if unused)
  Mat<T> ddense;                         // of attention.bias.dense (empty if unused)
  double dtemperature = 0;               // dL/dtau
};

namespace detail {

/// The shapes of one validated multi-head call.
struct MhaShape {
  Eigen::Index B, L_q, L_k, d_model, d_model_kv, H, H_kv, group, d_k, d_v, d_out;
  /// KV head serving query head h (GQA: Ainslie et al. 2023, §2.2): h / (H / H_kv).
  Eigen::Index kv_head(Eigen::Index h) const { return h / group; }
};

/// Checks every shape and setting of a multi-head call; messages name the argument.
template <class T>
MhaShape check_mha(const Mat<T>& X_q, const Mat<T>& X_kv, const MultiHeadWeights<T>& w,
                   const MultiHeadConfig<T>& cfg) {
  MhaShape s{};
  require(cfg.batch >= 1, "batch (B) must be >= 1, got " + std::to_string(cfg.batch));
  require(cfg.heads >= 1, "heads (H) must be >= 1, got " + std::to_string(cfg.heads));
  const int H_kv = cfg.kv_heads.value_or(cfg.heads);
  require(H_kv >= 1, "kv_heads (H_kv) must be >= 1, got " + std::to_string(H_kv));
  require(cfg.heads % H_kv == 0, "heads (H = " + std::to_string(cfg.heads) +
                                     ") must be a multiple of kv_heads (H_kv = " +
                                     std::to_string(H_kv) + ")");
  require(cfg.d_k >= 1 && cfg.d_v >= 1, "head widths d_k and d_v must be >= 1, got d_k = " +
                                            std::to_string(cfg.d_k) + ", d_v = " +
                                            std::to_string(cfg.d_v));
  require_nonempty(X_q, "X_q (B*L_q x d_model)");
  require_nonempty(X_kv, "X_kv (B*L_k x d_model_kv)");
  require(X_q.rows() % cfg.batch == 0, "X_q must have B*L_q rows with B = " +
                                           std::to_string(cfg.batch) + ", got shape " + shape_of(X_q));
  require(X_kv.rows() % cfg.batch == 0, "X_kv must have B*L_k rows with B = " +
                                            std::to_string(cfg.batch) + ", got shape " + shape_of(X_kv));
  require_finite(X_q, "X_q");
  require_finite(X_kv, "X_kv");
  s.B = cfg.batch;
  s.L_q = X_q.rows() / s.B;
  s.L_k = X_kv.rows() / s.B;
  s.d_model = X_q.cols();
  s.d_model_kv = X_kv.cols();
  s.H = cfg.heads;
  s.H_kv = H_kv;
  s.group = s.H / s.H_kv;
  s.d_k = cfg.d_k;
  s.d_v = cfg.d_v;
  const std::string H = std::to_string(s.H), Hk = std::to_string(s.H_kv);
  require_shape(w.W_Q, s.d_model, s.H * s.d_k, ("W_Q (d_model x H*d_k, H = " + H + ")").c_str());
  require_shape(w.W_K, s.d_model_kv, s.H_kv * s.d_k,
                ("W_K (d_model_kv x H_kv*d_k, H_kv = " + Hk + ")").c_str());
  require_shape(w.W_V, s.d_model_kv, s.H_kv * s.d_v,
                ("W_V (d_model_kv x H_kv*d_v, H_kv = " + Hk + ")").c_str());
  require(w.W_O.rows() == s.H * s.d_v && w.W_O.cols() >= 1,
          "W_O (H*d_v x d_out, H = " + H + ") must have " + std::to_string(s.H * s.d_v) +
              " rows and >= 1 column, got " + shape_of(w.W_O));
  s.d_out = w.W_O.cols();
  require_finite(w.W_Q, "W_Q");
  require_finite(w.W_K, "W_K");
  require_finite(w.W_V, "W_V");
  require_finite(w.W_O, "W_O");
  require(w.score_params.empty() || Eigen::Index(w.score_params.size()) == s.H,
          "score_params must be empty or have H = " + H + " entries (one per head), got " +
              std::to_string(w.score_params.size()));
  if (!cfg.key_lengths.empty()) {
    require(Eigen::Index(cfg.key_lengths.size()) == s.B,
            "key_lengths must have B = " + std::to_string(s.B) + " entries, got " +
                std::to_string(cfg.key_lengths.size()));
    for (std::size_t b = 0; b < cfg.key_lengths.size(); ++b)
      require(cfg.key_lengths[b] >= 0 && cfg.key_lengths[b] <= s.L_k,
              "key_lengths[" + std::to_string(b) + "] (batch index " + std::to_string(b) +
                  ") must be in [0, L_k = " + std::to_string(s.L_k) + "], got " +
                  std::to_string(cfg.key_lengths[b]));
  }
  require(!(cfg.alibi && cfg.attention.bias.alibi_slope),
          "alibi (per-head slopes) and attention.bias.alibi_slope (one slope) are both set; "
          "use one");
  if (cfg.t5_tables.size()) {
    require(cfg.attention.bias.t5.has_value(),
            "t5_tables is set but attention.bias.t5 (the bucketing) is not");
    require(cfg.attention.bias.t5_table.size() == 0,
            "t5_tables (one per head) and attention.bias.t5_table (one shared) are both set; use one");
    validate_t5(*cfg.attention.bias.t5, "attention.bias.t5");
    require_shape(cfg.t5_tables, s.H, cfg.attention.bias.t5->num_buckets, "t5_tables (H x num_buckets)");
  }
  return s;
}

/// Score parameters of each head: the given ones, or seeded defaults (seed + h).
template <class T>
std::vector<ScoreParams<T>> head_params(const MultiHeadWeights<T>& w, const MultiHeadConfig<T>& cfg,
                                        const MhaShape& s) {
  if (!w.score_params.empty()) return w.score_params;
  std::vector<ScoreParams<T>> p;
  const Eigen::Index d_h = cfg.score_hidden > 0 ? cfg.score_hidden : s.d_k;
  for (Eigen::Index h = 0; h < s.H; ++h)
    p.push_back(init_params<T>(cfg.attention.score, s.d_k, s.d_k, d_h, cfg.param_seed + std::uint64_t(h)));
  return p;
}

/// The single-head config of sequence b: the shared one plus its key padding.
template <class T>
AttentionConfig<T> sequence_config(const MultiHeadConfig<T>& cfg, Eigen::Index b) {
  AttentionConfig<T> c = cfg.attention;
  if (!cfg.key_lengths.empty()) {
    const Eigen::Index n = cfg.key_lengths[std::size_t(b)];
    c.mask.key_length = c.mask.key_length ? std::min(*c.mask.key_length, n) : n;
  }
  return c;
}

/// Rethrows a single-head error with the (sequence, head) it came from.
[[noreturn]] inline void rethrow_head(const std::invalid_argument& e, Eigen::Index b, Eigen::Index h) {
  fail("multi-head attention (batch " + std::to_string(b) + ", head " + std::to_string(h) +
       "): " + e.what());
}

}  // namespace detail
}  // namespace qkscope
