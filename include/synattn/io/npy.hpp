// synattn — NumPy .npy arrays: reading and writing (format versions 1.0-3.0).
//
// Supported: float32, float64, int8, int16, int32, int64 and uint8, C order,
// little endian. Everything else (Fortran order, big endian, object and
// structured arrays, other dtypes, truncated data) is refused with a
// FormatError whose reason says what was expected and what was found.
//
// The reader never trusts the header with memory: the header and the data are
// read in geometrically growing chunks, so a file that claims a huge shape
// costs no more memory than the bytes it actually holds.
//
// Writing to a path replaces the file atomically (io/atomic_file.hpp): a
// failure (a full disk, say) leaves the previous file intact.
//
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//   "\x93NUMPY" major minor, header length (uint16 LE for 1.0, uint32 LE for
//   2.0/3.0), a Python dict literal {'descr': '<f8', 'fortran_order': False,
//   'shape': (2, 3), } padded with spaces and a final '\n' so that the data
//   starts on a 64-byte boundary, then the raw data.
#ifndef SYNATTN_IO_NPY_HPP
#define SYNATTN_IO_NPY_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../error.hpp"
#include "../util/checked_size.hpp"
#include "atomic_file.hpp"
#include "input_file.hpp"

// Data are moved between files and memory as raw bytes; that is only correct
// when the host stores numbers the way .npy files do.
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "synattn/io/npy.hpp supports little-endian hosts only (.npy data is little-endian raw bytes)"
#endif

namespace synattn {

static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4,
              "synattn/io/npy.hpp needs IEEE-754 binary32 float");
static_assert(std::numeric_limits<double>::is_iec559 && sizeof(double) == 8,
              "synattn/io/npy.hpp needs IEEE-754 binary64 double");

enum class NpyDType { Float32, Float64, Int8, Int16, Int32, Int64, UInt8 };

inline std::size_t npy_itemsize(NpyDType t) {
  switch (t) {
    case NpyDType::Int8:
    case NpyDType::UInt8: return 1;
    case NpyDType::Int16: return 2;
    case NpyDType::Float32:
    case NpyDType::Int32: return 4;
    case NpyDType::Float64:
    case NpyDType::Int64: return 8;
  }
  return 0;
}

// NumPy's name for the dtype ("float64").
inline const char* npy_dtype_name(NpyDType t) {
  switch (t) {
    case NpyDType::Float32: return "float32";
    case NpyDType::Float64: return "float64";
    case NpyDType::Int8: return "int8";
    case NpyDType::Int16: return "int16";
    case NpyDType::Int32: return "int32";
    case NpyDType::Int64: return "int64";
    case NpyDType::UInt8: return "uint8";
  }
  return "?";
}

// The header's 'descr' string NumPy writes for the dtype ("<f8", "|i1").
inline const char* npy_descr(NpyDType t) {
  switch (t) {
    case NpyDType::Float32: return "<f4";
    case NpyDType::Float64: return "<f8";
    case NpyDType::Int8: return "|i1";
    case NpyDType::Int16: return "<i2";
    case NpyDType::Int32: return "<i4";
    case NpyDType::Int64: return "<i8";
    case NpyDType::UInt8: return "|u1";
  }
  return "?";
}

namespace detail {

template <class T>
constexpr bool is_character_or_bool() {
  return std::is_same<T, bool>::value || std::is_same<T, char>::value ||
         std::is_same<T, wchar_t>::value || std::is_same<T, char16_t>::value ||
         std::is_same<T, char32_t>::value;
}

}  // namespace detail

// Whether T can be written as one of the NpyDType element types. Integers are
// matched by size and signedness, so both `long` and `long long` are int64.
template <class T>
constexpr bool is_npy_scalar() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same<U, float>::value || std::is_same<U, double>::value) {
    return true;
  } else if constexpr (std::is_integral<U>::value && !detail::is_character_or_bool<U>()) {
    return std::is_signed<U>::value
               ? (sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8)
               : sizeof(U) == 1;
  } else {
    return false;
  }
}

