// synattn — one line describing how this code was built: what a bug report,
// a benchmark table or an example's first line needs to be reproducible.
#ifndef SYNATTN_BUILD_INFO_HPP
#define SYNATTN_BUILD_INFO_HPP

#include <string>

#include <Eigen/Core>

#include "attention/path.hpp"
#include "config.hpp"
#include "error.hpp"
#include "kernels/isa.hpp"
#include "kernels/product.hpp"
#include "kernels/registry.hpp"
#include "util/cpu_features.hpp"
#include "util/parallel.hpp"

namespace synattn {

// e.g. "synattn 0.1.0; Eigen 3.4.0 SIMD: AVX SSE, ...; compiled for: SSE4.1
// SSE4.2 AVX AVX2 FMA; kernels: avx2 set (rows avx2, GEMM avx2, small linear
// none); products: GEMM (avx2) from 16 x 16 x 16,
// else Eigen; attention path: auto: fused above 16 MB of probabilities, ...;
// OpenMP: on, 2 threads; BLAS: no".
//
// synattn is header-only, so this describes the translation unit that calls
// it: its compiler flags (-march, -fopenmp, SYNATTN_PORTABLE_KERNELS,
// EIGEN_USE_BLAS) chose every item, exactly as they chose the code that the
// same translation unit runs. The kernels are the registry's set now
// (kernels/registry.hpp), the products' rule is kernels::gemm_rule at this
// translation unit's flags (kernels/product.hpp). The thread count is
// omp_get_max_threads() now (OMP_NUM_THREADS, omp_set_num_threads), since
// results do not depend on it.
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
  try {
    const KernelIsa active = kernels::active_isa();
    const kernels::KernelSet set = kernels::kernel_set_for(active);
    line += std::string(to_string(active)) + " set (rows " + to_string(set.rows) + ", GEMM " + to_string(set.gemm) +
            ", small linear " + (set.linear_small == KernelIsa::portable ? "none" : to_string(set.linear_small)) +
            ")";
    // Whether the set is the default choice or an override (set_isa, SYNATTN_KERNEL_ISA).
    if (active != kernels::detail::default_isa())
      line += ", requested (default: " + std::string(to_string(kernels::detail::default_isa())) + ")";
    line += "; products: ";
    const kernels::GemmRule rule = kernels::gemm_rule(build_cpu_features());
    if (set.gemm == KernelIsa::portable)
      line += "Eigen";
    else
      line += std::string("GEMM (") + to_string(set.gemm) + ") where " + kernels::gemm_rule_text(rule) + ", else Eigen";
  } catch (const Error&) {
    line += "unknown (SYNATTN_KERNEL_ISA holds a value this build or CPU cannot run)";  // the first kernel says so
  }
  line += "; attention path: " + path_rule_text();
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
