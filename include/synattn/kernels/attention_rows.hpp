// synattn — the attention row kernels the layer calls, run in the
// instruction set the kernel registry (kernels/registry.hpp) chose at run time:
//
//   kernels/attention_rows_portable.hpp   any C++17 compiler, any CPU, and the
//                                         reference the others are tested
//                                         against (states the conventions and
//                                         RowBlock, the block every kernel takes)
//   kernels/attention_rows_algorithm.inc  the vector kernels, written once over
//                                         the per-ISA packet of
//   kernels/packet_avx2.hpp               AVX2 + FMA   (x86-64 GCC / Clang,
//   kernels/packet_avx512.hpp             AVX-512      any -march)
//   kernels/packet_neon.hpp               NEON (AArch64)
//   kernels/packet_emulated.hpp           16-lane packets in plain C++ (tests)
//
// Define SYNATTN_PORTABLE_KERNELS to build the portable version only (for
// comparisons; the layer's results then differ only by rounding), or set
// SYNATTN_KERNEL_ISA=portable to run it in any build.
#ifndef SYNATTN_KERNELS_ATTENTION_ROWS_HPP
#define SYNATTN_KERNELS_ATTENTION_ROWS_HPP

#include "attention_rows_portable.hpp"
#include "registry.hpp"

namespace synattn {
namespace kernels {

// The layer's entry points: the active ISA's kernels (active_isa(), which
// throws only on a bad SYNATTN_KERNEL_ISA at first use). The arguments and
// results are those of kernels/attention_rows_portable.hpp.
template <class Scalar>
inline void softmax_numerators(const RowBlock<Scalar>& block, Scalar* z, Index ld, Scalar* inv_sum,
                               Scalar* row_max = nullptr) {
  active_kernels<Scalar>().rows.softmax_numerators(block, z, ld, inv_sum, row_max);
}

// What softmax_numerators and a normalisation by its inv_sum give, bit for
// bit, recomputed in one pass from its row_max and inv_sum
// (kernels/attention_rows_portable.hpp states the contract).
template <class Scalar>
inline void probabilities(const RowBlock<Scalar>& block, Scalar* z, Index ld, const Scalar* row_max,
                          const Scalar* inv_sum) {
  active_kernels<Scalar>().rows.probabilities(block, z, ld, row_max, inv_sum);
}

template <class Scalar>
inline void softmax_backward(const RowBlock<Scalar>& block, const Scalar* p, Index ldp, Scalar* dz, Index ld,
                             Scalar* hist, Index stride, const Scalar* dots = nullptr) {
  active_kernels<Scalar>().rows.softmax_backward(block, p, ldp, dz, ld, hist, stride, dots);
}

// dst row i = src row i * scale[i]; with `stream`, possibly bypassing the
// caches (the layer copies its probabilities out with it).
template <class Scalar>
inline void scale_rows(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols,
                       const Scalar* scale, bool stream) {
  active_kernels<Scalar>().rows.scale_rows(dst, ldd, src, lds, rows, cols, scale, stream);
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_ATTENTION_ROWS_HPP
