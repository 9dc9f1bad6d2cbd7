// synattn — all-pairs tree distances (SPEC §2) in O(n^2) total.
//
// Rows are produced in preorder from their parent's row: for a child c of p,
//   dist(c, j) = dist(p, j) + 1   for j outside subtree(c),
//   dist(c, j) = dist(p, j) - 1   for j inside subtree(c),
// and in directed form up(c, j) = up(p, j) + 1 / 0 and down(c, j) =
// down(p, j) / down(p, j) - 1. Each row is then a few streaming passes over
// contiguous word-order intervals: one interval per subtree when the tree is
// projective (most real sentences), a few when it is not. No per-pair walk
// up the tree, no LCA query, no permutation of the output.
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

// Word-order intervals [lo, hi) that together hold each word's subtree, in
// CSR form, sorted and coalesced.
class SubtreeIntervals {
 public:
  explicit SubtreeIntervals(const DependencyTree& tree) {
    const int n = tree.size();
    offset_.assign(static_cast<std::size_t>(n) + 1, 0);
    if (tree.is_projective()) {
      // One interval each: [first word, last word + 1) of the subtree.
      std::vector<int> lo(static_cast<std::size_t>(n)), hi(static_cast<std::size_t>(n));
      for (int w = 0; w < n; ++w) lo[static_cast<std::size_t>(w)] = hi[static_cast<std::size_t>(w)] = w;
      for (int k = n - 1; k >= 0; --k) {
        const int w = tree.preorder()[static_cast<std::size_t>(k)];
        const int h = tree.head(w);
        if (h < 0) continue;
        const auto hs = static_cast<std::size_t>(h), ws = static_cast<std::size_t>(w);
        lo[hs] = std::min(lo[hs], lo[ws]);
        hi[hs] = std::max(hi[hs], hi[ws]);
      }
      intervals_.resize(static_cast<std::size_t>(n));
      for (int w = 0; w < n; ++w) {
        offset_[static_cast<std::size_t>(w) + 1] = w + 1;
        intervals_[static_cast<std::size_t>(w)] = {lo[static_cast<std::size_t>(w)], hi[static_cast<std::size_t>(w)] + 1};
      }
      return;
    }
    merge_bottom_up(tree);
  }

  const std::pair<int, int>* begin(int w) const {
    return intervals_.data() + offset_[static_cast<std::size_t>(w)];
  }
  const std::pair<int, int>* end(int w) const {
    return intervals_.data() + offset_[static_cast<std::size_t>(w) + 1];
  }
  std::size_t total() const { return intervals_.size(); }

 private:
  // Non-projective trees: each subtree's list is its own word merged with its
  // children's lists, children first (reverse preorder). Memory is the sum
  // of the list lengths, which is what the distance kernel walks anyway.
  void merge_bottom_up(const DependencyTree& tree) {
    const int n = tree.size();
    std::vector<std::vector<std::pair<int, int>>> lists(static_cast<std::size_t>(n));
    std::vector<std::pair<int, int>> merged;
    for (int k = n - 1; k >= 0; --k) {
      const int w = tree.preorder()[static_cast<std::size_t>(k)];
      merged.assign(1, {w, w + 1});
      for (const int* c = tree.children_begin(w); c != tree.children_end(w); ++c) {
        const auto& child = lists[static_cast<std::size_t>(*c)];
        merged.insert(merged.end(), child.begin(), child.end());
      }
      std::sort(merged.begin(), merged.end());
      auto& mine = lists[static_cast<std::size_t>(w)];
      for (const auto& iv : merged) {
        if (!mine.empty() && mine.back().second >= iv.first)
          mine.back().second = std::max(mine.back().second, iv.second);
        else
          mine.push_back(iv);
      }
    }
    intervals_.clear();
    for (int w = 0; w < n; ++w) {
      const auto& l = lists[static_cast<std::size_t>(w)];
      intervals_.insert(intervals_.end(), l.begin(), l.end());
      offset_[static_cast<std::size_t>(w) + 1] = static_cast<int>(intervals_.size());
    }
  }

