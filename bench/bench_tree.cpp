// All-pairs int8 tree distances: synattn's row recursion against the seed
// design's per-pair parent walk (O(n^3) worst case), BFS from every word, and
// the floor, memset of n^2 bytes.
//
//   cmake --preset release && cmake --build --preset release --target bench_tree
//   build/release/bench/bench_tree --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   python3 tools/bench_table.py tree build/release/bench/bench_tree   (README table)
//
// Inputs: random recursive trees (shallow, like sentences; laid out
// projectively as real sentences are, and also in attachment order, which is
// almost never projective), path-like trees (deep: the worst case) and
// forests of real EWT sentences packed into one sequence of n tokens. The
// tree's O(n) preprocessing (depths, preorder, subtree intervals) is part of
// DependencyTree and timed separately by BM_TreeBuild.
#include <benchmark/benchmark.h>

#include <synattn/io/conllu.hpp>
#include <synattn/tree/distance.hpp>

#include "bench_corpus.hpp"
#include "machine.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using synattn::DependencyTree;
using synattn::RowMajorMatrix;

// Random recursive tree: node k attaches to a uniformly random earlier node,
// so depth grows like 2 ln n, as shallow as real sentences. `projective`
// lays it out as real sentences are: each head among its children at a
// random place, every subtree a contiguous span. Otherwise node k is word k,
// which makes almost every subtree gappy (the hard, unrealistic case).
std::vector<int> recursive_heads(int n, unsigned seed, bool projective) {
  std::mt19937 rng(seed);
  std::vector<int> parent(static_cast<std::size_t>(n), -1);
  for (int k = 1; k < n; ++k) parent[static_cast<std::size_t>(k)] = static_cast<int>(rng() % static_cast<unsigned>(k));
  if (!projective) return parent;
  std::vector<std::vector<int>> children(static_cast<std::size_t>(n));
  for (int k = 1; k < n; ++k) children[static_cast<std::size_t>(parent[static_cast<std::size_t>(k)])].push_back(k);
  // In-order layout: -1 - node in the work stack means "emit node itself".
  std::vector<int> word_of(static_cast<std::size_t>(n));
  std::vector<int> stack{0};
  int next_word = 0;
  while (!stack.empty()) {
    const int item = stack.back();
    stack.pop_back();
    if (item < 0) {
      word_of[static_cast<std::size_t>(-item - 1)] = next_word++;
      continue;
    }
    const auto& kids = children[static_cast<std::size_t>(item)];
    const std::size_t at = rng() % (kids.size() + 1);
    // Pushed in reverse: kids[0..at), the node itself, kids[at..).
    for (std::size_t c = kids.size(); c-- > at;) stack.push_back(kids[c]);
    stack.push_back(-item - 1);
    for (std::size_t c = at; c-- > 0;) stack.push_back(kids[c]);
  }
  std::vector<int> heads(static_cast<std::size_t>(n), -1);
  for (int k = 1; k < n; ++k)
    heads[static_cast<std::size_t>(word_of[static_cast<std::size_t>(k)])] =
        word_of[static_cast<std::size_t>(parent[static_cast<std::size_t>(k)])];
  return heads;
}

// Mostly a chain with short side branches: depth about 3n/4.
std::vector<int> path_heads(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> heads(static_cast<std::size_t>(n), -1);
  for (int i = 1; i < n; ++i)
    heads[static_cast<std::size_t>(i)] = (rng() % 4 == 0 && i > 1) ? i - 2 : i - 1;
  return heads;
}

enum Kind { kRecursive = 0, kPath = 1, kEwtForest = 2, kRecursiveNonProjective = 3 };

DependencyTree make_tree(int kind, int n) {
  switch (kind) {
    case kRecursive: return DependencyTree(recursive_heads(n, /*seed=*/42, true));
    case kRecursiveNonProjective: return DependencyTree(recursive_heads(n, /*seed=*/42, false));
    case kPath: return DependencyTree(path_heads(n, /*seed=*/42));
    default: return DependencyTree(synattn_bench::pack_forest(n), synattn::Structure::Forest);
  }
}

void label(benchmark::State& state, int n) {
  static const char* names[] = {"recursive", "path", "ewt-forest", "recursive-nonproj"};
  state.SetLabel(names[state.range(0)]);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * n * n);
}

