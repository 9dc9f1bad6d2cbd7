// synattn — one ISA's kernels of every family, as the registry dispatches
// them: a table of function pointers that each kernels/packet_<isa>.hpp
// fills (its `kernel_table<Scalar>`) and kernels/registry.hpp picks by the
// active KernelIsa, the one dispatch of every family (row kernels, GEMM,
// few-rows projection).
#ifndef SYNATTN_KERNELS_KERNEL_TABLE_HPP
#define SYNATTN_KERNELS_KERNEL_TABLE_HPP

#include <cstdint>

#include "../matrix.hpp"
#include "attention_rows_portable.hpp"

namespace synattn {
namespace kernels {

// One ISA's row kernels (kernels/attention_rows_portable.hpp states their
// contracts; the vector ISAs' come from attention_rows_algorithm.inc).
template <class Scalar>
struct RowKernels {
  void (*softmax_numerators)(const RowBlock<Scalar>& block, Scalar* z, Index ld, Scalar* inv_sum,
                             Scalar* row_max) noexcept;
  void (*probabilities)(const RowBlock<Scalar>& block, Scalar* z, Index ld, const Scalar* row_max,
                        const Scalar* inv_sum) noexcept;
  void (*softmax_backward)(const RowBlock<Scalar>& block, const Scalar* p, Index ldp, Scalar* dz, Index ld,
                           Scalar* hist, Index stride, const Scalar* dots) noexcept;
  void (*scale_rows)(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols, const Scalar* scale,
                     bool stream) noexcept;
  // out = 2^in (float) or e^in (double), flushed, for in <= 0: the ISA's exp
  // primitive over an array, for tests; null for portable (Eigen's exp).
  void (*exp_flushed)(const Scalar* in, Scalar* out, Index count) noexcept;
};

// One ISA's kernels of every family: its row kernels, its GEMM
// (kernels/gemm.hpp's contract, the arguments checked and the transposes as
// two flags) and its few-rows projection (linear_small_algorithm.inc), null
// where the set has none (projections then go through kernels::product).
template <class Scalar>
struct KernelTable {
  RowKernels<Scalar> rows;
  void (*gemm)(bool trans_a, bool trans_b, Index m, Index n, Index k, Scalar alpha, const Scalar* A, Index lda,
               const Scalar* B, Index ldb, Scalar beta, Scalar* C, Index ldc);
  void (*linear_small)(const Scalar* A, Index lda, const Scalar* B, Index ldb, Scalar* C, Index ldc, Index m, Index n,
                       Index k, Scalar* panel) noexcept;
};

// Number of scalars linear_small needs as `panel` workspace (64-byte
// aligned): k rows of one 64-byte register, the widest packet.
template <class Scalar>
constexpr Index linear_small_workspace(Index k) noexcept {
  return k * (64 / Index(sizeof(Scalar)));
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_KERNEL_TABLE_HPP
