// synattn — the safetensors format: reading and writing named tensors.
//
// Needs nlohmann-json (Debian nlohmann-json3-dev): link the CMake target
// synattn::checkpoint (synattn + nlohmann_json::nlohmann_json), which exists
// when synattn was configured with SYNATTN_CHECKPOINT=AUTO (the default) and
// nlohmann-json was found. The umbrella header includes it for programs that
// link synattn::checkpoint (SYNATTN_WITH_CHECKPOINT).
//
// Format (https://huggingface.co/docs/safetensors, the reference crate's
// tensor.rs): an 8-byte little-endian unsigned header length N; N bytes of
// UTF-8 JSON, an object mapping each tensor name to
//   {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
// plus an optional "__metadata__" object of string -> string; then the data,
// each tensor little-endian in C order at [begin, end) counted from the byte
// after the header. The header may be padded with trailing spaces.
//
// The parser treats the file as hostile; it refuses, with a FormatError
// "SOURCE: reason" naming the tensor: a header length past the end of the
// file or above the reference's 100 MB limit; a header not starting with '{',
// invalid JSON (or UTF-8), duplicate names, nesting deeper than the format's;
// entries missing dtype/shape/data_offsets or having other keys; unknown
// dtypes; shapes that are not non-negative integers or overflow; offsets
// outside the data, reversed, or not spanning dtype size x element count
// bytes; tensors that overlap, leave a gap, or leave bytes unused at the end
// (the reference crate's "every byte belongs to exactly one tensor"). It
// allocates nothing beyond the bytes the file really holds.
//
// The writer pads the header to a multiple of 8 bytes and lays the tensors
// out by decreasing item size, then name, so every tensor is aligned to its
// item size (as the reference crate does).
#ifndef SYNATTN_IO_SAFETENSORS_HPP
#define SYNATTN_IO_SAFETENSORS_HPP

#if !__has_include(<nlohmann/json.hpp>)
// (Linking synattn::checkpoint in CMake puts it there; Debian: nlohmann-json3-dev.)
#error "synattn's safetensors and checkpoint headers need nlohmann-json: link synattn::checkpoint"
#endif
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../error.hpp"
#include "../util/checked_size.hpp"
#include "atomic_file.hpp"
#include "input_file.hpp"

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "synattn/io/safetensors.hpp supports little-endian hosts only (safetensors data is little-endian raw bytes)"
#endif

