// synattn — what the tokenizer's network reads and predicts: character ids,
// paragraphs, the pieces a paragraph is scored in, and the five classes.
//
// Characters. Every Unicode space reads as one id, so a tab, a line break
// inside a paragraph and U+00A0 look alike (none is ever inside a token).
// Characters seen at least min_count times in training get their own id; the
// rest one of a few classes (upper, lower, digit, punctuation, CJK, other),
// so an unseen capital still looks like a capital.
//
// Paragraphs. A line holding only whitespace ends a paragraph; a paragraph is
// the text between such lines with its leading and trailing whitespace left
// out, and the network scores each paragraph apart (a sentence never crosses
// one), in pieces of at most `core` characters, each with the network's
// context() characters on both sides as read-only margin: a character's
// scores depend only on that window (text/segmenter_net.hpp), so pieces give
// exactly the scores of the paragraph in one go, in bounded memory.
//
// Classes, per character (as in Qi et al. 2018's tokenizer):
//   0 no token ends here, 1 a token ends here, 2 a token and a sentence end,
//   3 a multiword token ends here, 4 a multiword token and a sentence end.
#ifndef SYNATTN_TEXT_SEGMENTER_LABELS_HPP
#define SYNATTN_TEXT_SEGMENTER_LABELS_HPP

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "document.hpp"
#include "segmenter_net.hpp"
#include "utf8.hpp"

namespace synattn {
namespace text {

enum SegmenterClass : int { kInside = 0, kTokenEnd = 1, kSentenceEnd = 2, kMultiwordEnd = 3, kMultiwordSentenceEnd = 4 };
constexpr int kSegmenterClasses = 5;

// A coarse class for a character the vocabulary has not seen.
enum class CharClass : int { Space = 0, Upper, Lower, Digit, Punct, Cjk, Other };
constexpr int kCharClasses = 7;

inline CharClass char_class(char32_t c) {
  if (is_space(c)) return CharClass::Space;
  if (c < 0x80) {
    if (c >= 'A' && c <= 'Z') return CharClass::Upper;
    if (c >= 'a' && c <= 'z') return CharClass::Lower;
    if (c >= '0' && c <= '9') return CharClass::Digit;
    return c > 0x20 && c < 0x7f ? CharClass::Punct : CharClass::Other;
  }
  // Latin-1, Latin Extended-A, Greek and Cyrillic: the cases the tables of
  // those blocks follow (no Unicode database is linked).
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7) || (c >= 0x391 && c <= 0x3A9) || (c >= 0x400 && c <= 0x42F))
    return CharClass::Upper;
  if ((c >= 0xDF && c <= 0xFF && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9) || (c >= 0x430 && c <= 0x45F))
    return CharClass::Lower;
  if (c >= 0x100 && c <= 0x17F) return c % 2 == 0 ? CharClass::Upper : CharClass::Lower;
  if ((c >= 0x2000 && c <= 0x206F) || (c >= 0x3000 && c <= 0x303F) || (c >= 0xFF01 && c <= 0xFF0F) ||
      (c >= 0xFF1A && c <= 0xFF20) || (c >= 0xA1 && c <= 0xBF))
    return CharClass::Punct;
  if (c >= 0xFF10 && c <= 0xFF19) return CharClass::Digit;
  if ((c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
      (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3FFFF))
    return CharClass::Cjk;
  return CharClass::Other;
}

// Code point -> network id: 0 is the gap, 1 .. kCharClasses the classes
// (1: every space), then one id per kept character.
class CharVocabulary {
 public:
  static constexpr int kFirstChar = 1 + kCharClasses;

  CharVocabulary() = default;

  // Characters of `texts` seen at least min_count times (spaces excluded:
  // they all read as the space class).
  static CharVocabulary build(const std::vector<const std::vector<char32_t>*>& texts, int min_count) {
    std::map<char32_t, long long> counts;
    for (const auto* t : texts)
      for (char32_t c : *t)
        if (!is_space(c)) ++counts[c];
    CharVocabulary v;
    for (const auto& kv : counts)
      if (kv.second >= min_count) v.add(kv.first);
    return v;
  }

  int size() const noexcept { return kFirstChar + static_cast<int>(chars_.size()); }
  std::int32_t id(char32_t c) const {
    const CharClass cls = char_class(c);
    if (cls == CharClass::Space) return 1;
    const auto it = ids_.find(c);
    return it != ids_.end() ? it->second : 1 + static_cast<int>(cls);
  }

