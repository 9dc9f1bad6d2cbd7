// synattn — C (+)= alpha op(A) op(B) on row-major Eigen views, through Eigen's
// product or the run-time-dispatched GEMM of kernels/gemm.hpp, whichever is
// faster for this build on this CPU. Every product of the attention layer
// goes through it.
//
// Eigen's products are compiled for the build's flags. A build for the
// x86-64 baseline (the compiler's default: SSE2, no FMA) gets SSE2 products,
// 2-4x slower than AVX2 + FMA ones; the dispatched GEMM carries an AVX2 + FMA
// and an AVX-512 version whatever the flags, and its AVX2 version beats
// Eigen's AVX2 product too (1.1-1.4x on the layer's and the Transformer's
// shapes, bench/bench_gemm.cpp, AMD Zen 3). So by default (`automatic`) the
// dispatched GEMM runs whenever the CPU has AVX2 + FMA, unless the build
// targets AVX-512: there Eigen's own AVX-512 product is what our AVX-512
// tables were measured with, and the dispatched AVX-512 version has not been
// measured against it. A build defining SYNATTN_PORTABLE_KERNELS keeps
// Eigen's product. SYNATTN_GEMM=eigen|dispatch|auto in the environment (read
// at the first product) or set_gemm_path() overrides the choice.
#ifndef SYNATTN_KERNELS_PRODUCT_HPP
#define SYNATTN_KERNELS_PRODUCT_HPP

#include <Eigen/Core>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/cpu_features.hpp"
#include "gemm.hpp"

namespace synattn {
namespace kernels {

// Which operands of product() are transposed.
enum class Transpose { none, lhs, rhs, both };

// Whether product() adds to C or overwrites it.
enum class Accumulate { no, yes };

// Who computes product(): `automatic` picks (see the top of this file).
enum class GemmPath { automatic, eigen, dispatch };

namespace gemm_detail {
// -1: not read yet; otherwise a GemmPath.
inline std::atomic<int>& gemm_path_state() noexcept {
  static std::atomic<int> state{-1};
  return state;
}
}  // namespace gemm_detail

// The path setting: set_gemm_path()'s, else SYNATTN_GEMM's (read once), else
// automatic. Throws synattn::Error if SYNATTN_GEMM holds anything other than
// eigen, dispatch or auto (on every call, until set_gemm_path() is called).
inline GemmPath gemm_path() {
  const int s = gemm_detail::gemm_path_state().load(std::memory_order_relaxed);
  if (s >= 0) return static_cast<GemmPath>(s);
  GemmPath path = GemmPath::automatic;
  if (const char* env = std::getenv("SYNATTN_GEMM")) {
    if (std::strcmp(env, "eigen") == 0)
      path = GemmPath::eigen;
    else if (std::strcmp(env, "dispatch") == 0)
      path = GemmPath::dispatch;
    else if (std::strcmp(env, "auto") != 0 && env[0] != '\0')
      throw Error(std::string("gemm_path: environment variable SYNATTN_GEMM = '") + env +
                  "', expected eigen, dispatch or auto");
  }
  gemm_detail::gemm_path_state().store(static_cast<int>(path), std::memory_order_relaxed);
  return path;
}

// Sets the path for every later product (tests, benchmarks). Not meant to be
// changed while products run on other threads: results would then mix paths.
inline void set_gemm_path(GemmPath path) noexcept {
  gemm_detail::gemm_path_state().store(static_cast<int>(path), std::memory_order_relaxed);
}

// Whether this translation unit's Eigen products use AVX-512.
constexpr bool build_targets_avx512() noexcept { return has(build_cpu_features(), CpuFeature::avx512f); }

// Whether product() runs the dispatched GEMM (true) or Eigen's product.
inline bool uses_dispatched_gemm() {
  switch (gemm_path()) {
    case GemmPath::eigen: return false;
    case GemmPath::dispatch: return true;
    default:
#if defined(SYNATTN_PORTABLE_KERNELS)
      return false;  // the portable build runs none of our vector code unless asked to
#else
      return !build_targets_avx512() && gemm_best_isa() != KernelIsa::portable;
#endif
  }
}

// C (m, n) = alpha op(A) op(B), or C += alpha op(A) op(B) with
// Accumulate::yes, where op transposes the operands `transpose` names; all
// three are row-major views with contiguous rows (blocks of row-major
// matrices qualify) and C must not overlap A or B. Throws synattn::Error if
// the shapes do not agree.
template <class Scalar>
void product(Eigen::Ref<RowMajorMatrix<Scalar>> C, const Eigen::Ref<const RowMajorMatrix<Scalar>>& A,
             const Eigen::Ref<const RowMajorMatrix<Scalar>>& B, Transpose transpose = Transpose::none,
             Accumulate accumulate = Accumulate::no, Scalar alpha = Scalar(1)) {
  const bool ta = transpose == Transpose::lhs || transpose == Transpose::both;
  const bool tb = transpose == Transpose::rhs || transpose == Transpose::both;
  const Index m = ta ? A.cols() : A.rows(), k = ta ? A.rows() : A.cols();
  const Index kb = tb ? B.cols() : B.rows(), n = tb ? B.rows() : B.cols();
  if (k != kb || C.rows() != m || C.cols() != n)
    throw Error("product: C (" + std::to_string(C.rows()) + ", " + std::to_string(C.cols()) + ") = op(A) (" +
                std::to_string(m) + ", " + std::to_string(k) + ") op(B) (" + std::to_string(kb) + ", " +
                std::to_string(n) + "): expected inner sizes to agree and C to be (" + std::to_string(m) + ", " +
                std::to_string(n) + ")");
  const bool add = accumulate == Accumulate::yes;
  if (uses_dispatched_gemm()) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
      if (!add) C.setZero();
      return;
    }
    gemm<Scalar>(ta ? Op::transpose : Op::none, tb ? Op::transpose : Op::none, m, n, k, alpha, A.data(),
                 A.outerStride(), B.data(), B.outerStride(), add ? Scalar(1) : Scalar(0), C.data(), C.outerStride());
    return;
  }
  // Eigen: alpha rides on the left operand, as the layer always wrote it
  // ((Q * s) * K^T); Eigen folds that factor into its GEMM's alpha, so these
  // are the products the layer computed before this file existed.
  switch (transpose) {
    case Transpose::none:
      if (add) C.noalias() += (A * alpha) * B; else C.noalias() = (A * alpha) * B;
      break;
    case Transpose::lhs:
      if (add) C.noalias() += (A.transpose() * alpha) * B; else C.noalias() = (A.transpose() * alpha) * B;
      break;
    case Transpose::rhs:
      if (add) C.noalias() += (A * alpha) * B.transpose(); else C.noalias() = (A * alpha) * B.transpose();
      break;
    case Transpose::both:
      if (add) C.noalias() += (A.transpose() * alpha) * B.transpose();
      else C.noalias() = (A.transpose() * alpha) * B.transpose();
      break;
  }
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_PRODUCT_HPP
