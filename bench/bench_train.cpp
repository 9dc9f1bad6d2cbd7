// Training throughput of SyntaxTransformerTagger<float>: one whole training
// step (zero_grad, forward with dropout, cross-entropy, backward, Adam step)
// in tokens per second, for the two models that
// bench/pytorch_train_reference.py's `throughput` mode times in PyTorch with
// the same shapes:
//
//   d128: d_model 128, 4 heads, FFN 256  (the train_deprel experiment's model)
//   d256: d_model 256, 4 heads, FFN 1024
//
// both with 2 pre-norm layers, dropout 0.1 at every site (attention
// probabilities included), vocabulary 4000, 37 classes, a batch of 32
// full-length sequences of n = 64 tokens on random recursive trees (word
// i > 0 hangs from a uniform earlier word), variant "none" (no syntax bias)
// or "shared" (each layer its own 11-bucket table, clamp 10). Threads are the
// third argument. Counters: tokens/s and the process's peak RSS so far.
//
//   build/release/bench/bench_train --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   tools/bench_train_table.py    # with the PyTorch twin, the README table
#include <benchmark/benchmark.h>

#include <synattn/bias/bucketing.hpp>
#include <synattn/nn/tagger.hpp>
#include <synattn/train/optimizer.hpp>
#include <synattn/train/parameter_groups.hpp>
#include <synattn/tree/batch.hpp>
#include <synattn/tree/dependency_tree.hpp>

#include "machine.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif
#include <sys/resource.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace synattn;

constexpr int kBatch = 32, kLength = 64, kVocab = 4000, kClasses = 37;

struct ModelShape {
  int d_model, heads, d_ff;
};
constexpr ModelShape kModels[] = {{128, 4, 256}, {256, 4, 1024}};

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Word 0 is the root; word i > 0 hangs from a uniform earlier word.
std::vector<int> random_recursive_heads(int n, const RandomStream& stream) {
  std::vector<int> heads(static_cast<std::size_t>(n), -1);
  for (int i = 1; i < n; ++i)
    heads[static_cast<std::size_t>(i)] = static_cast<int>(stream.bits(static_cast<std::uint64_t>(i)) % static_cast<std::uint64_t>(i));
  return heads;
}

void BM_TrainStep(benchmark::State& state) {
  const ModelShape shape = kModels[state.range(0)];
  const bool biased = state.range(1) != 0;
#if defined(_OPENMP)
  omp_set_num_threads(static_cast<int>(state.range(2)));
#else
  if (state.range(2) != 1) {
    state.SkipWithError("built without OpenMP");
    return;
  }
#endif
  nn::TaggerOptions o;
  o.vocab_size = kVocab;
  o.num_classes = kClasses;
  o.d_model = shape.d_model;
  o.heads = shape.heads;
  o.d_ff = shape.d_ff;
  o.layers = 2;
  o.dropout = 0.1;
  o.bias_layers = biased ? nn::BiasLayers::All : nn::BiasLayers::None;
  o.bias.bucketing = Bucketing::linear(10);
  nn::SyntaxTransformerTagger<float> model(o);
  Adam<float> adam(AdamOptions{}, syntax_bias_groups(10.0));

  const RandomStream data(2024);
  nn::IdVector ids(kBatch * kLength), labels(kBatch * kLength);
  for (Index t = 0; t < ids.size(); ++t) {
    ids[t] = 2 + static_cast<std::int32_t>(data.derive(1).bits(static_cast<std::uint64_t>(t)) % (kVocab - 2));
    labels[t] = static_cast<std::int32_t>(data.derive(2).bits(static_cast<std::uint64_t>(t)) % kClasses);
  }
  const std::vector<int> lengths(kBatch, kLength);
  RowMajorMatrix<std::int8_t> buckets;
  if (biased) {
    std::vector<DependencyTree> trees;
    for (int b = 0; b < kBatch; ++b)
      trees.push_back(DependencyTree::from_heads(random_recursive_heads(kLength, data.derive(3).derive(b)),
                                                 HeadConvention::ZeroBasedRootMinusOne));
    const DistanceBatch<std::int8_t> distances = make_distance_batch<std::int8_t>(trees, kLength);
    buckets.resize(distances.distances.rows(), distances.distances.cols());
    bucketize<std::int8_t, std::int8_t>(o.bias.bucketing, distances.distances, buckets);
  }

  nn::SyntaxTransformerTagger<float>::Cache cache;
  std::uint64_t step = 0;
  for (auto _ : state) {
    model.zero_grad();
    const RandomStream dropout = RandomStream(7).derive(step++);
    const nn::LossResult loss = model.loss_and_backward({ids, lengths, buckets}, labels, cache, &dropout);
    adam.step(model.parameter_store());
    benchmark::DoNotOptimize(loss.loss);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(kBatch * kLength) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
  state.SetLabel(std::string(shape.d_model == 128 ? "d128" : "d256") + (biased ? " shared" : " none"));
}

// One optimiser step over 2^21 float parameters (16 matrices of 256 x 512),
// the size of the d256 model: what Optimizer::step's all-or-nothing rule
// costs (a checking pass, then the update) next to a whole training step.
void BM_OptimizerStep(benchmark::State& state) {
  ParameterStore<float> store;
  for (int i = 0; i < 16; ++i) store.add("layers." + std::to_string(i) + ".weight", 256, 512);
  store.values().setConstant(0.5f);
  store.gradients().setConstant(1e-3f);
  SgdOptions so;
  so.momentum = 0.9;
  Sgd<float> sgd(so);
  Adam<float> adam(AdamOptions::adamw());
  Optimizer<float>& opt = state.range(0) == 0 ? static_cast<Optimizer<float>&>(adam) : sgd;
  for (auto _ : state) {
    opt.step(store);
    benchmark::DoNotOptimize(store.values().data());
  }
  state.SetLabel(opt.kind() + (state.range(0) == 1 ? " momentum" : ""));
}

}  // namespace

BENCHMARK(BM_OptimizerStep)->ArgName("optimizer")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Arguments: model (0 = d128, 1 = d256), biased (0 none, 1 shared), threads.
BENCHMARK(BM_TrainStep)
    ->ArgNames({"model", "bias", "threads"})
    ->ArgsProduct({{0, 1}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

int main(int argc, char** argv) { return synattn_bench::run_benchmarks(argc, argv); }
