// qkscope_bench — measure peak memory, validate, then time the tiled attention kernels
// (core/include/qkscope/cpu/) against this machine's single-core Eigen GEMM (timed
// interleaved with the kernel, in the same process, so load hits both alike) and the
// naive core path. Validation uses the one tolerance rule (core/reference/tolerance.hpp):
// max|fast - ref64| <= 2 max|naive32 - ref64| + 1e-6 (1 + max|ref64|), on a query slice of
// head 0. Presets: native/bench/presets.hpp (shared with the CUDA bench).
//   qkscope_bench [--preset bert-base|gpt2|llama-7b|additive|long] [--score S] [--backward]
//                 [--threads N] [--batch B] [--heads H] [--len L] [--dim D] [--dh D_H]
//                 [--causal 0|1] [--repeats R] [--block-q N] [--block-k N] [--naive 0|1]
//                 [--mem-budget MB] [--json FILE] [--csv FILE]
// --threads 0 (the default) uses every core; the work is split over batch x heads x query
// tiles. "% of GEMM" compares with a single-core GEMM, so it means something at --threads 1.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "presets.hpp"
#include "progress.hpp"
#include "qkscope/qkscope.hpp"
#include "qkscope/cpu/attention.hpp"
#include "reference/reference.hpp"
#include "reference/tolerance.hpp"

using namespace qkscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string preset = "bert-base", score = "scaled_dot";
  long batch = 1, heads = 12, len = 512, dim = 64, d_h = 0, repeats = 5, block_q = 64, block_k = 256;
  long mem_budget_mb = 0;
  int threads = 0, naive = -1;  // naive: -1 = when its (L, L) matrices are small
  bool causal = false, backward = false, progress = false;  // progress: draw the bar even when not a TTY
  std::string json, csv, dump;  // dump: head 0's Q, K, V, O as raw float32 (peers.py validates peers)
};

const std::string kUsage =
    "usage: qkscope_bench [--preset " + qkbench::preset_names() + "] [--score S] [--backward]\n"
    "                     [--threads N (0 = all cores)] [--batch B] [--heads H] [--len L] [--dim D]\n"
    "                     [--dh D_H] [--causal 0|1] [--repeats R] [--block-q N] [--block-k N]\n"
    "                     [--naive 0|1] [--mem-budget MB] [--json FILE] [--csv FILE] [--progress]\n"
    "--json writes one object, schema \"qkscope-bench\" version 1 (docs/bench-json.md).\n";

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "qkscope_bench: " << msg << "\n";
  std::exit(2);
}

long to_long(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end) die(flag + " expects an integer, got '" + v + "'");
  // strtol saturates silently; a (narrowed) LONG_MAX would only fail later with a wrong number.
  if (errno == ERANGE || x > (1L << 40) || x < -(1L << 40)) die(flag + " is out of range, got '" + v + "'");
  return x;
}