namespace synattn {

enum class SafetensorsDType { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

inline const char* safetensors_dtype_name(SafetensorsDType t) noexcept {
  switch (t) {
    case SafetensorsDType::BOOL: return "BOOL";
    case SafetensorsDType::U8: return "U8";
    case SafetensorsDType::I8: return "I8";
    case SafetensorsDType::F8_E5M2: return "F8_E5M2";
    case SafetensorsDType::F8_E4M3: return "F8_E4M3";
    case SafetensorsDType::I16: return "I16";
    case SafetensorsDType::U16: return "U16";
    case SafetensorsDType::F16: return "F16";
    case SafetensorsDType::BF16: return "BF16";
    case SafetensorsDType::I32: return "I32";
    case SafetensorsDType::U32: return "U32";
    case SafetensorsDType::F32: return "F32";
    case SafetensorsDType::F64: return "F64";
    case SafetensorsDType::I64: return "I64";
    case SafetensorsDType::U64: return "U64";
  }
  return "?";
}

inline std::size_t safetensors_dtype_size(SafetensorsDType t) noexcept {
  switch (t) {
    case SafetensorsDType::BOOL:
    case SafetensorsDType::U8:
    case SafetensorsDType::I8:
    case SafetensorsDType::F8_E5M2:
    case SafetensorsDType::F8_E4M3: return 1;
    case SafetensorsDType::I16:
    case SafetensorsDType::U16:
    case SafetensorsDType::F16:
    case SafetensorsDType::BF16: return 2;
    case SafetensorsDType::I32:
    case SafetensorsDType::U32:
    case SafetensorsDType::F32: return 4;
    case SafetensorsDType::F64:
    case SafetensorsDType::I64:
    case SafetensorsDType::U64: return 8;
  }
  return 0;
}

// The dtype called `name` ("F32"); false when there is none.
inline bool parse_safetensors_dtype(const std::string& name, SafetensorsDType& out) noexcept {
  for (int i = 0; i <= static_cast<int>(SafetensorsDType::U64); ++i) {
    const auto t = static_cast<SafetensorsDType>(i);
    if (name == safetensors_dtype_name(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

template <class T>
constexpr SafetensorsDType safetensors_dtype_of() {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "safetensors_dtype_of<T>: T must be float (F32) or double (F64)");
  return std::is_same<T, float>::value ? SafetensorsDType::F32 : SafetensorsDType::F64;
}

// One tensor: dtype, shape (outermost first; [] is a scalar) and raw bytes.
// IEEE 754 binary16 ("F16") from and to float. to_half rounds to nearest,
// ties to even; magnitudes from 65520 up become infinity, NaN stays NaN.
inline std::uint16_t float_to_half(float f) noexcept {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7C00u | (a > 0x7F800000u ? 0x200u : 0u));
  if (a >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65536: overflow
  if (a < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), m * 2^-24
    float v;
    std::memcpy(&v, &a, sizeof v);
    const auto m = static_cast<std::uint32_t>(std::nearbyint(v * 16777216.0f));  // exact product; rounds to even
    return static_cast<std::uint16_t>(sign | m);
  }
  std::uint32_t h = (((a >> 23) - 112u) << 10) | ((a >> 13) & 0x3FFu);
  const std::uint32_t rest = a & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right (up to inf)
  return static_cast<std::uint16_t>(sign | h);
}
inline float half_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  std::uint32_t x;
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);
    std::memcpy(&x, &v, sizeof x);
    x |= sign;
  } else if (e == 31) {
    x = sign | 0x7F800000u | (m << 13);
  } else {
    x = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

struct SafeTensor {
  SafetensorsDType dtype = SafetensorsDType::F32;
  std::vector<std::uint64_t> shape;
  std::vector<unsigned char> bytes;  // little-endian, C order

  // Product of the shape (1 for a scalar).
  std::uint64_t elements() const noexcept {
    std::uint64_t n = 1;
    for (const std::uint64_t d : shape) n *= d;
    return n;
  }
  bool is_floating() const noexcept {
    return dtype == SafetensorsDType::F32 || dtype == SafetensorsDType::F64 || dtype == SafetensorsDType::F16;
  }

  // A float (F32) or double (F64) tensor holding data[0, count) bit for bit.
  template <class T>
  static SafeTensor from(const T* data, std::vector<std::uint64_t> shape) {
    SafeTensor t;
    t.dtype = safetensors_dtype_of<T>();
    t.shape = std::move(shape);
    t.bytes.resize(t.checked_bytes("SafeTensor::from"));
    if (!t.bytes.empty()) std::memcpy(t.bytes.data(), data, t.bytes.size());
    return t;
  }

  // An F16 tensor of data[0, count) rounded to half precision (float_to_half);
  // false in `finite` when a finite value overflowed to infinity.
  static SafeTensor half_from(const float* data, std::vector<std::uint64_t> shape, bool* finite = nullptr) {
    SafeTensor t;
    t.dtype = SafetensorsDType::F16;
    t.shape = std::move(shape);
    t.bytes.resize(t.checked_bytes("SafeTensor::half_from"));
    const std::size_t n = t.bytes.size() / 2;
    bool ok = true;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t h = float_to_half(data[i]);
      if ((h & 0x7C00u) == 0x7C00u && std::isfinite(data[i])) ok = false;
      t.bytes[2 * i] = static_cast<unsigned char>(h & 0xFFu);
      t.bytes[2 * i + 1] = static_cast<unsigned char>(h >> 8);
    }
    if (finite) *finite = ok;
    return t;
  }

  // Element i of an F32, F64 or F16 tensor as T (a cast when the types differ).
  template <class T>
  T get(std::size_t i) const {
    if (dtype == SafetensorsDType::F16) {
      const auto h = static_cast<std::uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
      return static_cast<T>(half_to_float(h));
    }
    if (dtype == SafetensorsDType::F32) {
      float v;
      std::memcpy(&v, bytes.data() + i * sizeof v, sizeof v);
      return static_cast<T>(v);
    }
    if (dtype == SafetensorsDType::F64) {
      double v;
      std::memcpy(&v, bytes.data() + i * sizeof v, sizeof v);
      return static_cast<T>(v);
    }
    throw Error(std::string("SafeTensor::get: dtype ") + safetensors_dtype_name(dtype) + " is not F32, F64 or F16");
  }

  // Bytes of dtype x shape (checked_shape_bytes, util/checked_size.hpp);
  // throws Error naming `fn` for a shape no tensor can have.
  std::size_t checked_bytes(const char* fn) const {
    std::uint64_t n = 0;
    if (!checked_shape_bytes(shape, safetensors_dtype_size(dtype), n))
      throw Error(std::string(fn) + ": shape " + shape_text(shape) + " of " + safetensors_dtype_name(dtype) +
                  " is too large to exist");
    return static_cast<std::size_t>(n);
  }
};

struct SafetensorsFile {
  std::map<std::string, SafeTensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"
};

namespace detail {

// The reference implementation's limit (safetensors/src/tensor.rs).
constexpr std::uint64_t max_header_bytes = 100000000;

// The header's JSON, read in linear time and bounded memory. nlohmann's
// parse callback, which an earlier reader used, rescans the enclosing object
// at the end of every nested object (quadratic in the number of tensors:
// 40,000 took 14 s), and a whole-header DOM costs about ten times the
// header's bytes (a 17 MB header of 200,000 tensors peaked at 223 MB). This
// SAX handler builds nlohmann's DOM of one top-level entry at a time (a
// tensor's dtype, shape and offsets, or the metadata), hands it to
// `on_entry` (which may throw; the exception is carried out of the parse),
// and drops it. It refuses, as it reads, nesting deeper than a shape array
// (depth 3: header, entry, shape), so a hostile header of nested brackets
// costs no memory beyond its bytes.
class HeaderSax {
 public:
  using json = nlohmann::json;
  using Entry = std::function<void(const std::string& name, const json& value)>;
  explicit HeaderSax(Entry on_entry) : on_entry_(std::move(on_entry)) {}

