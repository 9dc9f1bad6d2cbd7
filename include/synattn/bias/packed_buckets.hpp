// synattn — the bucket input of packed documents: many sentences packed into
// one sequence (a forest), kept as each sentence's own bucket block (sum of
// n_i^2 bytes) and its offset, plus one rule for pairs across sentences,
// instead of an n x n block. Memory grows with the sentences, not with the
// square of the document, and the attention layer (PackedSelfAttentionInput,
// attention/inputs.hpp) computes only the keys the sentence window leaves
// visible.
//
// Pair (i, j) of sequence b, i in sentence s and j in sentence t:
//   s == t                    the sentence's block at (i - start_s, j - start_s)
//   0 < |s - t| <= window     cross_bucket (-1 masks these too)
//   root links, i and j the roots of s and t
//                             cross_bucket (a few key links between
//                             sentences)
//   otherwise                 masked (-1)
// window = 0 keeps attention within each sentence; window = 1 adds its
// neighbours. Positions past a sequence's sentences are padding.
//
//   PackedBuckets packed(/*window=*/1, /*cross_bucket=*/bucketing.num_buckets() - 1);
//   packed.begin_sequence();
//   packed.add_sentence(block_of_sentence_0);  // (n_0, n_0) int8
//   packed.add_sentence(block_of_sentence_1);
//
// make_packed_buckets() builds one from trees.
#ifndef SYNATTN_BIAS_PACKED_BUCKETS_HPP
#define SYNATTN_BIAS_PACKED_BUCKETS_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../tree/dependency_tree.hpp"
#include "../tree/distance.hpp"
#include "bucket_batch.hpp"
#include "bucketing.hpp"

namespace synattn {

// Whether each sentence's root also sees every other sentence's root.
enum class RootLinks { none, all_roots };

class PackedBuckets {
 public:
  // No sequences, window 0, cross-sentence pairs masked.
  PackedBuckets() = default;
  // window >= 0; cross_bucket in [-1, 127]: the bucket of the pairs across
  // sentences that the window (or a root link) keeps (-1 masks them).
  PackedBuckets(int window, int cross_bucket, RootLinks links = RootLinks::none)
      : window_(window), root_links_(links == RootLinks::all_roots) {
    if (window < 0) throw Error("PackedBuckets: window must be >= 0, got " + std::to_string(window));
    if (cross_bucket < -1 || cross_bucket > std::numeric_limits<std::int8_t>::max())
      throw Error("PackedBuckets: cross_bucket must be in [-1, 127], got " + std::to_string(cross_bucket));
    cross_ = static_cast<std::int8_t>(cross_bucket);
    max_bucket_ = cross_;
  }

  // Starts the next sequence; the sentences added after it are its own.
  void begin_sequence() {
    first_sentence_.push_back(static_cast<Index>(start_.size()));
    lengths_.push_back(0);
  }

  // Appends a sentence of block.rows() words to the current sequence: its
  // square bucket block, values in [-1, 127] (-1 masks the pair), and its
  // root word (-1: none; root links need one per sentence).
  void add_sentence(const Eigen::Ref<const BucketBlock>& block, Index root = -1) {
    const std::string fn = "PackedBuckets::add_sentence";
    if (lengths_.empty()) throw Error(fn + ": call begin_sequence() before the first sentence");
    const Index n = block.rows(), sentence = static_cast<Index>(start_.size());
    if (block.cols() != n)
      throw Error(fn + ": sentence " + std::to_string(sentence) + "'s block is " + std::to_string(n) + " x " +
                  std::to_string(block.cols()) + "; a sentence's block is square");
    if (n == 0) throw Error(fn + ": sentence " + std::to_string(sentence) + " has no words");
    if (root < -1 || root >= n || (root_links_ && root < 0))
      throw Error(fn + ": sentence " + std::to_string(sentence) + " has root " + std::to_string(root) + "; expected " +
                  (root_links_ ? "" : "-1 (none) or ") + "a word in [0, " + std::to_string(n) + ")" +
                  (root_links_ ? " (root links need every sentence's root)" : ""));
    for (Index i = 0; i < n; ++i)
      for (Index j = 0; j < n; ++j) {
        const int v = block(i, j);
        if (v < -1)
          throw Error(fn + ": sentence " + std::to_string(sentence) + " has bucket " + std::to_string(v) + " at (" +
                      std::to_string(i) + ", " + std::to_string(j) + "); expected -1 (masked) or a bucket >= 0");
        max_bucket_ = std::max<int>(max_bucket_, v);
      }
    if (lengths_.back() > std::numeric_limits<int>::max() - n)
      throw Error(fn + ": sequence " + std::to_string(lengths_.size() - 1) + " would exceed " +
                  std::to_string(std::numeric_limits<int>::max()) + " positions");
    start_.push_back(lengths_.back());
    offset_.push_back(static_cast<Index>(blocks_.size()));
    length_.push_back(n);
    root_.push_back(root);
    for (Index i = 0; i < n; ++i) blocks_.insert(blocks_.end(), block.row(i).data(), block.row(i).data() + n);
    lengths_.back() += static_cast<int>(n);
  }

