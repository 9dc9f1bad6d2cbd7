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

#include <algorithm>
#include <cstddef>
#include <exception>

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

// Runs body(t, thread) for every t in [0, count), where thread in
// [0, team_size(work)) identifies the thread running task t (for per-thread
// scratch; results must not depend on it). `work` estimates the loop's total
// multiply-adds (at least those of its largest product). Tasks must be
// independent (each writes only its own outputs). An exception thrown by a
// task is caught inside the parallel region (letting it escape would
// terminate the program) and the one of the lowest task index is rethrown
// once every task has finished.
//
// A parallel region always opens with the full team, even for one task:
// Eigen runs a product serially when it is called from a team of more than
// one thread, and otherwise splits it by thread count itself, which would
// change its rounding. So every product called from a task is computed the
// same way whatever the number of threads.
template <class Body>
void parallel_for_threads(std::ptrdiff_t count, double work, Body&& body) {
  if (count <= 0) return;
#if defined(_OPENMP)
  if (runs_parallel(work)) {
    std::exception_ptr error;
    std::ptrdiff_t error_task = count;
#pragma omp parallel for schedule(dynamic, 1)
    for (std::ptrdiff_t t = 0; t < count; ++t) {
      try {
        body(t, omp_get_thread_num());
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
    if (error) std::rethrow_exception(error);
    return;
  }
#else
  (void)work;
#endif
  for (std::ptrdiff_t t = 0; t < count; ++t) body(t, 0);
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
