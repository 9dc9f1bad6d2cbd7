// synattn — one training/evaluation batch of a tagging corpus: padded token
// ids, attention buckets from the sentences' trees (one block per tree
// view), labels.
//
// Shapes (batch sentences, n = the longest of them, V tree views):
//   ids      (batch, n) int32, row-major; kPad = 0 on padding
//   lengths  batch words per sentence
//   buckets  (V * batch * n, n) int8, sentence b of view v in rows
//            [(v batch + b) n, (v batch + b + 1) n):
//            bucketize(pairwise_distances) or bucketize_directed(up, down)
//            of the view's tree in the length x length corner, -1 (masked)
//            on every pair with a padding position, in every view; 0 x 0
//            when no bucketing is asked for
//   labels   (batch, n) int32; LabelSet::kIgnore (-100) on padding and on
//            labels outside the label set
//   tokens   labels that count (not -100)
//
// Tree fusion: V = TaggedSentence::views(), 1 + view_trees.size(), the same
// for every sentence of a batch or corpus (else an Error naming the
// sentence). View 0 is `tree`; with V = 1 the block is the one-view
// (batch * n, n) block. TokenBatch::views() gives V back, so nothing needs
// to guess it from the block's rows.
//
// Two ways in: make_token_batch(sentences, indices, vocab, labels, bucketing,
// dropout, out) looks words up and walks trees on every call;
// EncodedCorpus does that once per corpus, and make_token_batch(corpus,
// indices, dropout, out) then only copies (measured by
// bench/bench_token_batch.cpp). Both give identical batches.
//
// make_token_batch reuses `out`'s buffers: a batch of the same shape as the
// previous one allocates nothing (Eigen's resize keeps storage when the size
// is unchanged), so steady-state training with repeating shapes does not
// touch the allocator (the distance scratch only grows, to the longest
// sentence seen).
#ifndef SYNATTN_DATA_TOKEN_BATCH_HPP
#define SYNATTN_DATA_TOKEN_BATCH_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
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
  BucketBlock buckets;                  // (batch * n, n) or 0 x 0
  RowMajorMatrix<std::int32_t> labels;  // (batch, n)
  std::size_t tokens = 0;               // labels != -100
  std::size_t dropped = 0;              // words word dropout replaced by kUnk

  int batch() const noexcept { return static_cast<int>(ids.rows()); }
  int n() const noexcept { return static_cast<int>(ids.cols()); }
  // Tree views in `buckets` (its rows over batch * n); 1 without buckets.
  int views() const noexcept {
    return buckets.size() == 0 || ids.size() == 0 ? 1 : static_cast<int>(buckets.rows() / ids.size());
  }

  // Distance scratch (int8, at least n x n; only grows), reused across calls.
  RowMajorMatrix<std::int8_t> scratch_distance, scratch_up, scratch_down;
};

