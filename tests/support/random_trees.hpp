// Random dependency trees for property tests: shallow random recursive trees
// (like real sentences), deep path-like trees, projective trees and forests.
#ifndef SYNATTN_TESTS_RANDOM_TREES_HPP
#define SYNATTN_TESTS_RANDOM_TREES_HPP

#include <algorithm>
#include <numeric>
#include <queue>
#include <random>
#include <vector>

namespace synattn_test {

// Word order is a random permutation of the attachment order, so the trees
// are mostly non-projective.
inline std::vector<int> random_recursive_heads(int n, std::mt19937& rng) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> heads(static_cast<std::size_t>(n), -1);
  for (int k = 1; k < n; ++k) {
    std::uniform_int_distribution<int> pick(0, k - 1);
    heads[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = order[static_cast<std::size_t>(pick(rng))];
  }
  return heads;
}

// A path 0 - 1 - ... - n-1 hung from a random word: depth up to n-1.
inline std::vector<int> path_heads(int n, int root) {
  std::vector<int> heads(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) heads[static_cast<std::size_t>(i)] = i < root ? i + 1 : i - 1;
  if (n > 0) heads[static_cast<std::size_t>(root)] = -1;
  return heads;
}

// Projective: recursively split [lo, hi) around a random head.
inline void projective_fill(std::vector<int>& heads, int lo, int hi, int parent, std::mt19937& rng) {
  if (lo >= hi) return;
  std::uniform_int_distribution<int> pick(lo, hi - 1);
  const int h = pick(rng);
  heads[static_cast<std::size_t>(h)] = parent;
  // Split the left and right parts into a few sibling spans each.
  for (int side = 0; side < 2; ++side) {
    int a = side == 0 ? lo : h + 1, b = side == 0 ? h : hi;
    while (a < b) {
      std::uniform_int_distribution<int> len(1, b - a);
      const int m = a + len(rng);
      projective_fill(heads, a, m, h, rng);
      a = m;
    }
  }
}
inline std::vector<int> random_projective_heads(int n, std::mt19937& rng) {
  std::vector<int> heads(static_cast<std::size_t>(n), -1);
  projective_fill(heads, 0, n, -1, rng);
  return heads;
}

// Plain BFS over the undirected tree: the independent reference. -1 when
// unreachable (different trees of a forest).
inline std::vector<std::vector<int>> bfs_distances(const std::vector<int>& heads) {
  const int n = static_cast<int>(heads.size());
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    if (heads[static_cast<std::size_t>(i)] >= 0) {
      adj[static_cast<std::size_t>(i)].push_back(heads[static_cast<std::size_t>(i)]);
      adj[static_cast<std::size_t>(heads[static_cast<std::size_t>(i)])].push_back(i);
    }
  std::vector<std::vector<int>> dist(static_cast<std::size_t>(n), std::vector<int>(static_cast<std::size_t>(n), -1));
  for (int s = 0; s < n; ++s) {
    auto& d = dist[static_cast<std::size_t>(s)];
    std::queue<int> q;
    d[static_cast<std::size_t>(s)] = 0;
    q.push(s);
    while (!q.empty()) {
      const int u = q.front();
      q.pop();
      for (int v : adj[static_cast<std::size_t>(u)])
        if (d[static_cast<std::size_t>(v)] < 0) {
          d[static_cast<std::size_t>(v)] = d[static_cast<std::size_t>(u)] + 1;
          q.push(v);
        }
    }
  }
  return dist;
}

// Naive LCA by walking up from both words.
inline int naive_lca(const std::vector<int>& heads, int u, int v) {
  std::vector<char> seen(heads.size(), 0);
  for (int a = u; a >= 0; a = heads[static_cast<std::size_t>(a)]) seen[static_cast<std::size_t>(a)] = 1;
  for (int b = v; b >= 0; b = heads[static_cast<std::size_t>(b)])
    if (seen[static_cast<std::size_t>(b)]) return b;
  return -1;
}

}  // namespace synattn_test

#endif
