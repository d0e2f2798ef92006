// qkscope/score/additive.hpp — additive ("concat") score
//   f(q, k) = v^T tanh(W_q q + W_k k + b)
// (Bahdanau, Cho & Bengio 2015, appendix A.1.2, eq. for e_ij; also GAT's scoring
// family). W_q: (d_h, d_q), W_k: (d_h, d_k), v, b: (d_h).
// Cost: L_q d_q d_h + L_k d_k d_h projections, then L_q L_k d_h tanh + FMAs.
// Why row by row: the textbook broadcast builds an L_q x L_k x d_h tensor; here
// at most one (L_k, d_h) slab lives at a time and backward recomputes tanh.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"
#include "qkscope/score/split_check.hpp"
#include "qkscope/score/additive_rows.hpp"
#include "qkscope/score/tanh_difference.hpp"

namespace qkscope::score {

struct Additive {
  static constexpr const char* name = "additive";
  static constexpr const char* label = "Additive (Bahdanau)";
  static constexpr const char* tex =
      R"(f(\mathbf q,\mathbf k)=\mathbf v^\top\tanh(W_q\mathbf q+W_k\mathbf k+\mathbf b))";
  static constexpr const char* params = "W_q,W_k,v,b";
  static constexpr bool same_dim = false;
  static constexpr bool hidden = true;  // uses the hidden width d_h (params.v)
  /// The projections W_q q and W_k k once per row (2 d_h (L_q d_q + L_k d_k)), then per pair
  /// and hidden unit an add, a tanh and a multiply-add (counted as 3 d_h).
  static double flops(const ScoreShape& s, double pairs, Eigen::Index d_h) {
    return 2.0 * double(d_h) * double(s.L_q * s.d_q + s.L_k * s.d_k) + 3.0 * double(d_h) * pairs;
  }

  static double default_scale(const ScoreShape&) { return 1.0; }
  /// Above this |scale| / tau the fast paths form the scores in double and round once
  /// (cpu/additive_f64.hpp): the softmax multiplies each score's error by the gain, and the
  /// float tanh forms' few ulp had left the tiled path 1-3 times the fuzz harness's bar at
  /// tau 1e-4 to 1e-2. The same gain as cosine's (score/cosine.hpp).
  static constexpr double refine_gain = 8;
  /// The gain that refine_gain is compared with: |scale| / tau times max(1, sum_h |v_h| / 4).
  /// A score sums d_h tanh terms weighted by v, so a fused form's error per unit (~1.3 eps, the
  /// absolute error of the exp form: cpu/additive.hpp) reaches the logit times |v_h|, as a
  /// small tau would multiply it. With v_0 = -369 at tau = 1 the tiled dV, dW_q and dv were 1.005
  /// to 6.2 times the fuzz harness's bar (six inputs); a seeded sweep (d_h 1-4, sum |v_h| / tau
  /// from 1 to 512) met the bar everywhere below 32 and failed 3-13 cases per 4,400 in each
  /// octave above. Not a bound: with d_h up to 64 a review met 5 of 4,000 calls between 13.9
  /// and 31.3 at 1.0-2.3 times the bar, failing before the gate too (docs/RELIABILITY.md,
  /// "Fixed on 2026-12-07, twenty-fourth session"). Up to sum |v_h| = 4 nothing changes; init's
  /// v ~ N(0, 1/d_h) gives sum |v_h| ~ 0.8 sqrt(d_h): 6.4 at d_h = 64 (the double tiles from
  /// tau = 0.2 instead of 0.125), 18 at 512 (tau 0.56), 51 at 4096 (tau 1.6). A v that grows in
  /// training moves a call to the double tiles once the product passes 32 (a forward 2.7-4.9x
  /// slower: native/bench/NOTES.md).
  template <class V>
  static double tile_gain(double score_gain, const V& v) {
    double mass = 0;
    for (Eigen::Index h = 0; h < v.size(); ++h) mass += std::abs(double(v(h)));
    return score_gain * std::max(1.0, mass / 4);
  }
  template <class T>
  static void validate(const ScoreShape& s, const ScoreParams<T>& p) {
    const auto d_h = p.v.size();
    detail::require(d_h > 0, "params.v (additive, d_h) must be non-empty");
    detail::require_shape(p.W_q, d_h, s.d_q, "params.W_q (additive, d_h x d_q)");
    detail::require_shape(p.W_k, d_h, s.d_k, "params.W_k (additive, d_h x d_k)");
    detail::require(p.b.size() == 0 || p.b.size() == d_h, [&] {
      return "params.b (additive) must have length d_h = " + std::to_string(d_h) + " or be empty, got " +
             std::to_string(p.b.size());
    });
  }
  /// Glorot-style normals: W_q ~ N(0, 1/d_q), W_k ~ N(0, 1/d_k), v ~ N(0, 1/d_h), b = 0.
  template <class T>
  static ScoreParams<T> init(const ScoreShape& s, Eigen::Index d_h, std::uint64_t seed) {
    detail::require(d_h > 0, [&] { return "hidden size d_h (additive) must be >= 1, got " + std::to_string(d_h); });
    detail::Rng rng(seed);
    auto fill = [&](auto& m, double sd) {
      for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = T(sd * rng.normal());
    };
    ScoreParams<T> p;
    p.W_q.resize(d_h, s.d_q);
    p.W_k.resize(d_h, s.d_k);
    p.v.resize(d_h);
    fill(p.W_q, 1.0 / std::sqrt(double(s.d_q)));
    fill(p.W_k, 1.0 / std::sqrt(double(s.d_k)));
    fill(p.v, 1.0 / std::sqrt(double(d_h)));
    p.b = Vec<T>::Zero(d_h);
    return p;
  }