void BM_Synattn(benchmark::State& state) {
  const int n = static_cast<int>(state.range(1));
  const DependencyTree tree = make_tree(static_cast<int>(state.range(0)), n);
  RowMajorMatrix<std::int8_t> out(n, n);
  for (auto _ : state) {
    synattn::pairwise_distances<std::int8_t>(tree, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  label(state, n);
}

// Building the DependencyTree from a head array (validation, preorder,
// depths, subtree intervals): O(n), paid once per sentence.
void BM_TreeBuild(benchmark::State& state) {
  const int n = static_cast<int>(state.range(1));
  const DependencyTree tree = make_tree(static_cast<int>(state.range(0)), n);
  for (auto _ : state) {
    DependencyTree copy(tree.heads(), synattn::Structure::Forest);
    benchmark::DoNotOptimize(copy.depth().data());
  }
  label(state, n);
}

// The floor: writing n^2 bytes at all.
void BM_Memset(benchmark::State& state) {
  const int n = static_cast<int>(state.range(1));
  RowMajorMatrix<std::int8_t> out(n, n);
  for (auto _ : state) {
    std::memset(out.data(), 1, static_cast<std::size_t>(n) * static_cast<std::size_t>(n));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  label(state, n);
}

// (b) BFS from every word over adjacency lists: O(n^2), but with a queue,
// scattered writes and a branch per edge.
void BM_BfsEveryWord(benchmark::State& state) {
  const int n = static_cast<int>(state.range(1));
  const DependencyTree tree = make_tree(static_cast<int>(state.range(0)), n);
  std::vector<std::vector<int>> adj(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    if (tree.head(i) >= 0) {
      adj[static_cast<std::size_t>(i)].push_back(tree.head(i));
      adj[static_cast<std::size_t>(tree.head(i))].push_back(i);
    }
  RowMajorMatrix<std::int8_t> out(n, n);
  std::vector<int> queue(static_cast<std::size_t>(n)), dist(static_cast<std::size_t>(n));
  for (auto _ : state) {
    for (int s = 0; s < n; ++s) {
      std::fill(dist.begin(), dist.end(), -1);
      int head = 0, tail = 0;
      dist[static_cast<std::size_t>(s)] = 0;
      queue[static_cast<std::size_t>(tail++)] = s;
      while (head < tail) {
        const int u = queue[static_cast<std::size_t>(head++)];
        for (int v : adj[static_cast<std::size_t>(u)])
          if (dist[static_cast<std::size_t>(v)] < 0) {
            dist[static_cast<std::size_t>(v)] = dist[static_cast<std::size_t>(u)] + 1;
            queue[static_cast<std::size_t>(tail++)] = v;
          }
      }
      std::int8_t* row = out.row(s).data();
      for (int j = 0; j < n; ++j) {
        const int d = dist[static_cast<std::size_t>(j)];
        row[j] = static_cast<std::int8_t>(d < 0 || d > 127 ? 127 : d);
      }
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  label(state, n);
}

// (a) The naive reference (a compute_distance_matrix written the obvious
// way, kept as the baseline): for every pair, walk both
// words up to the root, index one path in a hash map and find the first
// common node on the other.
void BM_SeedParentWalk(benchmark::State& state) {
  const int n = static_cast<int>(state.range(1));
  const DependencyTree tree = make_tree(static_cast<int>(state.range(0)), n);
  const std::vector<int>& heads = tree.heads();
  RowMajorMatrix<std::int8_t> out(n, n);
  std::vector<int> path_a, path_b;
  std::unordered_map<int, int> index_a;
  for (auto _ : state) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        path_a.clear();
        path_b.clear();
        for (int a = i; a >= 0; a = heads[static_cast<std::size_t>(a)]) path_a.push_back(a);
        for (int b = j; b >= 0; b = heads[static_cast<std::size_t>(b)]) path_b.push_back(b);
        index_a.clear();
        for (std::size_t k = 0; k < path_a.size(); ++k) index_a.emplace(path_a[k], static_cast<int>(k));
        int d = 127;
        for (std::size_t k = 0; k < path_b.size(); ++k) {
          const auto it = index_a.find(path_b[k]);
          if (it != index_a.end()) {
            d = it->second + static_cast<int>(k);
            break;
          }
        }
        out(i, j) = static_cast<std::int8_t>(d > 127 ? 127 : d);
      }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  label(state, n);
}

void all_sizes(benchmark::internal::Benchmark* b) {
  for (int kind : {kRecursive, kPath, kEwtForest, kRecursiveNonProjective})
    for (int n : {32, 64, 256, 1024, 4096}) b->Args({kind, n});
}

// The O(n^3)-ish baselines are only run where they finish in reasonable time.
void walk_sizes(benchmark::internal::Benchmark* b) {
  for (int kind : {kRecursive, kPath, kEwtForest, kRecursiveNonProjective})
    for (int n : {32, 64, 256, 1024})
      if (!(kind == kPath && n > 256)) b->Args({kind, n});
}

}  // namespace

BENCHMARK(BM_Memset)->Apply(all_sizes)->ArgNames({"kind", "n"});
BENCHMARK(BM_Synattn)->Apply(all_sizes)->ArgNames({"kind", "n"});
BENCHMARK(BM_TreeBuild)->Apply(all_sizes)->ArgNames({"kind", "n"});
BENCHMARK(BM_BfsEveryWord)->Apply(all_sizes)->ArgNames({"kind", "n"});
BENCHMARK(BM_SeedParentWalk)->Apply(walk_sizes)->ArgNames({"kind", "n"});

int main(int argc, char** argv) { return synattn_bench::run_benchmarks(argc, argv); }
