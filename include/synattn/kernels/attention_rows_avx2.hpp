// synattn — the attention row kernels with AVX2 and FMA, float (8 lanes) and
// double (4 lanes): the same functions, arguments and results as
// kernels/attention_rows_portable.hpp (its comment states the conventions),
// which tests compare this file against. Compiled only when the compiler
// targets AVX2 and FMA (e.g. -march=haswell, Zen); kernels/attention_rows.hpp
// picks it when AVX-512 is not available.
//
// The structure follows kernels/attention_rows_avx512.hpp; what AVX2 changes:
// - No mask registers: a mask is a vector of all-ones / all-zeros lanes.
//   Row tails use vmaskmov loads and stores (which never touch, nor fault on,
//   the lanes they leave out), and the packed compares and blends take the
//   place of masked arithmetic.
// - Bucket bytes of a row tail are copied into a small buffer filled with -1
//   (slot 0, always a valid table index) instead of a masked byte load, so no
//   byte past the row is read.
// - A bias table of up to 8 / 16 (float) or 4 / 8 (double) slots sits in
//   1 or 2 registers: vpermps looks up each with the low index bits and a
//   blend on the next bit picks the register (double looks up its 64-bit
//   entries as pairs of 32-bit ones, as vpermpd has no variable cross-lane
//   form). Bigger tables use a hardware gather: measured on an AVX-512 Xeon
//   (-march=haswell code), 4 registers and 3 blends were slower than it.
// - The register histogram adds `bucket == k ? dscore : 0` (compare, and,
//   add: 3 instructions per bucket and packet where AVX-512 needs 2), so it
//   pays off for fewer buckets: up to 12 for float (16 accumulators would
//   fill all 16 ymm registers and spill), 8 for double (half the keys per
//   packet); more take the portable scatter. Measured (whole backward,
//   float, n = 1024): 11 buckets 0.99 ns per score against 1.6 with the
//   scatter; 16 buckets 2.1 against 1.65.
// - exp is written here for both types (Ops::exp2 for float, in base 2 as in
//   the avx512 file; Ops::exp for double, where Eigen's AVX pexp<Packet4d>
//   divides).
#ifndef SYNATTN_KERNELS_ATTENTION_ROWS_AVX2_HPP
#define SYNATTN_KERNELS_ATTENTION_ROWS_AVX2_HPP

#if defined(__AVX2__) && defined(__FMA__)
#define SYNATTN_HAVE_AVX2_KERNELS 1

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "attention_rows_portable.hpp"

