// synattn — the blocked GEMM compiled for AVX2 + FMA by a per-function target
// attribute, so a build for baseline x86-64 (the compiler's default flags)
// carries it too; kernels/gemm.hpp runs it when the kernel registry's set
// says avx2 (the default on a CPU with AVX2 + FMA but no AVX-512, or chosen by
// SYNATTN_KERNEL_ISA=avx2). x86-64 with GCC or Clang only.
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
  // The first `count` (1..8) lanes: the rest loaded as 0, or left alone.
  static V load_first(const float* p, int count) noexcept {
    return count == lanes ? load(p) : _mm256_maskload_ps(p, first_lanes(count));
  }
  static void store_first(float* p, V v, int count) noexcept {
    if (count == lanes)
      store(p, v);
    else
      _mm256_maskstore_ps(p, first_lanes(count), v);
  }
  // r[i] = row i of an 8 x 8 block; afterwards r[j] = its column j: pairs
  // interleaved, quadruples shuffled (column 4l + c of rows 4q.. in 128-bit
  // lane l of s[4q + c]), then the halves swapped into place.
  static void transpose(V (&r)[8]) noexcept {
    V t[8], s[8];
    for (int k = 0; k < 4; ++k) {
      t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int q = 0; q < 2; ++q) {
      s[4 * q] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
      s[4 * q + 1] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
      s[4 * q + 2] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
      s[4 * q + 3] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      r[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
      r[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
    }
  }
  static __m256i first_lanes(int count) noexcept {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
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
  static V load_first(const double* p, int count) noexcept {
    return count == lanes ? load(p) : _mm256_maskload_pd(p, first_lanes(count));
  }
  static void store_first(double* p, V v, int count) noexcept {
    if (count == lanes)
      store(p, v);
    else
      _mm256_maskstore_pd(p, first_lanes(count), v);
  }
  // 4 x 4: pairs interleaved, then the halves swapped into place.
  static void transpose(V (&r)[4]) noexcept {
    const V t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const V t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
  }
  static __m256i first_lanes(int count) noexcept {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3));
  }
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
