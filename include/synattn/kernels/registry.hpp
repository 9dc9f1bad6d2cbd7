// synattn — the kernel registry: which instruction set each family of
// hand-written kernels runs (the attention row kernels, the blocked GEMM
// behind kernels::product, and the few-rows projection kernel
// linear_small), chosen once for the whole process.
//
// Every x86-64 GCC / Clang build compiles the AVX2 + FMA and the AVX-512
// versions of every family through target pragmas, whatever its -march, so
// a build with the compiler's default flags runs vector kernels on a CPU
// that has them. AArch64 builds have NEON row kernels (Advanced SIMD is part
// of every AArch64 CPU). Other compilers and CPUs, and builds defining
// SYNATTN_PORTABLE_KERNELS, have the portable versions only.
//
// The choice is one KernelIsa, which names one KernelSet (kernel_set_for):
// made at first use from CPUID (util/cpu_features.hpp, which also checks
// that the OS saves the vector state) or from the one override, the
// environment variable SYNATTN_KERNEL_ISA=portable|avx2|avx512|neon, and
// changed by set_isa() (an atomic: a kernel call that started finishes with
// the set it read). By default the widest set the build carries and the CPU
// runs. AVX-512 joined the default once its tests had passed on AVX-512
// CPUs (AMD Zen 4 and Zen 5) and the set measured faster than avx2 on every
// attention shape on Zen 5 (docs/benchmarks.md, "On AVX-512"). On Zen 4,
// which splits each 512-bit operation in two, it was measured only before
// the GEMM's swap rule was fixed: faster on single sentences, even on
// batches, slower on the one long sequence the swap slowed. No Intel
// AVX-512 CPU has measured it; SYNATTN_KERNEL_ISA=avx2 keeps the narrower
// set.
//
// Results: for a given ISA, bit-identical for every thread count; between
// ISAs they differ by rounding, within the documented tolerance (docs/math.md
// §4.4: 1e-4 of the array's largest value in float, 1e-10 in double), and
// follow one NaN policy (kernels/attention_rows_portable.hpp).
#ifndef SYNATTN_KERNELS_REGISTRY_HPP
#define SYNATTN_KERNELS_REGISTRY_HPP

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../error.hpp"
#include "isa.hpp"
#include "kernel_table.hpp"
#include "packet_avx2.hpp"
#include "packet_avx512.hpp"
#include "packet_neon.hpp"
#include "packet_portable.hpp"

