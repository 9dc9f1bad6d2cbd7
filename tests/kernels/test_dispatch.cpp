// The kernel registry (kernels/registry.hpp): ISA names, what this build and
// CPU support, the kernel set each ISA names and the default choice (never
// AVX-512), set_isa (and its errors), the SYNATTN_KERNEL_ISA variable, and
// that the layer's entry points run the chosen ISA. Built twice: natively and
// as test_dispatch_default_flags (-march=x86-64, no AVX in the compiler
// flags), which must still run the vector kernels on a CPU that has them:
// the point of dispatching; and as test_dispatch_portable.
#include <catch2/catch.hpp>

#include <synattn/build_info.hpp>
#include <synattn/kernels/attention_rows.hpp>
#include <synattn/kernels/gemm.hpp>
#include <synattn/kernels/isa.hpp>
#include <synattn/kernels/linear_small.hpp>
#include <synattn/kernels/registry.hpp>
#include <synattn/util/cpu_features.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace k = synattn::kernels;
using synattn::Index;
using synattn::KernelIsa;

namespace {

// Restores the active ISA when a test ends.
struct KeepIsa {
  KernelIsa saved = k::active_isa();
  ~KeepIsa() { k::set_isa(saved); }
};

[[maybe_unused]] bool cpu_has_avx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

[[maybe_unused]] bool cpu_has_avx512() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

// Numerators of a random (rows, n) block with a 12-slot table.
template <class S>
struct Input {
  Index rows = 5, n = 45;
  int slots = 12;
  std::vector<S> z, shifted;
  std::vector<std::int8_t> buckets;
  Input() {
    std::mt19937 rng(17);
    std::normal_distribution<double> g(0.0, 2.0);
    for (Index i = 0; i < rows * n; ++i) {
      z.push_back(static_cast<S>(g(rng)));
      buckets.push_back(static_cast<std::int8_t>(static_cast<int>(rng() % 12) - 1));
    }
    shifted.push_back(-std::numeric_limits<S>::infinity());
    for (int s = 1; s < slots; ++s) shifted.push_back(static_cast<S>(g(rng)));
  }
  // The block in Eigen-aligned storage: the portable kernel's Eigen loops
  // peel to the packet alignment, so its last bits depend on the address.
  template <class F>
  std::vector<S> run(F&& numerators) const {
    std::vector<S, Eigen::aligned_allocator<S>> block(z.begin(), z.end());
    std::vector<S> inv(static_cast<std::size_t>(rows)), row_max(inv);
    numerators(k::RowBlock<S>{rows, n, n, -1, buckets.data(), n, shifted.data(), slots}, block.data(), n, inv.data(),
               row_max.data());
    std::vector<S> out(block.begin(), block.end());
    out.insert(out.end(), inv.begin(), inv.end());
    out.insert(out.end(), row_max.begin(), row_max.end());
    return out;
  }
};

}  // namespace

TEST_CASE("every kernel ISA has its SYNATTN_KERNEL_ISA name", "[kernels][dispatch]") {
  CHECK(std::string(synattn::to_string(KernelIsa::portable)) == "portable");
  CHECK(std::string(synattn::to_string(KernelIsa::avx2)) == "avx2");
  CHECK(std::string(synattn::to_string(KernelIsa::avx512)) == "avx512");
  CHECK(std::string(synattn::to_string(KernelIsa::neon)) == "neon");
  CHECK(std::string(synattn::to_string(static_cast<KernelIsa>(7))) == "unknown");
}

TEST_CASE("supported_isas lists portable, then what this build and CPU run", "[kernels][dispatch]") {
  const std::vector<KernelIsa> isas = k::supported_isas();
  REQUIRE(!isas.empty());
  CHECK(isas.front() == KernelIsa::portable);
  const auto has = [&](KernelIsa isa) { return std::find(isas.begin(), isas.end(), isa) != isas.end(); };
  for (KernelIsa isa : {KernelIsa::portable, KernelIsa::avx2, KernelIsa::avx512, KernelIsa::neon})
    CHECK(k::isa_supported(isa) == has(isa));
#if defined(SYNATTN_PORTABLE_KERNELS)
  CHECK(isas.size() == 1);
#elif defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Whatever -march this file was compiled with (see the file comment).
  CHECK(has(KernelIsa::avx2) == cpu_has_avx2());
  CHECK(has(KernelIsa::avx512) == cpu_has_avx512());
  CHECK(!has(KernelIsa::neon));
#elif defined(__aarch64__)
  CHECK(has(KernelIsa::neon));  // Advanced SIMD: every AArch64 CPU
#endif
}

