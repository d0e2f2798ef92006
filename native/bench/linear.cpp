// native/bench/linear.cpp — qkscope_bench_linear: linear attention (elu + 1, FAVOR+) against
// the tiled online-softmax forward over L, and the crossover length where linear attention
// becomes faster, for each head width d. Validates every kernel against the double
// reference first, times one head on one thread (median of --repeats, kernels interleaved),
// and reports each kernel's working memory. Predictions and results: NOTES.md.
// Times are the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not wall time: on a
// shared, loaded machine the wall clock mostly measures how long the thread waited for a
// core; CPU time still includes the cache misses other processes cause.
//   qkscope_bench_linear [--dims 64,128] [--min-len 64] [--max-len 4096] [--features 256]
//                        [--repeats 5] [--csv FILE]
//   qkscope_bench_linear --only tiled|elu|favor --len L --dim D   (one call; prints peak RSS)
#include <Eigen/Core>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "qkscope/linear/linear.hpp"
#include "qkscope/qkscope.hpp"
#include "qkscope/cpu/attention.hpp"
#include "reference/linear.hpp"
#include "reference/reference.hpp"
#include "reference/tolerance.hpp"

using namespace qkscope;

namespace {

struct Args {
  std::vector<long> dims{64, 128};
  long min_len = 64, max_len = 4096, features = 256, repeats = 5, len = 0, dim = 0;
  std::string only, csv;
};

[[noreturn]] void die(const std::string& m) {
  std::cerr << "qkscope_bench_linear: " << m << "\n";
  std::exit(2);
}

long to_long(const std::string& flag, const std::string& v) {
  try {
    std::size_t used = 0;
    const long x = std::stol(v, &used);
    if (used == v.size() && x >= 1) return x;
  } catch (...) {
  }
  die(flag + " must be an integer >= 1, got '" + v + "'");
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::cout << "usage: qkscope_bench_linear [--dims 64,128] [--min-len 64] [--max-len 4096] [--features 256]\n"
                   "                            [--repeats 5] [--csv FILE]\n"
                   "       qkscope_bench_linear --only tiled|elu|favor --len L --dim D [--features M]\n";
      std::exit(0);
    }
    if (i + 1 >= argc) die("option '" + k + "' needs a value (see --help)");
    const std::string v = argv[++i];
    if (k == "--dims") {
      a.dims.clear();
      std::stringstream s(v);
      for (std::string t; std::getline(s, t, ',');) a.dims.push_back(to_long(k, t));
    } else if (k == "--min-len") a.min_len = to_long(k, v);
    else if (k == "--max-len") a.max_len = to_long(k, v);
    else if (k == "--features") a.features = to_long(k, v);
    else if (k == "--repeats") a.repeats = to_long(k, v);
    else if (k == "--len") a.len = to_long(k, v);
    else if (k == "--dim") a.dim = to_long(k, v);
    else if (k == "--only") a.only = v;
    else if (k == "--csv") a.csv = v;
    else die("unknown option '" + k + "' (see --help)");
  }
  return a;
}

Matrix randn(detail::Rng& rng, long r, long c) {
  Matrix m(r, c);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = float(rng.normal());
  return m;
}

double status_mb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  return -1;
}

std::string first_line(const std::string& path, const std::string& prefix) {
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (prefix.empty() || line.rfind(prefix, 0) == 0) return prefix.empty() ? line : line.substr(line.find(':') + 2);
  return "?";
}

/// The inputs of one head (seeded; entries N(0, 1) scaled so that q.k / sqrt(d) ~ N(0, 1/4)).
struct Problem {
  Matrix Q, K, V;
  Problem(long L, long d, std::uint64_t seed) {
    detail::Rng rng(seed);
    Q = randn(rng, L, d) * 0.7f;
    K = randn(rng, L, d) * 0.7f;
    V = randn(rng, L, d);
  }
};

cpu::TiledOptions one_thread() {
  cpu::TiledOptions o;
  o.threads = 1;
  return o;
}

/// Working memory beyond the inputs and the output, in bytes (what each kernel allocates).
double work_bytes(const std::string& kernel, long L, long d, long m) {
  const cpu::TiledOptions o = one_thread();
  if (kernel == "tiled") return 4.0 * (o.block_q * o.block_k + 2.0 * o.block_q * d + 4.0 * o.block_q + L);
  const long mm = kernel == "elu" ? d : m;
  return 4.0 * (2.0 * L * mm + mm * d + mm + L);  // phi(Q), phi(K); S; z; denominator
}

