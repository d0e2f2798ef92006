// qkscope/cpu/flash_backward.hpp — tiled backward of flash.hpp for a batch of heads.
//   P = exp((z - lse tau) / tau) / (its row sum), z = x tau (flash.hpp: the shift is
//   subtracted before dividing by tau, as in the core), dP = dO V^T, D_i = sum_j P_ij dP_ij,
//   dx = P (dP - D)
// (Dao 2023, Alg. 2, which takes D_i = dO_i . O_i instead). D is summed from the very P and
// dP the gradient uses, so sum_j dx_ij = 0 holds to rounding of the sum: where a row is
// one-hot (low temperature) or its dP are tied, dx is exactly 0, as in the core's normalizer
// backward, instead of rounding noise that 1 / tau amplifies (dO . O and dO V^T round
// differently). Two passes so that no two threads add into the same row, which keeps results
// bitwise identical for any thread count without atomics: pass B, items (head, query tile)
// -> D, dQ, the temperature gradient and the position tables' (P, dP and S of the query
// tile's row of blocks are kept, (bq, L_k) each per thread, so D costs no extra
// recomputation; the tables' per row: position_grad.hpp); then pass A, items
// (head, key tile) -> dK, dV (+ the dense bias and extra-parameter partial sums). Partial
// sums are reduced afterwards in item order.
#pragma once

#include <type_traits>
#include <vector>

#include "qkscope/cpu/double_slopes.hpp"
#include "qkscope/cpu/flash.hpp"
#include "qkscope/cpu/position_grad.hpp"
#include "qkscope/cpu/exact_rows.hpp"
#include "qkscope/cpu/row_shift.hpp"
#include "qkscope/cpu/temperature_grad.hpp"
#include "qkscope/detail/compensated_sum.hpp"

