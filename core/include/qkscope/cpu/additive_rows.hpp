// qkscope/cpu/additive_rows.hpp — one query row's sums for the additive scorer's dA and dv in
// the tiled backward (cpu/additive.hpp, grad_q_rows): the sums, the rule that picks among
// them and the two passes are the core's (score/additive_rows.hpp). The fused form's first
// pass keeps the six sums of the kernel before the second pass existed, in packets over h
// (with four more, spilled around a small unit's out-of-line tanh, the backward was 4 times
// slower), and E_A follows from them; its second pass, for the few units that take it, runs
// one unit at a time (scalar, the packets' operations and bits: less wasm code).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "qkscope/cpu/additive_pack.hpp"
#include "qkscope/score/additive_rows.hpp"
#include "qkscope/score/tanh_difference.hpp"
#include "qkscope/types.hpp"

namespace qkscope::cpu::detail {

template <class T>
struct AdditiveScorer;

/// The fused form's sums of row i of A (row r of dS, reference key top, row_abs = sum_j |dS|)
/// over the keys of the row's blocks, vectorised over h. exact null: the first pass (f is
/// resized and filled; dv's split left unformed); else the second, the splits again from exact
/// differences for the units h with (*exact)(h) != 0 (reset by the caller). Tied keys give
/// u = u_r and t = t_r exactly (the same operations on the same inputs).
/// mixed: the sums run in double over float dS (cpu/additive.hpp's header). The bounds then
/// hold the dS's part only (weighed at float's eps by exact_units), and T's own rounding goes
/// to the *_round rows and E_A (weighed at T's eps and double's 34 bits): the exp form's
/// absolute error of t in dv's plain sum (v_plain_round). And the first pass forms dv's split
/// from differences of the rounded t too: the split's exact R takes out the dS's own rounding,
/// which the plain sum keeps (dv 15 times the bar with dS of 1e38 over t near -1, a study
/// case); where those differences lose their digits (t 1e-12 apart) the round rule sends the
/// unit to the exact pass, as the float rules sent the float core (review).
template <class T>
void fused_row_sums(const AdditiveScorer<T>& s, Eigen::Index i, Eigen::Index r, Eigen::Index top,
                    const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, const Mat<T>& dS, T row_abs,
                    score::AdditiveRowSums<T>& f, const typename score::AdditiveRowSums<T>::Row* exact,
                    bool mixed = false) {
  const bool first_split = mixed;
  using AP = AddPack<T>;
  using P = typename AP::P;
  const Eigen::Index dh = s.vp->size(), L_k = dS.cols();
  if (!exact) {
    f.resize(dh);
    f.zero();
    if (first_split) f.v_split_bound.setZero();
  }
  const T* ea = s.EA->data() + i * dh;
  const T* b = s.Bp->data();  // B_jh: the keys' own differences B_jh - B_rh
  const T* eb = s.EB->data();
  const P zero = ei::pset1<P>(T(0));
  Eigen::Index h = 0;
  // The second pass is rare (a few units in a few rows): one unit at a time, in the scalar
  // loop below (its operations give the packets' bits), which keeps the wasm module smaller.
  for (; !exact && h + AP::size <= dh; h += AP::size) {
    const P a = ei::ploadu<P>(ea + h);
    const P mask = s.sum_mask(h);  // small units: t from tanh(a + b) itself
    const P* m = s.XU ? &mask : nullptr;
    P ut, tt, u, t;
    AP::sech2_tanh(a, ei::ploadu<P>(eb + top * dh + h), m, ut, tt);
    P g = zero, gb = zero, gs = zero, gsb = zero, vg = zero, vgb = zero, vs = zero, vsb = zero;
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c) {
        if (dS(r, c) == T(0)) continue;  // adds nothing (masked pairs)
        const P ds = ei::pset1<P>(dS(r, c)), ads = ei::pset1<P>(std::abs(dS(r, c)));
        AP::sech2_tanh(a, ei::ploadu<P>(eb + c * dh + h), m, u, t);
        // u - u_r; on a small unit's lanes (t_r - t)(t_r + t), exact to a few ulp of itself
        // where u ~ 1 carries an ulp of 1 (db 7.7e-5 relative off: the fuzzer's case).
        P d = ei::psub(u, ut);
        if (m) d = ei::pselect(*m, ei::pmul(ei::psub(tt, t), ei::padd(tt, t)), d);
        g = ei::pmadd(ds, u, g);
        gb = ei::pmadd(ads, u, gb);
        gs = ei::pmadd(ds, d, gs);
        gsb = ei::pmadd(ads, ei::pabs(d), gsb);
        vg = ei::pmadd(ds, t, vg);
        vgb = ei::pmadd(ads, ei::pabs(t), vgb);
        if (first_split) {
          const P dt = ei::psub(t, tt);
          vs = ei::pmadd(ds, dt, vs);
          vsb = ei::pmadd(ads, ei::pabs(dt), vsb);
        }
      }
    // E_A: u - u_r is rounded against u + u_r (u keeps a few ulp of itself); a small unit's
    // (t_r - t)(t_r + t) against itself.
    // E_core: the core's estimate, sum |dS| (t^2 + t_r^2) = row_abs - sum |dS| u + t_r^2 row_abs.
    const P ra = ei::pset1<P>(row_abs);
    P e_a = ei::pmadd(ut, ra, gb), e_core = ei::pmadd(ei::pmul(tt, tt), ra, ei::psub(ra, gb));
    // dv's plain bound: the exp form's t keep an absolute error of ~1.3 eps whatever |t| (a key
    // whose x is 2e-19 got t = 0), so each term counts 2 |dS| beside |dS t|; without it a row
    // of t = 0 had a plain bound of 0 and beat the exact split (dv 1.6e-20 where 6.3e15: fuzzer).
    // Mixed: that term is T's rounding (v_plain_round), the bound the dS's part alone.
    P vr = ei::pmul(ei::pset1<P>(T(2)), ra), vb = mixed ? vgb : ei::pmadd(ei::pset1<P>(T(2)), ra, vgb);
    if (m) {
      vr = ei::pselect(*m, zero, vr);
      e_a = ei::pselect(*m, gsb, e_a);
      e_core = ei::pselect(*m, gsb, e_core);
      vb = ei::pselect(*m, vgb, vb);
    }
    for (auto [row, x] : {std::pair{&f.split, gs}, {&f.split_bound, gsb}, {&f.E_A, e_a}, {&f.E_core, e_core},
                          {&f.plain, g},
                          {&f.plain_bound, gb}, {&f.v_plain, vg}, {&f.v_plain_bound, vb}, {&f.u_r, ut}, {&f.t_r, tt}})
      ei::pstoreu(row->data() + h, x);
    if (first_split) {
      ei::pstoreu(f.v_split.data() + h, vs);
      ei::pstoreu(f.v_split_bound.data() + h, vsb);
      ei::pstoreu(f.v_plain_round.data() + h, vr);
    }
  }
  for (; h < dh; ++h) {  // the remainder (every unit on the second pass), one unit at a time
    if (exact && (*exact)(h) == 0) continue;
    const bool small = s.XU && (*s.XU)(h) != 0;
    T ut, tt, ct, u, t, cj;
    AP::sech2_tanh_scalar(ea[h], eb[top * dh + h], small, ut, tt, &ct);
    T g = 0, gb = 0, gs = 0, gsb = 0, vg = 0, vgb = 0, vs = 0, vsb = 0;
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c) {
        const T ds = dS(r, c), ads = std::abs(ds);
        if (ds == T(0)) continue;
        AP::sech2_tanh_scalar(ea[h], eb[c * dh + h], small, u, t, &cj);
        T d = small ? (tt - t) * (tt + t) : u - ut, dt = t;  // first pass: t for dv's plain sum
        if (exact) {
          const T bc = b[c * dh + h], bt = b[top * dh + h];
          dt = score::tanh_difference(AP::tanh_scalar(bc - bt), t, tt, cj, ct);
          // t + t_r as tanh x + tanh y = tanh(x + y) (1 + tanh x tanh y), x + y = 2A + B_j + B_r
          // (0 for mirrored keys, whose dQ terms cancel exactly: the fuzzer's -2.9e29), summed
          // in double and rounded once: in T it rounded at the scale of 2A, not of x + y (A =
          // 20.76 beside B = -20.71 and -20.82: 9 % off, review). Signs alike, where the sum is
          // small, too: the exp form's t keep an absolute error of ~1.3 eps, all of t + t_r's
          // digits at t ~ 1.8e-4 (dQ 20 times the bar: fuzzer, nineteenth session); past 1/2 the
          // plain sum's error is the smaller (a sweep of 20,000 rows).
          const double xy = 2.0 * double((*s.Ap)(i, h)) + (double(bc) + double(bt));
          const T sum = t * tt < T(0) || std::abs(t + tt) < T(0.5)
                            ? score::tanh_difference(AP::tanh_scalar(T(xy)), t, -tt, cj, ct)
                            : t + tt;
          d = -(dt * sum);
        }
        g += ds * u;
        gb += ads * u;
        gs += ds * d;
        gsb += ads * std::abs(d);
        vg += ds * dt;
        vgb += ads * std::abs(dt);
        if (first_split && !exact) {
          vs += ds * (t - tt);
          vsb += ads * std::abs(t - tt);
        }
      }
    f.split(h) = gs;
    f.split_bound(h) = gsb;
    if (exact) {
      f.v_split(h) = vg;
      f.v_split_bound(h) = vgb;
      continue;
    }
    f.E_A(h) = small ? gsb : gb + ut * row_abs;
    f.E_core(h) = small ? gsb : row_abs - gb + tt * tt * row_abs;
    f.plain(h) = g;
    f.plain_bound(h) = gb;
    f.v_plain(h) = vg;
    const T vr = small ? T(0) : T(2) * row_abs;  // as the packets'
    f.v_plain_bound(h) = mixed ? vgb : vgb + vr;
    if (first_split) {
      f.v_split(h) = vs;
      f.v_split_bound(h) = vsb;
      f.v_plain_round(h) = vr;
    }
    f.u_r(h) = ut;
    f.t_r(h) = tt;
    f.c_r(h) = ct;
  }
}

