// synattn — a one-time notice on stderr when the CPU has vector instructions
// this build does not use (TensorFlow's convention), e.g.
//
//   synattn: This synattn build is not compiled to use: AVX2 FMA. To enable
//   them, rebuild with -march=native (or -mavx2 -mfma) or link synattn::native
//   (see README, "Compiling for this machine"). Silence this notice with
//   SYNATTN_SIMD_NOTICE=0 or synattn::set_simd_notice(false).
//
// Why: synattn is header-only, so Eigen's products run whatever the user's
// compiler flags allow; a project built with the defaults (x86-64: SSE2)
// runs them 3-4x slower on an AVX2 machine, silently. The notice names the
// fix once per process, at the first construction of an attention layer
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

#include "cpu_features.hpp"

namespace synattn {

// The notice for a CPU with features `cpu` running code built for `build`;
// empty when the build already uses everything the CPU has. A pure function
// of its arguments (the tests pass feature sets of their choosing).
inline std::string simd_notice_text(CpuFeature cpu, CpuFeature build) {
  const CpuFeature missing = without(cpu, build);
  if (missing == CpuFeature::none) return {};
  std::string flags;
  for (const auto& f : cpu_feature_table)
    if (has(missing, f.feature)) flags += (flags.empty() ? "" : " ") + std::string(f.flag);
  return "synattn: This synattn build is not compiled to use: " + feature_names(missing) +
         ". To enable them, rebuild with -march=native (or " + flags +
         ") or link synattn::native (see README, \"Compiling for this machine\"). "
         "Silence this notice with SYNATTN_SIMD_NOTICE=0 or synattn::set_simd_notice(false).\n";
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
// translation unit's flags and this CPU, once per process. Cheap after the
// first call (one atomic load). Returns whether this call printed it.
inline bool simd_notice() {
  detail::SimdNoticeState& state = detail::simd_notice_state();
  if (state.decided()) return false;
  return state.decide(stderr, simd_notice_text(cpu_features(), build_cpu_features()),
                      std::getenv("SYNATTN_SIMD_NOTICE"));
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_SIMD_NOTICE_HPP
