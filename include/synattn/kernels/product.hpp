// synattn — C (+)= alpha op(A) op(B) on row-major Eigen views, through Eigen's
// product or the run-time-dispatched GEMM of kernels/gemm.hpp, whichever was
// measured faster for the product's shape at this build's flags. Every
// product of the attention layer and of nn::Linear goes through it.
//
// Eigen's products are compiled for the build's flags: a build for the
// x86-64 baseline (the compiler's default: SSE2, no FMA) gets SSE2 products;
// the GEMM runs the ISA of the kernel registry's set (kernels/registry.hpp:
// AVX2 + FMA on a CPU that has them) whatever the flags. The rule
// (gemm_rule) is one pair of thresholds per Eigen ISA, from
// bench/bench_gemm.cpp (see there and docs/benchmarks.md for the numbers).
// With the portable kernel set (SYNATTN_KERNEL_ISA=portable, or a build
// defining SYNATTN_PORTABLE_KERNELS) every product is Eigen's.
#ifndef SYNATTN_KERNELS_PRODUCT_HPP
#define SYNATTN_KERNELS_PRODUCT_HPP

#include <Eigen/Core>

#include <string>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/cpu_features.hpp"
#include "gemm.hpp"
#include "operands.hpp"
#include "registry.hpp"

namespace synattn {
namespace kernels {

// Where the dispatched GEMM beats Eigen's product: m and n (the rows and
// columns of C) both at least `min_side` and m n k at least `min_volume`.
struct GemmRule {
  Index min_side;
  Index min_volume;
};

// The rule for Eigen compiled with the features `build`, against the AVX2 +
// FMA GEMM (the only one that runs by default): the smallest shapes from
// which the GEMM won. bench/bench_gemm.cpp, eigen/ against gemm/, 18 shapes
// in float and double, medians of 3, one thread, AMD EPYC Zen 3, 2026-12-02
// (docs/benchmarks.md has the command):
// - no AVX2 + FMA (measured at the x86-64 baseline, Eigen at SSE2; AVX
//   without FMA is taken to be alike, unmeasured): inside the rule the GEMM
//   is 1.28-4.96x as fast (32 of 32); outside it Eigen wins at 8 x 8 x 8
//   float (0.65x) and 4 x 512 x 512 (0.79x float, 0.98x double).
// - AVX2 + FMA (-march=native): inside the rule the GEMM is 0.87-1.67x as
//   fast (faster in 19 of 24; the per-head 64 x 32 x 64 scores 1.4-1.65x);
//   outside it Eigen is faster in 9 of 12 (16 rows: 0.69-0.97x in float,
//   4 rows: 0.6x, 32 x 32 x 32: 0.69-0.76x).
// - AVX-512 (-march=native on an AVX-512 CPU; Eigen's AVX-512 product),
//   measured on an AMD EPYC Zen 4 (docs/benchmarks.md, "On AVX-512"):
//   inside the AVX2 rule the AVX2 GEMM was 1.05-1.39x as fast in 24 of 24
//   (2026-12-02) and faster in 20 of 24, 0.88-1.22x, on a noisier run
//   (2026-12-03); outside it Eigen wins the 4- and 16-row products
//   (0.54-0.85x in float) and 8 x 8 x 8. So the same rule as for AVX2 + FMA;
//   end to end the short-sentence batches got 1.4x faster.
constexpr GemmRule gemm_rule(CpuFeature build) noexcept {
  if (has(build, CpuFeature::avx2 | CpuFeature::fma)) return {32, 64 * 64 * 32};
  return {8, 16 * 16 * 16};
}

// "m, n >= 8 and m n k >= 4096": the rule as build_info() prints it.
inline std::string gemm_rule_text(const GemmRule& rule) {
  return "m, n >= " + std::to_string(rule.min_side) + " and m n k >= " + std::to_string(rule.min_volume);
}

// Whether product() runs the dispatched GEMM for C (m, n) = op(A) op(B) with
// inner size k, in this translation unit (its flags chose Eigen's ISA) with
// the registry's kernel set now.
inline bool uses_dispatched_gemm(Index m, Index n, Index k) {
  if (kernel_set().gemm == KernelIsa::portable) return false;
  constexpr GemmRule rule = gemm_rule(build_cpu_features());
  if (m < rule.min_side || n < rule.min_side) return false;
  // m n k in double: no overflow for any shape that fits in memory.
  return double(m) * double(n) * double(k) >= double(rule.min_volume);
}

// C (m, n) = alpha op(A) op(B), or C += alpha op(A) op(B) with
// Accumulate::add, where op transposes the operands `transpose` names; all
// three are row-major views with contiguous rows (blocks of row-major
// matrices qualify) and C must not overlap A or B. Throws synattn::Error if
// the shapes do not agree.
template <class Scalar>
void product(Eigen::Ref<RowMajorMatrix<Scalar>> C, const Eigen::Ref<const RowMajorMatrix<Scalar>>& A,
             const Eigen::Ref<const RowMajorMatrix<Scalar>>& B, Transpose transpose = Transpose::none,
             Accumulate accumulate = Accumulate::overwrite, Scalar alpha = Scalar(1)) {
  const bool ta = transposes_lhs(transpose), tb = transposes_rhs(transpose);
  const Index m = ta ? A.cols() : A.rows(), k = ta ? A.rows() : A.cols();
  const Index kb = tb ? B.cols() : B.rows(), n = tb ? B.rows() : B.cols();
  if (k != kb || C.rows() != m || C.cols() != n)
    throw Error("product: C (" + std::to_string(C.rows()) + ", " + std::to_string(C.cols()) + ") = op(A) (" +
                std::to_string(m) + ", " + std::to_string(k) + ") op(B) (" + std::to_string(kb) + ", " +
                std::to_string(n) + "): expected inner sizes to agree and C to be (" + std::to_string(m) + ", " +
                std::to_string(n) + ")");
  const bool add = accumulate == Accumulate::add;
  if (uses_dispatched_gemm(m, n, k)) {
    gemm<Scalar>(transpose, m, n, k, alpha, A.data(), A.outerStride(), B.data(), B.outerStride(),
                 add ? Scalar(1) : Scalar(0), C.data(), C.outerStride());
    return;
  }
  // Eigen: alpha rides on the left operand, as the layer always wrote it
  // ((Q * s) * K^T); Eigen folds that factor into its GEMM's alpha, so these
  // are the products the layer computed before this file existed. Overwrite
  // is zero-then-add, which is what Eigen's own `=` does for a GEMM and the
  // same bits for its small coefficient-wise products (0 + x is x), and it
  // halves the products every translation unit compiles.
  if (!add) C.setZero();
  switch (transpose) {
    case Transpose::none: C.noalias() += (A * alpha) * B; break;
    case Transpose::lhs: C.noalias() += (A.transpose() * alpha) * B; break;
    case Transpose::rhs: C.noalias() += (A * alpha) * B.transpose(); break;
    case Transpose::both: C.noalias() += (A.transpose() * alpha) * B.transpose(); break;
  }
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_PRODUCT_HPP