  std::string to_json() const {
    nlohmann::json j = nlohmann::json::array();
    for (char32_t c : chars_) j.push_back(static_cast<std::uint32_t>(c));
    return j.dump();
  }
  static CharVocabulary from_json(const std::string& text) {
    CharVocabulary v;
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (!j.is_array()) throw Error("tokenizer vocabulary: expected a JSON array of code points");
      for (const auto& e : j) {
        if (!e.is_number_unsigned() || e.get<std::uint64_t>() > 0x10FFFF)
          throw Error("tokenizer vocabulary: entry " + e.dump() + " is not a code point (0 to 0x10FFFF)");
        const auto c = static_cast<char32_t>(e.get<std::uint32_t>());
        if (v.ids_.count(c) || is_space(c))
          throw Error("tokenizer vocabulary: code point " + std::to_string(static_cast<std::uint32_t>(c)) +
                      " is listed twice or is a space");
        v.add(c);
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("tokenizer vocabulary: ") + e.what());
    }
    return v;
  }

 private:
  void add(char32_t c) {
    ids_[c] = kFirstChar + static_cast<int>(chars_.size());
    chars_.push_back(c);
  }
  std::vector<char32_t> chars_;
  std::map<char32_t, std::int32_t> ids_;
};

// A paragraph: code points [begin, end) of a decoded text.
struct Paragraph {
  int begin = 0, end = 0;
};

// The paragraphs of `cps` (see the top): split at lines of only whitespace.
inline std::vector<Paragraph> split_paragraphs(const std::vector<char32_t>& cps) {
  std::vector<Paragraph> out;
  const int n = static_cast<int>(cps.size());
  int start = -1, last = -1;  // first and last non-space of the open paragraph
  int newlines = 0;           // line breaks in the whitespace since `last`
  for (int i = 0; i < n; ++i) {
    const char32_t c = cps[static_cast<std::size_t>(i)];
    if (!is_space(c)) {
      if (start >= 0 && newlines >= 2) {
        out.push_back({start, last + 1});
        start = -1;
      }
      if (start < 0) start = i;
      last = i;
      newlines = 0;
      continue;
    }
    // CR LF counts once; a lone CR, LF, or U+2029 (paragraph separator) each count.
    if (c == U'\n' || c == 0x85 || c == 0x2028 || (c == U'\r' && !(i + 1 < n && cps[static_cast<std::size_t>(i) + 1] == U'\n')))
      ++newlines;
    else if (c == 0x2029)
      newlines += 2;
  }
  if (start >= 0) out.push_back({start, last + 1});
  return out;
}

// A stretch of a paragraph scored in one go: the network reads [begin, end),
// and its scores count for [core_begin, core_end).
struct Piece {
  int begin = 0, end = 0, core_begin = 0, core_end = 0;
};

inline std::vector<Piece> paragraph_pieces(const Paragraph& p, int core, int margin) {
  if (core < 1) throw Error("paragraph_pieces: core must be >= 1, got " + std::to_string(core));
  std::vector<Piece> out;
  for (int c = p.begin; c < p.end; c += core) {
    Piece piece;
    piece.core_begin = c;
    piece.core_end = std::min(p.end, c + core);
    piece.begin = std::max(p.begin, c - margin);
    piece.end = std::min(p.end, piece.core_end + margin);
    out.push_back(piece);
  }
  return out;
}

// Pieces packed into one id sequence, `gap` zero ids before, between and
// after them; row_of_piece[k] is where piece k's first character sits.
struct PackedPieces {
  CharIds ids;
  std::vector<Index> row_of_piece;
};

inline PackedPieces pack_pieces(const std::vector<char32_t>& cps, const std::vector<Piece>& pieces,
                                const CharVocabulary& vocab, int gap) {
  PackedPieces out;
  std::size_t total = static_cast<std::size_t>(gap);
  for (const Piece& p : pieces) total += static_cast<std::size_t>(p.end - p.begin + gap);
  out.ids.assign(total, 0);
  Index row = gap;
  for (const Piece& p : pieces) {
    out.row_of_piece.push_back(row);
    for (int i = p.begin; i < p.end; ++i) out.ids[static_cast<std::size_t>(row++)] = vocab.id(cps[static_cast<std::size_t>(i)]);
    row += gap;
  }
  return out;
}

// The class of every code point of a gold document's text (0 where no token
// ends, spaces included).
inline std::vector<std::int8_t> gold_classes(const Document& doc, std::size_t code_points) {
  std::vector<std::int8_t> cls(code_points, kInside);
  for (const Sentence& s : doc.sentences)
    for (std::size_t t = 0; t < s.tokens.size(); ++t) {
      const Token& tok = s.tokens[t];
      const int last = tok.span.code_points.end - 1;
      if (last < 0 || static_cast<std::size_t>(last) >= code_points)
        throw Error("gold_classes: sentence '" + s.sent_id + "' has a token outside the text");
      const bool sentence_end = t + 1 == s.tokens.size();
      cls[static_cast<std::size_t>(last)] = static_cast<std::int8_t>(
          tok.multiword() ? (sentence_end ? kMultiwordSentenceEnd : kMultiwordEnd) : (sentence_end ? kSentenceEnd : kTokenEnd));
    }
  return cls;
}

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_SEGMENTER_LABELS_HPP
