// qkscope/score/linear_concat.hpp — linear concat score f(q, k) = w^T [q; k]
// (the "concat" score without its nonlinearity). w: (d_q + d_k) = [w_q; w_k].
// It is separable: f = w_q . q + w_k . k, so it costs L_q d_q + L_k d_k + L_q L_k,
// and the query term is constant along a softmax row and cancels: the weights do
// not depend on the query at all (docs/facts.md §2).
#pragma once

#include <cmath>

#include "qkscope/detail/check.hpp"
#include "qkscope/detail/rng.hpp"
#include "qkscope/score/forms.hpp"
#include "qkscope/score/params.hpp"

namespace qkscope::score {

struct LinearConcat {
  static constexpr const char* name = "linear_concat";
  static constexpr const char* label = "Linear concat";
  static constexpr const char* tex =
      R"(f(\mathbf q,\mathbf k)=\mathbf w^\top[\mathbf q;\mathbf k]=\mathbf w_q^\top\mathbf q+\mathbf w_k^\top\mathbf k)";
  static constexpr const char* params = "w";
  static constexpr bool same_dim = false;
  static constexpr bool hidden = false;
  /// w_q . q and w_k . k once per row (2 (L_q d_q + L_k d_k)), then one add per pair.
  static double flops(const ScoreShape& s, double pairs, Eigen::Index /*d_h*/) {
    return 2.0 * double(s.L_q * s.d_q + s.L_k * s.d_k) + pairs;
  }

  static double default_scale(const ScoreShape&) { return 1.0; }
  template <class T>
  static void validate(const ScoreShape& s, const ScoreParams<T>& p) {
    detail::require(p.w.size() == s.d_q + s.d_k, [&] {
      return "params.w (linear_concat) must have length d_q + d_k = " + std::to_string(s.d_q + s.d_k) + ", got " +
             std::to_string(p.w.size());
    });
  }
  /// w ~ N(0, 1/(d_q + d_k)).
  template <class T>
  static ScoreParams<T> init(const ScoreShape& s, Eigen::Index, std::uint64_t seed) {
    detail::Rng rng(seed);
    ScoreParams<T> p;
    p.w.resize(s.d_q + s.d_k);
    const double sd = 1.0 / std::sqrt(double(s.d_q + s.d_k));
    for (Eigen::Index i = 0; i < p.w.size(); ++i) p.w(i) = T(sd * rng.normal());
    return p;
  }
  /// S_ij = a_i + c_j with a = Q w_q, c = K w_k.  (L_q, L_k)
  template <class T>
  static Mat<T> forward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p) {
    const Vec<T> a = Q * p.w.head(Q.cols()), c = K * p.w.tail(K.cols());
    return a.replicate(1, K.rows()) + c.transpose().replicate(Q.rows(), 1);
  }
  /// dQ_i = r_i w_q, dK_j = (sum_i dS_ij) w_k, dw = [Q^T r; K^T c], with r_i = sum_j dS_ij
  /// given exactly as R (attention.hpp): a_i shifts its row's logits alike, so r_i is 0 without
  /// a softcap, where a float sum of dS of size 1e20 left 3e13 (and dw overflowed: fuzzer).
  /// c_j = sum_i dS_ij is summed in double, and dw from r and c in double: where keys tie,
  /// their columns cancel in K^T c, and float c left that at ulp(|c_j|) (fuzzer).
  template <class T>
  static void backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p, const Mat<T>& dS,
                       ScoreGrads<T>& g, const Eigen::VectorXd& R) {
    Eigen::VectorXd c = Eigen::VectorXd::Zero(K.rows());
    for (Eigen::Index i = 0; i < dS.rows(); ++i)
      for (Eigen::Index j = 0; j < dS.cols(); ++j) c(j) += double(dS(i, j));
    grads_from_sums(Q, K, p, R, c, g);
  }
  /// dQ = r w_q^T, dK = c w_k^T and dw = [Q^T r; K^T c] from r (L_q, the exact row sums) and
  /// c (L_k) in double, each rounded once to T. K^T c is taken about the key k_m of largest
  /// |c_j|: sum_j (k_j - k_m) c_j + k_m sum_i r_i (sum_j c_j = sum_i r_i), so keys tied with
  /// k_m add exactly 0 and the total comes from the exact row sums: c_j of 4.5e19 that cancel
  /// left 1e4 in K^T c, and 2e-6 where every key ties and the value is 0 (fuzzer).
  template <class T>
  static void grads_from_sums(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p, const Eigen::VectorXd& r,
                              const Eigen::VectorXd& c, ScoreGrads<T>& g) {
    // Plain loops, not Eigen's double products: each would add its own kernels to the wasm
    // modules (tests/wasm/size.test.mjs).
    const Eigen::Index dq = Q.cols(), dk = K.cols(), L_q = Q.rows(), L_k = K.rows();
    g.dQ.resize(L_q, dq);
    g.dK.resize(L_k, dk);
    g.dparams.w.setZero(dq + dk);
    for (Eigen::Index i = 0; i < L_q; ++i)
      for (Eigen::Index a = 0; a < dq; ++a) g.dQ(i, a) = T(r(i) * double(p.w(a)));
    for (Eigen::Index j = 0; j < L_k; ++j)
      for (Eigen::Index a = 0; a < dk; ++a) g.dK(j, a) = T(c(j) * double(p.w(dq + a)));
    double total = 0;
    for (Eigen::Index i = 0; i < L_q; ++i) total += r(i);
    for (Eigen::Index a = 0; a < dq; ++a) {
      double s = 0;
      for (Eigen::Index i = 0; i < L_q; ++i) s += double(Q(i, a)) * r(i);
      g.dparams.w(a) = T(s);
    }
    if (L_k == 0) return;
    Eigen::Index m = 0;
    for (Eigen::Index j = 1; j < L_k; ++j)
      if (std::abs(c(j)) > std::abs(c(m))) m = j;
    for (Eigen::Index a = 0; a < dk; ++a) {
      const double km = double(K(m, a));
      double s = 0;
      for (Eigen::Index j = 0; j < L_k; ++j) s += (double(K(j, a)) - km) * c(j);
      g.dparams.w(dq + a) = T(s + km * total);
    }
  }
  /// Fast paths (score/forms.hpp): the separable form a = Q w_q, c = K w_k.
  template <class T>
  static SeparableForm<T> prepare(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p) {
    return {Q * p.w.head(Q.cols()), K * p.w.tail(K.cols())};
  }
  /// From da = fg.dq.col(0), dc = fg.dk.col(0): dQ = da w_q^T, dK = dc w_k^T, dw = [Q^T da; K^T dc];
  /// from the form's sums in double where the kernel kept them (SeparableForm::da64, dc64).
  template <class T>
  static void prepared_backward(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p,
                                const SeparableForm<T>& f, FormGrads<T>& fg, ScoreGrads<T>& g) {
    if (f.da64.size() == Q.rows() && f.dc64.size() == K.rows()) return grads_from_sums(Q, K, p, f.da64, f.dc64, g);
    const Eigen::Index dq = Q.cols(), dk = K.cols();
    g.dQ = fg.dq.col(0) * p.w.head(dq).transpose();
    g.dK = fg.dk.col(0) * p.w.tail(dk).transpose();
    g.dparams.w.resize(dq + dk);
    g.dparams.w.head(dq) = Q.transpose() * fg.dq.col(0);
    g.dparams.w.tail(dk) = K.transpose() * fg.dk.col(0);
  }
};

}  // namespace qkscope::score
