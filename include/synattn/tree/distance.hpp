// synattn — all-pairs tree distances (docs/math.md §2) in O(n^2) total.
//
// Rows are produced in preorder from their parent's row: for a child c of p,
//   dist(c, j) = dist(p, j) + 1   for j outside subtree(c),
//   dist(c, j) = dist(p, j) - 1   for j inside subtree(c),
// and in directed form up(c, j) = up(p, j) + 1 / 0 and down(c, j) =
// down(p, j) / down(p, j) - 1. Each row is then one streaming pass plus a
// fix-up over c's subtree, held as word-order intervals by DependencyTree:
// one interval per subtree when the tree is projective (most real
// sentences), a few when it is not. No per-pair walk up the tree, no LCA
// query, no permutation of the output.
//
// Deep trees (height beyond what T holds, e.g. > 63 for int8) run the same
// recurrence in T itself, saturating: a stored maximum only ever grows
// outside c's subtree (+1), and inside it the row is exact without the
// parent, dist(c, j) = depth(j) - depth(c). So no wider scratch is needed
// and the working memory is O(n) beyond the output for every tree.
//
// Size limit: trees of more than max_distance_words (2^15 = 32768) words
// are refused with an Error before anything is written or allocated; the
// n x n output alone would then pass 1 GiB even in int8.
#ifndef SYNATTN_TREE_DISTANCE_HPP
#define SYNATTN_TREE_DISTANCE_HPP

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../matrix.hpp"
#include "dependency_tree.hpp"

