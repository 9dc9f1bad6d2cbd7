// synattn — the blocked GEMM compiled for AVX2 + FMA by a per-function target
// attribute, so a build for baseline x86-64 (the compiler's default flags)
// carries it too; kernels/gemm.hpp runs it when the kernel registry's set
// says avx2 (the default on a CPU with both). x86-64 with GCC or Clang only.
//
// Register tile: 6 rows x 2 vectors (float 6 x 16, double 6 x 8) = 12
// accumulators + 2 B vectors + 1 broadcast of the 16 ymm registers. Cache
// blocks: the A block (MC, KC) ~147 KB sits in a 512 KB L2, one B micro-panel
// (KC, NR) 16 KB in the 32 KB L1d, the B block (KC, NC) 2 MB in L3.
#ifndef SYNATTN_KERNELS_GEMM_AVX2_HPP
#define SYNATTN_KERNELS_GEMM_AVX2_HPP

#include "gemm_support.hpp"

#if !defined(SYNATTN_PORTABLE_KERNELS) && (defined(__x86_64__) || defined(_M_X64)) && \
    (defined(__GNUC__) || defined(__clang__))
#define SYNATTN_HAVE_AVX2_GEMM 1

#include <immintrin.h>

namespace synattn {
namespace kernels {
namespace gemm_avx2 {

using namespace gemm_detail;

template <class Scalar>
struct Packet;

// Every function from here to the matching pop is compiled for avx2,fma
// whatever the build's -march (templates included). Clang ignores GCC's
// target pragma and has its own. -Wpsabi: GCC notes that passing vectors by
// value between functions of different targets changes the ABI; these
// functions are only called (and inlined) within the region.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

template <>
struct Packet<float> {
  using V = __m256;
  static constexpr int lanes = 8;
  static constexpr int MR = 6, NR = 16;
  static constexpr Index KC = 256, MC = 144, NC = 2048;
  static V zero() noexcept { return _mm256_setzero_ps(); }
  static V set1(float x) noexcept { return _mm256_set1_ps(x); }
  static V load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) noexcept { _mm256_storeu_ps(p, v); }
  static V mul(V a, V b) noexcept { return _mm256_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) noexcept { return _mm256_fmadd_ps(a, b, c); }
};

template <>
struct Packet<double> {
  using V = __m256d;
  static constexpr int lanes = 4;
  static constexpr int MR = 6, NR = 8;
  static constexpr Index KC = 256, MC = 72, NC = 1024;
  static V zero() noexcept { return _mm256_setzero_pd(); }
  static V set1(double x) noexcept { return _mm256_set1_pd(x); }
  static V load(const double* p) noexcept { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) noexcept { _mm256_storeu_pd(p, v); }
  static V mul(V a, V b) noexcept { return _mm256_mul_pd(a, b); }
  static V fmadd(V a, V b, V c) noexcept { return _mm256_fmadd_pd(a, b, c); }
};

#define SYNATTN_KERNELS_GEMM_BLOCKED_INC_ALLOWED
#include "gemm_blocked.inc"
#undef SYNATTN_KERNELS_GEMM_BLOCKED_INC_ALLOWED

#include "target_end.inc"

}  // namespace gemm_avx2
}  // namespace kernels
}  // namespace synattn

#endif  // x86-64 GCC / Clang
#endif  // SYNATTN_KERNELS_GEMM_AVX2_HPP
