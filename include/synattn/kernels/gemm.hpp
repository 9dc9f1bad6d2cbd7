// synattn — a packed, blocked GEMM on row-major views, C (m, n) =
// alpha op(A) op(B) + beta C, whose instruction set is chosen at run time:
//
//   kernels/gemm_blocked.inc     the algorithm, written once over the packet of
//   kernels/packet_avx512.hpp    AVX-512 (14 x 32 float tile)
//   kernels/packet_avx2.hpp      AVX2 + FMA (6 x 16 float tile)
//   kernels/packet_portable.hpp  any CPU (4 x 4 scalar tile)
//
// The vector versions are compiled in their packets' target regions, so a
// build with the compiler's default flags (x86-64 baseline, SSE2) carries
// them; which one runs is the kernel registry's `gemm` (kernels/registry.hpp:
// by default the widest set the build carries and the CPU runs, so AVX-512
// on a CPU that has it, else AVX2 + FMA; SYNATTN_KERNEL_ISA=avx2 keeps the
// narrower one).
// That is the point of this file: Eigen's own products follow the compile
// flags, and at SSE2 they run 2-4x slower than at AVX2 + FMA.
// kernels/product.hpp decides when the layer uses it.
//
// No threading inside: the layer parallelises over its own blocks, and the
// result of every element depends on the shapes only (never on the thread
// count or on which thread runs it).
#ifndef SYNATTN_KERNELS_GEMM_HPP
#define SYNATTN_KERNELS_GEMM_HPP

#include <string>

#include "../error.hpp"
#include "../matrix.hpp"
#include "operands.hpp"
#include "registry.hpp"

namespace synattn {
namespace kernels {

// C (m, n) = alpha op(A) op(B) + beta C, where op transposes the operands
// `transpose` names, all row-major, in the registry's kernel_set().gemm ISA: op(A) is (m, k)
// (A is (m, k) with row stride lda, or (k, m) when transposed), op(B) (k, n),
// C (m, n) with row stride ldc. beta == 0 overwrites C without reading it
// (as in BLAS: NaN or garbage in C does not propagate); NaN and infinity in
// A or B do propagate (nothing is skipped for alpha == 0 or zero entries).
// C must not overlap A or B. Throws synattn::Error on negative sizes or a
// leading dimension smaller than its row length.
template <class Scalar>
void gemm(Transpose transpose, Index m, Index n, Index k, Scalar alpha, const Scalar* A, Index lda, const Scalar* B,
          Index ldb, Scalar beta, Scalar* C, Index ldc) {
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "gemm: Scalar must be float or double");
  const bool ta = transposes_lhs(transpose), tb = transposes_rhs(transpose);
  const auto fail = [](const char* arg, Index got, const char* expected) {
    throw Error(std::string("gemm: ") + arg + " = " + std::to_string(got) + ", expected " + expected);
  };
  if (m < 0) fail("m", m, ">= 0");
  if (n < 0) fail("n", n, ">= 0");
  if (k < 0) fail("k", k, ">= 0");
  if (lda < std::max<Index>(1, ta ? m : k)) fail("lda", lda, ta ? ">= max(1, m) (A^T: A is (k, m))" : ">= max(1, k)");
  if (ldb < std::max<Index>(1, tb ? k : n)) fail("ldb", ldb, tb ? ">= max(1, k) (B^T: B is (n, k))" : ">= max(1, n)");
  if (ldc < std::max<Index>(1, n)) fail("ldc", ldc, ">= max(1, n)");
  active_kernels<Scalar>().gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_GEMM_HPP