namespace synattn {
namespace kernels {
namespace avx2 {
namespace detail {

// One packet of Scalar, its key-bucket indices and lane masks.
template <class Scalar>
struct Ops;

template <>
struct Ops<float> {
  using V = __m256;
  using I = __m256i;  // 8 x int32 bucket or slot indices
  using M = __m256i;  // 8 x int32, all ones where the lane is selected
  static constexpr Index lanes = 8;
  static constexpr int register_buckets = 12;  // see the header comment
  // Lanes [0, r); any r >= 0.
  static M prefix(Index r) noexcept {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<Index>(r, lanes))),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V zero() noexcept { return _mm256_setzero_ps(); }
  static V set1(float v) noexcept { return _mm256_set1_ps(v); }
  static V load(const float* p) noexcept { return _mm256_loadu_ps(p); }
  static V load(const float* p, M m) noexcept { return _mm256_maskload_ps(p, m); }  // 0 outside m
  static void store(float* p, V v) noexcept { _mm256_storeu_ps(p, v); }
  static void store(float* p, V v, M m) noexcept { _mm256_maskstore_ps(p, m, v); }
  static void stream(float* p, V v) noexcept { _mm256_stream_ps(p, v); }  // p 32-byte aligned
  static V add(V a, V b) noexcept { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) noexcept { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) noexcept { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) noexcept { return _mm256_max_ps(a, b); }
  static M ge(V a, V b) noexcept { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_GE_OQ)); }
  static M both(M a, M b) noexcept { return _mm256_and_si256(a, b); }
  static V keep(M m, V a) noexcept { return _mm256_and_ps(_mm256_castsi256_ps(m), a); }  // 0 outside m
  // b where the sign bit of m's lane is set, else a.
  static V select(M m, V a, V b) noexcept { return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(m)); }
  // 2^d for d <= 0 (-inf for masked keys) as 2^k 2^f: k = round(d), f = d - k
  // in [-1/2, 1/2] (exact), 2^f by a degree-6 polynomial fitted to relative
  // error 2e-9 there, 2^k built directly in the exponent bits (where Eigen's
  // pldexp covers the full range in several steps). Relative error < 8e-8
  // measured over [-126, 0]. The clamp at -127 keeps k >= -127, whose
  // exponent field 0 makes 2^k = +0 (below the caller's flush threshold
  // anyway), and keeps -inf from making f = NaN.
  static V exp2(V d) noexcept {
    const V x = _mm256_max_ps(d, _mm256_set1_ps(-127.0f));
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
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  }
  // Calls body(e) with e(v) = exp(v - max) for v <= max, in base 2 with the
  // argument in one FMA, as Ops<float>::with_exp_minus in the avx512 file
  // (whose comment says why that is as accurate as forming v - max).
  template <class Body>
  static auto with_exp_minus(float max, Body&& body) noexcept {
    const V log2e = _mm256_set1_ps(1.44269504088896341f);
    if (std::abs(max) < 1048576.0f) {  // 2^20: see above
      const V shift = _mm256_set1_ps(static_cast<float>(-1.44269504088896341 * static_cast<double>(max)));
      return body([=](V v) noexcept { return exp2(_mm256_fmadd_ps(v, log2e, shift)); });
    }
    const V vmax = _mm256_set1_ps(max);
    return body([=](V v) noexcept { return exp2(_mm256_mul_ps(_mm256_sub_ps(v, vmax), log2e)); });
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
  // Buckets of 8 keys, sign-extended; the tail form reads only r < 8 bytes
  // and gives bucket -1 to the lanes past them.
  static I buckets(const std::int8_t* b) noexcept {
    std::int64_t w;
    std::memcpy(&w, b, sizeof w);
    return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(w));
  }
  static I buckets(const std::int8_t* b, Index r) noexcept {
    std::int64_t w = -1;
    std::memcpy(&w, b, static_cast<std::size_t>(r));
    return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(w));
  }
  static I slots(I buckets) noexcept { return _mm256_add_epi32(buckets, _mm256_set1_epi32(1)); }
  static M equal(I idx, int k) noexcept { return _mm256_cmpeq_epi32(idx, _mm256_set1_epi32(k)); }
  // Table lookups. A register holds 8 entries; vpermps reads the low 3 bits
  // of each index, and second_register() moves bit 3 of each slot into the
  // lane's sign bit, which select() reads.
  static I permute_index(I slots) noexcept { return slots; }
  static V permute(I pidx, V table) noexcept { return _mm256_permutevar8x32_ps(table, pidx); }
  static M second_register(I slots) noexcept { return _mm256_slli_epi32(slots, 28); }
  static V gather(I slots, const float* base) noexcept { return _mm256_i32gather_ps(base, slots, 4); }
};