namespace detail {
// Shapes `out` for `batch` sequences of n positions and `views` bucket
// blocks (buffers only grow) and fills it with padding: ids kPad, labels
// kIgnore, buckets masked.
inline void reset_token_batch(TokenBatch& out, Index batch, Index n, bool bucketed, int views = 1) {
  out.ids.resize(batch, n);
  out.labels.resize(batch, n);
  out.lengths.resize(static_cast<std::size_t>(batch));
  out.ids.setConstant(Vocabulary::kPad);
  out.labels.setConstant(LabelSet::kIgnore);
  out.tokens = 0;
  out.dropped = 0;
  if (bucketed) {
    out.buckets.resize(views * batch * n, n);
    out.buckets.setConstant(static_cast<std::int8_t>(kPaddingBucket));
  } else {
    out.buckets.resize(0, 0);
  }
}

// Throws unless sentence `s` can be batched: words, labels and the tree of
// every view agree in length, and there is at least one word. `fn` and
// `where` ("indices[3]") name the call and the sentence's place in messages.
inline void check_batchable(const char* fn, const TaggedSentence& s, const std::string& where) {
  if (s.tree.size() != s.size() || static_cast<int>(s.labels.size()) != s.size())
    throw Error(std::string(fn) + ": sentence " + s.id + " (" + where + ") has " + std::to_string(s.size()) +
                " forms, " + std::to_string(s.labels.size()) + " labels and a tree of " +
                std::to_string(s.tree.size()) + " words; expected equal counts (build it with to_tagged_sentence)");
  if (s.size() == 0) throw Error(std::string(fn) + ": sentence " + s.id + " (" + where + ") has no words");
  for (int v = 1; v < s.views(); ++v)
    if (s.view_tree(v).size() != s.size())
      throw Error(std::string(fn) + ": sentence " + s.id + " (" + where + ") has " + std::to_string(s.size()) +
                  " words but its tree of view " + std::to_string(v) + " has " + std::to_string(s.view_tree(v).size()) +
                  "; expected every view's tree over the sentence's words");
}

// Throws unless `s` has as many tree views as `first`, the batch's (or
// corpus's) first sentence: the views of a block are one stack per batch.
inline void check_same_views(const char* fn, const TaggedSentence& s, const std::string& where,
                             const TaggedSentence& first, const std::string& first_where) {
  if (s.views() != first.views())
    throw Error(std::string(fn) + ": sentence " + s.id + " (" + where + ") has " + std::to_string(s.views()) +
                " tree views, expected " + std::to_string(first.views()) + " as sentence " + first.id + " (" +
                first_where + ") has; every sentence of a batch or corpus needs the same number of views");
}

inline void check_bucketing(const char* fn, const Bucketing* bucketing) {
  if (bucketing && bucketing->num_buckets() - 1 > 127)
    throw Error(std::string(fn) + ": " + bucketing->describe() + " has more buckets than int8 holds");
}

inline void check_token_batch_inputs(const std::vector<TaggedSentence>& sentences,
                                     const std::vector<std::size_t>& indices, const Bucketing* bucketing) {
  const char* fn = "make_token_batch";
  if (indices.empty()) throw Error("make_token_batch: 'indices' is empty, expected >= 1 sentence");
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= sentences.size())
      throw Error("make_token_batch: indices[" + std::to_string(k) + "] = " + std::to_string(indices[k]) +
                  ", expected < " + std::to_string(sentences.size()) + " (the number of sentences)");
    const std::string where = "indices[" + std::to_string(k) + "]";
    check_batchable(fn, sentences[indices[k]], where);
    check_same_views(fn, sentences[indices[k]], where, sentences[indices[0]], "indices[0]");
  }
  check_bucketing(fn, bucketing);
}

// Scratch only grows (to the longest sentence seen), so it is allocated a
// few times per run, not per sentence.
inline void grow_scratch(RowMajorMatrix<std::int8_t>& m, int len) {
  if (m.rows() < len) m.resize(len, len);
}

// One sentence's length x length bucket corner, through the distance
// scratch of `out` (bucketize maps whole blocks).
template <class Corner>
void sentence_buckets(const DependencyTree& tree, const Bucketing& bucketing, TokenBatch& out, Corner&& corner) {
  const int len = tree.size();
  if (bucketing.kind() == BucketKind::Directed) {
    grow_scratch(out.scratch_up, len);
    grow_scratch(out.scratch_down, len);
    auto up = out.scratch_up.topLeftCorner(len, len);
    auto down = out.scratch_down.topLeftCorner(len, len);
    directed_distances<std::int8_t>(tree, up, down);
    bucketize_directed<std::int8_t, std::int8_t>(bucketing, up, down, corner);
  } else {
    grow_scratch(out.scratch_distance, len);
    auto dist = out.scratch_distance.topLeftCorner(len, len);
    pairwise_distances<std::int8_t>(tree, dist);
    bucketize<std::int8_t, std::int8_t>(bucketing, dist, corner);
  }
}
}  // namespace detail

// Makes `batch` a batch of no sentences (0 x 0 blocks, no tokens, no
// lengths): what a data-parallel rank whose share of a global batch is empty
// runs, so that it still joins the reduction. make_token_batch refuses an
// empty index list, which elsewhere is a mistake.
inline void clear_token_batch(TokenBatch& batch) { detail::reset_token_batch(batch, 0, 0, false); }

