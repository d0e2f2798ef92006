// tests/core/pipeline/emulate.hpp — the CUDA kernels' loop structure in plain C++, built only
// from the pipeline functors (qkscope/pipeline/): one "thread block" per (head, query block), key
// blocks from BlockClassifier::key_blocks, empty blocks skipped, per-element logits from
// pipeline::Logits, one pipeline::OnlineSoftmax per row; backward in the two passes of
// native/cuda/kernels/v3_backward.cuh (key blocks own dK, dV; query blocks own dQ).
// Inputs are raw arrays (row-major), as on the device; blocks are padded like the kernels'
// shared-memory tiles (rows past L_q / keys past L_k read as zeros and are masked).
#pragma once

#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "qkscope/pipeline/pipeline.hpp"

namespace qktile {

using namespace qkscope::pipeline;

/// raw(i, j) of one head: the scoring function on (query row i, key row j).
template <class T>
using RawFn = std::function<T(int i, int j)>;

template <class T>
struct EmuForward {
  std::vector<T> out;  // (L_q, d_v)
  std::vector<T> lse;  // (L_q)
  std::set<std::pair<int, int>> visited;  // (qb, kb) blocks that were computed
};

/// One head's flash forward with (Br x Bc) blocks. V: (L_k, d_v) row-major.
template <class T>
EmuForward<T> flash_forward(const RawFn<T>& raw, const T* V, int d_v, const Logits<T>& lg,
                            const BlockClassifier& bc) {
  const Mask& m = lg.mask;
  EmuForward<T> r;
  r.out.assign(std::size_t(m.L_q) * d_v, T(0));
  r.lse.assign(std::size_t(m.L_q), T(0));
  for (int qb = 0; qb < bc.num_q_blocks(); ++qb) {
    const int i0 = qb * bc.Br;
    std::vector<OnlineSoftmax<T>> st(std::size_t(bc.Br), OnlineSoftmax<T>(lg.mods.inv_tau));
    std::vector<T> acc(std::size_t(bc.Br) * d_v, T(0)), x(std::size_t(bc.Bc));
    const Range kbs = bc.key_blocks(qb);
    for (int kb = kbs.begin; kb < kbs.end; ++kb) {
      const BlockKind kind = bc(qb, kb);
      if (kind == BlockKind::empty) continue;
      r.visited.insert({qb, kb});
      const int j0 = kb * bc.Bc;
      for (int rr = 0; rr < bc.Br; ++rr) {  // every row of the padded block, as the threads do
        const int i = i0 + rr;
        T bmax = neg_inf<T>();
        for (int c = 0; c < bc.Bc; ++c) {
          const int j = j0 + c;
          const T s = (i < m.L_q && j < m.L_k) ? raw(i, j) : T(0);  // zero-filled padding
          x[c] = lg(s, i, j, kind);
          bmax = max_(bmax, x[c]);
        }
        OnlineSoftmax<T>& row = st[rr];
        const T alpha = row.rescale(bmax);
        T sum = 0;
        T* a = &acc[std::size_t(rr) * d_v];
        for (int e = 0; e < d_v; ++e) a[e] *= alpha;
        for (int c = 0; c < bc.Bc; ++c) {
          const T p = row.p(x[c]);
          sum += p;
          const int j = j0 + c;
          if (j < m.L_k)
            for (int e = 0; e < d_v; ++e) a[e] += p * V[offset_t(j) * d_v + e];
        }
        row.add(sum);
      }
    }
    for (int rr = 0; rr < bc.Br && i0 + rr < m.L_q; ++rr) {
      const T inv = st[rr].inv_l();
      for (int e = 0; e < d_v; ++e)
        r.out[std::size_t(i0 + rr) * d_v + e] = acc[std::size_t(rr) * d_v + e] * inv;
      r.lse[std::size_t(i0 + rr)] = st[rr].logsumexp();
    }
  }
  return r;
}

template <class T>
struct EmuGrads {
  std::vector<T> dQs, dKs, dV;  // w.r.t. the scorer's query rows (L_q, d), key rows (L_k, d), V
  std::set<std::pair<int, int>> visited_a, visited_b;  // blocks computed by pass A / pass B
};

/// One head's flash backward for a dot-product scorer S = Qs Ks^T (Qs: (L_q, d), Ks: (L_k, d)).
/// D_rel moves every D_i by D_rel |D_i| (the test's bar for the rounding of D itself).
template <class T>
EmuGrads<T> flash_backward(const T* Qs, const T* Ks, int d, const T* V, int d_v, const T* O,
                           const T* lse, const T* dO, const Logits<T>& lg, const BlockClassifier& bc, T D_rel = 0) {
  const Mask& m = lg.mask;
  EmuGrads<T> g;
  g.dQs.assign(std::size_t(m.L_q) * d, T(0));
  g.dKs.assign(std::size_t(m.L_k) * d, T(0));
  g.dV.assign(std::size_t(m.L_k) * d_v, T(0));
  std::vector<T> Dv(std::size_t(m.L_q), T(0));
  for (int i = 0; i < m.L_q; ++i)  // D_i = rowsum(dO * O): the preprocessing kernel
    for (int e = 0; e < d_v; ++e) Dv[i] += dO[offset_t(i) * d_v + e] * O[offset_t(i) * d_v + e];
  for (T& D : Dv) D += D_rel * (D < 0 ? -D : D);
  auto raw = [&](int i, int j) {
    T s = 0;
    for (int k = 0; k < d; ++k) s += Qs[offset_t(i) * d + k] * Ks[offset_t(j) * d + k];
    return s;
  };
  // One entry of a block: P, and dL/draw (0 where masked or padding).
  auto entry = [&](int i, int j, BlockKind kind, T* p_out) {
    if (i >= m.L_q || j >= m.L_k) { *p_out = 0; return T(0); }
    const T s = raw(i, j);
    const T p = lg.weight(lg(s, i, j, kind), lg.shift_of(lse[i]));
    T dp = 0;
    for (int e = 0; e < d_v; ++e) dp += dO[offset_t(i) * d_v + e] * V[offset_t(j) * d_v + e];
    *p_out = p;
    return lg.mods.grad_raw(softmax_grad(p, dp, Dv[i]), s);
  };
  // Pass A: one block per key block, visiting the query blocks that can see it.
  for (int kb = 0; kb < bc.num_k_blocks(); ++kb) {
    const Range qbs = bc.query_blocks(kb);
    for (int qb = qbs.begin; qb < qbs.end; ++qb) {
      const BlockKind kind = bc(qb, kb);
      if (kind == BlockKind::empty) continue;
      g.visited_a.insert({qb, kb});
      for (int r = 0; r < bc.Br; ++r)
        for (int c = 0; c < bc.Bc; ++c) {
          const int i = qb * bc.Br + r, j = kb * bc.Bc + c;
          T p;
          const T ds = entry(i, j, kind, &p);
          if (i >= m.L_q || j >= m.L_k) continue;
          for (int e = 0; e < d_v; ++e) g.dV[offset_t(j) * d_v + e] += p * dO[offset_t(i) * d_v + e];
          for (int k = 0; k < d; ++k) g.dKs[offset_t(j) * d + k] += ds * Qs[offset_t(i) * d + k];
        }
    }
  }
  // Pass B: one block per query block, visiting its key blocks.
  for (int qb = 0; qb < bc.num_q_blocks(); ++qb) {
    const Range kbs = bc.key_blocks(qb);
    for (int kb = kbs.begin; kb < kbs.end; ++kb) {
      const BlockKind kind = bc(qb, kb);
      if (kind == BlockKind::empty) continue;
      g.visited_b.insert({qb, kb});
      for (int r = 0; r < bc.Br; ++r)
        for (int c = 0; c < bc.Bc; ++c) {
          const int i = qb * bc.Br + r, j = kb * bc.Bc + c;
          T p;
          const T ds = entry(i, j, kind, &p);
          if (i >= m.L_q || j >= m.L_k) continue;
          for (int k = 0; k < d; ++k) g.dQs[offset_t(i) * d + k] += ds * Ks[offset_t(j) * d + k];
        }
    }
  }
  return g;
}

}  // namespace qktile
