// util/parallel.hpp: every task runs once, errors surface by task index, and
// the busy-machine guard sends loops to a serial path that keeps products
// unsplit (so results keep their bits).
#include <catch2/catch.hpp>

#include <synattn/util/parallel.hpp>

#include <Eigen/Core>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using synattn::parallel_for_threads;
namespace pd = synattn::detail;

constexpr double kBig = 1e9;  // work far above kMinParallelWork

// Puts the guard in its just-started state.
void reset_guard() {
  synattn::set_contention_guard(false);
  pd::contention().backoff.store(pd::kFirstBackoffNs);
  pd::contention().last_loss.store(std::numeric_limits<std::int64_t>::min() / 2);
  synattn::set_contention_guard(true);
}

// A region that ended at `end` after `wall` ns, with its threads busy `busy`.
void region(std::int64_t end, std::int64_t wall, std::int64_t busy) { pd::record_region(end, wall, busy); }

struct Visit {
  std::vector<int> hits, threads;
  std::vector<int> omp_threads_inside, in_parallel;
  explicit Visit(int count) : hits(count, 0), threads(count, -1), omp_threads_inside(count, 0), in_parallel(count, 0) {}
};

Visit run_loop(int count, double work) {
  Visit v(count);
  parallel_for_threads(count, work, [&](std::ptrdiff_t t, int thread) {
    ++v.hits[t];
    v.threads[t] = thread;
#if defined(_OPENMP)
    v.omp_threads_inside[t] = omp_get_max_threads();
    v.in_parallel[t] = omp_in_parallel();
#endif
  });
  return v;
}

}  // namespace

TEST_CASE("parallel_for_threads runs every task once, on a thread below team_size", "[parallel]") {
  reset_guard();
  for (double work : {10.0, kBig})
    for (int count : {0, 1, 2, 7, 64}) {
      const Visit v = run_loop(count, work);
      for (int t = 0; t < count; ++t) {
        INFO("work " << work << ", " << count << " tasks, task " << t);
        CHECK(v.hits[t] == 1);
        CHECK(v.threads[t] >= 0);
        CHECK(v.threads[t] < synattn::team_size(work));
      }
    }
}

TEST_CASE("parallel_for_threads rethrows the error of the lowest task index", "[parallel]") {
  reset_guard();
  for (bool contended : {false, true}) {
    if (contended) region(pd::now_ns() + std::int64_t(1e12), std::int64_t(1e9), 0);
    std::atomic<int> ran{0};
    try {
      parallel_for_threads(16, kBig, [&](std::ptrdiff_t t, int) {
        ++ran;
        if (t == 5 || t == 11) throw std::runtime_error("task " + std::to_string(t));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      INFO("contended " << contended);
      CHECK(std::string(e.what()) == "task 5");
    }
    CHECK(ran >= 6);
    reset_guard();
  }
}

#if defined(_OPENMP)
TEST_CASE("a loop of one task runs serially, with OpenMP (and so Eigen) at one thread inside", "[parallel]") {
  reset_guard();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  const Visit v = run_loop(1, kBig);
  CHECK(v.hits[0] == 1);
  CHECK(v.in_parallel[0] == 0);
  CHECK(v.omp_threads_inside[0] == 1);
  CHECK(omp_get_max_threads() == 2);  // restored
  omp_set_num_threads(saved);
}

TEST_CASE("after a region lost to the serial path, loops run serially for the backoff, then in parallel again",
          "[parallel]") {
  reset_guard();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);

  // Imbalance is no loss: the busiest thread ran the whole time.
  CHECK_FALSE(pd::waited_on_preempted(std::int64_t(5e6) + 10000, std::int64_t(5e6)));
  CHECK(pd::waited_on_preempted(std::int64_t(8e6), std::int64_t(5e6)));
  // A region whose wall time is within the floor of its busiest thread's is no loss.
  long losses = synattn::contended_regions();
  region(pd::now_ns(), pd::kLossFloorNs, 0);
  CHECK(synattn::contended_regions() == losses);
  CHECK_FALSE(pd::contended_now());
  Visit v = run_loop(8, kBig);
  CHECK(v.in_parallel[0] == 1);

  // A loss: serial from now on (the end is put in the future, so that a slow
  // machine cannot outlast the backoff inside this test). The real region
  // above may have been a loss itself on a loaded machine: start afresh.
  reset_guard();
  losses = synattn::contended_regions();
  const std::int64_t future = pd::now_ns() + std::int64_t(1e12);
  region(future, 3 * pd::kLossFloorNs, pd::kLossFloorNs);
  CHECK(synattn::contended_regions() == losses + 1);
  CHECK(pd::contended_now());
  CHECK(pd::contention().backoff.load() == pd::kFirstBackoffNs);
  v = run_loop(8, kBig);
  for (int t = 0; t < 8; ++t) {
    CHECK(v.hits[t] == 1);
    CHECK(v.threads[t] == 0);
    CHECK(v.in_parallel[t] == 0);
    CHECK(v.omp_threads_inside[t] == 1);
  }
  CHECK(omp_get_max_threads() == 2);
  CHECK(Eigen::nbThreads() == 2);  // Eigen follows OpenMP again

  // Losses soon after one another double the backoff, up to its cap; one
  // after a calm spell starts again from the first value. (No real region
  // ran since the loss: the loop above was serial.)
  region(future + 1, 3 * pd::kLossFloorNs, 0);
  CHECK(pd::contention().backoff.load() == 2 * pd::kFirstBackoffNs);
  for (int i = 0; i < 20; ++i) region(future + 2 + i, 3 * pd::kLossFloorNs, 0);
  CHECK(pd::contention().backoff.load() == pd::kMaxBackoffNs);
  region(future + 10 * pd::kMaxBackoffNs, 3 * pd::kLossFloorNs, 0);
  CHECK(pd::contention().backoff.load() == pd::kFirstBackoffNs);

  // Turning the guard off ends the serial spell and stops counting.
  synattn::set_contention_guard(false);
  CHECK_FALSE(pd::contended_now());
  const long before_off = synattn::contended_regions();
  region(future, 3 * pd::kLossFloorNs, 0);
  CHECK(synattn::contended_regions() == before_off);
  v = run_loop(8, kBig);
  CHECK(v.in_parallel[0] == 1);
  reset_guard();
  omp_set_num_threads(saved);
}

TEST_CASE("with Eigen's own thread count set, loops keep their parallel region (it could split products)",
          "[parallel]") {
  reset_guard();
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  Eigen::setNbThreads(2);
  region(pd::now_ns() + std::int64_t(1e12), std::int64_t(1e9), 0);
  const Visit one = run_loop(1, kBig), many = run_loop(8, kBig);
  CHECK(one.in_parallel[0] == 1);
  CHECK(many.in_parallel[0] == 1);
  Eigen::setNbThreads(0);  // follow OpenMP again
  reset_guard();
  omp_set_num_threads(saved);
}
#endif