  /// S_ij = sum_h v_h tanh(A_ih + B_jh + b_h), A = Q W_q^T, B = K W_k^T.  (L_q, L_k)
  template <class T>
  static Mat<T> forward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p) {
    const Mat<T> A = project_q(Q, p), B = K * p.W_k.transpose();
    Mat<T> S(Q.rows(), K.rows());
    Mat<T> H(K.rows(), p.v.size());  // one (L_k, d_h) slab per query
    for (Eigen::Index i = 0; i < Q.rows(); ++i) {
      H = (B.rowwise() + A.row(i)).array().tanh();
      S.row(i) = (H * p.v).transpose();
    }
    return S;
  }
  /// With T_ijh = tanh(.), G_ijh = dS_ij v_h (1 - T_ijh^2):
  /// dA = sum_j G, dB = sum_i G, db = sum_ij G, dv = sum_ij dS_ij T_ij,
  /// dQ = dA W_q, dW_q = dA^T Q, dK = dB W_k, dW_k = dB^T K.
  /// dA_ih = v_h sum_j dS_ij (1 - T^2) is taken as that sum or, with R_i = sum_j dS_ij given
  /// exactly (attention.hpp) and T_r the tanh at the row's key of largest |dS|, as
  /// (1 - T_r^2) R_i - sum_j dS_ij (T^2 - T_r^2), whichever has the smaller rounding bound
  /// (sum |dS| (1 - T^2) against sum |dS| |T^2 - T_r^2|): the first is exact where the tanh
  /// saturates, the second where the T of a row are near each other (all near 0, or keys tied:
  /// t^2 sum dS of size 2e25 left 7e17 where the value is 0, fuzzer finding), when the sum is
  /// nearly the row's exact 0 (as the tiled form, cpu/additive.hpp). The second only where
  /// the row's dS sum to R within their rounding (split_check.hpp).
  /// 1 - T_r^2 is taken as c_r (2 - c_r), c_r = 1 - |T_r| (score/tanh_difference.hpp).
  /// dv_h's row share sum_j dS_ij T_ijh is chosen the same way, between the plain sum and
  /// T_rh R_i + sum_j dS_ij (T_ijh - T_rh) (the float and the double sums had lost the value
  /// entirely beside tied keys' dS of 1e33: -0.54 where it is -6e-18, fuzzer finding). Units
  /// whose chosen sum keeps too few bits take their splits again from exact differences
  /// (score/additive_rows.hpp, the rule the tiled kernels share).
  template <class T>
  static void backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p, const Mat<T>& dS,
                       ScoreGrads<T>& g, const Eigen::VectorXd& R) {
    const Eigen::Index d_h = p.v.size();
    const Mat<T> A = project_q(Q, p), B = K * p.W_k.transpose();
    Mat<T> dA = Mat<T>::Zero(Q.rows(), d_h), dB = Mat<T>::Zero(K.rows(), d_h);
    Vec<T> dv = Vec<T>::Zero(d_h);
    Mat<T> X(K.rows(), d_h), H(K.rows(), d_h);
    AdditiveRowSums<T> f;
    f.resize(d_h);
    const auto v = p.v.transpose().array();
    for (Eigen::Index i = 0; i < Q.rows(); ++i) {
      X = B.rowwise() + A.row(i);
      H = X.array().tanh();
      Eigen::Index top = 0;  // the key of largest |dS|: the splits' reference
      for (Eigen::Index j = 1; j < K.rows(); ++j)
        if (std::abs(dS(i, j)) > std::abs(dS(i, top))) top = j;
      f.zero();
      for (Eigen::Index h = 0; h < d_h; ++h) {
        f.c_r(h) = tanh_complement(X(top, h), H(top, h));
        f.u_r(h) = f.c_r(h) * (T(2) - f.c_r(h));  // 1 - t_r^2 without cancellation
        f.t_r(h) = H(top, h);
      }
      // One pass over the keys, scalar (small code for the wasm modules): dB and the row's sums
      // (score/additive_rows.hpp), dA's split from the rounded t, estimate t^2 + t_r^2.
      T row_sum = 0, row_abs = 0;
      for (Eigen::Index j = 0; j < K.rows(); ++j) {
        const T d = dS(i, j), a = std::abs(d);
        row_sum += d;
        row_abs += a;
        for (Eigen::Index h = 0; h < d_h; ++h) {
          const T t = H(j, h), tr = f.t_r(h), t2 = t * t, w = tr * tr - t2;
          // u = 1 - t^2. In double (the fuzz harness's reference) without cancellation where
          // |t| > 1/2: past |x| ~ 19 tanh rounds to 1 and 1 - t^2 gave 0 where sech^2 x is
          // 1.5e-18 (dW_k 0 where 8.5e18: fuzzer, 2026-12-06). The float core, in the wasm
          // module's size budget, keeps the plain form.
          T u = T(1) - t2, w_used = w, e = t2 + tr * tr;
          if constexpr (std::is_same_v<T, double>) {
            u = saturated_u(X(j, h), t);
            // u - u_r is the same w; where t and t_r both saturate, t_r^2 - t^2 rounds to 0
            // (t = +-1) while u and u_r keep their digits: the double core gave dQ 0 where it is
            // -7.38e7 over keys at x = -25.6 and 26.3 (fuzzer, 2026-12-06). The form whose
            // rounding estimate is the smaller.
            if (u + f.u_r(h) < e) w_used = u - f.u_r(h), e = u + f.u_r(h);
          }
          dB(j, h) += d * v(h) * u;
          f.plain(h) += d * u;
          f.plain_bound(h) += a * u;
          f.split(h) += d * w_used;
          f.split_bound(h) += a * std::abs(w_used);
          f.E_A(h) += a * e;
          f.v_plain(h) += d * t;
          f.v_plain_bound(h) += a * std::abs(t);
        }
      }
      f.E_core = f.E_A;
      const bool exact_dS = split_consistent(row_sum, row_abs, R(i), K.rows());
      // Units whose chosen sums keep too few bits take the splits again, their differences
      // from the keys' own (tanh_difference; t^2 - t_r^2 as (t - t_r)(t + t_r)).
      const auto exact = f.exact_units(exact_dS, R(i));
      if (exact.any()) {
        for (Eigen::Index h = 0; h < d_h; ++h)
          if (exact(h) != 0) f.reset_splits(h);
        for (Eigen::Index j = 0; j < K.rows(); ++j) {
          const T d = dS(i, j), a = std::abs(d);
          if (d == T(0)) continue;
          for (Eigen::Index h = 0; h < d_h; ++h) {
            if (exact(h) == 0) continue;
            const T t = H(j, h), tr = f.t_r(h);
            const T dt = key_tanh_difference(B(j, h), B(top, h), X(j, h), t, tr, f.c_r(h));
            T w = -(dt * (t + tr));
            // In double, u - u_r where t + t_r cancels (t and t_r saturated, opposite signs): its
            // rounding, about eps (u + u_r), against |dt| eps (|t| + |t_r|) for the product.
            if constexpr (std::is_same_v<T, double>) {
              const T u = saturated_u(X(j, h), t);
              if (u + f.u_r(h) < std::abs(dt) * (std::abs(t) + std::abs(tr))) w = u - f.u_r(h);
            }
            f.split(h) += d * w;
            f.split_bound(h) += a * std::abs(w);
            f.v_split(h) += d * dt;
            f.v_split_bound(h) += a * std::abs(dt);
          }
        }
      }
      for (Eigen::Index h = 0; h < d_h; ++h) {
        dA(i, h) = v(h) * f.dA(h, exact_dS, R(i));
        dv(h) += f.dv(h, exact_dS, R(i));
      }
    }
    g.dQ = dA * p.W_q;
    g.dK = dB * p.W_k;
    g.dparams.W_q = dA.transpose() * Q;
    g.dparams.W_k = dB.transpose() * K;
    g.dparams.v = dv;
    g.dparams.b = dA.colwise().sum().transpose();
  }
  /// u = 1 - t^2 for t = tanh(x) (double only): past |t| = 1/2 as c (2 - c), c = 1 - |t|
  /// (tanh_complement), without the cancellation that gives 0 once t rounds to +-1 (|x| ~ 19)
  /// where sech^2 x is 1.5e-18 (dW_k 0 where 8.5e18: fuzzer, 2026-12-06).
  static double saturated_u(double x, double t) {
    if (!(std::abs(t) > 0.5)) return 1 - t * t;
    const double c = tanh_complement(x, t);
    return c * (2 - c);
  }
  /// Fast paths (score/forms.hpp): the fused form, projections A = Q W_q^T + b, B = K W_k^T
  /// computed once; the kernels never store the (L_q, L_k, d_h) tanh tensor.
  template <class T>
  static AdditiveForm<T> prepare(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p) {
    return {project_q(Q, p), K * p.W_k.transpose(), p.v, &K, &p.W_k, &Q, &p.W_q, &p.b};
  }
  /// From dA = fg.dq, dB = fg.dk, dv = fg.dv: dQ = dA W_q, dK = dB W_k, dW_q = dA^T Q,
  /// dW_k = dB^T K, db = sum_i dA_i.
  template <class T>
  static void prepared_backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p,
                                const AdditiveForm<T>&, FormGrads<T>& fg, ScoreGrads<T>& g) {
    g.dQ = fg.dq * p.W_q;
    g.dK = fg.dk * p.W_k;
    g.dparams.W_q = fg.dq.transpose() * Q;
    g.dparams.W_k = fg.dk.transpose() * K;
    g.dparams.v = std::move(fg.dv);
    g.dparams.b = fg.dq.colwise().sum().transpose();
  }

 private:
  /// A = Q W_q^T + b (the bias folded into the query side).  (L_q, d_h)
  template <class T>
  static Mat<T> project_q(const Mat<T>& Q, const ScoreParams<T>& p) {
    Mat<T> A = Q * p.W_q.transpose();
    if (p.b.size()) A.rowwise() += p.b.transpose();
    return A;
  }
};

}  // namespace qkscope::score
