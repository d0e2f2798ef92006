// tests/core/support/cases.hpp — the one generator of the mask and bias cases that the
// sweeping suites share: the core (score/), the CPU tiled kernels (cpu/), the pipeline
// functors in the kernels' loop structure (pipeline/) and the CUDA kernels (cuda/). Each
// suite passes its own sizes, and its block shape so that "the first block fully masked"
// is a block its own kernel skips.
#pragma once

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "qkscope/attention.hpp"
#include "support/random.hpp"

namespace qktest {

using MaskCases = std::vector<std::pair<std::string, qkscope::MaskSpec>>;

/// Every mask kind on (L_q, L_k): none; key padding to half and to 0 (every row fully
/// masked); causal, top-left and bottom-right; sliding windows (two-sided; one-sided on the
/// bottom-right diagonal with key padding; wide with key padding); explicit keep masks with
/// row 0 fully masked, and with the first (Br x Bc) block and row 1 fully masked.
inline MaskCases mask_cases(Eigen::Index L_q, Eigen::Index L_k, Eigen::Index Br = 64, Eigen::Index Bc = 64) {
  using qkscope::CausalAlignment;
  using qkscope::KeepMask;
  using qkscope::MaskSpec;
  MaskCases out;
  out.push_back({"none", {}});
  MaskSpec pad;
  pad.key_length = (L_k + 1) / 2;
  out.push_back({"key_length (L_k+1)/2", pad});
  MaskSpec zero;
  zero.key_length = 0;
  out.push_back({"key_length 0 (every row fully masked)", zero});
  MaskSpec tl;
  tl.causal = true;
  out.push_back({"causal top_left", tl});
  MaskSpec br;
  br.causal = true;
  br.alignment = CausalAlignment::bottom_right;
  out.push_back({"causal bottom_right", br});
  MaskSpec win;
  win.window_left = 2;
  win.window_right = 1;
  out.push_back({"window(2,1)", win});
  MaskSpec cwin;  // built field by field: copying a MaskSpec trips GCC 12's -Wmaybe-uninitialized
  cwin.causal = true;
  cwin.alignment = CausalAlignment::bottom_right;
  cwin.window_left = 1;
  cwin.key_length = std::max<Eigen::Index>(L_k - 1, 0);
  out.push_back({"causal bottom_right + window(1,-) + key_length L_k-1", cwin});
  MaskSpec wide;
  wide.window_left = 5;
  wide.window_right = 2;
  wide.key_length = std::max<Eigen::Index>(L_k - 3, 0);
  out.push_back({"window(5,2) + key_length L_k-3", wide});
  MaskSpec row0;
  row0.keep = KeepMask::Constant(L_q, L_k, true);
  row0.keep.row(0).setConstant(false);
  out.push_back({"row 0 fully masked (keep)", row0});
  MaskSpec block;
  block.keep = KeepMask::Constant(L_q, L_k, true);
  block.keep.topLeftCorner(std::min(L_q, Br), std::min(L_k, Bc)).setConstant(false);
  if (L_q > 1) block.keep.row(1).setConstant(false);
  out.push_back({"first block and row 1 fully masked (keep)", block});
  return out;
}

/// A configuration of `score` with `mask`, temperature 0.7 and bias kind: 0 none; 1 softcap
/// 2.5 and ALiBi slope 0.25; 2 a relative-position table (2R+1 = 5), a T5 table (6 buckets,
/// max distance 5; causal bucketing for 2, bidirectional for 3) and a dense bias with one
/// -inf entry (a masked pair through the bias); 3 all of them at once.
template <class T>
qkscope::AttentionConfig<T> config_case(const std::string& score, const qkscope::MaskSpec& mask, int bias_kind,
                                        Eigen::Index L_q, Eigen::Index L_k) {
  qkscope::AttentionConfig<T> c;
  c.score = score;
  c.mask = mask;
  c.temperature = 0.7;
  qkscope::detail::Rng rng(5);
  if (bias_kind == 1 || bias_kind == 3) {
    c.bias.softcap = 2.5;
    c.bias.alibi_slope = 0.25;
  }
  if (bias_kind == 2 || bias_kind == 3) {
    c.bias.relative = randn_vec<T>(rng, 5, 0.5);
    c.bias.dense = randn<T>(rng, L_q, L_k, 0.5);
    c.bias.dense(L_q - 1, 0) = -std::numeric_limits<T>::infinity();
    c.bias.t5 = qkscope::T5Buckets{bias_kind == 3, 6, 5};
    c.bias.t5_table = randn_vec<T>(rng, 6, 0.5);
  }
  return c;
}

/// One seeded case of `score` in double (the reference's) and float (the path under test):
/// Q (L_q, d), K (L_k, d), V (L_k, d_v), G = dL/dO (L_q, d_v), parameters (d_h = 3) and
/// config_case's configuration. Draws from rng in this order, so suites stay reproducible.
struct ScoreCase {
  qkscope::MatrixD Q, K, V, G;
  qkscope::Matrix Qf, Kf, Vf, Gf;
  qkscope::ScoreParams<double> p64;
  qkscope::ScoreParams<float> p32;
  qkscope::AttentionConfig<double> c64;
  qkscope::AttentionConfig<float> c32;
};

inline ScoreCase score_case(const std::string& score, Eigen::Index L_q, Eigen::Index L_k, Eigen::Index d,
                            Eigen::Index d_v, const qkscope::MaskSpec& mask, int bias_kind, qkscope::detail::Rng& rng) {
  ScoreCase c;
  c.Q = randn(rng, L_q, d);
  c.K = randn(rng, L_k, d);
  c.V = randn(rng, L_k, d_v);
  c.G = randn(rng, L_q, d_v);
  c.p64 = qkscope::init_params<double>(score, d, d, 3, 11);
  if (c.p64.b.size()) c.p64.b = randn_vec(rng, 3, 0.3);
  c.p32 = c.p64.cast<float>();
  c.c64 = config_case<double>(score, mask, bias_kind, L_q, L_k);
  c.c32 = config_case<float>(score, mask, bias_kind, L_q, L_k);
  c.Qf = c.Q.cast<float>();
  c.Kf = c.K.cast<float>();
  c.Vf = c.V.cast<float>();
  c.Gf = c.G.cast<float>();
  return c;
}

}  // namespace qktest
