// synattn — the attention row kernels with AVX-512 (F, BW, VL, DQ), float
// and double: the same functions, arguments and results as
// kernels/attention_rows_portable.hpp (its comment states the conventions),
// which tests compare this file against. Compiled only when the compiler
// targets AVX-512; kernels/attention_rows.hpp picks it then.
//
// Why these are faster than the portable loops:
// - The bias gather is a register permute: the <= 16 (float) / <= 8 (double)
//   entry table sits in one register and vpermps looks up 16 keys at once
//   (vpermt2ps for <= 32 / 16 entries, a hardware gather beyond), instead of
//   one scalar load per key.
// - Row tails use masked loads and stores, so there is no scalar epilogue.
// - The float exp works in base 2 straight from the score and the row
//   maximum: one FMA forms the argument, vreduceps and vscalefps split and
//   apply the power of two (Ops<float>::with_exp_minus says why this is as
//   accurate as subtracting the maximum first).
// - Each row prefetches the next one, whose scores come from L2 and whose
//   buckets and (backward) probabilities come from memory.
// - The backward's bucket histogram keeps one accumulator register per bucket
//   (up to 16 buckets: every default linear table) and adds each packet of
//   dscores under a compare mask, instead of a scalar scatter per key with
//   store-to-load chains; the registers are reduced once per block of rows.
#ifndef SYNATTN_KERNELS_ATTENTION_ROWS_AVX512_HPP
#define SYNATTN_KERNELS_ATTENTION_ROWS_AVX512_HPP

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define SYNATTN_HAVE_AVX512_KERNELS 1

#include <Eigen/Core>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "attention_rows_portable.hpp"