TEST_CASE("without SYNATTN_KERNEL_ISA the widest supported ISA is chosen", "[kernels][dispatch]") {
  const char* env = std::getenv("SYNATTN_KERNEL_ISA");
  if (env != nullptr && *env != '\0') {
    WARN("SYNATTN_KERNEL_ISA is set (" << env << "): skipped");
    return;
  }
  CHECK(k::detail::initial_isa() == k::supported_isas().back());
  CHECK(k::detail::default_isa() == k::supported_isas().back());
#if !defined(SYNATTN_PORTABLE_KERNELS) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Also in the default-flags build, where the compiler targets no AVX: the
  // CPU decides, AVX-512 over AVX2 over portable.
  const KernelIsa expected = k::cpu_runs(KernelIsa::avx512) ? KernelIsa::avx512
                             : cpu_has_avx2()               ? KernelIsa::avx2
                                                            : KernelIsa::portable;
  CHECK(k::detail::initial_isa() == expected);
#endif
}

TEST_CASE("each ISA names one kernel set: its own version where a family has one, else portable",
          "[kernels][dispatch]") {
  CHECK(k::kernel_set_for(KernelIsa::portable) ==
        k::KernelSet{KernelIsa::portable, KernelIsa::portable, KernelIsa::portable});
  CHECK(k::kernel_set_for(KernelIsa::avx2) == k::KernelSet{KernelIsa::avx2, KernelIsa::avx2, KernelIsa::portable});
  CHECK(k::kernel_set_for(KernelIsa::avx512) == k::KernelSet{KernelIsa::avx512, KernelIsa::avx512, KernelIsa::avx512});
  CHECK(k::kernel_set_for(KernelIsa::neon) == k::KernelSet{KernelIsa::neon, KernelIsa::portable, KernelIsa::portable});
  CHECK(k::kernel_set_for(KernelIsa::avx2) != k::kernel_set_for(KernelIsa::portable));
  KeepIsa keep;
  for (KernelIsa isa : k::supported_isas()) {
    INFO("isa " << synattn::to_string(isa));
    k::set_isa(isa);
    CHECK(k::kernel_set() == k::kernel_set_for(isa));
    // The few-rows projection kernel runs with the avx512 set only.
    CHECK(k::uses_small_linear<float>(16) == (isa == KernelIsa::avx512));
    // The set's table holds what the set names: the few-rows kernel where
    // the set has one, the set's GEMM (the portable one with Eigen's products).
    const k::KernelTable<double>& table = k::active_kernels<double>();
    CHECK((table.linear_small != nullptr) == (k::kernel_set().linear_small != KernelIsa::portable));
    CHECK((table.gemm == k::portable::kernel_table<double>.gemm) == (k::kernel_set().gemm == KernelIsa::portable));
    CHECK((table.rows.softmax_numerators == k::portable::kernel_table<double>.rows.softmax_numerators) ==
          (k::kernel_set().rows == KernelIsa::portable));
  }
}

TEST_CASE("set_isa switches the layer's entry points to that ISA's kernels", "[kernels][dispatch]") {
  KeepIsa keep;
  const Input<float> in;
  for (KernelIsa isa : k::supported_isas()) {
    INFO("isa " << synattn::to_string(isa));
    k::set_isa(isa);
    CHECK(k::active_isa() == isa);
    const auto direct = in.run([&](auto... a) { k::kernels_for<float>(isa).rows.softmax_numerators(a...); });
    const auto dispatched = in.run([](auto... a) { k::softmax_numerators<float>(a...); });
    CHECK(direct == dispatched);  // bit for bit: the very same function ran
    CHECK_THAT(synattn::build_info(), Catch::Contains(std::string("kernels: ") + synattn::to_string(isa) +
                                                      " set (rows " + synattn::to_string(isa)));
  }
}

TEST_CASE("set_isa and kernels_for refuse an ISA this build or CPU cannot run, naming it", "[kernels][dispatch]") {
  KeepIsa keep;
  for (KernelIsa isa : {KernelIsa::avx2, KernelIsa::avx512, KernelIsa::neon}) {
    if (k::isa_supported(isa)) continue;
    INFO("isa " << synattn::to_string(isa));
    CHECK_THROWS_AS(k::set_isa(isa), synattn::Error);
    CHECK_THROWS_WITH(k::set_isa(isa), Catch::Contains(std::string("set_isa(") + synattn::to_string(isa) + ")") &&
                                           Catch::Contains("it runs: portable"));
    CHECK_THROWS_WITH(k::kernels_for<double>(isa), Catch::Contains(synattn::to_string(isa)));
    CHECK(k::active_isa() == keep.saved);  // unchanged
  }
  CHECK_THROWS_WITH(k::set_isa(static_cast<KernelIsa>(7)), Catch::Contains("KernelIsa value 7"));
}

