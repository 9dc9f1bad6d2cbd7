// synattn — "tokens" input for the parser: pre-tokenised text, one sentence a line.
//
// Each line is one sentence; its tokens are separated by spaces and tabs, and
// leading and trailing ones are ignored. Only those two separate tokens:
// other Unicode spaces (U+00A0, U+3000, ...) stay inside a token, as a
// tokeniser may have put them there on purpose. A line of only spaces and
// tabs is skipped, not a sentence (an empty sentence cannot be parsed, and
// blank lines between paragraphs are common), but is still counted, so an
// error names the line as an editor shows it.
//
// The result is a ConlluDocument without trees, so text and CoNLL-U input
// reach the parser and its writer by one road; each sentence becomes
//   # sent_id = N                 (N = 1, 2, ...: sentences, not lines)
//   # text = TOKENS JOINED BY ONE SPACE
//   ID <tab> FORM <tab> _ <tab> _ ... (ten columns: every one but ID and FORM '_')
// followed by a blank line.
//
// Refused, as FormatError "FILE:LINE: reason": a byte sequence that is not
// UTF-8 (overlong forms, UTF-16 surrogates and code points above U+10FFFF
// included: the output must be valid CoNLL-U, which is UTF-8); a control
// character other than tab (a carriage return inside a line means CR-only
// line ends; the others cannot go into a CoNLL-U field); more than
// max_tokens tokens on one line (default kMaxSentenceWords, 1000, the
// parser's own limit: parse/sentence_length.hpp; longer is almost surely a
// paragraph or a file without line breaks, and attention costs grow with the
// square of the length). "\r\n" line ends, a UTF-8 byte-order mark at the
// start and a last line without '\n' are accepted.
#ifndef SYNATTN_PARSE_TOKEN_TEXT_HPP
#define SYNATTN_PARSE_TOKEN_TEXT_HPP

#include <cstddef>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../io/conllu.hpp"
#include "../text/utf8.hpp"
#include "../io/conllu_document.hpp"
#include "sentence_length.hpp"

namespace synattn::parse {

// One sentence a line: the parser's limit (parse/sentence_length.hpp).
inline constexpr std::size_t kMaxTokensPerLine = kMaxSentenceWords;

namespace detail {

// UTF-8 is checked in one place for the whole library (text/utf8.hpp).
using text::check_utf8;
using text::hex_byte;

inline bool is_token_separator(char c) noexcept { return c == ' ' || c == '\t'; }

inline std::size_t count_tokens(std::string_view line) noexcept {
  std::size_t count = 0;
  for (std::size_t i = 0; i < line.size(); ++i)
    if (!is_token_separator(line[i]) && (i == 0 || is_token_separator(line[i - 1]))) ++count;
  return count;
}

inline void split_tokens(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  for (std::size_t i = 0; i < line.size();) {
    while (i < line.size() && is_token_separator(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_token_separator(line[i])) ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
}

}  // namespace detail

// Every sentence of token text `in`; messages name `file_name`. max_tokens
// (at least 1) is the most tokens a line may hold.
inline ConlluDocument read_token_text(std::istream& in, const std::string& file_name,
                                      std::size_t max_tokens = kMaxTokensPerLine) {
  if (max_tokens == 0) throw Error("read_token_text: max_tokens must be at least 1");
  ConlluDocument doc(file_name);
  std::string buf;
  std::vector<std::string> tokens;
  std::size_t line = 0;
  while (std::getline(in, buf)) {
    ++line;
    if (!buf.empty() && buf.back() == '\r') buf.pop_back();
    // Offsets in messages count the bytes of the line as the file holds it.
    std::size_t shown = 1;
    if (line == 1 && buf.compare(0, 3, "\xEF\xBB\xBF") == 0) {
      buf.erase(0, 3);
      shown += 3;
    }
    std::size_t at = 0;
    std::string why;
    if (!parse::detail::check_utf8(buf, at, why))
      throw FormatError(file_name, line,
                       "invalid UTF-8 at byte " + std::to_string(at + shown) + ": " + why);
    for (std::size_t i = 0; i < buf.size(); ++i) {
      const auto c = static_cast<unsigned char>(buf[i]);
      if (c == '\r')
        throw FormatError(file_name, line,
                         "carriage return at byte " + std::to_string(i + shown) +
                             ": are the line ends CR-only? convert them to \\n or \\r\\n");
      if ((c < 0x20 && c != '\t') || c == 0x7F)
        throw FormatError(file_name, line,
                         "control character " + parse::detail::hex_byte(c) + " at byte " +
                             std::to_string(i + shown) +
                             " (only spaces and tabs separate tokens; other control characters "
                             "cannot be written to CoNLL-U)");
    }
    const std::size_t count = parse::detail::count_tokens(buf);
    if (count == 0) continue;  // blank: not a sentence
    if (count > max_tokens)
      throw FormatError(file_name, line,
                       std::to_string(count) + " tokens, more than the limit of " +
                           std::to_string(max_tokens) +
                           " a line (one sentence a line: is this a paragraph, or a file "
                           "without line breaks?)");
    parse::detail::split_tokens(buf, tokens);
    doc.append_sentence(std::to_string(doc.size() + 1), tokens, line);
  }
  if (in.bad())
    throw FormatError(file_name, line,
                     line == 0 ? "read error before the first line (the input stream failed; is "
                                 "it a directory?)"
                               : "read error after this line (the input stream failed)");
  return doc;
}

// The token text file at `path`, opened as CoNLL-U files are (a directory or
// a file that cannot be opened is a FormatError(path, 0, ...)).
inline ConlluDocument read_token_text_file(const std::string& path,
                                           std::size_t max_tokens = kMaxTokensPerLine) {
  std::ifstream in = open_conllu_file(path);
  return read_token_text(in, path, max_tokens);
}

}  // namespace synattn::parse

#endif  // SYNATTN_PARSE_TOKEN_TEXT_HPP
