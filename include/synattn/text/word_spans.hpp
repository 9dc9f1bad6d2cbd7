// synattn — where a multiword token's words lie in its text.
//
// One rule for every producer of Documents (the CoNLL-U reader, the
// multiword-token expander), so their spans agree: see Word::span in
// document.hpp. Each word but the last takes the longest prefix of what is
// left of the token that its form matches (ASCII letters match regardless of
// case: "Don't" -> "Do" "n't"), cut back to a whole code point; the last word
// takes the rest. Forms that are not in the text ("del" -> "de" "el") thus
// still get consecutive, non-overlapping pieces that cover the token.
#ifndef SYNATTN_TEXT_WORD_SPANS_HPP
#define SYNATTN_TEXT_WORD_SPANS_HPP

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../util/ascii.hpp"
#include "document.hpp"
#include "utf8.hpp"

namespace synattn {
namespace text {

namespace detail {

// Bytes of `rest` that `form` matches from the start, ending on a code point
// boundary of `rest` (valid UTF-8).
inline std::size_t matched_prefix(std::string_view rest, std::string_view form) noexcept {
  std::size_t n = 0;
  while (n < rest.size() && n < form.size() && ascii_lower(rest[n]) == ascii_lower(form[n])) ++n;
  while (n > 0 && n < rest.size() && (static_cast<unsigned char>(rest[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace detail

// Sets the spans of token's words, words[token.first_word, + word_count),
// from token.span and token.form (the token's text). Error if the token's
// words are not in `words`.
inline void assign_word_spans(const Token& token, std::vector<Word>& words) {
  if (token.first_word < 0 || token.word_count < 1 ||
      static_cast<std::size_t>(token.first_word) + static_cast<std::size_t>(token.word_count) > words.size())
    throw Error("assign_word_spans: token " + std::string(token.form) + " covers words [" +
                std::to_string(token.first_word) + ", " +
                std::to_string(token.first_word + token.word_count) + ") of a sentence of " +
                std::to_string(words.size()) + " words");
  const std::string_view form(token.form);
  std::size_t byte = 0;        // into form
  int code_point = 0;          // into form
  for (int k = 0; k < token.word_count; ++k) {
    Word& w = words[static_cast<std::size_t>(token.first_word + k)];
    const std::string_view rest = form.substr(byte);
    const std::size_t take = k + 1 == token.word_count ? rest.size()
                                                        : text::detail::matched_prefix(rest, w.form);
    const int cps = static_cast<int>(count_code_points(rest.substr(0, take)));
    w.span.bytes = {token.span.bytes.begin + static_cast<int>(byte),
                    token.span.bytes.begin + static_cast<int>(byte + take)};
    w.span.code_points = {token.span.code_points.begin + code_point,
                          token.span.code_points.begin + code_point + cps};
    byte += take;
    code_point += cps;
  }
}

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_WORD_SPANS_HPP
