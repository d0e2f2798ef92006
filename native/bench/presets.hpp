// native/bench/presets.hpp — the benchmark presets, one table for both drivers: the CPU
// bench (native/bench/main.cpp) and the CUDA bench (native/cuda/bench_cuda.cpp). Batch 1.
// Attention shapes of the models: BERT-base (Devlin et al. 2019: 12 heads of width 64,
// L 512), GPT-2 small (Radford et al. 2019: 12 heads of width 64, context 1024, causal),
// LLaMA-7B (Touvron et al. 2023: 32 heads of width 128; L 4096 chosen here, causal);
// "additive" is Bahdanau attention at d = d_h = 512; "long" is one head at L = 16384,
// forward + backward, which must stay under 200 MB of peak memory on the CPU.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace qkbench {

struct Preset {
  const char* name;
  const char* score;  // scoring function (score/registry.hpp)
  int heads, len, dim;
  int d_h;            // additive's hidden size; 0 for scores without one
  bool causal;        // top-left causal mask
  bool backward;      // time forward + backward
  int repeats;        // timed repeats; 0 = the driver's default
  int mem_budget_mb;  // CPU driver: fail when peak RSS reaches it; 0 = none
};

inline constexpr std::array<Preset, 5> kPresets{{
    {"bert-base", "scaled_dot", 12, 512, 64, 0, false, false, 0, 0},
    {"gpt2", "scaled_dot", 12, 1024, 64, 0, true, false, 0, 0},
    {"llama-7b", "scaled_dot", 32, 4096, 128, 0, true, false, 0, 0},
    {"additive", "additive", 1, 512, 512, 512, false, false, 0, 0},
    {"long", "scaled_dot", 1, 16384, 64, 0, false, true, 1, 200},
}};

/// "bert-base|gpt2|llama-7b|additive|long", for usage lines.
inline std::string preset_names(const char* sep = "|") {
  std::string s;
  for (const Preset& p : kPresets) s += (s.empty() ? "" : sep) + std::string(p.name);
  return s;
}

/// The preset named `name`, or nullptr.
inline const Preset* find_preset(std::string_view name) {
  for (const Preset& p : kPresets)
    if (name == p.name) return &p;
  return nullptr;
}

/// Copies preset p's shape into a driver's config (the CPU and CUDA drivers' Config types
/// share these fields); options given after --preset override it.
template <class Config>
void apply_preset(const Preset& p, Config& c) {
  c.score = p.score;
  c.heads = p.heads;
  c.len = p.len;
  c.dim = p.dim;
  c.d_h = p.d_h;
  c.causal = p.causal;
  c.backward = c.backward || p.backward;
  if (p.repeats) c.repeats = p.repeats;
}

}  // namespace qkbench