  int window() const noexcept { return window_; }
  bool root_links() const noexcept { return root_links_; }
  int cross_bucket() const noexcept { return cross_; }
  // The largest bucket any pair has (-1 if every pair is masked).
  int max_bucket() const noexcept { return max_bucket_; }
  Index sequences() const noexcept { return static_cast<Index>(lengths_.size()); }
  // Words of each sequence: the layer's lengths.
  const std::vector<int>& lengths() const noexcept { return lengths_; }
  Index sentences(Index b) const { return sentence_end(b) - first_sentence_[at(b)]; }
  // Sentence s of sequence b: its first position in the sequence and its words.
  Index sentence_start(Index b, Index s) const { return start_[sentence_index(b, s)]; }
  Index sentence_length(Index b, Index s) const { return length_[sentence_index(b, s)]; }
  // Its root word's position in the sequence, or -1.
  Index sentence_root(Index b, Index s) const {
    const std::size_t k = sentence_index(b, s);
    return root_[k] < 0 ? -1 : start_[k] + root_[k];
  }
  // True when position p of sequence b is a root that root links join.
  bool linked_root(Index b, Index p) const { return root_links_ && sentence_root(b, sentence_of(b, p)) == p; }
  // Row i of sentence s of sequence b's block (sentence_length(b, s) values).
  const std::int8_t* sentence_row(Index b, Index s, Index i) const {
    const std::size_t k = sentence_index(b, s);
    return blocks_.data() + offset_[k] + i * length_[k];
  }
  // Bytes of the blocks: sum of n_i^2.
  Index block_bytes() const noexcept { return static_cast<Index>(blocks_.size()); }

  // The sentence of sequence b holding position p (< lengths()[b]).
  Index sentence_of(Index b, Index p) const {
    const auto first = start_.begin() + first_sentence_[at(b)], last = start_.begin() + sentence_end(b);
    return static_cast<Index>(std::upper_bound(first, last, p) - first) - 1;
  }

  // The bucket of pair (i, j) of sequence b (-1 past its words).
  std::int8_t bucket(Index b, Index i, Index j) const {
    const Index len = lengths_[at(b)];
    if (i < 0 || j < 0 || i >= len || j >= len) return -1;
    const Index s = sentence_of(b, i), t = sentence_of(b, j);
    if (s == t) return sentence_row(b, s, i - sentence_start(b, s))[j - sentence_start(b, s)];
    if (std::abs(s - t) <= window_) return cross_;
    return root_links_ && sentence_root(b, s) == i && sentence_root(b, t) == j ? cross_ : std::int8_t(-1);
  }

