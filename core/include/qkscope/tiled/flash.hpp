// qkscope/tiled/flash.hpp — tiled online-softmax attention (FlashAttention on CPU),
// generic over a tile scorer that produces the raw scores of one block.
//   forward:  per query tile, for each key tile: S = score(Qt, Kt); x = mods(S);
//             m' = max(m, rowmax x); P = exp(x - m'); l = e^{m-m'} l + rowsum P;
//             acc = e^{m-m'} acc + P Vt.  O = acc / l, lse = m + log l.
//             (Dao et al. 2022, Alg. 1; Dao 2023, Alg. 1.) Memory O(L d), never (L_q, L_k).
//   backward: P = exp(x - lse), D_i = rowsum(dO_i * O_i), dx = P (dO V^T - D)
//             (Dao 2023, Alg. 2). Two passes so no two threads add into the same row:
//             pass A over key tiles -> dK, dV (+ bias grads), pass B over query tiles -> dQ, dtau.
// A Scorer provides: scores(i0, bq, j0, bk, S); grad_q(i0, bq, j0, bk, dS, dQt);
// grad_k(i0, bq, j0, bk, dS, dKt, extra); q_width(), k_width(), extra_size().
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "qkscope/tiled/mods.hpp"
#include "qkscope/tiled/parallel.hpp"

