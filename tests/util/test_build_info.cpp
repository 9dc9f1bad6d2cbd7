// build_info(): one line whose items follow this translation unit's flags.
// Built twice: natively, and as test_build_info_portable with
// SYNATTN_PORTABLE_KERNELS, where the kernels must say "portable".
#include <catch2/catch.hpp>

#include <synattn/build_info.hpp>

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
  CHECK(info.find(std::string("kernels: ") + synattn::to_string(synattn::kernels::active_isa()) + " rows") !=
        std::string::npos);
#if defined(__AVX2__) && defined(__FMA__)
  CHECK_THAT(info, Catch::Contains("; compiled for: ") && Catch::Contains(" AVX2 FMA"));
#elif !defined(__SSE4_1__)
  CHECK_THAT(info, Catch::Contains("; compiled for: baseline ISA;"));
#endif
#if defined(SYNATTN_PORTABLE_KERNELS)
  CHECK(info.find("kernels: portable rows, products: Eigen;") != std::string::npos);
#else
  CHECK(info.find(" rows (dispatched at run time), ") != std::string::npos);
#endif
  // The products' path as product() will take it.
  const std::string products =
      synattn::kernels::uses_dispatched_gemm()
          ? std::string("products: dispatched GEMM (") +
                synattn::to_string(synattn::kernels::gemm_isa()) + ");"
          : std::string("products: Eigen;");
  CHECK(info.find(products) != std::string::npos);
  synattn::kernels::set_gemm_path(synattn::kernels::GemmPath::eigen);
  CHECK_THAT(synattn::build_info(), Catch::Contains("products: Eigen;"));
  synattn::kernels::set_gemm_path(synattn::kernels::GemmPath::dispatch);
  CHECK_THAT(synattn::build_info(), Catch::Contains("products: dispatched GEMM ("));
  synattn::kernels::set_gemm_path(synattn::kernels::GemmPath::automatic);
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
