// native/cuda/api.cpp — the host API of the CUDA backend (qkscope_cuda.hpp): a call is
// validated and its scoring function prepared (api_plan.cpp), its inputs uploaded
// (api_params.cpp), then the chosen version is launched through a Backend (GPU or CPU
// interpreter) and the results copied back. Host compiler only: no CUDA headers here.
#include "qkscope_cuda.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "api_detail.hpp"

namespace qkscope::cuda {

using detail::Backend;
using detail::Buffers;
using detail::Plan;
using detail::backend_for;
using detail::make_params;
using detail::make_plan;
using qkscope::detail::require;

const char* version_name(int v) {
  switch (v) {
    case 1: return "v1 naive (thread per score, separate softmax and PV)";
    case 2: return "v2 shared-memory tiled (S in global memory)";
    case 3: return "v3 flash, online softmax, fp32 (forward + backward)";
    case 4: return "v4 flash on tensor cores (mma.sync m16n8k16)";
    case 5: return "v5 flash on tensor cores + cp.async double buffering";
    default: return "unknown version";
  }
}

bool device_available(std::string* reason) {
  const detail::GpuInfo info = detail::gpu_info();
  if (reason) *reason = info.available ? std::string() : info.reason;
  return info.available;
}

std::string device_description() {
  const detail::GpuInfo i = detail::gpu_info();
  if (!i.available) return "no CUDA device: " + i.reason;
  return i.name + " (sm_" + std::to_string(i.cc_major) + std::to_string(i.cc_minor) + ", " +
         std::to_string(i.sm_count) + " SMs, " + std::to_string(i.memory_bytes >> 30) + " GiB)";
}

struct ForwardPlan::Impl {
  Backend& b;
  Buffers buf;
  Plan pl;
  kern::FwdParams p;
  int version;
  Impl(Backend& be, const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
       const AttentionConfig<float>& cfg, const Options& opt)
      : b(be), buf(be), pl(make_plan(Q, K, V, params, cfg, opt, opt.version, false, be)), version(opt.version) {
    p = make_params(buf, pl, V, cfg, opt);
    const std::size_t rows = std::size_t(pl.heads.count()) * std::size_t(pl.L_q);
    p.o = buf.alloc<float>(rows * std::size_t(pl.d_v));
    p.lse = buf.alloc<float>(rows);
    if (version <= 2) p.scores = buf.alloc<float>(rows * std::size_t(pl.L_k));
    if (version == 3) {
      const int br = 16 * kern::v3_variant(p.additive, pl.d_v).rm;
      p.kv_splits = kern::v3_kv_splits(p.additive, (pl.L_q + br - 1) / br * (long long)pl.heads.count(), pl.L_k);
      if (p.kv_splits > 1) {
        p.part_o = buf.alloc<float>(std::size_t(p.kv_splits) * rows * std::size_t(pl.d_v));
        p.part_lse = buf.alloc<float>(std::size_t(p.kv_splits) * rows);
      }
    }
  }
};

ForwardPlan::ForwardPlan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
                         const AttentionConfig<float>& cfg, const Options& opt) {
  require(opt.version >= 1 && opt.version <= kVersions,
          "cuda: kernel version must be 1.." + std::to_string(kVersions) + ", got " + std::to_string(opt.version));
  impl_ = std::make_unique<Impl>(backend_for(opt), Q, K, V, params, cfg, opt);
}
ForwardPlan::~ForwardPlan() = default;
void ForwardPlan::launch() { impl_->b.forward(impl_->version, impl_->p); }
void ForwardPlan::synchronize() { impl_->b.synchronize(); }

Result ForwardPlan::result() {
  Impl& m = *impl_;
  m.b.synchronize();
  const std::size_t rows = std::size_t(m.pl.heads.count()) * std::size_t(m.pl.L_q);
  Result r;
  r.output.resize(Eigen::Index(rows), m.pl.d_v);
  r.logsumexp.resize(Eigen::Index(rows));
  m.b.download(r.output.data(), m.p.o, rows * std::size_t(m.pl.d_v) * sizeof(float));
  m.b.download(r.logsumexp.data(), m.p.lse, rows * sizeof(float));
  r.scale = m.pl.scale;
  r.version = m.version;
  for (Eigen::Index i = 0; i < r.logsumexp.size(); ++i) {
    const float v = r.logsumexp(i);
    require(!std::isnan(v) && v != std::numeric_limits<float>::infinity(),
            "scores overflowed in row " + std::to_string(i % m.pl.L_q) + " of head " +
                std::to_string(i / m.pl.L_q) + " (scale or inputs too large for this precision)");
  }
  return r;
}

Result attention_forward(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
                         const AttentionConfig<float>& cfg, const Options& opt) {
  ForwardPlan plan(Q, K, V, params, cfg, opt);
  plan.launch();
  return plan.result();
}