/// with_sign += sum_k ds_k x_k, bound += sum_k |ds_k| |x_k| (n terms): one copy of the
/// reductions for the direct form's sums (wasm size).
template <class T>
EIGEN_DONT_INLINE void signed_and_bound(const T* ds, const T* x, Eigen::Index n, T& with_sign, T& bound) {
  using A = Eigen::Array<T, 1, Eigen::Dynamic>;
  const Eigen::Map<const A> d(ds, n), y(x, n);
  with_sign += (d * y).sum();
  bound += (d.abs() * y.abs()).sum();
}

/// The direct form's sums (tanh(A_ih + B_jh) itself), as the core's (score/additive.hpp):
/// the same two passes; the first vectorised over the keys of each block (signed_and_bound),
/// the second scalar.
/// tv, x: scratch (L_k, block_k); row_abs = sum_j |dS|.
template <class T>
void direct_row_sums(const AdditiveScorer<T>& s, Eigen::Index i, Eigen::Index r, Eigen::Index top,
                     const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, const Mat<T>& dS, T row_abs,
                     typename score::AdditiveRowSums<T>::Row& tv, typename score::AdditiveRowSums<T>::Row& x,
                     score::AdditiveRowSums<T>& f, const typename score::AdditiveRowSums<T>::Row* exact,
                     bool mixed = false) {
  const Eigen::Index dh = s.vp->size(), L_k = dS.cols();
  const bool first_split = mixed;  // as fused_row_sums (v_plain_round: 0, t rounds relative to itself)
  if (!exact) {
    f.resize(dh);
    f.zero();
    if (first_split) f.v_split_bound.setZero();
  }
  for (Eigen::Index h = 0; h < dh; ++h) {
    if (exact && (*exact)(h) == 0) continue;
    for (const Eigen::Index j0 : blocks) {
      const Eigen::Index bk = std::min(block_k, L_k - j0);
      tv.segment(j0, bk) = s.direct_tanh(i, h, j0, bk);
    }
    const T tr = tv(top), a = (*s.Ap)(i, h), br = (*s.BT)(h, top);
    if (exact) {
      for (const Eigen::Index j0 : blocks)
        for (Eigen::Index j = j0, e = std::min(j0 + block_k, L_k); j < e; ++j) {
          const T ds = dS(r, j), ads = std::abs(ds), t = tv(j);
          if (ds == T(0)) continue;
          const T bj = (*s.BT)(h, j);
          const T dt = score::key_tanh_difference(bj, br, a + bj, t, tr, f.c_r(h)), w = -(dt * (t + tr));
          f.split(h) += ds * w;
          f.split_bound(h) += ads * std::abs(w);
          f.v_split(h) += ds * dt;
          f.v_split_bound(h) += ads * std::abs(dt);
        }
      continue;
    }
    f.c_r(h) = score::tanh_complement(a + br, tr);
    f.u_r(h) = f.c_r(h) * (T(2) - f.c_r(h));  // 1 - t_r^2 without cancellation
    f.t_r(h) = tr;
    for (const Eigen::Index j0 : blocks) {
      const Eigen::Index bk = std::min(block_k, L_k - j0);
      const T* ds = &dS(r, j0);
      x.head(bk) = T(1) - tv.segment(j0, bk).square();
      signed_and_bound(ds, x.data(), bk, f.plain(h), f.plain_bound(h));
      x.head(bk) = tr * tr - tv.segment(j0, bk).square();  // u - u_r as the core
      signed_and_bound(ds, x.data(), bk, f.split(h), f.split_bound(h));
      signed_and_bound(ds, tv.data() + j0, bk, f.v_plain(h), f.v_plain_bound(h));
      if (first_split) {
        x.head(bk) = tv.segment(j0, bk) - tr;
        signed_and_bound(ds, x.data(), bk, f.v_split(h), f.v_split_bound(h));
      }
    }
    // E_A = sum |dS| (t^2 + t_r^2): u - u_r is rounded against the squares.
    f.E_A(h) = f.E_core(h) = row_abs - f.plain_bound(h) + tr * tr * row_abs;
  }
}

}  // namespace qkscope::cpu::detail
