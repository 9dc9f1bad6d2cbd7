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
  // The first `count` (1..16) lanes: the rest loaded as 0, or left alone.
  static V load_first(const float* p, int count) noexcept { return _mm512_maskz_loadu_ps(first_lanes(count), p); }
  static void store_first(float* p, V v, int count) noexcept { _mm512_mask_storeu_ps(p, first_lanes(count), v); }
  // r[i] = row i of a 16 x 16 block; afterwards r[j] = its column j. Pairs
  // interleaved, then quadruples (rows 4q..4q+3 of column 4l + c in 128-bit
  // lane l of s[4q + c]), then the lanes gathered: 64 shuffles for 256 floats.
  static void transpose(V (&r)[16]) noexcept {
    V t[16], s[16];
    for (int k = 0; k < 8; ++k) {
      t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int q = 0; q < 4; ++q) {
      s[4 * q] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
      s[4 * q + 1] = _mm512_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
      s[4 * q + 2] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
      s[4 * q + 3] = _mm512_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
    }
    for (int c = 0; c < 4; ++c) {
      const V u = _mm512_shuffle_f32x4(s[c], s[4 + c], 0x88), w = _mm512_shuffle_f32x4(s[c], s[4 + c], 0xDD);
      const V u2 = _mm512_shuffle_f32x4(s[8 + c], s[12 + c], 0x88),
              w2 = _mm512_shuffle_f32x4(s[8 + c], s[12 + c], 0xDD);
      r[c] = _mm512_shuffle_f32x4(u, u2, 0x88);
      r[8 + c] = _mm512_shuffle_f32x4(u, u2, 0xDD);
      r[4 + c] = _mm512_shuffle_f32x4(w, w2, 0x88);
      r[12 + c] = _mm512_shuffle_f32x4(w, w2, 0xDD);
    }
  }
  static __mmask16 first_lanes(int count) noexcept { return static_cast<__mmask16>((1u << count) - 1u); }
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
  static V load_first(const double* p, int count) noexcept { return _mm512_maskz_loadu_pd(first_lanes(count), p); }
  static void store_first(double* p, V v, int count) noexcept { _mm512_mask_storeu_pd(p, first_lanes(count), v); }
  // 8 x 8: pairs interleaved, then the 128-bit lanes gathered twice.
  static void transpose(V (&r)[8]) noexcept {
    V t[8], u[8];
    for (int k = 0; k < 4; ++k) {
      t[2 * k] = _mm512_unpacklo_pd(r[2 * k], r[2 * k + 1]);
      t[2 * k + 1] = _mm512_unpackhi_pd(r[2 * k], r[2 * k + 1]);
    }
    for (int q = 0; q < 2; ++q) {
      u[4 * q] = _mm512_shuffle_f64x2(t[4 * q], t[4 * q + 2], 0x88);
      u[4 * q + 1] = _mm512_shuffle_f64x2(t[4 * q + 1], t[4 * q + 3], 0x88);
      u[4 * q + 2] = _mm512_shuffle_f64x2(t[4 * q], t[4 * q + 2], 0xDD);
      u[4 * q + 3] = _mm512_shuffle_f64x2(t[4 * q + 1], t[4 * q + 3], 0xDD);
    }
    for (int c = 0; c < 4; ++c) {
      r[c] = _mm512_shuffle_f64x2(u[c], u[4 + c], 0x88);
      r[4 + c] = _mm512_shuffle_f64x2(u[c], u[4 + c], 0xDD);
    }
  }
  static __mmask8 first_lanes(int count) noexcept { return static_cast<__mmask8>((1u << count) - 1u); }
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
