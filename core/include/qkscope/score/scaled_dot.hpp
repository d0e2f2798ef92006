// qkscope/score/scaled_dot.hpp — scaled dot product f(q, k) = q . k / sqrt(d_k)
// (Vaswani et al. 2017, "Attention Is All You Need", eq. 1). The Transformer default.
// Why the scale: for i.i.d. unit-variance components Var(q . k) = d_k, so dividing
// by sqrt(d_k) brings the logits back to unit variance and keeps softmax out of
// saturation. Implemented as the dot product with default scale 1/sqrt(d_k), so an
// explicit `scale` (including 0) overrides it exactly like PyTorch SDPA's scale=.
#pragma once

#include "qkscope/score/dot.hpp"

namespace qkscope::score {

struct ScaledDot : DotProduct {
  static constexpr const char* name = "scaled_dot";
  static constexpr const char* label = "Scaled dot product";
  static constexpr const char* tex = R"(f(\mathbf q,\mathbf k)=\frac{\mathbf q^\top\mathbf k}{\sqrt{d_k}})";
  static double default_scale(const ScoreShape& s) { return 1.0 / std::sqrt(double(s.d_k)); }
};

}  // namespace qkscope::score
