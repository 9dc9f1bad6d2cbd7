// synattn — the AVX2 + FMA packet, float (8 lanes) and double (4 lanes), and
// the kernels of every family written over it: the attention row kernels
// (kernels/attention_rows_algorithm.inc, which lists what they take from the
// packet), the blocked GEMM (kernels/gemm_blocked.inc) and the few-rows
// projection (kernels/linear_small_algorithm.inc). One target region,
// avx2,fma, holds the packet and the three families, whatever the compiler
// flags: a target region applies only to the functions defined inside it,
// templates included, which is why the families' code is included here.
// kernels/registry.hpp runs this set when the CPU has AVX2 and FMA (the
// few-rows projection stays with kernels::product here: it was measured
// only with AVX-512).
//
// What AVX2 lacks next to AVX-512, and what takes its place:
// - No mask registers: a mask is a vector of all-ones / all-zeros lanes.
//   Row tails use vmaskmov loads and stores (which never touch, nor fault on,
//   the lanes they leave out); compares and blends replace masked arithmetic.
// - Bucket bytes of a row tail are copied into a small word filled with -1
//   instead of a masked byte load, so no byte past the row is read.
// - Table lookups: vpermps reads the low 3 bits of each slot; a blend on bit 3
//   picks the second register (double looks up its 64-bit entries as pairs of
//   32-bit ones, as vpermpd has no variable cross-lane form). Bigger tables
//   use a hardware gather: measured on an AVX-512 Xeon (-march=haswell code),
//   4 registers and 3 blends were slower than it.
// - The register histogram adds `bucket == k ? g : 0` (compare, and, add: 3
//   instructions per bucket and packet where AVX-512 needs 2), so it pays off
//   for fewer buckets: up to 12 for float (16 accumulators would fill all 16
//   ymm registers and spill), 8 for double (half the keys per packet); more
//   take the portable scatter. Measured (whole backward, float, n = 1024):
//   11 buckets 0.99 ns per score against 1.6 with the scatter; 16 buckets 2.1
//   against 1.65.
// - exp is written here (Eigen's AVX pexp<Packet4d> divides, and Eigen's
//   packets follow the compiler flags, not this pragma).
//
// GEMM register tile: 6 rows x 2 vectors (float 6 x 16, double 6 x 8) = 12
// accumulators + 2 B vectors + 1 broadcast of the 16 ymm registers. Cache
// blocks: the A block (MC, KC) ~147 KB sits in a 512 KB L2, one B micro-panel
// (KC, NR) 16 KB in the 32 KB L1d, the B block (KC, NC) 2 MB in L3.
#ifndef SYNATTN_KERNELS_PACKET_AVX2_HPP
#define SYNATTN_KERNELS_PACKET_AVX2_HPP

#include "packet_portable.hpp"

#if !defined(SYNATTN_PORTABLE_KERNELS) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SYNATTN_HAVE_AVX2_KERNELS 1

// Every header is included before the target region: what it declares must
// keep the compiler's default target (a std::fill compiled for AVX2 and
// called from the portable path would fault on an older CPU).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

