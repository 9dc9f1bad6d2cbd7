// synattn — one line describing how this code was built: what a bug report,
// a benchmark table or an example's first line needs to be reproducible.
#ifndef SYNATTN_BUILD_INFO_HPP
#define SYNATTN_BUILD_INFO_HPP

#include <string>

#include <Eigen/Core>

#include "config.hpp"
#include "error.hpp"
#include "kernels/attention_rows.hpp"
#include "kernels/linear_small.hpp"
#include "kernels/product.hpp"
#include "util/cpu_features.hpp"
#include "util/parallel.hpp"

namespace synattn {

// e.g. "synattn 0.1.0; Eigen 3.4.0 SIMD: AVX SSE, ...; compiled for: SSE4.1
// SSE4.2 AVX AVX2 FMA; kernels: avx2 rows (dispatched at run time), products:
// dispatched GEMM (avx2); OpenMP: on, 2 threads; BLAS: no".
//
// synattn is header-only, so this describes the translation unit that calls
// it: its compiler flags (-march, -fopenmp, SYNATTN_PORTABLE_KERNELS,
// EIGEN_USE_BLAS) chose every item, exactly as they chose the code that the
// same translation unit runs, except the row kernels' ISA and the products'
// path: those are chosen at run time (kernels/dispatch.hpp,
// kernels/product.hpp), and these are the ones active now. The thread count is omp_get_max_threads() now
// (OMP_NUM_THREADS, omp_set_num_threads), since results do not depend on it.
inline std::string build_info() {
  std::string line = "synattn " SYNATTN_VERSION_STRING;
  line += "; Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
          std::to_string(EIGEN_MINOR_VERSION);
  line += " SIMD: ";
  line += Eigen::SimdInstructionSetsInUse();
  // Eigen's list stops at "AVX" on AVX2 + FMA builds; the compiler's own
  // feature macros say what -march actually allowed (util/cpu_features.hpp).
  const std::string isa = feature_names(build_cpu_features());
  line += "; compiled for: " + (isa.empty() ? std::string("baseline ISA") : isa);
  line += "; kernels: ";
  line += to_string(kernels::active_isa());
#if defined(SYNATTN_PORTABLE_KERNELS)
  line += " rows, ";
#else
  line += " rows (dispatched at run time), ";
#endif
  // Mirrors kernels::uses_small_linear: the small-rows projection kernel
  // exists for AVX-512 only; elsewhere every projection is kernels::product.
#if defined(SYNATTN_HAVE_AVX512_LINEAR) && !defined(SYNATTN_PORTABLE_KERNELS)
  line += "avx512 small linear, ";
#endif
  line += "products: ";
  try {
    line += kernels::uses_dispatched_gemm()
                ? std::string("dispatched GEMM (") + to_string(kernels::gemm_isa()) + ")"
                : std::string("Eigen");
  } catch (const Error&) {
    line += "unknown (SYNATTN_GEMM holds an invalid value)";  // the first product will say so
  }
#if defined(_OPENMP)
  line += "; OpenMP: on, " + std::to_string(max_threads()) + (max_threads() == 1 ? " thread" : " threads");
#else
  line += "; OpenMP: off, 1 thread";
#endif
#if defined(EIGEN_USE_BLAS)
  line += "; BLAS: yes (EIGEN_USE_BLAS)";
#else
  line += "; BLAS: no";
#endif
  return line;
}

}  // namespace synattn

#endif  // SYNATTN_BUILD_INFO_HPP
