// synattn — a one-time line on stderr when the CPU has vector instructions
// this build's flags leave unused (TensorFlow's convention), stating what
// runs where, e.g. for a default-flags (x86-64) build on an AVX2 machine:
//
//   synattn: this build is compiled for the x86-64 baseline; this CPU also has
//   SSE4.1 SSE4.2 AVX AVX2 FMA. Chosen at run time, the attention row kernels
//   run avx2 and the layers' matrix products run the avx2 GEMM where m, n >= 8
//   and m n k >= 4096; Eigen's other code (smaller products, elementwise work)
//   runs at the build's flags. Compiling for this machine (synattn::native)
//   measured -2 to +7 % on the attention layer's passes: docs/building.md,
//   "Compiling for this machine". SYNATTN_SIMD_NOTICE=0 or
//   synattn::set_simd_notice(false) turns this line off.
//
// Why: synattn is header-only, so Eigen's code runs whatever the user's
// compiler flags allow. The hot paths (row kernels, the GEMM) are chosen at
// run time for the CPU (kernels/registry.hpp), so a default-flags build loses
// little (docs/benchmarks.md, "Default flags, native and the benchmark
// build": -2 to +7 %), and the line says so instead of urging a rebuild; it
// does urge one when no dispatched kernel runs (the portable kernel set).
// Printed once per process, at the first construction of an attention layer
// (never at static initialisation, so merely linking synattn prints nothing).
//
// Silencing: the environment variable SYNATTN_SIMD_NOTICE=0 (read at that
// first construction), or synattn::set_simd_notice(false) before it. The
// decision is taken once per process: later calls neither print nor re-read
// the environment.
#ifndef SYNATTN_UTIL_SIMD_NOTICE_HPP
#define SYNATTN_UTIL_SIMD_NOTICE_HPP

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../error.hpp"
#include "../kernels/product.hpp"
#include "../kernels/registry.hpp"
#include "cpu_features.hpp"

namespace synattn {

// The line for a CPU with features `cpu` running code built for `build`,
// with the kernel set `set` and the products' rule `rule` (what
// kernels::product does at these flags); empty when the build already uses
// everything the CPU has. A pure function of its arguments (the tests pass
// feature sets of their choosing).
inline std::string simd_notice_text(CpuFeature cpu, CpuFeature build, const kernels::KernelSet& set,
                                    const kernels::GemmRule& rule) {
  const CpuFeature missing = without(cpu, build);
  if (missing == CpuFeature::none) return {};
  const std::string built = feature_names(build);
  std::string text = "synattn: this build is compiled for " +
                     (built.empty() ? std::string("the x86-64 baseline") : built) + "; this CPU also has " +
                     feature_names(missing) + ". ";
  const bool gemm = set.gemm != KernelIsa::portable;
  if (set.rows != KernelIsa::portable || gemm) {
    text += "Chosen at run time, the attention row kernels run " + std::string(to_string(set.rows));
    if (gemm)
      text += " and the layers' matrix products run the " + std::string(to_string(set.gemm)) + " GEMM where " +
              kernels::gemm_rule_text(rule) + "; Eigen's other code (smaller products, elementwise work)";
    else
      text += "; Eigen's code (every matrix product, elementwise work)";
    text += " runs at the build's flags. Compiling for this machine (synattn::native) measured -2 to +7 % on the "
            "attention layer's passes: ";
  } else {
    std::string flags;
    for (const auto& f : cpu_feature_table)
      if (has(missing, f.feature)) flags += (flags.empty() ? "" : " ") + std::string(f.flag);
    text += "No kernel chosen at run time uses them (kernel set: portable), so everything runs at the build's "
            "flags; synattn::native or -march=native (or " + flags + ") compiles for this machine: ";
  }
  return text + "docs/building.md, \"Compiling for this machine\". SYNATTN_SIMD_NOTICE=0 or "
                "synattn::set_simd_notice(false) turns this line off.\n";
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
// this call printed it. A SYNATTN_KERNEL_ISA this build or CPU cannot run
// decides without printing: the first kernel call reports it.
inline bool simd_notice() {
  detail::SimdNoticeState& state = detail::simd_notice_state();
  if (state.decided()) return false;
  std::string text;
  try {
    text = simd_notice_text(cpu_features(), build_cpu_features(), kernels::kernel_set(),
                            kernels::gemm_rule(build_cpu_features()));
  } catch (const Error&) {
    text.clear();
  }
  return state.decide(stderr, text, std::getenv("SYNATTN_SIMD_NOTICE"));
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_SIMD_NOTICE_HPP
