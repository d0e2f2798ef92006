// qkscope_cuda_bench — validate, then time, every CUDA kernel version (native/cuda) on one
// preset, next to an unfused cuBLAS matmul-softmax-matmul baseline (fp32 and fp16).
// Validation first (llm.c's habit): rows of the first and last head — the first and the last
// `--check-rows`/2 queries, so both ends of a causal mask — against the CPU double reference
// (core/reference), with the one tolerance rule (core/reference/tolerance.hpp): at most 2x
// the error of naive float32 math (naive half-precision math for fp16/bf16 versions) + floor.
// Timing: warm median of `--repeats` launches between CUDA events; inputs are uploaded and
// preprocessed once (cuda::ForwardPlan), so only the attention kernels are timed.
//   qkscope_cuda_bench [--preset bert-base|gpt2|llama-7b|additive|long] [--versions 1,2,3,4,5]
//                      [--precision fp16|bf16] [--repeats R] [--backward] [--no-baseline]
//                      [--heads H] [--len L] [--dim D] [--check-rows N] [--csv FILE] [--interpret]
// --interpret runs the validation on the kernels' CPU interpreter (no GPU, no timing).
// Presets: native/bench/presets.hpp, shared with the CPU bench (bert-base H 12, L 512, d 64;
// gpt2 H 12, L 1024, d 64, causal; llama-7b H 32, L 4096, d 128, causal; additive H 1, L 512,
// d = d_h = d_v = 512; long H 1, L 16384, d 64, with the backward). B = 1.
// FLOPs: 4 d per visible (query, key) pair (causal: L(L+1)/2 pairs), additive 3 d_h + 2 d_v
// per pair (tanh counted as one); the cuBLAS baseline is credited with the same useful FLOPs.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_baseline.hpp"
#include "presets.hpp"
#include "qkscope/qkscope.hpp"
#include "qkscope_cuda.hpp"
#include "reference/reference.hpp"
#include "reference/tolerance.hpp"

using namespace qkscope;

namespace {

struct Config {
  std::string preset = "bert-base", score = "scaled_dot";
  int heads = 12, len = 512, dim = 64, d_h = 0, repeats = 20, check_rows = 32;
  bool causal = false, backward = false, baseline = true, interpret = false;
  std::vector<int> versions = {1, 2, 3, 4, 5};
  cuda::Precision precision = cuda::Precision::fp16;
  std::string csv;
};

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "qkscope_cuda_bench: " << msg << "\n";
  std::exit(2);
}

