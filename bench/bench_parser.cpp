// bench_parser — parsing speed of trained parsers on UD English EWT dev
// (gold tokenisation, 2,001 sentences, 25,147 words), as `parse` runs them:
// the whole file per iteration, batches of similar-length sentences, decoding
// included (ParserModel::parse), reading and writing excluded.
//
//   bench_parser                                   the shipped model (models/en_ewt.parser.safetensors)
//   bench_parser --synattn_models=a.safetensors,b.safetensors   several models, one run, side by side
//   bench_parser --benchmark_filter=.../threads:1  one thread only
//
// Counters: words/s (the median iteration's), and the model's parameters.
// Benchmarks: parse/<model file name>/threads:T for T = 1 and 2; and
// long/<model file name>/words/N (one thread), one sentence of N = 100, 1,000,
// 4,000 or 10,000 words (EWT dev's words in order, as one sentence), past
// the library's limit (parse/sentence_length.hpp) where N is above it, with
// the process's peak resident memory so far (peak MB: run one N per process,
// as docs/benchmarks.md does, for that N's own).
#include <benchmark/benchmark.h>

#include <synattn/io/conllu.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/util/resident_memory.hpp>

#include "machine.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Corpus {
  std::vector<std::vector<std::string>> sentences;
  long long words = 0;
};

const Corpus& ewt_dev() {
  static const Corpus corpus = [] {
    Corpus c;
    for (const auto& s : synattn::read_conllu(std::string(SYNATTN_SOURCE_DIR) + "/data/ud/UD_English-EWT/en_ewt-ud-dev.conllu")) {
      c.sentences.emplace_back();
      for (const auto& w : s.words) c.sentences.back().push_back(w.form);
      c.words += static_cast<long long>(s.words.size());
    }
    return c;
  }();
  return corpus;
}

void parse_corpus(benchmark::State& state, std::shared_ptr<const synattn::parse::ParserModel> model, int threads) {
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
#else
  if (threads > 1) {
    state.SkipWithError("built without OpenMP");
    return;
  }
#endif
  const Corpus& corpus = ewt_dev();
  for (auto _ : state) {
    const auto parsed = model->parse(corpus.sentences);
    benchmark::DoNotOptimize(parsed.data());
  }
#if defined(_OPENMP)
  omp_set_num_threads(saved);
#endif
  state.counters["words/s"] =
      benchmark::Counter(static_cast<double>(corpus.words), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["parameters"] = static_cast<double>(model->parser().parameter_count());
  state.SetItemsProcessed(state.iterations() * corpus.words);
}

// One sentence of `words` words: EWT dev's forms in order, from its start
// again when they run out.
std::vector<std::string> long_sentence(std::size_t words) {
  const Corpus& corpus = ewt_dev();
  std::vector<std::string> out;
  out.reserve(words);
  while (out.size() < words)
    for (const auto& s : corpus.sentences)
      for (const auto& w : s)
        if (out.size() < words) out.push_back(w);
  return out;
}

void parse_long(benchmark::State& state, std::shared_ptr<const synattn::parse::ParserModel> model) {
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
#endif
  const std::vector<std::vector<std::string>> sentence{long_sentence(static_cast<std::size_t>(state.range(0)))};
  for (auto _ : state) {
    const auto parsed = model->parse(sentence, 4096, std::numeric_limits<std::size_t>::max());
    benchmark::DoNotOptimize(parsed.data());
  }
#if defined(_OPENMP)
  omp_set_num_threads(saved);
#endif
  state.counters["words/s"] =
      benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak MB"] = synattn::resident_peak_bytes() / 1e6;  // the process's so far
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string flag = "--synattn_models=";
    if (a.rfind(flag, 0) == 0) {
      std::string list = a.substr(flag.size());
      for (std::size_t start = 0; start <= list.size();) {
        const std::size_t comma = list.find(',', start);
        const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!item.empty()) models.push_back(item);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      args.push_back(argv[i]);
    }
  }
  if (models.empty()) models.push_back(std::string(SYNATTN_SOURCE_DIR) + "/models/en_ewt.parser.safetensors");
  for (const std::string& path : models) {
    std::shared_ptr<const synattn::parse::ParserModel> model;
    try {
      model = std::make_shared<const synattn::parse::ParserModel>(synattn::parse::ParserModel::load(path));
    } catch (const std::exception& e) {
      std::cerr << "bench_parser: " << e.what() << "\n";
      return 1;
    }
    const std::string name = std::filesystem::path(path).filename().string();
    for (const int threads : {1, 2})
      benchmark::RegisterBenchmark(("parse/" + name + "/threads:" + std::to_string(threads)).c_str(), parse_corpus, model,
                                   threads)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(2.0)
          ->UseRealTime();
    benchmark::RegisterBenchmark(("long/" + name + "/words").c_str(), parse_long, model)
        ->Arg(100)
        ->Arg(1000)
        ->Arg(4000)
        ->Arg(10000)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  int count = static_cast<int>(args.size());
  synattn_bench::add_machine_context();
  benchmark::Initialize(&count, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
