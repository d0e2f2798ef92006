// native/cuda/api_detail.hpp — private to the host API (api*.cpp): a validated call (Plan),
// the device allocations of a call (Buffers), and the steps that ForwardPlan and BackwardPlan
// share. Host compiler only: no CUDA headers, the kernels sit behind backend.hpp.
//   api_plan.cpp    validation with the core's checks and messages; the scoring function's
//                   form (its prepare hook, found by visiting the score registry)
//   api_params.cpp  uploads and the kernels' launch parameters (mask, modifiers, block map)
//   api.cpp         the public API of qkscope_cuda.hpp
#pragma once

#include <vector>

#include "backend.hpp"
#include "qkscope_cuda.hpp"

namespace qkscope::cuda::detail {

/// Device allocations of one call, released when the call ends (also on exceptions).
class Buffers {
 public:
  explicit Buffers(Backend& b) : b_(b) {}
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() {
    for (void* p : ptrs_) b_.release(p);
  }
  template <class T>
  T* alloc(std::size_t n) {
    void* p = b_.alloc(n * sizeof(T));
    ptrs_.push_back(p);
    return static_cast<T*>(p);
  }
  template <class T>
  T* upload(const T* src, std::size_t n) {
    T* d = alloc<T>(n);
    if (n) b_.upload(d, src, n * sizeof(T));
    return d;
  }
  Backend& backend() { return b_; }

 private:
  Backend& b_;
  std::vector<void*> ptrs_;
};

/// A validated call: shapes, the resolved mask and scale, and what the kernels will see.
struct Plan {
  pipeline::Heads heads;
  int L_q = 0, L_k = 0, d_q = 0, d_k = 0, d_v = 0;
  int d = 0;              // kernel width: the columns of q and k
  bool additive = false;  // the additive form: S_ij = sum_h add_v[h] tanh(q_ih + k_jh)
  double scale = 1;
  MaskFn mask;
  kern::Elem elem = kern::Elem::f32;
  /// The scoring function's form as the kernels' rows (host, fp32), and the way back from
  /// the kernels' dq, dk to dQ, dK and the parameters (empty for the additive form).
  score::KernelRows<float> rows;
};

Backend& backend_for(const Options& o);

/// Validates a call (throws std::invalid_argument as documented in qkscope_cuda.hpp) and
/// prepares the scoring function's form on the host.
Plan make_plan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
               const AttentionConfig<float>& cfg, const Options& opt, int version, bool backward, Backend& b);

/// The launch parameters without outputs: q, k, v (converted to fp16/bf16 for versions 4-5),
/// the mask (keep mask and block map uploaded), the modifiers (relative and T5 tables, dense bias
/// uploaded), per-head slopes and key lengths.
kern::FwdParams make_params(Buffers& buf, const Plan& pl, const Matrix& V, const AttentionConfig<float>& cfg,
                            const Options& opt);

}  // namespace qkscope::cuda::detail
