// synattn — lowest common ancestors with O(1) queries after O(n log n)
// preprocessing (docs/math.md §2: dist = depth(i) + depth(j) - 2 depth(lca)).
#ifndef SYNATTN_TREE_LCA_HPP
#define SYNATTN_TREE_LCA_HPP

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "dependency_tree.hpp"

namespace synattn {

// Range-minimum over the preorder. For u != v with position(u) < position(v),
// the LCA is the head of the shallowest word in preorder positions
// (position(u), position(v)]: that range leaves u's subtree exactly at the
// child of the LCA that holds v (or starts inside it when u is the LCA).
// The sparse table stores, per range, the preorder position of the word
// with the smallest depth.
//
// The index copies the few per-word arrays it reads (5 ints per word beside
// the table), so it does not refer to the tree it was built from: that tree
// may be reassigned or destroyed afterwards. (An earlier version kept a
// pointer, and a query after the tree was reassigned to a larger one read
// past the end of the table.)
class LcaIndex {
 public:
  // An index of the empty tree: every query is out of range.
  LcaIndex() = default;
  explicit LcaIndex(const DependencyTree& tree) { build(tree); }

  // Words in the tree the index was built from.
  int size() const noexcept { return static_cast<int>(depth_.size()); }

  // Lowest common ancestor of words u and v, or -1 when they are in
  // different trees of a forest. Throws on out-of-range words.
  int lca(int u, int v) const {
    check(u, "u");
    check(v, "v");
    return lca_unchecked(u, v);
  }

  // Edges between u and v; -1 when they are in different trees.
  int distance(int u, int v) const {
    const int a = lca(u, v);
    if (a < 0) return -1;
    return depth_[static_cast<std::size_t>(u)] + depth_[static_cast<std::size_t>(v)] -
           2 * depth_[static_cast<std::size_t>(a)];
  }

  // u and v must be in [0, size()).
  int lca_unchecked(int u, int v) const {
    if (u == v) return u;
    if (tree_of_[static_cast<std::size_t>(u)] != tree_of_[static_cast<std::size_t>(v)]) return -1;
    int a = position_[static_cast<std::size_t>(u)];
    int b = position_[static_cast<std::size_t>(v)];
    if (a > b) std::swap(a, b);
    const int shallowest = range_min(a + 1, b + 1);  // preorder positions [a+1, b+1)
    return head_at_[static_cast<std::size_t>(shallowest)];
  }

 private:
  void check(int w, const char* name) const {
    if (w < 0 || w >= size())
      throw Error(std::string("LcaIndex: word ") + name + " = " + std::to_string(w) +
                  " out of range [0, " + std::to_string(size()) + ")");
  }

  int shallower(int p, int q) const {
    return depth_at_[static_cast<std::size_t>(q)] < depth_at_[static_cast<std::size_t>(p)] ? q : p;
  }

  void build(const DependencyTree& tree) {
    const int n = tree.size();
    const auto un = static_cast<std::size_t>(n);
    depth_ = tree.depth();
    tree_of_ = tree.tree_of();
    position_ = tree.position();
    head_at_.resize(un);
    depth_at_.resize(un);
    for (std::size_t p = 0; p < un; ++p) {
      const int w = tree.preorder()[p];
      head_at_[p] = tree.head(w);
      depth_at_[p] = depth_[static_cast<std::size_t>(w)];
    }
    log2_.assign(un + 1, 0);
    for (int i = 2; i <= n; ++i) log2_[static_cast<std::size_t>(i)] = log2_[static_cast<std::size_t>(i / 2)] + 1;
    const int levels = n > 0 ? log2_[un] + 1 : 0;
    table_.assign(static_cast<std::size_t>(levels) * un, 0);
    for (int p = 0; p < n; ++p) table_[static_cast<std::size_t>(p)] = p;
    for (int k = 1; k < levels; ++k) {
      const int half = 1 << (k - 1);
      int* row = table_.data() + static_cast<std::size_t>(k) * un;
      const int* prev = row - n;
      for (int p = 0; p + (1 << k) <= n; ++p) row[p] = shallower(prev[p], prev[p + half]);
    }
  }

  // Preorder position of the shallowest word in [lo, hi), hi > lo.
  int range_min(int lo, int hi) const {
    const int k = log2_[static_cast<std::size_t>(hi - lo)];
    const int* row = table_.data() + static_cast<std::size_t>(k) * depth_.size();
    return shallower(row[lo], row[hi - (1 << k)]);
  }

  // Per word: depth, index of its tree in the forest, preorder position.
  std::vector<int> depth_, tree_of_, position_;
  // Per preorder position: the word's head and depth.
  std::vector<int> head_at_, depth_at_;
  std::vector<int> log2_{0};
  std::vector<int> table_;  // levels x n, row k covers ranges of length 2^k
};

}  // namespace synattn

#endif  // SYNATTN_TREE_LCA_HPP
