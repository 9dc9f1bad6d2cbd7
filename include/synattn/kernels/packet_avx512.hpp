// synattn — the AVX-512 (F, BW, VL, DQ) packet, float (16 lanes) and double
// (8 lanes), and the kernels of every family written over it (the row
// kernels, the blocked GEMM, the few-rows projection: see packet_avx2.hpp),
// in one target region whatever the compiler flags. kernels/registry.hpp
// runs this set by default on a CPU (and OS) with AVX-512.
//
// Why these primitives are fast:
// - Mask registers: row tails are masked loads and stores, masked max and
//   masked add, with no blends.
// - The table lookup is one register permute: vpermps looks up 16 keys at
//   once in a <= 16-entry (float) / <= 8-entry (double) table, vpermt2ps in
//   twice that, a hardware gather beyond.
// - The histogram compares raw bucket bytes into a mask and adds under it: 2
//   instructions per bucket and packet, so 16 buckets (every default linear
//   table) stay in registers.
// - The float exp splits the power of two with one vreduceps and applies it
//   with vscalefps, whose zero-masking also does the flush (9 instructions).
//
// GEMM register tile: 14 rows x 2 vectors (float 14 x 32, double 14 x 16) =
// 28 accumulators + 2 B vectors + 1 broadcast of the 32 zmm registers.
//
// Eigen's own AVX-512 packets are not used: they exist only when the compiler
// flags target AVX-512, and this file must build without them.
#ifndef SYNATTN_KERNELS_PACKET_AVX512_HPP
#define SYNATTN_KERNELS_PACKET_AVX512_HPP

#include "packet_portable.hpp"

#if !defined(SYNATTN_PORTABLE_KERNELS) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SYNATTN_HAVE_AVX512_KERNELS 1

// Every header is included before the target region (see packet_avx2.hpp).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

