// synattn — head-array conventions and tree validation (docs/math.md §1).
//
// The canonical form is 0-based with root = -1. Other conventions are
// converted explicitly; the convention is always named by the caller.
#ifndef SYNATTN_TREE_HEADS_HPP
#define SYNATTN_TREE_HEADS_HPP

#include <cstddef>
#include <string>
#include <vector>

#include "../error.hpp"

namespace synattn {

enum class HeadConvention {
  ZeroBasedRootMinusOne,  // canonical: head[i] in [0, n), root = -1
  OneBasedRootZero,       // CoNLL-U HEAD: head[i] in [1, n], root = 0
  RootIsSelf,             // 0-based, a root points to itself: head[r] == r
};

// Whether a head array must be a single tree or may be a forest (several
// sentences packed in one sequence, one root each).
enum class Structure { Tree, Forest };

inline const char* convention_name(HeadConvention c) {
  switch (c) {
    case HeadConvention::ZeroBasedRootMinusOne: return "0-based, root = -1";
    case HeadConvention::OneBasedRootZero: return "1-based, root = 0";
    case HeadConvention::RootIsSelf: return "0-based, root points to itself";
  }
  return "?";
}

// Converts `heads` from convention `from` to the canonical form. Checks only
// that every value is in range for `from` (cycles and roots are checked by
// validate_heads); the error names the value as the caller wrote it.
inline std::vector<int> to_canonical_heads(const std::vector<int>& heads, HeadConvention from,
                                           const std::string& sentence = {}) {
  const long n = static_cast<long>(heads.size());
  std::vector<int> out(heads.size());
  for (long i = 0; i < n; ++i) {
    const long h = heads[static_cast<std::size_t>(i)];
    long canonical = 0;
    bool ok = false;
    switch (from) {
      case HeadConvention::ZeroBasedRootMinusOne:
        ok = h >= -1 && h < n;
        canonical = h;
        break;
      case HeadConvention::OneBasedRootZero:
        ok = h >= 0 && h <= n;
        canonical = h - 1;
        break;
      case HeadConvention::RootIsSelf:
        ok = h >= 0 && h < n;
        canonical = (h == i) ? -1 : h;
        break;
    }
    if (!ok) {
      const std::string range = from == HeadConvention::OneBasedRootZero
                                    ? "[0, " + std::to_string(n) + "]"
                                    : from == HeadConvention::RootIsSelf
                                          ? "[0, " + std::to_string(n) + ")"
                                          : "[-1, " + std::to_string(n) + ")";
      throw TreeError(sentence, i,
                      "head " + std::to_string(h) + " out of range " + range + " (" +
                          convention_name(from) + ")");
    }
    out[static_cast<std::size_t>(i)] = static_cast<int>(canonical);
  }
  return out;
}

// Converts canonical heads to convention `to` (the inverse of to_canonical_heads).
inline std::vector<int> from_canonical_heads(const std::vector<int>& heads, HeadConvention to) {
  std::vector<int> out(heads.size());
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const int h = heads[i];
    switch (to) {
      case HeadConvention::ZeroBasedRootMinusOne: out[i] = h; break;
      case HeadConvention::OneBasedRootZero: out[i] = h + 1; break;
      case HeadConvention::RootIsSelf: out[i] = h < 0 ? static_cast<int>(i) : h; break;
    }
  }
  return out;
}

namespace detail {

// "3 -> 5 -> 3" for a cycle given as the words on it in walk order; after
// kShown words it is cut to "... -> 3 (N words)", so a 1,000-word cycle
// does not make a 7 kB message. The CoNLL-U reader uses the same text.
template <class Int>
std::string cycle_text(const std::vector<Int>& path) {
  constexpr std::size_t kShown = 12;
  std::string out;
  for (std::size_t i = 0; i < path.size() && i < kShown; ++i)
    out += std::to_string(path[i]) + " -> ";
  if (path.size() > kShown)
    return out + "... -> " + std::to_string(path[0]) + " (" + std::to_string(path.size()) +
           " words)";
  return out + std::to_string(path[0]);
}

}  // namespace detail

// Throws TreeError unless `heads` (canonical) is a valid tree, or a valid
// forest when `structure` is Forest: every head in [-1, n), no word its own
// head, no cycle, exactly one root (Tree) or at least one (Forest, n > 0).
// An empty head array is a valid (empty) tree.
inline void validate_heads(const int* heads, std::size_t size, Structure structure,
                           const std::string& sentence = {}) {
  const long n = static_cast<long>(size);
  long roots = 0;
  long first_root = -1;
  for (long i = 0; i < n; ++i) {
    const long h = heads[i];
    if (h < -1 || h >= n)
      throw TreeError(sentence, i,
                      "head " + std::to_string(h) + " out of range [0, " + std::to_string(n) +
                          ") (root = -1)");
    if (h == i) throw TreeError(sentence, i, "word is its own head (self-loop)");
    if (h == -1) {
      if (roots == 0) first_root = i;
      ++roots;
      if (structure == Structure::Tree && roots > 1)
        throw TreeError(sentence, i,
                        "second root (word " + std::to_string(first_root) +
                            " is a root too); a tree has exactly one root");
    }
  }
  if (n > 0 && roots == 0) throw TreeError(sentence, -1, "no root: every word has a head");

  // Cycle check: follow heads from each unvisited word; a walk that meets a
  // word on its own current path has found a cycle. O(n) overall.
  enum : unsigned char { kUnseen = 0, kOnPath = 1, kDone = 2 };
  std::vector<unsigned char> state(size, kUnseen);
  for (long start = 0; start < n; ++start) {
    long w = start;
    while (w >= 0 && state[static_cast<std::size_t>(w)] == kUnseen) {
      state[static_cast<std::size_t>(w)] = kOnPath;
      w = heads[w];
    }
    if (w >= 0 && state[static_cast<std::size_t>(w)] == kOnPath) {
      std::vector<long> path{w};
      for (long c = heads[w]; c != w; c = heads[c]) path.push_back(c);
      long smallest = w;
      for (long c : path) smallest = c < smallest ? c : smallest;
      throw TreeError(sentence, smallest, "cycle through words " + detail::cycle_text(path));
    }
    for (long c = start; c >= 0 && state[static_cast<std::size_t>(c)] == kOnPath; c = heads[c])
      state[static_cast<std::size_t>(c)] = kDone;
  }
}

inline void validate_heads(const std::vector<int>& heads, Structure structure,
                           const std::string& sentence = {}) {
  validate_heads(heads.data(), heads.size(), structure, sentence);
}

}  // namespace synattn

#endif  // SYNATTN_TREE_HEADS_HPP
