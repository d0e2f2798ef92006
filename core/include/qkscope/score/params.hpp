// qkscope/score/params.hpp — learnable parameters of the scoring functions and
// their gradients. One struct holds every parameter any scoring function uses;
// each function reads only its own fields and validates their shapes.
#pragma once

#include "qkscope/types.hpp"

namespace qkscope {

/// Parameters of the scoring functions (unused fields stay empty).
///   W   : (d_q, d_k)      bilinear / Luong "general": q^T W k
///   W_q : (d_h, d_q)      additive (Bahdanau): v^T tanh(W_q q + W_k k + b)
///   W_k : (d_h, d_k)      additive
///   v   : (d_h)           additive
///   b   : (d_h)           additive (may be empty = zero bias)
///   w   : (d_q + d_k)     linear concat: w^T [q; k]
template <class T>
struct ScoreParams {
  Mat<T> W, W_q, W_k;
  Vec<T> v, b, w;

  template <class U>
  ScoreParams<U> cast() const {
    return {W.template cast<U>(), W_q.template cast<U>(), W_k.template cast<U>(),
            v.template cast<U>(),  b.template cast<U>(),  w.template cast<U>()};
  }
};

/// Gradients of a loss w.r.t. the scoring function's inputs and parameters.
/// Fields of parameters the function does not use stay empty.
template <class T>
struct ScoreGrads {
  Mat<T> dQ, dK;            // (L_q, d_q), (L_k, d_k)
  ScoreParams<T> dparams;   // same shapes as the parameters
};

/// Shapes a scoring function is asked to work on.
struct ScoreShape {
  Eigen::Index L_q, L_k, d_q, d_k;
};

}  // namespace qkscope