  bool null() { return scalar([&] { return dom_->null(); }); }
  bool boolean(bool v) { return scalar([&] { return dom_->boolean(v); }); }
  bool number_integer(json::number_integer_t v) { return scalar([&] { return dom_->number_integer(v); }); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar([&] { return dom_->number_unsigned(v); }); }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    return scalar([&] { return dom_->number_float(v, text); });
  }
  bool string(json::string_t& v) { return scalar([&] { return dom_->string(v); }); }
  bool binary(json::binary_t& v) { return scalar([&] { return dom_->binary(v); }); }
  bool start_object(std::size_t elements) {
    if (depth_ == 0) return ++depth_, true;  // the header itself
    return enter() && dom_->start_object(elements);
  }
  bool end_object() {
    if (--depth_ == 0) return true;
    return dom_->end_object() && (depth_ > 1 || finish_entry());
  }
  bool start_array(std::size_t elements) {
    if (depth_ == 0) return not_an_object();
    return enter() && dom_->start_array(elements);
  }
  bool end_array() {
    --depth_;
    return dom_->end_array() && (depth_ > 1 || finish_entry());
  }
  bool key(json::string_t& name) {
    if (depth_ == 2 && !fields_.insert(name).second) {
      // A JSON object keeps the last of two equal keys: a tensor's second
      // 'shape' or __metadata__'s second 'step' would win in silence.
      problem = (name_ == "__metadata__" ? std::string("__metadata__ '") + name + "'"
                                         : "tensor '" + name_ + "': field '" + name + "'") +
                " appears twice in the header";
      return false;
    }
    if (depth_ > 1) return dom_->key(name);
    name_ = name;  // a new top-level entry
    fields_.clear();
    entry_ = json();
    dom_.emplace(entry_, false);
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    json_error = e.what();
    return false;
  }

  std::string problem;       // a refusal of ours (nesting, not an object)
  std::string json_error;    // nlohmann's message for text that is not JSON
  std::exception_ptr error;  // what on_entry threw

