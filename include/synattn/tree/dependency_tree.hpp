// synattn — a validated dependency tree (or forest) with the traversal data
// that distance and LCA kernels need: depths, a preorder in which every
// subtree is a contiguous range, and the tree each word belongs to.
#ifndef SYNATTN_TREE_DEPENDENCY_TREE_HPP
#define SYNATTN_TREE_DEPENDENCY_TREE_HPP

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "heads.hpp"

namespace synattn {

class DependencyTree {
 public:
  DependencyTree() = default;

  // `heads` in canonical form (0-based, root = -1). Validates; throws TreeError
  // naming `sentence` and the word.
  explicit DependencyTree(std::vector<int> heads, Structure structure = Structure::Tree,
                          std::string sentence = {});

  // Converts from `convention` first: the convention is always explicit.
  static DependencyTree from_heads(const std::vector<int>& heads, HeadConvention convention,
                                   Structure structure = Structure::Tree, std::string sentence = {}) {
    // Two statements: in one call the move could happen before the read.
    std::vector<int> canonical = to_canonical_heads(heads, convention, sentence);
    return DependencyTree(std::move(canonical), structure, std::move(sentence));
  }

  // Packs several trees into one forest, in order: word j of tree t becomes
  // word offset_t + j. Each part must be a valid tree.
  static DependencyTree pack(const std::vector<DependencyTree>& parts, std::string sentence = {}) {
    std::vector<int> heads;
    for (const auto& part : parts) {
      const int offset = static_cast<int>(heads.size());
      for (int h : part.heads()) heads.push_back(h < 0 ? -1 : h + offset);
    }
    return DependencyTree(std::move(heads), Structure::Forest, std::move(sentence));
  }

  int size() const noexcept { return static_cast<int>(heads_.size()); }
  bool empty() const noexcept { return heads_.empty(); }
  Structure structure() const noexcept { return structure_; }
  const std::string& sentence() const noexcept { return sentence_; }

  const std::vector<int>& heads() const noexcept { return heads_; }
  int head(int word) const { return heads_[static_cast<std::size_t>(word)]; }

  // Roots in word order; one per tree of the forest.
  const std::vector<int>& roots() const noexcept { return roots_; }
  int num_trees() const noexcept { return static_cast<int>(roots_.size()); }
  // Index into roots() of the tree each word belongs to.
  const std::vector<int>& tree_of() const noexcept { return tree_of_; }

  // Edges from the word to its root (roots have depth 0).
  const std::vector<int>& depth() const noexcept { return depth_; }

  // Words in depth-first preorder, trees in root order, children in word
  // order. The subtree of w is preorder()[position(w), position(w)+subtree_size(w)).
  const std::vector<int>& preorder() const noexcept { return preorder_; }
  const std::vector<int>& position() const noexcept { return position_; }
  const std::vector<int>& subtree_size() const noexcept { return subtree_size_; }

  // Children of `word` in word order.
  const int* children_begin(int word) const {
    return child_list_.data() + child_offset_[static_cast<std::size_t>(word)];
  }
  const int* children_end(int word) const {
    return child_list_.data() + child_offset_[static_cast<std::size_t>(word) + 1];
  }

  // True when every subtree covers a contiguous span of word order (no gaps):
  // then subtree ranges can be addressed in word order without permuting.
  bool is_projective() const noexcept { return projective_; }

  // The word-order intervals [first, second) that together hold the subtree
  // of `word`, sorted and coalesced: one interval each when projective. For a
  // root, they are its tree's words. Distance kernels stream over these.
  using Interval = std::pair<int, int>;
  const Interval* intervals_begin(int word) const {
    return intervals_.data() + interval_offset_[static_cast<std::size_t>(word)];
  }
  const Interval* intervals_end(int word) const {
    return intervals_.data() + interval_offset_[static_cast<std::size_t>(word) + 1];
  }

 private:
  void build();
  // Non-projective: each subtree's list is its own word merged with its
  // children's lists, children first (reverse preorder). Memory is the sum
  // of the list lengths, which is what the distance kernels walk anyway.
  void merge_intervals_bottom_up();

