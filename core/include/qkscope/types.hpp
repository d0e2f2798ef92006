// qkscope/types.hpp — the matrix and vector types every part of the core uses.
//
// All matrices are row-major (row i = token i), matching the (L, d) layout of
// PyTorch/FlashAttention tensors, so a Float32Array from JS maps 1:1.
// The core is templated on the scalar T (float for speed, double for the
// finite-difference and reference checks).
#pragma once

#include <Eigen/Core>
#include <cstdint>

#if defined(__CUDACC__)
#define QKSCOPE_HOST_DEVICE __host__ __device__
#else
#define QKSCOPE_HOST_DEVICE
#endif

namespace qkscope {

/// Row-major dynamic matrix of scalar T; shapes are written (rows, cols).
template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// Column vector of scalar T.
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;

using Matrix = Mat<float>;
using Vector = Vec<float>;
using MatrixD = Mat<double>;
using VectorD = Vec<double>;

/// Boolean mask, true = the query may attend to the key (SDPA/FlexAttention polarity).
using KeepMask = Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace qkscope
