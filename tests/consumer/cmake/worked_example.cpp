// The README's worked example through the installed package: X = [[1,0,1,0],[0,1,0,1],[1,1,0,0]],
// W_Q = W_K = W_V = I, scaled dot. Expected weights and output are the tutorial's
// corrected table (4 decimals); exits 1 on any mismatch.
#include <cmath>
#include <cstdio>

#include "qkscope/qkscope.hpp"

int main() {
  qkscope::Matrix X(3, 4);
  X << 1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0;
  const auto r = qkscope::attention_forward<float>(X, X, X, {}, {});
  const double W[3][3] = {{0.5065, 0.1863, 0.3072}, {0.1863, 0.5065, 0.3072}, {0.2741, 0.2741, 0.4519}};
  const double O[3][4] = {{0.8137, 0.4935, 0.5065, 0.1863}, {0.4935, 0.8137, 0.1863, 0.5065},
                          {0.7259, 0.7259, 0.2741, 0.2741}};
  int bad = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) bad += std::abs(r.weights(i, j) - W[i][j]) > 5e-5;
    for (int c = 0; c < 4; ++c) bad += std::abs(r.output(i, c) - O[i][c]) > 5e-5;
  }
  std::printf("qkscope %s: weights row 1 = [%.4f %.4f %.4f], %d mismatches\n", qkscope::version,
              r.weights(0, 0), r.weights(0, 1), r.weights(0, 2), bad);
  return bad == 0 ? 0 : 1;
}
