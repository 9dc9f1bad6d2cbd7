// synattn — matrix types used at interfaces.
#ifndef SYNATTN_MATRIX_HPP
#define SYNATTN_MATRIX_HPP

#include <Eigen/Core>

namespace synattn {

// Distance and bucket blocks are row-major: a (batch, n, n) block is a
// (batch * n, n) matrix whose rows are (sequence, query) and columns keys.
template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using Index = Eigen::Index;

}  // namespace synattn

#endif  // SYNATTN_MATRIX_HPP