namespace synattn {
namespace kernels {

// The instruction set each kernel family runs. `portable` in `gemm` means
// kernels::product uses Eigen's product only (the portable GEMM is the
// scalar reference the vector versions are tested against, reached through
// kernels::gemm alone); in `linear_small` it means there is no few-rows
// kernel and projections go through kernels::product.
struct KernelSet {
  KernelIsa rows;
  KernelIsa gemm;
  KernelIsa linear_small;
};

constexpr bool operator==(const KernelSet& a, const KernelSet& b) noexcept {
  return a.rows == b.rows && a.gemm == b.gemm && a.linear_small == b.linear_small;
}
constexpr bool operator!=(const KernelSet& a, const KernelSet& b) noexcept { return !(a == b); }

// The set `isa` names: every family in that ISA where it has a version, the
// portable one (or none, for linear_small) where it has not (what each
// packet_<isa>.hpp's kernel_table holds). NEON has row kernels only; the
// few-rows kernel runs with the avx512 set only.
constexpr KernelSet kernel_set_for(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::avx2:
      return {KernelIsa::avx2, KernelIsa::avx2, KernelIsa::portable};
    case KernelIsa::avx512:
      return {KernelIsa::avx512, KernelIsa::avx512, KernelIsa::avx512};
    case KernelIsa::neon:
      return {KernelIsa::neon, KernelIsa::portable, KernelIsa::portable};
    default:
      return {KernelIsa::portable, KernelIsa::portable, KernelIsa::portable};
  }
}

namespace detail {

// Whether this build carries `isa`'s kernels (each kernels/packet_<isa>.hpp
// defines SYNATTN_HAVE_<ISA>_KERNELS: x86-64 GCC / Clang, or AArch64, and
// not SYNATTN_PORTABLE_KERNELS). Portable always.
inline bool compiled(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::portable:
      return true;
#if defined(SYNATTN_HAVE_AVX2_KERNELS)
    case KernelIsa::avx2:
      return true;
#endif
#if defined(SYNATTN_HAVE_AVX512_KERNELS)
    case KernelIsa::avx512:
      return true;
#endif
#if defined(SYNATTN_HAVE_NEON_KERNELS)
    case KernelIsa::neon:
      return true;
#endif
    default:
      return false;
  }
}

// `isa`'s kernel table (kernel_set_for(isa)'s functions), which must be
// compiled (else the portable one): the one dispatch of every family.
// Not `inline`, so that compiled mode's extern declaration below keeps every
// ISA's kernels (the tables take their addresses: all rows, GEMM and
// few-rows kernels of the Scalar) out of the program's own files.
template <class Scalar>
const KernelTable<Scalar>& table_of(KernelIsa isa) noexcept {
#if defined(SYNATTN_HAVE_AVX2_KERNELS)
  if (isa == KernelIsa::avx2) return avx2::kernel_table<Scalar>;
#endif
#if defined(SYNATTN_HAVE_AVX512_KERNELS)
  if (isa == KernelIsa::avx512) return avx512::kernel_table<Scalar>;
#endif
#if defined(SYNATTN_HAVE_NEON_KERNELS)
  if (isa == KernelIsa::neon) return neon::kernel_table<Scalar>;
#endif
  (void)isa;
  return portable::kernel_table<Scalar>;
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

// The ISA without an override: the widest this build carries and this CPU
// runs.
inline KernelIsa default_isa() noexcept {
  KernelIsa best = KernelIsa::portable;
  for (KernelIsa isa : kAllIsas)
    if (compiled(isa) && cpu_runs(isa)) best = isa;
  return best;
}

// The ISA at first use: SYNATTN_KERNEL_ISA if set (and not empty), else
// default_isa(). A bad value throws, at this and every later use.
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
  return default_isa();
}

// The chosen ISA as an int; -1 until first use.
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

// The ISA whose kernel set runs now. The first call reads SYNATTN_KERNEL_ISA
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

// The kernel set every family runs now: kernel_set_for(active_isa()).
inline KernelSet kernel_set() { return kernel_set_for(active_isa()); }

// `isa`'s kernels of every family, for tests and tools that compare ISAs
// side by side; throws synattn::Error naming it if this build or CPU cannot
// run it.
template <class Scalar>
inline const KernelTable<Scalar>& kernels_for(KernelIsa isa) {
  const std::string why = detail::cannot_run(isa);
  if (!why.empty()) throw Error(std::string("kernels::kernels_for(") + to_string(isa) + "): " + why);
  return detail::table_of<Scalar>(isa);
}

// The kernels every family runs now: active_isa()'s table.
template <class Scalar>
inline const KernelTable<Scalar>& active_kernels() {
  return detail::table_of<Scalar>(active_isa());
}

// Makes every later kernel call, of every family, run `isa`'s set
// (thread-safe). Throws synattn::Error naming the ISA if this build or CPU
// cannot run it.
inline void set_isa(KernelIsa isa) {
  const std::string why = detail::cannot_run(isa);
  if (!why.empty()) throw Error(std::string("kernels::set_isa(") + to_string(isa) + "): " + why);
  detail::isa_state().store(static_cast<int>(isa), std::memory_order_relaxed);
}

#if defined(SYNATTN_COMPILED)
// Compiled mode (attention/compiled.hpp): the float and double tables, and
// with them every kernel, are compiled once in src/compiled.cpp.
namespace detail {
extern template const KernelTable<float>& table_of<float>(KernelIsa) noexcept;
extern template const KernelTable<double>& table_of<double>(KernelIsa) noexcept;
}  // namespace detail
#endif

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_REGISTRY_HPP
