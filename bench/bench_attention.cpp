// SyntaxBiasedAttention<float>: forward (inference: infer()) and
// forward+backward (forward() with its cache, then backward()) against the
// floor of the same GEMMs alone, with the machine's FMA peak for scale.
//
//   cmake --preset release && cmake --build --preset release --target bench_attention
//   build/release/bench/bench_attention --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   build/release/bench/bench_attention --synattn_dump=DIR   (distance blocks + manifest for PyTorch)
//   build/release/bench/bench_attention --synattn_check_libtorch  (the LibTorch peer computes our output)
//   build/release/bench/bench_attention --synattn_busy            (another process spins on the last core)
//   /usr/bin/python3 tools/bench_attention_table.py          (Markdown table: synattn, BLAS, LibTorch, PyTorch)
//
// Benchmarks: threads/fwd/BxNxD_MODELxHEADS and threads/fwdbwd/... (the
// default thread count against one thread, side by side: BM_ThreadRatio),
// fusion/fwdbwd/BxNxD_MODELxHEADS/views:V/omp:1 (tree fusion's cost against one
// view, side by side: BM_FusionCost), fwd/BxNxD_MODELxHEADS/omp:T and fwdbwd/..., for the four
// training shapes and two single-sentence latency shapes (forward only), at
// T = 1 and 2 threads; plus fma_peak/ISA/omp:T. Each layer iteration is
// followed by the floor (the layer's own products, through kernels::product,
// on the same shapes, split into the same row blocks and (sequence, head)
// tasks, and nothing else: no bias, softmax, masks, copies or checks), timed
// apart; Time is the layer's (manual time). Counters: layer_ms and gemm_ms (median iterations),
// ratio_to_gemm (their ratio), GFLOPs (the layer's GEMM flops per second),
// gemm_GFLOPs, fma_peak_GFLOPs (FMA throughput probed between iterations:
// independent FMA chains, widest ISA compiled in), pct_of_peak, and cpu_util
// (process CPU time / (wall time x T): below ~0.9 another process took a
// core, and the numbers are not the layer's). Flops count GEMMs only:
//   forward  8 B n d^2 + 4 B n^2 d     (QKV and output projections, QK^T, PV)
//   backward 2x forward                (each product has two adjoint products)
// The machine these run on is a shared VM whose speed drifts by tens of
// percent within seconds, hence everything interleaved and the medians.
//
// LibTorch peer (built when find_package(Torch) succeeds; libtorch_peer.cpp):
// libtorch/fwd/... and libtorch/fwdbwd/..., the same layer written with
// LibTorch's C++ API (projections, s*T[bucket] added to the scores, masking,
// softmax, PV, output projection; backward by autograd), with the synattn
// layer's weights on the same inputs, at T threads (at::set_num_threads and
// OpenBLAS's own count); layer_ms is its median iteration, the label names
// the OpenBLAS kernel it ran.
//
// Inputs: real trees, UD English EWT train sentences in file order, packed as
// forests into exactly n tokens per sequence (the last sentence is cut at n; a
// word whose head was cut off becomes a root), so no position is padding. The
// latency shapes (batch 1, n 16 / 32) use the first single sentence of exactly
// n words instead. Distances -> linear buckets M = 10 (cross-tree pairs land
// in the last bucket). Weights are the layer's seeded nn.Linear-style draws,
// the table starts as a linear decay (non-zero, so the bias does something).
//
// Threads: OpenMP's team (the layer's parallel_for) follows omp:THREADS, and
// Eigen follows OpenMP (Eigen::setNbThreads is left alone: a count set there
// would keep the layer's loops from going serial on a busy machine, see
// util/parallel.hpp).
//
// --synattn_busy: a busy machine. A child process spins on the last core for
// the whole run (bench/busy_core.hpp), benchmark names get a busy/ prefix,
// and the counter contended counts the layer's parallel regions that lost to
// the serial path during the benchmark (the guard then runs loops serially). Built with the `blas` preset (EIGEN_USE_BLAS),
// OpenBLAS gets --synattn_blas_threads (default 1: the layer calls its large
// products from inside its own OpenMP team, which already uses the cores;
// OpenBLAS threads = 2 inside a 2-thread team measured 2-6x slower).
// GCC 12 reports -Wmaybe-uninitialized inside its own avx512fintrin.h
// wherever Eigen's AVX-512 GEMM kernels are inlined (_mm512_undefined_ps
// operands): false positives in system headers this file cannot change.
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <benchmark/benchmark.h>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/bias/bucketing.hpp>
#include <synattn/bias/packed_buckets.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/io/npy.hpp>
#include <synattn/kernels/linear_small.hpp>
#include <synattn/kernels/product.hpp>
#include <synattn/tree/batch.hpp>
#include <synattn/util/parallel.hpp>
#include <synattn/util/resident_memory.hpp>

#include "bench_corpus.hpp"
#include "busy_core.hpp"
#include "machine.hpp"
#if defined(SYNATTN_WITH_LIBTORCH)
#include "libtorch_peer.hpp"
#endif

#include <Eigen/Core>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__AVX512F__) || defined(__AVX2__) || defined(__FMA__)
#include <immintrin.h>
#endif

#if defined(EIGEN_USE_BLAS)
// Weak, so the program still links against a BLAS that lacks it.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" char* openblas_get_corename(void) __attribute__((weak));
extern "C" char* openblas_get_config(void) __attribute__((weak));
#endif