int to_int(const std::string& flag, const std::string& v) {
  try {
    std::size_t n = 0;
    const int x = std::stoi(v, &n);
    if (n != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (...) {
    die(flag + " expects an integer, got '" + v + "'");
  }
}

Config parse(int argc, char** argv) {
  Config c;
  std::map<std::string, std::string> opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backward") { c.backward = true; continue; }
    if (a == "--no-baseline") { c.baseline = false; continue; }
    if (a == "--interpret") { c.interpret = true; c.baseline = false; continue; }
    if (a == "--help" || a == "-h") {
      std::cout << "usage: qkscope_cuda_bench [--preset " << qkbench::preset_names() << "] [--versions 1,2,3,4,5] "
                   "[--precision fp16|bf16] [--repeats R] [--backward] [--no-baseline] [--heads H] [--len L] "
                   "[--dim D] [--check-rows N] [--csv FILE] [--interpret]\n"
                   "  --interpret: validate on the CPU interpreter of the kernels, no timing (small sizes only)\n";
      std::exit(0);
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) die("unknown or incomplete option '" + a + "' (see --help)");
    opt[a] = argv[++i];
  }
  if (opt.count("--preset")) c.preset = opt["--preset"];
  const qkbench::Preset* p = qkbench::find_preset(c.preset);
  if (!p) die("unknown preset '" + c.preset + "' (known: " + qkbench::preset_names(", ") + ")");
  qkbench::apply_preset(*p, c);
  if (score_has_hidden(c.score)) c.check_rows = 4;  // its plain-loop reference costs d_h (d_q + d_k) per pair
  for (const auto& [k, v] : opt) {
    if (k == "--preset") continue;
    else if (k == "--heads") c.heads = to_int(k, v);
    else if (k == "--len") c.len = to_int(k, v);
    else if (k == "--dim") c.dim = to_int(k, v);
    else if (k == "--repeats") c.repeats = to_int(k, v);
    else if (k == "--check-rows") c.check_rows = to_int(k, v);
    else if (k == "--csv") c.csv = v;
    else if (k == "--precision") {
      if (v == "fp16") c.precision = cuda::Precision::fp16;
      else if (v == "bf16") c.precision = cuda::Precision::bf16;
      else die("--precision must be fp16 or bf16 (versions 4-5), got '" + v + "'");
    } else if (k == "--versions") {
      c.versions.clear();
      std::stringstream s(v);
      for (std::string t; std::getline(s, t, ',');) c.versions.push_back(to_int(k, t));
    } else die("unknown option '" + k + "' (see --help)");
  }
  if (score_has_hidden(c.score)) c.d_h = c.dim;
  for (auto [name, v] : {std::pair{"--heads", c.heads}, {"--len", c.len}, {"--dim", c.dim}, {"--repeats", c.repeats},
                         {"--check-rows", c.check_rows}})
    if (v < 1) die(std::string(name) + " must be >= 1, got " + std::to_string(v));
  for (int v : c.versions)
    if (v < 1 || v > cuda::kVersions) die("--versions entries must be in 1.." + std::to_string(cuda::kVersions));
  return c;
}

const char* prec_name(cuda::Precision p) {
  return p == cuda::Precision::fp32 ? "fp32" : (p == cuda::Precision::fp16 ? "fp16" : "bf16");
}

/// Naive half-precision attention (inputs and P rounded, fp32 products and softmax).
template <class E>
Matrix naive_lp(const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& p,
                const AttentionConfig<float>& c) {
  auto rnd = [](const Matrix& m) { return Matrix(m.template cast<E>().template cast<float>()); };
  const auto r = reference::attention<float>(rnd(Q), rnd(K), rnd(V), p, c);
  return rnd(r.weights) * rnd(V);
}

struct Validation {
  bool ok = true;
  double max_abs = 0, tol = 0;
  std::string text;
};

/// Checks rows [r0, r1) of every head in `heads` of `out` ((H L, d_v), heads stacked) against
/// the double reference; the slice keeps its causal rows through an explicit keep mask.
Validation validate(const Config& c, const Matrix& Q, const Matrix& K, const Matrix& V, const ScoreParams<float>& p32,
                    const AttentionConfig<float>& cfg, const Matrix& out, cuda::Precision prec) {
  Validation v;
  const Eigen::Index L = c.len, half = std::max(1, c.check_rows / 2);
  const MaskFn m = resolve_mask(cfg.mask, L, L);
  const KeepMask keep = dense_mask(m);
  const auto p64 = p32.cast<double>();
  for (int h : {0, c.heads - 1}) {
    for (Eigen::Index r0 : {Eigen::Index(0), std::max<Eigen::Index>(0, L - half)}) {
      const Eigen::Index n = std::min(half, L - r0);
      AttentionConfig<float> s32 = cfg;
      s32.mask = MaskSpec{};
      s32.mask.keep = keep.middleRows(r0, n);
      AttentionConfig<double> s64;
      s64.score = cfg.score;
      s64.scale = cfg.scale;
      s64.mask = s32.mask;
      const Matrix Qs = Q.middleRows(h * L + r0, n), Kh = K.middleRows(h * L, L), Vh = V.middleRows(h * L, L);
      const auto ref = reference::attention<double>(Qs.cast<double>(), Kh.cast<double>(), Vh.cast<double>(), p64, s64);
      Matrix naive;
      if (prec == cuda::Precision::fp32) naive = reference::attention<float>(Qs, Kh, Vh, p32, s32).output;
      else if (prec == cuda::Precision::fp16) naive = naive_lp<Eigen::half>(Qs, Kh, Vh, p32, s32);
      else naive = naive_lp<Eigen::bfloat16>(Qs, Kh, Vh, p32, s32);
      const Matrix fast = out.middleRows(h * L + r0, n);
      const auto rep = reference::compare("output", fast, naive, ref.output);
      if (v.tol == 0 || rep.max_abs / rep.tol > v.max_abs / v.tol) {  // report the tightest slice
        v.max_abs = rep.max_abs;
        v.tol = rep.tol;
      }
      if (!rep.ok && v.ok) {
        v.ok = false;
        v.text = "head " + std::to_string(h) + ", rows " + std::to_string(r0) + "..: " + rep.text;
      }
    }
  }
  return v;
}

struct Row {
  std::string impl, precision;
  double ms = -1, tflops = 0;
  Validation val;
  std::string note;
};

}  // namespace

