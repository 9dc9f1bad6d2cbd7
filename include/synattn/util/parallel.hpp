// synattn — the library's only use of OpenMP: a parallel loop over independent
// tasks, and the fixed partitions that keep results bit-identical for every
// thread count.
//
// OpenMP is optional. Without it (no -fopenmp) every loop runs serially and
// gives the same bits as with it: tasks write disjoint outputs, reductions go
// through per-task partials summed afterwards in task order, and work is split
// by shape only, never by the number of threads.
#ifndef SYNATTN_UTIL_PARALLEL_HPP
#define SYNATTN_UTIL_PARALLEL_HPP

#include <Eigen/Core>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <limits>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../config.hpp"

namespace synattn {

// Threads a parallel_for may use (1 without OpenMP).
inline int max_threads() noexcept {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Below this many multiply-adds a loop runs serially, without a parallel
// region: opening one costs microseconds (much more on a loaded machine) and
// would dominate small batches. The value is also what keeps the serial path
// bit-identical to the parallel one: Eigen splits a product across threads
// only from 2 * 50000 multiply-adds on (Parallelizer.h), so no product inside
// a loop smaller than this is ever split.
constexpr double kMinParallelWork = 100000.0;

// True when a loop of `work` multiply-adds runs in a parallel region.
inline bool runs_parallel(double work) noexcept {
#if defined(_OPENMP)
  return work >= kMinParallelWork && omp_get_max_threads() > 1 && !omp_in_parallel();
#else
  (void)work;
  return false;
#endif
}

// How many threads a loop of `work` multiply-adds may run on: the number of
// per-thread scratch slots its body needs (thread indices are below it).
inline int team_size(double work) noexcept { return runs_parallel(work) ? max_threads() : 1; }

namespace detail {

using Clock = std::chrono::steady_clock;

inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread: what its tasks cost, without the time it
// spent pre-empted (wall time would count that as work). Wall time where
// POSIX thread clocks are missing.
inline std::int64_t thread_cpu_ns() noexcept {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
#endif
  return now_ns();
}

// A parallel region only pays when every thread of its team runs. On a busy
// machine a team thread is often pre-empted (another process has its core),
// and the region's closing barrier then waits for it a whole scheduler time
// slice, milliseconds, while the work itself took a fraction of that: the
// layer's forward pass measured 15-20x slower at two threads than at one on
// a 2-core machine with one core busy. So every region is timed, and one in
// which a thread waited on a pre-empted one (its wall time above the CPU time
// of its busiest thread by more than a quarter, and by more than
// kLossFloorNs) sends the following loops to the serial path for a while:
// on a machine that pre-empts our threads, even a region that beat the
// serial path keeps the other threads spinning on a core someone else needs,
// and measured no faster than one thread. The serial spell is kFirstBackoffNs, doubled
// (up to kMaxBackoffNs) each time a region loses again soon after the last
// loss, back to the first value after a calm spell. The serial path computes
// the same bits (see serial_products), so only the speed changes.
constexpr std::int64_t kLossFloorNs = 200000;        // 0.2 ms: far above an idle team's fork and join
constexpr std::int64_t kFirstBackoffNs = 20000000;   // 20 ms
constexpr std::int64_t kMaxBackoffNs = 1000000000;   // 1 s: how long a machine that became idle stays serial

struct Contention {
  std::atomic<std::int64_t> serial_until{0};  // now_ns() before which loops run serially
  std::atomic<std::int64_t> backoff{kFirstBackoffNs};
  std::atomic<std::int64_t> last_loss{std::numeric_limits<std::int64_t>::min() / 2};
  std::atomic<long> losses{0};      // regions caught waiting on a pre-empted thread (benchmarks, tests)
  std::atomic<int> enabled{-1};     // -1: SYNATTN_CONTENTION not read yet; 0 off; 1 on
};

inline Contention& contention() noexcept {
  static Contention state;
  return state;
}

inline bool contention_guard_enabled() noexcept {
  int e = contention().enabled.load(std::memory_order_relaxed);
  if (e < 0) {
    const char* env = std::getenv("SYNATTN_CONTENTION");
    e = (env != nullptr && (std::strcmp(env, "off") == 0 || std::strcmp(env, "0") == 0)) ? 0 : 1;
    contention().enabled.store(e, std::memory_order_relaxed);
  }
  return e == 1;
}

// Whether loops should skip their parallel region now, after a recent loss.
inline bool contended_now() noexcept {
  return contention_guard_enabled() && now_ns() < contention().serial_until.load(std::memory_order_relaxed);
}

// Whether a region that ran for `wall` ns, whose busiest thread spent
// `busiest` ns of CPU time in it, had a thread wait on a pre-empted one.
constexpr bool waited_on_preempted(std::int64_t wall, std::int64_t busiest) noexcept {
  return wall > busiest + busiest / 4 + kLossFloorNs;
}

// Records a region that ran for `wall` ns, whose busiest thread spent
// `busiest` ns of CPU time in it.
inline void record_region(std::int64_t end, std::int64_t wall, std::int64_t busiest) noexcept {
  if (!waited_on_preempted(wall, busiest) || !contention_guard_enabled()) return;
  Contention& c = contention();
  const std::int64_t backoff = c.backoff.load(std::memory_order_relaxed);
  const bool soon_after_last = end - c.last_loss.load(std::memory_order_relaxed) < 4 * backoff;
  const std::int64_t next = soon_after_last ? std::min(2 * backoff, kMaxBackoffNs) : kFirstBackoffNs;
  c.backoff.store(next, std::memory_order_relaxed);
  c.last_loss.store(end, std::memory_order_relaxed);
  c.serial_until.store(end + next, std::memory_order_relaxed);
  c.losses.fetch_add(1, std::memory_order_relaxed);
}

#if defined(_OPENMP)
// Runs a loop that would have had a parallel region on this thread alone,
// with the same bits: inside a team of several threads Eigen never splits a
// product, so here OpenMP's thread setting is lowered to one for the loop,
// and Eigen (which follows it) computes every product serially too. Only
// possible when Eigen follows OpenMP: after Eigen::setNbThreads(n > 1) the
// loops keep their parallel regions.
class SerialProducts {
 public:
  SerialProducts() noexcept : saved_(omp_get_max_threads()) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SerialProducts() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SerialProducts(const SerialProducts&) = delete;
  SerialProducts& operator=(const SerialProducts&) = delete;
  // False when Eigen was told its own thread count, which this cannot lower.
  static bool possible() noexcept {
    SerialProducts probe;
    return Eigen::nbThreads() <= 1;
  }

 private:
  int saved_;
};
#endif

}  // namespace detail

// Regions caught waiting on a pre-empted thread since the program started (see
// detail::Contention): a benchmark's way to see the guard at work.
inline long contended_regions() noexcept {
  return detail::contention().losses.load(std::memory_order_relaxed);
}

// Turns the busy-machine guard on or off (on by default; SYNATTN_CONTENTION=off
// in the environment turns it off). With it off, every loop at or above
// kMinParallelWork opens its parallel region whatever the last ones cost.
inline void set_contention_guard(bool on) noexcept {
  detail::contention().enabled.store(on ? 1 : 0, std::memory_order_relaxed);
  if (!on) detail::contention().serial_until.store(0, std::memory_order_relaxed);
}

namespace detail {

// A borrowed task body, callable as body(t, thread): a pointer to the
// caller's callable and the one function that knows its type. It lets every
// parallel loop of a program share one parallel region (run_tasks below)
// instead of an OpenMP region, its outlined function and its exception
// handling compiled again for every lambda (those copies were a tenth of the
// object code of a file using the layer). One indirect call per
// task costs nothing next to a task (a block of rows or a head).
class TaskRef {
 public:
  template <class Callable>
  explicit TaskRef(const Callable& body) noexcept : body_(&body), call_(&invoke<Callable>) {}
  void operator()(std::ptrdiff_t t, int thread) const { call_(body_, t, thread); }

 private:
  template <class Callable>
  static void invoke(const void* body, std::ptrdiff_t t, int thread) {
    (*static_cast<const Callable*>(body))(t, thread);
  }
  const void* body_;
  void (*call_)(const void*, std::ptrdiff_t, int);
};

// parallel_for_threads without the template: see there.
inline void run_tasks(std::ptrdiff_t count, double work, TaskRef body) {
  if (count <= 0) return;
#if defined(_OPENMP)
  if (runs_parallel(work)) {
    if ((count == 1 || contended_now()) && SerialProducts::possible()) {
      SerialProducts serial;
      for (std::ptrdiff_t t = 0; t < count; ++t) body(t, 0);
      return;
    }
    std::exception_ptr error;
    std::ptrdiff_t error_task = count;
    std::atomic<std::ptrdiff_t> next{0};
    std::atomic<std::int64_t> busiest{0};
    const std::int64_t start = now_ns();
#pragma omp parallel
    {
      const int thread = omp_get_thread_num();
      const std::int64_t entered = thread_cpu_ns();
      for (std::ptrdiff_t t = next.fetch_add(1, std::memory_order_relaxed); t < count;
           t = next.fetch_add(1, std::memory_order_relaxed)) {
        try {
          body(t, thread);
        } catch (...) {
#pragma omp critical(synattn_parallel_for_error)
          {
            if (t < error_task) {
              error_task = t;
              error = std::current_exception();
            }
          }
        }
      }
      const std::int64_t mine = thread_cpu_ns() - entered;
      std::int64_t seen = busiest.load(std::memory_order_relaxed);
      while (mine > seen && !busiest.compare_exchange_weak(seen, mine, std::memory_order_relaxed)) {
      }
    }
    const std::int64_t end = now_ns();
    record_region(end, end - start, busiest.load(std::memory_order_relaxed));
    if (error) std::rethrow_exception(error);
    return;
  }
#else
  (void)work;
#endif
  for (std::ptrdiff_t t = 0; t < count; ++t) body(t, 0);
}

}  // namespace detail

// Runs body(t, thread) for every t in [0, count), where thread in
// [0, team_size(work)) identifies the thread running task t (for per-thread
// scratch; results must not depend on it). `work` estimates the loop's total
// multiply-adds (at least those of its largest product). Tasks must be
// independent (each writes only its own outputs). An exception thrown by a
// task is caught inside the parallel region (letting it escape would
// terminate the program) and the one of the lowest task index is rethrown
// once every task has finished.
//
// A loop runs serially, with the same bits, when its work is below
// kMinParallelWork, when it has one task (a region would only add a fork and
// a join, and on a busy machine a wait for the other threads), and for a
// while after a region in which a thread waited on a pre-empted one
// (detail::Contention).
// Otherwise it opens a region with the full team, whose threads take tasks
// in order from a shared counter. Inside a team Eigen runs every product
// serially; a serial loop gets the same by detail::SerialProducts.
template <class Body>
void parallel_for_threads(std::ptrdiff_t count, double work, Body&& body) {
  // A const call operator whatever the body's is, so TaskRef needs no cast.
  const auto call = [&body](std::ptrdiff_t t, int thread) { body(t, thread); };
  detail::run_tasks(count, work, detail::TaskRef(call));
}

// body(t) for every t in [0, count); see parallel_for_threads.
template <class Body>
void parallel_for(std::ptrdiff_t count, double work, Body&& body) {
  parallel_for_threads(count, work, [&](std::ptrdiff_t t, int) { body(t); });
}

// Rows per block when a product over `total` rows is split into independent
// row blocks: a function of the shape only (never of the thread count), at
// least 256 rows and at most four blocks, because every block re-packs the
// product's other operand (measured: 8 blocks cost 10-15% more than one
// product, 4 blocks of >= 256 rows a few percent).
inline std::ptrdiff_t chunk_rows(std::ptrdiff_t total) noexcept {
  const std::ptrdiff_t quarter = (total + 3) / 4;
  return std::max<std::ptrdiff_t>(256, (quarter + 63) / 64 * 64);
}

// body(begin, size) for the fixed row blocks [begin, begin + size) of
// [0, total); `work_per_row` is the multiply-adds of one row.
template <class Body>
void parallel_chunks(std::ptrdiff_t total, double work_per_row, Body&& body) {
  if (total <= 0) return;
  const std::ptrdiff_t chunk = chunk_rows(total);
  const std::ptrdiff_t count = (total + chunk - 1) / chunk;
  parallel_for(count, work_per_row * static_cast<double>(total), [&](std::ptrdiff_t t) {
    const std::ptrdiff_t begin = t * chunk;
    body(begin, std::min(chunk, total - begin));
  });
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_PARALLEL_HPP
