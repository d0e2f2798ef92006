// qkscope/score/neg_sq_euclidean.hpp — negative squared Euclidean distance
//   f(q, k) = -|q - k|^2
// ("L2 attention": Kim, Papamakarios & Mnih 2021, "The Lipschitz constant of
// self-attention", §3: unlike dot-product attention it is Lipschitz; there W^Q = W^K).
// The largest score goes to the nearest key, not to the longest one. Default scale
// 1/sqrt(d_k), as in that paper's L2-MHA (and as scaled_dot); an explicit scale,
// 0 included, overrides it. Needs d_q = d_k. No parameters.
// Fast-path form (score/forms.hpp): with q' = [2q, -|q|^2, 1] and k' = [k, 1, -|k|^2],
// q' . k' = 2 q.k - |q|^2 - |k|^2 = -|q - k|^2, so the dot-product kernels run it with
// width d + 2. Every row is first shifted by the mean key mu (f(q - mu, k - mu) = f(q, k)),
// which keeps |q|^2 and |k|^2 near the spread of the keys instead of their distance from
// the origin. The fast paths send calls whose cancellation bound passes 1e-5 of a logit to
// the core (detail/logit_range.hpp); under it, pairs where a query sits much closer to a key
// than both sit to the mean key are recomputed from differences (refine_tile, CPU kernels).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/score/split_check.hpp"
#include "qkscope/score/tied_keys.hpp"

namespace qkscope::score {

struct NegSqEuclidean {
  static constexpr const char* name = "neg_sq_euclidean";
  static constexpr const char* label = "Negative squared Euclidean distance";
  static constexpr const char* tex = R"(f(\mathbf q,\mathbf k)=-\lVert\mathbf q-\mathbf k\rVert^2)";
  static constexpr const char* params = "";
  static constexpr bool same_dim = true;
  static constexpr bool hidden = false;
  /// -|q - k|^2: a subtract and a multiply-add per component and pair (3 d).
  static double flops(const ScoreShape& s, double pairs, Eigen::Index /*d_h*/) { return 3.0 * double(s.d_k) * pairs; }