namespace qkscope::tiled {

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

template <class T, class Scorer>
void flash_forward(const Scorer& sc, const TileMods<T>& mods, const Mat<T>& V, Eigen::Index L_q,
                   Eigen::Index L_k, const TiledOptions& opt, TiledResult<T>& r) {
  using MatT = Mat<T>;
  const T ninf = -std::numeric_limits<T>::infinity();
  const Eigen::Index d_v = V.cols(), nq = num_tiles(L_q, opt.block_q);
  r.output.resize(L_q, d_v);
  r.logsumexp.resize(L_q);
  parallel_tiles(nq, resolve_threads(opt.threads), [&](Eigen::Index t) {
    const Eigen::Index i0 = t * opt.block_q, bq = std::min(opt.block_q, L_q - i0);
    MatT S(bq, opt.block_k), X(bq, opt.block_k), acc = MatT::Zero(bq, d_v);
    Vec<T> m = Vec<T>::Constant(bq, ninf), l = Vec<T>::Zero(bq), m_use(bq), alpha(bq);
    for (Eigen::Index j0 = 0; j0 < L_k; j0 += opt.block_k) {
      const Eigen::Index bk = std::min(opt.block_k, L_k - j0);
      const TileKind kind = classify_tile(mods.mask, i0, i0 + bq, j0, j0 + bk);
      if (kind == TileKind::empty) continue;  // skip fully masked tiles
      S.resize(bq, bk);
      X.resize(bq, bk);
      sc.scores(i0, bq, j0, bk, S);
      mods.logits(S, i0, j0, kind, X);
      for (Eigen::Index i = 0; i < bq; ++i) {
        const T mn = std::max(m(i), X.row(i).maxCoeff());
        m_use(i) = mn == ninf ? T(0) : mn;  // row still fully masked: exp(-inf - 0) = 0
        alpha(i) = std::exp(m(i) - m_use(i));
        m(i) = mn;
      }
      X.array().colwise() -= m_use.array();
      exp_masked(X, kind == TileKind::partial || mods.dense);  // P tile, 0 where masked
      l = alpha.cwiseProduct(l) + X.rowwise().sum();
      acc = alpha.asDiagonal() * acc;
      acc.noalias() += X * V.middleRows(j0, bk);
    }
    for (Eigen::Index i = 0; i < bq; ++i) {
      const bool empty = !(l(i) > 0);
      r.output.row(i0 + i) = empty ? Vec<T>::Zero(d_v).transpose() : (acc.row(i) / l(i)).eval();
      r.logsumexp(i0 + i) = empty && m(i) == ninf ? ninf : m(i) + std::log(l(i));
    }
  });
  for (Eigen::Index i = 0; i < L_q; ++i) {
    const T v = r.logsumexp(i);
    qkscope::detail::require(!std::isnan(v) && v != std::numeric_limits<T>::infinity(),
                             "scores overflowed in row " + std::to_string(i) +
                                 " (scale or inputs too large for this precision)");
  }
}

/// Gradients from the generic kernel: w.r.t. the scorer's query/key side (dQs, dKs), V,
/// the scorer's per-call extra parameters, and the biases / temperature.
template <class T>
struct FlashGrads {
  Mat<T> dQs, dKs, dV;
  Vec<T> extra, drelative;
  Mat<T> ddense;
  double dtemperature = 0;
};

/// Recomputes one tile's P and dL/draw. Returns false for an empty tile.
template <class T, class Scorer>
bool tile_grad(const Scorer& sc, const TileMods<T>& mods, const Mat<T>& V, const Mat<T>& dO,
               const Vec<T>& lse_use, const Vec<T>& D, Eigen::Index i0, Eigen::Index bq,
               Eigen::Index j0, Eigen::Index bk, Mat<T>& S, Mat<T>& X, Mat<T>& P, Mat<T>& dX,
               std::type_identity_t<T>* drel, std::type_identity_t<Mat<T>>* ddense, double* rows) {
  const TileKind kind = classify_tile(mods.mask, i0, i0 + bq, j0, j0 + bk);
  if (kind == TileKind::empty) return false;
  S.resize(bq, bk);
  X.resize(bq, bk);
  sc.scores(i0, bq, j0, bk, S);
  mods.logits(S, i0, j0, kind, X);
  X.array().colwise() -= lse_use.segment(i0, bq).array();  // log P
  P = X;
  exp_masked(P, kind == TileKind::partial || mods.dense);
  dX.noalias() = dO.middleRows(i0, bq) * V.middleRows(j0, bk).transpose();  // dP
  if (rows) {
    // dL/dtau = -(1/tau) sum_ij P_ij (dP_ij - D_i) log P_ij (shifting x by lse_i changes
    // nothing since sum_j P_ij (dP_ij - D_i) = 0). Per-row sums a = sum P dP logP,
    // b = sum P logP, c = sum P dP, s = sum P are finished in flash_backward with the row's
    // own D and normalisation, so float rounding of lse and of rowsum(dO O) cancels.
    for (Eigen::Index r = 0; r < bq; ++r)
      for (Eigen::Index c = 0; c < bk; ++c)
        if (P(r, c) > 0) {
          const double p = P(r, c), dp = dX(r, c), lp = X(r, c);
          rows[4 * r] += p * dp * lp;
          rows[4 * r + 1] += p * lp;
          rows[4 * r + 2] += p * dp;
          rows[4 * r + 3] += p;
        }
  }
  dX = (P.array() * (dX.array().colwise() - D.segment(i0, bq).array())).matrix();
  mods.backward(dX, S, i0, j0, drel, ddense);
  return true;
}

template <class T, class Scorer>
FlashGrads<T> flash_backward(const Scorer& sc, const TileMods<T>& mods, const Mat<T>& V,
                             const TiledResult<T>& fwd, const Mat<T>& dO, Eigen::Index L_q,
                             Eigen::Index L_k, const TiledOptions& opt) {
  using MatT = Mat<T>;
  const Eigen::Index d_v = V.cols(), nq = num_tiles(L_q, opt.block_q),
                     nk = num_tiles(L_k, opt.block_k);
  const int threads = resolve_threads(opt.threads);
  const Vec<T> D = (dO.array() * fwd.output.array()).rowwise().sum();  // sum_j P_ij dP_ij
  Vec<T> lse_use = fwd.logsumexp;  // -inf (empty row) -> +inf so that exp(-inf - inf) = 0
  for (Eigen::Index i = 0; i < L_q; ++i)
    if (lse_use(i) == -std::numeric_limits<T>::infinity()) lse_use(i) = std::numeric_limits<T>::infinity();
  const auto& b = *mods.bias;
  const Eigen::Index n_rel = b.relative.size(), n_extra = sc.extra_size();

  FlashGrads<T> g;
  g.dQs = MatT::Zero(L_q, sc.q_width());
  g.dKs = MatT::Zero(L_k, sc.k_width());
  g.dV = MatT::Zero(L_k, d_v);
  if (b.dense.size()) g.ddense = MatT::Zero(L_q, L_k);
  MatT rel_part = MatT::Zero(nk, n_rel), extra_part = MatT::Zero(nk, n_extra);
  std::vector<double> dtau_part(nq, 0.0);  // per query tile

  // Pass A: key tiles own dK, dV and the per-key-tile partial sums.
  parallel_tiles(nk, threads, [&](Eigen::Index t) {
    const Eigen::Index j0 = t * opt.block_k, bk = std::min(opt.block_k, L_k - j0);
    MatT S, X, P, dX, dKt = MatT::Zero(bk, sc.k_width()), dVt = MatT::Zero(bk, d_v);
    Vec<T> extra = Vec<T>::Zero(n_extra);
    for (Eigen::Index i0 = 0; i0 < L_q; i0 += opt.block_q) {
      const Eigen::Index bq = std::min(opt.block_q, L_q - i0);
      if (!tile_grad(sc, mods, V, dO, lse_use, D, i0, bq, j0, bk, S, X, P, dX,
                     n_rel ? rel_part.row(t).data() : nullptr, g.ddense.size() ? &g.ddense : nullptr,
                     nullptr))
        continue;
      dVt.noalias() += P.transpose() * dO.middleRows(i0, bq);
      sc.grad_k(i0, bq, j0, bk, dX, dKt, extra);
    }
    g.dKs.middleRows(j0, bk) = dKt;
    g.dV.middleRows(j0, bk) = dVt;
    if (n_extra) extra_part.row(t) = extra.transpose();
  });
  // Pass B: query tiles own dQ.
  parallel_tiles(nq, threads, [&](Eigen::Index t) {
    const Eigen::Index i0 = t * opt.block_q, bq = std::min(opt.block_q, L_q - i0);
    MatT S, X, P, dX, dQt = MatT::Zero(bq, sc.q_width());
    std::vector<double> rows(4 * bq, 0.0);
    for (Eigen::Index j0 = 0; j0 < L_k; j0 += opt.block_k) {
      const Eigen::Index bk = std::min(opt.block_k, L_k - j0);
      if (tile_grad(sc, mods, V, dO, lse_use, D, i0, bq, j0, bk, S, X, P, dX, nullptr, nullptr,
                    rows.data()))
        sc.grad_q(i0, bq, j0, bk, dX, dQt);
    }
    g.dQs.middleRows(i0, bq) = dQt;
    double acc = 0;
    for (Eigen::Index r = 0; r < bq; ++r) {
      const double a = rows[4 * r], b = rows[4 * r + 1], c = rows[4 * r + 2], sum = rows[4 * r + 3];
      if (!(sum > 0)) continue;  // fully masked row
      const double ls = std::log(sum);  // with p^ = P / sum: A - C B, A = sum p^ dP log p^ ...
      acc += (a - c * ls) / sum - (c / sum) * ((b - sum * ls) / sum);
    }
    dtau_part[t] = -acc / double(mods.tau);
  });
  // Reductions in key-tile order: independent of the thread count.
  g.extra = Vec<T>::Zero(n_extra);
  if (n_rel) g.drelative = Vec<T>::Zero(n_rel);
  for (Eigen::Index t = 0; t < nk; ++t) {
    if (n_extra) g.extra += extra_part.row(t).transpose();
    if (n_rel) g.drelative += rel_part.row(t).transpose();
  }
  for (Eigen::Index t = 0; t < nq; ++t) g.dtemperature += dtau_part[t];
  return g;
}

/// Dot-family scorer: S = Qs Ks^T on blocks (Eigen GEMM). Qs, Ks are the pre-processed
/// rows (Q, normalised Q for cosine, Q W for bilinear).
template <class T>
struct DotScorer {
  const Mat<T>& Qs;
  const Mat<T>& Ks;
  Eigen::Index q_width() const { return Qs.cols(); }
  Eigen::Index k_width() const { return Ks.cols(); }
  Eigen::Index extra_size() const { return 0; }
  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, Mat<T>& S) const {
    S.noalias() = Qs.middleRows(i0, bq) * Ks.middleRows(j0, bk).transpose();
  }
  void grad_q(Eigen::Index, Eigen::Index, Eigen::Index j0, Eigen::Index bk, const Mat<T>& dS,
              Mat<T>& dQt) const {
    dQt.noalias() += dS * Ks.middleRows(j0, bk);
  }
  void grad_k(Eigen::Index i0, Eigen::Index bq, Eigen::Index, Eigen::Index, const Mat<T>& dS,
              Mat<T>& dKt, Vec<T>&) const {
    dKt.noalias() += dS.transpose() * Qs.middleRows(i0, bq);
  }
};

/// Separable scorer S_ij = a_i + c_j (linear concat): O(L_q L_k) with no GEMM.
template <class T>
struct SeparableScorer {
  const Vec<T>& a;
  const Vec<T>& c;
  Eigen::Index q_width() const { return 1; }
  Eigen::Index k_width() const { return 1; }
  Eigen::Index extra_size() const { return 0; }
  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, Mat<T>& S) const {
    S = a.segment(i0, bq).replicate(1, bk);
    S.rowwise() += c.segment(j0, bk).transpose();
  }
  void grad_q(Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, const Mat<T>& dS,
              Mat<T>& dQt) const {
    dQt.col(0) += dS.rowwise().sum();
  }
  void grad_k(Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, const Mat<T>& dS, Mat<T>& dKt,
              Vec<T>&) const {
    dKt.col(0) += dS.colwise().sum().transpose();
  }
};

}  // namespace detail
}  // namespace qkscope::tiled
