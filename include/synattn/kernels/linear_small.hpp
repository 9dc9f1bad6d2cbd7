// synattn — C = A B^T, the product of an nn.Linear layer (B is the (n, k)
// weight), through kernels::product or, for a few rows of A when the kernel
// registry's set has a few-rows kernel (kernels/registry.hpp: the avx512
// set), through kernels/linear_small_algorithm.inc, which does not
// pack B (see there why that matters at single-sentence sizes).
//
// kernels::product (the dispatched GEMM or Eigen's product, whichever
// kernels/product.hpp picks) is the general path and the reference the tests
// compare the kernel against; for a few rows the dispatched GEMM avoids
// packing B too, by computing C^T = B A^T (gemm_blocked.inc).
#ifndef SYNATTN_KERNELS_LINEAR_SMALL_HPP
#define SYNATTN_KERNELS_LINEAR_SMALL_HPP

#include <Eigen/Core>

#include <cstdint>
#include <vector>

#include "../config.hpp"
#include "../matrix.hpp"
#include "operands.hpp"
#include "product.hpp"
#include "registry.hpp"

namespace synattn {
namespace kernels {

namespace detail {

// `size` scalars of 64-byte-aligned scratch owned by the calling thread, kept
// between calls (grown, never shrunk): linear_product's panel, which would
// otherwise be allocated on every projection of every layer.
// Valid until the same thread asks for more.
template <class Scalar>
inline Scalar* thread_workspace(Index size) {
  constexpr Index pad = 64 / Index(sizeof(Scalar));
  thread_local std::vector<Scalar> buffer;
  if (Index(buffer.size()) < size + pad) buffer.resize(static_cast<std::size_t>(size + pad));
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(buffer.data());
  return buffer.data() + static_cast<Index>((64 - address % 64) % 64 / sizeof(Scalar));
}

}  // namespace detail

// Rows of A from which Eigen's general product is as fast again (measured on
// AVX-512, float: the kernel is 1.6x faster at 16 rows, 1.15x at 64, slower
// at 128; below half a register of rows Eigen's matrix-vector path wins).
constexpr Index kSmallLinearMaxRows = 64;

// Whether linear_product() takes the few-rows kernel for m rows: the
// registry's set has one, and m is in the range where it was measured faster.
template <class Scalar>
inline bool uses_small_linear(Index m) {
  if (active_kernels<Scalar>().linear_small == nullptr) return false;
  constexpr Index lanes = 64 / Index(sizeof(Scalar));
  return m > lanes / 2 && m <= kSmallLinearMaxRows;
}

// C = A B^T (+ bias on every row, if `bias` is not null: an nn.Linear); C
// and A are row-major with contiguous rows (blocks of rows of row-major
// matrices qualify), B a row-major (n, k) matrix. C is overwritten. With a
// bias, the product accumulates onto C filled with the bias rows, which
// costs what its own zero fill costs, instead of a separate pass adding it.
// Views, not expression templates: one instantiation per Scalar, whatever
// blocks the callers pass.
template <class Scalar>
inline void linear_product(Eigen::Ref<RowMajorMatrix<Scalar>> C, const Eigen::Ref<const RowMajorMatrix<Scalar>>& A,
                           const Eigen::Ref<const RowMajorMatrix<Scalar>>& B, const Scalar* bias = nullptr) {
  using BiasRow = Eigen::Map<const Eigen::Matrix<Scalar, 1, Eigen::Dynamic>>;
  SYNATTN_ASSERT(B.cols() == A.cols() && C.rows() == A.rows() && C.cols() == B.rows());
  const Index m = A.rows(), n = B.rows(), k = A.cols();
  if (k > 0 && uses_small_linear<Scalar>(m)) {
    Scalar* panel = detail::thread_workspace<Scalar>(linear_small_workspace<Scalar>(k));
    active_kernels<Scalar>().linear_small(A.data(), A.outerStride(), B.data(), B.outerStride(), C.data(),
                                          C.outerStride(), m, n, k, panel);
    if (bias) C.rowwise() += BiasRow(bias, B.rows());
    return;
  }
  if (bias) {
    C.rowwise() = BiasRow(bias, B.rows());
    product<Scalar>(C, A, B, Transpose::rhs, Accumulate::add);
  } else {
    product<Scalar>(C, A, B, Transpose::rhs, Accumulate::overwrite);
  }
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_LINEAR_SMALL_HPP
