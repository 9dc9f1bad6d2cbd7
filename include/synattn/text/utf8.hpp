// synattn — UTF-8: the library's one place for checking, decoding, repairing
// and encoding it.
//
// What is valid is RFC 3629 (Unicode Table 3-7): shortest forms only, no
// UTF-16 surrogates (U+D800-U+DFFF), nothing above U+10FFFF. Readers refuse
// anything else with a message naming the first bad byte and why
// (check_utf8, decode_utf8); a program that would rather carry on can
// replace_invalid_utf8 first, which puts U+FFFD where each maximal bad
// subpart was (Unicode's "best practice": the count of U+FFFD is the same
// in every conforming decoder, so offsets agree with other tools).
#ifndef SYNATTN_TEXT_UTF8_HPP
#define SYNATTN_TEXT_UTF8_HPP

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace synattn {
namespace text {

// "0x7f": a byte as messages show it.
inline std::string hex_byte(unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[c >> 4] + kHex[c & 15];
}

// "U+00A0": a code point as messages show it (at least four hex digits).
inline std::string code_point_text(char32_t cp) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string digits;
  for (unsigned long v = cp; v > 0 || digits.size() < 4; v >>= 4) digits.insert(digits.begin(), kHex[v & 15]);
  return "U+" + digits;
}

namespace detail {

// Length of the sequence a lead byte starts (0: not a lead byte) and the
// range of its second byte, which is where overlong forms, surrogates and
// values above U+10FFFF show (Table 3-7).
struct Lead {
  std::size_t length = 0;
  unsigned char lo = 0x80, hi = 0xBF;
};

inline Lead lead(unsigned char c) noexcept {
  Lead l;
  if (c < 0x80) {
    l.length = 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    l.length = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    l.length = 3;
    if (c == 0xE0) l.lo = 0xA0;
    if (c == 0xED) l.hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    l.length = 4;
    if (c == 0xF0) l.lo = 0x90;
    if (c == 0xF4) l.hi = 0x8F;
  }
  return l;
}

// Bytes of s from i that form a valid sequence (its length) or, when they do
// not, the maximal subpart of one (returned negated: -1 for a byte that
// starts nothing, -2 for a good lead byte followed by a bad one, ...).
inline long sequence_at(std::string_view s, std::size_t i) noexcept {
  const Lead l = lead(static_cast<unsigned char>(s[i]));
  if (l.length == 0) return -1;
  for (std::size_t k = 1; k < l.length; ++k) {
    if (i + k == s.size()) return -static_cast<long>(k);
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? l.lo : 0x80) || b > (k == 1 ? l.hi : 0xBF)) return -static_cast<long>(k);
  }
  return static_cast<long>(l.length);
}

}  // namespace detail

// Checks `s` as UTF-8. Returns true if valid; otherwise false with `at` the
// 0-based offset of the first byte of the bad sequence and `why` the reason.
// `end` names what cuts a sequence short at the end of `s` in the message
// ("the end of the line" for a reader that checks a line at a time).
inline bool check_utf8(std::string_view s, std::size_t& at, std::string& why,
                       std::string_view end = "the end of the line") {
  for (std::size_t i = 0; i < s.size();) {
    const long n = text::detail::sequence_at(s, i);
    if (n > 0) {
      i += static_cast<std::size_t>(n);
      continue;
    }
    at = i;
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = text::detail::lead(c).length;
    if (len == 0) {
      why = "byte " + hex_byte(c) +
            (c <= 0xBF ? " is a continuation byte without a lead byte"
             : c <= 0xC1 ? " starts an overlong encoding (never valid UTF-8)"
                         : " never appears in UTF-8");
      return false;
    }
    const std::size_t k = static_cast<std::size_t>(-n);  // the bad byte's place in the sequence
    const std::string seq = "a " + std::to_string(len) + "-byte sequence starting with " + hex_byte(c);
    if (i + k == s.size()) {
      why = seq + " is cut short by " + std::string(end);
      return false;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80)
      why = seq + " is cut short (" + hex_byte(b) + " is not a continuation byte)";
    else if (c == 0xED)
      why = "bytes " + hex_byte(c) + " " + hex_byte(b) + " encode a UTF-16 surrogate (U+D800-U+DFFF)";
    else if (c == 0xF4)
      why = "bytes " + hex_byte(c) + " " + hex_byte(b) + " encode a code point above U+10FFFF";
    else
      why = "bytes " + hex_byte(c) + " " + hex_byte(b) + " start an overlong encoding";
    return false;
  }
  return true;
}

// Invalid UTF-8 in a named input: a FormatError "NAME:LINE: invalid UTF-8 at
// byte offset N (byte C of the line): why", with N (0-based, in the whole
// input) also given as byte_offset().
class Utf8Error : public FormatError {
 public:
  Utf8Error(std::string name, std::size_t line, std::size_t byte_offset, std::size_t column,
            const std::string& why)
      : FormatError(std::move(name), line,
                   "invalid UTF-8 at byte offset " + std::to_string(byte_offset) + " (byte " +
                       std::to_string(column) + " of the line): " + why),
        byte_offset_(byte_offset) {}