int main(int argc, char** argv) try {
  const Config c = parse(argc, argv);
  std::string why;
  if (!c.interpret && !cuda::device_available(&why)) die("no usable CUDA device: " + why);
  std::cout << "device: " << (c.interpret ? "CPU interpreter (no timing)" : cuda::device_description()) << "\n";
  const int L = c.len, d = c.dim, H = c.heads;
  detail::Rng rng(1);
  auto randn = [&](Eigen::Index r, Eigen::Index k) {
    Matrix m(r, k);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = float(rng.normal());
    return m;
  };
  const Matrix Q = randn(Eigen::Index(H) * L, d), K = randn(Eigen::Index(H) * L, d), V = randn(Eigen::Index(H) * L, d);
  const ScoreParams<float> p32 = init_params<float>(c.score, d, d, c.d_h ? c.d_h : 1, 7);
  AttentionConfig<float> cfg;
  cfg.score = c.score;
  cfg.mask.causal = c.causal;
  const double pairs = c.causal ? 0.5 * L * (L + 1.0) : double(L) * L;
  // The score's own count (score/registry.hpp: score_flops) plus P V, 2 d per visible pair.
  const double flops = H * (score_flops(c.score, ScoreShape{L, L, d, d}, pairs, c.d_h) + 2.0 * d * pairs);
  std::cout << "preset " << c.preset << ": B=1 H=" << H << " L=" << L << " d=" << d
            << (c.d_h ? " d_h=" + std::to_string(c.d_h) : "") << (c.causal ? " causal" : "") << ", score " << c.score
            << ", " << c.repeats << " timed repeats\n";

  std::vector<Row> rows;
  bool all_ok = true;
  for (int v : c.versions) {
    Row row;
    row.impl = cuda::version_name(v);
    const cuda::Precision prec = v <= 3 ? cuda::Precision::fp32 : c.precision;
    row.precision = prec_name(prec);
    cuda::Options o;
    o.version = v;
    o.precision = prec;
    o.heads = H;
    o.interpret = c.interpret;
    try {
      cuda::ForwardPlan plan(Q, K, V, p32, cfg, o);
      plan.launch();
      const cuda::Result r = plan.result();
      row.val = validate(c, Q, K, V, p32, cfg, r.output, prec);
      std::cerr << "validated v" << v << ": max_abs " << row.val.max_abs << " (tol " << row.val.tol << ")"
                << (row.val.ok ? "" : "  FAILED: " + row.val.text) << "\n";
      all_ok = all_ok && row.val.ok;
      if (row.val.ok && !c.interpret) {
        row.ms = qkbench::time_median_ms([&] { plan.launch(); }, c.repeats);
        row.tflops = flops / (row.ms * 1e9);
      }
    } catch (const std::invalid_argument& e) {
      row.note = std::string("n/a: ") + e.what();
    }
    rows.push_back(row);
  }
  if (c.backward) {  // version 3 backward: validated on a slice problem, timed on the full one
    Row row;
    row.impl = "v3 backward (dQ, dK, dV)";
    row.precision = "fp32";
    cuda::Options o;
    o.version = 3;
    o.heads = H;
    o.interpret = c.interpret;
    try {
      const Eigen::Index n = std::min(L, c.check_rows);
      const Matrix Qs = Q.topRows(n), Ks = K.topRows(L), Vs = V.topRows(L), Gs = randn(n, d);
      AttentionConfig<double> c64;
      c64.score = cfg.score;
      c64.mask = cfg.mask;
      const auto p64 = p32.cast<double>();
      const auto f64 = attention_forward<double>(Qs.cast<double>(), Ks.cast<double>(), Vs.cast<double>(), p64, c64);
      const auto g64 = attention_backward<double>(Qs.cast<double>(), Ks.cast<double>(), Vs.cast<double>(), p64, c64, f64,
                                                  Gs.cast<double>());
      const auto f32 = attention_forward<float>(Qs, Ks, Vs, p32, cfg);
      const auto g32 = attention_backward<float>(Qs, Ks, Vs, p32, cfg, f32, Gs);
      cuda::Options o1 = o;
      o1.heads = 1;
      const auto fc = cuda::attention_forward(Qs, Ks, Vs, p32, cfg, o1);
      const auto gc = cuda::attention_backward(Qs, Ks, Vs, p32, cfg, fc, Gs, o1);
      for (auto [name, fast, nv, rf] : {std::tuple{"dQ", &gc.dQ, &g32.dQ, &g64.dQ}, {"dK", &gc.dK, &g32.dK, &g64.dK},
                                        {"dV", &gc.dV, &g32.dV, &g64.dV}}) {
        const auto rep = reference::compare(name, *fast, *nv, *rf);
        if (row.val.tol == 0 || rep.max_abs / rep.tol > row.val.max_abs / row.val.tol) {
          row.val.max_abs = rep.max_abs;
          row.val.tol = rep.tol;
        }
        if (!rep.ok && row.val.ok) {
          row.val.ok = false;
          row.val.text = rep.text;
        }
      }
      std::cerr << "validated v3 backward: max_abs " << row.val.max_abs << " (tol " << row.val.tol << ")" << (row.val.ok ? "" : "  FAILED: " + row.val.text)
                << "\n";
      all_ok = all_ok && row.val.ok;
      if (row.val.ok && !c.interpret) {
        const cuda::Result full = cuda::attention_forward(Q, K, V, p32, cfg, o);
        const Matrix G = randn(Q.rows(), d);
        cuda::BackwardPlan plan(Q, K, V, p32, cfg, full, G, o);
        row.ms = qkbench::time_median_ms([&] { plan.launch(); }, c.repeats);
        row.tflops = 2.5 * flops / (row.ms * 1e9);  // backward = 2.5x forward FLOPs (FlashAttention's count)
      }
    } catch (const std::invalid_argument& e) {
      row.note = std::string("n/a: ") + e.what();
    }
    rows.push_back(row);
  }
  if (c.baseline && c.score == score::ScaledDot::name) {  // the cuBLAS baseline computes scaled dot
    for (bool half : {false, true}) {
      Row row;
      row.impl = half ? "cuBLAS fp16 matmul-softmax-matmul" : "cuBLAS fp32 matmul-softmax-matmul";
      row.precision = half ? "fp16" : "fp32";
      const auto b = qkbench::cublas_attention(Q.data(), K.data(), V.data(), H, L, d, c.causal, half, c.repeats);
      const Matrix out = Eigen::Map<const Matrix>(b.out.data(), Eigen::Index(H) * L, d);
      row.val = validate(c, Q, K, V, p32, cfg, out, half ? cuda::Precision::fp16 : cuda::Precision::fp32);
      all_ok = all_ok && row.val.ok;
      row.ms = b.ms;
      row.tflops = flops / (row.ms * 1e9);
      rows.push_back(row);
    }
  }

  double v1_ms = -1;
  for (const Row& r : rows)
    if (r.impl.rfind("v1", 0) == 0) v1_ms = r.ms;
  std::printf("\n%-10s %-56s %-5s %10s %9s %8s %-24s\n", "preset", "implementation", "prec", "ms", "TFLOP/s", "vs v1",
              "validated max_abs / tol");
  for (const Row& r : rows) {
    char ms[32] = "-", tf[32] = "-", sp[32] = "-", val[64];
    if (r.ms > 0) {
      std::snprintf(ms, sizeof ms, "%.4f", r.ms);
      std::snprintf(tf, sizeof tf, "%.2f", r.tflops);
      if (v1_ms > 0) std::snprintf(sp, sizeof sp, "%.1fx", v1_ms / r.ms);
    }
    std::snprintf(val, sizeof val, "%.2e / %.2e %s", r.val.max_abs, r.val.tol, r.val.ok ? "ok" : "FAILED");
    std::printf("%-10s %-56s %-5s %10s %9s %8s %-24s %s\n", c.preset.c_str(), r.impl.c_str(), r.precision.c_str(), ms,
                tf, sp, r.note.empty() ? val : "", r.note.c_str());
  }
  if (!c.csv.empty()) {
    std::ofstream f(c.csv, std::ios::app);
    for (const Row& r : rows)
      f << c.preset << ",\"" << r.impl << "\"," << r.precision << "," << r.ms << "," << r.tflops << ","
        << r.val.max_abs << "," << (r.val.ok ? "ok" : "FAILED") << ",\"" << r.note << "\"\n";
    if (!f) die("cannot write " + c.csv);
  }
  return all_ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "qkscope_cuda_bench: " << e.what() << "\n";
  return 3;
}
