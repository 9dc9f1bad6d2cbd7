// synattn — attachment scores of a parser's output against gold trees.
//
// The conventions are the CoNLL 2018 shared task's (conll18_ud_eval.py) with
// gold tokenisation, so numbers compare with published UD results:
//   - every word counts, punctuation included (the older CoNLL-X practice of
//     leaving punctuation out gives other, higher numbers);
//   - words are the integer-ID lines; multiword tokens and empty nodes are not
//     scored (ConlluSentence holds only those words);
//   - UAS = words with the gold head / words;
//   - LAS = words with the gold head and the gold universal relation / words,
//     the universal relation being DEPREL up to its first ':' ("nmod:poss"
//     and "nmod" agree), compared case-sensitively.
// With gold tokenisation the system output must hold the gold words, in
// order, with the same forms; anything else is refused (synattn::Error
// naming the sentence and the word) rather than scored, since a misaligned
// file would give meaningless numbers.
//
// LengthBreakdown splits the scores by sentence length (1-10, 11-20, 21-30,
// 31-40, 41+ words by default): long sentences are where attention biases are
// meant to help, and a single total hides that.
#ifndef SYNATTN_PARSE_METRICS_HPP
#define SYNATTN_PARSE_METRICS_HPP

#include <cstddef>
#include <ios>
#include <locale>
#include <sstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../io/conllu.hpp"

namespace synattn::parse {

struct AttachmentScores {
  long long words = 0;
  long long head_correct = 0;     // gold head
  long long labeled_correct = 0;  // gold head and gold universal relation

  // Percentages; 0 when there are no words.
  double uas() const noexcept { return percent(head_correct); }
  double las() const noexcept { return percent(labeled_correct); }

  // One word: whether its head and its universal relation are right (the
  // relation counts only with the head).
  void add(bool head_ok, bool relation_ok) noexcept {
    ++words;
    if (head_ok) ++head_correct;
    if (head_ok && relation_ok) ++labeled_correct;
  }
  // Counts of another set of words.
  void add(const AttachmentScores& other) noexcept {
    words += other.words;
    head_correct += other.head_correct;
    labeled_correct += other.labeled_correct;
  }

 private:
  double percent(long long count) const noexcept {
    return words == 0 ? 0.0 : 100.0 * static_cast<double>(count) / static_cast<double>(words);
  }
};

// The universal part of a relation: up to the first ':' ("nmod:poss" ->
// "nmod"), all of it without one.
inline std::string_view universal_relation(std::string_view deprel) noexcept {
  return deprel.substr(0, deprel.find(':'));
}

// Sentences of min_words..max_words words (max_words 0: no upper bound).
struct LengthBucket {
  std::size_t min_words = 1;
  std::size_t max_words = 0;
  long long sentences = 0;
  AttachmentScores scores;

  bool open_ended() const noexcept { return max_words == 0; }
  bool holds(std::size_t words) const noexcept {
    return words >= min_words && (open_ended() || words <= max_words);
  }
  // "1-10", "41+".
  std::string label() const {
    return std::to_string(min_words) + (open_ended() ? "+" : "-" + std::to_string(max_words));
  }
};

struct LengthBreakdown {
  std::vector<LengthBucket> buckets;

  // 1-10, 11-20, 21-30, 31-40, 41+.
  LengthBreakdown() : LengthBreakdown(std::vector<std::size_t>{10, 20, 30, 40}) {}

  // One bucket up to each bound (increasing, from 1), then one for longer
  // sentences: {10, 20} gives 1-10, 11-20, 21+. Throws synattn::Error for
  // bounds that are not increasing.
  explicit LengthBreakdown(const std::vector<std::size_t>& upper_bounds) {
    std::size_t min = 1;
    for (const std::size_t bound : upper_bounds) {
      if (bound < min)
        throw Error("LengthBreakdown: upper bounds must increase from 1; " +
                    std::to_string(bound) + " follows " + std::to_string(min - 1));
      // The bucket after the last bound starts at bound + 1: SIZE_MAX would
      // wrap it to "0+".
      if (bound == std::numeric_limits<std::size_t>::max())
        throw Error("LengthBreakdown: upper bound " + std::to_string(bound) +
                    " leaves no room for the longer sentences' bucket (at most " +
                    std::to_string(std::numeric_limits<std::size_t>::max() - 1) + ")");
      buckets.push_back(LengthBucket{min, bound, 0, {}});
      min = bound + 1;
    }
    buckets.push_back(LengthBucket{min, 0, 0, {}});
  }

  // A sentence of `words` words and its scores (a sentence of 0 words, which
  // no reader returns, goes to the first bucket).
  void add(std::size_t words, const AttachmentScores& sentence) {
    LengthBucket* bucket = &buckets.front();
    for (LengthBucket& b : buckets)
      if (b.holds(words)) bucket = &b;
    ++bucket->sentences;
    bucket->scores.add(sentence);
  }

