// synattn — the CoNLL 2018 shared task's evaluation (the rules of its
// official script, conll18_ud_eval.py, version 1.2) over two Documents.
//
//   Conll18Scores s = evaluate_conll18(gold, system);
//   std::cout << format_conll18(s);   // the script's `-v` table, our rows
//
// The rules, as the script applies them:
//
//   Characters  Each side's character sequence is the concatenation of its
//               tokens' text, in code points, with the characters of Unicode
//               category Zs removed (the script strips Zs from every token's
//               FORM; what lies between tokens never enters it). The two
//               sequences must be equal, or evaluate_conll18 throws Error
//               saying where they first differ. Tokens, words and sentences
//               are spans [start, end) of that sequence.
//   Tokens      exact span match; Sentences: exact match of the span from
//               the first token's start to the last token's end.
//   Words       aligned over the whole document (sentence boundaries play no
//               part): a word outside any multiword region aligns with the
//               other side's word of the same span; inside a region words
//               align by the longest common subsequence of their lowercased
//               forms (see align_words below for how regions are delimited).
//   UPOS, UAS, LAS, CLAS
//               over aligned words: equal UPOS; heads aligned to each other
//               (the root to the root); that and equal universal deprel (the
//               part before ':'); LAS over the words whose (universal) deprel
//               is a content relation only (the gold word's, for aligned
//               pairs; the script's list, is_content_deprel below).
//   Score       precision = correct / system, recall = correct / gold,
//               F1 = 2 correct / (gold + system) (each 0 when its divisor is),
//               aligned accuracy = correct / aligned words (UPOS and the
//               attachment scores only).
//
// Where we differ, and why:
//   - A head of -1 (CoNLL-U's '_', which the script refuses to load) is an
//     unparsed word: wrong for UAS, LAS and CLAS on either side.
//   - Python lowercases with the full Unicode mapping; we lowercase ASCII,
//     Latin-1, Latin Extended-A, Greek, Cyrillic, Armenian and fullwidth
//     Latin (text/utf8.hpp's append_lowercase). Forms of other scripts compare as
//     they are, which differs only where two forms differ in case alone.
//   - A sentence without tokens is skipped (the script cannot load one).
//   - Only Zs is removed, as in the script (so a tab or U+2028 inside a token
//     stays; no CoNLL-U FORM holds a tab, and Documents' tokens hold none).
#ifndef SYNATTN_TEXT_CONLL18_EVAL_HPP
#define SYNATTN_TEXT_CONLL18_EVAL_HPP

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "document.hpp"
#include "utf8.hpp"

namespace synattn {
namespace text {

// One metric's counts. `aligned` is the number of aligned words the metric
// looked at, for metrics over aligned words (UPOS, UAS, LAS, CLAS); -1 for
// Tokens, Sentences and Words, which have no aligned accuracy.
struct Score {
  long long gold = 0, system = 0, correct = 0;
  long long aligned = -1;

