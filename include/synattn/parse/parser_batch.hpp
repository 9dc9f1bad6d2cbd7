// synattn — sentences as a parser reads them: ids of words and characters,
// gold heads, relations and tags, and batches of sentences padded to one
// length with the artificial root in front.
//
// A sequence of a batch is [root, w_1, .., w_n, padding..]: position 0 is the
// root, so a word's head index is its CoNLL-U HEAD. lengths[b] = n_b + 1.
// Relative-position buckets (the attention bias of a parser, which has no
// tree yet) are T5-style buckets of the signed offset j - i: exact up to 7,
// then logarithmic up to 64, 16 per direction, 31 in all; -1 on any pair with
// a padding position.
#ifndef SYNATTN_PARSE_PARSER_BATCH_HPP
#define SYNATTN_PARSE_PARSER_BATCH_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../io/conllu.hpp"
#include "../matrix.hpp"
#include "../nn/embedding.hpp"
#include "../nn/token_classifier.hpp"
#include "../util/random.hpp"
#include "char_cnn.hpp"
#include "parser_vocabulary.hpp"

namespace synattn {
namespace parse {

constexpr int kRelativePositionBuckets = 31;
// Characters of a word beyond this many are not read (its first
// kMaxWordChars - 2 and the end marker); a URL is still told apart.
constexpr int kMaxWordChars = 24;

// Bucket of the signed offset delta = j - i (key j, query i).
inline int relative_position_bucket(int delta) noexcept {
  const int a = delta < 0 ? -delta : delta;
  int b = a;
  if (a >= 8) b = std::min(15, 8 + static_cast<int>(std::log(static_cast<double>(a) / 8.0) / std::log(8.0) * 8.0));
  return delta >= 0 ? b : 15 + b;
}

// One sentence as ids. heads[i], labels[i], upos[i] describe word i + 1
// (nn::kIgnoreLabel where the data has none or the label is unknown).
struct EncodedSentence {
  std::vector<std::int32_t> words;               // n
  std::vector<std::vector<std::int32_t>> chars;  // n, each [begin, c.., end]
  std::vector<std::int32_t> heads, labels, upos;
};

inline EncodedSentence encode_words(const std::vector<std::string>& forms, const ParserVocabulary& v) {
  EncodedSentence e;
  std::vector<std::uint32_t> cps;
  e.words.reserve(forms.size());
  e.chars.reserve(forms.size());
  for (const std::string& f : forms) {
    e.words.push_back(v.word_id(f));
    utf8_code_points(f, cps);
    std::vector<std::int32_t> c;
    c.push_back(kCharBegin);
    for (std::size_t k = 0; k < cps.size() && c.size() + 1 < static_cast<std::size_t>(kMaxWordChars); ++k)
      c.push_back(v.char_id(cps[k]));
    c.push_back(kCharEnd);
    e.chars.push_back(std::move(c));
  }
  e.heads.assign(forms.size(), nn::kIgnoreLabel);
  e.labels.assign(forms.size(), nn::kIgnoreLabel);
  e.upos.assign(forms.size(), nn::kIgnoreLabel);
  return e;
}

// With gold heads, relations and tags where the sentence has them.
inline EncodedSentence encode_sentence(const ConlluSentence& s, const ParserVocabulary& v) {
  std::vector<std::string> forms;
  forms.reserve(s.words.size());
  for (const ConlluWord& w : s.words) forms.push_back(w.form);
  EncodedSentence e = encode_words(forms, v);
  for (std::size_t i = 0; i < s.words.size(); ++i) {
    const ConlluWord& w = s.words[i];
    e.heads[i] = w.head;
    const std::int32_t l = v.label_id(w.deprel), u = v.upos_id(w.upos);
    if (l >= 0) e.labels[i] = l;
    if (u >= 0) e.upos[i] = u;
  }
  return e;
}

// Word dropout while training: word w becomes the unknown word with
// probability alpha / (alpha + count(w)) (Kiperwasser & Goldberg, 2016), so
// rare words teach the unknown row and the character features.
struct WordDropoutRule {
  double alpha = 0;                // 0: off
  RandomStream stream;             // one per epoch; element = a word's global index
};

struct ParserBatch {
  Index m = 0;                                   // padded length, root included
  std::vector<int> lengths;                      // (B): words + 1
  nn::IdVector words;                            // (B * m)
  CharIdMatrix chars;                            // (B * m, kMaxWordChars)
  std::vector<int> char_lengths;                 // (B * m)
  BucketBlock buckets;                           // (B * m, m)
  nn::IdVector heads, labels, upos;              // (B * m): kIgnoreLabel on root and padding
  Index words_count = 0;                         // real words (not the roots)
  int batch() const noexcept { return static_cast<int>(lengths.size()); }
};

// Fills `out` with sentences corpus[indices[b]]. `first_word` (optional)
// gives each sentence's global word index (the word-dropout counter).
inline void make_parser_batch(const std::vector<EncodedSentence>& corpus, const std::vector<std::size_t>& indices,
                              const ParserVocabulary& v, const WordDropoutRule& dropout,
                              const std::vector<long long>* first_word, ParserBatch& out) {
  Index m = 1;
  for (std::size_t i : indices) {
    if (i >= corpus.size())
      throw Error("make_parser_batch: index " + std::to_string(i) + " is outside the " + std::to_string(corpus.size()) +
                  " sentences");
    m = std::max<Index>(m, static_cast<Index>(corpus[i].words.size()) + 1);
  }
  const Index B = static_cast<Index>(indices.size());
  out.m = m;
  out.lengths.assign(indices.size(), 0);
  out.words.setZero(B * m);
  out.chars.setZero(B * m, kMaxWordChars);
  out.char_lengths.assign(static_cast<std::size_t>(B * m), 0);
  out.heads.setConstant(B * m, nn::kIgnoreLabel);
  out.labels.setConstant(B * m, nn::kIgnoreLabel);
  out.upos.setConstant(B * m, nn::kIgnoreLabel);
  out.buckets.setConstant(B * m, m, std::int8_t(-1));
  out.words_count = 0;
  for (Index b = 0; b < B; ++b) {
    const EncodedSentence& s = corpus[indices[static_cast<std::size_t>(b)]];
    const Index n = static_cast<Index>(s.words.size());
    out.lengths[static_cast<std::size_t>(b)] = static_cast<int>(n + 1);
    out.words_count += n;
    const Index base = b * m;
    out.words[base] = kWordRoot;
    out.chars(base, 0) = kCharRoot;
    out.char_lengths[static_cast<std::size_t>(base)] = 1;
    const long long g0 = first_word ? (*first_word)[indices[static_cast<std::size_t>(b)]] : 0;
    for (Index i = 0; i < n; ++i) {
      std::int32_t w = s.words[static_cast<std::size_t>(i)];
      if (dropout.alpha > 0 && w >= kReservedWords) {
        const double p = dropout.alpha / (dropout.alpha + static_cast<double>(v.word_count(w)));
        if (dropout.stream.uniform(static_cast<std::uint64_t>(g0 + i)) < p) w = kWordUnknown;
      }
      out.words[base + i + 1] = w;
      const auto& c = s.chars[static_cast<std::size_t>(i)];
      for (std::size_t k = 0; k < c.size(); ++k) out.chars(base + i + 1, static_cast<Index>(k)) = c[k];
      out.char_lengths[static_cast<std::size_t>(base + i + 1)] = static_cast<int>(c.size());
      out.heads[base + i + 1] = s.heads[static_cast<std::size_t>(i)];
      out.labels[base + i + 1] = s.labels[static_cast<std::size_t>(i)];
      out.upos[base + i + 1] = s.upos[static_cast<std::size_t>(i)];
    }
    for (Index i = 0; i <= n; ++i)
      for (Index j = 0; j <= n; ++j)
        out.buckets(base + i, j) = static_cast<std::int8_t>(relative_position_bucket(static_cast<int>(j - i)));
  }
}

// Batches of sentences of similar length holding at most `max_tokens`
// positions (padding included) each: sentences sorted by length (stable, by
// index on ties), cut greedily, the batch order shuffled by `stream` (none:
// in order). A sentence longer than max_tokens gets a batch of its own.
inline std::vector<std::vector<std::size_t>> token_budget_batches(const std::vector<EncodedSentence>& corpus,
                                                                  long long max_tokens, const RandomStream* stream) {
  if (max_tokens < 1) throw Error("token_budget_batches: max_tokens must be >= 1, got " + std::to_string(max_tokens));
  std::vector<std::size_t> order(corpus.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return corpus[a].words.size() < corpus[b].words.size(); });
  std::vector<std::vector<std::size_t>> batches;
  std::vector<std::size_t> cur;
  long long longest = 0;
  for (std::size_t i : order) {
    const long long len = static_cast<long long>(corpus[i].words.size()) + 1;
    const long long m = std::max(longest, len);
    if (!cur.empty() && m * static_cast<long long>(cur.size() + 1) > max_tokens) {
      batches.push_back(std::move(cur));
      cur.clear();
      longest = 0;
    }
    cur.push_back(i);
    longest = std::max(longest, len);
  }
  if (!cur.empty()) batches.push_back(std::move(cur));
  if (stream) {
    // Fisher-Yates with the stream's uniforms: the order depends on the seed only.
    for (std::size_t k = batches.size(); k > 1; --k) {
      const auto j = static_cast<std::size_t>(stream->uniform(k) * static_cast<double>(k));
      std::swap(batches[k - 1], batches[std::min(j, k - 1)]);
    }
  }
  return batches;
}

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_PARSER_BATCH_HPP
