// Cost of making one training batch (32 EWT sentences of similar length):
// vocabulary lookups, word dropout, labels and buckets. It runs once per
// training step, so it must stay far below a step's time (milliseconds).
//
//   build/release/bench/bench_token_batch
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include <synattn/data/token_batch.hpp>

#include "machine.hpp"

namespace {

struct Data {
  std::vector<synattn::TaggedSentence> train;
  synattn::Vocabulary vocab;
  synattn::LabelSet labels;
  std::vector<std::vector<std::size_t>> batches;
};

const Data& data() {
  static const Data d = [] {
    Data x;
    const std::string dir = std::string(SYNATTN_SOURCE_DIR) + "/data/ud/UD_English-EWT/";
    const auto all = synattn::load_tagging_corpus(dir + "en_ewt-ud-train.conllu");
    for (std::size_t i : synattn::select_training_subset(all, 8000)) x.train.push_back(all[i]);
    x.vocab = synattn::Vocabulary::build(x.train);
    x.labels = synattn::LabelSet::build(all);
    x.batches = synattn::length_batches(synattn::sentence_lengths(x.train), 1, 0);
    return x;
  }();
  return d;
}

// Arg 0: no buckets, 1: linear (clamp 10), 2: directed (clamp 4).
void BM_make_token_batch(benchmark::State& state) {
  const Data& d = data();
  const synattn::Bucketing linear = synattn::Bucketing::linear(10);
  const synattn::Bucketing directed = synattn::Bucketing::directed(4);
  const synattn::Bucketing* b = state.range(0) == 0 ? nullptr : state.range(0) == 1 ? &linear : &directed;
  synattn::TokenBatch tb;
  std::size_t k = 0, words = 0;
  for (auto _ : state) {
    const auto& batch = d.batches[k++ % d.batches.size()];
    synattn::make_token_batch(d.train, batch, d.vocab, d.labels, b, synattn::WordDropout::for_epoch(1, 0), tb);
    benchmark::DoNotOptimize(tb.ids.data());
    words += tb.tokens;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(words));
  state.SetLabel(state.range(0) == 0 ? "no buckets" : state.range(0) == 1 ? "linear" : "directed");
}
BENCHMARK(BM_make_token_batch)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// The same batches from an EncodedCorpus (lookups and trees done once).
void BM_make_token_batch_encoded(benchmark::State& state) {
  const Data& d = data();
  const synattn::Bucketing linear = synattn::Bucketing::linear(10);
  const synattn::Bucketing directed = synattn::Bucketing::directed(4);
  const synattn::Bucketing* b = state.range(0) == 0 ? nullptr : state.range(0) == 1 ? &linear : &directed;
  const synattn::EncodedCorpus corpus(d.train, d.vocab, d.labels, b);
  synattn::TokenBatch tb;
  std::size_t k = 0, words = 0;
  for (auto _ : state) {
    const auto& batch = d.batches[k++ % d.batches.size()];
    synattn::make_token_batch(corpus, batch, synattn::WordDropout::for_epoch(1, 0), tb);
    benchmark::DoNotOptimize(tb.ids.data());
    words += tb.tokens;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(words));
  state.SetLabel(state.range(0) == 0 ? "no buckets" : state.range(0) == 1 ? "linear" : "directed");
}
BENCHMARK(BM_make_token_batch_encoded)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return synattn_bench::run_benchmarks(argc, argv); }
