// synattn — which x86 vector instruction sets the CPU has (run time) and
// which ones this translation unit was compiled to use (compile time).
//
// Only the sets that change the code Eigen and synattn generate are listed.
// The run-time side asks CPUID through __builtin_cpu_supports (x86 with GCC or
// Clang; it also checks that the OS saves the wide registers). Elsewhere (ARM,
// MSVC) both sides are empty: nothing is reported, nothing is assumed.
#ifndef SYNATTN_UTIL_CPU_FEATURES_HPP
#define SYNATTN_UTIL_CPU_FEATURES_HPP

#include <string>

namespace synattn {

// A set of instruction-set extensions, one bit each; combine with | and &.
enum class CpuFeature : unsigned {
  none = 0,
  sse4_1 = 1u << 0,
  sse4_2 = 1u << 1,
  avx = 1u << 2,
  avx2 = 1u << 3,
  fma = 1u << 4,
  avx512f = 1u << 5,
  avx512bw = 1u << 6,
  avx512vl = 1u << 7,
  avx512dq = 1u << 8,
};

constexpr CpuFeature operator|(CpuFeature a, CpuFeature b) noexcept {
  return static_cast<CpuFeature>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr CpuFeature operator&(CpuFeature a, CpuFeature b) noexcept {
  return static_cast<CpuFeature>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
// Members of a that are not in b.
constexpr CpuFeature without(CpuFeature a, CpuFeature b) noexcept {
  return static_cast<CpuFeature>(static_cast<unsigned>(a) & ~static_cast<unsigned>(b));
}
constexpr bool has(CpuFeature set, CpuFeature f) noexcept { return (set & f) == f && f != CpuFeature::none; }

// Every feature above in increasing order, one row each: its enumerator, the
// name TensorFlow's notice uses, the GCC/Clang flag that enables it alone,
// the name __builtin_cpu_supports asks CPUID by, and the macro the compiler
// defines when this translation unit may use it. The table below, the
// compile-time set and the run-time set are all read from these rows, so a
// feature is added in one place.
#define SYNATTN_DETAIL_CPU_FEATURE_ROWS(X)                                                          \
  X(sse4_1, "SSE4.1", "-msse4.1", "sse4.1", __SSE4_1__) X(sse4_2, "SSE4.2", "-msse4.2", "sse4.2", __SSE4_2__) \
  X(avx, "AVX", "-mavx", "avx", __AVX__) X(avx2, "AVX2", "-mavx2", "avx2", __AVX2__)                   \
  X(fma, "FMA", "-mfma", "fma", __FMA__) X(avx512f, "AVX512F", "-mavx512f", "avx512f", __AVX512F__)      \
  X(avx512bw, "AVX512BW", "-mavx512bw", "avx512bw", __AVX512BW__)                                      \
  X(avx512vl, "AVX512VL", "-mavx512vl", "avx512vl", __AVX512VL__)                                      \
  X(avx512dq, "AVX512DQ", "-mavx512dq", "avx512dq", __AVX512DQ__)

// 1 when `macro` is defined as 1 (GCC, Clang and MSVC define every feature
// macro above so), 0 when it is not defined: #if cannot stand inside a
// macro, and this lets one row carry a feature's macro.
#define SYNATTN_DETAIL_PLACEHOLDER_1 0,
#define SYNATTN_DETAIL_SECOND(ignored, value, ...) value
#define SYNATTN_DETAIL_IS_ONE3(junk_or_placeholder) SYNATTN_DETAIL_SECOND(junk_or_placeholder 1, 0, )
#define SYNATTN_DETAIL_IS_ONE2(value) SYNATTN_DETAIL_IS_ONE3(SYNATTN_DETAIL_PLACEHOLDER_##value)
#define SYNATTN_DETAIL_IS_ONE(macro) SYNATTN_DETAIL_IS_ONE2(macro)

struct CpuFeatureInfo {
  CpuFeature feature;
  const char* name;
  const char* flag;
};
#define SYNATTN_DETAIL_CPU_FEATURE_INFO(feature, name, flag, cpuid, macro) {CpuFeature::feature, name, flag},
inline constexpr CpuFeatureInfo cpu_feature_table[] = {SYNATTN_DETAIL_CPU_FEATURE_ROWS(SYNATTN_DETAIL_CPU_FEATURE_INFO)};
#undef SYNATTN_DETAIL_CPU_FEATURE_INFO

// "AVX2 FMA": the names of the features in `set`, in the table's order.
inline std::string feature_names(CpuFeature set) {
  std::string out;
  for (const auto& f : cpu_feature_table)
    if (has(set, f.feature)) out += (out.empty() ? "" : " ") + std::string(f.name);
  return out;
}

// What this translation unit's compiler flags (-march, -mavx2, ...) let the
// compiler use: the code Eigen's products and the kernels were built into.
constexpr CpuFeature build_cpu_features() noexcept {
#define SYNATTN_DETAIL_CPU_FEATURE_BUILT(feature, name, flag, cpuid, macro) \
  | (SYNATTN_DETAIL_IS_ONE(macro) ? CpuFeature::feature : CpuFeature::none)
  return CpuFeature::none SYNATTN_DETAIL_CPU_FEATURE_ROWS(SYNATTN_DETAIL_CPU_FEATURE_BUILT);
#undef SYNATTN_DETAIL_CPU_FEATURE_BUILT
}

// What the CPU this process runs on supports (and the OS enables).
inline CpuFeature cpu_features() noexcept {
  CpuFeature f = CpuFeature::none;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  // Idempotent; needed only if this runs before libgcc's own constructor
  // (e.g. from another static initialiser), harmless otherwise.
  __builtin_cpu_init();
#define SYNATTN_DETAIL_CPU_FEATURE_SUPPORTED(feature, name, flag, cpuid, macro) \
  if (__builtin_cpu_supports(cpuid)) f = f | CpuFeature::feature;
  SYNATTN_DETAIL_CPU_FEATURE_ROWS(SYNATTN_DETAIL_CPU_FEATURE_SUPPORTED)
#undef SYNATTN_DETAIL_CPU_FEATURE_SUPPORTED
#endif
  return f;
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_CPU_FEATURES_HPP