namespace {

using Scalar = float;
using Matrix = synattn::RowMajorMatrix<Scalar>;
using Buckets = synattn::RowMajorMatrix<std::int8_t>;
using synattn::Index;
using Clock = std::chrono::steady_clock;

constexpr int kMaxDistance = 10;

struct Shape {
  int batch, n, d_model, heads;
  bool latency;  // single-sentence inference: forward only, one real sentence
  std::string name() const {
    return std::to_string(batch) + "x" + std::to_string(n) + "x" + std::to_string(d_model) + "x" +
           std::to_string(heads);
  }
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {
      {32, 32, 512, 8, false}, {16, 128, 512, 8, false}, {4, 512, 512, 8, false},
      {1, 1024, 256, 4, false}, {1, 16, 256, 4, true},   {1, 32, 512, 8, true},
  };
  return all;
}

// GEMM flops of one pass (lengths = n, no padding): see the file comment.
double forward_flops(const Shape& s) {
  const double tokens = double(s.batch) * s.n, d = s.d_model;
  return 8.0 * tokens * d * d + 4.0 * tokens * s.n * d;
}
double backward_flops(const Shape& s) { return 2.0 * forward_flops(s); }

// ---------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------

int g_blas_threads = 1;  // --synattn_blas_threads; 0: follow the benchmark
bool g_busy = false;     // --synattn_busy

void use_threads(int threads) {
#if defined(_OPENMP)
  omp_set_num_threads(threads);
#endif
#if defined(EIGEN_USE_BLAS)
  if (openblas_set_num_threads) openblas_set_num_threads(g_blas_threads > 0 ? g_blas_threads : threads);
#endif
}

// ---------------------------------------------------------------------------
// FMA peak: independent accumulator chains, enough of them to cover the FMA
// latency on every port (4 cycles x 2 ports = 8 in flight on current x86).
// acc = acc * a + b with a < 1 converges to b / (1 - a): no overflow, no
// denormals, and the compiler cannot fold the chain away.
// ---------------------------------------------------------------------------

struct FmaKernel {
  const char* isa;
  double flops_per_step;
  float (*run)(long steps);
};

#if defined(__AVX512F__)
float fma_avx512(long steps) {
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(0.01f * static_cast<float>(k));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (long i = 0; i < steps; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = _mm512_fmadd_ps(acc[k], a, b);
  __m512 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm512_add_ps(sum, acc[k]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
float fma_avx2(long steps) {
  constexpr int kChains = 12;  // + a, b: 14 of the 16 ymm registers AVX2 has
  __m256 acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(0.01f * static_cast<float>(k));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (long i = 0; i < steps; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  __m256 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm256_add_ps(sum, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}
#endif

float fma_scalar(long steps) {
  constexpr int kChains = 8;
  float acc[kChains];
  for (int k = 0; k < kChains; ++k) acc[k] = 0.01f * static_cast<float>(k);
  const float a = 0.999f, b = 0.001f;
  for (long i = 0; i < steps; ++i)
    for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * a + b;
  float total = 0;
  for (float v : acc) total += v;
  return total;
}

// Widest first: the one Eigen's products use under this build's -march.
const std::vector<FmaKernel>& fma_kernels() {
  static const std::vector<FmaKernel> all = {
#if defined(__AVX512F__)
      {"avx512", 16.0 * 16 * 2, fma_avx512},
#endif
#if defined(__AVX2__) && defined(__FMA__)
      {"avx2", 12.0 * 8 * 2, fma_avx2},
#endif
      {"scalar", 8.0 * 2, fma_scalar},
  };
  return all;
}

volatile float g_sink = 0;

// GFLOP/s of `threads` threads each running the kernel for `steps` steps.
double fma_run(const FmaKernel& kernel, int threads, long steps) {
  const auto t0 = Clock::now();
#if defined(_OPENMP)
#pragma omp parallel num_threads(threads)
  {
    const float r = kernel.run(steps);
#pragma omp critical(bench_attention_sink)
    g_sink = g_sink + r;
  }
#else
  (void)threads;
  g_sink = g_sink + kernel.run(steps);
#endif
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return kernel.flops_per_step * double(steps) * threads / seconds * 1e-9;
}

void BM_FmaPeak(benchmark::State& state, std::size_t kernel, int threads) {
  const FmaKernel& k = fma_kernels()[kernel];
  const long steps = 1'000'000;
  for (auto _ : state) benchmark::DoNotOptimize(fma_run(k, threads, steps));
  state.counters["GFLOPs"] =
      benchmark::Counter(k.flops_per_step * double(steps) * threads * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---------------------------------------------------------------------------
// Trees
// ---------------------------------------------------------------------------

using synattn_bench::pack_forest;
using synattn_bench::single_sentence;
const synattn_bench::Corpus& corpus() { return synattn_bench::ewt_train(); }

struct Workload {
  Shape shape;
  std::vector<synattn::DependencyTree> trees;
  std::vector<int> lengths;
  synattn::RowMajorMatrix<std::int8_t> distances;  // (batch * n, n)
  Buckets buckets;                                 // (batch * n, n)
  Matrix x, dout;                                  // (batch * n, d_model)
  std::string source;
};

const Workload& workload(std::size_t shape_index) {
  static std::map<std::size_t, std::unique_ptr<Workload>> cache;
  auto& slot = cache[shape_index];
  if (slot) return *slot;
  slot = std::make_unique<Workload>();
  Workload& w = *slot;
  w.shape = shapes()[shape_index];
  const Shape& s = w.shape;
  if (s.latency) {
    std::vector<int> heads = single_sentence(s.n, w.source);
    w.trees.emplace_back(std::move(heads), synattn::Structure::Forest, w.source);
  } else {
    std::size_t next = 0;
    for (int b = 0; b < s.batch; ++b)
      w.trees.emplace_back(pack_forest(s.n, next), synattn::Structure::Forest, "sequence " + std::to_string(b));
    w.source = "forests of sentences 0.." + std::to_string(next == 0 ? corpus().sentences.size() - 1 : next - 1);
  }
  const synattn::Bucketing bucketing = synattn::Bucketing::linear(kMaxDistance);
  w.distances.resize(Index(s.batch) * s.n, s.n);
  w.lengths = synattn::batch_distances<std::int8_t>(w.trees, w.distances, bucketing.cross_distance());
  w.buckets.resize(w.distances.rows(), w.distances.cols());
  synattn::bucketize<std::int8_t, std::int8_t>(bucketing, w.distances, w.buckets);
  std::mt19937 rng(1234 + static_cast<unsigned>(shape_index));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  w.x.resize(Index(s.batch) * s.n, s.d_model);
  w.dout.resize(w.x.rows(), w.x.cols());
  for (Index i = 0; i < w.x.size(); ++i) w.x.data()[i] = u(rng);
  for (Index i = 0; i < w.dout.size(); ++i) w.dout.data()[i] = u(rng);
  return w;
}

synattn::AttentionOptions layer_options(const Shape& s) {
  synattn::AttentionOptions o(s.d_model, s.heads);
  o.bias.bucketing = synattn::Bucketing::linear(kMaxDistance);
  o.bias.init = synattn::TableInit::LinearDecay;
  o.bias.decay = 0.3;
  return o;
}

// ---------------------------------------------------------------------------
// The floor: the layer's products and nothing else (no bias, softmax, mask,
// copies or checks), split into the same row blocks and (sequence, head)
// tasks with the same parallel helpers, on the same shapes, every product
// through the layer's own kernels::product (the dispatched GEMM or Eigen's,
// as the layer chooses) and the projections through the same linear_product
// (the small-rows kernel at sentence sizes).
// ---------------------------------------------------------------------------

class GemmFloor {
 public:
  explicit GemmFloor(const Workload& w) : s_(w.shape), x_(w.x), dout_(w.dout) {
    const Index tokens = Index(s_.batch) * s_.n, d = s_.d_model, h = s_.heads;
    dk_ = d / h;
    inv_sqrt_dk_ = Scalar(1) / std::sqrt(Scalar(dk_));
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> u(-0.05f, 0.05f);
    const auto fill = [&](Matrix& m, Index r, Index c) {
      m.resize(r, c);
      for (Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
    };
    fill(w_, 3 * d, d);
    fill(wo_, d, d);
    qkv_.setZero(tokens, 3 * d);
    // Stand-in for the layer's stored probabilities (any finite values do).
    probs_ = Matrix::Constant(Index(s_.batch) * h * s_.n, s_.n, Scalar(1) / Scalar(s_.n));
    ctx_.setZero(tokens, d);
    out_.setZero(tokens, d);
    dctx_.setZero(tokens, d);
    dwo_.setZero(d, d);
    dqkv_.setZero(tokens, 3 * d);
    dw_.setZero(3 * d, d);
    dx_.setZero(tokens, d);
  }

  // Mirrors the layer's forward: S is computed into a per-thread scratch block
  // (query row blocks of at most 512 KB, like
  // detail::score_block_rows), P V reads it from there, and P is
  // stored to the probability buffer only by the layer (a copy, not a GEMM).
  void forward() {
    using synattn::parallel_chunks;
    using synattn::kernels::product;
    using synattn::kernels::Transpose;
    using synattn::kernels::Accumulate;
    const Index n = s_.n, H = s_.heads, dk = dk_, hdk = H * dk;
    // qkv (B*n, 3d) = x (B*n, d) [Wq; Wk; Wv]^T
    parallel_chunks(x_.rows(), double(w_.size()), [&](Index r0, Index m) {
      synattn::kernels::linear_product<Scalar>(qkv_.middleRows(r0, m), x_.middleRows(r0, m), w_);
    });
    // per (b, a, row block): S (m, n) = Q K^T / sqrt(dk); ctx (m, dv) = S V
    const Index rows = score_rows(), row_blocks = (n + rows - 1) / rows;
    const double work = block_work() * double(2 * dk);
    scratch_.resize(Index(synattn::team_size(work)) * rows, n);
    synattn::parallel_for_threads(Index(s_.batch) * H * row_blocks, work, [&](Index t, int thread) {
      const Index task = t / row_blocks, r0 = (t % row_blocks) * rows, m = std::min(rows, n - r0);
      const Index b = task / H, a = task % H;
      Eigen::Map<Matrix> S(scratch_.data() + Index(thread) * rows * n, m, n);
      const auto Q = qkv_.block(b * n + r0, a * dk, m, dk);
      const auto K = qkv_.block(b * n, hdk + a * dk, n, dk);
      const auto V = qkv_.block(b * n, 2 * hdk + a * dk, n, dk);
      product<Scalar>(S, Q, K, Transpose::rhs, Accumulate::overwrite, inv_sqrt_dk_);
      product<Scalar>(ctx_.block(b * n + r0, a * dk, m, dk), S, V);
    });
    // out (B*n, d) = ctx Wo^T
    parallel_chunks(ctx_.rows(), double(wo_.size()), [&](Index r0, Index m) {
      synattn::kernels::linear_product<Scalar>(out_.middleRows(r0, m), ctx_.middleRows(r0, m), wo_);
    });
  }

  // Mirrors the layer's backward: one task per (sequence, head) walks the
  // query rows in the forward's row blocks; dP and dS live in a per-thread
  // (rows, n) scratch block, dK and dV add up each block's share; P is read
  // from the stored probabilities.
  void backward() {
    using synattn::parallel_chunks;
    using synattn::kernels::product;
    using synattn::kernels::Transpose;
    using synattn::kernels::Accumulate;
    const Index n = s_.n, H = s_.heads, dk = dk_, hdk = H * dk, d = s_.d_model;
    // dctx (B*n, d) = G Wo; dWo (d, d) += G^T ctx
    parallel_chunks(dout_.rows(), double(wo_.size()), [&](Index r0, Index m) {
      product<Scalar>(dctx_.middleRows(r0, m), dout_.middleRows(r0, m), wo_);
    });
    parallel_chunks(d, double(dout_.rows()) * double(d), [&](Index r0, Index m) {
      product<Scalar>(dwo_.middleRows(r0, m), dout_.middleCols(r0, m), ctx_, Transpose::lhs, Accumulate::add);
    });
    // per (b, a): dP = dC V^T, dV = P^T dC, dQ = dS K / sqrt(dk), dK = dS^T Q / sqrt(dk)
    const double work = block_work() * double(4 * dk);
    const Index rows = score_rows();
    scratch_.resize(Index(synattn::team_size(work)) * rows, n);
    synattn::parallel_for_threads(Index(s_.batch) * H, work, [&](Index t, int thread) {
      const Index b = t / H, a = t % H;
      const auto K = qkv_.block(b * n, hdk + a * dk, n, dk);
      const auto V = qkv_.block(b * n, 2 * hdk + a * dk, n, dk);
      auto dV = dqkv_.block(b * n, 2 * hdk + a * dk, n, dk);
      auto dK = dqkv_.block(b * n, hdk + a * dk, n, dk);
      for (Index r0 = 0; r0 < n; r0 += rows) {
        const Index m = std::min(rows, n - r0);
        Eigen::Map<Matrix> dS(scratch_.data() + Index(thread) * rows * n, m, n);
        Eigen::Map<const Matrix> P(probs_.data() + (t * n + r0) * n, m, n);
        const auto Q = qkv_.block(b * n + r0, a * dk, m, dk);
        const auto dC = dctx_.block(b * n + r0, a * dk, m, dk);
        product<Scalar>(dS, dC, V, Transpose::rhs);
        const Accumulate add = r0 == 0 ? Accumulate::overwrite : Accumulate::add;
        product<Scalar>(dV, P, dC, Transpose::lhs, add);
        product<Scalar>(dK, dS, Q, Transpose::lhs, add, inv_sqrt_dk_);
        product<Scalar>(dqkv_.block(b * n + r0, a * dk, m, dk), dS, K, Transpose::none, Accumulate::overwrite,
                        inv_sqrt_dk_);
      }
    });
    // dW (3d, d) += dqkv^T x; dx (B*n, d) = dqkv [Wq; Wk; Wv]
    parallel_chunks(dw_.rows(), double(x_.rows()) * double(d), [&](Index r0, Index m) {
      product<Scalar>(dw_.middleRows(r0, m), dqkv_.middleCols(r0, m), x_, Transpose::lhs, Accumulate::add);
    });
    parallel_chunks(dqkv_.rows(), double(w_.size()), [&](Index r0, Index m) {
      product<Scalar>(dx_.middleRows(r0, m), dqkv_.middleRows(r0, m), w_);
    });
  }

  const Matrix& out() const { return out_; }

 private:
  // Multiply-adds of all (sequence, head) blocks per unit of inner size: the
  // work estimate the layer hands parallel_for.
  double block_work() const { return double(s_.batch) * s_.heads * double(s_.n) * double(s_.n); }
  // Query rows per forward score block: all n while an (n, n) float block
  // fits 512 KB (L2 with the K and V panels), else a multiple of 16 that does.
  // The layer's own row-block size, so the floor cuts its products the same way.
  Index score_rows() const { return synattn::detail::score_block_rows<Scalar>(s_.n, s_.n); }

  Shape s_;
  const Matrix& x_;
  const Matrix& dout_;
  Index dk_ = 0;
  Scalar inv_sqrt_dk_ = 1;
  Matrix w_, wo_, qkv_, probs_, scratch_, ctx_, out_, dctx_, dwo_, dqkv_, dw_, dx_;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// ---------------------------------------------------------------------------
// Benchmarks
// ---------------------------------------------------------------------------

// One iteration runs the layer (timed: the benchmark's manual time) and then
// the floor (timed apart). Interleaving matters on a shared 2-core VM whose
// speed drifts by tens of percent within seconds: a floor measured at another
// moment would make the ratio meaningless.
void BM_Layer(benchmark::State& state, std::size_t shape_index, bool backward, int threads) {
  const Workload& w = workload(shape_index);
  use_threads(threads);
  synattn::SyntaxBiasedAttention<Scalar> layer(layer_options(w.shape));
  synattn::AttentionCache<Scalar> cache;
  Matrix out(w.x.rows(), w.shape.d_model), dx(w.x.rows(), w.shape.d_model);
  // The forward-only pass is inference (nothing kept for a backward pass),
  // like PyTorch's forward under torch.no_grad() in pytorch_reference.py.
  const auto run_layer = [&] {
    if (backward) {
      layer.forward({w.x, w.lengths, w.buckets}, cache, out);
      layer.backward(cache, w.dout, {dx});
    } else {
      layer.infer({w.x, w.lengths, w.buckets}, cache, out);
    }
  };
  GemmFloor floor(w);
  const auto run_floor = [&] {
    floor.forward();
    if (backward) floor.backward();
  };
  run_layer();  // sizes the cache's buffers
  run_floor();
  if (!out.allFinite() || (backward && !dx.allFinite())) {
    state.SkipWithError("non-finite layer output");
    return;
  }
  // The FMA peak is probed between iterations too (the VM's clock drifts, so
  // a peak from another moment would skew pct_of_peak), but only once the
  // layer has run 4x the probe's time since the last one: cheap for
  // microsecond-sized latency cases.
  const FmaKernel& probe = fma_kernels().front();
  const long probe_steps = static_cast<long>(2e8 / probe.flops_per_step);
  double since_probe = 1e300, probe_s = 0;
  std::vector<double> layer_s, floor_s, peak_gflops;
  const long contended0 = synattn::contended_regions();
  const std::clock_t cpu0 = std::clock();
  const auto wall0 = Clock::now();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    run_layer();
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
    const auto t1 = Clock::now();
    run_floor();
    benchmark::DoNotOptimize(floor.out().data());
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    const double l = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(l);
    layer_s.push_back(l);
    floor_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    since_probe += l;
    if (since_probe >= 4 * probe_s) {
      peak_gflops.push_back(fma_run(probe, threads, probe_steps));
      probe_s = probe.flops_per_step * double(probe_steps) * threads * 1e-9 / peak_gflops.back();
      since_probe = 0;
    }
  }
  // Process CPU time over wall time x threads: well below 1 means another
  // process had one of "our" cores, and the run should be repeated.
  const double cpu = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const double flops = forward_flops(w.shape) + (backward ? backward_flops(w.shape) : 0.0);
  const double layer_median = median(layer_s), floor_median = median(floor_s);
  const double peak = median(peak_gflops);
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["layer_ms"] = layer_median * 1e3;  // median iteration (Time is the mean)
  state.counters["gemm_ms"] = floor_median * 1e3;
  state.counters["ratio_to_gemm"] = layer_median / floor_median;
  state.counters["gemm_GFLOPs"] = flops * 1e-9 / floor_median;
  state.counters["fma_peak_GFLOPs"] = peak;
  state.counters["pct_of_peak"] = 100.0 * flops * 1e-9 / layer_median / peak;
  state.counters["cpu_util"] = cpu / (wall * threads);
  state.counters["contended"] = double(synattn::contended_regions() - contended0);
  state.SetLabel(w.source);
}

// The default thread setting against one thread, side by side: every
// iteration runs the layer at one thread and then at the thread count the
// program started with (OMP_NUM_THREADS, else the cores), so a machine whose
// load drifts affects both alike. Counters: t1_ms and default_ms (medians),
// ratio (their ratio: below 1, the default gains; the busy-machine target is
// at most 1.3), threads (the default count) and contended (regions the guard
// caught, see util/parallel.hpp).
int g_default_threads = 1;

void BM_ThreadRatio(benchmark::State& state, std::size_t shape_index, bool backward) {
  const Workload& w = workload(shape_index);
  synattn::SyntaxBiasedAttention<Scalar> layer(layer_options(w.shape));
  synattn::AttentionCache<Scalar> cache;
  Matrix out(w.x.rows(), w.shape.d_model), dx(w.x.rows(), w.shape.d_model);
  const auto run_layer = [&](int threads) {
    use_threads(threads);
    const auto t0 = Clock::now();
    if (backward) {
      layer.forward({w.x, w.lengths, w.buckets}, cache, out);
      layer.backward(cache, w.dout, {dx});
    } else {
      layer.infer({w.x, w.lengths, w.buckets}, cache, out);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  run_layer(1);
  run_layer(g_default_threads);
  std::vector<double> one, dflt;
  const long contended0 = synattn::contended_regions();
  for (auto _ : state) {
    one.push_back(run_layer(1));
    dflt.push_back(run_layer(g_default_threads));
    state.SetIterationTime(one.back() + dflt.back());
  }
  use_threads(g_default_threads);
  state.counters["t1_ms"] = median(one) * 1e3;
  state.counters["default_ms"] = median(dflt) * 1e3;
  state.counters["ratio"] = median(dflt) / median(one);
  state.counters["threads"] = g_default_threads;
  state.counters["contended"] = double(synattn::contended_regions() - contended0);
  state.SetLabel(w.source);
}

// Forward + backward of layer `a` and of layer `b` on the workload,
// interleaved (a, b, a, b, ...) at one thread so that both see the same
// machine; each with its own bucket block and its own cache, as a training
// loop keeps one per layer. (One shared cache resized its buffers at every
// switch between the two paths: the materialized path's P, 32 MB at
// 4 x 512 x 512 x 8, was allocated afresh each time and its page faults
// timed, a third of that path's time on the VM that measured it.) Sets the
// iteration time to b's and returns both medians in seconds.
std::pair<double, double> interleaved_fwdbwd(benchmark::State& state, const Workload& w,
                                             synattn::SyntaxBiasedAttention<Scalar>& a, const Buckets& a_buckets,
                                             synattn::SyntaxBiasedAttention<Scalar>& b, const Buckets& b_buckets) {
  use_threads(1);
  synattn::AttentionCache<Scalar> a_cache, b_cache;
  Matrix out(w.x.rows(), w.shape.d_model), dx(w.x.rows(), w.shape.d_model);
  const auto run_layer = [&](synattn::SyntaxBiasedAttention<Scalar>& layer, const Buckets& buckets,
                             synattn::AttentionCache<Scalar>& cache) {
    const auto t0 = Clock::now();
    layer.forward({w.x, w.lengths, buckets}, cache, out);
    layer.backward(cache, w.dout, {dx});
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  run_layer(a, a_buckets, a_cache);
  run_layer(b, b_buckets, b_cache);
  std::vector<double> first, second;
  for (auto _ : state) {
    first.push_back(run_layer(a, a_buckets, a_cache));
    second.push_back(run_layer(b, b_buckets, b_cache));
    state.SetIterationTime(second.back());
  }
  use_threads(g_default_threads);
  return {median(first), median(second)};
}

// Tree fusion's cost: forward + backward of a layer fusing `views` trees
// against the same layer with one, interleaved, at one thread. Views 1..
// are the workload's buckets moved by one (b -> (b + 1) mod 11 on every
// visible pair): other trees' buckets with the same mask, which is all the
// kernels see. Counters: one_view_ms, fused_ms (medians) and ratio.
void BM_FusionCost(benchmark::State& state, std::size_t shape_index, int views) {
  const Workload& w = workload(shape_index);
  synattn::AttentionOptions fused_options = layer_options(w.shape);
  fused_options.bias.fusion.views = views;
  synattn::SyntaxBiasedAttention<Scalar> one(layer_options(w.shape)), fused(fused_options);
  Buckets stacked(views * w.buckets.rows(), w.buckets.cols());
  const int nb = one.num_buckets();
  for (int v = 0; v < views; ++v)
    stacked.middleRows(v * w.buckets.rows(), w.buckets.rows()) =
        w.buckets.unaryExpr([&](std::int8_t b) { return b < 0 ? b : static_cast<std::int8_t>((b + v) % nb); });
  const auto [single, many] = interleaved_fwdbwd(state, w, one, w.buckets, fused, stacked);
  state.counters["one_view_ms"] = single * 1e3;
  state.counters["fused_ms"] = many * 1e3;
  state.counters["ratio"] = many / single;
  state.SetLabel(w.source);
}

// The two training paths (attention/path.hpp): forward + backward on the
// fused path against the materialized one, interleaved, at one thread.
// Counters: materialized_ms, fused_ms (medians) and ratio (fused /
// materialized), and P's size, which the automatic rule reads.
void BM_PathCost(benchmark::State& state, std::size_t shape_index) {
  const Workload& w = workload(shape_index);
  synattn::AttentionOptions m_options = layer_options(w.shape), f_options = layer_options(w.shape);
  m_options.path = synattn::AttentionPath::materialized;
  f_options.path = synattn::AttentionPath::fused;
  synattn::SyntaxBiasedAttention<Scalar> materialized(m_options), fused(f_options);
  const auto [m, f] = interleaved_fwdbwd(state, w, materialized, w.buckets, fused, w.buckets);
  state.counters["materialized_ms"] = m * 1e3;
  state.counters["fused_ms"] = f * 1e3;
  state.counters["ratio"] = f / m;
  state.counters["probs_MB"] =
      double(w.shape.batch) * w.shape.heads * double(w.shape.n) * w.shape.n * sizeof(Scalar) / (1024.0 * 1024.0);
  state.SetLabel(w.source);
}

// ---------------------------------------------------------------------------
// Long documents: one sequence of consecutive EWT train sentences, whole,
// while they fit n tokens (the rest, under one sentence, is padding),
// d_model 512, 8 heads, float, one thread, forward + backward.
//   documents/packed/n:N/w:W    the packed input (bias/packed_buckets.hpp),
//                               sentence window W, against the floor of the
//                               four projections alone, interleaved
//   documents/dense/n:N/PATH    the same document as a dense n x n bucket
//                               block, on the fused or materialized path
// Counters: layer_ms, projections_ms and ratio_to_projections (medians);
// live_pairs_pct (query-key pairs computed, of n^2); GFLOPs (the products'
// flops actually done, projections plus live tiles, per second) and
// pct_of_peak against fma_peak_GFLOPs; layer_peak_MB, the peak resident
// memory of the layer's first forward + backward (its parameters, cache,
// output and gradients) over what was resident before it (the corpus and
// the inputs: inputs_rss_MB). The peak is the process's (VmHWM, reset
// first), so it is this benchmark's own only alone in its process:
// tools/bench_documents.sh runs each benchmark in a process of its own.
// ---------------------------------------------------------------------------

struct Document {
  int n = 0, words = 0, sentences = 0;
  synattn::PackedBuckets packed;
  Matrix x, dout;
};

const Document& document(int n, int window) {
  static std::map<std::pair<int, int>, std::unique_ptr<Document>> cache;
  auto& slot = cache[{n, window}];
  if (slot) return *slot;
  slot = std::make_unique<Document>();
  Document& d = *slot;
  d.n = n;
  std::vector<synattn::DependencyTree> trees;
  for (const auto& heads : corpus().sentences) {
    if (d.words + int(heads.size()) > n) break;
    trees.emplace_back(heads);
    d.words += int(heads.size());
  }
  d.sentences = int(trees.size());
  synattn::PackingOptions packing;
  packing.window = window;
  d.packed = synattn::make_packed_buckets({trees}, synattn::Bucketing::linear(kMaxDistance), packing);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  d.x = Matrix::NullaryExpr(n, 512, [&] { return normal(rng); });
  d.dout = Matrix::NullaryExpr(n, 512, [&] { return normal(rng); });
  return d;
}

// Resident memory in MB (util/resident_memory.hpp: Linux's VmHWM, reset
// between phases; the corpus's reading peaks higher than a small layer).
double resident_peak_mb() { return synattn::resident_peak_bytes() / (1024.0 * 1024.0); }
double resident_now_mb() { return synattn::resident_bytes() / (1024.0 * 1024.0); }

// The four projections, forward and backward, alone: qkv = x [Wq; Wk; Wv]^T,
// out = ctx Wo^T; dctx = dout Wo, dWo += dout^T ctx, dWqkv += dqkv^T x,
// dx = dqkv [Wq; Wk; Wv]: 2 n d (4d) multiply-adds x 3.
struct Projections {
  Matrix w_qkv, w_o, qkv, ctx, out, dctx, dw_o, dw_qkv, dqkv, dx;
  Projections(Index n, Index d)
      : w_qkv(Matrix::Constant(3 * d, d, 0.01f)),
        w_o(Matrix::Constant(d, d, 0.01f)),
        qkv(n, 3 * d),
        ctx(Matrix::Constant(n, d, 0.5f)),
        out(n, d),
        dctx(n, d),
        dw_o(Matrix::Zero(d, d)),
        dw_qkv(Matrix::Zero(3 * d, d)),
        dqkv(Matrix::Constant(n, 3 * d, 0.5f)),
        dx(n, d) {}
  void run(const Matrix& x, const Matrix& dout) {
    using synattn::kernels::Accumulate;
    using synattn::kernels::Transpose;
    synattn::kernels::product<Scalar>(qkv, x, w_qkv, Transpose::rhs);
    synattn::kernels::product<Scalar>(out, ctx, w_o, Transpose::rhs);
    synattn::kernels::product<Scalar>(dctx, dout, w_o);
    synattn::kernels::product<Scalar>(dw_o, dout, ctx, Transpose::lhs, Accumulate::add);
    synattn::kernels::product<Scalar>(dw_qkv, dqkv, x, Transpose::lhs, Accumulate::add);
    synattn::kernels::product<Scalar>(dx, dqkv, w_qkv);
  }
};

double timed(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  benchmark::ClobberMemory();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

synattn::AttentionOptions document_options() { return layer_options(Shape{1, 0, 512, 8, false}); }

void BM_PackedDocument(benchmark::State& state, int n, int window) {
  const Document& d = document(n, window);
  use_threads(1);
  synattn::reset_resident_peak();
  const double inputs_mb = resident_now_mb();
  const synattn::SyntaxBiasedAttention<Scalar> layer(document_options());
  synattn::AttentionCache<Scalar> cache;
  Matrix out(n, 512), dx(n, 512);
  Eigen::VectorXf grads = Eigen::VectorXf::Zero(layer.parameter_count());
  const auto run_layer = [&] {
    layer.forward({d.x, d.packed}, cache, out);
    layer.backward(cache, d.dout, {dx}, grads);
    benchmark::DoNotOptimize(dx.data());
  };
  run_layer();
  const double layer_peak_mb = resident_peak_mb() - inputs_mb;  // before the floor's buffers exist
  Projections floor(n, 512);
  const auto run_floor = [&] { floor.run(d.x, d.dout); };
  run_floor();
  std::vector<double> layer_t, floor_t;
  for (auto _ : state) {
    layer_t.push_back(timed(run_layer));
    floor_t.push_back(timed(run_floor));
    state.SetIterationTime(layer_t.back());
  }
  use_threads(g_default_threads);
  const auto windows = synattn::detail::key_windows(d.packed, n, false);
  double live = 0;
  for (const auto& k : windows.blocks) live += double(k.m) * double(k.span);
  const double dk = 64, heads = 8;
  // Forward: QK^T and PV; backward: QK^T again, dP, dV, dQ, dK: 2 flops per multiply-add.
  const double tile_flops = live * heads * 2.0 * (2 * dk + 5 * dk);
  const double projection_flops = 2.0 * n * 512.0 * 2048.0 * 3.0;
  const double peak = fma_run(fma_kernels()[0], 1, 1'000'000);
  state.counters["layer_ms"] = median(layer_t) * 1e3;
  state.counters["projections_ms"] = median(floor_t) * 1e3;
  state.counters["ratio_to_projections"] = median(layer_t) / median(floor_t);
  state.counters["live_pairs_pct"] = 100.0 * live / (double(n) * n);
  state.counters["GFLOPs"] = (tile_flops + projection_flops) / median(layer_t) * 1e-9;
  state.counters["fma_peak_GFLOPs"] = peak;
  state.counters["pct_of_peak"] = 100.0 * (tile_flops + projection_flops) / median(layer_t) * 1e-9 / peak;
  state.counters["layer_peak_MB"] = layer_peak_mb;
  state.counters["inputs_rss_MB"] = inputs_mb;
  state.counters["words"] = d.words;
  state.counters["sentences"] = d.sentences;
}

void BM_DenseDocument(benchmark::State& state, int n, synattn::AttentionPath path) {
  const Document& d = document(n, 1);
  use_threads(1);
  const Buckets buckets = d.packed.dense(n);
  const std::vector<int> lengths = d.packed.lengths();
  synattn::reset_resident_peak();
  const double inputs_mb = resident_now_mb();
  synattn::AttentionOptions o = document_options();
  o.path = path;
  const synattn::SyntaxBiasedAttention<Scalar> layer(o);
  synattn::AttentionCache<Scalar> cache;
  Matrix out(n, 512), dx(n, 512);
  Eigen::VectorXf grads = Eigen::VectorXf::Zero(layer.parameter_count());
  const auto run_layer = [&] {
    layer.forward({d.x, lengths, buckets}, cache, out);
    layer.backward(cache, d.dout, {dx}, grads);
    benchmark::DoNotOptimize(dx.data());
  };
  run_layer();
  const double layer_peak_mb = resident_peak_mb() - inputs_mb;
  std::vector<double> layer_t;
  for (auto _ : state) {
    layer_t.push_back(timed(run_layer));
    state.SetIterationTime(layer_t.back());
  }
  use_threads(g_default_threads);
  state.counters["layer_ms"] = median(layer_t) * 1e3;
  state.counters["layer_peak_MB"] = layer_peak_mb;
  state.counters["inputs_rss_MB"] = inputs_mb;
}

// ---------------------------------------------------------------------------
// LibTorch: the same layer in LibTorch's C++ API (libtorch_peer.cpp), with
// the synattn layer's own weights, on the same inputs and trees.
// ---------------------------------------------------------------------------

#if defined(SYNATTN_WITH_LIBTORCH)
std::unique_ptr<synattn_bench::LibTorchPeer> make_peer(const Workload& w,
                                                       const synattn::SyntaxBiasedAttention<Scalar>& layer) {
  const auto p = [&](const char* name) { return layer.parameter(name).data(); };
  const synattn_bench::TorchPeerWeights weights{p("Wq"), p("Wk"), p("Wv"), p("bq"), p("bk"), p("bv"), p("Wo"), p("bo"),
                                                p("table"), layer.num_buckets(), layer.parameter("scale")(0, 0)};
  return std::make_unique<synattn_bench::LibTorchPeer>(w.shape.batch, w.shape.n, w.shape.d_model, w.shape.heads,
                                                       w.x.data(), w.buckets.data(), w.dout.data(), weights);
}

// Timed like BM_Layer (manual time, median in layer_ms), without the floor.
void BM_LibTorch(benchmark::State& state, std::size_t shape_index, bool backward, int threads) {
  const Workload& w = workload(shape_index);
  use_threads(threads);
  synattn_bench::LibTorchPeer::set_threads(threads);
  const synattn::SyntaxBiasedAttention<Scalar> layer(layer_options(w.shape));
  const auto peer = make_peer(w, layer);
  const auto run = [&] { backward ? peer->forward_backward() : peer->forward(); };
  run();
  run();
  std::vector<double> times;
  const std::clock_t cpu0 = std::clock();
  const auto wall0 = Clock::now();
  for (auto _ : state) {
    const auto t0 = Clock::now();
    run();
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(t);
    times.push_back(t);
  }
  const double cpu = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const double flops = forward_flops(w.shape) + (backward ? backward_flops(w.shape) : 0.0);
  state.counters["layer_ms"] = median(times) * 1e3;
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // At 2 threads torch's idle OpenMP threads lower this too; a 1-thread
  // value well below 1 means another process had the core.
  state.counters["cpu_util"] = cpu / (wall * threads);
  state.SetLabel(synattn_bench::LibTorchPeer::describe());
}

// --synattn_check_libtorch: on 16x128x512x8 (real trees), the peer's output
// and dL/dx against synattn's, relative to the largest magnitude.
int check_libtorch() {
  const Workload& w = workload(1);
  synattn::SyntaxBiasedAttention<Scalar> layer(layer_options(w.shape));
  synattn::AttentionCache<Scalar> cache;
  Matrix out(w.x.rows(), w.shape.d_model), dx(w.x.rows(), w.shape.d_model);
  layer.forward({w.x, w.lengths, w.buckets}, cache, out);
  layer.backward(cache, w.dout, {dx});
  const auto peer = make_peer(w, layer);
  peer->forward_backward();
  Matrix t_out(out.rows(), out.cols()), t_dx(dx.rows(), dx.cols());
  peer->copy_output(t_out.data());
  peer->copy_input_gradient(t_dx.data());
  Matrix t_inf(out.rows(), out.cols());
  peer->forward();
  peer->copy_output(t_inf.data());
  const auto rel = [](const Matrix& a, const Matrix& b) {
    return double((a - b).cwiseAbs().maxCoeff()) / double(a.cwiseAbs().maxCoeff());
  };
  const double e_out = rel(out, t_out), e_dx = rel(dx, t_dx), e_inf = rel(out, t_inf);
  const bool ok = e_out < 1e-4 && e_dx < 1e-4 && e_inf < 1e-4;
  std::printf("libtorch check (%s, %s): output rel. error %.2e, dL/dx %.2e, inference output %.2e (bound 1e-4): %s\n",
              w.shape.name().c_str(), synattn_bench::LibTorchPeer::describe().c_str(), e_out, e_dx, e_inf,
              ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
#endif

void register_all() {
  const std::vector<int> thread_counts = {1, 2};
  for (std::size_t k = 0; k < fma_kernels().size(); ++k)
    for (int t : thread_counts)
      benchmark::RegisterBenchmark(
          ("fma_peak/" + std::string(fma_kernels()[k].isa) + "/omp:" + std::to_string(t)).c_str(), BM_FmaPeak, k, t)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
  for (std::size_t i = 0; i < shapes().size(); ++i)
    if (!shapes()[i].latency && !g_busy)
      benchmark::RegisterBenchmark(("path/fwdbwd/" + shapes()[i].name() + "/omp:1").c_str(), BM_PathCost, i)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  if (!g_busy) {
    for (int n : {1024, 4096, 16384})
      for (int window : {0, 1})
        benchmark::RegisterBenchmark(
            ("documents/packed/n:" + std::to_string(n) + "/w:" + std::to_string(window) + "/omp:1").c_str(),
            BM_PackedDocument, n, window)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    for (int n : {1024, 4096})
      for (const auto path : {synattn::AttentionPath::fused, synattn::AttentionPath::materialized})
        benchmark::RegisterBenchmark(
            ("documents/dense/n:" + std::to_string(n) + "/" + synattn::to_string(path) + "/omp:1").c_str(),
            BM_DenseDocument, n, path)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->Iterations(3);
  }
  for (std::size_t i = 0; i < shapes().size(); ++i) {
    const Shape& s = shapes()[i];
    for (int pass = 0; pass < (s.latency ? 1 : 2); ++pass)
      benchmark::RegisterBenchmark(
          (std::string(g_busy ? "busy/" : "") + "threads/" + (pass ? "fwdbwd" : "fwd") + "/" + s.name()).c_str(),
          BM_ThreadRatio, i, pass == 1)
          ->UseManualTime()
          ->Unit(s.latency ? benchmark::kMicrosecond : benchmark::kMillisecond);
  }
  for (std::size_t i = 0; i < shapes().size(); ++i)
    for (int views : {2, 3})
      if (!shapes()[i].latency && !g_busy)
        benchmark::RegisterBenchmark(
            ("fusion/fwdbwd/" + shapes()[i].name() + "/views:" + std::to_string(views) + "/omp:1").c_str(),
            BM_FusionCost, i, views)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
  for (std::size_t i = 0; i < shapes().size(); ++i) {
    const Shape& s = shapes()[i];
    for (int pass = 0; pass < (s.latency ? 1 : 2); ++pass)
      for (int t : thread_counts) {
        const std::string name = std::string(g_busy ? "busy/" : "") + (pass ? "fwdbwd" : "fwd") + "/" + s.name() +
                                 "/omp:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), BM_Layer, i, pass == 1, t)
            ->UseManualTime()
            ->Unit(s.latency ? benchmark::kMicrosecond : benchmark::kMillisecond);
#if defined(SYNATTN_WITH_LIBTORCH)
        benchmark::RegisterBenchmark(("libtorch/" + name).c_str(), BM_LibTorch, i, pass == 1, t)
            ->UseManualTime()
            ->Unit(s.latency ? benchmark::kMicrosecond : benchmark::kMillisecond);
#endif
      }
  }
}

// ---------------------------------------------------------------------------
// --synattn_dump=DIR: the distance blocks, for pytorch_reference.py
// ---------------------------------------------------------------------------

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

int dump(const std::string& dir) {
  std::ostringstream manifest;
  manifest << "{\n  \"treebank\": " << json_string(corpus().path) << ",\n  \"max_distance\": " << kMaxDistance
           << ",\n  \"cross_distance\": " << synattn::Bucketing::linear(kMaxDistance).cross_distance()
           << ",\n  \"shapes\": [\n";
  for (std::size_t i = 0; i < shapes().size(); ++i) {
    const Workload& w = workload(i);
    const Shape& s = w.shape;
    const std::string file = "dist_" + s.name() + ".npy";
    synattn::write_npy<std::int8_t>(dir + "/" + file, w.distances.data(),
                                    {std::size_t(s.batch), std::size_t(s.n), std::size_t(s.n)});
    manifest << "    {\"name\": " << json_string(s.name()) << ", \"batch\": " << s.batch << ", \"n\": " << s.n
             << ", \"d_model\": " << s.d_model << ", \"heads\": " << s.heads
             << ", \"latency\": " << (s.latency ? "true" : "false") << ", \"dist\": " << json_string(file)
             << ", \"lengths\": [";
    for (std::size_t b = 0; b < w.lengths.size(); ++b) manifest << (b ? ", " : "") << w.lengths[b];
    manifest << "], \"source\": " << json_string(w.source) << "}" << (i + 1 < shapes().size() ? "," : "") << "\n";
  }
  manifest << "  ]\n}\n";
  std::ofstream out(dir + "/manifest.json");
  out << manifest.str();
  if (!out) {
    std::fprintf(stderr, "cannot write %s/manifest.json\n", dir.c_str());
    return 1;
  }
  std::printf("wrote %zu distance blocks and manifest.json to %s\n", shapes().size(), dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(_OPENMP)
  g_default_threads = omp_get_max_threads();
#endif
  std::vector<char*> args;
  std::string dump_dir;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--synattn_dump=", 0) == 0) {
      dump_dir = a.substr(std::strlen("--synattn_dump="));
    } else if (a == "--synattn_check_libtorch") {
#if defined(SYNATTN_WITH_LIBTORCH)
      try {
        return check_libtorch();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_attention: %s\n", e.what());
        return 1;
      }
#else
      std::fprintf(stderr, "bench_attention: built without LibTorch (find_package(Torch) failed)\n");
      return 1;
#endif
    } else if (a == "--synattn_busy") {
      g_busy = true;
    } else if (a.rfind("--synattn_blas_threads=", 0) == 0) {
      g_blas_threads = std::atoi(a.c_str() + std::strlen("--synattn_blas_threads="));
    } else {
      args.push_back(argv[i]);
    }
  }
  try {
    if (!dump_dir.empty()) return dump(dump_dir);
    register_all();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_attention: %s\n", e.what());
    return 1;
  }
#if defined(EIGEN_USE_BLAS)
  std::string gemm = "OpenBLAS (EIGEN_USE_BLAS)";
  if (openblas_get_corename) gemm += std::string(", core ") + openblas_get_corename();
  if (openblas_get_config) gemm += std::string(", ") + openblas_get_config();
  gemm += ", blas threads " + (g_blas_threads > 0 ? std::to_string(g_blas_threads) : std::string("= omp"));
#else
  const std::string gemm = "Eigen";
#endif
  synattn_bench::add_machine_context();
  benchmark::AddCustomContext("gemm", gemm);
  benchmark::AddCustomContext("eigen_simd", Eigen::SimdInstructionSetsInUse());
  benchmark::AddCustomContext("fma_kernel", fma_kernels().front().isa);
  benchmark::AddCustomContext("trees", corpus().path);
#if defined(SYNATTN_WITH_LIBTORCH)
  benchmark::AddCustomContext("libtorch", synattn_bench::LibTorchPeer::describe());
#endif
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  std::unique_ptr<synattn_bench::BusyCore> busy;
  if (g_busy) {
    busy = std::make_unique<synattn_bench::BusyCore>();
    benchmark::AddCustomContext("busy_core", std::to_string(busy->core()));
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