  std::vector<int> offset_;
  std::vector<std::pair<int, int>> intervals_;
};

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
inline void copy_range(W* __restrict dst, const W* __restrict src, int lo, int hi) {
  std::copy(src + lo, src + hi, dst + lo);
}
template <class W>
inline void fill_range(W* dst, int lo, int hi, W value) {
  std::fill(dst + lo, dst + hi, value);
}

// Writes rows of the distance matrix in preorder into `rows` (n rows of
// `stride` elements of W). W must hold every value that occurs.
template <class W>
void undirected_rows(const DependencyTree& tree, const SubtreeIntervals& spans, W* rows,
                     Index stride, W cross) {
  const int n = tree.size();
  const bool single = tree.num_trees() == 1;
  const std::vector<int>& depth = tree.depth();
  for (int k = 0; k < n; ++k) {
    const int c = tree.preorder()[static_cast<std::size_t>(k)];
    W* row = rows + static_cast<Index>(c) * stride;
    const int p = tree.head(c);
    const int root = tree.roots()[static_cast<std::size_t>(tree.tree_of()[static_cast<std::size_t>(c)])];
    if (p < 0) {
      if (!single) fill_range(row, 0, n, cross);
      for (auto it = spans.begin(c); it != spans.end(c); ++it)
        for (int j = it->first; j < it->second; ++j)
          row[j] = static_cast<W>(depth[static_cast<std::size_t>(j)]);
      continue;
    }
    const W* parent = rows + static_cast<Index>(p) * stride;
    // Outside c's tree: the parent's cross values. Inside: +1 off c's
    // subtree, -1 on it. Walk the tree's intervals and c's intervals together.
    int at = 0;
    const auto* sub = spans.begin(c);
    for (auto t = spans.begin(root); t != spans.end(root); ++t) {
      if (!single) copy_range(row, parent, at, t->first);
      at = t->first;
      for (; sub != spans.end(c) && sub->first < t->second; ++sub) {
        add_range<W>(row, parent, at, sub->first, W(1));
        add_range<W>(row, parent, sub->first, sub->second, W(-1));
        at = sub->second;
      }
      add_range<W>(row, parent, at, t->second, W(1));
      at = t->second;
    }
    if (!single) copy_range(row, parent, at, n);
  }
}

template <class W>
void directed_rows(const DependencyTree& tree, const SubtreeIntervals& spans, W* up, W* down,
                   Index up_stride, Index down_stride, W cross) {
  const int n = tree.size();
  const bool single = tree.num_trees() == 1;
  const std::vector<int>& depth = tree.depth();
  for (int k = 0; k < n; ++k) {
    const int c = tree.preorder()[static_cast<std::size_t>(k)];
    W* urow = up + static_cast<Index>(c) * up_stride;
    W* drow = down + static_cast<Index>(c) * down_stride;
    const int p = tree.head(c);
    const int root = tree.roots()[static_cast<std::size_t>(tree.tree_of()[static_cast<std::size_t>(c)])];
    if (p < 0) {
      if (!single) {
        fill_range(urow, 0, n, cross);
        fill_range(drow, 0, n, cross);
      }
      for (auto it = spans.begin(c); it != spans.end(c); ++it)
        for (int j = it->first; j < it->second; ++j) {
          urow[j] = W(0);
          drow[j] = static_cast<W>(depth[static_cast<std::size_t>(j)]);
        }
      continue;
    }
    const W* uparent = up + static_cast<Index>(p) * up_stride;
    const W* dparent = down + static_cast<Index>(p) * down_stride;
    int at = 0;
    const auto* sub = spans.begin(c);
    for (auto t = spans.begin(root); t != spans.end(root); ++t) {
      if (!single) {
        copy_range(urow, uparent, at, t->first);
        copy_range(drow, dparent, at, t->first);
      }
      at = t->first;
      for (; sub != spans.end(c) && sub->first < t->second; ++sub) {
        add_range<W>(urow, uparent, at, sub->first, W(1));
        copy_range(drow, dparent, at, sub->first);
        fill_range(urow, sub->first, sub->second, W(0));
        add_range<W>(drow, dparent, sub->first, sub->second, W(-1));
        at = sub->second;
      }
      add_range<W>(urow, uparent, at, t->second, W(1));
      copy_range(drow, dparent, at, t->second);
      at = t->second;
    }
    if (!single) {
      copy_range(urow, uparent, at, n);
      copy_range(drow, dparent, at, n);
    }
  }
}