// Fills `out` with sentences[indices[0]], sentences[indices[1]], ... (see the
// file comment). `bucketing` null: no buckets (out.buckets becomes 0 x 0).
inline void make_token_batch(const std::vector<TaggedSentence>& sentences,
                             const std::vector<std::size_t>& indices, const Vocabulary& vocab,
                             const LabelSet& labels, const Bucketing* bucketing,
                             const WordDropout& dropout, TokenBatch& out) {
  detail::check_token_batch_inputs(sentences, indices, bucketing);
  const Index batch = static_cast<Index>(indices.size());
  const int views = sentences[indices.front()].views();
  int n = 0;
  for (std::size_t i : indices) n = sentences[i].size() > n ? sentences[i].size() : n;

  detail::reset_token_batch(out, batch, static_cast<Index>(n), bucketing != nullptr, views);

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
    for (int v = 0; v < views; ++v)
      detail::sentence_buckets(s.view_tree(v), *bucketing, out, out.buckets.block((v * batch + b) * n, 0, len, len));
  }
}

// A corpus encoded once for one vocabulary, label set and bucketing: word
// ids, labels, singleton flags and each sentence's length x length bucket
// corners (one per tree view, view after view), stored flat. Batching it is
// then copies only (no hashing, no tree walks): the form to use in a
// training loop, where every sentence is batched once per epoch. Produces
// exactly what the TaggedSentence overload of make_token_batch does (pinned
// by a test), for any number of views.
class EncodedCorpus {
 public:
  EncodedCorpus() = default;
  EncodedCorpus(const std::vector<TaggedSentence>& sentences, const Vocabulary& vocab, const LabelSet& labels,
                const Bucketing* bucketing) {
    const char* fn = "EncodedCorpus";
    detail::check_bucketing(fn, bucketing);
    if (bucketing) bucketing_.emplace(*bucketing);
    if (!sentences.empty()) views_ = sentences.front().views();
    word_offset_.reserve(sentences.size() + 1);
    bucket_offset_.reserve(sentences.size() + 1);
    word_offset_.push_back(0);
    bucket_offset_.push_back(0);
    TokenBatch scratch;
    for (std::size_t i = 0; i < sentences.size(); ++i) {
      const TaggedSentence& s = sentences[i];
      const std::string where = "sentences[" + std::to_string(i) + "]";
      detail::check_batchable(fn, s, where);
      detail::check_same_views(fn, s, where, sentences.front(), "sentences[0]");
      for (int j = 0; j < s.size(); ++j) {
        const int id = vocab.id(s.forms[static_cast<std::size_t>(j)]);
        ids_.push_back(id);
        singleton_.push_back(id != Vocabulary::kUnk && vocab.is_singleton(id) ? 1 : 0);
        const int label = labels.id(s.labels[static_cast<std::size_t>(j)]);
        labels_.push_back(label);
        ignored_ += label == LabelSet::kIgnore ? 1 : 0;
      }
      word_offset_.push_back(ids_.size());
      roots_.push_back(s.tree.roots().empty() ? -1 : s.tree.roots().front());
      if (bucketing) add_corners(s, *bucketing, scratch);
      bucket_offset_.push_back(buckets_.size());
    }
  }

