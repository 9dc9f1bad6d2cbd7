// synattn — batches of sentences as padded distance blocks (docs/math.md §2).
//
// A batch of `batch` sentences of different lengths becomes a
// (batch, n_max, n_max) block stored row-major as a (batch * n_max, n_max)
// matrix: rows are (sentence, query), columns keys, and n_max is the block's
// column count. Sentence b occupies rows [b * n_max, (b + 1) * n_max); its
// top-left length x length corner holds its distances, written there directly
// by pairwise_distances / directed_distances (no scratch matrix, no copy), and
// every other cell of its n_max x n_max block — a pair with at least one
// padding position — is -1 (kPaddingDistance).
//
// The lengths returned are what the attention layer needs to mask padding
// keys and padding query rows (docs/math.md §4.2).
#ifndef SYNATTN_TREE_BATCH_HPP
#define SYNATTN_TREE_BATCH_HPP

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../special_values.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "dependency_tree.hpp"
#include "distance.hpp"

namespace synattn {

namespace detail {

// "sentence 2" or "sentence 2 (en_ewt-dev-17)" when the tree carries a label.
inline std::string batch_item_name(std::size_t index, const std::string& label) {
  std::string s = "sentence " + std::to_string(index);
  if (!label.empty()) s += " (" + label + ")";
  return s;
}

inline void check_batch_shape(const char* fn, const char* name, Index rows, Index cols,
                              std::size_t batch) {
  const long long want = static_cast<long long>(batch) * static_cast<long long>(cols);
  if (rows != want)
    throw Error(std::string(fn) + ": output '" + name + "' is " + shape_text(rows, cols) +
                ", expected (batch * n_max) x n_max = " + shape_text(want, cols) + " for " + std::to_string(batch) +
                " sentences (n_max is the column count)");
}

inline void check_fits(const char* fn, std::size_t index, const std::string& label, long long length,
                       Index n_max, const char* unit) {
  if (length > n_max)
    throw Error(std::string(fn) + ": " + batch_item_name(index, label) + " has " +
                std::to_string(length) + " " + unit + ", more than n_max = " + std::to_string(n_max) +
                " (the output's column count)");
}

// Sets every pair of sequence b that involves a position >= length to -1.
// Rows of the block are contiguous, so each fill is one streaming store.
template <class T>
void fill_padding(Eigen::Ref<RowMajorMatrix<T>>& block, Index b, Index length) {
  const Index n_max = block.cols();
  const T pad = static_cast<T>(kPaddingDistance);
  for (Index r = 0; r < n_max; ++r) {
    T* row = block.row(b * n_max + r).data();
    for (Index c = r < length ? length : 0; c < n_max; ++c) row[c] = pad;
  }
}

template <class T>
void check_distance_type() {
  static_assert(std::is_integral<T>::value && std::is_signed<T>::value,
                "distance element type must be a signed integer (int8, int16, int32)");
}

}  // namespace detail

// Number of words of each sentence: the `lengths` the attention layer takes.
inline std::vector<int> batch_lengths(const std::vector<DependencyTree>& trees) {
  std::vector<int> lengths;
  lengths.reserve(trees.size());
  for (const auto& t : trees) lengths.push_back(t.size());
  return lengths;
}

// The longest sentence: the smallest n_max that holds the batch (0 if empty).
inline int longest(const std::vector<DependencyTree>& trees) {
  int n = 0;
  for (const auto& t : trees) n = t.size() > n ? t.size() : n;
  return n;
}

// Sets the padding pairs of a (batch * n_max, n_max) block to -1 given the
// sequence lengths (for distances that come from elsewhere, e.g. a file).
// Cells inside each length x length corner are left untouched.
template <class T>
void mask_padding(Eigen::Ref<RowMajorMatrix<T>> block, const std::vector<int>& lengths) {
  detail::check_distance_type<T>();
  detail::check_batch_shape("mask_padding", "block", block.rows(), block.cols(), lengths.size());
  for (std::size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] < 0)
      throw Error("mask_padding: length of sequence " + std::to_string(b) + " is " +
                  std::to_string(lengths[b]) + ", expected >= 0");
    detail::check_fits("mask_padding", b, {}, lengths[b], block.cols(), "positions");
  }
  for (std::size_t b = 0; b < lengths.size(); ++b)
    detail::fill_padding<T>(block, static_cast<Index>(b), lengths[b]);
}

// Fills `out` ((batch * n_max, n_max), caller-provided, any outer stride;
// n_max = out.cols()) with the padded distance block of `trees` and returns
// their lengths. Cross-tree pairs of a forest get `cross_distance` (see
// pairwise_distances); values beyond T saturate at its maximum. Throws
// before writing anything if the shape is wrong or a sentence is longer than
// n_max.
template <class T = std::int8_t>
std::vector<int> batch_distances(const std::vector<DependencyTree>& trees,
                                 Eigen::Ref<RowMajorMatrix<T>> out,
                                 long long cross_distance = std::numeric_limits<T>::max()) {
  detail::check_distance_type<T>();
  const Index n_max = out.cols();
  detail::check_batch_shape("batch_distances", "out", out.rows(), n_max, trees.size());
  for (std::size_t b = 0; b < trees.size(); ++b)
    detail::check_fits("batch_distances", b, trees[b].sentence(), trees[b].size(), n_max, "words");
  if (cross_distance < 0)
    throw Error("batch_distances: cross_distance must be >= 0, got " + std::to_string(cross_distance));
  for (std::size_t b = 0; b < trees.size(); ++b) {
    const Index n = trees[b].size();
    const Index top = static_cast<Index>(b) * n_max;
    pairwise_distances<T>(trees[b], out.block(top, 0, n, n), cross_distance);
    detail::fill_padding<T>(out, static_cast<Index>(b), n);
  }
  return batch_lengths(trees);
}