template <class T>
constexpr NpyDType npy_dtype_of() {
  static_assert(is_npy_scalar<T>(),
                "npy_dtype_of<T>: T must be float, double, a signed 8/16/32/64-bit integer or "
                "a 1-byte unsigned integer (not bool or a character type)");
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same<U, float>::value) return NpyDType::Float32;
  else if constexpr (std::is_same<U, double>::value) return NpyDType::Float64;
  else if constexpr (std::is_unsigned<U>::value) return NpyDType::UInt8;
  else if constexpr (sizeof(U) == 1) return NpyDType::Int8;
  else if constexpr (sizeof(U) == 2) return NpyDType::Int16;
  else if constexpr (sizeof(U) == 4) return NpyDType::Int32;
  else return NpyDType::Int64;
}

namespace detail {

// The limit NumPy itself uses (kMaxArrayBytes, util/checked_size.hpp): the
// product of the nonzero dimensions times the item size must fit in a signed
// pointer-sized integer. With it every row and column count also fits in
// Eigen::Index, even for shapes like (0, 2^62, 2^62).
constexpr std::size_t max_bytes = static_cast<std::size_t>(kMaxArrayBytes);

// A piece of untrusted text for an error message: non-printable bytes escaped,
// long strings cut, so a hostile header cannot flood or garble the message.
inline std::string printable(const std::string& s, std::size_t limit = 40) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (s.size() > limit) out += "...";
  return out;
}

// Reads up to `n` bytes into `out` (replacing its contents) and returns how
// many arrived. The buffer grows with what the stream really delivers, so an
// `n` taken from an unchecked header cannot trigger a huge allocation.
inline std::size_t read_up_to(std::istream& in, std::size_t n, std::vector<unsigned char>& out) {
  constexpr std::size_t first_chunk = std::size_t(1) << 16;
  out.clear();
  std::size_t got = 0;
  while (got < n) {
    const std::size_t want = std::min(n - got, std::max(first_chunk, got));
    out.resize(got + want);
    in.read(reinterpret_cast<char*>(out.data() + got), static_cast<std::streamsize>(want));
    const auto arrived = static_cast<std::size_t>(in.gcount());
    got += arrived;
    if (arrived < want) break;
  }
  out.resize(got);
  return got;
}

inline std::string number_text(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

template <class T>
std::string type_text() {
  if constexpr (std::is_floating_point<T>::value)
    return sizeof(T) == 4 ? "float32" : sizeof(T) == 8 ? "float64" : "long double";
  else
    return std::string(std::is_signed<T>::value ? "int" : "uint") + std::to_string(8 * sizeof(T));
}

template <class S>
std::string value_text(S v) {
  if constexpr (std::is_floating_point<S>::value)
    return number_text(static_cast<double>(v));
  else if constexpr (std::is_signed<S>::value)
    return std::to_string(static_cast<long long>(v));
  else
    return std::to_string(static_cast<unsigned long long>(v));
}

// Whether the value v of type S is within T's range, so that static_cast
// neither wraps, saturates nor is undefined:
//   integer -> integer   the value itself must be in [min T, max T];
//   float   -> integer   the value truncated toward zero must be, and NaN
//                        and infinities never are;
//   float   -> float     a finite value must stay finite (1e300 would be
//                        inf in float32); NaN and infinities carry over, and
//                        rounding (down to zero for tiny values) is allowed;
//   integer -> float     always (int64 into float32 rounds to nearest).
template <class T, class S>
bool fits(S v) {
  if constexpr (std::is_integral<S>::value && std::is_integral<T>::value) {
    // S and T are at most 64 bits, so comparing through the widest types of
    // the value's sign is exact and mixes no signed with unsigned operands.
    if constexpr (std::is_signed<S>::value) {
      if (v < 0)
        return std::is_signed<T>::value &&
               static_cast<long long>(v) >= static_cast<long long>(std::numeric_limits<T>::min());
    }
    return static_cast<unsigned long long>(v) <=
           static_cast<unsigned long long>(std::numeric_limits<T>::max());
  } else if constexpr (std::is_floating_point<S>::value && std::is_integral<T>::value) {
    // [lo, hi) bounds the truncated value; both bounds are powers of two,
    // hence exact in double.
    const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);
    const double lo = std::is_signed<T>::value ? -hi : 0.0;
    const double t = std::trunc(static_cast<double>(v));
    return t >= lo && t < hi;
  } else if constexpr (std::is_floating_point<S>::value && std::is_floating_point<T>::value) {
    return !std::isfinite(v) || std::isfinite(static_cast<T>(v));
  } else {
    (void)v;
    return true;
  }
}

