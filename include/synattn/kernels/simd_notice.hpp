// synattn — a one-time, one-line notice on stderr when this build leaves the
// CPU's vector instructions unused and nothing makes up for it:
//
//   synattn: built for the x86-64 baseline with no run-time kernels; this CPU
//   also has AVX AVX2 FMA: build with synattn::native or -march=native
//   (SYNATTN_SIMD_NOTICE=0 silences this)
//
// (one line, wrapped here). Why only then: synattn is header-only, so Eigen's
// code runs whatever the user's flags allow, but its hot paths (row kernels,
// the GEMM) are chosen at run time for the CPU (kernels/registry.hpp); with
// them a default-flags build measured -2 to +7 % against one compiled for the
// machine (docs/benchmarks.md, "Default flags, native and the benchmark
// build"), which is not worth a line on every run of a user's program. So
// the notice is printed only when the build's default kernel set is the
// portable one (SYNATTN_PORTABLE_KERNELS, or a compiler without the x86
// target regions) on a CPU with features the build lacks; a set chosen on
// purpose (SYNATTN_KERNEL_ISA, set_isa) is not second-guessed.
// Printed once per process, at the first construction of an attention layer
// (never at static initialisation, so merely linking synattn prints nothing).
//
// Silencing: the environment variable SYNATTN_SIMD_NOTICE=0 (read at that
// first construction), or synattn::set_simd_notice(false) before it. The
// decision is taken once per process: later calls neither print nor re-read
// the environment.
#ifndef SYNATTN_KERNELS_SIMD_NOTICE_HPP
#define SYNATTN_KERNELS_SIMD_NOTICE_HPP

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../error.hpp"
#include "../util/cpu_features.hpp"
#include "registry.hpp"

namespace synattn {

// The line for a CPU with features `cpu` running code built for `build`
// whose default kernel set is `set`; empty when the build already uses
// everything the CPU has, or when run-time kernels cover the hot paths (any
// set but the portable one). A pure function of its arguments (the tests
// pass feature sets of their choosing).
inline std::string simd_notice_text(CpuFeature cpu, CpuFeature build, const kernels::KernelSet& set) {
  const CpuFeature missing = without(cpu, build);
  if (missing == CpuFeature::none) return {};
  if (set.rows != KernelIsa::portable || set.gemm != KernelIsa::portable) return {};
  const std::string built = feature_names(build);
  return "synattn: built for " + (built.empty() ? std::string("the x86-64 baseline") : built) +
         " with no run-time kernels; this CPU also has " + feature_names(missing) +
         ": build with synattn::native or -march=native (SYNATTN_SIMD_NOTICE=0 silences this)\n";
}

// Whether the environment variable's value (nullptr: unset) silences the notice.
inline bool simd_notice_env_silences(const char* value) noexcept {
  return value != nullptr && (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0 ||
                              std::strcmp(value, "OFF") == 0 || std::strcmp(value, "false") == 0);
}

namespace detail {

// The process-wide state: enabled by default, decided at most once. A literal
// type with constant initialisation, so there is no static-init order issue.
class SimdNoticeState {
 public:
  constexpr SimdNoticeState() noexcept = default;

  void set_enabled(bool enabled) noexcept { enabled_.store(enabled, std::memory_order_relaxed); }
  bool decided() const noexcept { return decided_.load(std::memory_order_acquire); }

  // The first call decides: prints `text` to `out` unless it is empty, the
  // notice is disabled, or `env_value` silences it. Returns whether it
  // printed. Every later call (from any thread) returns false at once.
  bool decide(std::FILE* out, const std::string& text, const char* env_value) noexcept {
    if (decided_.exchange(true, std::memory_order_acq_rel)) return false;
    if (text.empty() || !enabled_.load(std::memory_order_relaxed) || simd_notice_env_silences(env_value)) return false;
    std::fputs(text.c_str(), out);
    std::fflush(out);
    return true;
  }

 private:
  std::atomic<bool> enabled_{true};
  std::atomic<bool> decided_{false};
};

inline SimdNoticeState& simd_notice_state() noexcept {
  static SimdNoticeState state;  // constant-initialised: no guard, no allocation
  return state;
}

}  // namespace detail

// Turns the notice off (or back on, if it has not been decided yet).
inline void set_simd_notice(bool enabled) noexcept { detail::simd_notice_state().set_enabled(enabled); }

// Called by the attention layer's constructor: prints the notice for this
// translation unit's flags, this CPU and the registry's kernel set, once per
// process. Cheap after the first call (one atomic load). Returns whether
// this call printed it.
inline bool simd_notice() {
  detail::SimdNoticeState& state = detail::simd_notice_state();
  if (state.decided()) return false;
  std::string text;
  try {
    // The build's default set, not an override's: a set asked for is not second-guessed.
    text = simd_notice_text(cpu_features(), build_cpu_features(), kernels::kernel_set_for(kernels::detail::default_isa()));
  } catch (const Error&) {
    text.clear();
  }
  return state.decide(stderr, text, std::getenv("SYNATTN_SIMD_NOTICE"));
}

}  // namespace synattn

#endif  // SYNATTN_KERNELS_SIMD_NOTICE_HPP