template <>
struct Ops<double> {
  using V = __m256d;
  using I = __m256i;  // 4 x int64 bucket or slot indices
  using M = __m256i;  // 4 x int64, all ones where the lane is selected
  static constexpr Index lanes = 4;
  static constexpr int register_buckets = 8;
  static M prefix(Index r) noexcept {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(static_cast<long long>(std::min<Index>(r, lanes))),
                              _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V zero() noexcept { return _mm256_setzero_pd(); }
  static V set1(double v) noexcept { return _mm256_set1_pd(v); }
  static V load(const double* p) noexcept { return _mm256_loadu_pd(p); }
  static V load(const double* p, M m) noexcept { return _mm256_maskload_pd(p, m); }
  static void store(double* p, V v) noexcept { _mm256_storeu_pd(p, v); }
  static void store(double* p, V v, M m) noexcept { _mm256_maskstore_pd(p, m, v); }
  static void stream(double* p, V v) noexcept { _mm256_stream_pd(p, v); }  // p 32-byte aligned
  static V add(V a, V b) noexcept { return _mm256_add_pd(a, b); }
  static V sub(V a, V b) noexcept { return _mm256_sub_pd(a, b); }
  static V mul(V a, V b) noexcept { return _mm256_mul_pd(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm256_fmadd_pd(a, b, c); }
  static V max(V a, V b) noexcept { return _mm256_max_pd(a, b); }
  static M ge(V a, V b) noexcept { return _mm256_castpd_si256(_mm256_cmp_pd(a, b, _CMP_GE_OQ)); }
  static M both(M a, M b) noexcept { return _mm256_and_si256(a, b); }
  static V keep(M m, V a) noexcept { return _mm256_and_pd(_mm256_castsi256_pd(m), a); }
  static V select(M m, V a, V b) noexcept { return _mm256_blendv_pd(a, b, _mm256_castsi256_pd(m)); }
  // exp(a) for a <= 0 as 2^k e^r with k = round(a log2 e), r = a - k ln 2
  // (|r| <= ln 2 / 2, reduced with ln 2 in two parts so r keeps full
  // precision even at k = -1023), e^r by its Taylor polynomial of degree 12
  // (truncation < 1.7e-16 relative) and 2^k built in the exponent bits; k is
  // rounded and converted by adding 1.5 * 2^52, which leaves k in the low
  // mantissa bits (AVX2 has no double -> int64 conversion). Relative error
  // < 3.2e-16 measured; about 3x faster than Eigen's pexp<Packet4d>, whose
  // Pade form divides. The clamp at -709 keeps k >= -1023, whose exponent
  // field 0 makes 2^k = +0 (exp(a) < 1.7e-308 there, below the caller's
  // flush threshold anyway), and keeps -inf from making r = NaN.
  static V exp(V a) noexcept {
    const V magic = _mm256_set1_pd(6755399441055744.0);  // 1.5 * 2^52
    const V x = _mm256_max_pd(a, _mm256_set1_pd(-709.0));
    const V kb = _mm256_fmadd_pd(x, _mm256_set1_pd(1.4426950408889634), magic);  // k in the low bits
    const V k = _mm256_sub_pd(kb, magic);
    V r = _mm256_fmadd_pd(k, _mm256_set1_pd(-6.93147180559945286227e-01), x);
    r = _mm256_fmadd_pd(k, _mm256_set1_pd(-2.31904681384629955842e-17), r);
    V p = _mm256_set1_pd(1.0 / 479001600.0);  // 1/12!
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 39916800.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 3628800.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 362880.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 40320.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 5040.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 720.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 120.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 24.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 6.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(0.5));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
    const __m256i ki = _mm256_sub_epi64(_mm256_castpd_si256(kb), _mm256_castpd_si256(magic));
    const __m256i e = _mm256_slli_epi64(_mm256_add_epi64(ki, _mm256_set1_epi64x(1023)), 52);
    return _mm256_mul_pd(p, _mm256_castsi256_pd(e));
  }
  // As Ops<float>::with_exp_minus, here by subtracting max first.
  template <class Body>
  static auto with_exp_minus(double max, Body&& body) noexcept {
    const V vmax = _mm256_set1_pd(max);
    return body([=](V v) noexcept { return exp(_mm256_sub_pd(v, vmax)); });
  }
  static double reduce_max(V a) noexcept {
    const __m128d x = _mm_max_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_max_sd(x, _mm_unpackhi_pd(x, x)));
  }
  static double reduce_add(V a) noexcept {
    const __m128d x = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(x, _mm_unpackhi_pd(x, x)));
  }
  static I buckets(const std::int8_t* b) noexcept {
    std::int32_t w;
    std::memcpy(&w, b, sizeof w);
    return _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(w));
  }
  static I buckets(const std::int8_t* b, Index r) noexcept {
    std::int32_t w = -1;
    std::memcpy(&w, b, static_cast<std::size_t>(r));
    return _mm256_cvtepi8_epi64(_mm_cvtsi32_si128(w));
  }
  static I slots(I buckets) noexcept { return _mm256_add_epi64(buckets, _mm256_set1_epi64x(1)); }
  static M equal(I idx, int k) noexcept { return _mm256_cmpeq_epi64(idx, _mm256_set1_epi64x(k)); }
  // Entry s of a 4-double register is 32-bit lanes (2s, 2s + 1): vpermps
  // moves it across 128-bit lanes, which vpermilpd cannot. Its low 3 bits
  // are those of 2s, so bit 2 of s picks the register.
  static I permute_index(I slots) noexcept {
    const __m256i lo = _mm256_slli_epi64(slots, 1);  // 2s in the low half
    return _mm256_or_si256(_mm256_or_si256(lo, _mm256_slli_epi64(lo, 32)), _mm256_set1_epi64x(1LL << 32));
  }
  static V permute(I pidx, V table) noexcept {
    return _mm256_castps_pd(_mm256_permutevar8x32_ps(_mm256_castpd_ps(table), pidx));
  }
  static M second_register(I slots) noexcept { return _mm256_slli_epi64(slots, 61); }
  static V gather(I slots, const double* base) noexcept { return _mm256_i64gather_pd(base, slots, 8); }
};

