// synattn — the instruction sets synattn's hand-written kernels are written
// for (the attention row kernels, the GEMM, linear_small), and whether this
// CPU runs each: one name per ISA and one CPU query (util/cpu_features.hpp)
// for every kernel family, so the families cannot disagree about what
// "avx512" means or whether the CPU has it. Whether a build *carries* an
// ISA's code is told by the per-ISA headers (SYNATTN_HAVE_*), which ISA runs
// by kernels/registry.hpp.
#ifndef SYNATTN_KERNELS_ISA_HPP
#define SYNATTN_KERNELS_ISA_HPP

#include "../util/cpu_features.hpp"

namespace synattn {

// The instruction sets the kernels are written for.
enum class KernelIsa { portable, avx2, avx512, neon };

// "portable", "avx2", "avx512", "neon" (what SYNATTN_KERNEL_ISA accepts).
inline const char* to_string(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::portable: return "portable";
    case KernelIsa::avx2: return "avx2";
    case KernelIsa::avx512: return "avx512";
    case KernelIsa::neon: return "neon";
  }
  return "unknown";
}

namespace kernels {

using synattn::KernelIsa;

// Every ISA, narrowest first within each architecture.
constexpr KernelIsa kAllIsas[] = {KernelIsa::portable, KernelIsa::avx2, KernelIsa::avx512, KernelIsa::neon};

// The x86 features a version needs: AVX2 + FMA, or AVX-512 F/BW/VL/DQ (every
// AVX-512 CPU since Skylake-SP; the kernels use byte and 256-bit forms) on
// top of them. None for portable and NEON.
constexpr CpuFeature required_features(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::avx2: return CpuFeature::avx2 | CpuFeature::fma;
    case KernelIsa::avx512:
      return CpuFeature::avx2 | CpuFeature::fma | CpuFeature::avx512f | CpuFeature::avx512bw |
             CpuFeature::avx512vl | CpuFeature::avx512dq;
    default: return CpuFeature::none;
  }
}

// What required_features(isa) reads as in a message.
inline const char* required_features_text(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::avx2: return "AVX2 and FMA";
    case KernelIsa::avx512: return "AVX-512 F/BW/VL/DQ";
    case KernelIsa::neon: return "AArch64 Advanced SIMD";
    default: return "nothing";
  }
}

// Whether this CPU (and its OS) runs `isa`'s instructions, whether or not
// this build carries code for it.
inline bool cpu_runs(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::portable: return true;
    case KernelIsa::neon:
#if defined(__aarch64__)
      return true;  // Advanced SIMD is part of every AArch64 CPU
#else
      return false;
#endif
    default: {
      const CpuFeature need = required_features(isa);
      return (cpu_features() & need) == need;
    }
  }
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_ISA_HPP
