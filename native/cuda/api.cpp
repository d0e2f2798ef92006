// native/cuda/api.cpp — host side of the CUDA backend (qkscope_cuda.hpp): validates a call
// with the core's own checks and messages, resolves mask and biases into the tile/ PODs,
// copies inputs to the device, prepares each scoring function for the kernels (kernels/prep.cuh),
// launches the chosen version through a Backend (GPU or CPU interpreter) and copies back.
// Compiled by the host compiler: no CUDA headers here, the kernels sit behind backend.hpp.
#include "qkscope_cuda.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "backend.hpp"
#include "qkscope/detail/logit_range.hpp"
#include "qkscope/tile/from_core.hpp"

namespace qkscope::cuda {
namespace {

using detail::Backend;
using kern::Elem;
using qkscope::detail::require;

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
  tile::Heads heads;
  int L_q = 0, L_k = 0, d_q = 0, d_k = 0, d_v = 0;
  int d = 0;         // kernel width: d_k (dot family), d_h (additive), 2 or 8 (linear_concat)
  bool additive = false;
  double scale = 1;
  MaskFn mask;
  Elem elem = Elem::f32;
};

const char* precision_name(Precision p) {
  return p == Precision::fp32 ? "fp32" : (p == Precision::fp16 ? "fp16" : "bf16");
}

Backend& backend_for(const Options& o) {
  return o.interpret ? detail::interpreter_backend() : detail::gpu_backend();
}

void require_finite_params(const ScoreParams<float>& p) {
  qkscope::detail::require_finite(p.W, "params.W");
  qkscope::detail::require_finite(p.W_q, "params.W_q");
  qkscope::detail::require_finite(p.W_k, "params.W_k");
  qkscope::detail::require_finite(p.v, "params.v");
  qkscope::detail::require_finite(p.b, "params.b");
  qkscope::detail::require_finite(p.w, "params.w");
}

Plan make_plan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
               const AttentionConfig<float>& cfg, const Options& opt, int version, Backend& b) {
  require(version >= 1 && version <= kVersions,
          "cuda: kernel version must be 1.." + std::to_string(kVersions) + ", got " + std::to_string(version));
  Plan pl;
  const int kv = opt.kv_heads ? opt.kv_heads : opt.heads;
  require(opt.batch >= 1 && opt.heads >= 1 && kv >= 1 && opt.heads % kv == 0,
          "cuda: batch and heads must be >= 1 and heads a multiple of kv_heads, got batch = " +
              std::to_string(opt.batch) + ", heads = " + std::to_string(opt.heads) +
              ", kv_heads = " + std::to_string(kv));
  require(Eigen::Index(opt.batch) * opt.heads <= 65535 && Eigen::Index(opt.batch) * kv <= 65535,
          "cuda: batch * heads must be <= 65535 (one grid dimension), got " +
              std::to_string(Eigen::Index(opt.batch) * opt.heads));
  pl.heads = {opt.batch, opt.heads, kv};
  qkscope::detail::require_nonempty(Q, "query");
  qkscope::detail::require_nonempty(K, "key");
  qkscope::detail::require_nonempty(V, "value");
  const Eigen::Index nq = Eigen::Index(opt.batch) * opt.heads, nkv = Eigen::Index(opt.batch) * kv;
  require(Q.rows() % nq == 0, "query must have batch * heads * L_q rows (batch * heads = " + std::to_string(nq) +
                                  "), got " + std::to_string(Q.rows()));
  require(K.rows() % nkv == 0, "key must have batch * kv_heads * L_k rows (batch * kv_heads = " +
                                   std::to_string(nkv) + "), got " + std::to_string(K.rows()));
  require(V.rows() == K.rows(), "value must have as many rows as key (" + std::to_string(K.rows()) + "), got shape " +
                                    qkscope::detail::shape_of(V));
  const Eigen::Index L_q = Q.rows() / nq, L_k = K.rows() / nkv;
  require(L_q <= tile::kMaxLength && L_k <= tile::kMaxLength && Q.cols() <= 65536 && K.cols() <= 65536 &&
              V.cols() <= 65536,
          "cuda: L_q, L_k must be <= 2^29 and widths <= 65536");
  qkscope::detail::require_finite(Q, "query");
  qkscope::detail::require_finite(K, "key");
  qkscope::detail::require_finite(V, "value");
  require_finite_params(params);
  pl.L_q = int(L_q);
  pl.L_k = int(L_k);
  pl.d_q = int(Q.cols());
  pl.d_k = int(K.cols());
  pl.d_v = int(V.cols());
  const ScoreShape shape{L_q, L_k, Q.cols(), K.cols()};
  visit_score(cfg.score, [&](auto f) {
    using F = decltype(f);
    F::validate(shape, params);
    pl.scale = cfg.scale.value_or(F::default_scale(shape));
  });
  require(std::isfinite(pl.scale), "scale must be finite, got " + qkscope::detail::num(pl.scale));
  require(cfg.normalizer == "softmax", "normalizer '" + cfg.normalizer +
                                           "' is not supported by the CUDA backend (softmax only; the core's "
                                           "attention_forward has every normalizer)");
  qkscope::detail::check_temperature_in<float>(cfg.temperature, true, cfg.normalizer);
  require(float(cfg.temperature) > 0.f && std::isfinite(float(1.0 / cfg.temperature)),
          "temperature " + qkscope::detail::num(cfg.temperature) + " underflows in fp32");
  pl.mask = resolve_mask(cfg.mask, L_q, L_k);
  qkscope::detail::validate_bias(cfg.bias, L_q, L_k);
  // The kernels fold scale / tau into the logits before subtracting the row maximum: past
  // the float range a visible key would read as masked (docs/RELIABILITY.md). The core has
  // no such limit, so the call is refused with a pointer to it, as for other normalizers.
  require(qkscope::detail::logits_fold_safe<float>(cfg.score, Q, K, params, pl.scale, cfg.temperature, cfg.bias,
                                                   L_q, L_k),
          "cuda: |scale * f(q, k) + bias| / temperature may exceed the float range for these inputs (temperature " +
              qkscope::detail::num(cfg.temperature) + "); use the core's attention_forward, which subtracts the "
              "row maximum before dividing by the temperature");
  if (!opt.alibi_slopes.empty()) {
    require(int(opt.alibi_slopes.size()) == opt.heads,
            "Options::alibi_slopes must have one slope per head (" + std::to_string(opt.heads) + "), got " +
                std::to_string(opt.alibi_slopes.size()));
    require(!cfg.bias.alibi_slope, "set either cfg.bias.alibi_slope or Options::alibi_slopes, not both");
    for (double s : opt.alibi_slopes)
      require(std::isfinite(s) && s >= 0, "Options::alibi_slopes must be finite and >= 0, got " + qkscope::detail::num(s));
  }
  if (!opt.key_lengths.empty()) {
    require(int(opt.key_lengths.size()) == opt.batch, "Options::key_lengths must have one entry per sequence (" +
                                                          std::to_string(opt.batch) + "), got " +
                                                          std::to_string(opt.key_lengths.size()));
    for (Eigen::Index n : opt.key_lengths)
      require(n >= 0 && n <= L_k, "Options::key_lengths entries must be in [0, L_k = " + std::to_string(L_k) +
                                      "], got " + std::to_string(n));
  }

  // What the kernels support.
  pl.additive = cfg.score == "additive";
  const bool mma = version >= 4;
  if (mma) {
    require(opt.precision != Precision::fp32, "kernel version " + std::to_string(version) +
                                                  " runs on tensor cores: precision must be fp16 or bf16, got fp32");
    require(!pl.additive, "score 'additive' is not supported by kernel version " + std::to_string(version) +
                              " (tensor cores: dot family only; use versions 1-3)");
    pl.elem = opt.precision == Precision::fp16 ? Elem::f16 : Elem::bf16;
  } else {
    require(opt.precision == Precision::fp32, "kernel version " + std::to_string(version) +
                                                  " takes fp32 inputs, got precision " +
                                                  precision_name(opt.precision) + " (fp16/bf16: versions 4-5)");
  }
  if (cfg.score == "dot" || cfg.score == "scaled_dot" || cfg.score == "cosine") pl.d = pl.d_q;
  else if (cfg.score == "bilinear") pl.d = pl.d_k;
  else if (cfg.score == "linear_concat") pl.d = version == 5 ? 8 : 2;
  else pl.d = int(params.v.size());  // additive: d_h
  const std::string dims = "d = " + std::to_string(pl.d) + ", d_v = " + std::to_string(pl.d_v);
  std::size_t smem = 0;
  if (version == 2) smem = kern::v2_smem_bytes();
  if (version == 3) {
    require(kern::v3_variant(pl.additive, pl.d_v).rm != 0,
            "kernel version 3 supports d_v <= 512, got d_v = " + std::to_string(pl.d_v));
    smem = kern::v3_smem_bytes(pl.additive, pl.d, pl.d_v);
  }
  if (mma) {
    const int D = kern::padded_dim(pl.d, pl.d_v);
    require(D != 0, "kernel version " + std::to_string(version) + " supports head dims up to 128, got " + dims);
    if (version == 5)
      require(pl.d % 8 == 0 && pl.d_v % 8 == 0,
              "kernel version 5 copies 16-byte chunks: d and d_v must be multiples of 8, got " + dims);
    smem = kern::mma_smem_bytes(D, version == 5 ? 2 : 1);
  }
  const std::size_t limit = b.smem_limit();
  require(smem <= limit, "kernel version " + std::to_string(version) + " needs " + std::to_string(smem) +
                             " bytes of shared memory for " + dims + ", the device allows " + std::to_string(limit));
  return pl;
}

