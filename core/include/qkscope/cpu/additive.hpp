// qkscope/cpu/additive.hpp — fused additive (Bahdanau) scorer for the tiled kernel:
//   S_ij = sum_h v_h tanh(A_ih + B_jh),  A = Q W_q^T + b (L_q, d_h),  B = K W_k^T (L_k, d_h)
// (Bahdanau et al. 2015, A.1.2). The projections are computed once (O(L d d_h)); the
// (L_q, L_k, d_h) tanh tensor is never stored (docs/facts.md §7).
// The tanh of a sum is evaluated as a product of precomputed exponentials:
//   tanh(a + b) = 1 - 2 / (e^{2a} e^{2b} + 1),  E_A = exp(2A), E_B = exp(2B)
// so each (i, j, h) costs a product, one reciprocal (rcp14 + a Newton step on AVX-512, a
// division elsewhere), a select between two forms and one FMA with v_h, accumulating
// s = -t/2 = 1/(p + 1) - 1/2 where p >= 1 and 1/2 - p / (p + 1) below (mirrored so that t near
// -1 is as accurate as near +1: AddPack::half_neg_tanh), instead of a full tanh. Error: the product carries a few ulp of relative error and
// d tanh / d ln(p) = (1 - t^2) / 2 <= 1/2, so |error| stays ~1e-7 for every input
// (NOTES.md step 2: measured max 1.5e-7 vs tanh in double on a dense grid). When some
// |A| or |B| exceeds 0.45 ln(max T) (~40 in float) e^{2x} would leave the range, and the
// call uses the direct form tanh(A_ih + B_jh) (Eigen's vectorised tanh) instead; so does a
// call with a query or key whose arguments are all small, at a tau that amplifies the fused
// form's absolute error past the core's (fused_tanh_accurate).
// Small units: near 0 that absolute error (~1.3 eps) is many times the core's, which is
// relative to |a + b|; a small unit beside a saturated one hid under the latter's estimate in
// the call's test (dQ 7.8 times the fuzz harness's bar; 6 of the 10 findings of a campaign).
// A unit whose |A_ih| and |B_jh| are all at most 1/2 therefore takes tanh(a + b) itself, as
// the core does (EA, EB hold A and B for it; XU marks it): Eigen's vectorised tanh, ~15
// operations per element instead of ~3, for such units only. (The addition formula
// (tanh a + tanh b) / (1 + tanh a tanh b), as cheap as the exp form, was tried first: its
// error is relative to |a| + |b|, not |a + b|, and at tau ~ 1e-4 it left db, dV and dL/dtau
// up to 4 times the bar where the direct tanh had passed: review.) Its 1 - t^2 keeps an
// absolute error of an ulp of 1, so a row's split takes t_r^2 - t^2 as (t_r - t)(t_r + t).
// Ordinary projections (some |A| or |B| past 1/2 in every unit) never take it. The call's
// choice (fused_tanh_accurate) still weighs every unit as the exp form: the small units' form
// only makes a call that was fused more accurate (additive_inputs.hpp says why).
// Backward with t = tanh, r = 2 / (p + 1) = 1 - t, 1 - t^2 = r (2 - r) = (p r) r (2 - r = p r),
// taken as (p r) r with p capped at max(T) / 4 (a product p past the range gave inf * 0 =
// NaN; capped, p r = 2 and (p r) r ~ 0): r (2 - r) cancels near t = -1 (dB 6e-6 relative
// off at t = -0.987, 1.3 times the rule's bar: fuzzer finding), while p r < 2 and r keep a
// few ulp of relative error everywhere. e^{2A} and e^{2B} all come from Eigen's vectorised exp
// (exp_packets): its scalar fallback for a remainder differs by an ulp, so tied keys were no
// longer tied once p r^2 carried that ulp (dQ 1.3e-5 where it is 0: review finding):
//   dA_ih = v_h sum_j dS_ij (1 - t^2),  dB_jh = v_h sum_i dS_ij (1 - t^2),
//   dv_h = sum_ij dS_ij t_ijh.
// Both forms sum a row's dA in one of two ways (grad_q_rows), whichever has the smaller
// rounding bound: sum_j dS_ij (1 - t^2) (exact where the tanh saturates: t = +-1, 1 - t^2 = 0)
// or (1 - t_r^2) R_i - sum_j dS_ij (t^2 - t_r^2) (fused: u_r R_i + sum_j dS_ij (u - u_r) with
// u = 1 - t^2 as (p r) r), with R_i = sum_j dS_ij from the backward
// (0 without a softcap: flash_backward.hpp, RowSums) and t_r the tanh at the row's key of
// largest |dS|, exact where the t of a row are near each other (all near 0, or tied keys).
// There sum_j dS_ij (1 - t^2) is nearly R_i, and summing float dS of size 1 / tau left dQ
// twice past the rule (inputs near 1e-8 at tau = 1e-4: fuzzer finding); the split alone, at
// saturated rows, gave dQ 6e-5 where it is 0 (review finding). The split only where the
// row's dS add up to R_i within their rounding (score::split_consistent, the
// core's rule). In a row whose plain sums cancel, its differences come from the keys' own
// (score/tanh_difference.hpp): t - t_r = tanh(B_j - B_r) (1 - t t_r) and u - u_r =
// -(t - t_r)(t + t_r), exact to a few ulp of themselves where differences of the rounded u or
// t keep an ulp of 1 (cpu/additive_rows.hpp). dv_h's row shares take the same rule with
// t_r R_i + sum_j dS_ij (t - t_r), in grad_q_rows (per row, not per key tile: tied keys' dS of
// 1e33 cancelled in a tile's float sum and took the value along).
// In float the backward's sums above run in double over the float dS (sums64), and their
// products too (AdditiveInputs::finish64, which says why; native/bench/NOTES.md, 2026-12-07).
#pragma once

