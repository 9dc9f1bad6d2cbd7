// synattn — what every ISA's copy of the blocked GEMM (gemm_blocked.inc)
// shares: the per-thread packing buffers and two small helpers. Compiled for
// the build's own target (no target pragma), so every copy may call it.
#ifndef SYNATTN_KERNELS_GEMM_SUPPORT_HPP
#define SYNATTN_KERNELS_GEMM_SUPPORT_HPP

#include <algorithm>
#include <cstddef>
#include <memory>
#include <new>

#include "../matrix.hpp"

namespace synattn {
namespace kernels {
namespace detail {

inline constexpr Index round_up(Index x, Index to) noexcept { return (x + to - 1) / to * to; }

// C (m, n) = beta C; beta == 0 writes zeros without reading C (BLAS: C may
// hold NaN). What a product with k = 0 leaves.
template <class Scalar>
inline void scale_matrix(Index m, Index n, Scalar beta, Scalar* C, Index ldc) noexcept {
  for (Index i = 0; i < m; ++i) {
    Scalar* row = C + i * ldc;
    if (beta == Scalar(0))  // a loop, not std::fill: GCC 12 -O3 false -Wstringop-overflow
      for (Index j = 0; j < n; ++j) row[j] = Scalar(0);
    else
      for (Index j = 0; j < n; ++j) row[j] *= beta;
  }
}

// A 64-byte aligned buffer that only grows.
template <class Scalar>
struct AlignedBuffer {
  struct Free {
    void operator()(Scalar* p) const noexcept { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<Scalar[], Free> data;
  Index capacity = 0;

  Scalar* reserve(Index size) {
    if (size > capacity) {
      data.reset(static_cast<Scalar*>(::operator new[](static_cast<std::size_t>(size) * sizeof(Scalar),
                                                        std::align_val_t(64))));
      capacity = size;
    }
    return data.get();
  }
};

// Per-thread packing buffer `Slot` (0: A block, 1: B block) of at least
// `size` scalars. Thread-local, so the layer's parallel tasks never share
// one; sized by the largest block the thread has packed, so after the first
// call of each shape nothing is allocated. (OpenMP keeps its threads, so the
// buffers live as long as the pool.)
template <class Scalar, int Slot>
inline Scalar* gemm_workspace(Index size) {
  thread_local AlignedBuffer<Scalar> buffer;
  return buffer.reserve(size);
}

}  // namespace detail
}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_GEMM_SUPPORT_HPP