/// The scorer's inputs on the device: the kernels' q, k (width pl.d), v, add_v, fp32 or E.
struct DeviceInputs {
  const float* qs = nullptr;  // fp32 (kernel width pl.d)
  const float* ks = nullptr;
  const float* v = nullptr;
  const void* qe = nullptr;   // what the kernel reads (fp32 or converted)
  const void* ke = nullptr;
  const void* ve = nullptr;
  const float* add_v = nullptr;
};

DeviceInputs prepare_inputs(Buffers& buf, const Plan& pl, const Matrix& Q, const Matrix& K, const Matrix& V,
                            const ScoreParams<float>& prm, const std::string& score) {
  Backend& b = buf.backend();
  DeviceInputs in;
  const float* q32 = buf.upload(Q.data(), std::size_t(Q.size()));
  const float* k32 = buf.upload(K.data(), std::size_t(K.size()));
  in.v = buf.upload(V.data(), std::size_t(V.size()));
  auto matmul = [&](const float* x, long long rows, int kdim, const float* y_dev, long long sk, long long sn,
                    const float* bias_dev, int n) {
    float* out = buf.alloc<float>(std::size_t(rows) * n);
    kern::MatmulParams mp;
    mp.x = x;
    mp.y = y_dev;
    mp.stride_k = sk;
    mp.stride_n = sn;
    mp.bias = bias_dev;
    mp.out = out;
    mp.m = rows;
    mp.kdim = kdim;
    mp.n = n;
    b.matmul(mp);
    return static_cast<const float*>(out);
  };
  in.qs = q32;
  in.ks = k32;
  if (score == "cosine") {
    float* qn = buf.alloc<float>(std::size_t(Q.size()));
    float* kn = buf.alloc<float>(std::size_t(K.size()));
    b.normalize_rows(q32, qn, Q.rows(), pl.d_q);
    b.normalize_rows(k32, kn, K.rows(), pl.d_k);
    in.qs = qn;
    in.ks = kn;
  } else if (score == "bilinear") {  // Q W: (rows, d_q) (d_q, d_k)
    in.qs = matmul(q32, Q.rows(), pl.d_q, buf.upload(prm.W.data(), std::size_t(prm.W.size())), pl.d_k, 1, nullptr,
                   pl.d_k);
  } else if (score == "linear_concat") {  // [Q w_q, 1, 0..] . [1, K w_k, 0..] = a_i + c_j
    const int cw = pl.d;
    Matrix Yq = Matrix::Zero(pl.d_q, cw), Yk = Matrix::Zero(pl.d_k, cw);
    Yq.col(0) = prm.w.head(pl.d_q);
    Yk.col(1) = prm.w.tail(pl.d_k);
    Vector bq = Vector::Zero(cw), bk = Vector::Zero(cw);
    bq(1) = 1;
    bk(0) = 1;
    in.qs = matmul(q32, Q.rows(), pl.d_q, buf.upload(Yq.data(), std::size_t(Yq.size())), cw, 1,
                   buf.upload(bq.data(), std::size_t(cw)), cw);
    in.ks = matmul(k32, K.rows(), pl.d_k, buf.upload(Yk.data(), std::size_t(Yk.size())), cw, 1,
                   buf.upload(bk.data(), std::size_t(cw)), cw);
  } else if (score == "additive") {  // A = Q W_q^T + b, B = K W_k^T: Y(k=c, n=h) = W[h][c]
    const int dh = pl.d;
    const float* bias = prm.b.size() ? buf.upload(prm.b.data(), std::size_t(dh)) : nullptr;
    in.qs = matmul(q32, Q.rows(), pl.d_q, buf.upload(prm.W_q.data(), std::size_t(prm.W_q.size())), 1, pl.d_q, bias,
                   dh);
    in.ks = matmul(k32, K.rows(), pl.d_k, buf.upload(prm.W_k.data(), std::size_t(prm.W_k.size())), 1, pl.d_k,
                   nullptr, dh);
    in.add_v = buf.upload(prm.v.data(), std::size_t(dh));
  }
  in.qe = in.qs;
  in.ke = in.ks;
  in.ve = in.v;
  if (pl.elem != Elem::f32) {
    auto convert = [&](const float* x, std::size_t n) {
      void* out = buf.alloc<std::uint16_t>(n);
      b.convert(x, out, (long long)n, pl.elem);
      return static_cast<const void*>(out);
    };
    in.qe = convert(in.qs, std::size_t(Q.rows()) * pl.d);
    in.ke = convert(in.ks, std::size_t(K.rows()) * pl.d);
    in.ve = convert(in.v, std::size_t(V.size()));
  }
  return in;
}

