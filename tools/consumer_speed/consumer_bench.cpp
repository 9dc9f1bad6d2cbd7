// What a user's program gets from synattn: one SyntaxBiasedAttention<float>
// on bench_attention's shapes and trees, timed like bench_attention times it
// (inference forward, or forward + backward; the median of individually timed
// iterations), with
// nothing but the installed package and the consumer's own compiler flags.
//
//   consumer_bench --dist FILE.npy --batch B --n N --d-model D --heads H
//                  --pass fwd|fwdbwd [--threads 1] [--runs 7] [--min-time 0.2]
//
// FILE is one of the distance blocks `bench_attention --synattn_dump=DIR`
// writes ((B, n, n) int8, no padding); buckets and layer options are
// bench_attention's (linear buckets up to 10, table initialised as a linear
// decay 0.3). Prints one JSON line: {"ms": median, "runs_ms": [...], ...}.
// tools/consumer_speed.py drives it.
#include <synattn/synattn.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using Matrix = synattn::RowMajorMatrix<float>;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string dist, pass = "fwd";
  int batch = 0, n = 0, d_model = 0, heads = 0, threads = 1, runs = 7;
  double min_time = 0.2;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + k);
    const std::string v = argv[++i];
    if (k == "--dist") a.dist = v;
    else if (k == "--pass") a.pass = v;
    else if (k == "--batch") a.batch = std::stoi(v);
    else if (k == "--n") a.n = std::stoi(v);
    else if (k == "--d-model") a.d_model = std::stoi(v);
    else if (k == "--heads") a.heads = std::stoi(v);
    else if (k == "--threads") a.threads = std::stoi(v);
    else if (k == "--runs") a.runs = std::stoi(v);
    else if (k == "--min-time") a.min_time = std::stod(v);
    else throw std::invalid_argument("unknown option " + k);
  }
  if (a.dist.empty() || a.batch <= 0 || a.n <= 0 || a.d_model <= 0 || a.heads <= 0 || a.runs <= 0 ||
      (a.pass != "fwd" && a.pass != "fwdbwd"))
    throw std::invalid_argument("need --dist, --batch, --n, --d-model, --heads > 0 and --pass fwd|fwdbwd");
  return a;
}

int run(const Args& a) {
#if defined(_OPENMP)
  omp_set_num_threads(a.threads);
#endif
  Eigen::setNbThreads(a.threads);
  const synattn::NpyArray dist_npy = synattn::read_npy(a.dist);
  const std::vector<std::int8_t> dist = dist_npy.to_vector<std::int8_t>();
  const synattn::Index rows = synattn::Index(a.batch) * a.n;
  if (static_cast<synattn::Index>(dist.size()) != rows * a.n) throw std::invalid_argument(a.dist + ": wrong size");
  const Eigen::Map<const synattn::RowMajorMatrix<std::int8_t>> distances(dist.data(), rows, a.n);
  const synattn::Bucketing bucketing = synattn::Bucketing::linear(10);
  synattn::RowMajorMatrix<std::int8_t> buckets(rows, a.n);
  synattn::bucketize<std::int8_t, std::int8_t>(bucketing, distances, buckets);
  const std::vector<int> lengths(static_cast<std::size_t>(a.batch), a.n);

  synattn::AttentionOptions o(a.d_model, a.heads);
  o.bias.bucketing = bucketing;
  o.bias.init = synattn::TableInit::LinearDecay;
  o.bias.decay = 0.3;
  synattn::SyntaxBiasedAttention<float> layer(o);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Matrix x(rows, a.d_model), dout(rows, a.d_model), out(rows, a.d_model), dx(rows, a.d_model);
  for (synattn::Index i = 0; i < x.size(); ++i) x.data()[i] = u(rng);
  for (synattn::Index i = 0; i < dout.size(); ++i) dout.data()[i] = u(rng);
  synattn::AttentionCache<float> cache;
  const bool backward = a.pass == "fwdbwd";
  const auto step = [&] {
    if (backward) {
      layer.forward({x, lengths, buckets}, cache, out);
      layer.backward(cache, dout, {dx});
    } else {
      layer.infer({x, lengths, buckets}, cache, out);
    }
  };
  for (int i = 0; i < 3; ++i) step();
  if (!out.allFinite()) throw std::runtime_error("non-finite output");
  const auto t0 = Clock::now();
  step();
  const double one = std::max(1e-7, std::chrono::duration<double>(Clock::now() - t0).count());
  const int iters = std::max(1, static_cast<int>(a.min_time / one + 0.999));
  // Every iteration is timed on its own and "ms" is the median over all of
  // them, as bench_attention's layer_ms is: on a loaded machine a run's mean
  // would include the scheduler's preemptions, which a median of
  // microsecond-sized iterations leaves out. runs_ms: each run's median.
  std::vector<double> all, per_run;
  const std::clock_t cpu0 = std::clock();
  const auto wall0 = Clock::now();
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  for (int r = 0; r < a.runs; ++r) {
    std::vector<double> run_times;
    for (int i = 0; i < iters; ++i) {
      const auto i0 = Clock::now();
      step();
      run_times.push_back(std::chrono::duration<double>(Clock::now() - i0).count());
    }
    per_run.push_back(median(run_times));
    all.insert(all.end(), run_times.begin(), run_times.end());
  }
  const double cpu = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const std::vector<double>& per_iter = per_run;
  const double med = median(all);
  std::printf("{\"ms\": %.6f, \"runs_ms\": [", med * 1e3);
  for (std::size_t i = 0; i < per_iter.size(); ++i) std::printf("%s%.6f", i ? ", " : "", per_iter[i] * 1e3);
  std::printf("], \"iterations_per_run\": %d, \"cpu_util\": %.3f, \"build_info\": \"%s\"}\n", iters,
              cpu / (wall * a.threads), synattn::build_info().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_bench: %s\n", e.what());
    return 1;
  }
}