namespace synattn {
namespace kernels {
namespace avx512 {
namespace detail {

// One packet of Scalar and its key-bucket indices.
template <class Scalar>
struct Ops;

template <>
struct Ops<float> {
  using V = __m512;
  using I = __m512i;  // 16 x int32 indices
  using M = __mmask16;
  static constexpr Index lanes = 16;
  static M tail(Index r) noexcept { return static_cast<M>((1u << r) - 1u); }  // r < 16
  static M prefix(Index r) noexcept { return r >= lanes ? static_cast<M>(0xFFFFu) : tail(r); }
  static V zero() noexcept { return _mm512_setzero_ps(); }
  static V set1(float v) noexcept { return _mm512_set1_ps(v); }
  static V load(const float* p) noexcept { return _mm512_loadu_ps(p); }
  static V load(const float* p, M m) noexcept { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v) noexcept { _mm512_storeu_ps(p, v); }
  static void store(float* p, V v, M m) noexcept { _mm512_mask_storeu_ps(p, m, v); }
  static void stream(float* p, V v) noexcept { _mm512_stream_ps(p, v); }  // p 64-byte aligned
  static V add(V a, V b) noexcept { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) noexcept { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) noexcept { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) noexcept { return _mm512_max_ps(a, b); }
  static V mask_max(V src, M m, V a, V b) noexcept { return _mm512_mask_max_ps(src, m, a, b); }
  static V mask_add(V src, M m, V a, V b) noexcept { return _mm512_mask_add_ps(src, m, a, b); }
  static V maskz(M m, V a) noexcept { return _mm512_maskz_mov_ps(m, a); }
  // 2^d for d <= 0, flushed to exactly 0 where d < -126 (below the smallest
  // normal, so no result is subnormal): 2^floor(d) 2^f with f = d - floor(d)
  // in [0, 1) from one vreduceps (exact), 2^f by a degree-6 polynomial fitted
  // to relative error 1.9e-9 on [0, 1), and vscalefps, which applies
  // 2^floor(d) itself and whose zero-masking does the flush: 9 instructions,
  // max relative error 7.4e-8 measured over [-126, 0]. Masked keys (d = -inf)
  // compute NaN in lanes the mask then zeroes.
  static V exp2_flushed(V d) noexcept {
    const M keep = _mm512_cmp_ps_mask(d, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
    const V f = _mm512_reduce_ps(d, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    V p = _mm512_set1_ps(2.1702253434e-4f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.2439688435e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6788406372e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5483341217e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022983015e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314700365e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(keep, p, d);
  }
  // Calls body(e) with e(v) = exp(v - max), flushed to 0 below the smallest
  // normal, for v <= max. In base 2 the argument is one FMA, d = v log2(e) -
  // max log2(e), instead of a subtraction, a multiplication and the two-FMA
  // Cody-Waite reduction of exp. Accuracy: rounding d costs at most
  // |d| 2^-24 in base-2 units, a relative error of |v - max| 2^-24 in the
  // result, the same bound as rounding v - max to float (which every float
  // softmax does first); rounding the per-row constant max log2(e) scales every
  // numerator of the row alike, which the normalisation cancels, as long as
  // that rounding is small: below 2^-3 for |max| < 2^20. Beyond (scores that
  // large are rare), the subtraction comes first.
  template <class Body>
  static auto with_exp_minus(float max, Body&& body) noexcept {
    const V log2e = _mm512_set1_ps(1.44269504088896341f);
    if (std::abs(max) < 1048576.0f) {  // 2^20: see above
      const V shift = _mm512_set1_ps(static_cast<float>(-1.44269504088896341 * static_cast<double>(max)));
      return body([=](V v) noexcept { return exp2_flushed(_mm512_fmadd_ps(v, log2e, shift)); });
    }
    const V vmax = _mm512_set1_ps(max);
    return body([=](V v) noexcept { return exp2_flushed(_mm512_mul_ps(_mm512_sub_ps(v, vmax), log2e)); });
  }
  // Butterfly reductions; GCC 12's _mm512_reduce_* trip -Wuninitialized.
  template <class Op>
  static float reduce(V a, Op op) noexcept {
    // The all-lanes masked forms: the unmasked ones trip GCC 12's
    // -Wuninitialized on their _mm512_undefined_ps() source.
    a = op(a, _mm512_mask_shuffle_f32x4(a, 0xFFFF, a, a, 0x4E));  // swap 256-bit halves
    a = op(a, _mm512_mask_shuffle_f32x4(a, 0xFFFF, a, a, 0xB1));  // swap 128-bit lanes
    a = op(a, _mm512_mask_permute_ps(a, 0xFFFF, a, 0x4E));        // swap 64-bit pairs
    a = op(a, _mm512_mask_permute_ps(a, 0xFFFF, a, 0xB1));        // swap neighbours
    return _mm512_cvtss_f32(a);
  }
  static float reduce_max(V a) noexcept { return reduce(a, [](V x, V y) { return _mm512_max_ps(x, y); }); }
  static float reduce_add(V a) noexcept { return reduce(a, [](V x, V y) { return _mm512_add_ps(x, y); }); }
  // Bucket indices of 16 keys, sign-extended (-1: masked).
  static I indices(const std::int8_t* b) noexcept {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  }
  static I indices(const std::int8_t* b, M m) noexcept { return _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b)); }
  // Raw buckets of 16 keys, for the histogram's byte compares.
  static __m128i bytes(const std::int8_t* b) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)); }
  static __m128i bytes(const std::int8_t* b, M m) noexcept { return _mm_maskz_loadu_epi8(m, b); }
  static M equal(__m128i b, int k) noexcept { return _mm_cmpeq_epi8_mask(b, _mm_set1_epi8(static_cast<char>(k))); }
  // Table lookups by bucket index: t0/t1 hold buckets [0, 16) and [16, 32).
  static V permute(I idx, V t0) noexcept { return _mm512_permutexvar_ps(idx, t0); }
  static V permute2(I idx, V t0, V t1) noexcept { return _mm512_permutex2var_ps(t0, idx, t1); }
  static V gather(I idx, const float* base) noexcept { return _mm512_i32gather_ps(idx, base, 4); }
  static V blend_last(V a, float v) noexcept { return _mm512_mask_mov_ps(a, 0x8000, _mm512_set1_ps(v)); }
};

template <>
struct Ops<double> {
  using V = __m512d;
  using I = __m512i;  // 8 x int64 indices
  using M = __mmask8;
  static constexpr Index lanes = 8;
  static M tail(Index r) noexcept { return static_cast<M>((1u << r) - 1u); }  // r < 8
  static M prefix(Index r) noexcept { return r >= lanes ? static_cast<M>(0xFFu) : tail(r); }
  static V zero() noexcept { return _mm512_setzero_pd(); }
  static V set1(double v) noexcept { return _mm512_set1_pd(v); }
  static V load(const double* p) noexcept { return _mm512_loadu_pd(p); }
  static V load(const double* p, M m) noexcept { return _mm512_maskz_loadu_pd(m, p); }
  static void store(double* p, V v) noexcept { _mm512_storeu_pd(p, v); }
  static void store(double* p, V v, M m) noexcept { _mm512_mask_storeu_pd(p, m, v); }
  static void stream(double* p, V v) noexcept { _mm512_stream_pd(p, v); }  // p 64-byte aligned
  static V add(V a, V b) noexcept { return _mm512_add_pd(a, b); }
  static V sub(V a, V b) noexcept { return _mm512_sub_pd(a, b); }
  static V mul(V a, V b) noexcept { return _mm512_mul_pd(a, b); }
  static V fma(V a, V b, V c) noexcept { return _mm512_fmadd_pd(a, b, c); }
  static V max(V a, V b) noexcept { return _mm512_max_pd(a, b); }
  static V mask_max(V src, M m, V a, V b) noexcept { return _mm512_mask_max_pd(src, m, a, b); }
  static V mask_add(V src, M m, V a, V b) noexcept { return _mm512_mask_add_pd(src, m, a, b); }
  static V maskz(M m, V a) noexcept { return _mm512_maskz_mov_pd(m, a); }
  // Eigen's exp, flushed to exactly 0 below the smallest normal number.
  static V exp_flushed(V a) noexcept {
    const V e = Eigen::internal::pexp<Eigen::internal::Packet8d>(a);
    return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(e, _mm512_set1_pd(std::numeric_limits<double>::min()), _CMP_GE_OQ),
                               e);
  }
  // As Ops<float>::with_exp_minus.
  template <class Body>
  static auto with_exp_minus(double max, Body&& body) noexcept {
    const V vmax = _mm512_set1_pd(max);
    return body([=](V v) noexcept { return exp_flushed(_mm512_sub_pd(v, vmax)); });
  }
  template <class Op>
  static double reduce(V a, Op op) noexcept {
    // The all-lanes masked forms: the unmasked ones trip GCC 12's
    // -Wuninitialized on their _mm512_undefined_pd() source.
    a = op(a, _mm512_mask_shuffle_f64x2(a, 0xFF, a, a, 0x4E));  // swap 256-bit halves
    a = op(a, _mm512_mask_shuffle_f64x2(a, 0xFF, a, a, 0xB1));  // swap 128-bit lanes
    a = op(a, _mm512_mask_permute_pd(a, 0xFF, a, 0x55));        // swap neighbours
    return _mm512_cvtsd_f64(a);
  }
  static double reduce_max(V a) noexcept { return reduce(a, [](V x, V y) { return _mm512_max_pd(x, y); }); }
  static double reduce_add(V a) noexcept { return reduce(a, [](V x, V y) { return _mm512_add_pd(x, y); }); }
  static I indices(const std::int8_t* b) noexcept {
    return _mm512_cvtepi8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
  }
  static I indices(const std::int8_t* b, M m) noexcept { return _mm512_cvtepi8_epi64(_mm_maskz_loadu_epi8(m, b)); }
  static __m128i bytes(const std::int8_t* b) noexcept {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b));
  }
  static __m128i bytes(const std::int8_t* b, M m) noexcept { return _mm_maskz_loadu_epi8(m, b); }
  // Only the low 8 byte lanes matter (the mask register's low 8 bits).
  static M equal(__m128i b, int k) noexcept {
    return static_cast<M>(_mm_cmpeq_epi8_mask(b, _mm_set1_epi8(static_cast<char>(k))));
  }
  // t0/t1 hold buckets [0, 8) and [8, 16).
  static V permute(I idx, V t0) noexcept { return _mm512_permutexvar_pd(idx, t0); }
  static V permute2(I idx, V t0, V t1) noexcept { return _mm512_permutex2var_pd(t0, idx, t1); }
  static V gather(I idx, const double* base) noexcept { return _mm512_i64gather_pd(idx, base, 8); }
  static V blend_last(V a, double v) noexcept { return _mm512_mask_mov_pd(a, 0x80, _mm512_set1_pd(v)); }
};