// How the bias of a packet of keys is looked up: not at all (kNoBias), from
// 1 or 2 table registers, or by a hardware gather (kGather).
constexpr int kNoBias = 0;
constexpr int kGather = -1;

template <class Scalar, int L>
struct BiasLookup {
  using O = Ops<Scalar>;
  using V = typename O::V;
  V t0, t1;
  const Scalar* base;
  BiasLookup(const Scalar* shifted, int slots) noexcept : base(shifted) {
    // Masked loads: `shifted` holds exactly `slots` values (L = 2: slots > lanes).
    t0 = L > 0 ? O::load(shifted, O::prefix(slots)) : O::zero();
    t1 = L == 2 ? O::load(shifted + O::lanes, O::prefix(slots - O::lanes)) : O::zero();
  }
  V operator()(typename O::I slots) const noexcept {
    if constexpr (L == kGather) {
      return O::gather(slots, base);
    } else if constexpr (L > 0) {
      const auto pidx = O::permute_index(slots);
      const V r0 = O::permute(pidx, t0);
      if constexpr (L == 2) return O::select(O::second_register(slots), r0, O::permute(pidx, t1));
      return r0;
    } else {
      return O::zero();
    }
  }
};

template <class Scalar, int L>
void numerators(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted, int slots,
                Index rows, Index kend, Index causal_row0, Index n, Scalar* inv_sum) noexcept {
  using O = Ops<Scalar>;
  using V = typename O::V;
  constexpr Index W = O::lanes;
  const BiasLookup<Scalar, L> lookup(shifted, slots);
  const V tiny = O::set1(std::numeric_limits<Scalar>::min());
  const V minus_inf = O::set1(-std::numeric_limits<Scalar>::infinity());
  for (Index i = 0; i < rows; ++i) {
    Scalar* row = z + i * ld;
    const std::int8_t* b = buckets + i * ldb;
    Scalar* const row_next = next_row(row, i, rows, ld);
    const std::int8_t* const b_next = L == kNoBias ? nullptr : next_row(b, i, rows, ldb);
    const Index ke = visible_keys(kend, causal_row0, i);
    std::fill(row + ke, row + n, Scalar(0));
    inv_sum[i] = Scalar(0);
    if (ke == 0) continue;
    const Index full = ke / W * W;
    const auto tail = O::prefix(ke - full);
    // Pass 1: add the bias, keep the row maximum in four registers (one
    // chain of dependent vmaxps would take its latency per packet).
    const auto biased = [&](Index j) noexcept {
      V v = O::load(row + j);
      if constexpr (L != kNoBias) {
        v = O::add(v, lookup(O::slots(O::buckets(b + j))));
        O::store(row + j, v);
      }
      return v;
    };
    V vmax0 = minus_inf, vmax1 = minus_inf, vmax2 = minus_inf, vmax3 = minus_inf;
    Index k = 0;
    for (; k + 4 * W <= full; k += 4 * W) {
      vmax0 = O::max(vmax0, biased(k));
      vmax1 = O::max(vmax1, biased(k + W));
      vmax2 = O::max(vmax2, biased(k + 2 * W));
      vmax3 = O::max(vmax3, biased(k + 3 * W));
    }
    for (; k < full; k += W) vmax0 = O::max(vmax0, biased(k));
    if (full < ke) {
      V v = O::load(row + full, tail);
      if constexpr (L != kNoBias) {
        v = O::add(v, lookup(O::slots(O::buckets(b + full, ke - full))));
        O::store(row + full, v, tail);
      }
      vmax1 = O::max(vmax1, O::select(tail, minus_inf, v));  // lanes past the row load 0
    }
    const Scalar max = O::reduce_max(O::max(O::max(vmax0, vmax1), O::max(vmax2, vmax3)));
    if (max == -std::numeric_limits<Scalar>::infinity()) {
      std::fill(row, row + ke, Scalar(0));
      continue;
    }
    // Pass 2: exp(score - max), flushed below the smallest normal, and the sum.
    const Scalar sum = O::with_exp_minus(max, [&](auto exp_minus_max) noexcept {
      V acc0 = O::zero(), acc1 = O::zero();
      Index j = 0;
      for (; j + 2 * W <= full; j += 2 * W) {  // two chains: exp's latency overlaps
        prefetch_next_row(row_next + j, row_next + j + W, b_next == nullptr ? nullptr : b_next + j);
        V e0 = exp_minus_max(O::load(row + j)), e1 = exp_minus_max(O::load(row + j + W));
        e0 = O::keep(O::ge(e0, tiny), e0);
        e1 = O::keep(O::ge(e1, tiny), e1);
        O::store(row + j, e0);
        O::store(row + j + W, e1);
        acc0 = O::add(acc0, e0);
        acc1 = O::add(acc1, e1);
      }
      for (; j < full; j += W) {
        const V x = exp_minus_max(O::load(row + j));
        const V e = O::keep(O::ge(x, tiny), x);
        O::store(row + j, e);
        acc0 = O::add(acc0, e);
      }
      if (full < ke) {
        // Lanes past the row hold exp(0 - max), possibly inf: keep them out.
        const V x = exp_minus_max(O::load(row + full, tail));
        const V e = O::keep(O::both(O::ge(x, tiny), tail), x);
        O::store(row + full, e, tail);
        acc1 = O::add(acc1, e);
      }
      return O::reduce_add(O::add(acc0, acc1));
    });
    inv_sum[i] = Scalar(1) / sum;
  }
}