// The region. Clang ignores GCC's target pragma and has its own. -Wpsabi:
// GCC notes that passing vectors by value between functions of different
// targets changes the ABI; the region's vector arguments never leave it (its
// entry points take pointers).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace synattn {
namespace kernels {
namespace avx2 {

using namespace kernels::detail;

template <class Scalar>
struct Packet;

template <>
struct Packet<float> {
  using Scalar = float;
  using V = __m256;
  using I = __m256i;  // 8 x int32 slots
  using K = __m256i;  // 8 x int32 buckets
  using M = __m256i;  // 8 x int32, all ones where the lane is selected
  static constexpr int lanes = 8;
  static constexpr int register_buckets = 12;  // see the header comment
  static constexpr std::uintptr_t stream_alignment = 32;
  // The GEMM's register tile, 6 rows x 2 vectors, and cache blocks (see
  // the header comment).
  static constexpr int MR = 6, NR = 16;
  static constexpr Index KC = 256, MC = 144, NC = 2048;
  static M prefix(Index r) noexcept {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<Index>(std::max<Index>(r, 0), lanes))),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V zero() noexcept { return _mm256_setzero_ps(); }
  static V set1(float v) noexcept { return _mm256_set1_ps(v); }
  static V load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static V load(const float* p, M m) noexcept { return _mm256_maskload_ps(p, m); }
  static void store(float* p, V v) noexcept { _mm256_storeu_ps(p, v); }
  static void store(float* p, V v, M m) noexcept { _mm256_maskstore_ps(p, m, v); }
  static void stream(float* p, V v) noexcept { _mm256_stream_ps(p, v); }
  static void stream_fence() noexcept { _mm_sfence(); }
  static V add(V a, V b) noexcept { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) noexcept { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) noexcept { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) noexcept { return _mm256_max_ps(a, b); }
  static V keep(M m, V a) noexcept { return _mm256_and_ps(_mm256_castsi256_ps(m), a); }
  static V masked_max(V acc, M m, V v) noexcept {
    return _mm256_max_ps(
        acc, _mm256_blendv_ps(_mm256_set1_ps(-std::numeric_limits<float>::infinity()), v, _mm256_castsi256_ps(m)));
  }
  // 2^d for d <= 0 as 2^k 2^f: k = round(d), f = d - k in [-1/2, 1/2]
  // (exact), 2^f by a degree-6 polynomial fitted to relative error 2e-9
  // there, 2^k built directly in the exponent bits. Relative error < 8e-8
  // measured over [-126, 0]. The clamp at -127 (max(-127, d): NaN passes,
  // as maxps returns its second operand then) keeps k >= -127, whose
  // exponent field 0 makes 2^k = +0, and keeps -inf from making f = NaN;
  // results below the smallest normal become exactly 0 (a NaN compares false
  // and stays).
  static V exp2_flushed(V d) noexcept {
    const V x = _mm256_max_ps(_mm256_set1_ps(-127.0f), d);
    const V k = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const V f = _mm256_sub_ps(x, k);
    V p = _mm256_set1_ps(1.5353361960e-4f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3398875017e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6184369177e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5503323674e-2f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022647738e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718246e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    const V r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(_mm256_cmp_ps(r, _mm256_set1_ps(std::numeric_limits<float>::min()), _CMP_LT_OQ), r);
  }
  static float reduce_max(V a) noexcept {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
  }
  static float reduce_add(V a) noexcept {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
  }
  static K keys(const std::int8_t* b) noexcept {
    std::int64_t w;
    std::memcpy(&w, b, sizeof w);
    return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(w));
  }
  static K keys(const std::int8_t* b, Index r) noexcept {
    std::int64_t w = -1;
    std::memcpy(&w, b, static_cast<std::size_t>(r));
    return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(w));
  }
  static I slots(const std::int8_t* b) noexcept { return _mm256_add_epi32(keys(b), _mm256_set1_epi32(1)); }
  static I slots(const std::int8_t* b, Index r) noexcept { return _mm256_add_epi32(keys(b, r), _mm256_set1_epi32(1)); }
  static V lookup1(I s, V t0) noexcept { return _mm256_permutevar8x32_ps(t0, s); }
  static V lookup2(I s, V t0, V t1) noexcept {
    // Bit 3 of the slot, moved into the sign bit, picks t1.
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(t0, s), _mm256_permutevar8x32_ps(t1, s),
                            _mm256_castsi256_ps(_mm256_slli_epi32(s, 28)));
  }
  static V gather(I s, const float* shifted) noexcept { return _mm256_i32gather_ps(shifted, s, 4); }
  static V add_if(V acc, K keys, int k, V g) noexcept {
    return _mm256_add_ps(acc, _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(keys, _mm256_set1_epi32(k))), g));
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
};