// How the bias of a packet of keys is looked up.
enum class Lookup { None, Permute, Permute2, Gather };

// The tables are indexed by the raw bucket, so no add per packet turns buckets
// into slots: bucket b sits in lane b, and the masked bucket -1, whose low
// index bits select the last lane (vpermps reads 4 of them, vpermt2ps 5),
// finds slot 0 (-inf) there; the gather reads from shifted + 1.
template <class Scalar, Lookup L>
struct BiasLookup {
  using O = Ops<Scalar>;
  typename O::V t0, t1;
  const Scalar* base;
  BiasLookup(const Scalar* shifted, int slots) noexcept : base(shifted == nullptr ? nullptr : shifted + 1) {
    // Masked loads: `shifted` holds exactly `slots` values.
    t0 = t1 = O::zero();
    if constexpr (L == Lookup::Permute || L == Lookup::Permute2) {  // `shifted` is null without a bias
      const Index buckets = slots - 1;  // < lanes (Permute) or < 2 lanes (Permute2): the last lane is free
      t0 = O::load(shifted + 1, O::prefix(buckets));
      if constexpr (L == Lookup::Permute) {
        t0 = O::blend_last(t0, shifted[0]);
      } else {
        if (buckets > O::lanes) t1 = O::load(shifted + 1 + O::lanes, O::prefix(buckets - O::lanes));
        t1 = O::blend_last(t1, shifted[0]);
      }
    }
  }
  typename O::V operator()(typename O::I idx) const noexcept {
    if constexpr (L == Lookup::Permute) return O::permute(idx, t0);
    if constexpr (L == Lookup::Permute2) return O::permute2(idx, t0, t1);
    if constexpr (L == Lookup::Gather) return O::gather(idx, base);
    return O::zero();
  }
};

