// synattn — a batch of packed documents for the tagger: each sequence the
// words of several corpus sentences one after another (a forest, docs/math.md §1),
// its buckets a PackedBuckets (bias/packed_buckets.hpp: each sentence's own
// block plus the sentence window) instead of an n x n block.
//
//   PackedTokenBatch batch;
//   make_packed_token_batch(corpus, {chunk_0, chunk_1}, {/*window=*/1}, word_dropout, batch);
//   model.loss_and_backward({ids, batch.buckets}, labels, cache, &dropout);
//
// A sentence's ids, labels and word dropout are exactly make_token_batch's
// for it (dropout keyed by its corpus index), so packing changes only what
// the attention sees. Sequences are padded to the longest (ids kPad, labels
// kIgnore).
#ifndef SYNATTN_DATA_PACKED_BATCH_HPP
#define SYNATTN_DATA_PACKED_BATCH_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../bias/packed_buckets.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "token_batch.hpp"

namespace synattn {

struct PackedTokenBatch {
  RowMajorMatrix<std::int32_t> ids;     // (batch, n)
  RowMajorMatrix<std::int32_t> labels;  // (batch, n)
  PackedBuckets buckets;                // batch sequences; its lengths() are the sequences'
  std::size_t tokens = 0;               // labels != kIgnore
  std::size_t dropped = 0;              // words word dropout replaced by kUnk

  int batch() const noexcept { return static_cast<int>(ids.rows()); }
  int n() const noexcept { return static_cast<int>(ids.cols()); }
  const std::vector<int>& lengths() const noexcept { return buckets.lengths(); }
};

// Fills `out` with one sequence per entry of `sequences`, each the corpus
// sentences it lists, in order. The corpus needs a bucketing and one tree
// view (a packing has no fused views); pairs across sentences that
// options.window or a root link keeps get the bucketing's cross-tree bucket
// (cross_tree_bucket), as make_packed_buckets gives them. The corpus keeps
// buckets, not distances, so options.max_tree_distance must be -1 (pack the
// trees with make_packed_buckets for a cutoff).
inline void make_packed_token_batch(const EncodedCorpus& corpus, const std::vector<std::vector<std::size_t>>& sequences,
                                    const PackingOptions& options, const WordDropout& dropout, PackedTokenBatch& out) {
  const std::string fn = "make_packed_token_batch";
  if (!corpus.bucketing()) throw Error(fn + ": the corpus has no bucketing; a packing is made of buckets");
  if (corpus.views() != 1)
    throw Error(fn + ": the corpus has " + std::to_string(corpus.views()) + " tree views; a packing takes one");
  if (options.max_tree_distance >= 0)
    throw Error(fn + ": max_tree_distance = " + std::to_string(options.max_tree_distance) +
                ", but a corpus keeps buckets, not tree distances; use make_packed_buckets for a cutoff");
  if (sequences.empty()) throw Error(fn + ": 'sequences' is empty, expected >= 1 sequence");
  long long n = 0;
  for (std::size_t b = 0; b < sequences.size(); ++b) {
    if (sequences[b].empty()) throw Error(fn + ": sequences[" + std::to_string(b) + "] holds no sentence");
    long long words = 0;
    for (std::size_t k = 0; k < sequences[b].size(); ++k) {
      const std::size_t i = sequences[b][k];
      if (i >= corpus.size())
        throw Error(fn + ": sequences[" + std::to_string(b) + "][" + std::to_string(k) + "] = " + std::to_string(i) +
                    ", expected < " + std::to_string(corpus.size()) + " (the corpus's sentences)");
      words += corpus.length(i);
    }
    n = words > n ? words : n;
  }
  const Index batch = static_cast<Index>(sequences.size());
  // Every check is above: nothing below refuses (a corpus tree always has a root).
  PackedBuckets packed(options.window, cross_tree_bucket(*corpus.bucketing()), options.root_links);
  out.ids.resize(batch, static_cast<Index>(n));
  out.labels.resize(batch, static_cast<Index>(n));
  out.ids.setConstant(Vocabulary::kPad);
  out.labels.setConstant(LabelSet::kIgnore);
  out.tokens = 0;
  out.dropped = 0;
  for (Index b = 0; b < batch; ++b) {
    packed.begin_sequence();
    Index at = 0;
    for (std::size_t i : sequences[static_cast<std::size_t>(b)]) {
      corpus.words(i, dropout, out.ids.row(b).data() + at, out.labels.row(b).data() + at, out.tokens, out.dropped);
      packed.add_sentence(corpus.buckets(i), corpus.root(i));
      at += corpus.length(i);
    }
  }
  out.buckets = std::move(packed);
}

}  // namespace synattn

#endif  // SYNATTN_DATA_PACKED_BATCH_HPP