Config parse(int argc, char** argv) {
  Config c;
  std::vector<std::pair<std::string, std::string>> opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backward") { c.backward = true; continue; }
    if (a == "--progress") { c.progress = true; continue; }
    if (a == "--help" || a == "-h") { std::cout << kUsage; std::exit(0); }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) die("unknown or incomplete option '" + a + "' (see --help)");
    if (a == "--preset") c.preset = argv[++i];
    else opt.push_back({a, argv[++i]});
  }
  const qkbench::Preset* p = qkbench::find_preset(c.preset);
  if (!p) die("unknown preset '" + c.preset + "' (known: " + qkbench::preset_names(", ") + ")");
  qkbench::apply_preset(*p, c);
  c.mem_budget_mb = p->mem_budget_mb;
  for (const auto& [k, v] : opt) {
    if (k == "--score") c.score = v;
    else if (k == "--json") c.json = v;
    else if (k == "--csv") c.csv = v;
    else if (k == "--dump-head0") c.dump = v;
    else if (k == "--threads") {
      const long t = to_long(k, v);
      if (t > 4096) die("--threads must be <= 4096, got " + v);  // also keeps the int conversion exact
      c.threads = int(t);
    }
    else if (k == "--heads") c.heads = to_long(k, v);
    else if (k == "--batch") c.batch = to_long(k, v);
    else if (k == "--len") c.len = to_long(k, v);
    else if (k == "--dim") c.dim = to_long(k, v);
    else if (k == "--dh") c.d_h = to_long(k, v);
    else if (k == "--causal") c.causal = to_long(k, v) != 0;
    else if (k == "--naive") c.naive = to_long(k, v) != 0;
    else if (k == "--repeats") c.repeats = to_long(k, v);
    else if (k == "--block-q") c.block_q = to_long(k, v);
    else if (k == "--block-k") c.block_k = to_long(k, v);
    else if (k == "--block") c.block_q = c.block_k = to_long(k, v);
    else if (k == "--mem-budget") c.mem_budget_mb = to_long(k, v);
    else die("unknown option '" + k + "' (see --help)");
  }
  for (auto [name, v] : {std::pair{"--heads", c.heads}, {"--batch", c.batch}, {"--len", c.len},
                         {"--dim", c.dim}, {"--repeats", c.repeats}, {"--block-q", c.block_q},
                         {"--block-k", c.block_k}})
    if (v < 1) die(std::string(name) + " must be >= 1, got " + std::to_string(v));
  if (c.threads < 0) die("--threads must be >= 0 (0 = all cores), got " + std::to_string(c.threads));
  bool known = false;
  for (const auto& i : score_infos()) known = known || c.score == i.name;
  if (!known) die("unknown score '" + c.score + "'");
  if (c.d_h == 0 && score_has_hidden(c.score)) c.d_h = c.dim;
  // Output files are written after the run: refuse an unwritable path now, not after minutes of timing.
  for (const auto& [flag, path] : {std::pair<const char*, std::string>{"--json", c.json}, {"--csv", c.csv}}) {
    if (path.empty()) continue;
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const bool ok = access(path.c_str(), F_OK) == 0 ? access(path.c_str(), W_OK) == 0 : access(dir.c_str(), W_OK) == 0;
    if (!ok) die(std::string("cannot write ") + flag + " " + path + " (" + std::strerror(errno) + ")");
  }
  return c;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

/// `s` as a JSON string literal: the CPU model name is free text from the kernel.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\', out += char(ch);
    else if (ch < 0x20) out += "\\u00", out += "0123456789abcdef"[ch >> 4], out += "0123456789abcdef"[ch & 15];
    else out += char(ch);
  }
  return out + '"';
}

std::string loadavg() {  // "1-min 5-min 15-min"
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

/// A field of /proc/self/status in MB (VmRSS: now, VmHWM: peak since start), -1 if unknown.
double status_mb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  return -1;
}

double mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  for (std::string k; f >> k;) {
    double kb;
    f >> kb;
    if (k == "MemAvailable:") return kb * 1024;
    f.ignore(256, '\n');
  }
  return 4e9;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  const Config c = parse(argc, argv);
  const long L = c.len, d = c.dim, n_heads = c.batch * c.heads;
  const double bytes = 4.0 * n_heads * 4 * L * d;  // Q, K, V, O per head
  if (bytes > 0.5 * mem_available_bytes())
    die("inputs need " + std::to_string(bytes / 1e9) + " GB, more than half the available memory; "
        "reduce --heads, --batch or --len");
  const bool run_naive = c.naive >= 0 ? c.naive == 1 : (L <= 4096 && 4.0 * 6 * L * L < 0.4 * mem_available_bytes());
  const int threads = cpu::detail::resolve_threads(c.threads);
  const std::string load_start = loadavg();
  std::cout << "CPU: " << cpu_model() << ", " << std::thread::hardware_concurrency() << " cores; load average "
            << load_start << "\n";

  // Inputs: one seeded (Q, K, V) per (sequence, head); one dO shared by all heads.
  detail::Rng rng(1);
  auto randn = [&](long r, long k) {
    Matrix m(r, k);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = float(rng.normal());
    return m;
  };
  std::vector<Matrix> Qs, Ks, Vs;
  for (long h = 0; h < n_heads; ++h) {
    Qs.push_back(randn(L, d));
    Ks.push_back(randn(L, d));
    Vs.push_back(randn(L, d));
  }
  const Matrix dO = randn(L, d);
  const auto p32 = init_params<float>(c.score, d, d, c.d_h ? c.d_h : 1, 7);
  AttentionConfig<float> cfg;
  cfg.score = c.score;
  cfg.mask.causal = c.causal;
  const cpu::TiledOptions opt{c.block_q, c.block_k, c.threads};
  std::vector<cpu::HeadInputs<float>> heads;
  std::vector<const Matrix*> dOs;
  for (long h = 0; h < n_heads; ++h) {
    heads.push_back({&Qs[h], &Ks[h], &Vs[h]});
    dOs.push_back(&dO);
  }
  std::vector<cpu::TiledResult<float>> outs;
  auto run_tiled = [&] {
    outs = cpu::attention_forward_batch<float>(heads, p32, cfg, opt);
    if (c.backward) (void)cpu::attention_backward_batch<float>(heads, p32, cfg, outs, dOs, opt);
  };

  // 1. Peak memory of one call, measured first so nothing else has raised the high-water mark.
  std::cerr << "[1/5] peak memory of one tiled " << (c.backward ? "forward+backward" : "forward") << "\n";
  const double rss_before = status_mb("VmRSS");
  run_tiled();
  const double rss_peak = status_mb("VmHWM");
  std::cout << "memory: peak RSS " << rss_peak << " MB for the whole process (inputs "
            << bytes / 1048576.0 << " MB, RSS before the call " << rss_before << " MB, extra "
            << rss_peak - rss_before << " MB)\n";

  // 2. Validate on the first n_val queries of head 0 (full keys; top-left causal rows are
  //    the same in the slice). Additive's plain-loop reference costs d_h (d_q + d_k) per pair.
  const long n_val = std::min<long>(L, score_has_hidden(c.score) ? 8 : 64);
  std::cerr << "[2/5] validating against the double reference on the first " << n_val << " queries\n";
  const Matrix Qv = Qs[0].topRows(n_val);
  const auto p64 = p32.cast<double>();
  AttentionConfig<double> cfg64;
  cfg64.score = c.score;
  cfg64.mask.causal = c.causal;
  const auto ref = reference::attention<double>(Qv.cast<double>(), Ks[0].cast<double>(), Vs[0].cast<double>(), p64, cfg64);
  const auto naive = reference::attention<float>(Qv, Ks[0], Vs[0], p32, cfg);
  const auto rep = reference::compare("output", Matrix(outs[0].output.topRows(n_val)), naive.output, ref.output);
  std::cout << "validated: max_abs=" << rep.max_abs << " (tol " << rep.tol << ", naive f32 err "
            << rep.naive_err << ", first " << n_val << " queries of head 0)" << (rep.ok ? "" : "  FAILED") << "\n";
  if (!rep.ok) { std::cerr << rep.text << "\n"; return 1; }
  if (c.backward) {  // backward: the slice problem, against the core's backward in double / float
    const Matrix Kv = Ks[0], Vv = Vs[0], G = dO.topRows(n_val);
    const auto f64 = attention_forward<double>(Qv.cast<double>(), Kv.cast<double>(), Vv.cast<double>(), p64, cfg64);
    const auto g64 = attention_backward<double>(Qv.cast<double>(), Kv.cast<double>(), Vv.cast<double>(), p64, cfg64, f64, G.cast<double>());
    const auto f32 = attention_forward<float>(Qv, Kv, Vv, p32, cfg);
    const auto g32 = attention_backward<float>(Qv, Kv, Vv, p32, cfg, f32, G);
    const auto ft = cpu::attention_forward<float>(Qv, Kv, Vv, p32, cfg, opt);
    const auto gt = cpu::attention_backward<float>(Qv, Kv, Vv, p32, cfg, ft, G, opt);
    for (auto [name, fast, nv, rf] : {std::tuple{"dQ", &gt.dQ, &g32.dQ, &g64.dQ}, {"dK", &gt.dK, &g32.dK, &g64.dK},
                                      {"dV", &gt.dV, &g32.dV, &g64.dV}}) {
      const auto r = reference::compare(name, *fast, *nv, *rf);
      std::cout << "validated backward " << name << ": max_abs=" << r.max_abs << " (tol " << r.tol
                << ", slice problem of " << n_val << " queries)" << (r.ok ? "" : "  FAILED") << "\n";
      if (!r.ok) { std::cerr << r.text << "\n"; return 1; }
    }
  }

  if (!c.dump.empty()) {  // PREFIX.{q,k,v,o}: (L, d) row-major float32, for peers.py's validation
    for (auto [ext, m] : {std::pair{".q", &Qs[0]}, {".k", &Ks[0]}, {".v", &Vs[0]}, {".o", &outs[0].output}}) {
      std::ofstream f(c.dump + ext, std::ios::binary);
      f.write(reinterpret_cast<const char*>(m->data()), std::streamsize(sizeof(float) * m->size()));
      if (!f) die("cannot write " + c.dump + ext);
    }
  }

  // 3. Time the tiled path over all heads, interleaved with a single-core Eigen GEMM 512^3.
  std::cerr << "[3/5] timing tiled " << (c.backward ? "forward+backward" : "forward") << " over " << n_heads
            << " heads on " << threads << " thread(s), interleaved with GEMM 512^3, " << c.repeats << " repeats\n";
  Eigen::setNbThreads(1);
  Matrix A = Matrix::Random(512, 512), B = Matrix::Random(512, 512), Cm(512, 512);
  auto gemm = [&] { Cm.noalias() = A * B; };
  gemm();
  run_tiled();  // warm
  std::vector<double> t_gemm, t_fast;
  qkscope_bench::Progress bar("[3/5] timing", c.repeats, qkscope_bench::progress_wanted(c.progress));
  for (long r = 0; r < c.repeats; ++r) {
    auto t0 = Clock::now();
    gemm();
    t_gemm.push_back(ms_since(t0));
    t0 = Clock::now();
    run_tiled();
    t_fast.push_back(ms_since(t0));
    bar.step();
  }
  bar.done();
  const double gemm_ms = median(t_gemm), fast_ms = median(t_fast);
  const double gemm_gflops = 2.0 * 512 * 512 * 512 / (gemm_ms * 1e6);

  // 4. The naive core path (materialises (L, L) matrices) on one head, scaled to all heads.
  double naive_ms = -1;
  if (run_naive) {
    std::cerr << "[4/5] timing the naive core path (attention_forward) on one head\n";
    std::vector<double> t;
    for (long r = 0; r < std::min(3L, c.repeats) + 1; ++r) {
      const auto t0 = Clock::now();
      const auto res = attention_forward<float>(Qs[0], Ks[0], Vs[0], p32, cfg);
      if (c.backward) (void)attention_backward<float>(Qs[0], Ks[0], Vs[0], p32, cfg, res, dO);
      if (r > 0) t.push_back(ms_since(t0));  // the first one warms
    }
    naive_ms = n_heads * median(t);
  } else {
    std::cerr << "[4/5] naive core path skipped (--naive 0, or its (L, L) matrices are large)\n";
  }

  // 5. Report.
  const double pairs = c.causal ? 0.5 * L * (L + 1.0) : double(L) * L;
  // The score's own count (score/registry.hpp: score_flops) plus P V, 2 d per visible pair.
  double flops = n_heads * (score_flops(c.score, ScoreShape{L, L, d, d}, pairs, c.d_h) + 2.0 * d * pairs);
  if (c.backward) flops *= 3.5;  // forward + backward (2.5x forward, FlashAttention's convention)
  const double gflops = flops / (fast_ms * 1e6);
  const std::string load_end = loadavg();
  std::cout << "config: preset=" << c.preset << " score=" << c.score << " B=" << c.batch << " H=" << c.heads
            << " L=" << L << " d=" << d << (c.d_h ? " d_h=" + std::to_string(c.d_h) : "")
            << (c.causal ? " causal" : "") << (c.backward ? " fwd+bwd" : " fwd") << " threads=" << threads
            << " block=" << c.block_q << "x" << c.block_k << "\n";
  std::cout << "Eigen GEMM 512^3 (single core, interleaved): " << gemm_ms << " ms, " << gemm_gflops << " GFLOP/s\n";
  std::cout << "tiled: " << fast_ms << " ms (median of " << c.repeats << "), " << gflops << " GFLOP/s, "
            << 100.0 * gflops / gemm_gflops << "% of single-core GEMM" << (threads > 1 ? " (multi-threaded)" : "") << "\n";
  if (naive_ms > 0)
    std::cout << "naive core path: " << naive_ms << " ms (one head x " << n_heads << "), tiled is "
              << naive_ms / fast_ms << "x faster\n";
  std::cout << "load average: start " << load_start << ", end " << load_end << "\n";
  int rc = 0;
  if (c.mem_budget_mb > 0) {
    const bool ok = rss_peak >= 0 && rss_peak < double(c.mem_budget_mb);
    std::cout << "memory budget: peak RSS " << rss_peak << " MB " << (ok ? "<" : ">=") << " " << c.mem_budget_mb
              << " MB: " << (ok ? "ok" : "EXCEEDED") << "\n";
    if (!ok) rc = 4;
  }
  std::cout << "summary: " << c.score << " B=" << c.batch << " H=" << c.heads << " L=" << L << " d=" << d
            << (c.causal ? " causal" : "") << (c.backward ? " fwd+bwd" : " fwd") << ", " << threads << " thread(s): "
            << fast_ms << " ms, " << gflops << " GFLOP/s (" << int(100.0 * gflops / gemm_gflops + 0.5)
            << "% of GEMM), validated max_abs " << rep.max_abs << ", peak RSS " << rss_peak << " MB, load "
            << load_end << "\n";
  if (!c.json.empty()) {  // schema: docs/bench-json.md; bump "version" when a field changes meaning or goes
    std::ofstream j(c.json);
    j << "{\"schema\":\"qkscope-bench\",\"version\":1,\"cores\":" << std::thread::hardware_concurrency()
      << ",\"cpu\":" << json_string(cpu_model()) << ",\"load_start\":\"" << load_start << "\",\"load_end\":\"" << load_end
      << "\",\"preset\":\"" << c.preset << "\",\"score\":\"" << c.score << "\",\"batch\":" << c.batch
      << ",\"heads\":" << c.heads << ",\"len\":" << L << ",\"dim\":" << d << ",\"d_h\":" << c.d_h
      << ",\"causal\":" << (c.causal ? "true" : "false") << ",\"backward\":" << (c.backward ? "true" : "false")
      << ",\"threads\":" << threads << ",\"validated_max_abs\":" << rep.max_abs << ",\"gemm_ms\":" << gemm_ms
      << ",\"gemm_gflops\":" << gemm_gflops << ",\"tiled_ms\":" << fast_ms << ",\"tiled_gflops\":" << gflops
      << ",\"tiled_samples_ms\":[";
    for (std::size_t i = 0; i < t_fast.size(); ++i) j << (i ? "," : "") << t_fast[i];
    j << "],\"naive_ms\":" << naive_ms << ",\"peak_rss_mb\":" << rss_peak << ",\"rss_before_mb\":" << rss_before
      << ",\"inputs_mb\":" << bytes / 1048576.0 << "}\n";
    if (!j) die("cannot write " + c.json);
  }
  if (!c.csv.empty()) {
    std::ofstream f(c.csv);
    f << "cpu,load_start,preset,score,batch,heads,len,dim,d_h,causal,backward,threads,validated_max_abs,gemm_gflops,"
         "tiled_ms,tiled_gflops,naive_ms,peak_rss_mb\n"
      << '"' << cpu_model() << "\",\"" << load_start << "\"," << c.preset << ',' << c.score << ',' << c.batch << ','
      << c.heads << ',' << L << ',' << d << ',' << c.d_h << ',' << c.causal << ',' << c.backward << ',' << threads
      << ',' << rep.max_abs << ',' << gemm_gflops << ',' << fast_ms << ',' << gflops << ',' << naive_ms << ','
      << rss_peak << "\n";
    if (!f) die("cannot write " + c.csv);
  }
  return rc;
} catch (const std::bad_alloc&) {
  std::cerr << "qkscope_bench: out of memory; reduce --heads, --batch or --len\n";
  return 3;
} catch (const std::exception& e) {
  std::cerr << "qkscope_bench: " << e.what() << "\n";
  return 2;
}