template <class Scalar, Lookup L>
void numerators(Scalar* z, Index ld, const std::int8_t* buckets, Index ldb, const Scalar* shifted, int slots,
                Index rows, Index kend, Index causal_row0, Index n, Scalar* inv_sum) noexcept {
  using O = Ops<Scalar>;
  using V = typename O::V;
  constexpr Index W = O::lanes;
  const BiasLookup<Scalar, L> lookup(shifted, slots);
  const V minus_inf = O::set1(-std::numeric_limits<Scalar>::infinity());
  for (Index i = 0; i < rows; ++i) {
    Scalar* row = z + i * ld;
    const std::int8_t* b = buckets + i * ldb;
    Scalar* const row_next = next_row(row, i, rows, ld);
    const std::int8_t* const b_next = L == Lookup::None ? nullptr : next_row(b, i, rows, ldb);
    const Index ke = visible_keys(kend, causal_row0, i);
    std::fill(row + ke, row + n, Scalar(0));
    inv_sum[i] = Scalar(0);
    if (ke == 0) continue;
    const Index full = ke / W * W;
    const auto tail = O::tail(ke - full);
    // Pass 1: add the bias, keep the row maximum in four registers (one
    // running maximum would be a chain of dependent vmaxps, 4 cycles per packet
    // where the rest of the loop needs 2).
    const auto biased = [&](Index j) noexcept {
      V v = O::load(row + j);
      if constexpr (L != Lookup::None) {
        v = O::add(v, lookup(O::indices(b + j)));
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
      if constexpr (L != Lookup::None) {
        v = O::add(v, lookup(O::indices(b + full, tail)));
        O::store(row + full, v, tail);
      }
      vmax1 = O::mask_max(vmax1, tail, vmax1, v);
    }
    const Scalar max = O::reduce_max(O::max(O::max(vmax0, vmax1), O::max(vmax2, vmax3)));
    if (max == -std::numeric_limits<Scalar>::infinity()) {
      std::fill(row, row + ke, Scalar(0));
      continue;
    }
    // Pass 2: exp(score - max), flushed to 0 below the smallest normal, and the sum.
    const Scalar sum = O::with_exp_minus(max, [&](auto exp_minus_max) noexcept {
      V acc0 = O::zero(), acc1 = O::zero();
      Index j = 0;
      for (; j + 2 * W <= full; j += 2 * W) {  // two chains: exp's latency overlaps
        prefetch_next_row(row_next + j, row_next + j + W, b_next == nullptr ? nullptr : b_next + j);
        const V e0 = exp_minus_max(O::load(row + j)), e1 = exp_minus_max(O::load(row + j + W));
        O::store(row + j, e0);
        O::store(row + j + W, e1);
        acc0 = O::add(acc0, e0);
        acc1 = O::add(acc1, e1);
      }
      for (; j < full; j += W) {
        const V e = exp_minus_max(O::load(row + j));
        O::store(row + j, e);
        acc0 = O::add(acc0, e);
      }
      if (full < ke) {
        const V e = O::maskz(tail, exp_minus_max(O::load(row + full, tail)));
        O::store(row + full, e, tail);
        acc1 = O::add(acc1, e);
      }
      return O::reduce_add(O::add(acc0, acc1));
    });
    inv_sum[i] = Scalar(1) / sum;
  }
}

// acc[k] += g where bucket == k, for k < NB, unrolled by the fold (a `for
// (k < NB)` loop may stay rolled at -O2 and keep acc[] in memory).
template <class O, int... K>
inline void add_to_buckets(typename O::V* acc, __m128i bk, typename O::V g, std::integer_sequence<int, K...>) noexcept {
  ((acc[K] = O::mask_add(acc[K], O::equal(bk, K), acc[K], g)), ...);
}

// dz = p * (dz - <p, dz>) on one row's visible prefix; returns nothing, the
// histogram variants below wrap it.
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
    const auto tail = O::tail(ke - full);
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
      if constexpr (NB > 0) add_to_buckets<O>(acc, O::bytes(b + j), g, std::make_integer_sequence<int, NB>());
    }
    if (full < ke) {
      // Lanes past the tail load p = 0, so g = 0 there and the histogram
      // may add them to any bucket.
      const V g = O::mul(O::load(prow + full, tail), O::sub(O::load(row + full, tail), dot));
      O::store(row + full, g, tail);
      if constexpr (NB > 0) add_to_buckets<O>(acc, O::bytes(b + full, tail), g, std::make_integer_sequence<int, NB>());
    }
    if constexpr (NB < 0)  // many buckets: the portable interleaved scatter
      if (hist != nullptr) portable::scatter_histogram_row(row, b, ke, hist, stride);
  }
  if constexpr (NB > 0)
    for (int k = 0; k < NB; ++k) hist[k + 1] += O::reduce_add(acc[k]);
}

