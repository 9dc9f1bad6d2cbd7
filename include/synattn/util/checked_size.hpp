// synattn — sizes computed from outside numbers without overflow.
//
// A shape read from a file, or rows x cols handed to a store, is multiplied
// and added before anything is allocated or indexed. Computed naively, a
// product that overflows wraps (or is undefined, for signed types) and a
// small allocation is then written past its end. Every such product in the
// library goes through these helpers: the readers (.npy, safetensors), the
// parameter store, and the layout checks of the optimisers, clipping,
// checkpoints and the progressive strength.
#ifndef SYNATTN_UTIL_CHECKED_SIZE_HPP
#define SYNATTN_UTIL_CHECKED_SIZE_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace synattn {

namespace detail {
template <class T>
constexpr bool negative(T v) noexcept {
  if constexpr (std::is_signed<T>::value) {
    return v < 0;
  } else {
    (void)v;
    return false;
  }
}
}  // namespace detail

// The largest byte count of one array: it must fit in a signed pointer-sized
// integer (NumPy's rule, also safetensors'), so every dimension of an array
// that exists also fits in Eigen::Index.
constexpr std::uint64_t kMaxArrayBytes = static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());

// out = a * b for non-negative a and b; false (out unchanged) when a or b is
// negative or the product exceeds `limit`.
template <class T>
constexpr bool checked_multiply(T a, T b, T& out, T limit = std::numeric_limits<T>::max()) noexcept {
  static_assert(std::is_integral<T>::value, "checked_multiply takes integers");
  if (detail::negative(a) || detail::negative(b)) return false;
  if (a != 0 && b > limit / a) return false;
  out = a * b;
  return true;
}

// out = a + b for non-negative a and b; false (out unchanged) when a or b is
// negative or the sum exceeds `limit`.
template <class T>
constexpr bool checked_add(T a, T b, T& out, T limit = std::numeric_limits<T>::max()) noexcept {
  static_assert(std::is_integral<T>::value, "checked_add takes integers");
  if (detail::negative(a) || detail::negative(b) || a > limit || b > limit - a) return false;
  out = a + b;
  return true;
}

// Bytes of an array of `shape` with `itemsize`-byte elements: 0 when a
// dimension is 0, else their product times itemsize. False when the product
// of the nonzero dimensions times itemsize exceeds kMaxArrayBytes (the array
// cannot exist), so that a shape like (0, 2^62, 2^62) is refused too.
template <class Shape>
bool checked_shape_bytes(const Shape& shape, std::uint64_t itemsize, std::uint64_t& bytes) noexcept {
  std::uint64_t n = itemsize;
  bool zero = false;
  for (const auto dim : shape) {
    if (detail::negative(dim)) return false;
    const auto d = static_cast<std::uint64_t>(dim);
    if (d == 0) {
      zero = true;
      continue;
    }
    if (!checked_multiply<std::uint64_t>(n, d, n, kMaxArrayBytes)) return false;
  }
  bytes = zero ? 0 : n;
  return true;
}

// Element count of an array of `shape` with `itemsize`-byte elements (1 for
// 0-d, 0 when a dimension is 0). False when checked_shape_bytes is: the
// array cannot exist.
template <class Shape, class Count>
bool checked_shape_elements(const Shape& shape, std::uint64_t itemsize, Count& count) noexcept {
  static_assert(std::is_integral<Count>::value && std::is_unsigned<Count>::value,
                "checked_shape_elements counts in an unsigned integer");
  std::uint64_t bytes = 0;
  if (itemsize == 0 || !checked_shape_bytes(shape, itemsize, bytes)) return false;
  count = static_cast<Count>(bytes / itemsize);  // <= kMaxArrayBytes: fits size_t where the array can exist
  return true;
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_CHECKED_SIZE_HPP
