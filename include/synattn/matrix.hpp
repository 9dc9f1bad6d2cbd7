// synattn — matrix types used at interfaces.
#ifndef SYNATTN_MATRIX_HPP
#define SYNATTN_MATRIX_HPP

#include <Eigen/Core>

#include <cstdint>
#include <type_traits>

namespace synattn {

// Distance and bucket blocks are row-major: a (batch, n, n) block is a
// (batch * n, n) matrix whose rows are (sequence, query) and columns keys.
template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using Index = Eigen::Index;

// A block of bucket indices for the syntax bias: (batch * n_q, n_kv), one
// int8 bucket per (query, key) pair and -1 on padding pairs. BucketBatch
// (bias/bucket_batch.hpp) makes one from trees.
using BucketBlock = RowMajorMatrix<std::int8_t>;

// True when two dense Eigen objects (matrices, maps, refs, blocks; any
// strides) have overlapping storage: the address ranges from their first to
// their last element meet. A layer whose output may alias one of its inputs
// asks this before it resizes or writes the output.
template <class A, class B>
bool storage_overlaps(const A& a, const B& b) noexcept {
  if (a.size() == 0 || b.size() == 0) return false;
  const auto range = [](const auto& m, std::uintptr_t& lo, std::uintptr_t& hi) {
    using T = typename std::decay_t<decltype(m)>::Scalar;
    const T* last = m.data() + (m.rows() - 1) * m.rowStride() + (m.cols() - 1) * m.colStride();
    lo = reinterpret_cast<std::uintptr_t>(m.data());
    hi = reinterpret_cast<std::uintptr_t>(last + 1);
  };
  std::uintptr_t a0, a1, b0, b1;
  range(a, a0, a1);
  range(b, b0, b1);
  return a0 < b1 && b0 < a1;
}

}  // namespace synattn

#endif  // SYNATTN_MATRIX_HPP
