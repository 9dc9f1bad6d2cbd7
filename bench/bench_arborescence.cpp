// The parser's decoder: max_spanning_tree (parse/arborescence.hpp), the best
// tree with one word under the root, on 10-, 50- and 200-word sentences.
//
//   cmake --preset release -DSYNATTN_BUILD_BENCH=ON && cmake --build --preset release --target bench_arborescence
//   build/release/bench/bench_arborescence --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Inputs, float scores as the parser's biaffine layer gives them:
//   Random:    every arc uniform in [0, 1): no structure, the best-arc graph
//              is full of cycles and nearly every node ends up contracted.
//   Planted:   a random non-projective tree's arcs 2 above uniform noise,
//              root arcs 1 above (a trained parser on an easy sentence):
//              each word's best head is already the tree, the shortcut.
//   MultiRoot: the same, but one word in 10 scores the root 2.5 above noise
//              (a parser that wants several roots): the full algorithm, the
//              single-root constraint deciding.
// A warm workspace (the parser's steady state: nothing allocated per call).
#include <benchmark/benchmark.h>

#include <synattn/parse/arborescence.hpp>

#include "machine.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace {

using synattn::Index;
using synattn::parse::ArborescenceWorkspace;
using synattn::parse::max_spanning_tree;

float uniform01(std::mt19937_64& rng) { return static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53); }

std::vector<float> random_scores(int n, std::mt19937_64& rng) {
  const std::size_t N = static_cast<std::size_t>(n) + 1;
  std::vector<float> s(N * N);
  for (float& x : s) x = uniform01(rng);
  return s;
}

std::vector<float> planted_scores(int n, std::mt19937_64& rng, int root_lovers_in) {
  const std::size_t N = static_cast<std::size_t>(n) + 1;
  // A random recursive tree over a random word order, one word under the root.
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 1);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> gold(N, -1);
  gold[static_cast<std::size_t>(order[0])] = 0;
  for (std::size_t k = 1; k < order.size(); ++k)
    gold[static_cast<std::size_t>(order[k])] = order[static_cast<std::size_t>(rng() % k)];
  std::vector<float> s(N * N);
  for (std::size_t d = 1; d < N; ++d)
    for (std::size_t h = 0; h < N; ++h)
      s[d * N + h] = uniform01(rng) + (gold[d] == static_cast<int>(h) ? 2.0f : h == 0 ? 1.0f : 0.0f);
  if (root_lovers_in > 0)
    for (std::size_t d = 1; d < N; ++d)
      if (rng() % static_cast<std::uint64_t>(root_lovers_in) == 0 || d == 1) s[d * N] = 2.5f + uniform01(rng);
  return s;
}
std::vector<float> planted_tree(int n, std::mt19937_64& rng) { return planted_scores(n, rng, 0); }
std::vector<float> planted_multi_root(int n, std::mt19937_64& rng) { return planted_scores(n, rng, 10); }

template <std::vector<float> (*make)(int, std::mt19937_64&)>
void BM_MaxSpanningTree(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::mt19937_64 rng(static_cast<std::uint64_t>(n));
  // Several sentences, cycled, so one lucky matrix does not set the time.
  std::vector<std::vector<float>> sentences;
  for (int i = 0; i < 16; ++i) sentences.push_back(make(n, rng));
  ArborescenceWorkspace ws(n);
  std::vector<int> heads(static_cast<std::size_t>(n) + 1);
  std::size_t i = 0;
  for (auto _ : state) {
    const double score = max_spanning_tree(sentences[i].data(), n, n + 1, heads, ws);
    benchmark::DoNotOptimize(score);
    benchmark::DoNotOptimize(heads.data());
    i = (i + 1) % sentences.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * n);  // words per second
}

void BM_MaxSpanningTree_Random(benchmark::State& state) { BM_MaxSpanningTree<random_scores>(state); }
void BM_MaxSpanningTree_Planted(benchmark::State& state) { BM_MaxSpanningTree<planted_tree>(state); }
void BM_MaxSpanningTree_MultiRoot(benchmark::State& state) { BM_MaxSpanningTree<planted_multi_root>(state); }

BENCHMARK(BM_MaxSpanningTree_Random)->Arg(10)->Arg(50)->Arg(200)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaxSpanningTree_Planted)->Arg(10)->Arg(50)->Arg(200)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MaxSpanningTree_MultiRoot)->Arg(10)->Arg(50)->Arg(200)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return synattn_bench::run_benchmarks(argc, argv); }
