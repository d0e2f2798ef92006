// Differential study driver: fuzz_attention's checks over fixed inputs and seeded byte
// mutations of them, listing every case flagged instead of stopping at the first. Built twice,
// against two versions of the core, it says what a change fixes and what it breaks (the
// figures in tests/fuzz/README.md and native/bench/NOTES.md). Not part of the test run.
//   clang++ -std=c++20 -O1 -g0 -DQKSCOPE_FUZZ_STUDY -I core/include -I core -I tests/core \
//     -isystem /usr/include/eigen3 tests/fuzz/study.cpp -o build/study
//   build/study PER DIR... > flagged.txt
// PER cases per input: the input itself, then PER - 1 mutations of 1-4 random bytes (one
// fixed seed, so two builds see the same cases). Each flagged case prints one line,
// "<input> <k> <kind>", and the last line the totals. With QKSCOPE_STUDY_DUMP=DIR each flagged
// case's bytes (with QKSCOPE_STUDY_ONLY, each case run) are also written to DIR/<input>-<k>, for QKSCOPE_FUZZ_DESCRIBE=1 and a test;
// QKSCOPE_STUDY_ONLY="<input> <k>" runs that one case alone ("<input>": that input's cases; a comma-separated list: each) (the same bytes: every mutation is
// still drawn), to tell a case's own result from one that depends on the cases before it;
// QKSCOPE_STUDY_TRACE=1 names each case on stderr before it runs (valgrind --track-origins).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fuzz_attention.cpp"

// Whether `item` is one of the comma-separated entries of `list` (spaces around each trimmed).
static bool listed(const std::string& list, const std::string& item) {
  for (std::size_t a = 0;;) {
    const std::size_t b = list.find(',', a);
    std::string entry = list.substr(a, b == std::string::npos ? std::string::npos : b - a);
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    if (entry == item) return true;
    if (b == std::string::npos) return false;
    a = b + 1;
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PER DIR...\n", argv[0]);
    return 2;
  }
  const int per = std::atoi(argv[1]);
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> inputs;
  for (int a = 2; a < argc; ++a)
    for (const auto& e : std::filesystem::directory_iterator(argv[a])) {
      if (!e.is_regular_file() || e.path().extension() == ".md") continue;
      std::ifstream in(e.path(), std::ios::binary);
      inputs.emplace_back(e.path().filename().string(),
                          std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {}));
    }
  std::sort(inputs.begin(), inputs.end());  // directory order is not stable across machines
  // Empty variables count as unset; DUMP's folder is made if missing.
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  const char* dump = env("QKSCOPE_STUDY_DUMP");
  const char* only = env("QKSCOPE_STUDY_ONLY");
  if (dump) std::filesystem::create_directories(dump);
  const bool trace = std::getenv("QKSCOPE_STUDY_TRACE") != nullptr;
  std::mt19937_64 rng(12345);
  long cases = 0, flagged = 0;
  std::map<std::string, long> kinds;
  for (const auto& [name, bytes] : inputs)
    for (int k = 0; k < per; ++k) {
      std::vector<std::uint8_t> b = bytes;
      if (k > 0 && !b.empty())
        for (int m = 1 + int(rng() % 4); m > 0; --m) b[rng() % b.size()] = std::uint8_t(rng());
      if (only && !listed(only, name) && !listed(only, name + " " + std::to_string(k))) continue;
      ++cases;
      if (trace) std::fprintf(stderr, "case %s %d\n", name.c_str(), k);  // for valgrind's reports
      bool flag = false;
      try {
        LLVMFuzzerTestOneInput(b.data(), b.size());
      } catch (const qkfuzz::Found& f) {
        flag = true;
        ++flagged;
        const std::string kind = f.what.substr(0, f.what.find(':'));
        ++kinds[kind];
        std::printf("%s %d %s\n", name.c_str(), k, kind.c_str());
      }
      if (dump && (flag || only)) {
        std::ofstream out(std::string(dump) + "/" + name + "-" + std::to_string(k), std::ios::binary);
        out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
      }
    }
  for (const auto& [kind, n] : kinds) std::printf("# %6ld %s\n", n, kind.c_str());
  std::printf("# cases %ld flagged %ld\n", cases, flagged);
}