#include <cmath>
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "qkscope/score/additive.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/cpu/additive_differences.hpp"
#include "qkscope/cpu/additive_f64.hpp"
#include "qkscope/cpu/additive_pack.hpp"
#include "qkscope/cpu/additive_rows.hpp"
#include "qkscope/cpu/scorers.hpp"

namespace qkscope::cpu::detail {

/// e^{2 X} element-wise, every element through Eigen's vectorised exp (a remainder through
/// one padded packet), so that equal inputs give equal outputs wherever they sit.
template <class T>
Mat<T> exp_packets(const Mat<T>& X) {
  using P = typename AddPack<T>::P;
  constexpr Eigen::Index S = AddPack<T>::size;
  Mat<T> out(X.rows(), X.cols());
  const Eigen::Index n = X.size();
  const P two = ei::pset1<P>(T(2));
  Eigen::Index i = 0;
  for (; i + S <= n; i += S) ei::pstoreu(out.data() + i, ei::pexp(ei::pmul(two, ei::ploadu<P>(X.data() + i))));
  if (i < n) {
    T buf[S] = {};
    std::copy(X.data() + i, X.data() + n, buf);
    ei::pstoreu(buf, ei::pexp(ei::pmul(two, ei::ploadu<P>(buf))));
    std::copy(buf, buf + (n - i), out.data() + i);
  }
  return out;
}

#if defined(EIGEN_VECTORIZE_AVX512)
// vdivps zmm is slow; a 14-bit reciprocal estimate r0 of y = p + 1 and one Newton step:
// q = r0 + r0 (1 - y r0), then the generic form's choice (q - 1/2 where p >= 1, 1/2 - p q
// below, one FMA each). p is capped so that an overflowed product (a + b > ~44, t = 1) cannot
// reach rcp14(inf) * inf = NaN.
template <>
inline Eigen::internal::Packet16f AddPack<float>::half_neg_tanh(const P& a, const P& e) {
  const __m512 one = _mm512_set1_ps(1.f), half = _mm512_set1_ps(0.5f);
  const __m512 p = _mm512_min_ps(_mm512_mul_ps(a, e), _mm512_set1_ps(1e30f));
  const __m512 y = _mm512_add_ps(p, one);
  const __m512 r0 = _mm512_rcp14_ps(y);
  const __m512 q = _mm512_fmadd_ps(r0, _mm512_fnmadd_ps(y, r0, one), r0);
  const __mmask16 below = _mm512_cmp_ps_mask(p, one, _CMP_LT_OQ);
  return _mm512_mask_blend_ps(below, _mm512_sub_ps(q, half), _mm512_fnmadd_ps(p, q, half));
}
#endif

/// S[r][c] = sum_h v_h tanh(A_rh + B_ch) = -2 sum_h v_h s_rch (s = half_neg_tanh) for NR
/// rows x NC packets of keys, from EA (rows, lda) and EBt (d_h rows of ldb keys).
/// Units h with xu[h] != 0 (small units) hold A and B themselves and take tanh(a + b).
template <int NR, int NC, class T>
void additive_block(const T* ea, Eigen::Index lda, const T* ebt, Eigen::Index ldb, const T* v, const T* xu,
                    Eigen::Index dh, T* s, Eigen::Index lds) {
  using AP = AddPack<T>;
  using P = typename AP::P;
  P acc[NR][NC];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = ei::pset1<P>(T(0));
  for (Eigen::Index h = 0; h < dh; ++h) {
    P e[NC];
    for (int c = 0; c < NC; ++c) e[c] = ei::ploadu<P>(ebt + h * ldb + c * AP::size);
    const P vh = ei::pset1<P>(v[h]);
    if (xu && xu[h] != 0)
      for (int r = 0; r < NR; ++r) {
        const P a = ei::pset1<P>(ea[r * lda + h]);
        for (int c = 0; c < NC; ++c) acc[r][c] = ei::pmadd(vh, AP::half_neg_tanh_direct(a, e[c]), acc[r][c]);
      }
    else
      for (int r = 0; r < NR; ++r) {
        const P a = ei::pset1<P>(ea[r * lda + h]);
        for (int c = 0; c < NC; ++c) acc[r][c] = ei::pmadd(vh, AP::half_neg_tanh(a, e[c]), acc[r][c]);
      }
  }
  const P m2 = ei::pset1<P>(T(-2));
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < NC; ++c) ei::pstoreu(s + r * lds + c * AP::size, ei::pmul(m2, acc[r][c]));
}