// static_cast, except that a value outside T's range (see fits) is reported
// with its index and value instead of wrapping around or becoming inf.
template <class T, class S>
T convert_element(S v, std::size_t index, NpyDType from) {
  if (!fits<T>(v))
    throw Error("NpyArray: element " + std::to_string(index) + " of the " + npy_dtype_name(from) +
                " array is " + value_text(v) + ", which " + type_text<T>() + " cannot represent");
  return static_cast<T>(v);
}

}  // namespace detail

// One .npy array: its dtype, shape and raw little-endian C-order bytes.
class NpyArray {
 public:
  // An empty float64 array of shape (0,).
  NpyArray() = default;

  // Takes ownership of `bytes`, which must hold exactly the elements of
  // `shape` as little-endian C-order `dtype` values.
  NpyArray(NpyDType dtype, std::vector<std::size_t> shape, std::vector<unsigned char> bytes)
      : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {
    const std::size_t itemsize = npy_itemsize(dtype_);
    if (!checked_shape_elements(shape_, itemsize, size_))
      throw Error("NpyArray: shape " + shape_text(shape_) + " of " +
                  npy_dtype_name(dtype_) + " is too large");
    if (bytes_.size() != size_ * itemsize)
      throw Error("NpyArray: shape " + shape_text(shape_) + " of " +
                  npy_dtype_name(dtype_) + " needs " + std::to_string(size_ * itemsize) +
                  " bytes, got " + std::to_string(bytes_.size()));
  }

  NpyDType dtype() const noexcept { return dtype_; }
  const std::vector<std::size_t>& shape() const noexcept { return shape_; }
  std::size_t ndim() const noexcept { return shape_.size(); }
  // Element count (1 for a 0-d array).
  std::size_t size() const noexcept { return size_; }
  std::size_t itemsize() const noexcept { return npy_itemsize(dtype_); }
  std::size_t nbytes() const noexcept { return bytes_.size(); }
  // Raw little-endian C-order data (nbytes() bytes; not necessarily aligned
  // for the element type, so copy rather than reinterpret).
  const unsigned char* bytes() const noexcept { return bytes_.data(); }

  // The elements in C order, each static_cast to T. Throws Error naming the
  // element and its value when it is outside T's range (detail::fits):
  // no integer wraps around (int64 300 is not int8 44, uint8 255 is not
  // int8 -1), no finite float64 becomes inf in float32, and NaN or infinity
  // into an integer is refused. NaN and infinities into float types carry
  // over; rounding (float64 -> float32, int64 -> float32) is allowed.
  template <class T>
  std::vector<T> to_vector() const {
    std::vector<T> out(size_);
    convert_into(out.data());
    return out;
  }