  std::vector<int> heads_;
  Structure structure_ = Structure::Tree;
  std::string sentence_;
  std::vector<int> roots_, tree_of_, depth_, preorder_, position_, subtree_size_;
  std::vector<int> child_offset_{0}, child_list_;
  std::vector<int> interval_offset_{0};
  std::vector<Interval> intervals_;
  bool projective_ = true;
};

// The definitions that validate a tree and build its indexes: inline in a
// header-only build. With SYNATTN_COMPILED (linking synattn::compiled) a
// program sees them declared only and links the library's one copy
// (src/compiled.cpp defines SYNATTN_TREES_SOURCE), so a file that builds
// trees compiles none of it; bias/bucket_batch.hpp's make_bucket_batch
// follows the same rule.
#if defined(SYNATTN_TREES_SOURCE)
#define SYNATTN_TREES_INLINE
#else
#define SYNATTN_TREES_INLINE inline
#endif

#if !defined(SYNATTN_COMPILED) || defined(SYNATTN_TREES_SOURCE)
SYNATTN_TREES_INLINE DependencyTree::DependencyTree(std::vector<int> heads, Structure structure, std::string sentence)
    : heads_(std::move(heads)), structure_(structure), sentence_(std::move(sentence)) {
  validate_heads(heads_, structure_, sentence_);
  build();
}

SYNATTN_TREES_INLINE void DependencyTree::build() {
  const std::size_t n = heads_.size();
  // Children lists in CSR form (counting sort keeps word order).
  child_offset_.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (heads_[i] >= 0) ++child_offset_[static_cast<std::size_t>(heads_[i]) + 1];
  for (std::size_t i = 0; i < n; ++i) child_offset_[i + 1] += child_offset_[i];
  child_list_.assign(child_offset_[n], 0);
  std::vector<int> fill(child_offset_.begin(), child_offset_.end() - 1);
  roots_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (heads_[i] >= 0)
      child_list_[static_cast<std::size_t>(fill[static_cast<std::size_t>(heads_[i])]++)] =
          static_cast<int>(i);
    else
      roots_.push_back(static_cast<int>(i));
  }

  // Iterative DFS (no recursion: a path-like tree of 10^5 words must not
  // overflow the stack).
  preorder_.clear();
  preorder_.reserve(n);
  position_.assign(n, 0);
  depth_.assign(n, 0);
  tree_of_.assign(n, 0);
  std::vector<int> stack;
  stack.reserve(n);
  for (std::size_t t = 0; t < roots_.size(); ++t) {
    stack.push_back(roots_[t]);
    while (!stack.empty()) {
      const int w = stack.back();
      stack.pop_back();
      position_[static_cast<std::size_t>(w)] = static_cast<int>(preorder_.size());
      preorder_.push_back(w);
      tree_of_[static_cast<std::size_t>(w)] = static_cast<int>(t);
      // Push in reverse so children are visited in word order.
      for (const int* c = children_end(w); c != children_begin(w);) {
        --c;
        depth_[static_cast<std::size_t>(*c)] = depth_[static_cast<std::size_t>(w)] + 1;
        stack.push_back(*c);
      }
    }
  }

  // Subtree sizes and spans, accumulated children-first (reverse preorder).
  subtree_size_.assign(n, 1);
  std::vector<int> lo(n), hi(n);
  for (std::size_t i = 0; i < n; ++i) lo[i] = hi[i] = static_cast<int>(i);
  for (std::size_t k = n; k-- > 0;) {
    const int w = preorder_[k];
    const int h = heads_[static_cast<std::size_t>(w)];
    if (h < 0) continue;
    const auto hs = static_cast<std::size_t>(h), ws = static_cast<std::size_t>(w);
    subtree_size_[hs] += subtree_size_[ws];
    lo[hs] = lo[ws] < lo[hs] ? lo[ws] : lo[hs];
    hi[hs] = hi[ws] > hi[hs] ? hi[ws] : hi[hs];
  }
  projective_ = true;
  for (std::size_t i = 0; i < n && projective_; ++i)
    projective_ = hi[i] - lo[i] + 1 == subtree_size_[i];

  interval_offset_.assign(n + 1, 0);
  if (projective_) {
    intervals_.resize(n);
    for (std::size_t w = 0; w < n; ++w) {
      interval_offset_[w + 1] = static_cast<int>(w + 1);
      intervals_[w] = {lo[w], hi[w] + 1};
    }
  } else {
    merge_intervals_bottom_up();
  }
}

SYNATTN_TREES_INLINE void DependencyTree::merge_intervals_bottom_up() {
  const std::size_t n = heads_.size();
  std::vector<std::vector<Interval>> lists(n);
  std::vector<Interval> merged;
  for (std::size_t k = n; k-- > 0;) {
    const int w = preorder_[k];
    merged.assign(1, {w, w + 1});
    for (const int* c = children_begin(w); c != children_end(w); ++c) {
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
  for (std::size_t w = 0; w < n; ++w) {
    intervals_.insert(intervals_.end(), lists[w].begin(), lists[w].end());
    interval_offset_[w + 1] = static_cast<int>(intervals_.size());
  }
}
#endif

}  // namespace synattn

#endif  // SYNATTN_TREE_DEPENDENCY_TREE_HPP