  std::size_t size() const noexcept { return word_offset_.empty() ? 0 : word_offset_.size() - 1; }
  int length(std::size_t i) const { return static_cast<int>(word_offset_.at(i + 1) - word_offset_[i]); }
  std::vector<int> lengths() const {
    std::vector<int> out(size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = length(i);
    return out;
  }
  // Words whose label is outside the label set.
  std::size_t ignored() const noexcept { return ignored_; }
  const Bucketing* bucketing() const noexcept { return bucketing_ ? &*bucketing_ : nullptr; }
  // Tree views of every sentence (1 for an empty corpus).
  int views() const noexcept { return views_; }

  // What a batch holds of sentence i (i < size()): its word ids, with word
  // dropout `dropout` keyed by i, and its labels, written to ids[0..length)
  // and labels[0..length); adds its counted labels to `tokens` and its
  // dropped words to `dropped`.
  void words(std::size_t i, const WordDropout& dropout, std::int32_t* ids, std::int32_t* labels,
             std::size_t& tokens, std::size_t& dropped) const {
    const std::size_t first = word_offset_[i];
    const int len = length(i);
    const RandomStream drop = word_dropout_stream(dropout.seed, dropout.epoch, i);
    for (int j = 0; j < len; ++j) {
      std::int32_t id = ids_[first + static_cast<std::size_t>(j)];
      if (dropout.enabled && singleton_[first + static_cast<std::size_t>(j)] &&
          drop.uniform(static_cast<std::uint64_t>(j)) < dropout.p) {
        id = Vocabulary::kUnk;
        ++dropped;
      }
      ids[j] = id;
      labels[j] = labels_[first + static_cast<std::size_t>(j)];
      tokens += labels[j] == LabelSet::kIgnore ? 0 : 1;
    }
  }
  // Sentence i's length x length bucket block of tree view v (a view of the
  // corpus's storage); needs a bucketing.
  Eigen::Map<const BucketBlock> buckets(std::size_t i, int v = 0) const {
    const Index len = length(i);
    return Eigen::Map<const BucketBlock>(buckets_.data() + bucket_offset_[i] + static_cast<std::size_t>(v * len * len),
                                         len, len);
  }
  // Sentence i's root word in view 0's tree (its first root), -1 without one.
  Index root(std::size_t i) const { return roots_.at(i); }

 private:
  // Appends the length x length corner of each of `s`'s views, bucketed in
  // place in buckets_ (no corner copied).
  void add_corners(const TaggedSentence& s, const Bucketing& bucketing, TokenBatch& scratch) {
    const Index len = s.size();
    for (int v = 0; v < s.views(); ++v) {
      const std::size_t at = buckets_.size();
      buckets_.resize(at + static_cast<std::size_t>(len * len));
      Eigen::Map<RowMajorMatrix<std::int8_t>> corner(buckets_.data() + at, len, len);
      detail::sentence_buckets(s.view_tree(v), bucketing, scratch, corner);
    }
  }

  std::vector<std::int32_t> ids_, labels_;
  std::vector<unsigned char> singleton_;
  std::vector<std::int8_t> buckets_;
  std::vector<std::size_t> word_offset_, bucket_offset_;
  std::vector<Index> roots_;
  std::optional<Bucketing> bucketing_;
  std::size_t ignored_ = 0;
  int views_ = 1;
};

// The batch of corpus sentences indices[0], indices[1], ... with the
// corpus's bucketing; word dropout as in the other overload (`sentence` is
// the index into the corpus).
inline void make_token_batch(const EncodedCorpus& corpus, const std::vector<std::size_t>& indices,
                             const WordDropout& dropout, TokenBatch& out) {
  if (indices.empty()) throw Error("make_token_batch: 'indices' is empty, expected >= 1 sentence");
  int n = 0;
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= corpus.size())
      throw Error("make_token_batch: indices[" + std::to_string(k) + "] = " + std::to_string(indices[k]) +
                  ", expected < " + std::to_string(corpus.size()) + " (the corpus's sentences)");
    n = corpus.length(indices[k]) > n ? corpus.length(indices[k]) : n;
  }
  const Index batch = static_cast<Index>(indices.size());
  const bool bucketed = corpus.bucketing() != nullptr;
  const int views = corpus.views();
  detail::reset_token_batch(out, batch, static_cast<Index>(n), bucketed, views);
  for (Index b = 0; b < batch; ++b) {
    const std::size_t index = indices[static_cast<std::size_t>(b)];
    const int len = corpus.length(index);
    out.lengths[static_cast<std::size_t>(b)] = len;
    corpus.words(index, dropout, out.ids.row(b).data(), out.labels.row(b).data(), out.tokens, out.dropped);
    if (!bucketed) continue;
    for (int v = 0; v < views; ++v) out.buckets.block((v * batch + b) * n, 0, len, len) = corpus.buckets(index, v);
  }
}

}  // namespace synattn

#endif  // SYNATTN_DATA_TOKEN_BATCH_HPP
