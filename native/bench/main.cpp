// qkscope_bench — validate, then time the tiled attention kernels (core/include/qkscope/tiled/)
// against this machine's single-core Eigen GEMM and the naive core path, measured in the
// same run. Validation uses the test suite's one tolerance rule (tests/core/support/compare.hpp):
// max|fast - ref64| <= 2 max|naive32 - ref64| + 1e-6 (1 + max|ref64|), on a query slice.
//   qkscope_bench [--preset bert-base|gpt2|llama-7b|additive] [--score S] [--backward]
//                 [--threads N] [--heads H] [--batch B] [--len L] [--dim D] [--repeats R]
//                 [--block N] [--json FILE] [--csv FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "qkscope/tiled/attention.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"

using namespace qkscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::string preset = "bert-base", score = "scaled_dot";
  long batch = 1, heads = 12, len = 512, dim = 64, d_h = 0, repeats = 5, block = 64;
  int threads = 1;
  bool causal = false, backward = false;
  std::string json, csv;
};

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "qkscope_bench: " << msg << "\n";
  std::exit(2);
}

long to_long(const std::string& flag, const char* v) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (!*v || *end) die(flag + " expects an integer, got '" + v + "'");
  return x;
}

Config parse(int argc, char** argv) {
  Config c;
  std::map<std::string, std::string> opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backward") { c.backward = true; continue; }
    if (a == "--help" || a == "-h") {
      std::cout << "usage: qkscope_bench [--preset bert-base|gpt2|llama-7b|additive] [--score S] "
                   "[--backward] [--threads N] [--heads H] [--batch B] [--len L] [--dim D] "
                   "[--repeats R] [--block N] [--json FILE] [--csv FILE]\n";
      std::exit(0);
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) die("unknown or incomplete option '" + a + "' (see --help)");
    opt[a] = argv[++i];
  }
  if (opt.count("--preset")) c.preset = opt["--preset"];
  if (c.preset == "bert-base") { c.heads = 12; c.len = 512; c.dim = 64; }
  else if (c.preset == "gpt2") { c.heads = 12; c.len = 1024; c.dim = 64; c.causal = true; }
  else if (c.preset == "llama-7b") { c.heads = 32; c.len = 4096; c.dim = 128; c.causal = true; }
  else if (c.preset == "additive") { c.heads = 1; c.len = 512; c.dim = 512; c.d_h = 512; c.score = "additive"; }
  else die("unknown preset '" + c.preset + "' (known: bert-base, gpt2, llama-7b, additive)");
  for (const auto& [k, v] : opt) {
    if (k == "--preset") continue;
    else if (k == "--score") c.score = v;
    else if (k == "--json") c.json = v;
    else if (k == "--csv") c.csv = v;
    else if (k == "--threads") c.threads = int(to_long(k, v.c_str()));
    else if (k == "--heads") c.heads = to_long(k, v.c_str());
    else if (k == "--batch") c.batch = to_long(k, v.c_str());
    else if (k == "--len") c.len = to_long(k, v.c_str());
    else if (k == "--dim") c.dim = to_long(k, v.c_str());
    else if (k == "--repeats") c.repeats = to_long(k, v.c_str());
    else if (k == "--block") c.block = to_long(k, v.c_str());
    else die("unknown option '" + k + "' (see --help)");
  }
  if (c.score == "additive" && c.d_h == 0) c.d_h = c.dim;
  for (auto [name, v] : {std::pair{"--heads", c.heads}, {"--batch", c.batch}, {"--len", c.len},
                         {"--dim", c.dim}, {"--repeats", c.repeats}, {"--block", c.block}})
    if (v < 1) die(std::string(name) + " must be >= 1, got " + std::to_string(v));
  if (c.threads < 1) die("--threads must be >= 1, got " + std::to_string(c.threads));
  bool known = false;
  for (const auto& i : score_infos()) known = known || c.score == i.name;
  if (!known) die("unknown score '" + c.score + "'");
  return c;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
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

