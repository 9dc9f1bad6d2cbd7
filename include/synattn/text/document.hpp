// synattn — text as tokens, words and sentences, each tied to its place in
// the text it came from.
//
// A raw-text pipeline turns a string into sentences; a CoNLL-U file turns
// into the same thing once its raw text is rebuilt from its forms and
// SpaceAfter=No marks. Both meet here, so that the scorer, the writer and the
// parser's input see one type:
//
//   Document::text      the text, UTF-8, exactly as given (or as rebuilt)
//   Sentence::tokens    surface tokens: what a reader sees between spaces and
//                       punctuation ("don't", "Smith", "'s")
//   Sentence::words     syntactic words, the parser's units ("do", "n't"):
//                       a token is one word, or a multiword token covering
//                       several (CoNLL-U's "3-4" lines)
//
// Every token and word carries its span in Document::text twice: in bytes
// (for slicing the std::string) and in code points (the unit of CoNLL-U's
// TokenRange and of most subword tokenizers' offsets). Spans are half-open,
// [begin, end), and feed tree/subword.hpp's token_to_word_from_spans as they
// are (use the same unit on both sides).
#ifndef SYNATTN_TEXT_DOCUMENT_HPP
#define SYNATTN_TEXT_DOCUMENT_HPP

#include <string>
#include <vector>

#include "../tree/subword.hpp"

namespace synattn {
namespace text {

// One span in two units.
struct TextSpan {
  CharSpan bytes;        // into Document::text's bytes
  CharSpan code_points;  // into Document::text decoded as UTF-8
};

// A syntactic word (a CoNLL-U line with an integer ID).
struct Word {
  std::string form;
  std::string upos = "_";
  int head = -1;             // CoNLL-U HEAD: 1-based within the sentence, 0 = the root, -1 = none ('_')
  std::string deprel = "_";
  // The word's part of its token's text. A token of one word: the token's
  // span. A multiword token's words: consecutive, non-overlapping pieces of
  // the token's span, each the longest stretch its form matches (so "don't"
  // -> "do" [0, 2), "n't" [2, 5)); a word whose form is not in the text
  // ("del" -> "de" "el") takes what is left, and a word with nothing left
  // has an empty span at the end of the token's.
  TextSpan span;
};

// A surface token: one word, or a multiword token over words
// [first_word, first_word + word_count) of its sentence.
struct Token {
  std::string form;   // the token's text, exactly as in Document::text
  TextSpan span;
  int first_word = 0;
  int word_count = 1;
  bool multiword() const noexcept { return word_count > 1; }
};

struct Sentence {
  std::string sent_id;        // may be empty
  bool new_document = false;  // first sentence of a document ("# newdoc")
  bool new_paragraph = false; // first sentence of a paragraph ("# newpar"; a document's first is one too)
  std::string document_id, paragraph_id;  // those comments' ids, when given
  std::vector<Token> tokens;
  std::vector<Word> words;

  // The sentence's span: from its first token's begin to its last token's end.
  TextSpan span() const noexcept {
    if (tokens.empty()) return {};
    return {{tokens.front().span.bytes.begin, tokens.back().span.bytes.end},
            {tokens.front().span.code_points.begin, tokens.back().span.code_points.end}};
  }
};

struct Document {
  std::string text;                 // UTF-8
  std::vector<Sentence> sentences;  // in text order; their tokens' spans are increasing and disjoint
};

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_DOCUMENT_HPP
