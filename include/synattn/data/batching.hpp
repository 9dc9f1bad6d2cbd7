// synattn — deterministic data order: shuffles, the training subset and
// length-bucketed batches, all pure functions of their seeds.
//
// Every random choice is built on RandomStream (util/random.hpp), whose bits
// are pure 64-bit integer arithmetic, so bench/pytorch_train_reference.py
// reproduces them bit for bit (its docstring restates these algorithms, and
// both sides pin the same numbers in their tests):
//
// * DrawSequence walks one stream's counters 0, 1, 2, ...; below(m) is an
//   unbiased draw in [0, m): take x = next(), reject while
//   x < 2^64 mod m, return x mod m (OpenBSD's arc4random_uniform).
//   Why not Lemire's multiply-shift: it needs 128-bit products, which C++17
//   lacks portably; rejection here is rarer than 1 in 10^14 for our sizes.
// * shuffle: Fisher-Yates (Durstenfeld): for i = n-1 down to 1,
//   j = below(i + 1), swap(a[i], a[j]), all draws from one DrawSequence.
// * select_training_subset: shuffle 0..S-1 with
//   RandomStream(data_seed).derive(kSubsetSite), keep the first N, then drop
//   those longer than max_words (so fewer than N may remain), in that order.
// * length_batches for (seed, epoch): E = RandomStream(seed)
//   .derive(kBatchSite).derive(epoch); key(s) = length(s) + noise *
//   E.derive(0).uniform(s); positions sorted by (key, s); cut into
//   consecutive batches of `batch` (the last may be smaller); batch order
//   shuffled with E.derive(1). With noise = 4 the product is exact (a power
//   of two), so an FMA contraction cannot change a key.
// * Word dropout of sentence s in epoch e: RandomStream(seed)
//   .derive(kWordDropoutSite).derive(e).derive(s), word j dropped when
//   uniform(j) < p (see token_batch.hpp).
#ifndef SYNATTN_DATA_BATCHING_HPP
#define SYNATTN_DATA_BATCHING_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../util/random.hpp"
#include "tagging_corpus.hpp"

namespace synattn {

// Stream ids under a seed: one per use, so the uses never share bits.
constexpr std::uint64_t kSubsetSite = 1;
constexpr std::uint64_t kBatchSite = 2;
constexpr std::uint64_t kWordDropoutSite = 3;

constexpr std::size_t kDefaultBatchSentences = 32;
constexpr int kDefaultMaxWords = 60;
// A fixed default data seed, so that a program draws the same subset at every
// run unless told otherwise (train_deprel's recipe uses the same number).
constexpr std::uint64_t kDefaultDataSeed = 20240601;

// Bits of one stream in counter order.
class DrawSequence {
 public:
  explicit DrawSequence(RandomStream stream) noexcept : stream_(stream) {}

  std::uint64_t next() noexcept { return stream_.bits(counter_++); }

  // Uniform in [0, m), unbiased; m >= 1.
  std::uint64_t below(std::uint64_t m) {
    if (m == 0) throw Error("DrawSequence::below: bound must be >= 1, got 0");
    // 2^64 mod m, computed in 64 bits as (2^64 - m) mod m.
    const std::uint64_t threshold = (0 - m) % m;
    for (;;) {
      const std::uint64_t x = next();
      if (x >= threshold) return x % m;
    }
  }

  std::uint64_t counter() const noexcept { return counter_; }

 private:
  RandomStream stream_;
  std::uint64_t counter_ = 0;
};

// Fisher-Yates over `items` with the draws of `stream`.
template <class T>
void shuffle_in_place(std::vector<T>& items, RandomStream stream) {
  DrawSequence draws(stream);
  for (std::size_t i = items.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(draws.below(i));
    std::swap(items[i - 1], items[j]);
  }
}

// A permutation of 0..n-1.
inline std::vector<std::size_t> shuffled_indices(std::size_t n, RandomStream stream) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  shuffle_in_place(order, stream);
  return order;
}

