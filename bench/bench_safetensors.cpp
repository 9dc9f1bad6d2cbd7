// Loading a safetensors header of many tensors (io/safetensors.hpp's
// parse_safetensors, from memory): the time per tensor must stay flat as
// the count grows. The reader once parsed with nlohmann's callback, which
// rescans the enclosing object after every entry: 10,000 tensors took 0.8 s,
// 20,000 3.4 s, 40,000 14 s, 100,000 zero-size tensors over 300 s.
//
//   cmake --preset release -DSYNATTN_BUILD_BENCH=ON && cmake --build --preset release --target bench_safetensors
//   build/release/bench/bench_safetensors --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Cases: N one-element F32 tensors ("Tensors"), and N zero-size ones
// ("Empty": a header with no data at all, the cheapest file per tensor).
// Counters: per_tensor (seconds per tensor; flat = linear), header_bytes.
//
// Memory of one load, in a process of its own (the timed cases build their
// files in memory, which costs more than loading them):
//   build/release/bench/bench_safetensors --synattn_write 200000 /tmp/many.safetensors
//   build/release/bench/bench_safetensors --synattn_load /tmp/many.safetensors
// prints the file's size and the process's peak RSS after load_safetensors.
// The header is read one entry at a time: a DOM of the whole header cost
// about ten times its bytes (a 17 MB file of 200,000 tensors peaked at
// 223 MB; now 69 MB, the file's bytes and the parsed result included).
#include <benchmark/benchmark.h>

#include <synattn/io/safetensors.hpp>

#include "machine.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::string file_of(int tensors, bool empty) {
  synattn::SafetensorsFile f;
  const float one = 1.0f;
  for (int i = 0; i < tensors; ++i)
    f.tensors["layers." + std::to_string(i) + ".weight"] =
        empty ? synattn::SafeTensor::from(&one, {0}) : synattn::SafeTensor::from(&one, {1});
  return synattn::serialize_safetensors(f);
}

void run(benchmark::State& state, bool empty) {
  const int n = static_cast<int>(state.range(0));
  const std::string bytes = file_of(n, empty);
  std::size_t loaded = 0;
  for (auto _ : state) {
    const synattn::SafetensorsFile f = synattn::parse_safetensors(bytes.data(), bytes.size(), "bench");
    loaded = f.tensors.size();
    benchmark::DoNotOptimize(loaded);
  }
  if (loaded != static_cast<std::size_t>(n)) state.SkipWithError("wrong tensor count");
  state.counters["per_tensor"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
  state.counters["header_bytes"] = static_cast<double>(bytes.size());
}

void BM_Tensors(benchmark::State& state) { run(state, false); }
void BM_Empty(benchmark::State& state) { run(state, true); }

}  // namespace

BENCHMARK(BM_Tensors)->Arg(10000)->Arg(20000)->Arg(40000)->Arg(100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Empty)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);
int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--synattn_write") == 0) {
    const std::string bytes = file_of(std::atoi(argv[2]), false);
    std::FILE* f = std::fopen(argv[3], "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0) return 1;
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--synattn_load") == 0) {
    const synattn::SafetensorsFile f = synattn::load_safetensors(argv[2]);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    std::FILE* in = std::fopen(argv[2], "rb");
    std::fseek(in, 0, SEEK_END);
    const long size = std::ftell(in);
    std::fclose(in);
    std::printf("%zu tensors, file %.1f MB, peak RSS %.1f MB (%.1fx the file)\n", f.tensors.size(), size / 1e6,
                usage.ru_maxrss * 1024.0 / 1e6, usage.ru_maxrss * 1024.0 / static_cast<double>(size));
    return 0;
  }
  synattn_bench::add_machine_context();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
