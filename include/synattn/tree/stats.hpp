// synattn — corpus statistics for choosing a bucketing: the histogram of
// tree distances over a treebank and the max_distance that covers a given
// share of word pairs.
//
// The histogram streams: add() one tree at a time (e.g. straight from a
// ConlluReader), so a whole treebank goes through without keeping its
// matrices; merge() combines histograms built in parallel.
#ifndef SYNATTN_TREE_STATS_HPP
#define SYNATTN_TREE_STATS_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "dependency_tree.hpp"
#include "distance.hpp"

namespace synattn {

// counts()[d] is the number of ordered pairs (i, j), i != j, of words of the
// same sentence at tree distance d: both (i, j) and (j, i) are counted, and
// counts()[0] is always 0. Distances are exact (int32, no saturation) and
// counts are int64. Each tree of a forest counts as a sentence; pairs in
// different trees have no distance and are not counted.
class DistanceHistogram {
 public:
  void add(const DependencyTree& tree) {
    const int n = tree.size();
    // A Tree is one sentence even when empty; a forest is one per tree.
    sentences_ += tree.structure() == Structure::Tree ? 1 : tree.num_trees();
    words_ += n;
    longest_ = n > longest_ ? n : longest_;
    if (n < 2) return;
    // The scratch matrix grows to the longest sentence and is reused, so a
    // streamed treebank allocates only a few times. It costs n^2 int32 for
    // the longest n: fine for sentences, not for 10^5-word documents.
    if (scratch_.rows() < n) scratch_.resize(n, n);
    auto d = scratch_.topLeftCorner(n, n);
    pairwise_distances<std::int32_t>(tree, d, 0);
    // Every distance is at most twice the height of the tree.
    int bound = 0;
    for (int v : tree.depth()) bound = v > bound ? v : bound;
    if (counts_.size() < static_cast<std::size_t>(2 * bound + 1))
      counts_.resize(static_cast<std::size_t>(2 * bound + 1), 0);
    const bool single = tree.num_trees() == 1;
    const std::vector<int>& tree_of = tree.tree_of();
    for (int i = 0; i < n; ++i) {
      const std::int32_t* row = d.row(i).data();
      for (int j = 0; j < n; ++j) {
        if (j == i || (!single && tree_of[static_cast<std::size_t>(i)] != tree_of[static_cast<std::size_t>(j)]))
          continue;
        ++counts_[static_cast<std::size_t>(row[j])];
      }
    }
    trim();
  }

  // Adds another histogram's counts (e.g. one built on another thread).
  void merge(const DistanceHistogram& other) {
    if (counts_.size() < other.counts_.size()) counts_.resize(other.counts_.size(), 0);
    for (std::size_t d = 0; d < other.counts_.size(); ++d) counts_[d] += other.counts_[d];
    sentences_ += other.sentences_;
    words_ += other.words_;
    longest_ = other.longest_ > longest_ ? other.longest_ : longest_;
  }

  // Indexed by distance; its size is the largest distance seen + 1 (empty
  // when no pair has been seen).
  const std::vector<std::int64_t>& counts() const noexcept { return counts_; }
  std::int64_t count(int distance) const {
    return distance >= 0 && static_cast<std::size_t>(distance) < counts_.size()
               ? counts_[static_cast<std::size_t>(distance)]
               : 0;
  }
  std::int64_t pairs() const noexcept {
    std::int64_t total = 0;
    for (std::int64_t c : counts_) total += c;
    return total;
  }
  // The largest distance seen (-1 when no pair has been seen).
  int max_distance() const noexcept { return static_cast<int>(counts_.size()) - 1; }
  double mean_distance() const {
    const std::int64_t total = pairs();
    if (total == 0) return 0.0;
    double sum = 0.0;
    for (std::size_t d = 0; d < counts_.size(); ++d) sum += static_cast<double>(d) * static_cast<double>(counts_[d]);
    return sum / static_cast<double>(total);
  }

  std::int64_t sentences() const noexcept { return sentences_; }
  std::int64_t words() const noexcept { return words_; }
  int longest_sentence() const noexcept { return longest_; }
  // Words per sentence (0 before any sentence); each tree of a forest is a
  // sentence, so packed sequences do not inflate it.
  double mean_length() const noexcept {
    return sentences_ == 0 ? 0.0 : static_cast<double>(words_) / static_cast<double>(sentences_);
  }

 private:
  void trim() {
    while (!counts_.empty() && counts_.back() == 0) counts_.pop_back();
  }

  std::vector<std::int64_t> counts_;
  std::int64_t sentences_ = 0;
  std::int64_t words_ = 0;
  int longest_ = 0;
  RowMajorMatrix<std::int32_t> scratch_;
};

// Share of pairs at distance <= max_distance, in [0, 1] (0 for an empty
// histogram).
inline double coverage(const DistanceHistogram& hist, int max_distance) {
  const std::int64_t total = hist.pairs();
  if (total == 0 || max_distance < 0) return 0.0;
  std::int64_t covered = 0;
  for (int d = 0; d <= max_distance && d <= hist.max_distance(); ++d) covered += hist.count(d);
  return static_cast<double>(covered) / static_cast<double>(total);
}

// The smallest max_distance M such that at least `share` (in (0, 1]) of the
// pairs have distance <= M, i.e. a linear bucketing with this M gives them
// their own bucket and clamps the rest. The comparison allows a relative
// 1e-12 so that e.g. 0.95 (not exact in binary) of 100 pairs means 95.
// Throws on a share outside (0, 1] or a histogram with no pairs.
inline int suggest_max_distance(const DistanceHistogram& hist, double share) {
  if (!(share > 0.0 && share <= 1.0))
    throw Error("suggest_max_distance: share must be in (0, 1], got " + std::to_string(share));
  const std::int64_t total = hist.pairs();
  if (total == 0)
    throw Error("suggest_max_distance: the histogram has no pairs (add trees of 2 or more words)");
  const double need = share * static_cast<double>(total) * (1.0 - 1e-12);
  std::int64_t covered = 0;
  for (int d = 0; d <= hist.max_distance(); ++d) {
    covered += hist.count(d);
    if (static_cast<double>(covered) >= need) return d;
  }
  return hist.max_distance();
}

}  // namespace synattn

#endif  // SYNATTN_TREE_STATS_HPP
