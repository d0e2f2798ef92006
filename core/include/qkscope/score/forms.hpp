// qkscope/score/forms.hpp — the forms a scoring function takes on the fast paths (the CPU
// tiled kernels in cpu/ and the CUDA kernels in native/cuda/). Each scoring function's
// `prepare` hook turns (Q, K, params) into one form once per call, in O(L d) work, and the
// kernels only ever see the form; its `prepared_backward` hook maps the kernels' gradients
// w.r.t. the form back to Q, K and the parameters. The kernels pick their code by the form's
// type, never by the score's name, so a scoring function without both hooks does not compile
// on the fast paths.
//   DotForm        S = q k^T on prepared rows (dot, scaled dot: the rows as given; cosine:
//                  normalised rows; bilinear: Q W; negative squared Euclidean: augmented rows)
//   SeparableForm  S_ij = a_i + c_j (linear concat: O(L_q L_k) with no GEMM)
//   AdditiveForm   S_ij = sum_h v_h tanh(a_ih + b_jh) (additive: projections computed once)
#pragma once

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "qkscope/score/params.hpp"

namespace qkscope::score {

/// S = q k^T with q (L_q, w), k (L_k, w). An empty q (k) means the queries (keys) as given,
/// so that the dot product itself copies nothing.
template <class T>
struct DotForm {
  Mat<T> q, k;
  /// Size of the terms the prepared rows' dot products cancel to reach the score (0: none
  /// beyond the plain dot product's own). A logit then carries about eps * cancellation *
  /// scale / tau of rounding, which the fast paths check before they run (logit_range.hpp).
  double cancellation = 0;
  /// How much prepared_backward can enlarge the kernels' dq, dk on their way to dQ, dK (1:
  /// not at all; cosine: 1 / the smallest clamped row norm, up to 1 / eps). The fast paths
  /// bound their gradients with it before they run (logit_range.hpp: grads_fit).
  double grad_gain = 1;
  /// The rows q, k in double, where a form's refine_prepare keeps them for its refine_tile
  /// (cosine's unit rows, unrounded); empty otherwise.
  MatrixD q64{}, k64{};
  /// Set by a form's refine_prepare where its refine_tile forms every entry of a tile (cosine
  /// and negative squared Euclidean at a large |scale| / tau): the fast paths then skip the
  /// tile's GEMM (cpu/scorers.hpp, DotScorer::Refine::whole).
  bool refine_all = false;
  const Mat<T>& q_or(const Mat<T>& Q) const { return q.size() ? q : Q; }
  const Mat<T>& k_or(const Mat<T>& K) const { return k.size() ? k : K; }
};

/// S_ij = a_i + c_j with a (L_q), c (L_k).
template <class T>
struct SeparableForm {
  Vec<T> a, c;
  /// The backward's sums dL/da_i = sum_j dS_ij and dL/dc_j = sum_i dS_ij in double, (L_q) and
  /// (L_k), where the CPU tiled kernel keeps them (cpu/scorers.hpp, SeparableScorer); empty
  /// otherwise. Tied keys' columns cancel in the parameters' gradients (dw_k = K^T dc): the
  /// float sums left that cancellation at ulp(|dc_j|), 1e6 times the bar (fuzzer).
  Eigen::VectorXd da64{}, dc64{};
};

/// S_ij = sum_h v_h tanh(a_ih + b_jh) with a (L_q, d_h), b (L_k, d_h), v (d_h).
template <class T>
struct AdditiveForm {
  Mat<T> a, b;
  Vec<T> v;
  // The inputs b came from (b = K W_k^T; not owned, they outlive the form): the tiled dL/dtau's
  // exact differences take B_j - B_r from them in double (cpu/additive.hpp, raw_differences).
  const Mat<T>* K = nullptr;
  const Mat<T>* W_k = nullptr;
  // The inputs a came from (a = Q W_q^T + bias): the tiles past Additive::refine_gain form
  // both projections in double (cpu/additive_f64.hpp).
  const Mat<T>* Q = nullptr;
  const Mat<T>* W_q = nullptr;
  const Vec<T>* bias = nullptr;  // empty: none
};

/// Gradients of a loss w.r.t. a form's inputs: dq (L_q, w) and dk (L_k, w) for DotForm
/// (w = 1 for SeparableForm: da, dc), da, db and dv for AdditiveForm (dq = da, dk = db).
template <class T>
struct FormGrads {
  Mat<T> dq, dk;
  Vec<T> dv;
};

/// Rows whose dot product is the form's score, for kernels that only take dot products (the
/// CUDA kernels), zero-padded to a multiple of `multiple` columns (zeros add nothing):
/// DotForm: its rows; SeparableForm: [a_i, 1] . [1, c_j] = a_i + c_j.
template <class T>
std::pair<Mat<T>, Mat<T>> dot_rows(const DotForm<T>& f, const Mat<T>& Q, const Mat<T>& K, int multiple = 1) {
  const Mat<T>&q = f.q_or(Q), &k = f.k_or(K);
  const Eigen::Index w = (q.cols() + multiple - 1) / multiple * multiple;
  if (w == q.cols()) return {q, k};
  Mat<T> qp = Mat<T>::Zero(q.rows(), w), kp = Mat<T>::Zero(k.rows(), w);
  qp.leftCols(q.cols()) = q;
  kp.leftCols(k.cols()) = k;
  return {std::move(qp), std::move(kp)};
}
template <class T>
std::pair<Mat<T>, Mat<T>> dot_rows(const SeparableForm<T>& f, const Mat<T>&, const Mat<T>&, int multiple = 1) {
  const Eigen::Index w = (2 + multiple - 1) / multiple * multiple;
  Mat<T> q = Mat<T>::Zero(f.a.size(), w), k = Mat<T>::Zero(f.c.size(), w);
  q.col(0) = f.a;
  q.col(1).setOnes();
  k.col(0).setOnes();
  k.col(1) = f.c;
  return {std::move(q), std::move(k)};
}

/// The form's gradients from the gradients w.r.t. dot_rows' rows dq, dk.
template <class T>
FormGrads<T> from_dot_rows(const DotForm<T>& f, const Mat<T>& Q, const Mat<T>& K, const Mat<T>& dq,
                           const Mat<T>& dk) {
  return {dq.leftCols(f.q_or(Q).cols()), dk.leftCols(f.k_or(K).cols()), {}};
}
template <class T>
FormGrads<T> from_dot_rows(const SeparableForm<T>&, const Mat<T>&, const Mat<T>&, const Mat<T>& dq,
                           const Mat<T>& dk) {
  return {dq.col(0), dk.col(1), {}};
}

/// A scoring function's form as a kernel that scores either dot products or the additive form
/// reads it (the CUDA kernels and their tests): dot-product rows q, k (dot_rows), or the
/// additive form's a, b, v; and, for dot-product forms, the way back from the kernel's dq, dk
/// to dQ, dK and the parameters (F::prepared_backward).
template <class T>
struct KernelRows {
  Mat<T> q, k;
  Vec<T> add_v;
  bool additive = false;
  double cancellation = 0;  // DotForm::cancellation
  std::function<ScoreGrads<T>(const Mat<T>& dq, const Mat<T>& dk)> back;  // empty: no backward
};

/// kernel_rows of scoring function F for Q, K, p; widths padded to multiples of `multiple`.
/// `backward`: keep copies of Q, K, p and the form for back().
template <class F, class T>
KernelRows<T> kernel_rows(const Mat<T>& Q, const Mat<T>& K, const ScoreParams<T>& p, int multiple, bool backward) {
  KernelRows<T> r;
  auto form = F::template prepare<T>(Q, K, p);
  if constexpr (std::is_same_v<decltype(form), AdditiveForm<T>>) {
    r.additive = true;
    r.q = std::move(form.a);
    r.k = std::move(form.b);
    r.add_v = std::move(form.v);
  } else {
    if constexpr (requires { form.cancellation; }) r.cancellation = form.cancellation;
    std::tie(r.q, r.k) = dot_rows(form, Q, K, multiple);
    if (backward)
      r.back = [form = std::move(form), Q, K, p](const Mat<T>& dq, const Mat<T>& dk) {
        FormGrads<T> fg = from_dot_rows(form, Q, K, dq, dk);
        ScoreGrads<T> g;
        F::template prepared_backward<T>(Q, K, p, form, fg, g);
        return g;
      };
  }
  return r;
}

}  // namespace qkscope::score
