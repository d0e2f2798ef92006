// qkscope/cpu/flash.hpp — tiled online-softmax forward (FlashAttention on CPU), generic
// over a tile scorer (scorers.hpp, additive.hpp), for a batch of heads at once.
//   per query tile, for each key block: S = z(score(Qt, Kt)) on the visible keys, z = x tau;
//   m' = max(m, rowmax S); P = exp((S - m') / tau); l = e^{(m-m')/tau} l + rowsum P;
//   acc = e^{(m-m')/tau} acc + P Vt.  O = acc / l, lse = m / tau + log l.
// The row maximum is subtracted before dividing by tau, as the core does (attention.hpp):
// folding 1/tau into the queries first rounds every logit to eps |x|, and at small tau the
// small weights (and the gradients that hinge on them) then missed the core's accuracy
// (fuzzer finding, docs/RELIABILITY.md).
// (Dao et al. 2022, Alg. 1; Dao 2023, Alg. 1.) Memory O(L d) per head, never (L_q, L_k).
// Work items are (head, query tile) pairs, handed to `threads` threads (parallel.hpp).
// Per key block the cost is two GEMMs (Eigen) plus one fused max / exp / sum pass over
// each row's visible key range (tile_ops.hpp), so the tile path runs near GEMM speed.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "qkscope/cpu/parallel.hpp"
#include "qkscope/cpu/scorers.hpp"
#include "qkscope/cpu/tile_ops.hpp"
#include "qkscope/merge/scales.hpp"

