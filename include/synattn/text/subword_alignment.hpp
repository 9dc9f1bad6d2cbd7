// synattn — a subword tokenizer's pieces mapped to the words of a parsed
// sentence, so that tree/subword.hpp turns word distances into piece
// distances (a piece inherits its word's distances).
//
//   // pieces: [begin, end) offsets of each piece in doc.text, as the subword
//   // tokenizer reports them (SentencePiece: bytes; HuggingFace: code points)
//   std::vector<int> map = synattn::text::piece_to_word(doc, sentence, pieces, SpanUnit::Bytes);
//   synattn::token_distances(tree, map, out);
//
// Three things a subword tokenizer does that words do not, and what this
// does about them:
//   - a piece's offsets often take in the space before it (SentencePiece's
//     "▁team" starts at the space): each span is first trimmed of the
//     whitespace at its ends; a piece that is only whitespace (or has an
//     empty span: [CLS], </s>) belongs to no word (-1, kSpecialToken);
//   - a piece may cross a word boundary inside a multiword token ("didn't"
//     = "did" + "n't" as pieces "didn" + "'t"): it belongs to the word its
//     first character is in, since the text gives no better answer;
//   - a piece that crosses the boundary of two surface tokens ("time." as
//     one piece over "time" and ".") is refused by token_to_word_from_spans,
//     naming it: its distances would be ambiguous.
#ifndef SYNATTN_TEXT_SUBWORD_ALIGNMENT_HPP
#define SYNATTN_TEXT_SUBWORD_ALIGNMENT_HPP

#include <string>
#include <vector>

#include "../error.hpp"
#include "../tree/subword.hpp"
#include "document.hpp"
#include "utf8.hpp"

namespace synattn {
namespace text {

enum class SpanUnit { Bytes, CodePoints };

// For each piece of `sentence` (spans into doc.text in `unit`), its word's
// index in sentence.words, or kSpecialToken (-1).
inline std::vector<int> piece_to_word(const Document& doc, const Sentence& sentence, std::vector<CharSpan> pieces,
                                      SpanUnit unit) {
  const bool bytes = unit == SpanUnit::Bytes;
  // Code point offsets of doc.text, for trimming spans given in code points.
  std::vector<int> byte_of_cp;
  if (!bytes) {
    byte_of_cp.reserve(doc.text.size() + 1);
    for (std::size_t i = 0; i < doc.text.size();) {
      byte_of_cp.push_back(static_cast<int>(i));
      next_code_point(doc.text, i);
    }
    byte_of_cp.push_back(static_cast<int>(doc.text.size()));
  }
  const int limit = bytes ? static_cast<int>(doc.text.size()) : static_cast<int>(byte_of_cp.size()) - 1;
  const auto code_point_at = [&](int pos) {
    std::size_t i = static_cast<std::size_t>(bytes ? pos : byte_of_cp[static_cast<std::size_t>(pos)]);
    return next_code_point(doc.text, i);
  };
  const auto width = [&](int pos) {  // units taken by the character at pos
    if (!bytes) return 1;
    std::size_t i = static_cast<std::size_t>(pos);
    next_code_point(doc.text, i);
    return static_cast<int>(i) - pos;
  };
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    CharSpan& s = pieces[p];
    if (s.begin < 0 || s.end < s.begin || s.end > limit)
      throw Error("piece_to_word: piece " + std::to_string(p) + " has span [" + std::to_string(s.begin) + ", " +
                  std::to_string(s.end) + "), outside the text's [0, " + std::to_string(limit) + ")");
    while (s.begin < s.end && is_space(code_point_at(s.begin))) s.begin += width(s.begin);
    // Trailing whitespace: step back over whole characters.
    while (s.end > s.begin) {
      int start = s.end - 1;
      if (bytes)
        while (start > s.begin && (static_cast<unsigned char>(doc.text[static_cast<std::size_t>(start)]) & 0xC0) == 0x80)
          --start;
      if (!is_space(code_point_at(start))) break;
      s.end = start;
    }
    if (s.begin == s.end) s = {0, 0};  // only whitespace: no word
  }
  std::vector<CharSpan> tokens;
  for (const Token& t : sentence.tokens) tokens.push_back(bytes ? t.span.bytes : t.span.code_points);
  std::vector<int> map = token_to_word_from_spans(tokens, pieces, sentence.sent_id);
  for (std::size_t p = 0; p < map.size(); ++p) {
    if (map[p] < 0) continue;
    const Token& t = sentence.tokens[static_cast<std::size_t>(map[p])];
    int word = t.first_word;
    for (int k = 0; k < t.word_count; ++k) {
      const Word& w = sentence.words[static_cast<std::size_t>(t.first_word + k)];
      const CharSpan ws = bytes ? w.span.bytes : w.span.code_points;
      if (ws.begin <= pieces[p].begin && pieces[p].begin < ws.end) word = t.first_word + k;
    }
    map[p] = word;
  }
  return map;
}

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_SUBWORD_ALIGNMENT_HPP
