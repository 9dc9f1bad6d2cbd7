// synattn — a CoNLL-U file read as a Document, its raw text rebuilt.
//
// Training a tokenizer and scoring a raw-text pipeline need the text a
// treebank was made from, with every token and word tied to its place in it.
// UD files keep that text only implicitly, so it is rebuilt:
//
//   - tokens are the multiword-token lines ("3-4", form from that line, its
//     words the integer lines it covers) and the integer lines no such line
//     covers; empty nodes ("5.1") are skipped;
//   - after a token comes, in order of precedence: its MISC SpacesAfter
//     (UDPipe's exact whitespace, escaped: \s \t \r \n \p \\ and \uXXXX);
//     "\n\n" when the next sentence starts a paragraph ("# newpar", or
//     "# newdoc", which starts one too) and "\n" after the document's last
//     token, whatever SpaceAfter says (a paragraph break always separates);
//     nothing with SpaceAfter=No; else one space (sentences of a paragraph
//     are joined like tokens). SpacesBefore on a token goes before it (UDPipe
//     writes it on the document's first token). A file without newpar and
//     newdoc is one paragraph.
//   - word spans inside a multiword token follow word_spans.hpp.
//
// A sentence's rebuilt text, each whitespace run folded to one space, must
// equal its "# text" folded the same way (folding forgives e.g. EWT's
// "have\u00A0 been", whose MISC keeps only the no-break space); a mismatch
// is a FormatError naming the sentence's first line and the first differing
// byte. The rest of the file is checked by the strict reader itself
// (ConlluDocument, which runs ConlluReader on each sentence: columns, IDs,
// HEAD on every word or '_' on all, trees), so this reader accepts and
// refuses what read_conllu does, plus: invalid UTF-8, multiword tokens that
// are out of place, overlap or cover missing words, and bad SpacesAfter /
// SpacesBefore values. Errors are FormatError "FILE:LINE: reason".
#ifndef SYNATTN_IO_CONLLU_TEXT_HPP
#define SYNATTN_IO_CONLLU_TEXT_HPP

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <istream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "conllu.hpp"
#include "input_file.hpp"
#include "conllu_document.hpp"
#include "../text/document.hpp"
#include "../text/utf8.hpp"
#include "../text/word_spans.hpp"

