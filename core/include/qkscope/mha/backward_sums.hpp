// qkscope/mha/backward_sums.hpp — the multi-head backward's sums of per-(sequence, head)
// gradients: a KV head's dK and dV over its group of query heads (GQA: Ainslie et al. 2023),
// each head's score parameters and T5 table over the sequences, the shared biases and
// dL/dtemperature over both. Each sum is settled (detail/product_range.hpp): an entry that
// overflowed only in summation order (0.9 M + 0.9 M - 0.9 M over three query heads, M the
// largest float: review) is summed again by exponent; one past the range is an error.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "qkscope/attention.hpp"
#include "qkscope/detail/product_range.hpp"
#include "qkscope/mha/config.hpp"

namespace qkscope::detail {

/// Pointers to field(grads[k]) for k in ks, skipping empty ones (an unused parameter or bias).
template <class T, class F>
auto nonempty_parts(const std::vector<AttentionGrads<T>>& grads, const std::vector<std::size_t>& ks, F field) {
  std::vector<const std::remove_cvref_t<decltype(field(grads[0]))>*> parts;
  for (const std::size_t k : ks)
    if (field(grads[k]).size()) parts.push_back(&field(grads[k]));
  return parts;
}

/// Sums the per-(b, h) gradients `heads` (index b*H + h; their dQ already taken) into dK and dV
/// (B*L_k, H_kv*d_k / d_v) and into g's score parameters, biases and dL/dtemperature.
/// Throws std::invalid_argument ("gradient overflowed: ...", naming the sum) for an entry past
/// the range of T.
template <class T>
void sum_head_gradients(const std::vector<AttentionGrads<T>>& heads, const MhaShape& s, bool per_head_t5,
                        Mat<T>& dK, Mat<T>& dV, MultiHeadGrads<T>& g) {
  std::vector<std::size_t> ks;
  for (Eigen::Index b = 0; b < s.B; ++b)
    for (Eigen::Index kv = 0; kv < s.H_kv; ++kv) {
      ks.clear();
      for (Eigen::Index h = kv * s.group; h < (kv + 1) * s.group; ++h) ks.push_back(std::size_t(b * s.H + h));
      Mat<T> sum;
      settle_sum(sum, nonempty_parts(heads, ks, [](const auto& x) -> const Mat<T>& { return x.dK; }),
                 "dL/dK = sum over a KV group's query heads");
      dK.block(b * s.L_k, kv * s.d_k, s.L_k, s.d_k) = sum;
      settle_sum(sum, nonempty_parts(heads, ks, [](const auto& x) -> const Mat<T>& { return x.dV; }),
                 "dL/dV = sum over a KV group's query heads");
      dV.block(b * s.L_k, kv * s.d_v, s.L_k, s.d_v) = sum;
    }
  g.dscore_params.assign(std::size_t(s.H), ScoreParams<T>{});
  for (Eigen::Index h = 0; h < s.H; ++h) {
    ks.clear();
    for (Eigen::Index b = 0; b < s.B; ++b) ks.push_back(std::size_t(b * s.H + h));
    ScoreParams<T>& p = g.dscore_params[std::size_t(h)];
    const char* what = "dL/dscore_params (summed over the batch)";
    settle_sum(p.W, nonempty_parts(heads, ks, [](const auto& x) -> const Mat<T>& { return x.dparams.W; }), what);
    settle_sum(p.W_q, nonempty_parts(heads, ks, [](const auto& x) -> const Mat<T>& { return x.dparams.W_q; }), what);
    settle_sum(p.W_k, nonempty_parts(heads, ks, [](const auto& x) -> const Mat<T>& { return x.dparams.W_k; }), what);
    settle_sum(p.v, nonempty_parts(heads, ks, [](const auto& x) -> const Vec<T>& { return x.dparams.v; }), what);
    settle_sum(p.b, nonempty_parts(heads, ks, [](const auto& x) -> const Vec<T>& { return x.dparams.b; }), what);
    settle_sum(p.w, nonempty_parts(heads, ks, [](const auto& x) -> const Vec<T>& { return x.dparams.w; }), what);
    if (per_head_t5) {  // head h's own table, (num_buckets) per sequence
      Vec<T> row;
      settle_sum(row, nonempty_parts(heads, ks, [](const auto& x) -> const Vec<T>& { return x.dt5_table; }),
                 "dL/dt5_tables (summed over the batch)");
      if (!g.dt5_tables.size()) g.dt5_tables = Mat<T>::Zero(s.H, row.size());
      if (row.size()) g.dt5_tables.row(h) = row.transpose();
    }
  }
  ks.clear();
  for (std::size_t k = 0; k < heads.size(); ++k) ks.push_back(k);
  settle_sum(g.drelative, nonempty_parts(heads, ks, [](const auto& x) -> const Vec<T>& { return x.drelative; }),
             "dL/dbias.relative (summed over heads and batch)");
  if (!per_head_t5)  // one table shared by every head, as bias.relative
    settle_sum(g.dt5_table, nonempty_parts(heads, ks, [](const auto& x) -> const Vec<T>& { return x.dt5_table; }),
               "dL/dbias.t5_table (summed over heads and batch)");
  settle_sum(g.ddense, nonempty_parts(heads, ks, [](const auto& x) -> const Mat<T>& { return x.ddense; }),
             "dL/dbias.dense (summed over heads and batch)");
  double dtau = 0;
  for (const AttentionGrads<T>& x : heads) dtau += x.dtemperature;
  if (!std::isfinite(dtau)) {
    const auto [m, e] = sum_by_exponent(Eigen::Index(heads.size()), [&](Eigen::Index k) {
      return split_exponent(heads[std::size_t(k)].dtemperature);
    });
    dtau = std::ldexp(m, e);
  }
  g.dtemperature = dtau;
  require_dtemperature_finite<T>(dtau, "dL/dtemperature (summed over heads and batch)");
}

}  // namespace qkscope::detail
