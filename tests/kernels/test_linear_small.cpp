// C = A B^T through linear_product (the layer's projections) with every
// kernel set this CPU runs (the avx512 one takes the few-rows kernel) and,
// on a CPU with AVX-512, the few-rows AVX-512 kernel itself, against Eigen's
// product in double: every row count around the register width, outputs
// around the kernel's 8-wide blocks, inner sizes with tails, and strided
// blocks.
#include <catch2/catch.hpp>

#include <synattn/kernels/linear_small.hpp>
#include <synattn/kernels/registry.hpp>

#include <cstdint>
#include <random>
#include <thread>
#include <vector>

using synattn::Index;
using synattn::KernelIsa;
using synattn::RowMajorMatrix;

namespace {

// Restores the active kernel set when a test ends.
struct KeepIsa {
  KernelIsa saved = synattn::kernels::active_isa();
  ~KeepIsa() { synattn::kernels::set_isa(saved); }
};

template <class S>
RowMajorMatrix<S> random(Index rows, Index cols, std::mt19937& rng) {
  std::normal_distribution<double> g(0.0, 1.0);
  RowMajorMatrix<S> m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<S>(g(rng));
  return m;
}

template <class S>
double tolerance(Index k) {
  return (sizeof(S) == 4 ? 2e-6 : 1e-14) * double(k + 1) * 4;
}

}  // namespace

TEMPLATE_TEST_CASE("linear_product equals A B^T (+ bias) for every shape class, on blocks of larger matrices",
                   "[kernels][linear]", float, double) {
  using S = TestType;
  KeepIsa keep;
  for (KernelIsa isa : synattn::kernels::supported_isas()) {
    synattn::kernels::set_isa(isa);
    std::mt19937 rng(5);
    for (Index m : {1, 4, 5, 8, 9, 15, 16, 17, 31, 33, 64, 65, 100})
      for (Index n : {1, 7, 8, 9, 33})
        for (Index k : {1, 5, 16, 17, 100}) {
          // A and C are middle blocks of wider matrices (outer stride > cols).
          const RowMajorMatrix<S> a_full = random<S>(m + 2, k + 3, rng), b = random<S>(n, k, rng);
          RowMajorMatrix<S> c_full = RowMajorMatrix<S>::Constant(m + 2, n + 4, S(-3));
          const auto A = a_full.block(1, 2, m, k);
          const bool with_bias = (m + n + k) % 2 == 0;
          const RowMajorMatrix<S> bias = random<S>(1, n, rng);
          synattn::kernels::linear_product<S>(c_full.block(1, 1, m, n), A, b, with_bias ? bias.data() : nullptr);
          RowMajorMatrix<double> want = A.template cast<double>() * b.template cast<double>().transpose();
          if (with_bias) want.rowwise() += bias.template cast<double>().row(0);
          INFO("set " << synattn::to_string(isa) << ", m " << m << ", n " << n << ", k " << k << ", small kernel "
                      << synattn::kernels::uses_small_linear<S>(m));
          CHECK((c_full.block(1, 1, m, n).template cast<double>() - want).cwiseAbs().maxCoeff() <= tolerance<S>(k));
          // Nothing outside the destination block is touched.
          CHECK(c_full.row(0).isConstant(S(-3)));
          CHECK(c_full.row(m + 1).isConstant(S(-3)));
          CHECK(c_full.col(0).isConstant(S(-3)));
          CHECK(c_full.rightCols(3).isConstant(S(-3)));
        }
  }
}

#if defined(SYNATTN_HAVE_AVX512_KERNELS)
// The kernel is written once over the packet (linear_small_algorithm.inc);
// the registry runs the AVX-512 one, and the AVX2 one is checked too.
template <class S>
void check_linear_small(void (*linear_small)(const S*, Index, const S*, Index, S*, Index, Index, Index, Index,
                                             S*) noexcept) {
  std::mt19937 rng(8);
  for (Index m = 1; m <= 40; ++m)
    for (Index n : {1, 8, 13}) {
      const Index k = 37;
      const RowMajorMatrix<S> a = random<S>(m, k, rng), b = random<S>(n, k, rng);
      RowMajorMatrix<S> c(m, n);
      std::vector<S, Eigen::aligned_allocator<S>> panel(
          static_cast<std::size_t>(synattn::kernels::linear_small_workspace<S>(k)));
      linear_small(a.data(), k, b.data(), k, c.data(), n, m, n, k, panel.data());
      const RowMajorMatrix<double> want = a.template cast<double>() * b.template cast<double>().transpose();
      INFO("m " << m << ", n " << n);
      CHECK((c.template cast<double>() - want).cwiseAbs().maxCoeff() <= tolerance<S>(k));
    }
}

TEMPLATE_TEST_CASE("the small-rows kernel matches Eigen's product at every row count", "[kernels][linear][avx512]",
                   float, double) {
  using S = TestType;
  if (synattn::kernels::cpu_runs(KernelIsa::avx2)) check_linear_small<S>(&synattn::kernels::avx2::linear_small<S>);
  if (!synattn::kernels::cpu_runs(KernelIsa::avx512)) {
    WARN("this CPU has no AVX-512: the kernel is compiled (target pragmas) but not run");
    return;
  }
  check_linear_small<S>(synattn::kernels::avx512::kernel_table<S>.linear_small);
}
#endif

TEMPLATE_TEST_CASE("linear_product's panel workspace is per thread, 64-byte aligned and kept between calls",
                   "[kernels][linear]", float, double) {
  using S = TestType;
  S* first = synattn::kernels::detail::thread_workspace<S>(100);
  CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
  first[99] = S(7);
  CHECK(synattn::kernels::detail::thread_workspace<S>(100) == first);  // no new allocation
  CHECK(synattn::kernels::detail::thread_workspace<S>(10) == first);
  S* grown = synattn::kernels::detail::thread_workspace<S>(100000);
  CHECK(reinterpret_cast<std::uintptr_t>(grown) % 64 == 0);
  grown[99999] = S(1);
  S* other = nullptr;
  std::thread([&] { other = synattn::kernels::detail::thread_workspace<S>(100); }).join();
  CHECK(other != grown);  // another thread's own buffer
}