  double precision() const { return system > 0 ? double(correct) / double(system) : 0.0; }
  double recall() const { return gold > 0 ? double(correct) / double(gold) : 0.0; }
  // The script's form of 2PR/(P+R): the same where both are defined, and 0
  // (not a division by zero) when nothing was found.
  double f1() const { return gold + system > 0 ? 2.0 * double(correct) / double(gold + system) : 0.0; }
  bool has_aligned_accuracy() const { return aligned >= 0; }
  double aligned_accuracy() const { return aligned > 0 ? double(correct) / double(aligned) : 0.0; }
};

struct Conll18Scores {
  Score tokens, sentences, words, upos, uas, las, clas;
};

namespace detail {

// The code point at text[i], moving i past it; text/utf8.hpp does the
// decoding, and a bad sequence is an error naming the side and the byte.
inline char32_t decode_utf8(const std::string& text, std::size_t& i, const char* side) {
  if (text::detail::sequence_at(text, i) <= 0)
    throw Error(std::string("evaluate_conll18: the ") + side + " text is not UTF-8 at byte " + std::to_string(i));
  return next_code_point(text, i);
}

// Unicode category Zs (space separators), the characters the script (since
// its version 1.1) deletes from FORMs: U+0020, U+00A0, U+1680, U+2000-U+200A,
// U+202F, U+205F, U+3000. Not tab or newline (Cc), U+2028 (Zl), U+2029 (Zp).
inline bool is_space_separator(char32_t c) {
  return c == 0x20 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}


struct Span {
  long long start = 0, end = 0;
};

constexpr int kRoot = -1, kUnparsed = -2, kNotAligned = -3;

// A word as the script sees it: a plain word has its token's span; every word
// of a multiword token has the whole multiword token's span.
struct EvalWord {
  Span span;
  bool multiword = false;
  std::u32string form;  // lowercased, for the LCS
  std::string upos, deprel;  // deprel: the universal part
  int head = kUnparsed;  // index into the side's words, kRoot or kUnparsed
};

struct Side {
  std::u32string chars;              // the whitespace-free sequence
  std::vector<std::size_t> byte_of;  // each char's byte offset in Document::text
  std::vector<Span> tokens, sentences;
  std::vector<EvalWord> words;
};

inline Side load(const Document& doc, const char* side) {
  const std::string fn = std::string("evaluate_conll18: ") + side + " ";
  Side out;
  std::size_t previous_end = 0;
  for (std::size_t s = 0; s < doc.sentences.size(); ++s) {
    const Sentence& sentence = doc.sentences[s];
    const std::string where = fn + "sentence " + std::to_string(s) +
                              (sentence.sent_id.empty() ? std::string() : " (" + sentence.sent_id + ")");
    if (sentence.tokens.empty()) continue;  // no text, no span: see the top
    const int first_word = static_cast<int>(out.words.size());
    const int n_words = static_cast<int>(sentence.words.size());
    int next_word = 0;
    for (std::size_t t = 0; t < sentence.tokens.size(); ++t) {
      const Token& token = sentence.tokens[t];
      const CharSpan bytes = token.span.bytes;
      if (bytes.begin < 0 || bytes.end < bytes.begin || static_cast<std::size_t>(bytes.end) > doc.text.size() ||
          static_cast<std::size_t>(bytes.begin) < previous_end)
        throw Error(where + " token " + std::to_string(t) + ": byte span " + synattn::detail::span_text(bytes) +
                    " is outside the text (" + std::to_string(doc.text.size()) +
                    " bytes) or before the previous token's end " + std::to_string(previous_end));
      previous_end = static_cast<std::size_t>(bytes.end);
      Span span;
      span.start = static_cast<long long>(out.chars.size());
      for (std::size_t i = static_cast<std::size_t>(bytes.begin); i < previous_end;) {
        const std::size_t at = i;
        const char32_t c = decode_utf8(doc.text, i, side);
        if (i > previous_end)
          throw Error(where + " token " + std::to_string(t) + ": byte span " + synattn::detail::span_text(bytes) +
                      " ends inside a character");
        if (is_space_separator(c)) continue;
        out.chars += c;
        out.byte_of.push_back(at);
      }
      span.end = static_cast<long long>(out.chars.size());
      // The script refuses an empty FORM; an empty span would also match any
      // other side's empty span at the same place.
      if (span.end == span.start)
        throw Error(where + " token " + std::to_string(t) + " is empty once whitespace is removed");
      out.tokens.push_back(span);
      if (token.word_count < 1 || token.first_word != next_word || token.first_word + token.word_count > n_words)
        throw Error(where + " token " + std::to_string(t) + " covers words [" + std::to_string(token.first_word) +
                    ", " + std::to_string(token.first_word + token.word_count) + "), expected a non-empty range from " +
                    std::to_string(next_word) + " within the sentence's " + std::to_string(n_words) + " words");
      for (int w = token.first_word; w < token.first_word + token.word_count; ++w) {
        const Word& word = sentence.words[static_cast<std::size_t>(w)];
        EvalWord e;
        e.span = span;
        e.multiword = token.multiword();
        for (std::size_t i = 0; i < word.form.size();) {
          const char32_t c = decode_utf8(word.form, i, side);
          // The script strips Zs from a token line's FORM, which is a plain
          // word's FORM too, but not from a multiword token's word lines.
          if (!e.multiword && is_space_separator(c)) continue;
          append_lowercase(c, e.form);
        }
        e.upos = word.upos;
        e.deprel = word.deprel.substr(0, word.deprel.find(':'));
        if (word.head < -1 || word.head > n_words)
          throw Error(where + " word " + std::to_string(w) + ": head " + std::to_string(word.head) +
                      " is outside the sentence's " + std::to_string(n_words) + " words");
        e.head = word.head == -1 ? kUnparsed : word.head == 0 ? kRoot : first_word + word.head - 1;
        out.words.push_back(std::move(e));
      }
      next_word = token.first_word + token.word_count;
    }
    if (next_word != n_words)
      throw Error(where + ": its tokens cover " + std::to_string(next_word) + " of its " + std::to_string(n_words) +
                  " words");
    out.sentences.push_back({out.tokens[out.tokens.size() - sentence.tokens.size()].start, out.tokens.back().end});
  }
  return out;
}

inline std::string excerpt(const std::u32string& chars, std::size_t from, std::size_t count) {
  if (from >= chars.size()) return "(end of text)";
  std::string out = "\"";
  for (std::size_t i = from; i < chars.size() && i < from + count; ++i) encode_utf8(chars[i], out);
  return out + "\"";
}

inline void check_same_characters(const Side& gold, const Side& system) {
  if (gold.chars == system.chars) return;
  std::size_t i = 0;
  while (i < gold.chars.size() && i < system.chars.size() && gold.chars[i] == system.chars[i]) ++i;
  auto byte = [i](const Side& s) { return i < s.byte_of.size() ? "byte " + std::to_string(s.byte_of[i]) : "its end"; };
  const std::size_t before = std::min<std::size_t>(i, 10);
  throw Error("evaluate_conll18: the gold and system texts differ (whitespace removed) at character " +
              std::to_string(i) + " (gold text " + byte(gold) + ", system text " + byte(system) + "), after " +
              excerpt(gold.chars, i - before, before) + ": gold has " + excerpt(gold.chars, i, 20) +
              ", system has " + excerpt(system.chars, i, 20));
}

// Tokens and sentences: both lists are sorted; a pair with the same start
// counts when it has the same end too.
inline Score spans_score(const std::vector<Span>& gold, const std::vector<Span>& system) {
  Score score;
  score.gold = static_cast<long long>(gold.size());
  score.system = static_cast<long long>(system.size());
  std::size_t g = 0, s = 0;
  while (g < gold.size() && s < system.size()) {
    if (system[s].start < gold[g].start) {
      ++s;
    } else if (gold[g].start < system[s].start) {
      ++g;
    } else {
      score.correct += gold[g].end == system[s].end;
      ++g, ++s;
    }
  }
  return score;
}

// Whether words[i] lies past a multiword region that ends at `end`: a
// multiword token's word when it starts at or after the end, a plain word
// when it ends after it (so a plain word sticking out closes the region and
// is left to the span alignment, while a multiword token sticking out widens
// the region).
inline bool past_region(const std::vector<EvalWord>& words, std::size_t i, long long end) {
  if (i >= words.size()) return true;
  return words[i].multiword ? words[i].span.start >= end : words[i].span.end > end;
}

// The alignment: for each system word, the index of its gold word, or
// kNotAligned. Follows the script's align_words:
//   - While neither current word is in a multiword token, words align when
//     their spans are equal; otherwise the one starting first (gold on a tie)
//     is passed over.
//   - When either is, a region opens at the multiword token's word. The
//     other side's current word, if plain and starting earlier, is passed
//     over (once only, as the script does: a second earlier plain word falls
//     into the region, where it can only align by form). The region's end
//     starts at the multiword token's end; words are taken in order of start
//     (gold first on a tie) while either side's next word is not past the
//     region, and each multiword token taken moves the end to its own end if
//     later. The gold and system words taken align by the LCS of their
//     lowercased forms, the script's way of walking the table (a pair whose
//     forms are equal is taken at once; on no match, gold steps first when
//     that keeps the LCS length).
inline std::vector<int> align_words(const std::vector<EvalWord>& gold, const std::vector<EvalWord>& system) {
  std::vector<int> gold_of(system.size(), kNotAligned);
  std::size_t gi = 0, si = 0;
  while (gi < gold.size() && si < system.size()) {
    if (!gold[gi].multiword && !system[si].multiword) {
      if (gold[gi].span.start == system[si].span.start && gold[gi].span.end == system[si].span.end) {
        gold_of[si++] = static_cast<int>(gi++);
      } else if (gold[gi].span.start <= system[si].span.start) {
        ++gi;
      } else {
        ++si;
      }
      continue;
    }
    long long end = 0;
    if (gold[gi].multiword) {
      end = gold[gi].span.end;
      if (!system[si].multiword && system[si].span.start < gold[gi].span.start) ++si;
    } else {
      end = system[si].span.end;
      if (!gold[gi].multiword && gold[gi].span.start < system[si].span.start) ++gi;
    }
    const std::size_t gs = gi, ss = si;
    while (!past_region(gold, gi, end) || !past_region(system, si, end)) {
      const bool take_gold = gi < gold.size() && (si >= system.size() || gold[gi].span.start <= system[si].span.start);
      const EvalWord& w = take_gold ? gold[gi++] : system[si++];
      if (w.multiword) end = std::max(end, w.span.end);
    }
    const std::size_t ng = gi - gs, ns = si - ss;
    if (ng == 0 || ns == 0) continue;
    // lcs[g][s]: the LCS length of gold[gs+g..gi) and system[ss+s..si).
    std::vector<std::vector<int>> lcs(ng + 1, std::vector<int>(ns + 1, 0));
    for (std::size_t g = ng; g-- > 0;)
      for (std::size_t s = ns; s-- > 0;)
        lcs[g][s] = gold[gs + g].form == system[ss + s].form ? 1 + lcs[g + 1][s + 1]
                                                             : std::max(lcs[g + 1][s], lcs[g][s + 1]);
    std::size_t g = 0, s = 0;
    while (g < ng && s < ns) {
      if (gold[gs + g].form == system[ss + s].form) {
        gold_of[ss + s++] = static_cast<int>(gs + g++);
      } else if (lcs[g][s] == lcs[g + 1][s]) {
        ++g;
      } else {
        ++s;
      }
    }
  }
  return gold_of;
}

// Content relations, the script's CONTENT_DEPRELS (CLAS counts only these).
inline bool is_content_deprel(const std::string& universal) {
  static const char* const content[] = {"nsubj",  "obj",      "iobj",   "csubj",     "ccomp",      "xcomp",
                                        "obl",    "vocative", "expl",   "dislocated", "advcl",     "advmod",
                                        "discourse", "nmod",  "appos",  "nummod",    "acl",        "amod",
                                        "conj",   "fixed",    "flat",   "compound",  "list",       "parataxis",
                                        "orphan", "goeswith", "reparandum", "root",  "dep"};
  for (const char* c : content)
    if (universal == c) return true;
  return false;
}

}  // namespace detail

// Scores `system` against `gold` by the CoNLL 2018 rules (see the top).
// Throws Error when their texts differ once whitespace is removed, or when a
// Document is malformed (token spans out of order or outside the text, tokens
// not covering their sentence's words in order, heads outside the sentence).
inline Conll18Scores evaluate_conll18(const Document& gold, const Document& system) {
  namespace d = text::detail;
  const d::Side g = d::load(gold, "gold"), s = d::load(system, "system");
  d::check_same_characters(g, s);

  Conll18Scores out;
  out.tokens = d::spans_score(g.tokens, s.tokens);
  out.sentences = d::spans_score(g.sentences, s.sentences);
  const std::vector<int> gold_of = d::align_words(g.words, s.words);

  const long long n_gold = static_cast<long long>(g.words.size()), n_system = static_cast<long long>(s.words.size());
  for (Score* score : {&out.words, &out.upos, &out.uas, &out.las}) {
    score->gold = n_gold;
    score->system = n_system;
  }
  for (const d::EvalWord& w : g.words) out.clas.gold += d::is_content_deprel(w.deprel);
  for (const d::EvalWord& w : s.words) out.clas.system += d::is_content_deprel(w.deprel);
  out.upos.aligned = out.uas.aligned = out.las.aligned = out.clas.aligned = 0;

  for (std::size_t si = 0; si < s.words.size(); ++si) {
    if (gold_of[si] == d::kNotAligned) continue;
    const d::EvalWord& gw = g.words[static_cast<std::size_t>(gold_of[si])];
    const d::EvalWord& sw = s.words[si];
    // The system head, as a gold word: the root maps to the root, a head
    // that is not aligned to nothing.
    const int system_head = sw.head >= 0 ? gold_of[static_cast<std::size_t>(sw.head)] : sw.head;
    const bool attached = gw.head != d::kUnparsed && gw.head == system_head;
    const bool labelled = attached && gw.deprel == sw.deprel;
    ++out.words.correct;
    ++out.upos.aligned, ++out.uas.aligned, ++out.las.aligned;
    out.upos.correct += gw.upos == sw.upos;
    out.uas.correct += attached;
    out.las.correct += labelled;
    if (d::is_content_deprel(gw.deprel)) {  // the script filters aligned pairs on the gold word
      ++out.clas.aligned;
      out.clas.correct += labelled;
    }
  }
  return out;
}

// The script's `-v` table for our metrics, in percent with 2 decimals, one
// line each (every line ends in '\n'); AligndAcc is blank for Tokens,
// Sentences and Words, as there.
inline std::string format_conll18(const Conll18Scores& scores) {
  std::string out =
      "Metric     | Precision |    Recall |  F1 Score | AligndAcc\n"
      "-----------+-----------+-----------+-----------+-----------\n";
  const std::pair<const char*, const Score*> rows[] = {
      {"Tokens", &scores.tokens}, {"Sentences", &scores.sentences}, {"Words", &scores.words},
      {"UPOS", &scores.upos},     {"UAS", &scores.uas},             {"LAS", &scores.las},
      {"CLAS", &scores.clas}};
  for (const auto& row : rows) {
    const Score& s = *row.second;
    char line[128];
    std::snprintf(line, sizeof line, "%-11s|%10.2f |%10.2f |%10.2f |", row.first, 100 * s.precision(),
                  100 * s.recall(), 100 * s.f1());
    out += line;
    if (s.has_aligned_accuracy()) {
      std::snprintf(line, sizeof line, "%10.2f", 100 * s.aligned_accuracy());
      out += line;
    }
    out += '\n';
  }
  return out;
}

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_CONLL18_EVAL_HPP