TEST_CASE("SYNATTN_KERNEL_ISA picks the ISA at first use and a bad value is a clear error", "[kernels][dispatch]") {
  const char* before = std::getenv("SYNATTN_KERNEL_ISA");
  const std::string saved = before ? before : "";
  ::setenv("SYNATTN_KERNEL_ISA", "portable", 1);
  CHECK(k::detail::initial_isa() == KernelIsa::portable);
  ::setenv("SYNATTN_KERNEL_ISA", "", 1);  // empty: as if unset
  CHECK(k::detail::initial_isa() == k::detail::default_isa());
  ::setenv("SYNATTN_KERNEL_ISA", "AVX2", 1);
  CHECK_THROWS_WITH(k::detail::initial_isa(), Catch::Contains("SYNATTN_KERNEL_ISA is 'AVX2'") &&
                                                  Catch::Contains("portable, avx2, avx512 or neon"));
  for (KernelIsa isa : {KernelIsa::avx2, KernelIsa::avx512, KernelIsa::neon}) {
    ::setenv("SYNATTN_KERNEL_ISA", synattn::to_string(isa), 1);
    if (k::isa_supported(isa))
      CHECK(k::detail::initial_isa() == isa);
    else
      CHECK_THROWS_WITH(k::detail::initial_isa(),
                        Catch::Contains(std::string("SYNATTN_KERNEL_ISA=") + synattn::to_string(isa)));
  }
  if (before)
    ::setenv("SYNATTN_KERNEL_ISA", saved.c_str(), 1);
  else
    ::unsetenv("SYNATTN_KERNEL_ISA");
}

TEST_CASE("set_isa from one thread while others run kernels: each call runs one whole ISA", "[kernels][dispatch]") {
  KeepIsa keep;
  const Input<double> in;
  std::vector<std::vector<double>> expected;
  for (KernelIsa isa : k::supported_isas())
    expected.push_back(in.run([&](auto... a) { k::kernels_for<double>(isa).rows.softmax_numerators(a...); }));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, runs{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t)
    workers.emplace_back([&] {
      while (!stop.load()) {
        const auto got = in.run([](auto... a) { k::softmax_numerators<double>(a...); });
        if (std::find(expected.begin(), expected.end(), got) == expected.end()) ++bad;
        ++runs;
      }
    });
  const auto isas = k::supported_isas();
  for (int i = 0; i < 2000 || runs.load() < 100; ++i) k::set_isa(isas[static_cast<std::size_t>(i) % isas.size()]);
  stop = true;
  for (auto& w : workers) w.join();
  CHECK(bad.load() == 0);
}

TEST_CASE(
    "one ISA query for every kernel family: cpu_runs follows cpu_features, and every family carries "
    "its versions",
    "[dispatch][isa]") {
  using synattn::CpuFeature;
  CHECK(k::required_features(KernelIsa::portable) == CpuFeature::none);
  CHECK(k::required_features(KernelIsa::avx2) == (CpuFeature::avx2 | CpuFeature::fma));
  CHECK(synattn::has(k::required_features(KernelIsa::avx512),
                     CpuFeature::avx512bw | CpuFeature::avx512vl | CpuFeature::avx512dq | CpuFeature::avx512f));
  CHECK(k::cpu_runs(KernelIsa::portable));
  const CpuFeature cpu = synattn::cpu_features();
  for (KernelIsa isa : {KernelIsa::avx2, KernelIsa::avx512}) {
    INFO(synattn::to_string(isa));
    CHECK(k::cpu_runs(isa) == ((cpu & k::required_features(isa)) == k::required_features(isa)));
    // CPUID as the compiler's builtin reports it, independently of cpu_features().
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const bool builtin = isa == KernelIsa::avx2
                             ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                             : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    CHECK(k::cpu_runs(isa) == builtin);
#endif
  }
#if defined(__aarch64__)
  CHECK(k::cpu_runs(KernelIsa::neon));
#else
  CHECK_FALSE(k::cpu_runs(KernelIsa::neon));
#endif
  // Every family carries its x86 versions on x86-64 GCC/Clang whatever the
  // flags (target pragmas), and none with SYNATTN_PORTABLE_KERNELS.
#if !defined(SYNATTN_PORTABLE_KERNELS) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  for (KernelIsa isa : {KernelIsa::avx2, KernelIsa::avx512}) {
    INFO(synattn::to_string(isa));
    CHECK(k::detail::compiled(isa));
    CHECK(k::isa_supported(isa) == k::cpu_runs(isa));
  }
  CHECK(k::avx512::kernel_table<float>.linear_small != nullptr);
  CHECK(k::avx2::kernel_table<float>.linear_small == nullptr);
#elif defined(SYNATTN_PORTABLE_KERNELS)
  for (KernelIsa isa : {KernelIsa::avx2, KernelIsa::avx512, KernelIsa::neon}) CHECK_FALSE(k::detail::compiled(isa));
#endif
#if !defined(__aarch64__)
  CHECK_FALSE(k::detail::compiled(KernelIsa::neon));
#endif
  CHECK(k::detail::compiled(KernelIsa::portable));
  CHECK_FALSE(k::detail::compiled(static_cast<KernelIsa>(7)));
}