namespace synattn {
namespace text {

namespace detail {

// `s` (valid UTF-8) with each run of White_Space folded to one ' ' and none
// at either end: the form in which "# text" and rebuilt text are compared.
inline std::string fold_whitespace(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool pending = false;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    if (is_space(next_code_point(s, i))) {
      pending = !out.empty();
      continue;
    }
    if (pending) out += ' ';
    pending = false;
    out.append(s.substr(start, i - start));
  }
  return out;
}

// Whether valid UTF-8 `s` is all White_Space (true for "").
inline bool all_space(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();)
    if (!is_space(next_code_point(s, i))) return false;
  return true;
}

// MISC's whitespace escapes (UDPipe's, plus \uXXXX as UD_English-EWT writes
// U+00A0): \s space, \t tab, \r CR, \n LF, \p '|', \\ backslash. One
// table for both directions, so that writer and reader cannot disagree.
struct SpaceEscape {
  char raw;     // the character
  char letter;  // what follows the backslash
};
inline constexpr SpaceEscape kSpaceEscapes[] = {{' ', 's'}, {'\t', 't'}, {'\r', 'r'},
                                                {'\n', 'n'}, {'|', 'p'},  {'\\', '\\'}};

inline std::string escape_spaces(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const char32_t c = next_code_point(s, i);
    const SpaceEscape* e = std::find_if(std::begin(kSpaceEscapes), std::end(kSpaceEscapes),
                                        [c](const SpaceEscape& x) { return char32_t(x.raw) == c; });
    if (e != std::end(kSpaceEscapes)) {
      out += '\\';
      out += e->letter;
    } else if (is_space(c) || c < 0x20 || c == 0x7F) {
      // Other spaces are escaped too: raw U+0085, U+2028 or a form feed
      // would be a line break to some readers of the file.
      out += "\\u" + code_point_text(c).substr(2);
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  return out;
}

inline int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The inverse of escape_spaces; false with `why` set for a bad escape.
inline bool unescape_spaces(std::string_view s, std::string& out, std::string& why) {
  out.clear();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (i + 1 == s.size()) {
      why = "ends in a lone backslash";
      return false;
    }
    const char letter = s[++i];
    const SpaceEscape* e = std::find_if(std::begin(kSpaceEscapes), std::end(kSpaceEscapes),
                                        [letter](const SpaceEscape& x) { return x.letter == letter; });
    if (e != std::end(kSpaceEscapes)) {
      out += e->raw;
      continue;
    }
    switch (letter) {
      case 'u': {
        char32_t cp = 0;
        for (std::size_t k = 1; k <= 4; ++k) {
          const int d = i + k < s.size() ? hex_digit(s[i + k]) : -1;
          if (d < 0) {
            why = "has \\u without four hex digits after it";
            return false;
          }
          cp = cp * 16 + static_cast<char32_t>(d);
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) {
          why = "has \\u" + std::string(s.substr(i + 1, 4)) + ", a UTF-16 surrogate";
          return false;
        }
        encode_utf8(cp, out);
        i += 4;
        break;
      }
      default:
        why = "has the unknown escape " + synattn::detail::quote_field(s.substr(i - 1, 2)) +
              " (known: \\s \\t \\r \\n \\p \\\\ \\uXXXX)";
        return false;
    }
  }
  return true;
}

// What a token's MISC says about the whitespace around it.
struct Spacing {
  bool space_after = true;   // false with SpaceAfter=No
  bool has_after = false;    // SpacesAfter given: `after` is exact
  bool has_before = false;   // SpacesBefore given
  std::string after, before;
};

inline Spacing read_spacing(std::string_view misc, const std::string& file, std::size_t line) {
  Spacing sp;
  if (misc == "_") return sp;
  std::string why;
  for (std::size_t pos = 0; pos <= misc.size();) {
    std::size_t bar = misc.find('|', pos);
    if (bar == misc.npos) bar = misc.size();
    const std::string_view item = misc.substr(pos, bar - pos);
    pos = bar + 1;
    const std::size_t eq = item.find('=');
    if (eq == item.npos) continue;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "SpaceAfter") {
      if (value == "No") sp.space_after = false;
      continue;
    }
    const bool after = key == "SpacesAfter";
    if (!after && key != "SpacesBefore") continue;
    std::string& out = after ? sp.after : sp.before;
    if (!unescape_spaces(value, out, why))
      throw FormatError(file, line, std::string(key) + " " + synattn::detail::quote_field(value) + " " + why);
    if (!all_space(out))
      throw FormatError(file, line, std::string(key) + " " + synattn::detail::quote_field(value) +
                                       " holds more than whitespace (it records the spaces around a "
                                       "token; the text itself is in the forms)");
    (after ? sp.has_after : sp.has_before) = true;
  }
  return sp;
}

// What the reader puts after a token without SpacesAfter: "\n" after the
// document's last token, "\n\n" before a paragraph, else per SpaceAfter.
// (The writer asks the same question to decide what it must spell out.)
inline std::string_view default_spaces_after(bool space_after, bool last_in_document,
                                             bool before_paragraph) noexcept {
  if (last_in_document) return "\n";
  if (before_paragraph) return "\n\n";
  return space_after ? " " : "";
}

// Line i of a file as the strict reader sees it: without the '\r' of a
// "\r\n" end and, on line 0, without a byte-order mark.
inline std::string_view content(std::string_view raw, std::size_t i) noexcept {
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  if (i == 0 && raw.substr(0, 3) == "\xEF\xBB\xBF") raw.remove_prefix(3);
  return raw;
}

// The first 10 tab-separated columns of a word line (the strict reader has
// already checked there are exactly 10).
inline void split_columns(std::string_view line, std::string_view (&field)[ConlluReader::kColumns]) {
  std::size_t count = 0;
  for (std::size_t pos = 0; count < ConlluReader::kColumns; ++count) {
    const std::size_t tab = line.find('\t', pos);
    field[count] = line.substr(pos, tab == line.npos ? line.npos : tab - pos);
    if (tab == line.npos) break;
    pos = tab + 1;
  }
}

