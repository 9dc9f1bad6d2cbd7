// synattn — lowest common ancestors with O(1) queries after O(n log n)
// preprocessing (SPEC §2: dist = depth(i) + depth(j) - 2 depth(lca)).
#ifndef SYNATTN_TREE_LCA_HPP
#define SYNATTN_TREE_LCA_HPP

#include <cstddef>
#include <string>
#include <vector>

#include "dependency_tree.hpp"

namespace synattn {

// Range-minimum over the preorder. For u != v with position(u) < position(v),
// the LCA is the head of the shallowest word in preorder positions
// (position(u), position(v)]: that range leaves u's subtree exactly at the
// child of the LCA that holds v (or starts inside it when u is the LCA).
// The sparse table stores, per range, the preorder position of the word
// with the smallest depth.
class LcaIndex {
 public:
  LcaIndex() = default;
  // Refers to `tree`, which must outlive the index.
  explicit LcaIndex(const DependencyTree& tree) : tree_(&tree) { build(); }

  const DependencyTree& tree() const {
    if (tree_ == nullptr) throw Error("LcaIndex: default-constructed index has no tree");
    return *tree_;
  }

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
    const std::vector<int>& d = tree_->depth();
    return d[static_cast<std::size_t>(u)] + d[static_cast<std::size_t>(v)] -
           2 * d[static_cast<std::size_t>(a)];
  }

  int lca_unchecked(int u, int v) const {
    if (u == v) return u;
    const std::vector<int>& tree_of = tree_->tree_of();
    if (tree_of[static_cast<std::size_t>(u)] != tree_of[static_cast<std::size_t>(v)]) return -1;
    int a = tree_->position()[static_cast<std::size_t>(u)];
    int b = tree_->position()[static_cast<std::size_t>(v)];
    if (a > b) std::swap(a, b);
    const int shallowest = range_min(a + 1, b + 1);  // preorder positions [a+1, b+1)
    return tree_->head(tree_->preorder()[static_cast<std::size_t>(shallowest)]);
  }

 private:
  void check(int w, const char* name) const {
    if (tree_ == nullptr) throw Error("LcaIndex: default-constructed index has no tree");
    if (w < 0 || w >= tree_->size())
      throw Error(std::string("LcaIndex: word ") + name + " = " + std::to_string(w) +
                  " out of range [0, " + std::to_string(tree_->size()) + ")");
  }

  // Depth of the word at preorder position p.
  int depth_at(int p) const {
    return tree_->depth()[static_cast<std::size_t>(tree_->preorder()[static_cast<std::size_t>(p)])];
  }
  int shallower(int p, int q) const { return depth_at(q) < depth_at(p) ? q : p; }

  void build() {
    const int n = tree_->size();
    log2_.assign(static_cast<std::size_t>(n) + 1, 0);
    for (int i = 2; i <= n; ++i) log2_[static_cast<std::size_t>(i)] = log2_[static_cast<std::size_t>(i / 2)] + 1;
    const int levels = n > 0 ? log2_[static_cast<std::size_t>(n)] + 1 : 0;
    table_.assign(static_cast<std::size_t>(levels) * static_cast<std::size_t>(n), 0);
    for (int p = 0; p < n; ++p) table_[static_cast<std::size_t>(p)] = p;
    for (int k = 1; k < levels; ++k) {
      const int half = 1 << (k - 1);
      int* row = table_.data() + static_cast<std::size_t>(k) * static_cast<std::size_t>(n);
      const int* prev = row - n;
      for (int p = 0; p + (1 << k) <= n; ++p) row[p] = shallower(prev[p], prev[p + half]);
    }
  }

  // Preorder position of the shallowest word in [lo, hi), hi > lo.
  int range_min(int lo, int hi) const {
    const int k = log2_[static_cast<std::size_t>(hi - lo)];
    const int* row = table_.data() + static_cast<std::size_t>(k) * static_cast<std::size_t>(tree_->size());
    return shallower(row[lo], row[hi - (1 << k)]);
  }

  const DependencyTree* tree_ = nullptr;
  std::vector<int> log2_;
  std::vector<int> table_;  // levels x n, row k covers ranges of length 2^k
};

}  // namespace synattn

#endif  // SYNATTN_TREE_LCA_HPP