  // The elements as a matrix: 0-d -> 1x1, 1-D (n) -> 1 x n, 2-D -> r x c,
  // N-D -> (product of the leading dimensions) x (last dimension).
  template <class T>
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> to_matrix() const {
    std::size_t rows = 1;
    std::size_t cols = 1;
    if (!shape_.empty()) {
      cols = shape_.back();
      // No overflow: the constructor and the reader bound the product of the
      // nonzero dimensions, and a zero dimension makes rows zero.
      for (std::size_t i = 0; i + 1 < shape_.size(); ++i) rows *= shape_[i];
    }
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> out(
        static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
    convert_into(out.data());
    return out;
  }

  // Writes size() converted elements to `out` (same rules as to_vector).
  template <class T>
  void convert_into(T* out) const {
    static_assert(std::is_arithmetic<T>::value && !std::is_same<T, bool>::value,
                  "NpyArray conversions need an arithmetic, non-bool element type");
    switch (dtype_) {
      case NpyDType::Float32: convert_from<float>(out); break;
      case NpyDType::Float64: convert_from<double>(out); break;
      case NpyDType::Int8: convert_from<std::int8_t>(out); break;
      case NpyDType::Int16: convert_from<std::int16_t>(out); break;
      case NpyDType::Int32: convert_from<std::int32_t>(out); break;
      case NpyDType::Int64: convert_from<std::int64_t>(out); break;
      case NpyDType::UInt8: convert_from<std::uint8_t>(out); break;
    }
  }

 private:
  template <class S, class T>
  void convert_from(T* out) const {
    const unsigned char* p = bytes_.data();
    for (std::size_t i = 0; i < size_; ++i) {
      S v;
      std::memcpy(&v, p + i * sizeof(S), sizeof(S));
      out[i] = detail::convert_element<T>(v, i, dtype_);
    }
  }

  NpyDType dtype_ = NpyDType::Float64;
  std::vector<std::size_t> shape_{0};
  std::size_t size_ = 0;
  std::vector<unsigned char> bytes_;
};

namespace detail {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::size_t> shape;
};

// A strict parser for the subset of Python literal syntax NumPy headers use:
// a dict with exactly the keys 'descr' (a string), 'fortran_order' (True or
// False) and 'shape' (a tuple of non-negative integers), in any order, with
// any whitespace and an optional trailing comma.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_space();
    expect('{', "at the start of the header dict");
    for (;;) {
      skip_space();
      if (eat('}')) break;
      if (peek() != '\'' && peek() != '"') fail("expected a quoted key or '}', found " + found());
      const std::string key = string_literal();
      skip_space();
      expect(':', "after key '" + printable(key) + "'");
      skip_space();
      if (key == "descr") {
        mark(seen_descr, key);
        h.descr = descr_value();
      } else if (key == "fortran_order") {
        mark(seen_fortran, key);
        h.fortran_order = bool_value(key);
      } else if (key == "shape") {
        mark(seen_shape, key);
        h.shape = shape_value();
      } else {
        fail("unexpected key '" + printable(key) +
             "' (expected 'descr', 'fortran_order' and 'shape')");
      }
      skip_space();
      if (eat(',')) continue;
      if (eat('}')) break;
      fail("expected ',' or '}' after the value of '" + key + "', found " + found());
    }
    skip_space();
    if (pos_ != s_.size())
      fail("expected only padding after the closing '}', found " + found());
    if (!seen_descr) fail("missing key 'descr'");
    if (!seen_fortran) fail("missing key 'fortran_order'");
    if (!seen_shape) fail("missing key 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const {
    throw FormatError(name_, 0, "malformed header: " + reason);
  }

  int peek() const { return pos_ < s_.size() ? static_cast<unsigned char>(s_[pos_]) : -1; }

  std::string found() const {
    if (pos_ >= s_.size()) return "the end of the header";
    return "'" + printable(std::string(1, s_[pos_])) + "' at offset " + std::to_string(pos_);
  }

