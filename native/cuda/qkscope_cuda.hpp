// native/cuda/qkscope_cuda.hpp — the CUDA backend's host API: flash-style attention kernels
// (a ladder of versions 1-5, README.md) for every scoring function of the core, with the
// core's AttentionConfig (scale, temperature, masks, softcap/ALiBi/relative/T5/dense biases),
// GQA by index mapping, and a CPU interpreter of the same kernels for machines without a GPU.
//
//   auto r = qkscope::cuda::attention_forward(Q, K, V, params, cfg, {.version = 3});
//   r.output (L_q, d_v), r.logsumexp (L_q): as qkscope::attention_forward's output/logsumexp.
//
// Inputs are host Eigen matrices; each call copies them to the device, runs the chosen kernel
// version and copies O and logsumexp back (timing-grade use: native/cuda/bench_cuda.cu).
// Several heads: stack them as row blocks (mha/config.hpp's layout): Q (batch*heads*L_q, d_q)
// with head h of sequence b in rows [(b*heads + h) L_q, ... + L_q); K, V
// (batch*kv_heads*L_k, .); query head h reads kv head h / (heads / kv_heads).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "qkscope/attention.hpp"

namespace qkscope::cuda {

/// Input precision of the kernels: fp32 for versions 1-3, fp16 or bf16 for versions 4-5
/// (inputs are rounded on the device; accumulation and softmax stay fp32).
enum class Precision { fp32, fp16, bf16 };

/// The kernel versions ("the ladder"): 1 naive, 2 shared-memory tiled, 3 fused online softmax
/// (flash, fp32; has a backward), 4 tensor cores (mma.sync), 5 tensor cores + cp.async pipelining.
inline constexpr int kVersions = 5;
/// One-line description of version v (1..5).
const char* version_name(int v);

struct Options {
  int version = 3;
  Precision precision = Precision::fp32;
  /// Head layout of Q, K, V (see the file header). kv_heads 0 = heads.
  int batch = 1, heads = 1, kv_heads = 0;
  /// Per-head ALiBi slopes (heads entries, e.g. alibi_slopes(heads)); empty = cfg.bias.alibi_slope.
  std::vector<double> alibi_slopes;
  /// Per-sequence key lengths (batch entries, each in [0, L_k]), AND-combined with cfg.mask.
  std::vector<Eigen::Index> key_lengths;
  /// Run the kernels on the CPU interpreter instead of the GPU (slow; for tests).
  bool interpret = false;
  /// Backward only: the kernels do not compute dL/d bias.relative or dL/d bias.t5_table, so
  /// attention_backward refuses a cfg with either table unless this is true, which says the
  /// tables are held fixed (their gradient fields stay empty; dQ, dK, dV include their effect).
  bool frozen_tables = false;
};

/// Output of a forward call (O(L d) memory: never the (L_q, L_k) matrices).
struct Result {
  Matrix output;     // (batch*heads*L_q, d_v)
  Vector logsumexp;  // (batch*heads*L_q): log sum_j e^{z_ij / tau}, -inf for a fully masked row
  double scale = 1;  // the scale used
  int version = 0;
};

/// Whether a CUDA device can run this build's kernels; `reason` says why not (no driver, no
/// device, or a device the sm_90a build cannot run).
bool device_available(std::string* reason = nullptr);
/// "NVIDIA H200 (sm_90, 132 SMs, 141 GB)" or the reason there is none.
std::string device_description();

/// Attention forward on the GPU (or the interpreter). Same results contract as
/// qkscope::attention_forward (output, logsumexp), within the test suite's tolerance.
/// Throws std::invalid_argument for what the core rejects and, naming it, for what the CUDA
/// backend does not support: normalizers other than softmax; fp16/bf16 on versions 1-3 or
/// fp32 on 4-5; additive on 4-5; d or d_v > 128 on 4-5 (d_v > 512 on 3); d or d_v not a
/// multiple of 8 on 5; shared memory above the device's limit; batch*heads > 65535.
/// Throws std::runtime_error with CUDA's error string for CUDA failures (and when no device
/// is available and !opt.interpret).
Result attention_forward(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
                         const AttentionConfig<float>& cfg, const Options& opt = {});

/// A forward call prepared once and launched many times (what the benchmark times): the
/// constructor validates (as attention_forward), uploads and preprocesses the inputs (cosine
/// normalisation, Q W, projections, fp16/bf16 conversion); launch() only enqueues the attention
/// kernels (asynchronous on the GPU); result() waits and copies O and logsumexp back.
class ForwardPlan {
 public:
  ForwardPlan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
              const AttentionConfig<float>& cfg, const Options& opt = {});
  ~ForwardPlan();
  ForwardPlan(const ForwardPlan&) = delete;
  ForwardPlan& operator=(const ForwardPlan&) = delete;
  void launch();
  void synchronize();
  Result result();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Backward of attention_forward (version 3, fp32) for dO = dL/dO (rows as output):
/// FlashAttention-2 style, P recomputed from fwd.logsumexp. Fills dQ, dK, dV and the score
/// parameters' gradients (bilinear W, linear_concat w); the bias and temperature gradients
/// are not computed (left empty / 0). A learnable table (bias.relative, bias.t5_table) is
/// refused with std::invalid_argument naming it unless opt.frozen_tables (use
/// qkscope::cpu::attention_backward or the core for its gradient). Dot family and
/// linear_concat only: additive is forward-only here (std::invalid_argument). `fwd` must
/// come from attention_forward with the same arguments.
AttentionGrads<float> attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V,
                                         const ScoreParams<float>& params, const AttentionConfig<float>& cfg,
                                         const Result& fwd, const Matrix& dO, const Options& opt = {});

/// The backward prepared once (inputs, O, logsumexp and dO uploaded); launch() enqueues the
/// three backward kernels only; grads() waits and maps the gradients back to Q, K, V, params.
class BackwardPlan {
 public:
  BackwardPlan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
               const AttentionConfig<float>& cfg, const Result& fwd, const Matrix& dO, const Options& opt = {});
  ~BackwardPlan();
  BackwardPlan(const BackwardPlan&) = delete;
  BackwardPlan& operator=(const BackwardPlan&) = delete;
  void launch();
  void synchronize();
  AttentionGrads<float> grads();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qkscope::cuda