template <class T>
struct AdditiveScorer {
  const Mat<T>* Ap;   // (L_q, d_h), bias folded in
  const Mat<T>* Bp;   // (L_k, d_h)
  const Vec<T>* vp;   // (d_h)
  const Mat<T>* EA;   // exp(2A) (L_q, d_h), or null: direct tanh
  const Mat<T>* EB;   // exp(2B) (L_k, d_h)
  const Mat<T>* EBt;  // exp(2B)^T (d_h, L_k)
  const Mat<T>* BT;   // direct tanh: B^T (d_h, L_k), each row contiguous in the keys
  const Vec<T>* XU;   // fused: 1 where unit h is small and EA, EB hold A, B themselves; or null
  const Mat<T>* K = nullptr;  // the keys and W_k that B came from (raw_differences)
  const Mat<T>* W_k = nullptr;
  /// Above score::Additive::refine_gain: every tile in double (cpu/additive_f64.hpp), or null.
  const AdditiveF64* f64 = nullptr;
  /// T = float, backward: the same double tiles for every call, read by dL/dtau
  /// (double_scores; set by AdditiveInputs::prepare).
  const AdditiveF64* scores64 = nullptr;
  /// T = float: the backward's sums in double (the header; set by AdditiveInputs::prepare for
  /// the backward), and the relative rounding of the dS they are handed (float's).
  const AdditiveScorer<double>* sums64 = nullptr;
  double ds_eps = double(std::numeric_limits<T>::epsilon());
  /// With sums64: dA (L_q, d_h), dB (L_k, d_h) and each query tile's dv share (its first row)
  /// in double, for finish64; each tile's rows have one writer.
  Mat<double>* dA64 = nullptr;
  Mat<double>* dB64 = nullptr;
  Mat<double>* dv64 = nullptr;
  Eigen::Index q_width() const { return Ap->cols(); }
  Eigen::Index k_width() const { return Bp->cols(); }
  Eigen::Index extra_size() const { return vp->size(); }  // dv
  /// The backward hands whole rows (the header's comment on the direct form).
  static constexpr bool grad_q_by_rows = true;
  /// dA's rows, and dv's: dv_h = sum_i (sum_j dS_ij t_ijh) is taken per row, the plain sum or
  /// t_rh R_i + sum_j dS_ij (t_ijh - t_rh), whichever has the smaller bound (the core's rule:
  /// score/additive_rows.hpp; the sums: cpu/additive_rows.hpp). Summed per key tile in float,
  /// tied keys' dS of 1e33 cancelled and took the value along (fuzzer findings).
  void grad_q_rows(Eigen::Index i0, Eigen::Index bq, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                   const Mat<T>& dS, const double* R, Mat<T>& dAt, Vec<T>& dv) const {
    // A query tile that visits no key block adds nothing; the sums below would read the
    // reference key's tanh before any was written (valgrind: an uninitialised E_A, 2026-12-06).
    if (blocks.empty()) return;
    if constexpr (std::is_same_v<T, double>) {
      own_grad_q_rows(i0, bq, blocks, block_k, dS, R, dAt, dv);
    } else {  // in double (the header); T's own sums are not compiled for T
      // Per-thread scratch: allocated per tile, the fresh pages cost ~20 % of the backward.
      thread_local Mat<double> dS64, dA64;
      thread_local Vec<double> dv64;
      dS64 = dS.template cast<double>();
      dA64.setZero(bq, dAt.cols());
      dv64.setZero(dv.size());
      sums64->grad_q_rows(i0, bq, blocks, block_k, dS64, R, dA64, dv64);
      dAt += dA64.template cast<T>();
      dv += dv64.template cast<T>();
      if (this->dA64) this->dA64->middleRows(i0, bq) += dA64;
      if (this->dv64) this->dv64->row(i0) += dv64.transpose();
    }
  }
  void own_grad_q_rows(Eigen::Index i0, Eigen::Index bq, const std::vector<Eigen::Index>& blocks,
                       Eigen::Index block_k, const Mat<T>& dS, const double* R, Mat<T>& dAt, Vec<T>& dv) const {
    const Eigen::Index L_k = dS.cols();
    const Vec<T>& v = *vp;
    Row tv(EA ? 0 : L_k), x(EA ? 0 : std::min(block_k, L_k));  // the direct form's scratch
    score::AdditiveRowSums<T> fs;
    const bool mixed = ds_eps > double(std::numeric_limits<T>::epsilon());  // float dS, double sums
    fs.mixed_k = mixed ? double(std::numeric_limits<T>::epsilon()) / ds_eps : 0.0;
    for (Eigen::Index r = 0; r < bq; ++r) {
      // The split only where the row's dS add up to R within their rounding (the core's rule);
      // its reference: the key of largest |dS|.
      T row_sum = 0, row_abs = 0;
      Eigen::Index top = blocks[0];
      for (const Eigen::Index j0 : blocks)
        for (Eigen::Index j = j0, e = std::min(j0 + block_k, L_k); j < e; ++j) {
          row_sum += dS(r, j);
          row_abs += std::abs(dS(r, j));
          if (std::abs(dS(r, j)) > std::abs(dS(r, top))) top = j;
        }
      const bool exact_dS = score::split_consistent(row_sum, row_abs, R[r], L_k, ds_eps);
      auto sums = [&](const Row* exact) {
        if (EA) fused_row_sums(*this, i0 + r, r, top, blocks, block_k, dS, row_abs, fs, exact, mixed);
        else direct_row_sums(*this, i0 + r, r, top, blocks, block_k, dS, row_abs, tv, x, fs, exact, mixed);
      };
      sums(nullptr);
      // Mixed: the first pass's dv split from differences of the rounded t, which carry
      // eps_T (|t| + |t_r|) each and the t themselves ~1.3 eps_T (the exp form): T's rounding,
      // apart from the dS's part (fused_row_sums).
      for (Eigen::Index h = 0; mixed && h < v.size(); ++h)
        fs.v_split_round(h) = fs.v_plain_bound(h) + (std::abs(fs.t_r(h)) + T(2)) * row_abs;
      const Row exact = fs.exact_units(exact_dS, R[r], EA != nullptr, ds_eps);
      if (exact.any()) {
        for (Eigen::Index h = 0; h < v.size(); ++h)
          if (exact(h) != 0) fs.reset_splits(h);
        sums(&exact);
      }
      for (Eigen::Index h = 0; h < v.size(); ++h) {
        dAt(r, h) += v(h) * fs.dA(h, exact_dS, R[r]);
        dv(h) += fs.dv(h, exact_dS, R[r]);
      }
    }
  }

