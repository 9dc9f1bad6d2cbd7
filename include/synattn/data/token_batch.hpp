// synattn — one training/evaluation batch of a tagging corpus: padded token
// ids, attention buckets from the gold trees, labels.
//
// Shapes (batch sentences, n = the longest of them):
//   ids      (batch, n) int32, row-major; kPad = 0 on padding
//   lengths  batch words per sentence
//   buckets  (batch * n, n) int8, sentence b in rows [b n, (b + 1) n):
//            bucketize(pairwise_distances) or bucketize_directed(up, down)
//            in the length x length corner, -1 (masked) on every pair with a
//            padding position; 0 x 0 when no bucketing is asked for
//   labels   (batch, n) int32; LabelSet::kIgnore (-100) on padding and on
//            labels outside the label set
//   tokens   labels that count (not -100)
//
// make_token_batch reuses `out`'s buffers: a batch of the same shape as the
// previous one allocates nothing (Eigen's resize keeps storage when the size
// is unchanged), so steady-state training with repeating shapes does not
// touch the allocator (the distance scratch
// only grows, to the longest sentence seen).
#ifndef SYNATTN_DATA_TOKEN_BATCH_HPP
#define SYNATTN_DATA_TOKEN_BATCH_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../bias/bucketing.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "../special_values.hpp"
#include "../tree/distance.hpp"
#include "../util/random.hpp"
#include "batching.hpp"
#include "tagging_corpus.hpp"
#include "vocabulary.hpp"

namespace synattn {

// Word dropout while batching: a word whose vocabulary id is a singleton
// becomes kUnk when word_dropout_stream(seed, epoch, sentence).uniform(j) < p,
// where `sentence` is the index into the sentence vector given to
// make_token_batch and j the word position. Redrawn each epoch; reproducible.
struct WordDropout {
  bool enabled = false;
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  double p = 0.5;

  static WordDropout none() { return {}; }
  static WordDropout for_epoch(std::uint64_t seed, std::uint64_t epoch, double p = 0.5) {
    if (!(p >= 0.0 && p <= 1.0))
      throw Error("WordDropout::for_epoch: p must be in [0, 1], got " + std::to_string(p));
    return WordDropout{true, seed, epoch, p};
  }
};

struct TokenBatch {
  RowMajorMatrix<std::int32_t> ids;     // (batch, n)
  std::vector<int> lengths;             // (batch)
  RowMajorMatrix<std::int8_t> buckets;  // (batch * n, n) or 0 x 0
  RowMajorMatrix<std::int32_t> labels;  // (batch, n)
  std::size_t tokens = 0;               // labels != -100
  std::size_t dropped = 0;              // words word dropout replaced by kUnk

  int batch() const noexcept { return static_cast<int>(ids.rows()); }
  int n() const noexcept { return static_cast<int>(ids.cols()); }

  // Distance scratch (int8, at least n x n; only grows), reused across calls.
  RowMajorMatrix<std::int8_t> scratch_distance, scratch_up, scratch_down;
};

namespace detail {
inline void check_token_batch_inputs(const std::vector<TaggedSentence>& sentences,
                                     const std::vector<std::size_t>& indices,
                                     const Bucketing* bucketing) {
  if (indices.empty()) throw Error("make_token_batch: 'indices' is empty, expected >= 1 sentence");
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= sentences.size())
      throw Error("make_token_batch: indices[" + std::to_string(k) + "] = " + std::to_string(indices[k]) +
                  ", expected < " + std::to_string(sentences.size()) + " (the number of sentences)");
    const TaggedSentence& s = sentences[indices[k]];
    if (s.tree.size() != s.size() || static_cast<int>(s.labels.size()) != s.size())
      throw Error("make_token_batch: sentence " + s.id + " (indices[" + std::to_string(k) + "]) has " +
                  std::to_string(s.size()) + " forms, " + std::to_string(s.labels.size()) +
                  " labels and a tree of " + std::to_string(s.tree.size()) +
                  " words; expected equal counts (build it with to_tagged_sentence)");
    if (s.size() == 0)
      throw Error("make_token_batch: sentence " + s.id + " (indices[" + std::to_string(k) +
                  "]) has no words");
  }
  if (bucketing && bucketing->num_buckets() - 1 > 127)
    throw Error("make_token_batch: " + bucketing->describe() + " has more buckets than int8 holds");
}

