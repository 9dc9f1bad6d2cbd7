// synattn — ASCII case: the one lower-casing of bytes that the corpus reader
// (data/tagging_corpus.hpp), the parser's vocabulary (parse/) and the
// tokenizer's word spans (text/) share. Only 'A'-'Z' change: every other
// byte, UTF-8 continuation bytes included, is kept, so valid UTF-8 stays
// valid. (Case beyond ASCII, where a tokenizer or scorer needs it, is
// text/utf8.hpp's append_lowercase.)
#ifndef SYNATTN_UTIL_ASCII_HPP
#define SYNATTN_UTIL_ASCII_HPP

#include <string>
#include <string_view>

namespace synattn {

constexpr char ascii_lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_ASCII_HPP