  using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
  /// What the fused form adds to a raw score's error beyond the core's own (its tanh of a + b):
  /// ~1.3 eps per exp-form unit (the header), with the sum's rounding, 2 eps sum_h |v_h| over
  /// those units; 0 for the direct form, which rounds as the core does
  /// (cpu/temperature_grad.hpp).
  double raw_error_bound() const {
    if (!EA) return 0;
    double s = 0;
    for (Eigen::Index h = 0; h < vp->size(); ++h)
      if (!XU || (*XU)(h) == 0) s += std::abs(double((*vp)(h)));
    return 2 * double(std::numeric_limits<T>::epsilon()) * s;
  }
  /// S_ij - S_ir (out[j], in double) for the keys of `blocks`, each unit's difference from the
  /// keys' own, and err[j] its error bound (cpu/additive_differences.hpp): dL/dtau's exact pass
  /// (cpu/temperature_grad.hpp) where T = double.
  void raw_differences(Eigen::Index i, Eigen::Index r, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                       double* out, double* err) const {
    additive_raw_differences(*Ap, *Bp, *vp, *K, *W_k, i, r, blocks, block_k, out, err);
  }
  /// T = float: dL/dtau is formed from logits in double (cpu/temperature_grad.hpp,
  /// double_logit_row) from the raw scores S_ij of query i over the keys of `blocks` in double
  /// (out[j]; cpu/additive_f64.hpp's tiles before their rounding to T). The backward's
  /// AdditiveInputs::prepare sets scores64 for every float call; without it this throws
  /// std::logic_error (a scorer not built by prepare).
  static constexpr bool double_logits = !std::is_same_v<T, double>;
  void double_scores(Eigen::Index i, const std::vector<Eigen::Index>& blocks, Eigen::Index block_k,
                     double* out) const {
    if (!scores64) throw std::logic_error("qkscope: the additive backward's double tiles were not prepared");
    for (const Eigen::Index j0 : blocks) {
      Eigen::Map<Eigen::Matrix<double, 1, Eigen::Dynamic>> row(out + j0, std::min(block_k, Bp->rows() - j0));
      scores64->scores<double>(i, 1, j0, row.size(), row);
    }
  }
  /// The same double tiles as one (bq, bk) block: the softcap's slopes in the backward's key
  /// pass (cpu/double_slopes.hpp), equal to double_scores' values pair by pair.
  void double_tile(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, Mat<double>& out) const {
    if (!scores64) throw std::logic_error("qkscope: the additive backward's double tiles were not prepared");
    out.resize(bq, bk);
    scores64->scores<double>(i0, bq, j0, bk, out);
  }
  /// Select mask of the units h, h + 1, ... of one packet that are small units (XU).
  typename AddPack<T>::P sum_mask(Eigen::Index h) const {
    using P = typename AddPack<T>::P;
    return XU ? ei::pcmp_lt(ei::pset1<P>(T(0)), ei::ploadu<P>(XU->data() + h)) : ei::pset1<P>(T(0));
  }
  /// tanh(A_ih + B_jh) for the keys j of [j0, j0 + bk), as one vectorised expression.
  auto direct_tanh(Eigen::Index i, Eigen::Index h, Eigen::Index j0, Eigen::Index bk) const {
    return (BT->row(h).segment(j0, bk).array() + (*Ap)(i, h)).tanh();
  }