struct BackwardPlan::Impl {
  Backend& b;
  Buffers buf;
  Plan pl;
  kern::BwdParams bp;
  Eigen::Index v_rows = 0, v_cols = 0;
  Impl(Backend& be, const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& prm,
       const AttentionConfig<float>& cfg, const Result& fwd, const Matrix& dO, const Options& opt)
      : b(be), buf(be), pl(make_plan(Q, K, V, prm, cfg, opt, 3, true, be)), v_rows(V.rows()), v_cols(V.cols()) {
    require(bool(pl.rows.back), "score '" + cfg.score +
                               "' is forward-only in the CUDA backend (its backward: qkscope::cpu or the core)");
    const std::size_t rows = std::size_t(pl.heads.count()) * std::size_t(pl.L_q);
    const std::string dims = "d = " + std::to_string(pl.d) + ", d_v = " + std::to_string(pl.d_v);
    require(kern::padded_dim(pl.d, pl.d_v) != 0, "the CUDA backward supports head dims up to 128, got " + dims);
    const std::size_t smem =
        std::max(kern::v3_bwd_smem_bytes(false, pl.d, pl.d_v), kern::v3_bwd_smem_bytes(true, pl.d, pl.d_v));
    require(smem <= b.smem_limit(), "the CUDA backward needs " + std::to_string(smem) +
                                        " bytes of shared memory for " + dims + ", the device allows " +
                                        std::to_string(b.smem_limit()));
    qkscope::detail::require_shape(dO, Eigen::Index(rows), pl.d_v, "grad_output (rows of output x d_v)");
    qkscope::detail::require_finite(dO, "grad_output");
    qkscope::detail::require_shape(fwd.output, Eigen::Index(rows), pl.d_v, "fwd.output (rows of output x d_v)");
    require(fwd.logsumexp.size() == Eigen::Index(rows), "fwd.logsumexp must have one entry per output row");
    bp.f = make_params(buf, pl, V, cfg, opt);
    bp.f.o = buf.upload(fwd.output.data(), std::size_t(fwd.output.size()));
    bp.f.lse = buf.upload(fwd.logsumexp.data(), rows);
    bp.dout = buf.upload(dO.data(), std::size_t(dO.size()));
    bp.delta = buf.alloc<float>(rows);
    bp.dq = buf.alloc<float>(std::size_t(pl.rows.q.size()));
    bp.dk = buf.alloc<float>(std::size_t(pl.rows.k.size()));
    bp.dv = buf.alloc<float>(std::size_t(V.size()));
  }
};

BackwardPlan::BackwardPlan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
                           const AttentionConfig<float>& cfg, const Result& fwd, const Matrix& dO,
                           const Options& opt) {
  require(opt.version == 3, "the CUDA backward is kernel version 3 (fp32 flash backward), got version " +
                                std::to_string(opt.version));
  // The kernels return no table gradient: an empty dt5_table / drelative must not pass for one.
  for (const auto& [set, name] : {std::pair{cfg.bias.relative.size() > 0, "bias.relative"},
                                  std::pair{cfg.bias.t5.has_value(), "bias.t5_table"}})
    require(!set || opt.frozen_tables,
            std::string("the CUDA backward does not compute dL/d") + name + " (the learnable " + name +
                " table is set): use qkscope::cpu::attention_backward or the core's attention_backward for it, "
                "or set Options::frozen_tables = true to hold the table fixed (dQ, dK, dV only)");
  impl_ = std::make_unique<Impl>(backend_for(opt), Q, K, V, params, cfg, fwd, dO, opt);
}
BackwardPlan::~BackwardPlan() = default;
void BackwardPlan::launch() { impl_->b.backward(impl_->bp); }
void BackwardPlan::synchronize() { impl_->b.synchronize(); }

AttentionGrads<float> BackwardPlan::grads() {
  Impl& m = *impl_;
  m.b.synchronize();
  const Plan& pl = m.pl;
  Matrix dq(pl.rows.q.rows(), pl.d), dk(pl.rows.k.rows(), pl.d);
  AttentionGrads<float> g;
  g.dV.resize(m.v_rows, m.v_cols);
  m.b.download(dq.data(), m.bp.dq, std::size_t(dq.size()) * sizeof(float));
  m.b.download(dk.data(), m.bp.dk, std::size_t(dk.size()) * sizeof(float));
  m.b.download(g.dV.data(), m.bp.dv, std::size_t(g.dV.size()) * sizeof(float));
  ScoreGrads<float> sg = pl.rows.back(dq, dk);  // the scoring function's prepared_backward, on the host
  g.dQ = std::move(sg.dQ);
  g.dK = std::move(sg.dK);
  g.dparams = std::move(sg.dparams);
  return g;
}

AttentionGrads<float> attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V,
                                         const ScoreParams<float>& params, const AttentionConfig<float>& cfg,
                                         const Result& fwd, const Matrix& dO, const Options& opt) {
  BackwardPlan plan(Q, K, V, params, cfg, fwd, dO, opt);
  plan.launch();
  return plan.grads();
}

}  // namespace qkscope::cuda