// Indices (into `lengths`) of the training subset (see the file comment).
inline std::vector<std::size_t> select_training_subset(const std::vector<int>& lengths, std::size_t n,
                                                       int max_words = kDefaultMaxWords,
                                                       std::uint64_t data_seed = kDefaultDataSeed) {
  if (max_words < 1)
    throw Error("select_training_subset: max_words must be >= 1, got " + std::to_string(max_words));
  std::vector<std::size_t> order =
      shuffled_indices(lengths.size(), RandomStream(data_seed).derive(kSubsetSite));
  if (order.size() > n) order.resize(n);
  order.erase(std::remove_if(order.begin(), order.end(),
                             [&](std::size_t i) { return lengths[i] > max_words; }),
              order.end());
  return order;
}

inline std::vector<std::size_t> select_training_subset(const std::vector<TaggedSentence>& sentences,
                                                       std::size_t n, int max_words = kDefaultMaxWords,
                                                       std::uint64_t data_seed = kDefaultDataSeed) {
  return select_training_subset(sentence_lengths(sentences), n, max_words, data_seed);
}

namespace detail {
inline void check_batch_size(const char* fn, std::size_t batch) {
  if (batch == 0) throw Error(std::string(fn) + ": batch must be >= 1 sentence, got 0");
}

inline std::vector<std::vector<std::size_t>> cut_batches(const std::vector<std::size_t>& order,
                                                         std::size_t batch) {
  std::vector<std::vector<std::size_t>> out;
  out.reserve((order.size() + batch - 1) / batch);
  for (std::size_t k = 0; k < order.size(); k += batch)
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(k),
                     order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), k + batch)));
  return out;
}
}  // namespace detail

// One epoch's training batches: positions 0..lengths.size()-1 grouped by
// similar length (sorted by length plus uniform noise in [0, noise)), batch
// order shuffled. Every position appears exactly once.
inline std::vector<std::vector<std::size_t>> length_batches(const std::vector<int>& lengths,
                                                            std::uint64_t seed, std::uint64_t epoch,
                                                            std::size_t batch = kDefaultBatchSentences,
                                                            double noise = 4.0) {
  detail::check_batch_size("length_batches", batch);
  if (!(noise >= 0.0)) throw Error("length_batches: noise must be >= 0, got " + std::to_string(noise));
  const RandomStream e = RandomStream(seed).derive(kBatchSite).derive(epoch);
  const RandomStream jitter = e.derive(0);
  std::vector<std::pair<double, std::size_t>> keys(lengths.size());
  for (std::size_t s = 0; s < lengths.size(); ++s)
    keys[s] = {static_cast<double>(lengths[s]) + noise * jitter.uniform(s), s};
  std::sort(keys.begin(), keys.end());  // (key, s): a total order, so deterministic
  std::vector<std::size_t> order(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) order[k] = keys[k].second;
  std::vector<std::vector<std::size_t>> batches = detail::cut_batches(order, batch);
  shuffle_in_place(batches, e.derive(1));
  return batches;
}

// Evaluation batches: positions sorted by (length, position), cut in order.
inline std::vector<std::vector<std::size_t>> eval_batches(const std::vector<int>& lengths,
                                                          std::size_t batch = kDefaultBatchSentences) {
  detail::check_batch_size("eval_batches", batch);
  std::vector<std::size_t> order(lengths.size());
  for (std::size_t s = 0; s < order.size(); ++s) order[s] = s;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });
  return detail::cut_batches(order, batch);
}

// The stream whose uniform(j) decides word j's dropout in sentence position
// `sentence` of epoch `epoch`.
inline RandomStream word_dropout_stream(std::uint64_t seed, std::uint64_t epoch, std::uint64_t sentence) {
  return RandomStream(seed).derive(kWordDropoutSite).derive(epoch).derive(sentence);
}

}  // namespace synattn

#endif  // SYNATTN_DATA_BATCHING_HPP
