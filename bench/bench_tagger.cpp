// Training throughput of SyntaxTransformerTagger<float>: one step (forward,
// loss, backward; no optimiser) on a batch of 32 sentences of 20..60 tokens,
// d_model 128, 4 heads, 2 layers, FFN 256, dropout 0.1, syntax bias on every
// layer. Reports tokens/s (real tokens). bench/pytorch_tagger_reference.py
// times the same model in PyTorch.
#include <benchmark/benchmark.h>

#include <synattn/nn/tagger.hpp>

#include <random>
#include <vector>

using namespace synattn;
using namespace synattn::nn;

static void BM_TaggerTrainStep(benchmark::State& state) {
  const int batch = 32, n = 60, vocab = 10000, classes = 17;
  TaggerOptions o;
  o.vocab_size = vocab;
  o.num_classes = classes;
  o.d_model = 128;
  o.heads = 4;
  o.d_ff = 256;
  o.layers = 2;
  o.dropout = 0.1;
  SyntaxTransformerTagger<float> model(o);
  std::mt19937 gen(1);
  std::vector<int> lengths;
  IdVector ids = IdVector::Zero(batch * n), labels = IdVector::Constant(batch * n, kIgnoreLabel);
  RowMajorMatrix<std::int8_t> buckets = RowMajorMatrix<std::int8_t>::Constant(batch * n, n, -1);
  long real = 0;
  for (int b = 0; b < batch; ++b) {
    const int len = 20 + static_cast<int>(gen() % 41);
    lengths.push_back(len);
    real += len;
    for (int i = 0; i < len; ++i) {
      ids[b * n + i] = 1 + static_cast<int>(gen() % (vocab - 1));
      labels[b * n + i] = static_cast<int>(gen() % classes);
      for (int j = 0; j < len; ++j) buckets(b * n + i, j) = static_cast<std::int8_t>(std::min(std::abs(i - j), 10));
    }
  }
  TaggerCache<float> cache;
  std::uint64_t step = 0;
  for (auto _ : state) {
    model.zero_grad();
    const RandomStream drop = RandomStream(7).derive(step++);
    const LossResult l = model.loss_and_backward(ids, lengths, buckets, labels, cache, &drop);
    benchmark::DoNotOptimize(l.loss);
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(real) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TaggerTrainStep)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