template <>
struct Packet<double> {
  using Scalar = double;
  using V = __m256d;
  using I = __m256i;  // 4 x int64 slots
  using K = __m256i;  // 4 x int64 buckets
  using M = __m256i;  // 4 x int64, all ones where the lane is selected
  static constexpr int lanes = 4;
  static constexpr int register_buckets = 8;
  static constexpr std::uintptr_t stream_alignment = 32;
  static constexpr int MR = 6, NR = 8;
  static constexpr Index KC = 256, MC = 72, NC = 1024;
  static M prefix(Index r) noexcept {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(std::min<Index>(std::max<Index>(r, 0), lanes))),
                              _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V zero() noexcept { return _mm256_setzero_pd(); }
  static V set1(double v) noexcept { return _mm256_set1_pd(v); }
  static V load(const double* p) noexcept { return _mm256_loadu_pd(p); }
  static V load(const double* p, M m) noexcept { return _mm256_maskload_pd(p, m); }
  static void store(double* p, V v) noexcept { _mm256_storeu_pd(p, v); }
  static void store(double* p, V v, M m) noexcept { _mm256_maskstore_pd(p, m, v); }
  static void stream(double* p, V v) noexcept { _mm256_stream_pd(p, v); }
  static void stream_fence() noexcept { _mm_sfence(); }
  static V add(V a, V b) noexcept { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) noexcept { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) noexcept { return _mm256_mul_pd(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm256_fmadd_pd(a, b, c); }
  static V max(V a, V b) noexcept { return _mm256_max_pd(a, b); }
  static V keep(M m, V a) noexcept { return _mm256_and_pd(_mm256_castsi256_pd(m), a); }
  static V masked_max(V acc, M m, V v) noexcept {
    return _mm256_max_pd(
        acc, _mm256_blendv_pd(_mm256_set1_pd(-std::numeric_limits<double>::infinity()), v, _mm256_castsi256_pd(m)));
  }
  // exp(a) for a <= 0 as 2^k e^r with k = round(a log2 e), r = a - k ln 2
  // (|r| <= ln 2 / 2, reduced with ln 2 in two parts so r keeps full
  // precision even at k = -1023), e^r by its Taylor polynomial of degree 12
  // (truncation < 1.7e-16 relative) and 2^k built in the exponent bits; k is
  // rounded and converted by adding 1.5 * 2^52, which leaves k in the low
  // mantissa bits (AVX2 has no double -> int64 conversion). Relative error
  // < 3.2e-16 measured; about 3x faster than Eigen's pexp<Packet4d>, whose
  // Pade form divides. The clamp max(-709, a) (NaN passes) keeps k >= -1023,
  // whose exponent field 0 makes 2^k = +0, and keeps -inf from making r =
  // NaN; results below the smallest normal become exactly 0.
  static V exp_flushed(V a) noexcept {
    const V magic = _mm256_set1_pd(6755399441055744.0);  // 1.5 * 2^52
    const V x = _mm256_max_pd(_mm256_set1_pd(-709.0), a);
    const V kb = _mm256_fmadd_pd(x, _mm256_set1_pd(1.4426950408889634), magic);  // k in the low bits
    const V k = _mm256_sub_pd(kb, magic);
    V r = _mm256_fmadd_pd(k, _mm256_set1_pd(-6.93147180559945286227e-01), x);
    r = _mm256_fmadd_pd(k, _mm256_set1_pd(-2.31904681384629955842e-17), r);
    V p = _mm256_set1_pd(kExpTaylor[0]);
    for (std::size_t i = 1; i < std::size(kExpTaylor); ++i) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kExpTaylor[i]));
    const __m256i ki = _mm256_sub_epi64(_mm256_castpd_si256(kb), _mm256_castpd_si256(magic));
    const __m256i e = _mm256_slli_epi64(_mm256_add_epi64(ki, _mm256_set1_epi64x(1023)), 52);
    const V y = _mm256_mul_pd(p, _mm256_castsi256_pd(e));
    return _mm256_andnot_pd(_mm256_cmp_pd(y, _mm256_set1_pd(std::numeric_limits<double>::min()), _CMP_LT_OQ), y);
  }
  static double reduce_max(V a) noexcept {
    const __m128d x = _mm_max_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_max_sd(x, _mm_unpackhi_pd(x, x)));
  }
  static double reduce_add(V a) noexcept {
    const __m128d x = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(x, _mm_unpackhi_pd(x, x)));
  }
  static K keys(const std::int8_t* b) noexcept {
    std::int32_t w;
    std::memcpy(&w, b, sizeof w);
    return _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(w));
  }
  static K keys(const std::int8_t* b, Index r) noexcept {
    std::int32_t w = -1;
    std::memcpy(&w, b, static_cast<std::size_t>(r));
    return _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(w));
  }
  static I slots(const std::int8_t* b) noexcept { return _mm256_add_epi64(keys(b), _mm256_set1_epi64x(1)); }
  static I slots(const std::int8_t* b, Index r) noexcept { return _mm256_add_epi64(keys(b, r), _mm256_set1_epi64x(1)); }
  // Entry s of a 4-double register is 32-bit lanes (2s, 2s + 1): vpermps
  // moves them across 128-bit lanes, which vpermilpd cannot. Their low 3
  // bits are those of 2s, so bit 2 of s picks the register.
  static __m256i pair_index(I s) noexcept {
    const __m256i lo = _mm256_slli_epi64(s, 1);  // 2s in the low half
    return _mm256_or_si256(_mm256_or_si256(lo, _mm256_slli_epi64(lo, 32)), _mm256_set1_epi64x(1LL << 32));
  }
  static V permute(__m256i pidx, V t) noexcept {
    return _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(t), pidx));
  }
  static V lookup1(I s, V t0) noexcept { return permute(pair_index(s), t0); }
  static V lookup2(I s, V t0, V t1) noexcept {
    const __m256i pidx = pair_index(s);
    return _mm256_blendv_pd(permute(pidx, t0), permute(pidx, t1), _mm256_castsi256_pd(_mm256_slli_epi64(s, 61)));
  }
  static V gather(I s, const double* shifted) noexcept { return _mm256_i64gather_pd(shifted, s, 8); }
  static V add_if(V acc, K keys, int k, V g) noexcept {
    return _mm256_add_pd(acc, _mm256_and_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(keys, _mm256_set1_epi64x(k))), g));
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
};

#define SYNATTN_KERNELS_PACKET_REGION
#include "attention_rows_algorithm.inc"
#include "gemm_blocked.inc"
#include "linear_small_algorithm.inc"
#undef SYNATTN_KERNELS_PACKET_REGION

// The avx2 set: rows and GEMM here, no few-rows kernel.
template <class Scalar>
inline constexpr KernelTable<Scalar> kernel_table{row_kernels<Scalar>, &gemm<Scalar>, nullptr};

}  // namespace avx2
}  // namespace kernels
}  // namespace synattn

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

#endif  // x86-64 GCC / Clang, not SYNATTN_PORTABLE_KERNELS
#endif  // SYNATTN_KERNELS_PACKET_AVX2_HPP