  void skip_space() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c, const std::string& where) {
    if (!eat(c)) fail("expected '" + std::string(1, c) + "' " + where + ", found " + found());
  }

  void mark(bool& seen, const std::string& key) const {
    if (seen) fail("duplicate key '" + key + "'");
    seen = true;
  }

  // 'text' or "text"; escapes never occur in the strings NumPy writes.
  std::string string_literal() {
    const char quote = s_[pos_++];
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '\\' || c < 0x20 || c >= 0x7f)
        fail("unexpected character " + found() + " in a string");
      ++pos_;
    }
    if (pos_ >= s_.size()) fail("unterminated string starting at offset " + std::to_string(start - 1));
    return s_.substr(start, pos_++ - start);
  }

  std::string descr_value() {
    if (peek() == '[') throw FormatError(name_, 0, "structured dtypes are not supported (descr is a list of fields)");
    if (peek() != '\'' && peek() != '"') fail("expected 'descr' to be a string, found " + found());
    return string_literal();
  }

  bool bool_value(const std::string& key) {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("expected True or False for '" + key + "', found " + found());
  }

  std::vector<std::size_t> shape_value() {
    if (!eat('(')) fail("expected 'shape' to be a tuple, found " + found());
    std::vector<std::size_t> dims;
    skip_space();
    if (eat(')')) return dims;
    for (;;) {
      dims.push_back(dimension(dims.size()));
      skip_space();
      if (eat(',')) {
        skip_space();
        if (eat(')')) return dims;
        continue;
      }
      if (eat(')')) {
        // Python: "(3)" is the integer 3, not a tuple.
        if (dims.size() == 1) fail("expected 'shape' to be a tuple, found a parenthesised integer (write (n,))");
        return dims;
      }
      fail("expected ',' or ')' in 'shape', found " + found());
    }
  }

  std::size_t dimension(std::size_t index) {
    const std::size_t start = pos_;
    if (peek() < '0' || peek() > '9')
      fail("expected a non-negative integer for dimension " + std::to_string(index) +
           " of 'shape', found " + found());
    std::size_t value = 0;
    bool too_large = false;
    while (peek() >= '0' && peek() <= '9') {
      const std::size_t digit = static_cast<std::size_t>(s_[pos_] - '0');
      if (value > (max_bytes - digit) / 10) too_large = true;
      if (!too_large) value = value * 10 + digit;
      ++pos_;
    }
    if (s_[start] == '0' && pos_ - start > 1)
      fail("dimension " + std::to_string(index) + " of 'shape' has a leading zero");
    if (too_large)
      fail("dimension " + std::to_string(index) + " of 'shape' (" +
           printable(s_.substr(start, pos_ - start)) + ") is too large");
    // Python 2 wrote long integers with an L suffix, e.g. (3L, 4L).
    if (peek() == 'L' || peek() == 'l') ++pos_;
    return value;
  }

  const std::string& s_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

inline NpyDType parse_descr(const std::string& descr, const std::string& name) {
  auto refuse = [&](const std::string& reason) -> NpyDType { throw FormatError(name, 0, reason); };
  const std::string shown = printable(descr);
  if (descr.empty()) return refuse("malformed header: 'descr' is empty");
  const char order = descr[0];
  const bool has_order = order == '<' || order == '>' || order == '|' || order == '=';
  const std::string body = has_order ? descr.substr(1) : descr;
  if (!body.empty() && body[0] == 'O') return refuse("object arrays are not supported");

  struct Known {
    const char* body;
    NpyDType dtype;
  };
  static const Known known[] = {
      {"f4", NpyDType::Float32}, {"f8", NpyDType::Float64}, {"i1", NpyDType::Int8},
      {"i2", NpyDType::Int16},   {"i4", NpyDType::Int32},   {"i8", NpyDType::Int64},
      {"u1", NpyDType::UInt8},
  };
  for (const Known& k : known) {
    if (body != k.body) continue;
    // Byte order is meaningless for one-byte items (NumPy writes '|').
    if (npy_itemsize(k.dtype) == 1 || order == '<') return k.dtype;
    if (order == '>') return refuse("big-endian dtype '" + shown + "' is not supported");
    return refuse("dtype '" + shown + "' does not state its byte order (expected '<" +
                  std::string(k.body) + "')");
  }
  return refuse("dtype '" + shown +
                "' is not supported (expected one of '<f4', '<f8', '|i1', '<i2', '<i4', "
                "'<i8', '|u1')");
}