/// The launch parameters without outputs: inputs, mask (keep mask and block map uploaded),
/// modifiers (relative table and dense bias uploaded), per-head slopes and key lengths.
kern::FwdParams make_params(Buffers& buf, const Plan& pl, const DeviceInputs& in, const AttentionConfig<float>& cfg,
                            const Options& opt) {
  kern::FwdParams p;
  p.heads = pl.heads;
  p.L_q = pl.L_q;
  p.L_k = pl.L_k;
  p.d = pl.d;
  p.d_v = pl.d_v;
  p.elem = pl.elem;
  p.additive = pl.additive;
  p.q = in.qe;
  p.k = in.ke;
  p.v = in.ve;
  p.add_v = in.add_v;
  p.mask = tile::to_tile(pl.mask);
  if (p.mask.keep) {
    const std::size_t n = std::size_t(pl.L_q) * std::size_t(pl.L_k);
    tile::BlockClassifier bc{p.mask, kern::kMapBr, kern::kMapBc, nullptr};
    std::vector<std::uint8_t> map(std::size_t(bc.num_q_blocks()) * std::size_t(bc.num_k_blocks()));
    tile::build_block_map(p.mask, kern::kMapBr, kern::kMapBc, map.data());  // on the host keep mask
    p.block_map = buf.upload(map.data(), map.size());
    p.mask.keep = buf.upload(p.mask.keep, n);
  }
  p.mods = tile::to_tile(cfg.bias, pl.scale, cfg.temperature, pl.mask);
  if (p.mods.relative) p.mods.relative = buf.upload(p.mods.relative, std::size_t(2 * p.mods.R + 1));
  if (p.mods.dense) p.mods.dense = buf.upload(p.mods.dense, std::size_t(pl.L_q) * std::size_t(pl.L_k));
  if (!opt.alibi_slopes.empty()) {
    std::vector<float> s(opt.alibi_slopes.begin(), opt.alibi_slopes.end());
    p.slopes = buf.upload(s.data(), s.size());
  }
  if (!opt.key_lengths.empty()) {
    std::vector<int> kl(opt.key_lengths.begin(), opt.key_lengths.end());
    p.key_lengths = buf.upload(kl.data(), kl.size());
  }
  return p;
}