template <class Fn>
double median_ms(long repeats, Fn&& fn) {
  fn();  // warm
  std::vector<double> t;
  for (long r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  const Config c = parse(argc, argv);
  const long L = c.len, d = c.dim, n_heads = c.batch * c.heads;
  const double bytes = 4.0 * n_heads * 4 * L * d;  // Q, K, V, O per head
  if (bytes > 0.5 * mem_available_bytes())
    die("inputs need " + std::to_string(bytes / 1e9) + " GB, more than half the available memory; "
        "reduce --heads, --batch or --len");
  const bool naive_fits = 4.0 * 6 * L * L < 0.4 * mem_available_bytes();
  std::cout << "CPU: " << cpu_model() << "\n";

  // 1. This machine's single-core Eigen GEMM, 512^3.
  std::cerr << "[1/4] timing Eigen GEMM 512^3 (single thread)\n";
  Eigen::setNbThreads(1);
  Matrix A = Matrix::Random(512, 512), B = Matrix::Random(512, 512), Cm(512, 512);
  const double gemm_ms = median_ms(std::max(3L, c.repeats), [&] { Cm.noalias() = A * B; });
  const double gemm_gflops = 2.0 * 512 * 512 * 512 / (gemm_ms * 1e6);
  std::cout << "Eigen GEMM 512^3: " << gemm_ms << " ms, " << gemm_gflops << " GFLOP/s (single core)\n";

  // 2. Inputs: one seeded (Q, K, V) per head.
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
  const auto p32 = init_params<float>(c.score, d, d, c.d_h ? c.d_h : 1, 7);
  AttentionConfig<float> cfg;
  cfg.score = c.score;
  cfg.mask.causal = c.causal;
  const tiled::TiledOptions opt{c.block, c.block, c.threads};

  // 3. Validate on the first n_val queries of head 0 (full keys; top-left causal rows are
  //    the same in the slice). Additive's plain-loop reference costs d_h (d_q + d_k) per pair.
  const long n_val = std::min<long>(L, c.score == "additive" ? 8 : 64);
  std::cerr << "[2/4] validating against the double reference on the first " << n_val << " queries\n";
  const auto full = tiled::attention_forward<float>(Qs[0], Ks[0], Vs[0], p32, cfg, opt);
  const Matrix Qv = Qs[0].topRows(n_val);
  const auto p64 = p32.cast<double>();
  AttentionConfig<double> cfg64;
  cfg64.score = c.score;
  cfg64.mask.causal = c.causal;
  const auto ref = reference::attention<double>(Qv.cast<double>(), Ks[0].cast<double>(), Vs[0].cast<double>(), p64, cfg64);
  const auto naive = reference::attention<float>(Qv, Ks[0], Vs[0], p32, cfg);
  const auto rep = qktest::compare("output", Matrix(full.output.topRows(n_val)), naive.output, ref.output);
  std::cout << "validated: max_abs=" << rep.max_abs << " (tol " << rep.tol << ", naive f32 err "
            << rep.naive_err << ", first " << n_val << " queries of head 0)" << (rep.ok ? "" : "  FAILED") << "\n";
  if (!rep.ok) { std::cerr << rep.text << "\n"; return 1; }
  if (c.backward) {  // backward: the slice problem, against the core's backward in double / float
    const Matrix Kv = Ks[0], Vv = Vs[0], G = randn(n_val, d);
    const auto f64 = attention_forward<double>(Qv.cast<double>(), Kv.cast<double>(), Vv.cast<double>(), p64, cfg64);
    const auto g64 = attention_backward<double>(Qv.cast<double>(), Kv.cast<double>(), Vv.cast<double>(), p64, cfg64, f64, G.cast<double>());
    const auto f32 = attention_forward<float>(Qv, Kv, Vv, p32, cfg);
    const auto g32 = attention_backward<float>(Qv, Kv, Vv, p32, cfg, f32, G);
    const auto ft = tiled::attention_forward<float>(Qv, Kv, Vv, p32, cfg, opt);
    const auto gt = tiled::attention_backward<float>(Qv, Kv, Vv, p32, cfg, ft, G, opt);
    for (auto [name, fast, nv, rf] : {std::tuple{"dQ", &gt.dQ, &g32.dQ, &g64.dQ}, {"dK", &gt.dK, &g32.dK, &g64.dK},
                                      {"dV", &gt.dV, &g32.dV, &g64.dV}}) {
      const auto r = qktest::compare(name, *fast, *nv, *rf);
      std::cout << "validated backward " << name << ": max_abs=" << r.max_abs << " (tol " << r.tol
                << ", slice problem of " << n_val << " queries)" << (r.ok ? "" : "  FAILED") << "\n";
      if (!r.ok) { std::cerr << r.text << "\n"; return 1; }
    }
  }

  // 4. Time: the tiled path over all heads, then the naive core path on one head.
  std::cerr << "[3/4] timing tiled " << (c.backward ? "forward+backward" : "forward") << " over "
            << n_heads << " heads, " << c.repeats << " repeats\n";
  std::vector<tiled::TiledResult<float>> outs(n_heads);
  const Matrix dO = randn(L, d);
  const double fast_ms = median_ms(c.repeats, [&] {
    for (long h = 0; h < n_heads; ++h) {
      outs[h] = tiled::attention_forward<float>(Qs[h], Ks[h], Vs[h], p32, cfg, opt);
      if (c.backward) (void)tiled::attention_backward<float>(Qs[h], Ks[h], Vs[h], p32, cfg, outs[h], dO, opt);
    }
  });
  double naive_ms = -1;
  if (naive_fits) {
    std::cerr << "[4/4] timing the naive core path (attention_forward) on one head\n";
    naive_ms = n_heads * median_ms(std::min(3L, c.repeats), [&] {
      const auto r = attention_forward<float>(Qs[0], Ks[0], Vs[0], p32, cfg);
      if (c.backward) (void)attention_backward<float>(Qs[0], Ks[0], Vs[0], p32, cfg, r, dO);
    });
  } else {
    std::cerr << "[4/4] naive core path skipped: its (L, L) matrices do not fit in memory\n";
  }
  const double pairs = c.causal ? 0.5 * L * (L + 1.0) : double(L) * L;
  double flops = c.score == "additive" ? n_heads * (pairs * (3.0 * c.d_h + 2.0 * d) + 4.0 * L * d * c.d_h)
                                       : n_heads * 4.0 * d * pairs;
  if (c.backward) flops *= 3.5;  // forward + backward (2.5x forward, FlashAttention's convention)
  const double gflops = flops / (fast_ms * 1e6);
  std::cout << "config: preset=" << c.preset << " score=" << c.score << " B=" << c.batch << " H=" << c.heads
            << " L=" << L << " d=" << d << (c.d_h ? " d_h=" + std::to_string(c.d_h) : "")
            << (c.causal ? " causal" : "") << (c.backward ? " fwd+bwd" : " fwd") << " threads=" << c.threads
            << " block=" << c.block << "\n";
  std::cout << "tiled: " << fast_ms << " ms (median of " << c.repeats << "), " << gflops << " GFLOP/s, "
            << 100.0 * gflops / gemm_gflops << "% of single-core GEMM\n";
  if (naive_ms > 0)
    std::cout << "naive core path: " << naive_ms << " ms (one head x " << n_heads << "), tiled is "
              << naive_ms / fast_ms << "x faster\n";
  if (!c.json.empty()) {
    std::ofstream j(c.json);
    j << "{\"cpu\":\"" << cpu_model() << "\",\"preset\":\"" << c.preset << "\",\"score\":\"" << c.score
      << "\",\"batch\":" << c.batch << ",\"heads\":" << c.heads << ",\"len\":" << L << ",\"dim\":" << d
      << ",\"causal\":" << (c.causal ? "true" : "false") << ",\"backward\":" << (c.backward ? "true" : "false")
      << ",\"threads\":" << c.threads << ",\"validated_max_abs\":" << rep.max_abs << ",\"gemm_gflops\":" << gemm_gflops
      << ",\"tiled_ms\":" << fast_ms << ",\"tiled_gflops\":" << gflops << ",\"naive_ms\":" << naive_ms << "}\n";
    if (!j) die("cannot write " + c.json);
  }
  if (!c.csv.empty()) {
    std::ofstream f(c.csv);
    f << "cpu,preset,score,batch,heads,len,dim,causal,backward,threads,validated_max_abs,gemm_gflops,tiled_ms,tiled_gflops,naive_ms\n"
      << '"' << cpu_model() << "\"," << c.preset << ',' << c.score << ',' << c.batch << ',' << c.heads << ','
      << L << ',' << d << ',' << c.causal << ',' << c.backward << ',' << c.threads << ',' << rep.max_abs << ','
      << gemm_gflops << ',' << fast_ms << ',' << gflops << ',' << naive_ms << "\n";
    if (!f) die("cannot write " + c.csv);
  }
  return 0;
} catch (const std::bad_alloc&) {
  std::cerr << "qkscope_bench: out of memory; reduce --heads, --batch or --len\n";
  return 3;
} catch (const std::exception& e) {
  std::cerr << "qkscope_bench: " << e.what() << "\n";
  return 2;
}