// The header text NumPy's np.save writes (numpy/lib/format.py,
// _write_array_header and _wrap_header), so that our files are byte for byte
// what NumPy produces.
inline std::string header_bytes(NpyDType dtype, const std::vector<std::size_t>& shape) {
  std::string dict = std::string("{'descr': '") + npy_descr(dtype) +
                     "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  // NumPy leaves room for the first dimension to grow to 21 digits in place.
  if (!shape.empty()) {
    const std::size_t digits = std::to_string(shape[0]).size();
    if (digits < 21) dict.append(21 - digits, ' ');
  }
  const std::size_t text = dict.size() + 1;  // + the final '\n'
  for (int major = 1; major <= 2; ++major) {
    const std::size_t prefix = 8 + (major == 1 ? 2 : 4);
    // Always at least one space of padding: a full 64 when already aligned.
    const std::size_t pad = 64 - (prefix + text) % 64;
    const std::size_t length = text + pad;
    if (major == 1 && length > 0xffff) continue;
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t b = 0; b < prefix - 8; ++b) out += static_cast<char>((length >> (8 * b)) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  throw Error("write_npy: header for shape " + shape_text(shape) + " is too long");
}

// Element count of the array to write, after checking the arguments. Runs
// before a file is opened, so a bad call leaves an existing file untouched.
inline std::size_t check_write(const std::string& name, NpyDType dtype,
                               const std::vector<std::size_t>& shape, const void* data) {
  std::size_t count = 0;
  if (!checked_shape_elements(shape, npy_itemsize(dtype), count))
    throw Error("write_npy: " + name + ": shape " + shape_text(shape) + " of " +
                npy_dtype_name(dtype) + " is too large");
  if (count > 0 && data == nullptr)
    throw Error("write_npy: " + name + ": data is null but shape " + shape_text(shape) +
                " has " + std::to_string(count) + " elements");
  return count;
}

inline void write_raw(std::ostream& out, const std::string& name, NpyDType dtype,
                      const std::vector<std::size_t>& shape, const void* data) {
  const std::size_t count = check_write(name, dtype, shape, data);
  const std::string header = header_bytes(dtype, shape);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (count > 0)
    out.write(static_cast<const char*>(data),
              static_cast<std::streamsize>(count * npy_itemsize(dtype)));
  if (!out) throw RuntimeError("write_npy: " + name + ": write failed");
}

// The file is replaced atomically (io/atomic_file.hpp): a full disk or any
// other failure leaves the previous file as it was and no temporary behind.
inline void write_file(const std::string& path, NpyDType dtype, const std::vector<std::size_t>& shape,
                       const void* data) {
  const std::size_t count = check_write(path, dtype, shape, data);
  const std::string header = header_bytes(dtype, shape);
  const std::string_view body(static_cast<const char*>(data), count * npy_itemsize(dtype));
  write_file_atomically(path, {header, count > 0 ? body : std::string_view()}, "write_npy");
}

}  // namespace detail

