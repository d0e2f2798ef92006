// qkscope/cpu/additive_row_sums.hpp — one query row's sums for the fused additive form's
// backward (cpu/additive.hpp, grad_q_rows): with p = e^{2a} e^{2b} (capped), r = 2 / (p + 1),
// u = 1 - t^2 = (p r) r and t = 1 - r, over the keys of the row's blocks and vectorised over h:
//   sum_j dS_j u, sum_j dS_j (u - u_r) and their bounds (dA), the same with t (dv),
// u_r and t_r taken at the reference key, so that tied keys give u - u_r = t - t_r = 0 exactly
// (the same operations on the same inputs). The caller picks the plain sum or u_r R + split
// (score::Additive::pick_split).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "qkscope/cpu/additive_pack.hpp"
#include "qkscope/types.hpp"

namespace qkscope::cpu::detail {

/// One row's sums of the fused form per h, u = 1 - t^2 = (p r) r (AddPack::sech2) and u_r
/// its value at the reference key: plain = sum_j dS_j u, split = sum_j dS_j (u - u_r), and
/// their bounds with |dS| and |u - u_r|; the same for t = 1 - r (dv).
template <class T>
struct FusedRowSums {
  using Row = Eigen::Array<T, 1, Eigen::Dynamic>;
  Row plain, plain_bound, split, split_bound, u_r;
  Row tplain, tplain_bound, tsplit, tsplit_bound, t_r;  // the same for t (dv)
};
/// The sums over the keys of a row's blocks (row i of A, row r of dS, reference key top),
/// vectorised over h. Tied keys give u = u_r exactly (the same operations on the same inputs).
template <class T>
void fused_row_sums(const Mat<T>& EA, const Mat<T>& EB, Eigen::Index i, Eigen::Index r, Eigen::Index top,
                    const std::vector<Eigen::Index>& blocks, Eigen::Index block_k, const Mat<T>& dS,
                    FusedRowSums<T>& f) {
  using AP = AddPack<T>;
  using P = typename AP::P;
  const Eigen::Index dh = EA.cols(), L_k = dS.cols();
  using Row = typename FusedRowSums<T>::Row;
  for (Row* x : {&f.plain, &f.plain_bound, &f.split, &f.split_bound, &f.u_r, &f.tplain, &f.tplain_bound, &f.tsplit,
                 &f.tsplit_bound, &f.t_r})
    x->resize(dh);
  const P one = ei::pset1<P>(T(1));
  const T* ea = EA.data() + i * dh;
  Eigen::Index h = 0;
  for (; h + AP::size <= dh; h += AP::size) {
    const P a = ei::ploadu<P>(ea + h);
    const P pt = AP::capped(ei::pmul(a, ei::ploadu<P>(EB.data() + top * dh + h))), rt = AP::r_of(pt);
    const P ut = AP::sech2(pt, rt), tt = ei::psub(one, rt);
    P g = ei::pset1<P>(T(0)), gb = g, gs = g, gsb = g, tg = g, tgb = g, tgs = g, tgsb = g;
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c) {
        const P p = AP::capped(ei::pmul(a, ei::ploadu<P>(EB.data() + c * dh + h))), rr = AP::r_of(p);
        const P u = AP::sech2(p, rr), d = ei::psub(u, ut), t = ei::psub(one, rr), dt = ei::psub(t, tt);
        const P ds = ei::pset1<P>(dS(r, c)), ads = ei::pset1<P>(std::abs(dS(r, c)));
        g = ei::pmadd(ds, u, g);
        gb = ei::pmadd(ads, u, gb);
        gs = ei::pmadd(ds, d, gs);
        gsb = ei::pmadd(ads, ei::pabs(d), gsb);
        tg = ei::pmadd(ds, t, tg);
        tgb = ei::pmadd(ads, ei::pabs(t), tgb);
        tgs = ei::pmadd(ds, dt, tgs);
        tgsb = ei::pmadd(ads, ei::pabs(dt), tgsb);
      }
    ei::pstoreu(f.plain.data() + h, g);
    ei::pstoreu(f.plain_bound.data() + h, gb);
    ei::pstoreu(f.split.data() + h, gs);
    ei::pstoreu(f.split_bound.data() + h, gsb);
    ei::pstoreu(f.u_r.data() + h, ut);
    ei::pstoreu(f.tplain.data() + h, tg);
    ei::pstoreu(f.tplain_bound.data() + h, tgb);
    ei::pstoreu(f.tsplit.data() + h, tgs);
    ei::pstoreu(f.tsplit_bound.data() + h, tgsb);
    ei::pstoreu(f.t_r.data() + h, tt);
  }
  for (; h < dh; ++h) {
    const T pt = std::min(ea[h] * EB(top, h), std::numeric_limits<T>::max() / 4);
    const T ut = AddPack<T>::sech2_scalar(pt), tt = T(1) - T(2) / (pt + T(1));
    T g = 0, gb = 0, gs = 0, gsb = 0, tg = 0, tgb = 0, tgs = 0, tgsb = 0;
    for (const Eigen::Index j0 : blocks)
      for (Eigen::Index c = j0, e = std::min(j0 + block_k, L_k); c < e; ++c) {
        const T p = std::min(ea[h] * EB(c, h), std::numeric_limits<T>::max() / 4);
        const T u = AddPack<T>::sech2_scalar(p), d = u - ut, t = T(1) - T(2) / (p + T(1)), dt = t - tt, ds = dS(r, c);
        g += ds * u;
        gb += std::abs(ds) * u;
        gs += ds * d;
        gsb += std::abs(ds) * std::abs(d);
        tg += ds * t;
        tgb += std::abs(ds) * std::abs(t);
        tgs += ds * dt;
        tgsb += std::abs(ds) * std::abs(dt);
      }
    f.plain(h) = g;
    f.plain_bound(h) = gb;
    f.split(h) = gs;
    f.split_bound(h) = gsb;
    f.u_r(h) = ut;
    f.tplain(h) = tg;
    f.tplain_bound(h) = tgb;
    f.tsplit(h) = tgs;
    f.tsplit_bound(h) = tgsb;
    f.t_r(h) = tt;
  }
}

}  // namespace qkscope::cpu::detail
