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

// Every feature above in increasing order, with the name TensorFlow's notice
// uses and the GCC/Clang flag that enables it alone.
struct CpuFeatureInfo {
  CpuFeature feature;
  const char* name;
  const char* flag;
};
inline constexpr CpuFeatureInfo cpu_feature_table[] = {
    {CpuFeature::sse4_1, "SSE4.1", "-msse4.1"}, {CpuFeature::sse4_2, "SSE4.2", "-msse4.2"},
    {CpuFeature::avx, "AVX", "-mavx"},          {CpuFeature::avx2, "AVX2", "-mavx2"},
    {CpuFeature::fma, "FMA", "-mfma"},          {CpuFeature::avx512f, "AVX512F", "-mavx512f"},
    {CpuFeature::avx512bw, "AVX512BW", "-mavx512bw"}, {CpuFeature::avx512vl, "AVX512VL", "-mavx512vl"},
    {CpuFeature::avx512dq, "AVX512DQ", "-mavx512dq"},
};

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
  CpuFeature f = CpuFeature::none;
#if defined(__SSE4_1__)
  f = f | CpuFeature::sse4_1;
#endif
#if defined(__SSE4_2__)
  f = f | CpuFeature::sse4_2;
#endif
#if defined(__AVX__)
  f = f | CpuFeature::avx;
#endif
#if defined(__AVX2__)
  f = f | CpuFeature::avx2;
#endif
#if defined(__FMA__)
  f = f | CpuFeature::fma;
#endif
#if defined(__AVX512F__)
  f = f | CpuFeature::avx512f;
#endif
#if defined(__AVX512BW__)
  f = f | CpuFeature::avx512bw;
#endif
#if defined(__AVX512VL__)
  f = f | CpuFeature::avx512vl;
#endif
#if defined(__AVX512DQ__)
  f = f | CpuFeature::avx512dq;
#endif
  return f;
}

// What the CPU this process runs on supports (and the OS enables).
inline CpuFeature cpu_features() noexcept {
  CpuFeature f = CpuFeature::none;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  // Idempotent; needed only if this runs before libgcc's own constructor
  // (e.g. from another static initialiser), harmless otherwise.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.1")) f = f | CpuFeature::sse4_1;
  if (__builtin_cpu_supports("sse4.2")) f = f | CpuFeature::sse4_2;
  if (__builtin_cpu_supports("avx")) f = f | CpuFeature::avx;
  if (__builtin_cpu_supports("avx2")) f = f | CpuFeature::avx2;
  if (__builtin_cpu_supports("fma")) f = f | CpuFeature::fma;
  if (__builtin_cpu_supports("avx512f")) f = f | CpuFeature::avx512f;
  if (__builtin_cpu_supports("avx512bw")) f = f | CpuFeature::avx512bw;
  if (__builtin_cpu_supports("avx512vl")) f = f | CpuFeature::avx512vl;
  if (__builtin_cpu_supports("avx512dq")) f = f | CpuFeature::avx512dq;
#endif
  return f;
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_CPU_FEATURES_HPP