constexpr int kRegisterBuckets = 16;

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
  using detail::Lookup;
  constexpr int W = static_cast<int>(detail::Ops<Scalar>::lanes);
  if (shifted == nullptr)
    detail::numerators<Scalar, Lookup::None>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n, inv_sum);
  else if (slots <= W)
    detail::numerators<Scalar, Lookup::Permute>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n,
                                                inv_sum);
  else if (slots <= 2 * W)
    detail::numerators<Scalar, Lookup::Permute2>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n,
                                                 inv_sum);
  else
    detail::numerators<Scalar, Lookup::Gather>(z, ld, buckets, ldb, shifted, slots, rows, kend, causal_row0, n,
                                               inv_sum);
}

template <class Scalar>
inline void softmax_backward(const Scalar* p, Index ldp, Scalar* dz, Index ld, const std::int8_t* buckets, Index ldb,
                             Index rows, Index kend, Index causal_row0, Index n, Scalar* hist, Index stride,
                             int slots, const Scalar* dots = nullptr) noexcept {
  const int nb = slots - 1;  // slot 0 (masked keys) never needs a sum
  if (hist == nullptr)
    detail::backward_rows<Scalar, 0>(p, ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride, dots);
  else if (nb >= 1 && nb <= detail::kRegisterBuckets)
    detail::backward_register_histogram<Scalar>(nb, std::make_integer_sequence<int, detail::kRegisterBuckets>(), p,
                                                ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride,
                                                dots);
  else
    detail::backward_rows<Scalar, -1>(p, ldp, dz, ld, buckets, ldb, rows, kend, causal_row0, n, hist, stride, dots);
}

// Like portable::scale_rows; with `stream`, non-temporal stores: for a
// destination far larger than the caches (the layer's probability buffer,
// written once per forward pass and read back only by the backward pass) they
// skip reading each destination line before overwriting it.
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
    // Unaligned head up to a 64-byte boundary, streamed body, masked tail.
    const Index head = std::min<Index>(
        cols, static_cast<Index>((64 - reinterpret_cast<std::uintptr_t>(out) % 64) % 64 / sizeof(Scalar)));
    if (reinterpret_cast<std::uintptr_t>(out) % sizeof(Scalar) != 0) {  // never for Eigen buffers
      for (Index j = 0; j < cols; ++j) out[j] = in[j] * scale[i];
      continue;
    }
    if (head > 0) O::store(out, O::mul(O::load(in, O::tail(head)), s), O::tail(head));
    Index j = head;
    for (; j + W <= cols; j += W) O::stream(out + j, O::mul(O::load(in + j), s));
    if (j < cols) O::store(out + j, O::mul(O::load(in + j, O::tail(cols - j)), s), O::tail(cols - j));
  }
  _mm_sfence();  // order the streaming stores before anything that reads dst
}

}  // namespace avx512
}  // namespace kernels
}  // namespace synattn

#endif  // AVX-512 F/BW/VL/DQ
#endif  // SYNATTN_KERNELS_ATTENTION_ROWS_AVX512_HPP
