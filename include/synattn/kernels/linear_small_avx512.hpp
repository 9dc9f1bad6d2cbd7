// synattn — C = A B^T for few rows of A, with AVX-512 (float and double):
// the projections of single-sentence inference, where B is an nn.Linear
// weight matrix (n, k) and A holds a handful of tokens.
//
// Eigen's general product packs B (all of the weights) on every call, and at
// 16 rows that packing costs as much as the multiply-adds (measured: half of
// the (1, 16, 256, 4) forward pass). Here each group of 16 (float) / 8
// (double) rows of A is transposed once into a (k, 16) panel, so one register
// holds a column of it, and every weight is read straight from B as an
// embedded broadcast: C^T[o, rows] = sum_k B[o, k] * panel[k, rows], eight
// outputs o at a time (8 accumulators; 9 loads per 8 multiply-adds). No
// packing of B, no horizontal sums; each weight is read once per row group.
//
// Compiled for AVX-512F through a target pragma whatever the build's -march,
// as the row kernels and the GEMM are, so the registry (kernels/registry.hpp)
// decides when it runs: with the avx512 kernel set, the default on a CPU
// with AVX-512.
// kernels/linear_small.hpp dispatches here; tests compare against Eigen's
// product.
#ifndef SYNATTN_KERNELS_LINEAR_SMALL_AVX512_HPP
#define SYNATTN_KERNELS_LINEAR_SMALL_AVX512_HPP

#if !defined(SYNATTN_PORTABLE_KERNELS) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SYNATTN_HAVE_AVX512_LINEAR 1

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "../matrix.hpp"

namespace synattn {
namespace kernels {
namespace avx512 {

// Every function from here to target_end.inc is compiled for
// avx512f,avx2,fma (linear_small takes pointers: no vector crosses the edge).
#include "target_avx512f_begin.inc"

namespace linear_detail {

template <class Scalar>
struct Lanes;

template <>
struct Lanes<float> {
  using V = __m512;
  static constexpr Index size = 16;
  static V zero() noexcept { return _mm512_setzero_ps(); }
  static V load(const float* p) noexcept { return _mm512_load_ps(p); }  // the aligned panel
  static V set1(float v) noexcept { return _mm512_set1_ps(v); }
  static V fma(V a, V b, V c) noexcept { return _mm512_fmadd_ps(a, b, c); }
  static void store(float* p, V v) noexcept { _mm512_store_ps(p, v); }
};

template <>
struct Lanes<double> {
  using V = __m512d;
  static constexpr Index size = 8;
  static V zero() noexcept { return _mm512_setzero_pd(); }
  static V load(const double* p) noexcept { return _mm512_load_pd(p); }
  static V set1(double v) noexcept { return _mm512_set1_pd(v); }
  static V fma(V a, V b, V c) noexcept { return _mm512_fmadd_pd(a, b, c); }
  static void store(double* p, V v) noexcept { _mm512_store_pd(p, v); }
};

// Outputs [o0, o0 + NR) for the rows of one panel: C[i, o0 + c] for i < rows.
template <class Scalar, int NR>
inline void panel_times_rows(const Scalar* panel, const Scalar* B, Index ldb, Scalar* C, Index ldc, Index rows,
                             Index k, Index o0) noexcept {
  using L = Lanes<Scalar>;
  constexpr Index W = L::size;
  typename L::V acc[NR];
  for (int c = 0; c < NR; ++c) acc[c] = L::zero();
  const Scalar* b = B + o0 * ldb;
  for (Index kk = 0; kk < k; ++kk) {
    const typename L::V a = L::load(panel + kk * W);
    for (int c = 0; c < NR; ++c) acc[c] = L::fma(L::set1(b[c * ldb + kk]), a, acc[c]);
  }
  alignas(64) Scalar out[NR][W];
  for (int c = 0; c < NR; ++c) L::store(out[c], acc[c]);
  for (Index i = 0; i < rows; ++i)
    for (int c = 0; c < NR; ++c) C[i * ldc + o0 + c] = out[c][i];
}

template <class Scalar, int... NR>
inline void panel_times_rest(int nr, std::integer_sequence<int, NR...>, const Scalar* panel, const Scalar* B,
                             Index ldb, Scalar* C, Index ldc, Index rows, Index k, Index o0) noexcept {
  using Fn = void (*)(const Scalar*, const Scalar*, Index, Scalar*, Index, Index, Index, Index);
  static constexpr Fn table[] = {&panel_times_rows<Scalar, NR + 1>...};
  table[nr - 1](panel, B, ldb, C, ldc, rows, k, o0);
}

}  // namespace linear_detail

// Number of scalars linear_small needs as `panel` workspace (64-byte aligned).
template <class Scalar>
constexpr Index linear_small_workspace(Index k) noexcept {
  return k * linear_detail::Lanes<Scalar>::size;
}

// C (m, n) = A (m, k) B^T, B (n, k); row-major with leading dimensions lda,
// ldb, ldc. `panel`: linear_small_workspace(k) scalars, 64-byte aligned.
template <class Scalar>
inline void linear_small(const Scalar* A, Index lda, const Scalar* B, Index ldb, Scalar* C, Index ldc, Index m,
                         Index n, Index k, Scalar* panel) noexcept {
  constexpr Index W = linear_detail::Lanes<Scalar>::size;
  constexpr int NR = 8;
  for (Index r0 = 0; r0 < m; r0 += W) {
    const Index rows = std::min(W, m - r0);
    const Scalar* a = A + r0 * lda;
    for (Index kk = 0; kk < k; ++kk) {
      Scalar* col = panel + kk * W;
      for (Index i = 0; i < rows; ++i) col[i] = a[i * lda + kk];
      for (Index i = rows; i < W; ++i) col[i] = Scalar(0);
    }
    Scalar* c = C + r0 * ldc;
    Index o0 = 0;
    for (; o0 + NR <= n; o0 += NR)
      linear_detail::panel_times_rows<Scalar, NR>(panel, B, ldb, c, ldc, rows, k, o0);
    if (o0 < n)
      linear_detail::panel_times_rest<Scalar>(static_cast<int>(n - o0), std::make_integer_sequence<int, NR - 1>(),
                                              panel, B, ldb, c, ldc, rows, k, o0);
  }
}

#include "target_end.inc"

}  // namespace avx512
}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_HAVE_AVX512_LINEAR
#endif  // SYNATTN_KERNELS_LINEAR_SMALL_AVX512_HPP