/// Host side of back through xhat = x / max(|x|, eps) (score::Cosine's rule, both branches).
Matrix through_normalize(const Matrix& X, const Matrix& dXh) {
  const Vector n = score::Cosine::clamped_norms(X);
  Matrix dX(X.rows(), X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const Eigen::RowVectorXf xh = X.row(i) / n(i);
    if (X.row(i).stableNorm() <= float(score::Cosine::eps)) dX.row(i) = dXh.row(i) / n(i);
    else dX.row(i) = (dXh.row(i) - xh * xh.dot(dXh.row(i))) / n(i);
  }
  return dX;
}

}  // namespace

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
      : b(be), buf(be), pl(make_plan(Q, K, V, params, cfg, opt, opt.version, be)), version(opt.version) {
    const DeviceInputs in = prepare_inputs(buf, pl, Q, K, V, params, cfg.score);
    p = make_params(buf, pl, in, cfg, opt);
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
  // For the chain rule on the host.
  Matrix Q, K;
  ScoreParams<float> params;
  std::string score;
  Eigen::Index v_rows = 0, v_cols = 0;
  Impl(Backend& be, const Matrix& Qm, const Matrix& Km, const Matrix& V, const ScoreParams<float>& prm,
       const AttentionConfig<float>& cfg, const Result& fwd, const Matrix& dO, const Options& opt)
      : b(be), buf(be), pl(make_plan(Qm, Km, V, prm, cfg, opt, 3, be)), Q(Qm), K(Km), params(prm), score(cfg.score),
        v_rows(V.rows()), v_cols(V.cols()) {
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
    const DeviceInputs in = prepare_inputs(buf, pl, Qm, Km, V, prm, cfg.score);
    bp.f = make_params(buf, pl, in, cfg, opt);
    bp.f.o = buf.upload(fwd.output.data(), std::size_t(fwd.output.size()));
    bp.f.lse = buf.upload(fwd.logsumexp.data(), rows);
    bp.dout = buf.upload(dO.data(), std::size_t(dO.size()));
    bp.delta = buf.alloc<float>(rows);
    bp.dq = buf.alloc<float>(std::size_t(Qm.rows()) * pl.d);
    bp.dk = buf.alloc<float>(std::size_t(Km.rows()) * pl.d);
    bp.dv = buf.alloc<float>(std::size_t(V.size()));
  }
};

