// synattn — numbers read from a file's metadata, parsed whole and
// range-checked, the error naming the file, the field and the value.
//
// std::stoi("-5x") is -5, std::stoi("abc") throws a bare "stoi",
// std::stod("nan") is NaN that compares false with everything: a resumed
// run with `train.best_las = nan` trained on and never saved its model.
// Every number of a file's metadata goes through here: a checkpoint's step
// and its optimiser's step count (train/checkpoint.hpp: parser and tagger
// checkpoints alike), a model's options (parse/parser_model.hpp, through
// detail::checked_integer, io/json_fields.hpp) and the parse program's training state.
//
//   whole_number(text, lo, hi, out)  text is decimal digits with an optional
//                                    leading '-', nothing else (no spaces, no
//                                    '+', no fraction), and lies in [lo, hi];
//   real_number(text, lo, hi, out)   text is one finite decimal number as
//                                    "%.17g" writes it, in [lo, hi];
//   metadata_integer / metadata_real the same, throwing FormatError
//                                    "FILE: KEY is 'TEXT', expected ...".
#ifndef SYNATTN_UTIL_METADATA_NUMBER_HPP
#define SYNATTN_UTIL_METADATA_NUMBER_HPP

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "../error.hpp"

namespace synattn {

// True (out set) when `text` is a whole decimal number in [lo, hi].
inline bool whole_number(const std::string& text, long long lo, long long hi, long long& out) noexcept {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) i = 1;
  if (i == text.size()) return false;
  // Accumulated as a negative number, whose range includes LLONG_MIN.
  long long v = 0;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    const int digit = text[i] - '0';
    if (v < (std::numeric_limits<long long>::min() + digit) / 10) return false;
    v = v * 10 - digit;
  }
  if (!negative) {
    if (v == std::numeric_limits<long long>::min()) return false;
    v = -v;
  }
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

// True (out set) when `text` is one finite decimal number in [lo, hi]
// (strtod's syntax less leading spaces, hex, "inf" and "nan").
inline bool real_number(const std::string& text, double lo, double hi, double& out) noexcept {
  if (text.empty()) return false;
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) || !(v >= lo && v <= hi)) return false;
  out = v;
  return true;
}

namespace detail {
inline std::string real_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
inline std::string integer_expectation(long long lo, long long hi) {
  if (lo == 0) return "a non-negative integer of at most " + std::to_string(hi);
  return "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}
}  // namespace detail

// "WHAT is 'TEXT', expected ..." for a refused integer.
inline std::string integer_refusal(const std::string& what, const std::string& text, long long lo, long long hi) {
  return what + " is '" + text + "', expected " + detail::integer_expectation(lo, hi);
}

// `text`, the value of metadata field `key` of file `source`, as a whole
// number in [lo, hi]; else FormatError "SOURCE: __metadata__ 'KEY' is 'TEXT',
// expected ...".
inline long long metadata_integer(const std::string& source, const std::string& key, const std::string& text,
                                  long long lo, long long hi) {
  long long v = 0;
  if (!whole_number(text, lo, hi, v))
    throw FormatError(source, 0, integer_refusal("__metadata__ '" + key + "'", text, lo, hi));
  return v;
}

// The same for a finite real number in [lo, hi].
inline double metadata_real(const std::string& source, const std::string& key, const std::string& text, double lo,
                            double hi) {
  double v = 0;
  if (!real_number(text, lo, hi, v))
    throw FormatError(source, 0,
                     "__metadata__ '" + key + "' is '" + text + "', expected a finite number in [" +
                         detail::real_text(lo) + ", " + detail::real_text(hi) + "]");
  return v;
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_METADATA_NUMBER_HPP