namespace synattn {

namespace detail {

template <class T>
T saturate_to(long long v) {
  const long long hi = std::numeric_limits<T>::max();
  return static_cast<T>(v > hi ? hi : v);
}

// dst[j] = src[j] + delta on [lo, hi). Separate pointers into different rows:
// the loop vectorises for every integer width.
template <class W>
inline void add_range(W* __restrict dst, const W* __restrict src, int lo, int hi, W delta) {
  for (int j = lo; j < hi; ++j) dst[j] = static_cast<W>(src[j] + delta);
}
template <class W>
inline void add_in_place(W* dst, int lo, int hi, W delta) {
  for (int j = lo; j < hi; ++j) dst[j] = static_cast<W>(dst[j] + delta);
}
template <class W>
inline void copy_range(W* __restrict dst, const W* __restrict src, int lo, int hi) {
  std::copy(src + lo, src + hi, dst + lo);
}
template <class W>
inline void fill_range(W* dst, int lo, int hi, W value) {
  std::fill(dst + lo, dst + hi, value);
}

// Saturating forms for deep trees. A stored maximum stands for "maximum or
// more"; one step further from it is still "maximum or more".
//   dst[j] = min(src[j] + 1, max)  (compare and subtract: vectorises)
template <class W>
inline void add_one_saturating(W* __restrict dst, const W* __restrict src, int lo, int hi) {
  constexpr W top = std::numeric_limits<W>::max();
  for (int j = lo; j < hi; ++j) dst[j] = static_cast<W>(src[j] + (src[j] != top ? 1 : 0));
}
//   dst[j] = min(depth[j] - base, max) on [lo, hi): the exact distance from
//   an ancestor at depth `base` down to j.
template <class W>
inline void depth_below_saturating(W* __restrict dst, const int* __restrict depth, int lo, int hi,
                                   int base) {
  constexpr int top = std::numeric_limits<W>::max();
  for (int j = lo; j < hi; ++j) {
    const int v = depth[j] - base;
    dst[j] = static_cast<W>(v < top ? v : top);
  }
}

// One row step "row = parent + 1", exact or saturating.
template <class W, bool Saturating>
inline void step_away(W* __restrict dst, const W* __restrict src, int lo, int hi) {
  if constexpr (Saturating)
    add_one_saturating<W>(dst, src, lo, hi);
  else
    add_range<W>(dst, src, lo, hi, W(1));
}

// Each row is one full-width pass over the parent's row, then short fix-ups
// on c's subtree intervals (a few words on average: the mean depth). Full
// rows keep the vector loops free of the scalar head/tail code that short
// segments would need; in a forest the cells outside c's tree, which the
// full pass got wrong, are refilled with `cross` by memset-speed fills.
//   row = parent + 1;  forest: row[outside c's tree] = cross;  row[subtree] -= 2

// True when every tree of the forest is one contiguous span of word order
// (sentences packed one after another), so rows can be computed per span.
inline bool trees_are_contiguous(const DependencyTree& tree) {
  for (int r : tree.roots())
    if (tree.intervals_begin(r) + 1 != tree.intervals_end(r)) return false;
  return true;
}

// Row update for a sentence span [lo, hi) of a packed forest whose row
// already holds `cross` everywhere else: dst = src + 1 (saturating on deep
// trees) in whole 16-element chunks (one vector instruction each; a loop
// over a 20-word span would be mostly scalar tail), which may run past hi
// but not past n. The
// cells past hi belong to other sentences, so one 16-element store of
// `cross` at hi puts them back.
template <class W, bool Saturating>
inline void add_span_in_cross_row(W* __restrict dst, const W* __restrict src, int lo, int hi, int n,
                                  W cross) {
  constexpr int kChunk = 16;
  int j = lo;
  constexpr W top = std::numeric_limits<W>::max();
  for (; j < hi && j + kChunk <= n; j += kChunk) {
    if constexpr (Saturating)
      for (int q = 0; q < kChunk; ++q) dst[j + q] = static_cast<W>(src[j + q] + (src[j + q] != top ? 1 : 0));
    else
      for (int q = 0; q < kChunk; ++q) dst[j + q] = static_cast<W>(src[j + q] + 1);
  }
  for (; j < hi; ++j)
    dst[j] = static_cast<W>(src[j] + (Saturating ? (src[j] != top ? 1 : 0) : 1));
  if (hi + kChunk <= n) {
    for (int q = 0; q < kChunk; ++q) dst[hi + q] = cross;
  } else {
    for (int q = hi; q < n; ++q) dst[q] = cross;
  }
}

// Fills the cells of `row` outside the tree that holds word c with `cross`.
template <class W>
inline void restore_cross(const DependencyTree& tree, int c, W* row, W cross) {
  const int root = tree.roots()[static_cast<std::size_t>(tree.tree_of()[static_cast<std::size_t>(c)])];
  int at = 0;
  for (auto t = tree.intervals_begin(root); t != tree.intervals_end(root); ++t) {
    fill_range(row, at, t->first, cross);
    at = t->second;
  }
  fill_range(row, at, tree.size(), cross);
}
// Saturating: T may be too narrow for the tree's distances (see the top).
template <class W, bool Saturating>
void undirected_rows(const DependencyTree& tree, W* rows, Index stride, W cross) {
  const int n = tree.size();
  const bool single = tree.num_trees() == 1;
  // Packed sentences: every cell starts as a cross-tree pair (one fill at
  // memset speed), then each row computes only its sentence's span.
  const bool packed = !single && trees_are_contiguous(tree);
  if (packed) {
    if (stride == n)
      std::fill(rows, rows + static_cast<Index>(n) * n, cross);
    else
      for (int r = 0; r < n; ++r) fill_range(rows + static_cast<Index>(r) * stride, 0, n, cross);
  }
  const std::vector<int>& depth = tree.depth();
  for (int k = 0; k < n; ++k) {
    const int c = tree.preorder()[static_cast<std::size_t>(k)];
    W* row = rows + static_cast<Index>(c) * stride;
    const int p = tree.head(c);
    if (p < 0) {
      if (!single && !packed) fill_range(row, 0, n, cross);
      for (auto it = tree.intervals_begin(c); it != tree.intervals_end(c); ++it)
        depth_below_saturating<W>(row, depth.data(), it->first, it->second, 0);
      continue;
    }
    const W* parent = rows + static_cast<Index>(p) * stride;
    if (single) {
      step_away<W, Saturating>(row, parent, 0, n);
    } else if (packed) {
      const int root = tree.roots()[static_cast<std::size_t>(tree.tree_of()[static_cast<std::size_t>(c)])];
      const auto* span = tree.intervals_begin(root);
      add_span_in_cross_row<W, Saturating>(row, parent, span->first, span->second, n, cross);
    } else {
      step_away<W, Saturating>(row, parent, 0, n);
      restore_cross(tree, c, row, cross);
    }
    // Inside c's subtree: parent - 1 (= the +1 above, minus 2); saturating,
    // the exact depth(j) - depth(c), as a saturated parent cell says too little.
    for (auto s = tree.intervals_begin(c); s != tree.intervals_end(c); ++s) {
      if constexpr (Saturating)
        depth_below_saturating<W>(row, depth.data(), s->first, s->second,
                                  depth[static_cast<std::size_t>(c)]);
      else
        add_in_place<W>(row, s->first, s->second, W(-2));
    }
  }
}

//   up = up_p + 1;  forest: up[outside c's tree] = cross;  up[subtree] = 0
//   down = down_p;                                        down[subtree] -= 1
// Saturating: up saturates at the maximum like the undirected row, and
// down[subtree] is the exact depth(j) - depth(c), clamped.
template <class W, bool Saturating>
void directed_rows(const DependencyTree& tree, W* up, W* down, Index up_stride, Index down_stride,
                   W cross) {
  const int n = tree.size();
  const bool single = tree.num_trees() == 1;
  const std::vector<int>& depth = tree.depth();
  for (int k = 0; k < n; ++k) {
    const int c = tree.preorder()[static_cast<std::size_t>(k)];
    W* urow = up + static_cast<Index>(c) * up_stride;
    W* drow = down + static_cast<Index>(c) * down_stride;
    const int p = tree.head(c);
    if (p < 0) {
      if (!single) {
        fill_range(urow, 0, n, cross);
        fill_range(drow, 0, n, cross);
      }
      for (auto it = tree.intervals_begin(c); it != tree.intervals_end(c); ++it) {
        fill_range(urow, it->first, it->second, W(0));
        depth_below_saturating<W>(drow, depth.data(), it->first, it->second, 0);
      }
      continue;
    }
    // Cells outside c's tree are copied from the parent's row, which already
    // holds `cross` there; only `up` needs them refilled after its +1.
    copy_range(drow, down + static_cast<Index>(p) * down_stride, 0, n);
    step_away<W, Saturating>(urow, up + static_cast<Index>(p) * up_stride, 0, n);
    if (!single) restore_cross(tree, c, urow, cross);
    for (auto s = tree.intervals_begin(c); s != tree.intervals_end(c); ++s) {
      fill_range(urow, s->first, s->second, W(0));
      if constexpr (Saturating)
        depth_below_saturating<W>(drow, depth.data(), s->first, s->second,
                                  depth[static_cast<std::size_t>(c)]);
      else
        add_in_place<W>(drow, s->first, s->second, W(-1));
    }
  }
}

inline void check_size(const char* fn, int n);

template <class T>
void check_output(const char* fn, const char* name, Index rows, Index cols, int n) {
  check_size(fn, n);
  if (rows != n || cols != n)
    throw Error(std::string(fn) + ": output '" + name + "' is " + shape_text(rows, cols) + ", expected " +
                shape_text(n, n));
  static_assert(std::is_integral<T>::value && std::is_signed<T>::value,
                "distance element type must be a signed integer (int8, int16, int32)");
}

inline int max_depth(const DependencyTree& tree) {
  int h = 0;
  for (int d : tree.depth()) h = d > h ? d : h;
  return h;
}

}  // namespace detail

// The largest tree (forest) the distance functions accept: 2^15 words. Its
// n x n output is 1 GiB in int8 and 4 GiB in int32; beyond it they throw
// Error instead of allocating or writing. Per sequence, not per batch: a
// batch of many sentences is fine as long as each one is within the limit.
constexpr int max_distance_words = 1 << 15;

namespace detail {
inline void check_size(const char* fn, int n) {
  if (n > max_distance_words)
    throw Error(std::string(fn) + ": tree has " + std::to_string(n) +
                " words, more than max_distance_words = " + std::to_string(max_distance_words) +
                " (the n x n output would be " +
                std::to_string(static_cast<long long>(n) * static_cast<long long>(n)) + " elements)");
}
}  // namespace detail

// Fills `out` (n x n, caller-provided, any outer stride) with dist(i, j).
// Cross-tree pairs of a forest get `cross_distance` (default: the largest
// value of T, which every bucketing puts in its last bucket, docs/math.md §2).
// Values beyond T's range saturate at its maximum (int8: 127). Working
// memory beyond `out` is O(n) for every tree; n > max_distance_words throws.
template <class T = std::int8_t>
void pairwise_distances(const DependencyTree& tree, Eigen::Ref<RowMajorMatrix<T>> out,
                        long long cross_distance = std::numeric_limits<T>::max()) {
  const int n = tree.size();
  detail::check_output<T>("pairwise_distances", "out", out.rows(), out.cols(), n);
  if (cross_distance < 0)
    throw Error("pairwise_distances: cross_distance must be >= 0, got " + std::to_string(cross_distance));
  if (n == 0) return;
  // Every distance is at most twice the height, so the exact recurrence
  // fits T unless the tree is deep; then the saturating one runs, still in T.
  const T cross = detail::saturate_to<T>(cross_distance);
  if (2LL * detail::max_depth(tree) <= std::numeric_limits<T>::max())
    detail::undirected_rows<T, false>(tree, out.data(), out.outerStride(), cross);
  else
    detail::undirected_rows<T, true>(tree, out.data(), out.outerStride(), cross);
}

// Directed form: up(i, j) steps from i up to the LCA, down(i, j) steps from
// the LCA down to j; up + down == dist. Cross-tree pairs get
// (cross_distance, cross_distance).
template <class T = std::int8_t>
void directed_distances(const DependencyTree& tree, Eigen::Ref<RowMajorMatrix<T>> up,
                        Eigen::Ref<RowMajorMatrix<T>> down,
                        long long cross_distance = std::numeric_limits<T>::max()) {
  const int n = tree.size();
  detail::check_output<T>("directed_distances", "up", up.rows(), up.cols(), n);
  detail::check_output<T>("directed_distances", "down", down.rows(), down.cols(), n);
  if (cross_distance < 0)
    throw Error("directed_distances: cross_distance must be >= 0, got " + std::to_string(cross_distance));
  if (n == 0) return;
  const T cross = detail::saturate_to<T>(cross_distance);
  if (detail::max_depth(tree) <= std::numeric_limits<T>::max())
    detail::directed_rows<T, false>(tree, up.data(), down.data(), up.outerStride(),
                                    down.outerStride(), cross);
  else
    detail::directed_rows<T, true>(tree, up.data(), down.data(), up.outerStride(),
                                   down.outerStride(), cross);
}

// Convenience: a freshly allocated n x n matrix (the size limit is checked
// before the allocation).
template <class T = std::int8_t>
RowMajorMatrix<T> pairwise_distances(const DependencyTree& tree) {
  detail::check_size("pairwise_distances", tree.size());
  RowMajorMatrix<T> out(tree.size(), tree.size());
  pairwise_distances<T>(tree, out);
  return out;
}

}  // namespace synattn

#endif  // SYNATTN_TREE_DISTANCE_HPP
