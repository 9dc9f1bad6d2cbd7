// What a benchmark ran on, in its JSON and console context: the CPU's name
// and family, and build_info() (kernels, products, threads). Google
// Benchmark records only the core count, clock and caches, so tables named
// the CPU from memory, and one named a Zen 5 VM "Zen 4": the two have the
// same name in /proc/cpuinfo ("AMD EPYC") and the same flags but for a few,
// and differ 2x in AVX-512 throughput (Zen 4 splits each 512-bit FMA in two).
#ifndef SYNATTN_BENCH_MACHINE_HPP
#define SYNATTN_BENCH_MACHINE_HPP

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <synattn/build_info.hpp>

namespace synattn_bench {

// "AMD EPYC, family 26 model 2 (Zen 5)" from the first processor in
// /proc/cpuinfo; "unknown CPU" where there is none. The core generation is
// named for AMD's families only, where the model name leaves it out.
inline std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, vendor, family, model, flags;
  auto value = [&](const char* key, std::string& out) {  // the first "key<tabs>: value"
    if (!out.empty() || line.rfind(key, 0) != 0) return;
    const auto colon = line.find(':');
    const auto start = colon == std::string::npos ? colon : line.find_first_not_of(' ', colon + 1);
    if (start != std::string::npos) out = line.substr(start);
  };
  while (std::getline(in, line) && line.find_first_not_of(" \t") != std::string::npos) {
    value("model name", name);
    value("vendor_id", vendor);
    value("cpu family", family);
    value("model\t", model);
    value("flags", flags);
  }
  if (name.empty()) return "unknown CPU";
  std::string out = name;
  if (!family.empty()) out += ", family " + family + " model " + model;
  if (vendor == "AuthenticAMD" && !family.empty()) {
    const int f = std::atoi(family.c_str());
    const bool avx512 = flags.find(" avx512f") != std::string::npos;
    const char* core = f == 23 ? "Zen, Zen 2" : f == 25 ? (avx512 ? "Zen 4" : "Zen 3") : f == 26 ? "Zen 5" : nullptr;
    if (core != nullptr) out += std::string(" (") + core + ")";
  }
  return out;
}

// Adds "cpu" and "synattn" (build_info()) to the benchmark's context; call
// before benchmark::Initialize.
inline void add_machine_context() {
  benchmark::AddCustomContext("cpu", cpu_description());
  benchmark::AddCustomContext("synattn", synattn::build_info());
}

// main() for a benchmark program with nothing of its own to set up.
inline int run_benchmarks(int argc, char** argv) {
  add_machine_context();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace synattn_bench

#endif  // SYNATTN_BENCH_MACHINE_HPP
