// synattn — a packed, blocked GEMM on row-major views, C (m, n) =
// alpha op(A) op(B) + beta C, whose instruction set is chosen at run time:
//
//   kernels/gemm_avx512.hpp    AVX-512F (14 x 32 float tile)
//   kernels/gemm_avx2.hpp      AVX2 + FMA (6 x 16 float tile)
//   kernels/gemm_portable.hpp  any CPU (4 x 4 scalar tile)
//
// The vector versions are compiled by per-function target attributes, so a
// build with the compiler's default flags (x86-64 baseline, SSE2) carries
// them, and the first call picks the best one the CPU runs
// (__builtin_cpu_supports). That is the point of this file: Eigen's own
// products follow the compile flags, and at SSE2 they run 2-4x slower than
// at AVX2 + FMA. kernels/product.hpp decides when the layer uses it.
//
// No threading inside: the layer parallelises over its own blocks, and the
// result of every element depends on the shapes only (never on the thread
// count or on which thread runs it).
#ifndef SYNATTN_KERNELS_GEMM_HPP
#define SYNATTN_KERNELS_GEMM_HPP

#include <atomic>
#include <string>

#include "../error.hpp"
#include "../matrix.hpp"
#include "gemm_avx2.hpp"
#include "gemm_avx512.hpp"
#include "gemm_portable.hpp"
#include "isa.hpp"

namespace synattn {
namespace kernels {

// op(X) = X or X^T.
enum class Op { none, transpose };

// The GEMM's versions are named by KernelIsa (kernels/isa.hpp), as the row
// kernels' are: portable, avx2 and avx512 (none for NEON yet).

// Whether this build carries `isa`'s version and this CPU runs it.
inline bool gemm_isa_supported(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::portable: return true;
#if defined(SYNATTN_HAVE_AVX2_GEMM)
    case KernelIsa::avx2: return cpu_runs(KernelIsa::avx2);
#endif
#if defined(SYNATTN_HAVE_AVX512_GEMM)
    case KernelIsa::avx512: return cpu_runs(KernelIsa::avx512);
#endif
    default: return false;
  }
}

// The fastest version this CPU runs.
inline KernelIsa gemm_best_isa() noexcept {
  if (gemm_isa_supported(KernelIsa::avx512)) return KernelIsa::avx512;
  if (gemm_isa_supported(KernelIsa::avx2)) return KernelIsa::avx2;
  return KernelIsa::portable;
}

namespace gemm_detail {
// The chosen version (-1: not chosen yet). An atomic int so that concurrent
// first calls agree without a lock; it is meant to be set before the work
// starts (tests), not changed while products run.
inline std::atomic<int>& gemm_isa_state() noexcept {
  static std::atomic<int> state{-1};
  return state;
}
}  // namespace gemm_detail

// The version gemm() runs: gemm_best_isa() unless set_gemm_isa() chose another.
inline KernelIsa gemm_isa() noexcept {
  int s = gemm_detail::gemm_isa_state().load(std::memory_order_relaxed);
  if (s < 0) {
    s = static_cast<int>(gemm_best_isa());
    gemm_detail::gemm_isa_state().store(s, std::memory_order_relaxed);
  }
  return static_cast<KernelIsa>(s);
}

// Forces gemm() to run `isa` (for tests and benchmarks). Throws synattn::Error
// if this build or CPU cannot run it.
inline void set_gemm_isa(KernelIsa isa) {
  if (!gemm_isa_supported(isa))
    throw Error(std::string("set_gemm_isa: isa = ") + to_string(isa) +
                " is not available (expected an instruction set this build carries and this CPU runs; best here: " +
                to_string(gemm_best_isa()) + ")");
  gemm_detail::gemm_isa_state().store(static_cast<int>(isa), std::memory_order_relaxed);
}

// C (m, n) = alpha op_a(A) op_b(B) + beta C, all row-major: op(A) is (m, k)
// (A is (m, k) with row stride lda, or (k, m) when transposed), op(B) (k, n),
// C (m, n) with row stride ldc. beta == 0 overwrites C without reading it
// (as in BLAS: NaN or garbage in C does not propagate); NaN and infinity in
// A or B do propagate (nothing is skipped for alpha == 0 or zero entries).
// C must not overlap A or B. Throws synattn::Error on negative sizes or a
// leading dimension smaller than its row length.
template <class Scalar>
void gemm(Op op_a, Op op_b, Index m, Index n, Index k, Scalar alpha, const Scalar* A, Index lda, const Scalar* B,
          Index ldb, Scalar beta, Scalar* C, Index ldc) {
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "gemm: Scalar must be float or double");
  const bool ta = op_a == Op::transpose, tb = op_b == Op::transpose;
  const auto fail = [](const char* arg, Index got, const char* expected) {
    throw Error(std::string("gemm: ") + arg + " = " + std::to_string(got) + ", expected " + expected);
  };
  if (m < 0) fail("m", m, ">= 0");
  if (n < 0) fail("n", n, ">= 0");
  if (k < 0) fail("k", k, ">= 0");
  if (lda < std::max<Index>(1, ta ? m : k)) fail("lda", lda, ta ? ">= max(1, m) (A^T: A is (k, m))" : ">= max(1, k)");
  if (ldb < std::max<Index>(1, tb ? k : n)) fail("ldb", ldb, tb ? ">= max(1, k) (B^T: B is (n, k))" : ">= max(1, n)");
  if (ldc < std::max<Index>(1, n)) fail("ldc", ldc, ">= max(1, n)");
  switch (gemm_isa()) {
#if defined(SYNATTN_HAVE_AVX512_GEMM)
    case KernelIsa::avx512:
      gemm_avx512::gemm<Scalar>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
#endif
#if defined(SYNATTN_HAVE_AVX2_GEMM)
    case KernelIsa::avx2:
      gemm_avx2::gemm<Scalar>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
#endif
    default:
      gemm_portable::gemm<Scalar>(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
  }
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_GEMM_HPP