// Reads one array from `in`, leaving the stream just after its data (so
// several arrays written one after another can be read in turn). `name`
// labels error messages.
inline NpyArray read_npy(std::istream& in, const std::string& name) {
  auto refuse = [&](const std::string& reason) { throw FormatError(name, 0, reason); };
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

  std::vector<unsigned char> buf;
  std::size_t got = detail::read_up_to(in, 6, buf);
  // A stream that failed (a directory opened as a file, an I/O error) is not
  // an empty one.
  if (got == 0 && in.bad()) refuse("read error before the magic string (the stream failed)");
  if (got == 0) refuse("not a .npy file (empty input)");
  if (std::memcmp(buf.data(), magic, got) != 0) refuse("not a .npy file (bad magic)");
  if (got < 6)
    refuse("header truncated: expected the 6-byte magic string, found " + std::to_string(got) +
           " bytes");

  got = detail::read_up_to(in, 2, buf);
  if (got < 2) refuse("header truncated: expected the 2-byte format version after the magic string");
  const unsigned major = buf[0], minor = buf[1];
  if (major < 1 || major > 3 || minor != 0)
    refuse("unsupported version " + std::to_string(major) + "." + std::to_string(minor) +
           " (expected 1.0, 2.0 or 3.0)");

  const std::size_t length_bytes = major == 1 ? 2 : 4;
  got = detail::read_up_to(in, length_bytes, buf);
  if (got < length_bytes)
    refuse("header truncated: expected a " + std::to_string(length_bytes) +
           "-byte header length, found " + std::to_string(got) + " bytes");
  std::size_t header_length = 0;
  for (std::size_t b = 0; b < length_bytes; ++b) header_length |= std::size_t(buf[b]) << (8 * b);

  got = detail::read_up_to(in, header_length, buf);
  if (got < header_length)
    refuse("header truncated: expected " + std::to_string(header_length) + " bytes, found " +
           std::to_string(got));
  // Versions 1.0/2.0 are latin-1 and 3.0 is UTF-8; the parser accepts only
  // ASCII, which all three encode identically.
  const std::string text(buf.begin(), buf.end());
  const detail::NpyHeader header = detail::HeaderParser(text, name).parse();

  const NpyDType dtype = detail::parse_descr(header.descr, name);
  if (header.fortran_order) refuse("Fortran-order arrays are not supported");
  std::size_t count = 0;
  if (!checked_shape_elements(header.shape, npy_itemsize(dtype), count))
    refuse("malformed header: shape " + shape_text(header.shape) + " of " +
           npy_dtype_name(dtype) + " is too large");

  const std::size_t nbytes = count * npy_itemsize(dtype);
  std::vector<unsigned char> data;
  got = detail::read_up_to(in, nbytes, data);
  if (got < nbytes)
    refuse("data truncated: expected " + std::to_string(nbytes) + " bytes, found " +
           std::to_string(got));
  return NpyArray(dtype, header.shape, std::move(data));
}

// Reads a .npy file; anything after the array's data is an error.
inline NpyArray read_npy(const std::string& path) {
  std::ifstream in = open_input_file(path);
  NpyArray array = read_npy(in, path);
  if (in.peek() != std::ifstream::traits_type::eof())
    throw FormatError(path, 0,
                     "unexpected data after the array (the header's shape accounts for " +
                         std::to_string(array.nbytes()) + " data bytes)");
  return array;
}

// Writes a C-order array of shape `shape` whose elements start at `data`.
template <class T>
void write_npy(std::ostream& out, const T* data, const std::vector<std::size_t>& shape) {
  detail::write_raw(out, "<stream>", npy_dtype_of<T>(), shape, data);
}

// Writes the array to the file `path`, atomically: on failure the previous
// file is left as it was.
template <class T>
void write_npy(const std::string& path, const T* data, const std::vector<std::size_t>& shape) {
  detail::write_file(path, npy_dtype_of<T>(), shape, data);
}

inline void write_npy(std::ostream& out, const NpyArray& array) {
  detail::write_raw(out, "<stream>", array.dtype(), array.shape(), array.bytes());
}

inline void write_npy(const std::string& path, const NpyArray& array) {
  detail::write_file(path, array.dtype(), array.shape(), array.bytes());
}

// Writes a matrix or array expression as a 2-D (rows, cols) array in C order,
// whatever its storage order (a vector is written as (n, 1) or (1, n)).
template <class Derived>
void write_npy(std::ostream& out, const Eigen::DenseBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> c = m.derived();
  write_npy(out, c.data(),
            {static_cast<std::size_t>(c.rows()), static_cast<std::size_t>(c.cols())});
}

template <class Derived>
void write_npy(const std::string& path, const Eigen::DenseBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> c = m.derived();
  write_npy(path, c.data(),
            {static_cast<std::size_t>(c.rows()), static_cast<std::size_t>(c.cols())});
}

}  // namespace synattn

#endif  // SYNATTN_IO_NPY_HPP