// A multiword-token line: words [first, last] (1-based).
struct Range {
  long first = 0, last = 0;
  std::string form;
  Spacing spacing;
  std::size_t line = 0;
};

// A short excerpt of `s` from about byte `at`, for a mismatch message.
inline std::string excerpt(std::string_view s, std::size_t at) {
  std::size_t from = at > 15 ? at - 15 : 0;
  while (from > 0 && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) --from;
  return synattn::detail::quote_field(s.substr(from));
}

}  // namespace detail

// The CoNLL-U document in `in` (messages name `name`) with its text rebuilt.
inline Document read_conllu_text(std::istream& in, const std::string& name) {
  namespace d = text::detail;
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw FormatError(name, 0, "read error (the input stream failed; is it a directory?)");

  // Lines as std::getline gives them (a last line without '\n' included).
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < all.size();) {
    std::size_t nl = all.find('\n', pos);
    if (nl == all.npos) nl = all.size();
    lines.push_back(std::string_view(all).substr(pos, nl - pos));
    pos = nl + 1;
  }
  // UTF-8 first: every later step (folding, spans, messages) relies on it.
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::size_t at = 0;
    std::string why;
    if (!check_utf8(lines[i], at, why))
      throw FormatError(name, i + 1, "invalid UTF-8 at byte " + std::to_string(at + 1) + ": " + why);
  }

  // Columns, IDs, heads and trees: the strict reader's checks and messages.
  std::istringstream copy(all);
  const parse::ConlluDocument conllu = parse::ConlluDocument::read(copy, name);

  Document doc;
  // One token before its separator is known: the separator depends on the
  // next token (does it start a paragraph? is there one?).
  d::Spacing previous;
  bool have_previous = false;
  int code_points = 0;
  const auto append = [&](std::string_view s) {
    doc.text.append(s);
    code_points += static_cast<int>(count_code_points(s));
  };
  const auto check_size = [&](std::size_t line) {
    if (doc.text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max() / 2))
      throw FormatError(name, line, "the text rebuilt so far is too long for int spans");
  };

  std::string_view field[ConlluReader::kColumns];
  for (std::size_t s = 0; s < conllu.size(); ++s) {
    const ConlluSentence& input = conllu.input(s);
    const std::size_t first_line = conllu.line(s);
    Sentence sent;
    bool has_text = false;
    std::string text_comment;
    std::vector<d::Range> ranges;
    std::vector<d::Spacing> word_spacing;
    std::size_t words_seen = 0;
    for (std::size_t i = first_line - 1; i < lines.size(); ++i) {
      const std::string_view line = d::content(lines[i], i);
      if (synattn::detail::is_blank_line(line)) break;
      if (line.front() == '#') {
        const std::string_view body = line.substr(1);
        std::string_view value;
        if (synattn::detail::comment_value(body, "sent_id", value)) {
          sent.sent_id.assign(value);
        } else if (synattn::detail::comment_value(body, "text", value)) {
          has_text = true;
          text_comment.assign(value);
        } else if (synattn::detail::comment_value(body, "newdoc id", value)) {
          sent.new_document = true;
          sent.document_id.assign(value);
        } else if (synattn::detail::trim_spaces(body) == "newdoc") {
          sent.new_document = true;
        } else if (synattn::detail::comment_value(body, "newpar id", value)) {
          sent.new_paragraph = true;
          sent.paragraph_id.assign(value);
        } else if (synattn::detail::trim_spaces(body) == "newpar") {
          sent.new_paragraph = true;
        }
        continue;
      }
      d::split_columns(line, field);
      const std::string_view id = field[0];
      if (id.find('.') != id.npos) continue;  // empty node
      const std::size_t dash = id.find('-', 1);
      if (dash == id.npos) {
        ++words_seen;
        word_spacing.push_back(d::read_spacing(field[9], name, i + 1));
        continue;
      }
      // The strict reader checked the shape: digits, 1 <= first < last.
      d::Range r;
      r.first = synattn::detail::small_value(id.substr(0, dash));
      r.last = synattn::detail::small_value(id.substr(dash + 1));
      r.form.assign(field[1]);
      r.spacing = d::read_spacing(field[9], name, i + 1);
      r.line = i + 1;
      const std::string shown = "multiword token " + std::string(id);
      if (!ranges.empty() && r.first >= 0 && r.first <= ranges.back().last)
        throw FormatError(name, r.line, shown + " overlaps multiword token " +
                                           std::to_string(ranges.back().first) + "-" +
                                           std::to_string(ranges.back().last) + " (line " +
                                           std::to_string(ranges.back().line) + ")");
      if (r.first != static_cast<long>(words_seen) + 1)
        throw FormatError(name, r.line, shown + " must come just before word " + std::string(id.substr(0, dash)) +
                                           ", but follows word " + std::to_string(words_seen));
      ranges.push_back(std::move(r));
    }
    const std::size_t n = input.words.size();
    if (word_spacing.size() != n)  // cannot happen: both count the integer-ID lines
      throw FormatError(name, first_line, "internal error: word lines miscounted");
    if (!ranges.empty() && (ranges.back().last < 0 || ranges.back().last > static_cast<long>(n)))
      throw FormatError(name, ranges.back().line,
                       "multiword token " + std::to_string(ranges.back().first) + "-" +
                           (ranges.back().last < 0 ? std::string("...") : std::to_string(ranges.back().last)) +
                           " covers words the sentence does not have (it has " + std::to_string(n) +
                           ")");

    for (const ConlluWord& w : input.words) {
      Word word;
      word.form = w.form;
      word.upos = w.upos;
      word.head = w.head;  // 1-based, 0 = root, -1 without a tree
      word.deprel = w.deprel;
      sent.words.push_back(std::move(word));
    }
    if (s == 0 || sent.new_document) sent.new_paragraph = true;

    std::size_t next_range = 0;
    for (std::size_t w = 0; w < n;) {
      Token token;
      token.first_word = static_cast<int>(w);
      const d::Spacing* spacing = &word_spacing[w];
      if (next_range < ranges.size() && ranges[next_range].first == static_cast<long>(w) + 1) {
        const d::Range& r = ranges[next_range++];
        token.form = r.form;
        token.word_count = static_cast<int>(r.last - r.first + 1);
        spacing = &r.spacing;
      } else {
        token.form = sent.words[w].form;
      }
      w += static_cast<std::size_t>(token.word_count);

      if (have_previous) {
        append(previous.has_after ? std::string_view(previous.after)
                                  : d::default_spaces_after(previous.space_after, false,
                                                            sent.tokens.empty() && sent.new_paragraph));
      }
      if (spacing->has_before) append(spacing->before);
      check_size(first_line);
      token.span.bytes.begin = static_cast<int>(doc.text.size());
      token.span.code_points.begin = code_points;
      append(token.form);
      token.span.bytes.end = static_cast<int>(doc.text.size());
      token.span.code_points.end = code_points;
      assign_word_spans(token, sent.words);
      sent.tokens.push_back(std::move(token));
      previous = *spacing;
      have_previous = true;
    }

    if (has_text) {
      const TextSpan span = sent.span();
      const std::string rebuilt = d::fold_whitespace(std::string_view(doc.text).substr(
          static_cast<std::size_t>(span.bytes.begin),
          static_cast<std::size_t>(span.bytes.end - span.bytes.begin)));
      const std::string expected = d::fold_whitespace(text_comment);
      if (rebuilt != expected) {
        std::size_t at = 0;
        while (at < rebuilt.size() && at < expected.size() && rebuilt[at] == expected[at]) ++at;
        throw FormatError(name, first_line,
                         "sentence " + input.label() +
                             ": the text rebuilt from its forms and SpaceAfter differs from its "
                             "'# text' at byte " + std::to_string(at + 1) + " (whitespace folded): " +
                             d::excerpt(rebuilt, at) + " against " + d::excerpt(expected, at));
      }
    }
    doc.sentences.push_back(std::move(sent));
  }
  if (have_previous)
    append(previous.has_after ? std::string_view(previous.after) : d::default_spaces_after(previous.space_after, true, false));
  return doc;
}

// The CoNLL-U file at `path` (opened by open_conllu_file: a directory or a
// file that cannot be opened is a FormatError(path, 0, ...)).
inline Document read_conllu_text_file(const std::string& path) {
  std::ifstream in = open_conllu_file(path);
  return read_conllu_text(in, path);
}

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_IO_CONLLU_TEXT_HPP