  void scores(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk, TileRef<T> S) const {
    if (f64) return f64->scores<T>(i0, bq, j0, bk, S);
    const Vec<T>& v = *vp;
    if (!EA) {  // direct tanh, vectorised over the block's keys (B^T rows are contiguous)
      Row acc(bk);
      for (Eigen::Index r = 0; r < bq; ++r) {
        acc.setZero();
        for (Eigen::Index h = 0; h < v.size(); ++h) acc += v(h) * direct_tanh(i0 + r, h, j0, bk);
        S.row(r) = acc.matrix();
      }
      return;
    }
    using AP = AddPack<T>;
    constexpr int W = AP::size * AP::cols;
    const Eigen::Index dh = v.size(), lda = EA->cols(), ldb = EBt->cols();
    const T* ebt = EBt->data() + j0;
    const T* xu = XU ? XU->data() : nullptr;
    Eigen::Index r = 0;
    auto row_group = [&]<int NR>(Eigen::Index r0) {
      const T* ea = EA->data() + (i0 + r0) * lda;
      T* s = S.data() + r0 * S.outerStride();
      Eigen::Index c = 0;
      for (; c + W <= bk; c += W)
        additive_block<NR, AP::cols>(ea, lda, ebt + c, ldb, v.data(), xu, dh, s + c, S.outerStride());
      for (; c + AP::size <= bk; c += AP::size)
        additive_block<NR, 1>(ea, lda, ebt + c, ldb, v.data(), xu, dh, s + c, S.outerStride());
      for (; c < bk; ++c)
        for (int k = 0; k < NR; ++k) {
          T acc = 0;
          for (Eigen::Index h = 0; h < dh; ++h) {
            const T x = ea[k * lda + h], y = ebt[h * ldb + c];
            acc += v(h) * (xu && xu[h] != 0 ? AP::tanh_scalar(x + y) : T(-2) * AP::half_neg_tanh_scalar(x, y));
          }
          s[k * S.outerStride() + c] = acc;
        }
    };
    for (; r + AP::rows <= bq; r += AP::rows) row_group.template operator()<AP::rows>(r);
    for (; r < bq; ++r) row_group.template operator()<1>(r);
  }