// acc[k] += (bucket == k ? g : 0) for k < NB, unrolled by the fold: GCC 12
// at -O2 keeps a `for (k < NB)` loop, and with it acc[] on the stack, each
// add a store-to-load chain (the histogram's cost doubled at NB = 4).
template <class O, int... K>
inline void add_to_buckets(typename O::V* acc, typename O::I bk, typename O::V g,
                           std::integer_sequence<int, K...>) noexcept {
  ((acc[K] = O::add(acc[K], O::keep(O::equal(bk, K), g))), ...);
}

// dz = p * (dz - <p, dz>) on each row's visible prefix, and the bucket
// histogram: NB > 0 buckets in registers, NB < 0 the portable scatter, NB = 0
// none.
template <class Scalar, int NB>
void backward_rows(const Scalar* p, Index ldp, Scalar* dz, Index ld, const std::int8_t* buckets, Index ldb,
                   Index rows, Index kend, Index causal_row0, Index n, Scalar* hist, Index stride,
                   const Scalar* dots) noexcept {
  using O = Ops<Scalar>;
  using V = typename O::V;
  constexpr Index W = O::lanes;
  // NB > 0: one accumulator register per bucket, reduced once per block.
  V acc[NB > 0 ? NB : 1];
  for (int k = 0; k < (NB > 0 ? NB : 1); ++k) acc[k] = O::zero();
  for (Index i = 0; i < rows; ++i) {
    const Scalar* prow = p + i * ldp;
    Scalar* row = dz + i * ld;
    const std::int8_t* b = buckets + i * ldb;
    const Scalar* const prow_next = next_row(prow, i, rows, ldp);
    const Scalar* const row_next = next_row(row, i, rows, ld);
    const std::int8_t* const b_next = NB == 0 ? nullptr : next_row(b, i, rows, ldb);
    const Index ke = visible_keys(kend, causal_row0, i);
    std::fill(row + ke, row + n, Scalar(0));
    if (ke == 0) continue;
    const Index full = ke / W * W;
    const auto tail = O::prefix(ke - full);
    V dot;
    if (dots != nullptr) {
      dot = O::set1(dots[i]);
    } else {
      V d0 = O::zero(), d1 = O::zero();
      Index j = 0;
      for (; j + 2 * W <= full; j += 2 * W) {
        d0 = O::fma(O::load(prow + j), O::load(row + j), d0);
        d1 = O::fma(O::load(prow + j + W), O::load(row + j + W), d1);
      }
      for (; j < full; j += W) d0 = O::fma(O::load(prow + j), O::load(row + j), d0);
      if (full < ke) d1 = O::fma(O::load(prow + full, tail), O::load(row + full, tail), d1);
      dot = O::set1(O::reduce_add(O::add(d0, d1)));
    }
    for (Index j = 0; j < full; j += W) {
      prefetch_next_row(prow_next + j, row_next + j, b_next == nullptr ? nullptr : b_next + j);
      const V g = O::mul(O::load(prow + j), O::sub(O::load(row + j), dot));
      O::store(row + j, g);
      if constexpr (NB > 0) {
        add_to_buckets<O>(acc, O::buckets(b + j), g, std::make_integer_sequence<int, NB>());
      }
    }
    if (full < ke) {
      // Lanes past the row load p = 0, so g = 0 there; their bucket is -1
      // anyway.
      const V g = O::mul(O::load(prow + full, tail), O::sub(O::load(row + full, tail), dot));
      O::store(row + full, g, tail);
      if constexpr (NB > 0) {
        add_to_buckets<O>(acc, O::buckets(b + full, ke - full), g, std::make_integer_sequence<int, NB>());
      }
    }
    if constexpr (NB < 0)  // many buckets: the portable interleaved scatter
      if (hist != nullptr) portable::scatter_histogram_row(row, b, ke, hist, stride);
  }
  if constexpr (NB > 0)
    for (int k = 0; k < NB; ++k) hist[k + 1] += O::reduce_add(acc[k]);
}