namespace qkscope::cpu::detail {

/// Gradients from the generic kernel for one head: w.r.t. the scorer's query/key side
/// (dQs, dKs), V, the scorer's per-call extra parameters, and the biases / temperature.
template <class T>
struct FlashGrads {
  Mat<T> dQs, dKs, dV;
  Vec<T> extra, drelative, dt5_table;
  Mat<T> ddense;
  double dtemperature = 0;
};

/// Per-thread buffers of the backward, reused across work items.
template <class T>
struct BackwardScratch {
  Vec<T> s, x, p, dx, tmp, lo;  // (bq * bk) storage of S, logits, P, dP / dx; one row (tmp, lo)
  Mat<T> dQt, dKt, dVt, Qt;  // Qt: the scaled query tile (as the forward's)
  Vec<T> extra;
  std::vector<double> rows;  // per query row: sum of the divided P, sum P
  std::vector<double> row_sums, row_ref;  // per query row: RowSums (finish_tile)
  Mat<T> rowS, rowX, rowP, rowdX;  // pass B: S, z = x tau, P and dP of one query tile's blocks, (bq, L_k)
  Mat<double> rowDz;                // pass B, with position tables: dz = dx / tau in double, (bq, L_k)
  Mat<double> rowZ64;               // pass B: z in double of the rows of kind 2 (RowShift), (bq, L_k)
  PositionScratch pos;              // pass B: the rows' shares of the position tables
  bool refined = false;  // tile_grad's tile was recomputed by the scorer's refine hook
  void reserve(Eigen::Index n) {
    for (Vec<T>* v : {&s, &x, &p, &dx})
      if (v->size() < n) v->resize(n);
  }
};

/// What finish_tile needs to take a P again in double (RowShift::weight, row_shift.hpp):
/// the tile's z and the rows' logsumexp and inverse sums of P.
template <class T>
struct TileLogits {
  Eigen::Ref<const Mat<T>> Z;  // (bq, bk)
  const Vec<T>& lse;
  const Eigen::VectorXd& inv_sum;
  const double* z64 = nullptr;  // rows of kind 2 (RowShift): their z in double, row stride z64_ld, from column z64_col0
  Eigen::Index z64_ld = 0, z64_col0 = 0;
  double weight(const RowShift& D, const Eigen::Ref<const Mat<T>>& P, Eigen::Index r, Eigen::Index c, Eigen::Index i,
                Eigen::Index j0, T tau) const {
    const double zd = D.exact(i) ? z64[r * z64_ld + j0 + c - z64_col0] : 0.0;
    return D.weight(P(r, c), Z(r, c), zd, double(lse(i)) * double(tau), double(tau), inv_sum(i), i);
  }
};

/// dx = P (dP - D) in place of dP, then through the modifiers to dL/draw (S: the raw scores).
/// dz (pass B, with position tables) receives dz = dx / tau in double, before dx is rounded
/// to T, at (r, j0 + c): a table entry read by every pair of a row has the gradient
/// sum_j dz_ij = 0 exactly, and summing float dz of size 1e3 (tau = 1e-3) left 6e-5 where the
/// rule allows 1e-6 (fuzzer finding; gathered per row by position_rows). With rs (the scorers of
/// grad_q_by_rows) and a softcap, dL/draw = dx / tau * s' * scale is formed in double
/// (pipeline::ScoreMods::grad_raw_from_z with the slope in double, at the raw scores in double
/// where the scorer has them: cpu/double_slopes.hpp) and R_i gathered (RowSums).
template <class T>
void finish_tile(const TileOps<T>& ops, const RowShift& D, Eigen::Index i0, Eigen::Index j0,
                 const Eigen::Ref<const Mat<T>>& P, Eigen::Ref<Mat<T>> dX, const Eigen::Ref<const Mat<T>>& S,
                 const TileLogits<T>& Z, Mat<double>* dz, Mat<T>* ddense, const RowSums* rs = nullptr) {
  const auto& m = ops.mods;
  const bool exact_slopes = rs && m.softcap;
  const double inv_tau = double(m.inv_tau), scale = double(m.scale);
  for (Eigen::Index r = 0; r < dX.rows(); ++r) {
    Eigen::RowVectorXd dx = P.row(r).template cast<double>().array() *
                            ((dX.row(r).template cast<double>().array() - D.base(i0 + r)) - D.centred(i0 + r));
    if (const unsigned char k = D.p64[std::size_t(i0 + r)])  // P in double, as D took them (row_shifts)
      for (Eigen::Index c = 0; c < dx.size(); ++c)
        if (P(r, c) > T(0) && (k == 2 || P(r, c) < std::numeric_limits<T>::min()))
          dx(c) = Z.weight(D, P, r, c, i0 + r, j0, ops.tau) * D.dp_minus_d(double(dX(r, c)), i0 + r);
    if (exact_slopes) {
      double sum = 0;
      for (Eigen::Index c = 0; c < dx.size(); ++c) {
        const double raw = rs->s64 ? (*rs->s64)(r, j0 + c - rs->s64_col0) : double(S(r, c));
        const double dz = dx(c) * inv_tau, slope = m.softcap_slope(raw);
        if (rs->sum) sum += dx(c) * (slope - rs->ref[r]);
        if (ddense && m.dense) (*ddense)(i0 + r, j0 + c) = T(dz);
        dX(r, c) = T(dz * slope * scale);
      }
      if (rs->sum) rs->sum[r] += sum * inv_tau * scale;
    }
    if (dz) dz->row(r).segment(j0, dx.size()) = dx * inv_tau;
    if (!exact_slopes) dX.row(r) = dx.template cast<T>();
  }
  if (!exact_slopes) ops.backward(dX, S, i0, j0, ddense);
}

/// A masked key's dx is exactly 0 even where its dP = dO v_j overflowed float: P = 0 times inf
/// gave NaN, which the query rows' sums carried (neg_sq dQ 0 where 3.3e-4 once a key block held
/// a padded key of value 1.9e38: fuzzer, 2026-12-06). So in a tile whose dP is not all finite
/// the masked entries' dP become 0: outside the row's visible range, a -inf logit (keep mask,
/// dense bias), or a fully masked row. A visible key whose P underflowed keeps its inf (its
/// true dx is not 0: review): the call goes to the core. One copy per T, not per scorer (the
/// tiled wasm module's size).
template <class T>
EIGEN_DONT_INLINE void zero_masked_dp(const pipeline::Mask& mask, const Vec<T>& lse, const Eigen::Map<Mat<T>>& X,
                                      Eigen::Map<Mat<T>>& dX, Eigen::Index i0, Eigen::Index j0) {
  const T ninf = -std::numeric_limits<T>::infinity();
  for (Eigen::Index r = 0; r < dX.rows(); ++r) {
    const auto [lo, hi] = block_range(mask, i0 + r, j0, dX.cols());
    for (Eigen::Index c = 0; c < dX.cols(); ++c)
      if (c < lo || c >= hi || lse(i0 + r) == ninf || X(r, c) == ninf) dX(r, c) = 0;
  }
}

/// Recomputes one tile's P (in w.p) and dP (in w.dx); with D, also dL/draw (in w.dx), and P
/// divided by its row sum (inv_sum, from pass B). Returns false for an empty tile.
template <class T, class Scorer>
bool tile_grad(const Scorer& sc, const TileOps<T>& ops, const Mat<T>& V, const Mat<T>& dO,
               const Vec<T>& lse, const RowShift* D, const Eigen::VectorXd* inv_sum, Eigen::Index i0, Eigen::Index bq, Eigen::Index j0,
               Eigen::Index bk, BackwardScratch<T>& w, std::type_identity_t<Mat<T>>* ddense, double* rows) {
  const pipeline::Mask& mask = ops.mask;
  if (classify_tile(mask, i0, i0 + bq, j0, j0 + bk) == pipeline::BlockKind::empty) return false;
  const T ninf = -std::numeric_limits<T>::infinity();
  const bool general = ops.general();
  w.reserve(bq * bk);
  Eigen::Map<Mat<T>> S(w.s.data(), bq, bk), X(w.x.data(), bq, bk), P(w.p.data(), bq, bk),
      dX(w.dx.data(), bq, bk);
  // The logits exactly as the forward computed them (flash.hpp: without modifiers the query
  // tile is scaled first), so that P = exp(x - lse) is consistent with the saved lse. S (the
  // raw scores) is only read back through the modifiers, i.e. when there are some.
  w.refined = false;
  if (prescale_queries(sc, ops, i0, bq, w.Qt)) {
    if constexpr (QueryScalable<Scorer, T>) sc.scores_from(w.Qt, j0, bk, X);
  } else {
    if constexpr (requires { sc.scores_refined(i0, bq, j0, bk, S); })
      w.refined = sc.scores_refined(i0, bq, j0, bk, S);
    else
      sc.scores(i0, bq, j0, bk, S);
    X = S;
    if (!ops.plain() || ops.z_factor() != T(1)) ops.z(X, i0, j0);
  }
  for (Eigen::Index r = 0; r < bq; ++r) {
    const Eigen::Index i = i0 + r;
    const auto [lo, hi] = block_range(mask, i, j0, bk);
    P.row(r).setZero();
    if (lo >= hi || lse(i) == ninf) continue;  // nothing visible / fully masked row
    if (general) ops.apply_keep(X, r, i, j0, lo, hi);
    auto ps = P.row(r).segment(lo, hi - lo);
    ps = X.row(r).segment(lo, hi - lo);
    // P = exp((z - c) / tau) with c = lse tau: a shift within a few units of the row
    // maximum (in the exponent) does, since P is divided by its recomputed row sum; z - c is
    // formed before dividing by tau, as the forward and the core do. X keeps z. The rounding
    // of c is about eps |lse|: attention_backward sends |lse| > 1 / eps to the core.
    exp_shifted_split(ps, double(lse(i)) * double(ops.tau), ops.tau, w.tmp, w.lo);
    if (inv_sum) ps *= T((*inv_sum)(i));
  }
  dX.noalias() = dO.middleRows(i0, bq) * V.middleRows(j0, bk).transpose();  // dP
  if (!dX.allFinite()) zero_masked_dp<T>(mask, lse, X, dX, i0, j0);
  if (rows)  // per row: sum P (for the division)
    for (Eigen::Index r = 0; r < bq; ++r) {
      const auto [lo, hi] = block_range(mask, i0 + r, j0, bk);
      if (lo < hi && lse(i0 + r) != ninf) rows[2 * r + 1] += P.row(r).segment(lo, hi - lo).template cast<double>().sum();
    }
  if (D) {  // pass A: the same dL/draw as pass B (exact slopes for the by-rows scorers)
    thread_local Mat<double> s64;
    const bool have64 = Scorer::grad_q_by_rows && ops.mods.softcap && double_raw_tile(sc, i0, bq, j0, bk, s64);
    const RowSums slopes_only{nullptr, nullptr, have64 ? &s64 : nullptr, j0};
    const double* z64 = exact_tile_logits(sc, ops, *D, i0, j0, V.rows(), X);  // rows of kind 2 (RowShift)
    finish_tile<T>(ops, *D, i0, j0, P, dX, S, TileLogits<T>{X, lse, *inv_sum, z64, bk, j0}, nullptr, ddense,
                   Scorer::grad_q_by_rows ? &slopes_only : nullptr);
  }
  return true;
}

/// Backward for every head n (scorers[n], V[n], fwd[n], dO[n]); g[n] receives its grads.
template <class T, class Scorer>
void flash_backward(const std::vector<Scorer>& scorers, const TileOps<T>& ops,
                    const std::vector<const Mat<T>*>& V, const std::vector<const TiledResult<T>*>& fwd,
                    const std::vector<const Mat<T>*>& dO, Eigen::Index L_q, Eigen::Index L_k,
                    const TiledOptions& opt, std::vector<FlashGrads<T>>& g) {
  const Eigen::Index heads = Eigen::Index(scorers.size()), nq = num_tiles(L_q, opt.block_q),
                     nk = num_tiles(L_k, opt.block_k);
  const int threads = resolve_threads(opt.threads);
  const Eigen::Index n_rel = ops.mods.relative ? 2 * Eigen::Index(ops.mods.R) + 1 : 0,
                     n_t5 = ops.mods.t5 ? Eigen::Index(ops.mods.buckets.num_buckets) : 0, n_pos = n_rel + n_t5,
                     n_extra = scorers.empty() ? 0 : scorers[0].extra_size();
  std::vector<RowShift> D(heads);
  std::vector<Eigen::VectorXd> inv_sum(heads);
  std::vector<Vec<T>> lse(heads);
  std::vector<std::vector<TableSum>> rel_part(heads * nq);  // per (head, query tile): position_rows
  std::vector<Mat<T>> extra_part(heads), extra_rows_part(heads);  // per key tile; per query tile
  std::vector<double> dtau_part(heads * nq, 0.0);
  for (Eigen::Index n = 0; n < heads; ++n) {
    D[n].base = Eigen::VectorXd::Zero(L_q);  // filled by pass B
    D[n].centred = Eigen::VectorXd::Zero(L_q);
    D[n].p64.assign(std::size_t(L_q), 0);
    D[n].top64 = Eigen::VectorXd::Zero(L_q);
    D[n].inv64 = Eigen::VectorXd::Zero(L_q);
    inv_sum[n] = Eigen::VectorXd::Zero(L_q);
    lse[n] = fwd[n]->logsumexp;
    g[n].dQs.resize(L_q, scorers[n].q_width());
    g[n].dKs.resize(L_k, scorers[n].k_width());
    g[n].dV.resize(L_k, V[n]->cols());
    if (ops.mods.dense) g[n].ddense = Mat<T>::Zero(L_q, L_k);
    extra_part[n] = Mat<T>::Zero(nk, n_extra);
    extra_rows_part[n] = Mat<T>::Zero(nq, n_extra);
  }
  // Pass B: (head, query tile) items own D, dQ and the temperature partial sums. First P and
  // dP of every block of the tile's rows (kept), then D from them, then dx and dQ.
  parallel_items<BackwardScratch<T>>(heads * nq, threads, [&](Eigen::Index item, BackwardScratch<T>& w) {
    const Eigen::Index n = item / nq, t = item % nq, i0 = t * opt.block_q,
                       bq = std::min(opt.block_q, L_q - i0);
    const auto& sc = scorers[n];
    w.dQt.setZero(bq, sc.q_width());
    w.rows.assign(2 * bq, 0.0);
    w.rowS.resize(bq, L_k);
    w.rowX.resize(bq, L_k);
    w.rowP.resize(bq, L_k);
    w.rowdX.resize(bq, L_k);
    std::vector<Eigen::Index> blocks;  // key-tile starts j0 with visible pairs
    for (Eigen::Index j0 = 0; j0 < L_k; j0 += opt.block_k) {
      const Eigen::Index bk = std::min(opt.block_k, L_k - j0);
      if (!tile_grad(sc, ops, *V[n], *dO[n], lse[n], nullptr, nullptr, i0, bq, j0, bk, w, nullptr, w.rows.data()))
        continue;
      blocks.push_back(j0);
      w.rowS.middleCols(j0, bk) = Eigen::Map<const Mat<T>>(w.s.data(), bq, bk);
      w.rowX.middleCols(j0, bk) = Eigen::Map<const Mat<T>>(w.x.data(), bq, bk);
      w.rowP.middleCols(j0, bk) = Eigen::Map<const Mat<T>>(w.p.data(), bq, bk);
      w.rowdX.middleCols(j0, bk) = Eigen::Map<const Mat<T>>(w.dx.data(), bq, bk);
    }
    if (row_shifts<T>(w, i0, bq, blocks, opt.block_k, L_k, lse[n], ops.tau, inv_sum[n], D[n]))  // rows marked 3
      exact_rows(sc, ops, w, i0, blocks, opt.block_k, L_k, lse[n], inv_sum[n], D[n]);
    // dL/dtau's share (temperature_grad.hpp).
    dtau_part[item] = -temperature_rows(sc, ops, D[n], lse[n], inv_sum[n], i0, bq, blocks, opt.block_k, L_k, w) /
                      double(ops.tau);
    // Scorers built on the row sums (grad_q_by_rows) take the whole row of blocks at once.
    constexpr bool by_rows = Scorer::grad_q_by_rows;
    w.row_sums.assign(bq, 0.0);
    w.row_ref.assign(bq, 0.0);
    thread_local Mat<double> s64;  // the raw scores in double where the scorer has them
    const bool have64 = by_rows && ops.mods.softcap && double_raw_rows(sc, i0, bq, blocks, opt.block_k, L_k, s64);
    if (by_rows && ops.mods.softcap)  // s'_ref: the slope at the row's key of largest P (RowSums)
      for (Eigen::Index r = 0; r < bq; ++r) {
        T best = 0;
        for (const Eigen::Index j0 : blocks)
          for (Eigen::Index c = j0, e = std::min(j0 + opt.block_k, L_k); c < e; ++c)
            if (w.rowP(r, c) > best) {
              best = w.rowP(r, c);
              w.row_ref[r] = ops.mods.softcap_slope(have64 ? s64(r, c) : double(w.rowS(r, c)));
            }
      }
    const RowSums rs{w.row_sums.data(), w.row_ref.data(), have64 ? &s64 : nullptr, 0};
    if (n_pos) w.rowDz.resize(bq, L_k);
    for (const Eigen::Index j0 : blocks) {
      const Eigen::Index bk = std::min(opt.block_k, L_k - j0);
      finish_tile<T>(ops, D[n], i0, j0, w.rowP.middleCols(j0, bk), w.rowdX.middleCols(j0, bk),
                     w.rowS.middleCols(j0, bk), TileLogits<T>{w.rowX.middleCols(j0, bk), lse[n], inv_sum[n], w.rowZ64.data(), L_k, 0},
                     n_pos ? &w.rowDz : nullptr, nullptr, by_rows ? &rs : nullptr);
      if constexpr (requires { sc.grad_q(i0, bq, j0, bk, w.rowdX.middleCols(j0, bk), w.dQt); })
        sc.grad_q(i0, bq, j0, bk, w.rowdX.middleCols(j0, bk), w.dQt);
    }
    if constexpr (by_rows) {
      w.extra.setZero(n_extra);
      sc.grad_q_rows(i0, bq, blocks, opt.block_k, w.rowdX, w.row_sums.data(), w.dQt, w.extra);
      if (n_extra) extra_rows_part[n].row(t) = w.extra.transpose();
    }
    g[n].dQs.middleRows(i0, bq) = w.dQt;
    if (n_pos) rel_part[item] = position_rows(ops.mods, w.pos, w.rowDz, i0, blocks, opt.block_k, L_k);
  });
  // Pass A: (head, key tile) items own dK, dV and the per-key-tile partial sums.
  parallel_items<BackwardScratch<T>>(heads * nk, threads, [&](Eigen::Index item, BackwardScratch<T>& w) {
    const Eigen::Index n = item / nk, t = item % nk, j0 = t * opt.block_k,
                       bk = std::min(opt.block_k, L_k - j0);
    const auto& sc = scorers[n];
    w.dKt.setZero(bk, sc.k_width());
    w.dVt.setZero(bk, V[n]->cols());
    w.extra.setZero(n_extra);
    for (Eigen::Index i0 = 0; i0 < L_q; i0 += opt.block_q) {
      const Eigen::Index bq = std::min(opt.block_q, L_q - i0);
      if (!tile_grad(sc, ops, *V[n], *dO[n], lse[n], &D[n], &inv_sum[n], i0, bq, j0, bk, w,
                     g[n].ddense.size() ? &g[n].ddense : nullptr, nullptr))
        continue;
      const Eigen::Map<const Mat<T>> P(w.p.data(), bq, bk), dX(w.dx.data(), bq, bk);
      w.dVt.noalias() += P.transpose() * dO[n]->middleRows(i0, bq);
      if constexpr (requires { sc.grad_k_refined(i0, bq, j0, bk, dX, w.dKt); })
        if (w.refined && sc.grad_k_refined(i0, bq, j0, bk, dX, w.dKt))
          continue;  // scores recomputed from differences: dK too (neg_sq_euclidean.hpp)
      sc.grad_k(i0, bq, j0, bk, dX, w.dKt, w.extra);
    }
    g[n].dKs.middleRows(j0, bk) = w.dKt;
    g[n].dV.middleRows(j0, bk) = w.dVt;
    if (n_extra) extra_part[n].row(t) = w.extra.transpose();
  });
  // Reductions in tile order: independent of the thread count.
  for (Eigen::Index n = 0; n < heads; ++n) {
    g[n].extra = Vec<T>::Zero(n_extra);
    const Vec<T> pos = reduce_tables(&rel_part[std::size_t(n * nq)], nq, n_pos).template cast<T>();
    if (n_rel) g[n].drelative = pos.head(n_rel);
    if (n_t5) g[n].dt5_table = pos.tail(n_t5);
    for (Eigen::Index t = 0; t < nk; ++t)
      if (n_extra) g[n].extra += extra_part[n].row(t).transpose();
    for (Eigen::Index t = 0; t < nq; ++t)
      if (n_extra) g[n].extra += extra_rows_part[n].row(t).transpose();
    g[n].dtemperature = 0;
    for (Eigen::Index t = 0; t < nq; ++t) g[n].dtemperature += dtau_part[n * nq + t];
  }
}

}  // namespace qkscope::cpu::detail