BackwardPlan::BackwardPlan(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& params,
                           const AttentionConfig<float>& cfg, const Result& fwd, const Matrix& dO,
                           const Options& opt) {
  require(opt.version == 3, "the CUDA backward is kernel version 3 (fp32 flash backward), got version " +
                                std::to_string(opt.version));
  require(cfg.score != "additive",
          "score 'additive' is forward-only in the CUDA backend (its backward: qkscope::tiled or the core)");
  impl_ = std::make_unique<Impl>(backend_for(opt), Q, K, V, params, cfg, fwd, dO, opt);
}
BackwardPlan::~BackwardPlan() = default;
void BackwardPlan::launch() { impl_->b.backward(impl_->bp); }
void BackwardPlan::synchronize() { impl_->b.synchronize(); }

AttentionGrads<float> BackwardPlan::grads() {
  Impl& m = *impl_;
  m.b.synchronize();
  const Plan& pl = m.pl;
  Matrix dQs(m.Q.rows(), pl.d), dKs(m.K.rows(), pl.d);
  AttentionGrads<float> g;
  g.dV.resize(m.v_rows, m.v_cols);
  m.b.download(dQs.data(), m.bp.dq, std::size_t(dQs.size()) * sizeof(float));
  m.b.download(dKs.data(), m.bp.dk, std::size_t(dKs.size()) * sizeof(float));
  m.b.download(g.dV.data(), m.bp.dv, std::size_t(g.dV.size()) * sizeof(float));
  // Back through the preprocessing (host, Eigen): the chain rule of kernels/prep.cuh.
  const std::string& s = m.score;
  if (s == "dot" || s == "scaled_dot") {
    g.dQ = std::move(dQs);
    g.dK = std::move(dKs);
  } else if (s == "cosine") {
    g.dQ = through_normalize(m.Q, dQs);
    g.dK = through_normalize(m.K, dKs);
  } else if (s == "bilinear") {
    g.dQ = dQs * m.params.W.transpose();
    g.dparams.W = m.Q.transpose() * dQs;
    g.dK = std::move(dKs);
  } else {  // linear_concat: column 0 of dQs is dL/da, column 1 of dKs is dL/dc
    g.dQ = dQs.col(0) * m.params.w.head(pl.d_q).transpose();
    g.dK = dKs.col(1) * m.params.w.tail(pl.d_k).transpose();
    g.dparams.w.resize(pl.d_q + pl.d_k);
    g.dparams.w.head(pl.d_q) = m.Q.transpose() * dQs.col(0);
    g.dparams.w.tail(pl.d_k) = m.K.transpose() * dKs.col(1);
  }
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
