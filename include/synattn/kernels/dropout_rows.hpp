// synattn — inverted dropout of a block of attention rows, drawn from a
// counter-based RandomStream.
//
// The mask is never stored: element (i, j) is kept iff
// stream.keep(first + i * counter_stride + j, threshold), a pure function of
// the stream and the element's counter, so the backward pass draws the very
// same mask again and any thread may draw any row. One portable loop, which
// the compiler vectorises (see dropout_row). The Transformer layers of nn/
// draw their masks with dropout_row too.
#ifndef SYNATTN_KERNELS_DROPOUT_ROWS_HPP
#define SYNATTN_KERNELS_DROPOUT_ROWS_HPP

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../matrix.hpp"
#include "../util/random.hpp"

namespace synattn {
namespace kernels {

namespace detail {
// The unsigned integer as wide as Scalar.
template <class Scalar>
using Bits = typename std::conditional<sizeof(Scalar) == 4, std::uint32_t, std::uint64_t>::type;
}  // namespace detail

// dst[j] = kept(j) ? src[j] * scale : +0 for j < cols, where element j is
// kept iff stream.keep(first + j, threshold); dst may be src (in place).
// Dropped entries are exact +0 whatever src holds there, NaN and infinity
// included: the kept product's bits are ANDed with an all-ones or all-zero
// mask, a form GCC and Clang vectorise, keep()'s hash included (0.55 ns per
// float element on AVX2); `kept ? x * scale : 0` compiles as control flow
// (2.4 ns per element, measured with the earlier 64-bit hash).
template <class Scalar>
inline void dropout_row(Scalar* dst, const Scalar* src, Index cols, const RandomStream& stream, std::uint64_t first,
                        std::uint32_t threshold, Scalar scale) noexcept {
  using Bits = kernels::detail::Bits<Scalar>;
  static_assert(sizeof(Bits) == sizeof(Scalar), "a mask as wide as the scalar");
  for (Index j = 0; j < cols; ++j) {
    const Bits mask = Bits(0) - static_cast<Bits>(stream.keep(first + static_cast<std::uint64_t>(j), threshold));
    Scalar v = src[j] * scale;
    Bits b;
    std::memcpy(&b, &v, sizeof b);
    b &= mask;
    std::memcpy(&v, &b, sizeof b);
    dst[j] = v;
  }
}

// dst(i, j) = kept(i, j) ? src(i, j) * scale : +0 for i < rows, j < cols
// (row-major, leading dimensions ldd and lds; dst may be src: in place), row
// i drawn by dropout_row from counter first + i * counter_stride.
template <class Scalar>
inline void dropout_rows(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols,
                         const RandomStream& stream, std::uint64_t first, std::uint64_t counter_stride,
                         std::uint32_t threshold, Scalar scale) noexcept {
  for (Index i = 0; i < rows; ++i)
    dropout_row(dst + i * ldd, src + i * lds, cols, stream, first + static_cast<std::uint64_t>(i) * counter_stride,
                threshold, scale);
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_DROPOUT_ROWS_HPP