  void grad_k(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk,
              const ConstTileRef<T>& dS, Mat<T>& dBt, Vec<T>& dv) const {
    if constexpr (std::is_same_v<T, double>) {
      own_grad_k(i0, bq, j0, bk, dS, dBt, dv);
    } else {  // in double (the header)
      thread_local Mat<double> dS64, dB64;  // as grad_q_rows'
      thread_local Vec<double> none;
      dS64 = dS.template cast<double>();
      dB64.setZero(bk, dBt.cols());
      sums64->grad_k(i0, bq, j0, bk, dS64, dB64, none);
      dBt.topRows(bk) += dB64.template cast<T>();
      if (this->dB64) this->dB64->middleRows(j0, bk) += dB64;
    }
  }
  void own_grad_k(Eigen::Index i0, Eigen::Index bq, Eigen::Index j0, Eigen::Index bk,
                  const ConstTileRef<T>& dS, Mat<T>& dBt, Vec<T>&) const {
    const Vec<T>& v = *vp;  // dv: by rows (grad_q_rows)
    if (!EA) {  // dB_jh += v_h sum_i dS_ij (1 - t^2); G^T holds the sums
      Row t(bk);
      Mat<T> G = Mat<T>::Zero(v.size(), bk);
      for (Eigen::Index r = 0; r < bq; ++r)
        for (Eigen::Index h = 0; h < v.size(); ++h) {
          t = direct_tanh(i0 + r, h, j0, bk);
          G.row(h).array() += dS.row(r).array() * (T(1) - t.square());
        }
      dBt.noalias() += (v.asDiagonal() * G).transpose();
      return;
    }
    // dB_jh += v_h sum_i dS_ij (1 - t^2) (AddPack::sech2): vectorised over h.
    using AP = AddPack<T>;
    using P = typename AP::P;
    const Eigen::Index dh = v.size();
    for (Eigen::Index c = 0; c < bk; ++c) {
      const T* eb = EB->data() + (j0 + c) * dh;
      T* out = dBt.data() + c * dBt.outerStride();
      Eigen::Index h = 0;
      for (; h + AP::size <= dh; h += AP::size) {
        const P e = ei::ploadu<P>(eb + h);
        const P mask = sum_mask(h);
        const P* m = XU ? &mask : nullptr;
        P g = ei::pset1<P>(T(0)), u, t;
        for (Eigen::Index r = 0; r < bq; ++r) {
          const P ds = ei::pset1<P>(dS(r, c));
          AP::sech2_tanh(ei::ploadu<P>(EA->data() + (i0 + r) * dh + h), e, m, u, t);
          g = ei::pmadd(ds, u, g);
        }
        ei::pstoreu(out + h, ei::pmadd(ei::ploadu<P>(v.data() + h), g, ei::ploadu<P>(out + h)));
      }
      for (; h < dh; ++h) {
        const bool sum = XU && (*XU)(h) != 0;
        T g = 0, u, t;
        for (Eigen::Index r = 0; r < bq; ++r) {
          AP::sech2_tanh_scalar((*EA)(i0 + r, h), eb[h], sum, u, t);
          g += dS(r, c) * u;
        }
        out[h] += v(h) * g;
      }
    }
  }
};

}  // namespace qkscope::cpu::detail
