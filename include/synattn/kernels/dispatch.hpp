// synattn — which instruction set the attention row kernels run, chosen at
// run time.
//
// Every x86-64 GCC / Clang build compiles the AVX2 + FMA and the AVX-512
// kernels through target pragmas (kernels/attention_rows_avx2.hpp,
// kernels/attention_rows_avx512.hpp), whatever its -march, so a default-flags
// build runs the vector kernels on a CPU that has them. The choice is made
// once, at first use, from CPUID (__builtin_cpu_supports, which also checks
// that the OS saves the vector state) and the environment variable
// SYNATTN_KERNEL_ISA=portable|avx2|avx512|neon; set_isa() changes it at any time
// (an atomic: threads running a kernel finish it with the ISA they started).
// AArch64 builds have the NEON kernels (kernels/attention_rows_neon.hpp,
// Advanced SIMD being part of every AArch64 CPU). Other compilers and CPUs,
// and builds with SYNATTN_PORTABLE_KERNELS, have the portable kernels only.
//
// Results: for a given ISA, bit-identical for every thread count; between
// ISAs they differ by rounding, within the documented tolerance (docs/math.md
// §4.4: 1e-4 of the array's largest value in float, 1e-10 in double), and
// follow one NaN policy (kernels/attention_rows_portable.hpp).
#ifndef SYNATTN_KERNELS_DISPATCH_HPP
#define SYNATTN_KERNELS_DISPATCH_HPP

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../error.hpp"
#include "attention_rows_avx2.hpp"
#include "attention_rows_avx512.hpp"
#include "attention_rows_neon.hpp"
#include "isa.hpp"

namespace synattn {
namespace kernels {

namespace detail {

// Whether this build has kernels for `isa`.
inline bool compiled(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::portable: return true;
#if defined(SYNATTN_HAVE_AVX2_KERNELS)
    case KernelIsa::avx2: return true;
#endif
#if defined(SYNATTN_HAVE_AVX512_KERNELS)
    case KernelIsa::avx512: return true;
#endif
#if defined(SYNATTN_HAVE_NEON_KERNELS)
    case KernelIsa::neon: return true;
#endif
    default: return false;
  }
}

inline std::string supported_list();

// Why `isa` cannot run, or "" if it can.
inline std::string cannot_run(KernelIsa isa) {
  if (!compiled(isa)) {
    for (KernelIsa known : kAllIsas)
      if (isa == known)
        return std::string("this build has no ") + to_string(isa) +
               (isa == KernelIsa::neon ? " kernels (SYNATTN_PORTABLE_KERNELS, or not AArch64)"
                                       : " kernels (SYNATTN_PORTABLE_KERNELS, or not x86-64 GCC/Clang)") +
               "; it runs: " + supported_list();
    return "KernelIsa value " + std::to_string(static_cast<int>(isa)) + " names no instruction set";
  }
  if (!cpu_runs(isa))
    return std::string("this CPU (or its OS) does not support ") + required_features_text(isa) +
           "; it runs: " + supported_list();
  return "";
}

inline std::string supported_list() {
  std::string out;
  for (KernelIsa isa : kAllIsas)
    if (compiled(isa) && cpu_runs(isa)) out += std::string(out.empty() ? "" : ", ") + to_string(isa);
  return out;
}

// The ISA at first use: SYNATTN_KERNEL_ISA if set (and not empty), else the
// widest this CPU runs. A bad value throws, at this and every later use.
inline KernelIsa initial_isa() {
  const char* env = std::getenv("SYNATTN_KERNEL_ISA");
  if (env != nullptr && *env != '\0') {
    for (KernelIsa isa : kAllIsas)
      if (std::strcmp(env, to_string(isa)) == 0) {
        const std::string why = cannot_run(isa);
        if (!why.empty()) throw Error(std::string("SYNATTN_KERNEL_ISA=") + env + ": " + why);
        return isa;
      }
    throw Error(std::string("SYNATTN_KERNEL_ISA is '") + env + "'; expected portable, avx2, avx512 or neon");
  }
  KernelIsa best = KernelIsa::portable;
  for (KernelIsa isa : kAllIsas)
    if (compiled(isa) && cpu_runs(isa)) best = isa;
  return best;
}

// The active ISA as an int; -1 until first use.
inline std::atomic<int>& isa_state() noexcept {
  static std::atomic<int> state{-1};
  return state;
}

}  // namespace detail

// The ISAs this build and CPU can run, narrowest first: portable always, then
// avx2 and avx512 (x86-64) or neon (AArch64) where compiled and supported.
inline std::vector<KernelIsa> supported_isas() {
  std::vector<KernelIsa> out;
  for (KernelIsa isa : kAllIsas)
    if (detail::compiled(isa) && cpu_runs(isa)) out.push_back(isa);
  return out;
}

// Whether set_isa(isa) would succeed.
inline bool isa_supported(KernelIsa isa) noexcept { return detail::compiled(isa) && cpu_runs(isa); }

// The ISA the row kernels run now. The first call reads SYNATTN_KERNEL_ISA
// (throws synattn::Error on a value this build or CPU cannot run), unless
// set_isa came first.
inline KernelIsa active_isa() {
  int state = detail::isa_state().load(std::memory_order_relaxed);
  if (state < 0) {
    const int initial = static_cast<int>(detail::initial_isa());
    // Only the first thread's store wins, and a set_isa() in between wins over both.
    if (detail::isa_state().compare_exchange_strong(state, initial, std::memory_order_relaxed)) state = initial;
  }
  return static_cast<KernelIsa>(state);
}

// Makes every later kernel call run `isa`'s kernels (thread-safe). Throws
// synattn::Error naming the ISA if this build or CPU cannot run it.
inline void set_isa(KernelIsa isa) {
  const std::string why = detail::cannot_run(isa);
  if (!why.empty()) throw Error(std::string("kernels::set_isa(") + to_string(isa) + "): " + why);
  detail::isa_state().store(static_cast<int>(isa), std::memory_order_relaxed);
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_DISPATCH_HPP