// Directed form: `up` and `down` are both (batch * n_max, n_max); padding
// pairs are -1 in both.
template <class T = std::int8_t>
std::vector<int> batch_directed_distances(const std::vector<DependencyTree>& trees,
                                          Eigen::Ref<RowMajorMatrix<T>> up,
                                          Eigen::Ref<RowMajorMatrix<T>> down,
                                          long long cross_distance = std::numeric_limits<T>::max()) {
  detail::check_distance_type<T>();
  const Index n_max = up.cols();
  detail::check_batch_shape("batch_directed_distances", "up", up.rows(), n_max, trees.size());
  if (down.rows() != up.rows() || down.cols() != up.cols())
    throw Error("batch_directed_distances: output 'down' is " + shape_text(down.rows(), down.cols()) + " but 'up' is " +
                shape_text(up.rows(), up.cols()) + "; they must match");
  for (std::size_t b = 0; b < trees.size(); ++b)
    detail::check_fits("batch_directed_distances", b, trees[b].sentence(), trees[b].size(), n_max,
                       "words");
  if (cross_distance < 0)
    throw Error("batch_directed_distances: cross_distance must be >= 0, got " +
                std::to_string(cross_distance));
  for (std::size_t b = 0; b < trees.size(); ++b) {
    const Index n = trees[b].size();
    const Index top = static_cast<Index>(b) * n_max;
    directed_distances<T>(trees[b], up.block(top, 0, n, n), down.block(top, 0, n, n), cross_distance);
    detail::fill_padding<T>(up, static_cast<Index>(b), n);
    detail::fill_padding<T>(down, static_cast<Index>(b), n);
  }
  return batch_lengths(trees);
}

// Allocating conveniences (examples, tests, data preparation off the hot path).
template <class T>
struct DistanceBatch {
  RowMajorMatrix<T> distances;  // (batch * n_max, n_max)
  std::vector<int> lengths;     // words per sentence
  int n_max = 0;
};

template <class T>
struct DirectedDistanceBatch {
  RowMajorMatrix<T> up, down;  // (batch * n_max, n_max) each
  std::vector<int> lengths;
  int n_max = 0;
};

namespace detail {
inline int resolve_n_max(const char* fn, const std::vector<DependencyTree>& trees, int n_max) {
  if (n_max < -1)
    throw Error(std::string(fn) + ": n_max must be >= 0 (or -1 for the longest sentence), got " +
                std::to_string(n_max));
  return n_max < 0 ? longest(trees) : n_max;
}
}  // namespace detail

// n_max = -1: the longest sentence of the batch.
template <class T = std::int8_t>
DistanceBatch<T> make_distance_batch(const std::vector<DependencyTree>& trees, int n_max = -1,
                                     long long cross_distance = std::numeric_limits<T>::max()) {
  DistanceBatch<T> out;
  out.n_max = detail::resolve_n_max("make_distance_batch", trees, n_max);
  for (std::size_t b = 0; b < trees.size(); ++b)
    detail::check_fits("make_distance_batch", b, trees[b].sentence(), trees[b].size(), out.n_max,
                       "words");
  out.distances.resize(static_cast<Index>(trees.size()) * out.n_max, out.n_max);
  out.lengths = batch_distances<T>(trees, out.distances, cross_distance);
  return out;
}

template <class T = std::int8_t>
DirectedDistanceBatch<T> make_directed_distance_batch(
    const std::vector<DependencyTree>& trees, int n_max = -1,
    long long cross_distance = std::numeric_limits<T>::max()) {
  DirectedDistanceBatch<T> out;
  out.n_max = detail::resolve_n_max("make_directed_distance_batch", trees, n_max);
  for (std::size_t b = 0; b < trees.size(); ++b)
    detail::check_fits("make_directed_distance_batch", b, trees[b].sentence(), trees[b].size(),
                       out.n_max, "words");
  out.up.resize(static_cast<Index>(trees.size()) * out.n_max, out.n_max);
  out.down.resize(out.up.rows(), out.up.cols());
  out.lengths = batch_directed_distances<T>(trees, out.up, out.down, cross_distance);
  return out;
}

// Packs consecutive sentences, in order, into forests of at most `n_max`
// words each (greedy: a forest is closed when the next sentence would not
// fit). Each forest is one sequence for batch_distances, whose cross-tree
// pairs get cross_distance; tree_of() tells which sentence of the forest a
// word came from. Forest k is labelled "packed i..j" with the input indices.
// Throws if a sentence alone is longer than n_max.
inline std::vector<DependencyTree> pack_sequences(const std::vector<DependencyTree>& trees, int n_max) {
  if (n_max < 0) throw Error("pack_sequences: n_max must be >= 0, got " + std::to_string(n_max));
  for (std::size_t b = 0; b < trees.size(); ++b)
    detail::check_fits("pack_sequences", b, trees[b].sentence(), trees[b].size(), n_max, "words");
  std::vector<DependencyTree> packed;
  std::vector<DependencyTree> parts;
  std::size_t first = 0;
  long long used = 0;
  const auto close = [&](std::size_t last) {
    packed.push_back(DependencyTree::pack(
        parts, "packed " + std::to_string(first) + ".." + std::to_string(last)));
    parts.clear();
  };
  for (std::size_t b = 0; b < trees.size(); ++b) {
    if (!parts.empty() && used + trees[b].size() > n_max) {
      close(b - 1);
      first = b;
      used = 0;
    }
    parts.push_back(trees[b]);
    used += trees[b].size();
  }
  if (!parts.empty()) close(trees.size() - 1);
  return packed;
}

}  // namespace synattn

#endif  // SYNATTN_TREE_BATCH_HPP