// Scratch only grows (to the longest sentence seen), so it is allocated a
// few times per run, not per sentence.
inline void grow_scratch(RowMajorMatrix<std::int8_t>& m, int len) {
  if (m.rows() < len) m.resize(len, len);
}
}  // namespace detail

// Fills `out` with sentences[indices[0]], sentences[indices[1]], ... (see the
// file comment). `bucketing` null: no buckets (out.buckets becomes 0 x 0).
inline void make_token_batch(const std::vector<TaggedSentence>& sentences,
                             const std::vector<std::size_t>& indices, const Vocabulary& vocab,
                             const LabelSet& labels, const Bucketing* bucketing,
                             const WordDropout& dropout, TokenBatch& out) {
  detail::check_token_batch_inputs(sentences, indices, bucketing);
  const Index batch = static_cast<Index>(indices.size());
  int n = 0;
  for (std::size_t i : indices) n = sentences[i].size() > n ? sentences[i].size() : n;

  out.ids.resize(batch, n);
  out.labels.resize(batch, n);
  out.lengths.resize(indices.size());
  out.ids.setConstant(Vocabulary::kPad);
  out.labels.setConstant(LabelSet::kIgnore);
  out.tokens = 0;
  out.dropped = 0;
  if (bucketing) {
    out.buckets.resize(batch * n, n);
    out.buckets.setConstant(static_cast<std::int8_t>(kPaddingBucket));
  } else {
    out.buckets.resize(0, 0);
  }

  for (Index b = 0; b < batch; ++b) {
    const std::size_t index = indices[static_cast<std::size_t>(b)];
    const TaggedSentence& s = sentences[index];
    const int len = s.size();
    out.lengths[static_cast<std::size_t>(b)] = len;
    const RandomStream drop = word_dropout_stream(dropout.seed, dropout.epoch, index);
    for (int j = 0; j < len; ++j) {
      int id = vocab.id(s.forms[static_cast<std::size_t>(j)]);
      if (dropout.enabled && id != Vocabulary::kUnk && vocab.is_singleton(id) &&
          drop.uniform(static_cast<std::uint64_t>(j)) < dropout.p) {
        id = Vocabulary::kUnk;
        ++out.dropped;
      }
      out.ids(b, j) = id;
      const int label = labels.id(s.labels[static_cast<std::size_t>(j)]);
      out.labels(b, j) = label;
      out.tokens += label == LabelSet::kIgnore ? 0 : 1;
    }
    if (!bucketing) continue;
    // The sentence's corner of its block: distances go to scratch first
    // (bucketize maps whole blocks), then buckets straight into `out`.
    auto corner = out.buckets.block(b * n, 0, len, len);
    if (bucketing->kind() == BucketKind::Directed) {
      detail::grow_scratch(out.scratch_up, len);
      detail::grow_scratch(out.scratch_down, len);
      auto up = out.scratch_up.topLeftCorner(len, len);
      auto down = out.scratch_down.topLeftCorner(len, len);
      directed_distances<std::int8_t>(s.tree, up, down);
      bucketize_directed<std::int8_t, std::int8_t>(*bucketing, up, down, corner);
    } else {
      detail::grow_scratch(out.scratch_distance, len);
      auto dist = out.scratch_distance.topLeftCorner(len, len);
      pairwise_distances<std::int8_t>(s.tree, dist);
      bucketize<std::int8_t, std::int8_t>(*bucketing, dist, corner);
    }
  }
}

}  // namespace synattn

#endif  // SYNATTN_DATA_TOKEN_BATCH_HPP
