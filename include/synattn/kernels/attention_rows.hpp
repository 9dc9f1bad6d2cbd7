// synattn — the attention row kernels the layer calls, run in the
// instruction set the kernel registry (kernels/registry.hpp) chose at run time:
//
//   kernels/attention_rows_portable.hpp   any C++17 compiler, any CPU, and the
//                                         reference the others are tested
//                                         against (states the conventions)
//   kernels/attention_rows_algorithm.inc  the vector kernels, written once over
//                                         per-ISA primitives:
//   kernels/attention_rows_avx2.hpp       AVX2 + FMA   (x86-64 GCC / Clang,
//   kernels/attention_rows_avx512.hpp     AVX-512      any -march)
//   kernels/attention_rows_neon.hpp       NEON (AArch64)
//   kernels/attention_rows_emulated.hpp   16-lane packets in plain C++ (tests)
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

// One ISA's row kernels (see kernels/attention_rows_portable.hpp for the
// arguments): what the fuzzer and tests call to compare ISAs side by side.
template <class Scalar>
struct RowKernels {
  void (*softmax_numerators)(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted,
                             int slots, Index rows, Index kend, Index causal_row0, Index n, Scalar* inv_sum,
                             Scalar* row_max) noexcept;
  void (*probabilities)(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted, int slots,
                        Index rows, Index kend, Index causal_row0, Index n, const Scalar* row_max,
                        const Scalar* inv_sum) noexcept;
  void (*softmax_backward)(const Scalar* p, Index ldp, Scalar* dz, Index ld, const std::int8_t* buckets, Index ldb,
                           Index rows, Index kend, Index causal_row0, Index n, Scalar* hist, Index stride, int slots,
                           const Scalar* dots) noexcept;
  void (*scale_rows)(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols,
                     const Scalar* scale, bool stream) noexcept;
};

namespace detail {

// `isa`'s kernels, which must be compiled (else the portable ones).
template <class Scalar>
inline const RowKernels<Scalar>& kernels_of(KernelIsa isa) noexcept {
  static constexpr RowKernels<Scalar> portable_kernels{
      &portable::softmax_numerators<Scalar>, &portable::probabilities<Scalar>, &portable::softmax_backward<Scalar>,
      &portable::scale_rows<Scalar>};
#if defined(SYNATTN_HAVE_AVX2_KERNELS)
  static constexpr RowKernels<Scalar> avx2_kernels{&avx2::softmax_numerators<Scalar>, &avx2::probabilities<Scalar>,
                                                   &avx2::softmax_backward<Scalar>, &avx2::scale_rows<Scalar>};
  if (isa == KernelIsa::avx2) return avx2_kernels;
#endif
#if defined(SYNATTN_HAVE_AVX512_KERNELS)
  static constexpr RowKernels<Scalar> avx512_kernels{&avx512::softmax_numerators<Scalar>,
                                                     &avx512::probabilities<Scalar>,
                                                     &avx512::softmax_backward<Scalar>, &avx512::scale_rows<Scalar>};
  if (isa == KernelIsa::avx512) return avx512_kernels;
#endif
#if defined(SYNATTN_HAVE_NEON_KERNELS)
  static constexpr RowKernels<Scalar> neon_kernels{&neon::softmax_numerators<Scalar>, &neon::probabilities<Scalar>,
                                                   &neon::softmax_backward<Scalar>, &neon::scale_rows<Scalar>};
  if (isa == KernelIsa::neon) return neon_kernels;
#endif
  (void)isa;
  return portable_kernels;
}

}  // namespace detail

// `isa`'s row kernels; throws synattn::Error naming it if this build or CPU
// cannot run it.
template <class Scalar>
inline const RowKernels<Scalar>& row_kernels(KernelIsa isa) {
  const std::string why = detail::cannot_run(isa);
  if (!why.empty()) throw Error(std::string("kernels::row_kernels(") + to_string(isa) + "): " + why);
  return detail::kernels_of<Scalar>(isa);
}

// The layer's entry points: the active ISA's kernels (active_isa(), which
// throws only on a bad SYNATTN_KERNEL_ISA at first use).
template <class Scalar>
inline void softmax_numerators(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted,
                               int slots, Index rows, Index kend, Index causal_row0, Index n, Scalar* inv_sum,
                               Scalar* row_max = nullptr) {
  detail::kernels_of<Scalar>(active_isa())
      .softmax_numerators(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n, inv_sum, row_max);
}

// What softmax_numerators and a normalisation by its inv_sum give, bit for
// bit, recomputed in one pass from its row_max and inv_sum
// (kernels/attention_rows_portable.hpp states the contract).
template <class Scalar>
inline void probabilities(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted, int slots,
                          Index rows, Index kend, Index causal_row0, Index n, const Scalar* row_max,
                          const Scalar* inv_sum) {
  detail::kernels_of<Scalar>(active_isa())
      .probabilities(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n, row_max, inv_sum);
}

template <class Scalar>
inline void softmax_backward(const Scalar* p, Index ldp, Scalar* dz, Index ld, const std::int8_t* buckets, Index ldb,
                             Index rows, Index kend, Index causal_row0, Index n, Scalar* hist, Index stride,
                             int slots, const Scalar* dots = nullptr) {
  detail::kernels_of<Scalar>(active_isa())
      .softmax_backward(p, ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride, slots, dots);
}

// dst row i = src row i * scale[i]; with `stream`, possibly bypassing the
// caches (the layer copies its probabilities out with it).
template <class Scalar>
inline void scale_rows(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols,
                       const Scalar* scale, bool stream) {
  detail::kernels_of<Scalar>(active_isa()).scale_rows(dst, ldd, src, lds, rows, cols, scale, stream);
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_ATTENTION_ROWS_HPP