// The region: the features kernels/isa.hpp requires of the avx512 set
// (-Wpsabi: see packet_avx2.hpp).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace synattn {
namespace kernels {
namespace avx512 {

using namespace kernels::detail;

template <class Scalar>
struct Packet;

template <>
struct Packet<float> {
  using Scalar = float;
  using V = __m512;
  using I = __m512i;  // 16 x int32 slots
  using K = __m128i;  // 16 bucket bytes
  using M = __mmask16;
  static constexpr int lanes = 16;
  static constexpr int register_buckets = 16;
  static constexpr std::uintptr_t stream_alignment = 64;
  // The GEMM's register tile, 14 rows x 2 vectors, and cache blocks.
  static constexpr int MR = 14, NR = 32;
  static constexpr Index KC = 256, MC = 140, NC = 2048;
  static M prefix(Index r) noexcept {
    return r >= lanes ? static_cast<M>(0xFFFFu) : r <= 0 ? static_cast<M>(0) : static_cast<M>((1u << r) - 1u);
  }
  static V zero() noexcept { return _mm512_setzero_ps(); }
  static V set1(float v) noexcept { return _mm512_set1_ps(v); }
  static V load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  static V load(const float* p, M m) noexcept { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v) noexcept { _mm512_storeu_ps(p, v); }
  static void store(float* p, V v, M m) noexcept { _mm512_mask_storeu_ps(p, m, v); }
  static void stream(float* p, V v) noexcept { _mm512_stream_ps(p, v); }
  static void stream_fence() noexcept { _mm_sfence(); }
  static V add(V a, V b) noexcept { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) noexcept { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) noexcept { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) noexcept { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
  static V masked_max(V acc, M m, V v) noexcept { return _mm512_mask_max_ps(acc, m, acc, v); }
  static V keep(M m, V a) noexcept { return _mm512_maskz_mov_ps(m, a); }
  // 2^d for d <= 0: 2^floor(d) 2^f with f = d - floor(d) in [0, 1) from one
  // vreduceps (exact), 2^f by a degree-6 polynomial fitted to relative error
  // 1.9e-9 on [0, 1), and vscalefps, which applies 2^floor(d) itself. Its
  // zero-masking flushes d < -126 (results below the smallest normal) to
  // exactly 0, -inf included; the compare is "not less than", true for NaN,
  // so a NaN d stays NaN. Max relative error 7.4e-8 measured over [-126, 0].
  static V exp2_flushed(V d) noexcept {
    const M keep_lanes = _mm512_cmp_ps_mask(d, _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
    const V f = _mm512_reduce_ps(d, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    V p = _mm512_set1_ps(2.1702253434e-4f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.2439688435e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6788406372e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5483341217e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022983015e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314700365e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep_lanes, p, d);
  }
  // Butterfly reductions. Here and above, the all-lanes masked forms of the
  // intrinsics whose unmasked form has an _mm512_undefined_ps() source: GCC
  // 12 reports that as -Wmaybe-uninitialized in every user's build.
  template <bool Max>
  static V combine(V x, V y) noexcept {  // (a member, not a lambda: GCC gives a lambda's thunk no target)
    if constexpr (Max) return max(x, y);
    return add(x, y);
  }
  template <bool Max>
  static float reduce(V a) noexcept {
    a = combine<Max>(a, _mm512_mask_shuffle_f32x4(a, 0xFFFF, a, a, 0x4E));  // swap 256-bit halves
    a = combine<Max>(a, _mm512_mask_shuffle_f32x4(a, 0xFFFF, a, a, 0xB1));  // swap 128-bit lanes
    a = combine<Max>(a, _mm512_mask_permute_ps(a, 0xFFFF, a, 0x4E));        // swap 64-bit pairs
    a = combine<Max>(a, _mm512_mask_permute_ps(a, 0xFFFF, a, 0xB1));        // swap neighbours
    return _mm512_cvtss_f32(a);
  }
  static float reduce_max(V a) noexcept { return reduce<true>(a); }
  static float reduce_add(V a) noexcept { return reduce<false>(a); }
  static K keys(const std::int8_t* b) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)); }
  static K keys(const std::int8_t* b, Index r) noexcept {  // bucket -1 past r, no byte past r read
    return _mm_mask_loadu_epi8(_mm_set1_epi8(-1), prefix(r), b);
  }
  static I slots(const std::int8_t* b) noexcept {
    return _mm512_add_epi32(_mm512_maskz_cvtepi8_epi32(0xFFFF, keys(b)), _mm512_set1_epi32(1));
  }
  static I slots(const std::int8_t* b, Index r) noexcept {
    return _mm512_add_epi32(_mm512_maskz_cvtepi8_epi32(0xFFFF, keys(b, r)), _mm512_set1_epi32(1));
  }
  static V lookup1(I s, V t0) noexcept { return _mm512_mask_permutexvar_ps(t0, 0xFFFF, s, t0); }
  static V lookup2(I s, V t0, V t1) noexcept { return _mm512_permutex2var_ps(t0, s, t1); }
  static V gather(I s, const float* shifted) noexcept {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, s, shifted, 4);
  }
  static V add_if(V acc, K keys, int k, V g) noexcept {
    return _mm512_mask_add_ps(acc, _mm_cmpeq_epi8_mask(keys, _mm_set1_epi8(static_cast<char>(k))), acc, g);
  }
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
};

template <>
struct Packet<double> {
  using Scalar = double;
  using V = __m512d;
  using I = __m512i;  // 8 x int64 slots
  using K = __m128i;  // 8 bucket bytes in the low half
  using M = __mmask8;
  static constexpr int lanes = 8;
  static constexpr int register_buckets = 16;
  static constexpr std::uintptr_t stream_alignment = 64;
  static constexpr int MR = 14, NR = 16;
  static constexpr Index KC = 256, MC = 70, NC = 1024;
  static M prefix(Index r) noexcept {
    return r >= lanes ? static_cast<M>(0xFFu) : r <= 0 ? static_cast<M>(0) : static_cast<M>((1u << r) - 1u);
  }
  static V zero() noexcept { return _mm512_setzero_pd(); }
  static V set1(double v) noexcept { return _mm512_set1_pd(v); }
  static V load(const double* p) noexcept { return _mm512_loadu_pd(p); }
  static V load(const double* p, M m) noexcept { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, V v) noexcept { _mm512_storeu_pd(p, v); }
  static void store(double* p, V v, M m) noexcept { _mm512_mask_storeu_pd(p, m, v); }
  static void stream(double* p, V v) noexcept { _mm512_stream_pd(p, v); }
  static void stream_fence() noexcept { _mm_sfence(); }
  static V add(V a, V b) noexcept { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) noexcept { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) noexcept { return _mm512_mul_pd(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm512_fmadd_pd(a, b, c); }
  static V max(V a, V b) noexcept { return _mm512_mask_max_pd(a, 0xFF, a, b); }
  static V masked_max(V acc, M m, V v) noexcept { return _mm512_mask_max_pd(acc, m, acc, v); }
  static V keep(M m, V a) noexcept { return _mm512_maskz_mov_pd(m, a); }
  // exp(a) for a <= 0 as 2^k e^r, k = round(a log2 e), r = a - k ln 2 (ln 2
  // in two parts), e^r by its Taylor polynomial of degree 12 (truncation
  // < 1.7e-16 relative; the AVX2 file's algorithm), and vscalefpd for 2^k,
  // which covers every k itself. The clamp max(-746, a) (NaN passes) keeps
  // -inf from making r = NaN; results below the smallest normal, -inf
  // included, become exactly 0 ("less than" is false for NaN, which stays).
  static V exp_flushed(V a) noexcept {
    const V x = max(_mm512_set1_pd(-746.0), a);
    const V k = _mm512_mask_roundscale_pd(x, 0xFF, _mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    V r = _mm512_fmadd_pd(k, _mm512_set1_pd(-6.93147180559945286227e-01), x);
    r = _mm512_fmadd_pd(k, _mm512_set1_pd(-2.31904681384629955842e-17), r);
    V p = _mm512_set1_pd(kExpTaylor[0]);
    for (std::size_t i = 1; i < std::size(kExpTaylor); ++i) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kExpTaylor[i]));
    const V y = _mm512_mask_scalef_pd(p, 0xFF, p, k);
    const M small = _mm512_cmp_pd_mask(y, _mm512_set1_pd(std::numeric_limits<double>::min()), _CMP_LT_OQ);
    return _mm512_mask_mov_pd(y, small, _mm512_setzero_pd());
  }
  template <bool Max>
  static V combine(V x, V y) noexcept {
    if constexpr (Max) return max(x, y);
    return add(x, y);
  }
  template <bool Max>
  static double reduce(V a) noexcept {
    a = combine<Max>(a, _mm512_mask_shuffle_f64x2(a, 0xFF, a, a, 0x4E));  // swap 256-bit halves
    a = combine<Max>(a, _mm512_mask_shuffle_f64x2(a, 0xFF, a, a, 0xB1));  // swap 128-bit lanes
    a = combine<Max>(a, _mm512_mask_permute_pd(a, 0xFF, a, 0x55));        // swap neighbours
    return _mm512_cvtsd_f64(a);
  }
  static double reduce_max(V a) noexcept { return reduce<true>(a); }
  static double reduce_add(V a) noexcept { return reduce<false>(a); }
  static K keys(const std::int8_t* b) noexcept { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)); }
  static K keys(const std::int8_t* b, Index r) noexcept {  // bucket -1 past r, no byte past r read
    return _mm_mask_loadu_epi8(_mm_set1_epi8(-1), static_cast<__mmask16>(prefix(r)), b);
  }
  static I slots(const std::int8_t* b) noexcept {
    return _mm512_add_epi64(_mm512_maskz_cvtepi8_epi64(0xFF, keys(b)), _mm512_set1_epi64(1));
  }
  static I slots(const std::int8_t* b, Index r) noexcept {
    return _mm512_add_epi64(_mm512_maskz_cvtepi8_epi64(0xFF, keys(b, r)), _mm512_set1_epi64(1));
  }
  static V lookup1(I s, V t0) noexcept { return _mm512_mask_permutexvar_pd(t0, 0xFF, s, t0); }
  static V lookup2(I s, V t0, V t1) noexcept { return _mm512_permutex2var_pd(t0, s, t1); }
  static V gather(I s, const double* shifted) noexcept {
    return _mm512_mask_i64gather_pd(_mm512_setzero_pd(), 0xFF, s, shifted, 8);
  }
  // Only the low 8 byte lanes matter (the mask's low 8 bits).
  static V add_if(V acc, K keys, int k, V g) noexcept {
    return _mm512_mask_add_pd(acc, static_cast<M>(_mm_cmpeq_epi8_mask(keys, _mm_set1_epi8(static_cast<char>(k)))), acc,
                              g);
  }
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
};

#define SYNATTN_KERNELS_PACKET_REGION
#include "attention_rows_algorithm.inc"
#include "gemm_blocked.inc"
#include "linear_small_algorithm.inc"
#undef SYNATTN_KERNELS_PACKET_REGION

// The avx512 set: every family here.
template <class Scalar>
inline constexpr KernelTable<Scalar> kernel_table{row_kernels<Scalar>, &gemm<Scalar>, &linear_small<Scalar>};

}  // namespace avx512
}  // namespace kernels
}  // namespace synattn

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

#endif  // x86-64 GCC / Clang, not SYNATTN_PORTABLE_KERNELS
#endif  // SYNATTN_KERNELS_PACKET_AVX512_HPP
