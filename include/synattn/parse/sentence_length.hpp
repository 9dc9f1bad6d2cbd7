// synattn — the longest sentence the parser takes: one limit for the library
// and its programs.
//
// The parser's time and memory grow with the square of a sentence's length
// (every word attends to every word, and every word scores every other as
// its head): the shipped English parser on one Zen 4 core
// (docs/benchmarks.md, "The parser: long sentences") takes 0.09 s of CPU and
// a 107 MB process for 1,000 words, 1.65 s and 559 MB for 4,000, 13.1 s and
// 2.5 GB for 10,000. A "sentence" of thousands of words is almost surely a
// paragraph or a file without sentence breaks, so ParserModel::parse refuses
// sentences of more than kMaxSentenceWords words by default, naming the
// sentence and its length; a caller who means it passes a larger max_words.
// The parse program uses the same limit for every input: CoNLL-U sentences
// (refused by file and line), token text (per line: parse/token_text.hpp)
// and raw text (the tokenizer cuts sentences at its max_sentence_tokens, 250
// for the shipped model; a longer sentence after multiword expansion is
// refused by Pipeline naming its bytes).
#ifndef SYNATTN_PARSE_SENTENCE_LENGTH_HPP
#define SYNATTN_PARSE_SENTENCE_LENGTH_HPP

#include <cstddef>
#include <string>

namespace synattn {
namespace parse {

// The most words a sentence may have by default (ParserModel::parse,
// Pipeline, the parse program). The bundled treebanks' longest sentence has
// 159 words (EWT train).
inline constexpr std::size_t kMaxSentenceWords = 1000;

// "" when a sentence of `words` words is within `max_words`, else why not:
// "N words, more than the limit of M a sentence (...)", for a message that
// names the sentence first.
inline std::string sentence_length_problem(std::size_t words, std::size_t max_words = kMaxSentenceWords) {
  if (words <= max_words) return {};
  return std::to_string(words) + " words, more than the limit of " + std::to_string(max_words) +
         " a sentence (the parser's time and memory grow with the square of the length; is this a paragraph, or "
         "text without sentence breaks?)";
}

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_SENTENCE_LENGTH_HPP