  std::size_t byte_offset() const noexcept { return byte_offset_; }

 private:
  std::size_t byte_offset_;
};

// Throws Utf8Error naming `name` unless `s` is valid UTF-8.
inline void require_utf8(std::string_view s, const std::string& name) {
  std::size_t at = 0;
  std::string why;
  if (check_utf8(s, at, why, "the end of the input")) return;
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < at; ++i)
    if (s[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  throw Utf8Error(name, line, at, at - line_start + 1, why);
}

// The code point at byte i of valid UTF-8 `s`; i moves past it. (For text
// already checked: no validation here.)
inline char32_t next_code_point(std::string_view s, std::size_t& i) noexcept {
  const auto c = static_cast<unsigned char>(s[i++]);
  if (c < 0x80) return c;
  const std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  char32_t cp = c & (0x7F >> len);
  for (std::size_t k = 1; k < len && i < s.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i++]) & 0x3F);
  return cp;
}

// Code points in valid UTF-8 `s`: the bytes that are not continuation bytes.
inline std::size_t count_code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (const char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

struct DecodedText {
  std::vector<char32_t> code_points;
  // code_points.size() + 1 entries: the byte offset where each code point
  // starts, the last one the total byte count (so code point k is bytes
  // [byte_offset[k], byte_offset[k + 1])).
  std::vector<int> byte_offset;
};

// `s` decoded; throws Utf8Error naming `name`, the line and byte offset of
// the first bad sequence and why it is bad; Error if `s` is too long for the
// int offsets.
inline DecodedText decode_utf8(std::string_view s, const std::string& name) {
  if (s.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw Error("decode_utf8: " + name + " has " + std::to_string(s.size()) +
                " bytes, more than int offsets can hold");
  require_utf8(s, name);
  DecodedText out;
  out.code_points.reserve(s.size());
  out.byte_offset.reserve(s.size() + 1);
  for (std::size_t i = 0; i < s.size();) {
    out.byte_offset.push_back(static_cast<int>(i));
    out.code_points.push_back(next_code_point(s, i));
  }
  out.byte_offset.push_back(static_cast<int>(s.size()));
  return out;
}

// Appends code point `cp` as UTF-8; Error for a surrogate or a value above
// U+10FFFF (which have no UTF-8 form).
inline void encode_utf8(char32_t cp, std::string& out) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    throw Error("encode_utf8: " + code_point_text(cp) +
                " is a surrogate or above U+10FFFF and has no UTF-8 form");
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// `s` with each maximal subpart of an ill-formed sequence replaced by U+FFFD
// (Unicode 3.9, "U+FFFD Substitution of Maximal Subparts"): "\xE2\x82("
// gives one U+FFFD then "(", "\xC0\xAF" gives two. Valid text comes back
// unchanged.
inline std::string replace_invalid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const long n = text::detail::sequence_at(s, i);
    if (n > 0) {
      out.append(s.substr(i, static_cast<std::size_t>(n)));
      i += static_cast<std::size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<std::size_t>(-n);
    }
  }
  return out;
}

// Unicode White_Space (PropList.txt): what separates tokens and what a
// "whitespace run" is made of, wherever text is folded or split.
inline bool is_space(char32_t c) noexcept {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// Lower case as Python's str.lower gives it, for the scripts most treebanks
// use: ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic, Armenian and
// fullwidth Latin; other characters are their own lower case. Appends, since
// one character can become two (U+0130, I with dot above, becomes i and a
// combining dot). The CoNLL 2018 scorer (conll18_eval.hpp) compares forms
// so, and the multiword expander (multiword.hpp) keys its dictionary so.
inline void append_lowercase(char32_t c, std::u32string& out) {
  auto odd_even = [](char32_t x, bool upper_even) { return ((x & 1) == 0) == upper_even ? x + 1 : x; };
  if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7)) {
    c += 0x20;
  } else if (c == 0x130) {  // I with dot above -> i + combining dot, as Python's
    out += U'i';
    c = 0x307;
  } else if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
    c = odd_even(c, true);
  } else if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) {
    c = odd_even(c, false);
  } else if (c == 0x178) {
    c = 0xFF;
  } else if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) {  // Greek (every sigma to σ)
    c += 0x20;
  } else if (c == 0x386) {
    c = 0x3AC;
  } else if (c >= 0x388 && c <= 0x38A) {
    c += 0x25;
  } else if (c == 0x38C) {
    c = 0x3CC;
  } else if (c == 0x38E || c == 0x38F) {
    c += 0x3F;
  } else if (c >= 0x400 && c <= 0x40F) {  // Cyrillic
    c += 0x50;
  } else if (c >= 0x410 && c <= 0x42F) {
    c += 0x20;
  } else if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) {
    c = odd_even(c, true);
  } else if (c >= 0x531 && c <= 0x556) {  // Armenian
    c += 0x30;
  } else if (c >= 0xFF21 && c <= 0xFF3A) {  // fullwidth Latin
    c += 0x20;
  }
  out += c;
}

inline std::u32string lowercase(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) append_lowercase(c, out);
  return out;
}

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_UTF8_HPP