template <class Scalar, int... K>
void backward_register_histogram(int nb, std::integer_sequence<int, K...>, const Scalar* p, Index ldp, Scalar* dz,
                                 Index ld, const std::int8_t* buckets, Index ldb, Index rows, Index kend,
                                 Index causal_row0, Index n, Scalar* hist, Index stride,
                                 const Scalar* dots) noexcept {
  using Fn = void (*)(const Scalar*, Index, Scalar*, Index, const std::int8_t*, Index, Index, Index, Index, Index,
                      Scalar*, Index, const Scalar*);
  static constexpr Fn table[] = {&backward_rows<Scalar, K + 1>...};
  table[nb - 1](p, ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride, dots);
}

}  // namespace detail

template <class Scalar>
inline void softmax_numerators(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted,
                               int slots, Index rows, Index kend, Index causal_row0, Index n,
                               Scalar* inv_sum) noexcept {
  constexpr int W = static_cast<int>(detail::Ops<Scalar>::lanes);
  if (shifted == nullptr)
    detail::numerators<Scalar, detail::kNoBias>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n,
                                                inv_sum);
  else if (slots <= W)
    detail::numerators<Scalar, 1>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n, inv_sum);
  else if (slots <= 2 * W)
    detail::numerators<Scalar, 2>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n, inv_sum);
  else
    detail::numerators<Scalar, detail::kGather>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n,
                                                inv_sum);
}

