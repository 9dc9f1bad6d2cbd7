// Eigen's product against the run-time-dispatched GEMM (kernels/gemm.hpp, in
// the default kernel set's ISA: AVX2 + FMA on a CPU that has them), one
// thread, on square sizes, few-row and small per-head shapes and the
// attention layer's own product shapes: the measurements behind
// kernels::gemm_rule, the rule kernels::product follows, whose choice is the
// third path. Built twice: bench_gemm with the preset's flags (-march=native)
// and bench_gemm_baseline for the x86-64 baseline (the compiler's default
// flags: Eigen at SSE2), which is what a consumer gets.
//
//   cmake --preset release -DSYNATTN_BUILD_BENCH=ON
//   cmake --build build/release --target bench_gemm bench_gemm_baseline
//   build/release/bench/bench_gemm_baseline --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Names: PATH/SCALAR/OP/MxNxK, e.g. gemm/float/NT/128x128x64 (PATH: eigen,
// gemm or product; OP: N or T for each operand). Counter GFLOPs = 2 m n k /
// time.
#include <benchmark/benchmark.h>

#include <synattn/kernels/product.hpp>

#include "machine.hpp"

#include <string>
#include <tuple>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using synattn::Index;
using synattn::kernels::Accumulate;
using synattn::kernels::Transpose;

struct Case {
  Index m, n, k;
  Transpose t;
};

// Who computes the product.
enum class Path { eigen, gemm, product };

// Square sizes, few rows (4 and 16 rows of a 512 x 512 projection), small
// per-head products, then the layer's products at (16, 128, 512, 8) (dk = 64):
// QKV projection rows block (256 rows x 1536 of 512), scores (128 x 128 of
// 64), P V (128 x 64 of 128), dW (+)= dY^T X (1536 x 512 of 2048 tokens,
// here one 256-row block of the output), dX = dY W (256 x 512 of 1536);
// sentences' projections (16 and 64 x 768 of 256), and a long sequence's
// score and dP row blocks (16, 64 and 128 rows x 1024 keys of 64: n = 1024,
// dk = 64), where gemm_one_block_or_swapped's rule decides, and its dV and dK
// row-block products (1024 keys x 64 of 128 rows: A^T, rows 4 KB apart).
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {8, 8, 8, Transpose::none},       {16, 16, 16, Transpose::none},    {32, 32, 32, Transpose::none},
      {64, 64, 64, Transpose::none},    {16, 64, 64, Transpose::rhs},     {64, 32, 64, Transpose::rhs},
      {16, 512, 512, Transpose::rhs},   {64, 64, 32, Transpose::none},    {4, 512, 512, Transpose::rhs},
      {128, 128, 128, Transpose::none}, {256, 256, 256, Transpose::none}, {512, 512, 512, Transpose::none},
      {256, 1536, 512, Transpose::rhs}, {128, 128, 64, Transpose::rhs},   {128, 64, 128, Transpose::none},
      {128, 64, 128, Transpose::lhs},   {256, 512, 2048, Transpose::lhs}, {256, 512, 1536, Transpose::none},
      {16, 768, 256, Transpose::rhs},   {64, 1024, 64, Transpose::rhs},   {128, 1024, 64, Transpose::rhs},
      {16, 1024, 64, Transpose::rhs},   {64, 768, 256, Transpose::rhs},   {1024, 64, 128, Transpose::lhs},
  };
  return all;
}

std::string op_name(Transpose t) {
  switch (t) {
    case Transpose::lhs: return "TN";
    case Transpose::rhs: return "NT";
    case Transpose::both: return "TT";
    default: return "NN";
  }
}

template <class Scalar>
void BM_Product(benchmark::State& state, Case c, Path path) {
  using M = synattn::RowMajorMatrix<Scalar>;
  const bool ta = synattn::kernels::transposes_lhs(c.t), tb = synattn::kernels::transposes_rhs(c.t);
  const M A = ta ? M::Random(c.k, c.m) : M::Random(c.m, c.k);
  const M B = tb ? M::Random(c.n, c.k) : M::Random(c.k, c.n);
  M C = M::Zero(c.m, c.n);
  for (auto _ : state) {
    switch (path) {
      case Path::eigen:  // what product() computes on its Eigen path
        if (ta && tb) C.noalias() = A.transpose() * B.transpose();
        else if (ta) C.noalias() = A.transpose() * B;
        else if (tb) C.noalias() = A * B.transpose();
        else C.noalias() = A * B;
        break;
      case Path::gemm:
        synattn::kernels::gemm<Scalar>(c.t, c.m, c.n, c.k, Scalar(1), A.data(), A.outerStride(), B.data(),
                                       B.outerStride(), Scalar(0), C.data(), C.outerStride());
        break;
      case Path::product:
        synattn::kernels::product<Scalar>(C, A, B, c.t, Accumulate::overwrite);
        break;
    }
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * double(c.m) * double(c.n) * double(c.k),
                                                benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  const std::string eigen = "eigen " + synattn::feature_names(synattn::build_cpu_features());
  const std::string gemm = std::string("gemm ") + synattn::to_string(synattn::kernels::kernel_set().gemm);
  state.SetLabel(path == Path::eigen  ? eigen
                 : path == Path::gemm ? gemm
                                      : (synattn::kernels::uses_dispatched_gemm(c.m, c.n, c.k) ? gemm : eigen));
}

void register_all() {
  for (const Case& c : cases())
    for (Path path : {Path::eigen, Path::gemm, Path::product}) {
      const std::string shape = op_name(c.t) + "/" + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                                std::to_string(c.k);
      const std::string p = path == Path::eigen ? "eigen/" : path == Path::gemm ? "gemm/" : "product/";
      benchmark::RegisterBenchmark((p + "float/" + shape).c_str(), BM_Product<float>, c, path);
      benchmark::RegisterBenchmark((p + "double/" + shape).c_str(), BM_Product<double>, c, path);
    }
}

}  // namespace

int main(int argc, char** argv) {
#if defined(_OPENMP)
  omp_set_num_threads(1);  // Eigen's product would otherwise split itself across the cores
#endif
  Eigen::setNbThreads(1);
  register_all();
  return synattn_bench::run_benchmarks(argc, argv);
}