template <class T>
void check_output(const char* fn, const char* name, Index rows, Index cols, int n) {
  if (rows != n || cols != n)
    throw Error(std::string(fn) + ": output '" + name + "' is " + std::to_string(rows) + "x" +
                std::to_string(cols) + ", expected " + std::to_string(n) + "x" + std::to_string(n));
  static_assert(std::is_integral<T>::value && std::is_signed<T>::value,
                "distance element type must be a signed integer (int8, int16, int32)");
}

inline int max_depth(const DependencyTree& tree) {
  int h = 0;
  for (int d : tree.depth()) h = d > h ? d : h;
  return h;
}

template <class T>
void saturating_copy(const RowMajorMatrix<std::int32_t>& wide, Eigen::Ref<RowMajorMatrix<T>> out) {
  for (Index r = 0; r < wide.rows(); ++r)
    for (Index c = 0; c < wide.cols(); ++c) out(r, c) = saturate_to<T>(wide(r, c));
}

}  // namespace detail

// Fills `out` (n x n, caller-provided, any outer stride) with dist(i, j).
// Cross-tree pairs of a forest get `cross_distance` (default: the largest
// value of T, which every bucketing puts in its last bucket, SPEC §2).
// Values beyond T's range saturate at its maximum (int8: 127).
template <class T = std::int8_t>
void pairwise_distances(const DependencyTree& tree, Eigen::Ref<RowMajorMatrix<T>> out,
                        long long cross_distance = std::numeric_limits<T>::max()) {
  const int n = tree.size();
  detail::check_output<T>("pairwise_distances", "out", out.rows(), out.cols(), n);
  if (cross_distance < 0)
    throw Error("pairwise_distances: cross_distance must be >= 0, got " + std::to_string(cross_distance));
  if (n == 0) return;
  const SubtreeIntervals spans(tree);
  // Every distance is at most twice the height, so the recurrence runs in T
  // itself unless T could saturate (deep trees), where it needs exact values.
  if (2LL * detail::max_depth(tree) <= std::numeric_limits<T>::max()) {
    detail::undirected_rows<T>(tree, spans, out.data(), out.outerStride(),
                               detail::saturate_to<T>(cross_distance));
    return;
  }
  RowMajorMatrix<std::int32_t> wide(n, n);
  detail::undirected_rows<std::int32_t>(tree, spans, wide.data(), wide.outerStride(),
                                        detail::saturate_to<std::int32_t>(cross_distance));
  detail::saturating_copy<T>(wide, out);
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
  const SubtreeIntervals spans(tree);
  if (detail::max_depth(tree) <= std::numeric_limits<T>::max()) {
    detail::directed_rows<T>(tree, spans, up.data(), down.data(), up.outerStride(),
                             down.outerStride(), detail::saturate_to<T>(cross_distance));
    return;
  }
  RowMajorMatrix<std::int32_t> wide_up(n, n), wide_down(n, n);
  detail::directed_rows<std::int32_t>(tree, spans, wide_up.data(), wide_down.data(),
                                      wide_up.outerStride(), wide_down.outerStride(),
                                      detail::saturate_to<std::int32_t>(cross_distance));
  detail::saturating_copy<T>(wide_up, up);
  detail::saturating_copy<T>(wide_down, down);
}

// Convenience: a freshly allocated n x n matrix.
template <class T = std::int8_t>
RowMajorMatrix<T> pairwise_distances(const DependencyTree& tree) {
  RowMajorMatrix<T> out(tree.size(), tree.size());
  pairwise_distances<T>(tree, out);
  return out;
}

}  // namespace synattn

#endif  // SYNATTN_TREE_DISTANCE_HPP