  AttachmentScores total() const noexcept {
    AttachmentScores out;
    for (const LengthBucket& b : buckets) out.add(b.scores);
    return out;
  }
  long long sentences() const noexcept {
    long long out = 0;
    for (const LengthBucket& b : buckets) out += b.sentences;
    return out;
  }
};

// Scores of one system sentence against its gold sentence. Throws
// synattn::Error, naming the sentence by the gold's label() and the word by
// its 1-based ID, when the words differ in number or form, or a HEAD is
// outside [0, n] (e.g. -1: a ConlluDocument sentence with no tree).
inline AttachmentScores score_sentence(const ConlluSentence& gold, const ConlluSentence& system) {
  // Messages are built only when needed: this runs for every word of a corpus.
  const auto where = [&] {
    return "evaluate: sentence " + gold.label() + " (gold line " + std::to_string(gold.line) +
           ", system line " + std::to_string(system.line) + "): ";
  };
  const std::size_t n = gold.words.size();
  if (system.words.size() != n)
    throw Error(where() + "gold has " + std::to_string(n) + " words, system " +
                std::to_string(system.words.size()) +
                " (the system output must keep the gold tokenisation)");
  AttachmentScores out;
  for (std::size_t i = 0; i < n; ++i) {
    const ConlluWord &g = gold.words[i], &s = system.words[i];
    const auto word = [&] { return where() + "word " + std::to_string(i + 1) + ": "; };
    if (g.form != s.form)
      throw Error(word() + "gold FORM " + synattn::detail::quote_field(g.form) +
                  ", system FORM " + synattn::detail::quote_field(s.form) +
                  " (the system output must keep the gold tokenisation)");
    const long long limit = static_cast<long long>(n);
    if (g.head < 0 || g.head > limit)
      throw Error(word() + "gold HEAD " + std::to_string(g.head) + " out of range [0, " +
                  std::to_string(n) + "] (does the gold file have a tree?)");
    if (s.head < 0 || s.head > limit)
      throw Error(word() + "system HEAD " + std::to_string(s.head) + " out of range [0, " +
                  std::to_string(n) + "] (was the sentence parsed?)");
    out.add(g.head == s.head, universal_relation(g.deprel) == universal_relation(s.deprel));
  }
  return out;
}

// Scores of `system` against `gold`, sentence by sentence in order, split by
// sentence length into the buckets of `breakdown` (whose counts are added to).
// Throws synattn::Error when the sentence counts differ, and as
// score_sentence does.
inline LengthBreakdown evaluate_by_length(const std::vector<ConlluSentence>& gold,
                                          const std::vector<ConlluSentence>& system,
                                          LengthBreakdown breakdown = LengthBreakdown()) {
  if (gold.size() != system.size())
    throw Error("evaluate: gold has " + std::to_string(gold.size()) + " sentences, system " +
                std::to_string(system.size()));
  for (std::size_t k = 0; k < gold.size(); ++k)
    breakdown.add(gold[k].words.size(), score_sentence(gold[k], system[k]));
  return breakdown;
}

// Scores of `system` against `gold` over all words.
inline AttachmentScores evaluate(const std::vector<ConlluSentence>& gold,
                                 const std::vector<ConlluSentence>& system) {
  return evaluate_by_length(gold, system, LengthBreakdown(std::vector<std::size_t>{})).total();
}

namespace detail {

// Two decimals, '.' whatever the global locale.
inline std::string percent_text(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.setf(std::ios::fixed);
  out.precision(2);
  out << value;
  return out.str();
}

}  // namespace detail

// "UAS 91.23, LAS 88.10 (25147 words)".
inline std::string format_scores(const AttachmentScores& scores) {
  return "UAS " + parse::detail::percent_text(scores.uas()) + ", LAS " +
         parse::detail::percent_text(scores.las()) + " (" + std::to_string(scores.words) +
         " words)";
}

// A markdown table of the breakdown, one row a bucket and a last row for all
// sentences; "-" for the scores of an empty bucket:
//   | sentence length | sentences | words | UAS | LAS |
//   |:--|--:|--:|--:|--:|
//   | 1-10 | 812 | 4321 | 93.51 | 91.02 |
//   ...
//   | all | 2001 | 25147 | 91.23 | 88.10 |
inline std::string format_breakdown_markdown(const LengthBreakdown& breakdown) {
  const auto row = [](const std::string& label, long long sentences, const AttachmentScores& s) {
    const bool none = s.words == 0;
    return "| " + label + " | " + std::to_string(sentences) + " | " + std::to_string(s.words) +
           " | " + (none ? "-" : parse::detail::percent_text(s.uas())) + " | " +
           (none ? "-" : parse::detail::percent_text(s.las())) + " |\n";
  };
  std::string out = "| sentence length | sentences | words | UAS | LAS |\n|:--|--:|--:|--:|--:|\n";
  for (const LengthBucket& b : breakdown.buckets) out += row(b.label(), b.sentences, b.scores);
  return out + row("all", breakdown.sentences(), breakdown.total());
}

}  // namespace synattn::parse

#endif  // SYNATTN_PARSE_METRICS_HPP