  static double default_scale(const ScoreShape& s) { return 1.0 / std::sqrt(double(s.d_k)); }
  template <class T>
  static void validate(const ScoreShape& s, const ScoreParams<T>&) {
    detail::require(s.d_q == s.d_k, [&] {
      return "query and key must have the same width d for negative squared Euclidean scores, got d_q = " +
             std::to_string(s.d_q) + ", d_k = " + std::to_string(s.d_k);
    });
  }
  template <class T>
  static ScoreParams<T> init(const ScoreShape&, Eigen::Index, std::uint64_t) {
    return {};
  }
  /// S_ij = -|q_i - k_j|^2 from differences (no cancellation).  (L_q, L_k)
  /// Component by component along a row of keys (K transposed), so the work vectorises over
  /// keys: the fast paths call this per tile where refine_tile flags one.
  template <class T>
  static Mat<T> forward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&) {
    const Mat<T> Kt = K.transpose();  // (d, L_k)
    Mat<T> S = Mat<T>::Zero(Q.rows(), K.rows());
    for (Eigen::Index i = 0; i < Q.rows(); ++i)
      for (Eigen::Index c = 0; c < Kt.rows(); ++c) S.row(i).array() -= (Kt.row(c).array() - Q(i, c)).square();
    return S;
  }
  /// Whether a gradient row of the centred form is kept (backward, and the tiled backward's
  /// grad_q_rows_from_differences) rather than formed again from the differences: its
  /// rounding bound over its largest entry, both as the worst case `linear` = 2 sum_j w_j and as
  /// the typical size `rss` = 2 sqrt(sum_j w_j^2) of independent roundings (w_j = |dS_ij|
  /// (|qc_i| + |kc_j|), each row at its largest entry). In double: linear under 2^-34 (the fuzz
  /// harness's reference). In float: linear under 2^-12 and rss under 2^-18. The rss test is the
  /// twenty-fifth session's: with the linear test alone at 2^-12, a key far from the others (7.87
  /// beside keys at 0 and -0.01) moved the mean key so that queries near the close keys
  /// cancelled terms of ~2.6 |dS| down to ~0.02 |dS| (bound / largest ~1,050, under 2,048): dQ
  /// 1e-5 relative off, up to 9.4 times the harness's bar (seven fuzzer inputs); two or three
  /// terms carry such rows, so rss is near linear there. The linear test at 2^-17 fixed them too but
  /// retook rows of random inputs at large L (the linear bound grows as L, the rss as sqrt L:
  /// L = 4,096, d = 8, +26 % and dQ 2x less accurate) and, in the core, most rows of clustered
  /// keys beside far ones at d = 64 (backward 3.5x slower, no more accurate: review); the rss
  /// test at 2^-18 costs neither there. Its trade-offs (second review, native/bench/NOTES.md):
  /// rows carried by ~7-30 cancelling terms stay centred, as before (1e-6 to 8e-6 relative,
  /// under the bar), where the linear test at 2^-17 retook them; and where few keys carry each
  /// row (two clusters at +-5 of spread 0.1, d = 64) the core's backward retakes most rows, 3-4x
  /// slower than before (the linear test: 5x). !(a <= b): a NaN is retaken.
  template <class T>
  static bool row_kept(double linear, double rss, double largest) {
    const double eps = std::numeric_limits<T>::epsilon();
    if constexpr (std::numeric_limits<T>::digits >= 53) return eps * linear <= 0x1p-34 * largest;
    else return eps * linear <= 0x1p-12 * largest && eps * rss <= 0x1p-18 * largest;
  }
  /// df/dq = -2 (q - k), df/dk = 2 (q - k). With rows shifted by the mean key mu (q - k is
  /// unchanged, the products stay small), Qc = Q - mu, Kc = K - mu, by GEMM:
  ///   dQ = -2 (rowsum(dS) .* Qc - dS Kc),  dK = 2 (dS^T Qc - colsum(dS) .* Kc).
  /// Both cancel terms of size |dS| |qc| where queries sit on keys (tied keys at 0 with dS of
  /// 1e19: the double core's dK -2048 where it is 0, dQ 1878 where it is 0; fuzzer finding
  /// and review), as the scores do (refine_tile). A row that row_kept<T> does not keep (its rounding bound
  /// 2 eps (sum |dS| |qc|_max + sum |dS| |kc|_max) against its largest entry) is formed again
  /// from the differences,
  /// -2 sum_j dS_ij (q_i - k_j) and 2 sum_i dS_ij (q_i - k_j), column by column where their
  /// own bound is under half the centred one (retake_by_column). Random inputs keep about
  /// eps sqrt(L) of their size and stay on the GEMMs, but for some rows at d = 1-2.
  /// Where keys tie exactly and a row's exact sum R_i of dS is 0, its dQ is 2 sum_j dS_ij kc_j
  /// (no r_i qc_i term), each entry formed about the tied group carrying the row where that
  /// sum's bound is smaller (the dot family's rule, tied_keys.hpp, with ties and differences
  /// from the keys as given, as the tiled path's DotScorer does); those entries are not
  /// retaken: a query on the far side of the mean key from a tied group has differences and
  /// centred sums of the same bound, and the per-column retake kept a centred 1.15e7 where dQ
  /// is 0 (review). The row's other entries still may be (a first form skipped the whole row:
  /// a constant column of inexact mean took the split, and the real column kept a centred sum
  /// 171 % off in float: second review).
  template <class T>
  static void backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&, const Mat<T>& dS,
                       ScoreGrads<T>& g, const Eigen::VectorXd& R) {
    const Eigen::Matrix<T, 1, Eigen::Dynamic> mu = K.colwise().mean();
    const Mat<T> Qc = Q.rowwise() - mu, Kc = K.rowwise() - mu;
    const Vec<T> r = dS.rowwise().sum(), c = dS.colwise().sum().transpose();
    std::vector<char> split;  // (L_q, d): the entries that took the tied split
    const Mat<T> dSKc = dS_times_keys(dS, K, R, &Kc, &split);
    g.dQ = T(-2) * (r.asDiagonal() * Qc - dSKc);
    std::vector<char> split_row(std::size_t(Q.rows()), 0);
    for (Eigen::Index i = 0; i < Q.rows(); ++i)
      for (Eigen::Index x = 0; x < Q.cols(); ++x) split_row[std::size_t(i)] |= split[std::size_t(i * Q.cols() + x)];
    for (Eigen::Index i = 0; i < Q.rows(); ++i)
      if (split_row[std::size_t(i)]) g.dQ.row(i) = T(2) * dSKc.row(i);  // R_i = 0: no r_i qc_i term
    g.dK = T(2) * (dS.transpose() * Qc - c.asDiagonal() * Kc);
    // The bounds per row, with each row of Qc and Kc at its largest entry, in one pass over dS
    // (per entry, two more GEMMs cost the backward +30 % at L = 512; a matrix of |dS|, +25 %,
    // most of it the kernel's page faults for the new (L_q, L_k) allocation). Scalar loops:
    // small code in the wasm modules.
    auto largest = [](const Mat<T>& M, Eigen::Index i) {
      T m = 0;
      for (Eigen::Index x = 0; x < M.cols(); ++x) m = std::max(m, std::abs(M(i, x)));
      return m;
    };
    Vec<T> nq(Q.rows()), nk(K.rows()), bQ = Vec<T>::Zero(Q.rows()), bK = Vec<T>::Zero(K.rows());
    Eigen::VectorXd sQ = Eigen::VectorXd::Zero(Q.rows()), sK = Eigen::VectorXd::Zero(K.rows());  // sum w^2
    for (Eigen::Index i = 0; i < Q.rows(); ++i) nq(i) = largest(Qc, i);
    for (Eigen::Index j = 0; j < K.rows(); ++j) nk(j) = largest(Kc, j);
    for (Eigen::Index i = 0; i < Q.rows(); ++i)
      for (Eigen::Index j = 0; j < K.rows(); ++j) {
        const T w = std::abs(dS(i, j)) * (nq(i) + nk(j));
        bQ(i) += w;
        bK(j) += w;
        sQ(i) += double(w) * double(w);
        sK(j) += double(w) * double(w);
      }
    // Against the row's largest entry (a component far smaller than the row's others may keep
    // fewer bits: 12 bits per entry flagged ~30 % of random rows at L = 512): row_kept<T>.
    // A flagged row takes the differences only in the columns where their own bound is under
    // half the centred one: a query far from keys 1e-15 apart keeps their offset in the
    // centred keys and loses it in q - k (dQ 2.4 % off in double where the centred form was
    // exact: review).
    const Eigen::Index L_k = K.rows(), d = Q.cols();
    std::vector<double> xc(std::size_t(d), 0.0), value(std::size_t(d), 0.0);
    // xc = 0 drops the r qc term from the centred bound (rows that split have none); skip: the
    // entries that took the split.
    auto retake = [&](Mat<T>& G, double bound, double squares, const Mat<T>& X, const Mat<T>& Xc, Eigen::Index a,
                      const Mat<T>& Y, const Mat<T>& Yc, const T* w, Eigen::Index sb, bool no_xc, const char* skip) {
      if (row_kept<T>(bound, 2 * std::sqrt(squares), double(largest(G, a)))) return;
      for (Eigen::Index x = 0; x < d; ++x) {
        xc[std::size_t(x)] = no_xc ? 0.0 : std::abs(double(Xc(a, x)));
        value[std::size_t(x)] = double(G(a, x));
      }
      const Eigen::Index zero = 0;
      if (!retake_by_column<T>(X, a, Y, Yc, {&zero, 1, Y.rows(), Y.rows()}, w, sb, xc.data(), value.data(), skip))
        return;
      for (Eigen::Index x = 0; x < d; ++x) G(a, x) = T(value[std::size_t(x)]);
    };
    for (Eigen::Index i = 0; i < Q.rows(); ++i)
      retake(g.dQ, 2 * double(bQ(i)), sQ(i), Q, Qc, i, K, Kc, dS.data() + i * L_k, 1,
             split_row[std::size_t(i)] != 0, split.data() + i * d);
    for (Eigen::Index j = 0; j < L_k; ++j)
      retake(g.dK, 2 * double(bK(j)), sK(j), K, Kc, j, Q, Qc, dS.data() + j, L_k, false, nullptr);
  }
  /// Gradient row a of X (a query's dQ row, or a key's dK row with X = K, Y = Q) formed again
  /// from the differences, -2 sum_b w_b (X_a - Y_b) over the rows b of Y in `rows`, column by
  /// column: where the differences' rounding bound there, sum 2 |w_b| |X_ac - Y_bc|, is under
  /// half the centred form's, sum 2 |w_b| (xc[c] + |Yc_bc|) (xc[c] = |X_ac - mu_c|; Yc the
  /// centred rows of Y), the difference sum replaces value[c] (the centred form's value, in
  /// double). Per column, not per row: a row-wide choice let one column's bound replace another
  /// column's exact centred sum (keys 4.7e-10 apart, q_x - k_x of 0.03 rounding their x offset
  /// away: dQ_x 0 where 4.2e21, review). Columns with skip[c] != 0 keep value[c] (skip may be
  /// null). Returns whether any column changed. The core's
  /// backward and the tiled one (grad_q_rows_from_differences) both call it. Scalar loops, one
  /// instantiation per T, not inlined: small code in the wasm modules; flagged rows are rare.
  template <class T>
  EIGEN_DONT_INLINE static bool retake_by_column(const Mat<T>& X, Eigen::Index a, const Mat<T>& Y, const Mat<T>& Yc,
                                                 const KeyBlocks& rows, const T* w, Eigen::Index sb, const double* xc,
                                                 double* value, const char* skip = nullptr) {
    const Eigen::Index d = X.cols();
    // Per column: the sum (a T, held in a double exactly) and both bounds. (Summed in double,
    // one test's dQ moved from 2.5e-6 to 1.2e-5 of its value: both within the float dS's own
    // error there, eps sum |dS| |q - k| ~ 1.2e-5 of it. Kept as it was.)
    std::vector<double> acc(std::size_t(3 * d), 0.0);
    rows.each([&](Eigen::Index b) {
      const T s = T(-2) * w[b * sb];
      if (s == T(0)) return;
      const double ws = std::abs(double(s));
      for (Eigen::Index c = 0; c < d; ++c) {
        const T diff = X(a, c) - Y(b, c);
        double* e = &acc[std::size_t(3 * c)];
        e[0] = double(T(e[0]) + s * diff);
        e[1] += ws * std::abs(double(diff));
        e[2] += ws * (xc[c] + std::abs(double(Yc(b, c))));
      }
    });
    bool any = false;
    for (Eigen::Index c = 0; c < d; ++c)
      if (const double* e = &acc[std::size_t(3 * c)]; !(skip && skip[c]) && e[1] < e[2] / 2) {
        value[c] = e[0];
        any = true;
      }
    return any;
  }
  /// out(o0 + a, 0 .. d) += -2 sum_b w[a sa + b sb] (X(x0 + a) - Y(y0 + b)) for a < na, b < nb:
  /// a gradient from the differences themselves. Returns its rounding bound's scale,
  /// sum 2 |w| |X(x0 + a) - Y(y0 + b)|_max (the differences keep eps of themselves). Scalar
  /// loops, one instantiation, not inlined: small code in the wasm modules.
  template <class T>
  EIGEN_DONT_INLINE static double add_differences(const Mat<T>& X, Eigen::Index x0, Eigen::Index na,
                                                  const Mat<T>& Y, Eigen::Index y0, Eigen::Index nb, const T* w,
                                                  Eigen::Index sa, Eigen::Index sb, Mat<T>& out, Eigen::Index o0) {
    const Eigen::Index d = X.cols();
    double bound = 0;
    for (Eigen::Index a = 0; a < na; ++a)
      for (Eigen::Index b = 0; b < nb; ++b) {
        const T s = T(-2) * w[a * sa + b * sb];
        if (s == T(0)) continue;
        T m = 0;
        for (Eigen::Index x = 0; x < d; ++x) {
          const T diff = X(x0 + a, x) - Y(y0 + b, x);
          out(o0 + a, x) += s * diff;
          m = std::max(m, std::abs(diff));
        }
        bound += std::abs(double(s)) * double(m);
      }
    return bound;
  }
  /// Fast paths: q' = [2 (q - mu), -|q - mu|^2, 1], k' = [k - mu, 1, -|k - mu|^2], mu = mean key.
  template <class T>
  static DotForm<T> prepare(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&) {
    const Eigen::Index d = Q.cols();
    const Eigen::Matrix<T, 1, Eigen::Dynamic> mu = K.colwise().mean();
    DotForm<T> f;
    f.q.resize(Q.rows(), d + 2);
    f.k.resize(K.rows(), d + 2);
    f.q.leftCols(d) = Q.rowwise() - mu;
    f.q.col(d) = -f.q.leftCols(d).rowwise().squaredNorm();
    f.q.leftCols(d) *= T(2);
    f.q.col(d + 1).setOnes();
    f.k.leftCols(d) = K.rowwise() - mu;
    f.k.col(d).setOnes();
    f.k.col(d + 1) = -f.k.leftCols(d).rowwise().squaredNorm();
    // 2 qc.kc - |qc|^2 - |kc|^2 cancels to -|q - k|^2: keys in clusters far from their mean
    // leave rounding of eps (|qc|^2 + |kc|^2); the fast paths defer to the core past a bound.
    if (Q.rows() && K.rows())
      f.cancellation = double(-f.q.col(d).minCoeff()) + double(-f.k.col(d + 1).minCoeff());
    return f;
  }
  /// The fast paths' check of a tile of the form's raw scores S (queries i0 .. i0 + bq, keys
  /// j0 .. j0 + bk): each carries about eps (|qc|^2 + |kc|^2 + 2 |qc.kc|) <= 2 eps (|qc|^2 +
  /// |kc|^2) of rounding, the core's scores eps |S|. Where some pair's bound passes 8 eps |S| (a
  /// query much closer to a key than both are to the mean key: keys 0 and 0.01 beside one at
  /// -5.79 left dL/dtau 1.4e-3 relative off, fuzzer finding), the tile is recomputed from
  /// differences, as forward() does. Random keys stay on the GEMM: there |S| ~ |qc|^2 + |kc|^2.
  /// Only the flagged entries take the recomputed values: whether a pair is flagged depends on
  /// that pair alone, so a key's logit no longer depends on its neighbours in the tile. (Whole
  /// tiles took them once one pair flagged; two keys at 0 in key tiles of 2, one beside a
  /// flagged key, then had logits of 9 exactly and 9 - 3e-6, and dL/dtau carried the
  /// difference: 1.1 times the fuzz harness's bar, fuzzer finding.) The recomputation itself
  /// stays whole-tile and vectorised (forward()): per flagged pair in a scalar loop, clustered
  /// self-attention, which flags half the pairs, ran the forward 2-4 times slower (review).
  /// A pair whose query is more than 8 times as far from the mean key as the key
  /// (|qc|^2 > 64 |kc|^2) is recomputed too: there every logit rounds at |qc|^2, the row's
  /// constant, in the form's sum of three terms, where the core's sum of (q_c - k_c)^2 rounds
  /// per component (at d = 1 once, exact for a key at 0); within the bound above, yet a query
  /// of -8.27 over keys near 0 left the output and dL/dtau 1.04-1.5 times the fuzz harness's
  /// bar (four fuzzer inputs). Random self-attention at d >= 8 flags no such pair; at d = 1-2
  /// most tiles are recomputed (the forward +26-60 %, the backward +2-10 %). Trade-offs found
  /// by the review (native/bench/NOTES.md): dQ of such rows loses the shared rounding of
  /// -|qc|^2 that kept its differences; a key exactly at the mean flags every query, and at
  /// large d the per-component sum rounds worse than the form's; queries offset from all keys
  /// at large tau recompute every tile (backward up to 3.8x at d = 64, tau = 100). Leaving the
  /// row's constant out of the tiles would serve all three; not done.
  /// Returns whether it recomputed any entry (the tiled backward then takes the tile's dK from
  /// differences too: grad_k_from_differences).
  /// Above this |scale| / tau every entry of a tile is refined (refine_prepare).
  static constexpr double refine_gain = 8;
  /// The fast paths ask before they run (cpu/attention.hpp): the tile check is always on, and
  /// above refine_gain it recomputes every entry from differences, as the core forms them (bit
  /// for bit). Below 4 |S| of cancellation bound a pair kept up to ~8 eps |S| of rounding
  /// against the core's ~d eps / 2 |S|; at tau = 2.9e-4 (gain ~1,700) that put dL/dtau 1.1 to
  /// 1.5 times the rule's bar (five fuzzer findings). Random inputs at such gains pass the
  /// form's cancellation bound and go to the core anyway; at tau = 1 nothing changes (every
  /// entry refined there cost the forward 1.65x and the backward 2.5x: native/bench/NOTES.md).
  template <class T>
  static bool refine_prepare(DotForm<T>& f, const Mat<T>&, const Mat<T>&, double score_gain) {
    f.refine_all = score_gain > refine_gain;
    return true;
  }
  template <class T>
  static bool refine_tile(const Mat<T>& Q, const Mat<T>& K, const DotForm<T>& f, Eigen::Index i0, Eigen::Index bq,
                          Eigen::Index j0, Eigen::Index bk, Eigen::Ref<Mat<T>> S) {
    const Eigen::Index d = Q.cols();
    auto flagged = [&](Eigen::Index r, Eigen::Index c) {
      const T qq = -f.q(i0 + r, d), kk = -f.k(j0 + c, d + 1);  // |qc|^2, |kc|^2
      return qq + kk > T(4) * std::abs(S(r, c)) || qq > T(64) * kk;
    };
    // refine_prepare's refine_all: every entry, as the core forms it (S was not formed: the
    // fast paths skip the GEMM of such tiles, so `flagged` must not read it).
    bool any = f.refine_all;
    for (Eigen::Index r = 0; r < bq && !any; ++r)
      for (Eigen::Index c = 0; c < bk && !any; ++c) any = flagged(r, c);
    if (!any) return false;
    const Mat<T> exact = forward<T>(Q.middleRows(i0, bq), K.middleRows(j0, bk), {});
    for (Eigen::Index r = 0; r < bq; ++r)
      for (Eigen::Index c = 0; c < bk; ++c)
        if (f.refine_all || flagged(r, c)) S(r, c) = exact(r, c);
    return true;
  }
  /// dKt(c, 0 .. d) += 2 sum_r dS(r, c) (q_{i0 + r} - k_{j0 + c}): the tiled backward's dK share
  /// of a tile refine_tile recomputed. There the form's dK_j = dk'_j - 2 kc_j colsum(dS)_j
  /// cancels as the scores do (dK 1.1e12 where it is 0: fuzzer finding), so such a tile adds
  /// this to the first d columns of dKt (bk, d + 2), which prepared_backward reads as
  /// 2 sum dS qc, and nothing to the column of colsum(dS).
  template <class T>
  static void grad_k_from_differences(const Mat<T>& Q, const Mat<T>& K, Eigen::Index i0, Eigen::Index bq,
                                      Eigen::Index j0, Eigen::Index bk, const Eigen::Ref<const Mat<T>>& dS,
                                      Mat<T>& dKt) {
    add_differences<T>(K, j0, bk, Q, i0, bq, dS.data(), 1, dS.outerStride(), dKt, 0);
  }
  /// The tiled backward's dQ rows after a query tile's key blocks (cpu/scorers.hpp): dq (bq,
  /// d + 2) holds sum_j dS_ij k'_j, which prepared_backward maps to dQ = 2 dq[:, :d] -
  /// 2 qc dq[:, d], terms of size |dS| |qc| that cancel where queries sit near keys (fuzzer:
  /// dQ 2.03e31 where it is 1.63e31 with a softcap; 1.5e-5 where 0). As the core's rows
  /// (backward, above): a row that row_kept<T> does not keep (its bound 2 eps sum_j |dS_ij|
  /// (|qc_i| + |kc_j|), each at its largest entry, against its largest entry) is formed again
  /// from the differences,
  /// -2 sum_j dS_ij (q_i - k_j), each column kept where its own bound is under half the centred
  /// one there (retake_by_column, as the core); such a row is written as dQ / 2 in dq[:, :d]
  /// with dq[:, d] = 0, so that prepared_backward returns it.
  /// Only the key blocks listed hold dS (the others were not visited). Entries with
  /// keep[r (d + 2) + c] != 0 stay (those that took the tied-group split: cpu/scorers.hpp says
  /// why); where the row's sum column (c = d) took it, dq[:, d] is 0 and the centred bound has
  /// no qc term.
  template <class T>
  static void grad_q_rows_from_differences(const Mat<T>& Q, const Mat<T>& K, const DotForm<T>& f, Eigen::Index i0,
                                           Eigen::Index bq, const std::vector<Eigen::Index>& blocks,
                                           Eigen::Index block_k, const Mat<T>& dS, Mat<T>& dq, const char* keep) {
    const Eigen::Index d = Q.cols(), L_k = dS.cols();
    const KeyBlocks keys{blocks.data(), blocks.size(), block_k, L_k};
    std::vector<double> nk(std::size_t(L_k), 0.0);  // |kc_j| at its largest entry, visited keys
    keys.each([&](Eigen::Index j) {
      for (Eigen::Index c = 0; c < d; ++c)
        nk[std::size_t(j)] = std::max(nk[std::size_t(j)], std::abs(double(f.k(j, c))));
    });
    std::vector<double> xc(std::size_t(d), 0.0), value(std::size_t(d), 0.0);
    for (Eigen::Index r = 0; r < bq; ++r) {
      const char* skip = keep ? keep + r * (d + 2) : nullptr;
      const bool no_xc = skip && skip[d];
      double nq = 0, bound = 0, squares = 0, largest = 0;
      for (Eigen::Index c = 0; c < d; ++c) nq = std::max(nq, std::abs(double(f.q(i0 + r, c))) / 2);  // f.q holds 2 qc
      keys.each([&](Eigen::Index j) {
        const double w = std::abs(double(dS(r, j))) * (nq + nk[std::size_t(j)]);
        bound += w;
        squares += w * w;
      });
      for (Eigen::Index c = 0; c < d; ++c)
        largest = std::max(largest, std::abs(2 * double(dq(r, c)) - double(f.q(i0 + r, c)) * double(dq(r, d))));
      if (row_kept<T>(2 * bound, 2 * std::sqrt(squares), largest)) continue;
      // dQ itself in dq[:, :d] / 2 with dq[:, d] = 0: the centred columns' 2 dq - 2 qc dq[:, d]
      // formed in double (one rounding more), the others the differences.
      for (Eigen::Index c = 0; c < d; ++c) {
        xc[std::size_t(c)] = no_xc ? 0.0 : std::abs(double(f.q(i0 + r, c))) / 2;
        value[std::size_t(c)] = 2 * double(dq(r, c)) - double(f.q(i0 + r, c)) * double(dq(r, d));
      }
      if (!retake_by_column<T>(Q, i0 + r, K, f.k, keys, dS.data() + r * L_k, 1, xc.data(), value.data(), skip))
        continue;
      for (Eigen::Index c = 0; c < d; ++c) dq(r, c) = T(value[std::size_t(c)] / 2);
      dq(r, d) = T(0);
    }
  }
  /// Through the augmented rows (mu is a constant here: f does not change when q and k move
  /// together, so the paths through mu cancel exactly): with qc = q - mu, kc = k - mu,
  /// dQ = 2 dq[:, :d] - 2 qc dq[:, d],  dK = dk[:, :d] - 2 kc dk[:, d + 1].
  template <class T>
  static void prepared_backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>&, const DotForm<T>& f,
                                FormGrads<T>& fg, ScoreGrads<T>& g) {
    const Eigen::Index d = Q.cols();
    const auto qc = f.q.leftCols(d) / T(2);  // exact: the form holds 2 qc
    const auto kc = f.k.leftCols(d);
    g.dQ = T(2) * fg.dq.leftCols(d) - T(2) * (fg.dq.col(d).asDiagonal() * qc);
    g.dK = fg.dk.leftCols(d) - T(2) * (fg.dk.col(d + 1).asDiagonal() * kc);
    (void)K;
  }
};

}  // namespace qkscope::score