template <class Scalar>
inline void softmax_backward(const Scalar* p, Index ldp, Scalar* dz, Index ld, const std::int8_t* buckets, Index ldb,
                             Index rows, Index kend, Index causal_row0, Index n, Scalar* hist, Index stride,
                             int slots, const Scalar* dots = nullptr) noexcept {
  const int nb = slots - 1;  // slot 0 (masked keys) never needs a sum
  if (hist == nullptr)
    detail::backward_rows<Scalar, 0>(p, ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride, dots);
  else if (nb >= 1 && nb <= detail::Ops<Scalar>::register_buckets)
    detail::backward_register_histogram<Scalar>(
        nb, std::make_integer_sequence<int, detail::Ops<Scalar>::register_buckets>(), p, ldp, dz, ld, buckets, ldb,
        rows, kend, causal_row0, n, hist, stride, dots);
  else
    detail::backward_rows<Scalar, -1>(p, ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride, dots);
}

// Like portable::scale_rows; with `stream`, non-temporal stores (see the
// avx512 file for why the layer wants them).
template <class Scalar>
inline void scale_rows(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols,
                       const Scalar* scale, bool stream) noexcept {
  if (!stream) {
    portable::scale_rows<Scalar>(dst, ldd, src, lds, rows, cols, scale, false);
    return;
  }
  using O = detail::Ops<Scalar>;
  constexpr Index W = O::lanes;
  for (Index i = 0; i < rows; ++i) {
    const auto s = O::set1(scale[i]);
    const Scalar* in = src + i * lds;
    Scalar* out = dst + i * ldd;
    if (reinterpret_cast<std::uintptr_t>(out) % sizeof(Scalar) != 0) {  // never for Eigen buffers
      for (Index j = 0; j < cols; ++j) out[j] = in[j] * scale[i];
      continue;
    }
    // Unaligned head up to a 32-byte boundary, streamed body, masked tail.
    const Index head = std::min<Index>(
        cols, static_cast<Index>((32 - reinterpret_cast<std::uintptr_t>(out) % 32) % 32 / sizeof(Scalar)));
    if (head > 0) O::store(out, O::mul(O::load(in, O::prefix(head)), s), O::prefix(head));
    Index j = head;
    for (; j + W <= cols; j += W) O::stream(out + j, O::mul(O::load(in + j), s));
    if (j < cols) O::store(out + j, O::mul(O::load(in + j, O::prefix(cols - j)), s), O::prefix(cols - j));
  }
  _mm_sfence();  // order the streaming stores before anything that reads dst
}

}  // namespace avx2
}  // namespace kernels
}  // namespace synattn

#endif  // AVX2 && FMA
#endif  // SYNATTN_KERNELS_ATTENTION_ROWS_AVX2_HPP
