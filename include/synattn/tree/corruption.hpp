// synattn — controlled corruption of dependency trees, for
// measuring what the attention bias buys when the trees are wrong, and as a
// regulariser when training on trees.
//
// corrupt_heads(heads, p, stream): words are visited in order 0..n-1; each
// word that is not the root is, with probability p, re-attached to a word
// drawn uniformly from those that are neither its current head nor in its
// own subtree under the current heads (so the result is still one tree with
// one root; a word with no candidate keeps its head). A word's own head is
// unchanged until its visit, so every re-attached word gets a wrong head and
// the realised UAS is about 1 - p * (share of non-root words).
//
// The draws are a pure function of (stream, word): word i decides with
// uniform(2i) < p and picks candidate floor(uniform(2i + 1) * count), so the
// same stream gives the same tree, and a corpus keys each sentence's stream
// by its index (RandomStream::derive) to be independent of the order or the
// subset it is corrupted in.
#ifndef SYNATTN_TREE_CORRUPTION_HPP
#define SYNATTN_TREE_CORRUPTION_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../util/random.hpp"
#include "heads.hpp"

namespace synattn {

// Words of `predicted` whose head equals `gold`'s (both canonical, one per
// word); throws Error when the sizes differ.
inline std::size_t correct_heads(const std::vector<int>& gold, const std::vector<int>& predicted) {
  if (gold.size() != predicted.size())
    throw Error("correct_heads: " + std::to_string(gold.size()) + " gold heads but " +
                std::to_string(predicted.size()) + " predicted");
  std::size_t same = 0;
  for (std::size_t i = 0; i < gold.size(); ++i) same += gold[i] == predicted[i] ? 1 : 0;
  return same;
}

// `heads` (canonical, a single tree: validate_heads' rules) with each
// non-root word re-attached with probability p as the file comment says.
// Throws Error when p is outside [0, 1], TreeError (naming `sentence`) when
// `heads` is not one tree.
inline std::vector<int> corrupt_heads(std::vector<int> heads, double p, const RandomStream& stream,
                                      const std::string& sentence = {}) {
  if (!(p >= 0.0 && p <= 1.0)) throw Error("corrupt_heads: p must be in [0, 1], got " + std::to_string(p));
  validate_heads(heads, Structure::Tree, sentence);
  const int n = static_cast<int>(heads.size());
  // in_subtree[j] for the word being moved: 1 inside its subtree, 0 outside,
  // -1 not yet known (memoised along each path to the root: O(n) per word).
  std::vector<signed char> in_subtree(static_cast<std::size_t>(n));
  std::vector<int> path, candidates;
  for (int i = 0; i < n; ++i) {
    if (heads[static_cast<std::size_t>(i)] < 0) continue;
    const auto counter = static_cast<std::uint64_t>(i) * 2;
    if (!(stream.uniform(counter) < p)) continue;
    std::fill(in_subtree.begin(), in_subtree.end(), static_cast<signed char>(-1));
    in_subtree[static_cast<std::size_t>(i)] = 1;
    candidates.clear();
    for (int j = 0; j < n; ++j) {
      int k = j;
      path.clear();
      while (k >= 0 && in_subtree[static_cast<std::size_t>(k)] < 0) {
        path.push_back(k);
        k = heads[static_cast<std::size_t>(k)];
      }
      const signed char inside = k >= 0 ? in_subtree[static_cast<std::size_t>(k)] : 0;  // k < 0: reached the root
      for (int w : path) in_subtree[static_cast<std::size_t>(w)] = inside;
      if (!in_subtree[static_cast<std::size_t>(j)] && j != heads[static_cast<std::size_t>(i)]) candidates.push_back(j);
    }
    if (candidates.empty()) continue;
    const auto pick = static_cast<std::size_t>(stream.uniform(counter + 1) * static_cast<double>(candidates.size()));
    heads[static_cast<std::size_t>(i)] = candidates[std::min(pick, candidates.size() - 1)];
  }
  return heads;
}

}  // namespace synattn

#endif  // SYNATTN_TREE_CORRUPTION_HPP