namespace qkscope::cpu {

/// Output of a tiled forward: O (L_q, d_v) and logsumexp (L_q) of the logits z / tau
/// (-inf for a fully masked row), as in AttentionResult. Never the (L_q, L_k) matrices.
template <class T>
struct TiledResult {
  Mat<T> output;     // (L_q, d_v)
  Vec<T> logsumexp;  // (L_q)
  double scale = 1;  // the scale used
  bool fallback = false;  // true when the core computed it (normalizer other than softmax)
};

namespace detail {

/// A scorer that can scale a query tile once (dot family).
template <class Scorer, class T>
concept QueryScalable = requires(const Scorer& s, Mat<T>& Qt, TileRef<T> S) {
  s.scale_queries(Eigen::Index{}, Eigen::Index{}, T{}, Qt);
  s.scores_from(Qt, Eigen::Index{}, Eigen::Index{}, S);
};

/// Without modifiers, scales query tile [i0, i0 + bq) by scale / tau once (into Qt), so every
/// key block is one GEMM: true when it did. Not when a scaled entry would fall below T's
/// smallest normal number: such an entry keeps only a few digits (scale 1e-40 turned
/// q = -0.519 into -5.19e-41, 2.7e-5 relative off, and dL/dtau came out 1.6e-5 off: fuzzer
/// seed 3) or none (q = -5.2e-6 became 0, and dL/dtau 0 instead of 4e25), so that tile
/// scales its scores instead, as the core does. The forward and the
/// backward ask the same question of the same tile, so both form the logits alike.
template <class T, class Scorer>
bool prescale_queries(const Scorer& sc, const TileOps<T>& ops, Eigen::Index i0, Eigen::Index bq, Mat<T>& Qt) {
  if constexpr (QueryScalable<Scorer, T>) {
    if (!ops.plain()) return false;
    if constexpr (requires { sc.refine.fn; })
      if (sc.refine.fn) return false;  // the tile check reads raw scores (scorers.hpp)
    sc.scale_queries(i0, bq, ops.z_factor(), Qt);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)  // one branch-free scan
      if (qkscope::detail::none_zero_or_subnormal(Qt.data(), std::size_t(Qt.size()))) return true;
    const auto tiny = Qt.array().abs() < std::numeric_limits<T>::min();
    Mat<T> q;  // zeros are fine; a nonzero entry that became subnormal or 0 is not
    sc.scale_queries(i0, bq, T(1), q);
    return !(tiny && (q.array() != T(0))).any();
  } else {
    return false;
  }
}

/// Per-thread buffers of the forward, reused across work items.
template <class T>
struct ForwardScratch {
  Mat<T> Qt, acc;   // scaled query tile (bq, d); accumulator (bq, d_v)
  Vec<T> S, m, l, tmp;  // score block storage (bq * bk); row max; row sum; one row
};

/// One query tile [i0, i0 + bq) of one head: writes O rows and logsumexp entries.
template <class T, class Scorer>
void forward_tile(const Scorer& sc, const TileOps<T>& ops, const Mat<T>& V, Eigen::Index i0,
                  Eigen::Index bq, Eigen::Index block_k, ForwardScratch<T>& w, Mat<T>& out,
                  Vec<T>& lse) {
  const T ninf = -std::numeric_limits<T>::infinity();
  const pipeline::Mask& mask = ops.mask;
  const bool general = ops.general();
  const T factor = ops.z_factor(), inv_tau = ops.inv_tau();
  const bool prescaled = prescale_queries(sc, ops, i0, bq, w.Qt);
  w.acc.setZero(bq, V.cols());
  w.m.setConstant(bq, ninf);
  w.l.setZero(bq);
  if (w.S.size() < bq * block_k) w.S.resize(bq * block_k);
  // Visible keys of the whole tile: band ranges are monotone in the row.
  const pipeline::Range keys = mask.keys_for(int(i0), int(i0 + bq));
  const Eigen::Index jlo = std::max(keys.begin, 0), jhi = keys.end;
  for (Eigen::Index j0 = jlo; j0 < jhi; j0 += block_k) {
    const Eigen::Index bk = std::min(block_k, jhi - j0);
    if (mask.keep && classify_tile(mask, i0, i0 + bq, j0, j0 + bk) == pipeline::BlockKind::empty) continue;
    Eigen::Map<Mat<T>> S(w.S.data(), bq, bk);  // (bq, bk)
    if (prescaled) {
      if constexpr (QueryScalable<Scorer, T>) sc.scores_from(w.Qt, j0, bk, S);
    } else {
      sc.scores(i0, bq, j0, bk, S);
      if (!ops.plain() || factor != T(1)) ops.z(S, i0, j0);
    }
    for (Eigen::Index r = 0; r < bq; ++r) {
      const auto [lo, hi] = block_range(mask, i0 + r, j0, bk);
      auto row = S.row(r);
      if (lo < hi && general) ops.apply_keep(S, r, i0 + r, j0, lo, hi);
      auto seg = row.segment(lo, hi - lo);
      // The state merge of merge_attention_states (merge/scales.hpp): the block's P is taken
      // relative to the merged max directly, so only the running state is rescaled.
      const MergeScales<T> ms = merge_scales(w.m(r), lo < hi ? segment_max(seg) : ninf, inv_tau);
      if (ms.m == ninf) {  // nothing visible in this row so far: P row = 0, state unchanged
        row.setZero();
        continue;
      }
      const T block_sum = exp_shifted_sum(seg, ms.m, general, w.tmp, inv_tau);
      row.head(lo).setZero();
      row.tail(bk - hi).setZero();
      w.l(r) = ms.alpha_a * w.l(r) + block_sum;  // alpha_a = 0 on the row's first visible block
      if (ms.alpha_a != T(1)) w.acc.row(r) *= ms.alpha_a;
      w.m(r) = ms.m;
    }
#if defined(__wasm_simd128__)
    if constexpr (std::is_same_v<T, float>) {  // wasm_gemm.hpp: Eigen's emulated-SSE GEMM is slower
      gemm_f32(int(bq), int(V.cols()), int(bk), S.data(), int(bk), V.data() + j0 * V.cols(), int(V.cols()), false,
               w.acc.data(), int(w.acc.cols()), true);
      continue;
    }
#endif
    w.acc.noalias() += S * V.middleRows(j0, bk);
  }
  for (Eigen::Index r = 0; r < bq; ++r) {
    const bool empty = !(w.l(r) > 0);
    if (empty) out.row(i0 + r).setZero();
    else out.row(i0 + r) = w.acc.row(r) / w.l(r);
    lse(i0 + r) = empty && w.m(r) == ninf ? ninf : T(double(w.m(r)) / double(ops.tau) + std::log(double(w.l(r))));
  }
}

/// Forward for every head n: r[n] from scorers[n] and V[n]; all heads share L_q, the
/// mask and the biases. Throws when a logsumexp overflowed (NaN or +inf).
template <class T, class Scorer>
void flash_forward(const std::vector<Scorer>& scorers, const TileOps<T>& ops,
                   const std::vector<const Mat<T>*>& V, Eigen::Index L_q, const TiledOptions& opt,
                   std::vector<TiledResult<T>>& r) {
  const Eigen::Index heads = Eigen::Index(scorers.size()), nq = num_tiles(L_q, opt.block_q);
  for (Eigen::Index n = 0; n < heads; ++n) {
    r[n].output.resize(L_q, V[n]->cols());
    r[n].logsumexp.resize(L_q);
  }
  parallel_items<ForwardScratch<T>>(heads * nq, resolve_threads(opt.threads),
                                    [&](Eigen::Index item, ForwardScratch<T>& w) {
    const Eigen::Index n = item / nq, i0 = (item % nq) * opt.block_q;
    forward_tile(scorers[n], ops, *V[n], i0, std::min(opt.block_q, L_q - i0), opt.block_k, w,
                 r[n].output, r[n].logsumexp);
  });
  for (Eigen::Index n = 0; n < heads; ++n)
    for (Eigen::Index i = 0; i < L_q; ++i) {
      const T v = r[n].logsumexp(i);
      qkscope::detail::require(!std::isnan(v) && v != std::numeric_limits<T>::infinity(),
                               "scores overflowed in row " + std::to_string(i) +
                                   (heads > 1 ? " of head " + std::to_string(n) : std::string()) +
                                   " (scale or inputs too large for this precision)");
    }
}

}  // namespace detail
}  // namespace qkscope::cpu
