// build_info(): one line whose items follow this translation unit's flags.
// Built twice: natively, and as test_build_info_portable with
// SYNATTN_PORTABLE_KERNELS, where the kernels must say "portable". The
// kernels and products items come from the kernel registry.
#include <catch2/catch.hpp>

#include <synattn/build_info.hpp>

#include <cstdlib>
#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

TEST_CASE("build_info is one line naming version, Eigen, kernels, threads and BLAS", "[build_info]") {
  const std::string info = synattn::build_info();
  CAPTURE(info);
  CHECK(info.find('\n') == std::string::npos);
  CHECK(info.rfind(std::string("synattn ") + SYNATTN_VERSION_STRING + ";", 0) == 0);
  const std::string eigen = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) +
                            "." + std::to_string(EIGEN_MINOR_VERSION) + " SIMD: " + Eigen::SimdInstructionSetsInUse();
  CHECK(info.find(eigen) != std::string::npos);
  namespace k = synattn::kernels;
  const synattn::KernelIsa active = k::active_isa();
  CHECK_THAT(info, Catch::Contains(std::string("kernels: ") + synattn::to_string(active) + " set (rows " +
                                   synattn::to_string(k::kernel_set().rows) + ", GEMM " +
                                   synattn::to_string(k::kernel_set().gemm) + ", small linear "));
#if defined(__AVX2__) && defined(__FMA__)
  CHECK_THAT(info, Catch::Contains("; compiled for: ") && Catch::Contains(" AVX2 FMA"));
#elif !defined(__SSE4_1__)
  CHECK_THAT(info, Catch::Contains("; compiled for: baseline ISA;"));
#endif
#if defined(SYNATTN_PORTABLE_KERNELS)
  CHECK_THAT(info, Catch::Contains("kernels: portable set (rows portable, GEMM portable, small linear none); "
                                   "products: Eigen;"));
  CHECK_THAT(info, !Catch::Contains("avx512"));  // nothing to ask for
#else
  // The default set is named as such; an override says what the default is.
  CHECK_THAT(info, !Catch::Contains("on request only"));
  if (active == k::detail::default_isa())
    CHECK_THAT(info, !Catch::Contains("requested"));
  else
    CHECK_THAT(info, Catch::Contains(std::string("), requested (default: ") +
                                     synattn::to_string(k::detail::default_isa()) + "); products: "));
#endif
  // The products' rule as product() applies it at this file's flags.
  const k::GemmRule rule = k::gemm_rule(synattn::build_cpu_features());
  if (k::kernel_set().gemm == synattn::KernelIsa::portable)
    CHECK_THAT(info, Catch::Contains("; products: Eigen;"));
  else
    CHECK_THAT(info, Catch::Contains(std::string("; products: GEMM (") + synattn::to_string(k::kernel_set().gemm) +
                                     ") where " + k::gemm_rule_text(rule) + ", else Eigen;"));
  // The portable set: Eigen's products, whatever the build.
  k::set_isa(synattn::KernelIsa::portable);
  CHECK_THAT(synattn::build_info(),
             Catch::Contains("kernels: portable set (rows portable, GEMM portable, small linear none)") &&
                 Catch::Contains("; products: Eigen;"));
  k::set_isa(active);
#if defined(EIGEN_USE_BLAS)
  CHECK(info.find("BLAS: yes") != std::string::npos);
#else
  CHECK(info.find("BLAS: no") != std::string::npos);
#endif
}

TEST_CASE("build_info reports OpenMP and the current thread limit", "[build_info]") {
#if defined(_OPENMP)
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  CHECK_THAT(synattn::build_info(), Catch::Contains("; OpenMP: on, 1 thread;"));
  omp_set_num_threads(3);
  CHECK_THAT(synattn::build_info(), Catch::Contains("; OpenMP: on, 3 threads;"));
  omp_set_num_threads(before);
#else
  CHECK_THAT(synattn::build_info(), Catch::Contains("; OpenMP: off, 1 thread;"));
#endif
}

TEST_CASE("build_info names a SYNATTN_KERNEL_ISA this build or CPU cannot run instead of throwing", "[build_info]") {
  namespace k = synattn::kernels;
  const synattn::KernelIsa saved = k::active_isa();
  ::setenv("SYNATTN_KERNEL_ISA", "avx3", 1);
  k::detail::isa_state().store(-1);  // as before the first kernel call
  CHECK_THAT(synattn::build_info(), Catch::Contains("; kernels: unknown (SYNATTN_KERNEL_ISA holds a value"));
  CHECK_THROWS_WITH(k::active_isa(), Catch::Contains("SYNATTN_KERNEL_ISA is 'avx3'"));
  ::unsetenv("SYNATTN_KERNEL_ISA");
  k::set_isa(saved);
  CHECK_THAT(synattn::build_info(), !Catch::Contains("unknown"));
}