 private:
  template <class F>
  bool scalar(F&& forward) {
    if (depth_ == 0) return not_an_object();
    return forward() && (depth_ > 1 || finish_entry());
  }
  bool enter() {
    if (++depth_ > 3) {
      problem = "header nests deeper than the format allows";
      return false;
    }
    return true;
  }
  bool not_an_object() {
    problem = "header is not a JSON object";
    return false;
  }
  bool finish_entry() {
    try {
      on_entry_(name_, entry_);
    } catch (...) {
      error = std::current_exception();
      return false;
    }
    entry_ = json();  // the entry's memory goes back now, not at the end
    return true;
  }
  Entry on_entry_;
  std::optional<nlohmann::detail::json_sax_dom_parser<json>> dom_;
  json entry_;
  std::string name_;
  std::set<std::string> fields_;  // the current entry's keys
  int depth_ = 0;
};

}  // namespace detail

// The file's bytes. Throws synattn::Error for a tensor whose byte count does
// not match dtype x shape, or a name that is not valid UTF-8.
inline std::string serialize_safetensors(const SafetensorsFile& file) {
  using nlohmann::json;
  namespace d = detail;
  std::vector<const std::pair<const std::string, SafeTensor>*> order;
  for (const auto& kv : file.tensors) {
    std::uint64_t want = 0;
    if (!checked_shape_bytes(kv.second.shape, safetensors_dtype_size(kv.second.dtype), want) ||
        want != kv.second.bytes.size())
      throw Error("serialize_safetensors: tensor '" + kv.first + "' has " + std::to_string(kv.second.bytes.size()) +
                  " bytes, dtype " + safetensors_dtype_name(kv.second.dtype) + " x shape " +
                  shape_text(kv.second.shape) + " needs " + std::to_string(want));
    if (kv.first == "__metadata__") throw Error("serialize_safetensors: a tensor may not be called '__metadata__'");
    order.push_back(&kv);
  }
  // Larger items first, so every tensor starts on a multiple of its item size.
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return safetensors_dtype_size(a->second.dtype) > safetensors_dtype_size(b->second.dtype);
  });
  json header = json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::uint64_t offset = 0;
  for (const auto* kv : order) {
    const std::uint64_t end = offset + kv->second.bytes.size();
    header[kv->first] = {{"dtype", safetensors_dtype_name(kv->second.dtype)},
                         {"shape", kv->second.shape},
                         {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception& e) {
    throw Error(std::string("serialize_safetensors: a tensor name or metadata string is not valid UTF-8 (") +
                e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts on an 8-byte boundary
  std::string out;
  out.reserve(8 + text.size() + static_cast<std::size_t>(offset));
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += text;
  for (const auto* kv : order)
    out.append(reinterpret_cast<const char*>(kv->second.bytes.data()), kv->second.bytes.size());
  return out;
}

// Parses a whole safetensors file held in memory; `source` names it in errors.
inline SafetensorsFile parse_safetensors(const void* data, std::size_t size, const std::string& source = "<memory>") {
  using nlohmann::json;
  namespace d = detail;
  const auto fail = [&](const std::string& reason) { return FormatError(source, 0, reason); };
  const unsigned char* bytes = static_cast<const unsigned char*>(data);
  if (size < 8)
    throw fail("file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > d::max_header_bytes)
    throw fail("header length " + std::to_string(n) + " exceeds the " + std::to_string(d::max_header_bytes) +
               "-byte limit");
  if (n > size - 8)
    throw fail("header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size - 8) +
               " bytes follow the length)");
  const char* text = reinterpret_cast<const char*>(bytes + 8);
  if (n == 0 || text[0] != '{') throw fail("header does not start with '{'");
  // JSON has no raw NUL (inside a string it is written \u0000); one here
  // would end the text for a C-string reader, hiding what follows it.
  if (const void* nul = std::memchr(text, '\0', static_cast<std::size_t>(n)))
    throw fail("header holds a NUL byte at offset " +
               std::to_string(static_cast<const char*>(nul) - text) + " (JSON text has none)");

  const std::uint64_t data_size = size - 8 - n;
  const unsigned char* base = bytes + 8 + n;
  SafetensorsFile out;
  struct Span {
    std::uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;
  bool has_metadata = false;
  const auto add_entry = [&](const std::string& name, const json& entry) {
    if (name == "__metadata__") {
      if (has_metadata) throw fail("'__metadata__' appears twice in the header");
      has_metadata = true;
      if (!entry.is_object()) throw fail("__metadata__ is not an object of strings");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
          throw fail("__metadata__ entry '" + m.key() + "' is a " + m.value().type_name() + ", expected a string");
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      return;
    }
    if (out.tensors.count(name) != 0) throw fail("tensor '" + name + "' appears twice in the header");
    const std::string what = "tensor '" + name + "': ";
    if (!entry.is_object()) throw fail(what + "entry is a " + std::string(entry.type_name()) + ", expected an object");
    for (auto k = entry.begin(); k != entry.end(); ++k)
      if (k.key() != "dtype" && k.key() != "shape" && k.key() != "data_offsets")
        throw fail(what + "unexpected key '" + k.key() + "' (expected dtype, shape, data_offsets)");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) throw fail(what + "missing '" + key + "'");
    SafeTensor t;
    const json& dtype = entry["dtype"];
    if (!dtype.is_string()) throw fail(what + "dtype is a " + std::string(dtype.type_name()) + ", expected a string");
    if (!parse_safetensors_dtype(dtype.get<std::string>(), t.dtype))
      throw fail(what + "unknown dtype '" + dtype.get<std::string>() + "'");
    const json& shape = entry["shape"];
    if (!shape.is_array()) throw fail(what + "shape is not an array");
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (!shape[i].is_number_unsigned())
        throw fail(what + "shape entry " + std::to_string(i) + " is " + shape[i].dump() +
                   ", expected a non-negative integer");
      t.shape.push_back(shape[i].get<std::uint64_t>());
    }
    std::uint64_t need = 0;
    if (!checked_shape_bytes(t.shape, safetensors_dtype_size(t.dtype), need))
      throw fail(what + "shape " + shape_text(t.shape) + " of " + safetensors_dtype_name(t.dtype) +
                 " is too large to exist");
    const json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      throw fail(what + "data_offsets is " + offsets.dump() + ", expected [begin, end] of non-negative integers");
    const std::uint64_t begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    if (begin > end || end > data_size)
      throw fail(what + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 "] out of range (the data holds " + std::to_string(data_size) + " bytes)");
    if (end - begin != need)
      throw fail(what + "data_offsets span " + std::to_string(end - begin) + " bytes, dtype " +
                 safetensors_dtype_name(t.dtype) + " x shape " + shape_text(t.shape) + " needs " +
                 std::to_string(need));
    t.bytes.assign(base + begin, base + end);
    auto placed = out.tensors.emplace(name, std::move(t));
    spans.push_back(Span{begin, end, &placed.first->first});
  };
  d::HeaderSax sax(add_entry);
  const bool parsed = json::sax_parse(text, text + n, &sax);
  if (sax.error) std::rethrow_exception(sax.error);
  if (!sax.problem.empty()) throw fail(sax.problem);
  if (!parsed) throw fail("header is not valid JSON: " + sax.json_error);
  // Every data byte belongs to exactly one tensor.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  const std::string* previous = nullptr;
  for (const Span& s : spans) {
    if (s.begin < at)
      throw fail("tensors '" + *previous + "' and '" + *s.name + "' overlap (bytes from " + std::to_string(s.begin) +
                 " to " + std::to_string(at) + ")");
    if (s.begin > at)
      throw fail("bytes [" + std::to_string(at) + ", " + std::to_string(s.begin) + ") of the data belong to no tensor");
    at = s.end;
    previous = s.name;
  }
  if (at != data_size)
    throw fail("the data holds " + std::to_string(data_size) + " bytes but the tensors end at " + std::to_string(at));
  return out;
}

// Reads and parses `path`; errors are FormatError("PATH: reason").
inline SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in = open_input_file(path);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0) throw FormatError(path, 0, "cannot determine the file size");
  std::vector<char> bytes(static_cast<std::size_t>(size));
  if (size > 0 && !in.read(bytes.data(), size)) throw FormatError(path, 0, "read failed");
  return parse_safetensors(bytes.data(), bytes.size(), path);
}

// Writes `file` to `path` atomically (io/atomic_file.hpp: a unique
// temporary file, synced, renamed into place), so an interrupted or failed
// save never leaves a truncated file under the final name, nor a temporary
// file beside it.
inline void save_safetensors(const std::string& path, const SafetensorsFile& file) {
  write_file_atomically(path, serialize_safetensors(file), "save_safetensors");
}

inline void save_safetensors(const std::string& path, const std::map<std::string, SafeTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {}) {
  SafetensorsFile file;
  file.tensors = tensors;
  file.metadata = metadata;
  save_safetensors(path, file);
}

}  // namespace synattn

#endif  // SYNATTN_IO_SAFETENSORS_HPP
