// synattn — the blocked GEMM compiled for AVX-512F by a per-function target
// attribute (see gemm_avx2.hpp); kernels/gemm.hpp runs it with the kernel
// registry's avx512 set (the default on a CPU that runs it). x86-64 with GCC
// or Clang only.
//
// Register tile: 14 rows x 2 vectors (float 14 x 32, double 14 x 16) = 28
// accumulators + 2 B vectors + 1 broadcast of the 32 zmm registers. Only the
// primitives differ from the AVX2 version; the algorithm is the same file.
#ifndef SYNATTN_KERNELS_GEMM_AVX512_HPP
#define SYNATTN_KERNELS_GEMM_AVX512_HPP

#include "gemm_support.hpp"

#if !defined(SYNATTN_PORTABLE_KERNELS) && (defined(__x86_64__) || defined(_M_X64)) && \
    (defined(__GNUC__) || defined(__clang__))
#define SYNATTN_HAVE_AVX512_GEMM 1

#include <immintrin.h>

namespace synattn {
namespace kernels {
namespace gemm_avx512 {

using namespace gemm_detail;

template <class Scalar>
struct Packet;

// Every function from here to target_end.inc is compiled for
// avx512f,avx2,fma whatever the build's -march (templates included); these
// functions are only called (and inlined) within the region.
#include "target_avx512f_begin.inc"

template <>
struct Packet<float> {
  using V = __m512;
  static constexpr int lanes = 16;
  static constexpr int MR = 14, NR = 32;
  static constexpr Index KC = 256, MC = 140, NC = 2048;
  static V zero() noexcept { return _mm512_setzero_ps(); }
  static V set1(float x) noexcept { return _mm512_set1_ps(x); }
  static V load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) noexcept { _mm512_storeu_ps(p, v); }
  static V mul(V a, V b) noexcept { return _mm512_mul_ps(a, b); }
  static V fmadd(V a, V b, V c) noexcept { return _mm512_fmadd_ps(a, b, c); }
};

template <>
struct Packet<double> {
  using V = __m512d;
  static constexpr int lanes = 8;
  static constexpr int MR = 14, NR = 16;
  static constexpr Index KC = 256, MC = 70, NC = 1024;
  static V zero() noexcept { return _mm512_setzero_pd(); }
  static V set1(double x) noexcept { return _mm512_set1_pd(x); }
  static V load(const double* p) noexcept { return _mm512_loadu_pd(p); }
  static void store(double* p, V v) noexcept { _mm512_storeu_pd(p, v); }
  static V mul(V a, V b) noexcept { return _mm512_mul_pd(a, b); }
  static V fmadd(V a, V b, V c) noexcept { return _mm512_fmadd_pd(a, b, c); }
};

#define SYNATTN_KERNELS_GEMM_BLOCKED_INC_ALLOWED
#include "gemm_blocked.inc"
#undef SYNATTN_KERNELS_GEMM_BLOCKED_INC_ALLOWED

#include "target_end.inc"

}  // namespace gemm_avx512
}  // namespace kernels
}  // namespace synattn

#endif  // x86-64 GCC / Clang
#endif  // SYNATTN_KERNELS_GEMM_AVX512_HPP