/// Validates the three kernels on the first 16 queries against the double reference.
bool validate(long d, long m) {
  const long L = 256, n = 16;
  const Problem p(L, d, 3);
  const Matrix Qv = p.Q.topRows(n);
  const MatrixD Qd = Qv.cast<double>(), Kd = p.K.cast<double>(), Vd = p.V.cast<double>();
  bool ok = true;
  const auto report = [&](const reference::Comparison& r) {
    std::cout << "  validated " << r.text << (r.ok ? "" : "  FAILED") << "\n";
    ok = ok && r.ok;
  };
  AttentionConfig<double> c64;
  AttentionConfig<float> c32;
  const auto ref = reference::attention<double>(Qd, Kd, Vd, {}, c64);
  const auto naive = reference::attention<float>(Qv, p.K, p.V, {}, c32);
  const auto t = cpu::attention_forward<float>(Qv, p.K, p.V, {}, c32, one_thread());
  report(reference::compare("tiled softmax d=" + std::to_string(d), t.output, naive.output, ref.output));
  for (const bool favor : {false, true}) {
    const auto phi = favor ? linear::favor_features<float>(m, d, 5) : linear::elu_features<float>();
    const MatrixD W = phi.W.cast<double>();
    const auto lr = reference::linear_attention<double>(Qd, Kd, Vd, favor, W, phi.data_scale, false, 0);
    const auto ln = reference::linear_attention<float>(Qv, p.K, p.V, favor, phi.W, phi.data_scale, false, 0);
    const auto f = linear::linear_attention_forward<float>(Qv, p.K, p.V, phi);
    report(reference::compare(std::string(favor ? "FAVOR+" : "elu + 1") + " d=" + std::to_string(d), f.output, ln.output,
                           lr.output));
  }
  return ok;
}

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e3 * double(t.tv_sec) + 1e-6 * double(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  Eigen::setNbThreads(1);
  if (!a.only.empty()) {  // one call in a fresh process, for its peak RSS
    if (!a.len || !a.dim) die("--only needs --len and --dim");
    const Problem p(a.len, a.dim, 1);
    const double before = status_mb("VmRSS");
    if (a.only == "tiled") (void)cpu::attention_forward<float>(p.Q, p.K, p.V, {}, AttentionConfig<float>{}, one_thread());
    else if (a.only == "elu") (void)linear::linear_attention_forward<float>(p.Q, p.K, p.V, linear::elu_features<float>());
    else if (a.only == "favor")
      (void)linear::linear_attention_forward<float>(p.Q, p.K, p.V, linear::favor_features<float>(a.features, a.dim, 5));
    else die("--only must be tiled, elu or favor, got '" + a.only + "'");
    std::cout << a.only << " L=" << a.len << " d=" << a.dim << ": peak RSS " << status_mb("VmHWM") << " MB, "
              << status_mb("VmHWM") - before << " MB above the RSS before the call (inputs "
              << 3.0 * 4 * a.len * a.dim / 1048576.0 << " MB)\n";
    return 0;
  }
  std::cout << "CPU: " << first_line("/proc/cpuinfo", "model name") << "; load average "
            << first_line("/proc/loadavg", "") << "\n";
  std::ofstream csv;
  if (!a.csv.empty()) {
    csv.open(a.csv);
    csv << "d,L,kernel,ms,work_bytes\n";
  }
  for (const long d : a.dims) {
    std::cout << "d = " << d << ", FAVOR+ m = " << a.features << ", one head, one thread, non-causal forward\n";
    if (!validate(d, a.features)) return 1;
    std::cout << "CPU ms:  L   tiled ms     elu ms   FAVOR+ ms   tiled/elu  tiled/FAVOR+   work KB: tiled / elu / FAVOR+\n";
    std::map<std::string, long> cross;  // first L from which the kernel stays faster than tiled
    for (long L = a.min_len; L <= a.max_len; L *= 2) {
      const Problem p(L, d, 1);
      const auto phi_favor = linear::favor_features<float>(a.features, d, 5);
      std::map<std::string, std::vector<double>> t;
      const auto time = [&](const std::string& k) {
        const double t0 = cpu_ms();
        if (k == "tiled") (void)cpu::attention_forward<float>(p.Q, p.K, p.V, {}, AttentionConfig<float>{}, one_thread());
        else if (k == "elu") (void)linear::linear_attention_forward<float>(p.Q, p.K, p.V, linear::elu_features<float>());
        else (void)linear::linear_attention_forward<float>(p.Q, p.K, p.V, phi_favor);
        t[k].push_back(cpu_ms() - t0);
      };
      for (long r = 0; r <= a.repeats; ++r)
        for (const char* k : {"tiled", "elu", "favor"}) time(k);
      std::map<std::string, double> ms;
      for (auto& [k, v] : t) {
        v.erase(v.begin());  // the first call warms caches and the allocator
        ms[k] = median(v);
      }
      for (const char* k : {"elu", "favor"}) {
        if (ms[k] < ms["tiled"]) cross.try_emplace(k, L);
        else cross.erase(k);
      }
      std::printf("%8ld %10.3f %10.3f %11.3f %11.2f %13.2f   %.0f / %.0f / %.0f\n", L, ms["tiled"], ms["elu"],
                  ms["favor"], ms["tiled"] / ms["elu"], ms["tiled"] / ms["favor"], work_bytes("tiled", L, d, a.features) / 1024,
                  work_bytes("elu", L, d, a.features) / 1024, work_bytes("favor", L, d, a.features) / 1024);
      if (csv)
        for (const char* k : {"tiled", "elu", "favor"})
          csv << d << ',' << L << ',' << k << ',' << ms[k] << ',' << work_bytes(k, L, d, a.features) << "\n";
    }
    for (const char* k : {"elu", "favor"})
      std::cout << "crossover d = " << d << ", " << (std::string(k) == "elu" ? "elu + 1" : "FAVOR+") << ": "
                << (cross.count(k) ? "faster than tiled softmax from L = " + std::to_string(cross[k]) + " on"
                                   : std::string("not faster at the largest L"))
                << "\n";
  }
  std::cout << "load average at the end: " << first_line("/proc/loadavg", "") << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "qkscope_bench_linear: " << e.what() << "\n";
  return 2;
}