  // The same pairs as a dense (sequences() * n, n) block, padding -1: what
  // the layer's dense input would be (for tests, and to compare the paths).
  BucketBlock dense(Index n) const {
    for (Index b = 0; b < sequences(); ++b)
      if (lengths_[at(b)] > n)
        throw Error("PackedBuckets::dense: sequence " + std::to_string(b) + " has " + std::to_string(lengths_[at(b)]) +
                    " words, more than n = " + std::to_string(n));
    BucketBlock out = BucketBlock::Constant(sequences() * n, n, -1);
    for (Index b = 0; b < sequences(); ++b)
      for (Index i = 0; i < lengths_[at(b)]; ++i)
        for (Index j = 0; j < lengths_[at(b)]; ++j) out(b * n + i, j) = bucket(b, i, j);
    return out;
  }

 private:
  std::size_t at(Index b) const {
    if (b < 0 || b >= sequences())
      throw Error("PackedBuckets: sequence " + std::to_string(b) + " out of range (" + std::to_string(sequences()) +
                  " sequences)");
    return static_cast<std::size_t>(b);
  }
  Index sentence_end(Index b) const {
    const std::size_t k = at(b);
    return k + 1 < first_sentence_.size() ? first_sentence_[k + 1] : static_cast<Index>(start_.size());
  }
  std::size_t sentence_index(Index b, Index s) const {
    if (s < 0 || s >= sentences(b))
      throw Error("PackedBuckets: sentence " + std::to_string(s) + " of sequence " + std::to_string(b) +
                  " out of range (" + std::to_string(sentences(b)) + " sentences)");
    return static_cast<std::size_t>(first_sentence_[at(b)] + s);
  }

  int window_ = 0;
  bool root_links_ = false;
  std::int8_t cross_ = -1;
  int max_bucket_ = -1;
  std::vector<Index> first_sentence_;  // per sequence: its first sentence
  std::vector<int> lengths_;           // per sequence: words
  std::vector<Index> start_;           // per sentence: first position in its sequence
  std::vector<Index> offset_;          // per sentence: first byte of its block in blocks_
  std::vector<Index> length_;          // per sentence: words
  std::vector<Index> root_;            // per sentence: its root word, or -1
  std::vector<std::int8_t> blocks_;    // the sentences' blocks, row-major, one after another
};

// The bucket of a pair in two different trees of a forest (docs/math.md §2): the
// bucketing's cross-tree distance, up and down alike when directed.
inline int cross_tree_bucket(const Bucketing& bucketing) {
  const int m = bucketing.cross_distance();
  return bucketing.kind() == BucketKind::Directed ? bucketing.bucket(m, m) : bucketing.bucket(m);
}

// How make_packed_buckets packs.
struct PackingOptions {
  int window = 0;                          // sentences apart that still see each other
  int max_tree_distance = -1;              // >= 0: mask a sentence's pairs further apart in its tree; -1: keep all
  RootLinks root_links = RootLinks::none;  // all_roots: every sentence's root sees every other root
};

// Packs documents (each a list of sentence trees, one sequence per document)
// with `bucketing`. Pairs across sentences that the window or a root link
// keeps get the bucket of the bucketing's cross-tree distance (its last
// bucket, as in a packed forest, docs/math.md §2). The hard cutoff
// (max_tree_distance) makes each sentence's attention sparse as well; a
// sentence's root is its tree's first.
inline PackedBuckets make_packed_buckets(const std::vector<std::vector<DependencyTree>>& documents,
                                         const Bucketing& bucketing, const PackingOptions& options = {}) {
  PackedBuckets packed(options.window, cross_tree_bucket(bucketing), options.root_links);
  for (const std::vector<DependencyTree>& document : documents) {
    packed.begin_sequence();
    for (const DependencyTree& tree : document) {
      BucketBatch one = make_bucket_batch({tree}, bucketing);
      if (options.max_tree_distance >= 0) {
        const RowMajorMatrix<std::int16_t> d = pairwise_distances<std::int16_t>(tree);
        one.buckets = (d.array() > options.max_tree_distance).select(std::int8_t(-1), one.buckets);
      }
      packed.add_sentence(one.buckets, tree.roots().empty() ? -1 : tree.roots().front());
    }
  }
  return packed;
}

}  // namespace synattn

#endif  // SYNATTN_BIAS_PACKED_BUCKETS_HPP
