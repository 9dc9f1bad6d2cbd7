// synattn — the attention row kernels the layer calls: the fastest version the
// compiler targets, chosen at compile time like Eigen chooses its packets.
//
//   kernels/attention_rows_portable.hpp  any C++17 compiler, any CPU (and the
//                                        reference the others are tested against)
//   kernels/attention_rows_avx512.hpp    AVX-512 F/BW/VL/DQ (e.g. -march=native
//                                        on Skylake-SP and newer, Zen 4)
//   kernels/attention_rows_avx2.hpp      AVX2 + FMA (e.g. -march=haswell, or
//                                        -march=native on Haswell and newer,
//                                        Zen 1-3), when AVX-512 is not targeted
//
// Define SYNATTN_PORTABLE_KERNELS to force the portable version (for
// comparisons; the layer's results then differ only by rounding).
#ifndef SYNATTN_KERNELS_ATTENTION_ROWS_HPP
#define SYNATTN_KERNELS_ATTENTION_ROWS_HPP

#include "attention_rows_portable.hpp"

#if !defined(SYNATTN_PORTABLE_KERNELS)
#include "attention_rows_avx2.hpp"
#include "attention_rows_avx512.hpp"
#endif

namespace synattn {
namespace kernels {

#if defined(SYNATTN_HAVE_AVX512_KERNELS) && !defined(SYNATTN_PORTABLE_KERNELS)
namespace active = avx512;
inline const char* active_isa() noexcept { return "avx512"; }
#elif defined(SYNATTN_HAVE_AVX2_KERNELS) && !defined(SYNATTN_PORTABLE_KERNELS)
namespace active = avx2;
inline const char* active_isa() noexcept { return "avx2"; }
#else
namespace active = portable;
inline const char* active_isa() noexcept { return "portable"; }
#endif

// See kernels/attention_rows_portable.hpp for the arguments and conventions.
template <class Scalar>
inline void softmax_numerators(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted,
                               int slots, Index rows, Index kend, Index causal_row0, Index n,
                               Scalar* inv_sum) noexcept {
  active::softmax_numerators<Scalar>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n, inv_sum);
}

template <class Scalar>
inline void softmax_backward(const Scalar* p, Index ldp, Scalar* dz, Index ld, const std::int8_t* buckets, Index ldb,
                             Index rows, Index kend, Index causal_row0, Index n, Scalar* hist, Index stride,
                             int slots, const Scalar* dots = nullptr) noexcept {
  active::softmax_backward<Scalar>(p, ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride, slots,
                                   dots);
}

// dst row i = src row i * scale[i]; with `stream`, possibly bypassing the
// caches (the layer copies its probabilities out with it).
template <class Scalar>
inline void scale_rows(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols,
                       const Scalar* scale, bool stream) noexcept {
  active::scale_rows<Scalar>(dst, ldd, src, lds, rows, cols, scale, stream);
}

// The normalised softmax of a block, in place (numerators, then each row
// times its inv_sum): for callers that need P itself in the block.
template <class Scalar>
inline void softmax_rows(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted, int slots,
                         Index rows, Index kend, Index causal_row0, Index n, Scalar* inv_sum) noexcept {
  softmax_numerators<Scalar>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n, inv_sum);
  for (Index i = 0; i < rows; ++i) {
    Scalar* row = z + i * ld;
    const Index ke = visible_keys(kend, causal_row0, i);
    const Scalar s = inv_sum[i];
    for (Index j = 0; j < ke; ++j) row[j] *= s;
  }
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_ATTENTION_ROWS_HPP
