// A busy machine for benchmarks: a child process that spins on one core (the
// last one), as another user's job would, for as long as the benchmark runs.
// The layer's threads are not pinned, so the scheduler shares that core
// between the spinner and whichever of them lands there.
#ifndef SYNATTN_BENCH_BUSY_CORE_HPP
#define SYNATTN_BENCH_BUSY_CORE_HPP

#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace synattn_bench {

class BusyCore {
 public:
  // Starts the spinner; `core` < 0 means the last online core.
  explicit BusyCore(int core = -1) {
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    core_ = core >= 0 ? core : static_cast<int>(cores > 0 ? cores - 1 : 0);
    pid_ = fork();
    if (pid_ < 0) {
      std::perror("bench: fork for the busy core");
      std::exit(1);
    }
    if (pid_ == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(core_, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0) std::perror("bench: pinning the busy core");
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
  }
  ~BusyCore() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  BusyCore(const BusyCore&) = delete;
  BusyCore& operator=(const BusyCore&) = delete;
  int core() const { return core_; }

 private:
  int core_ = 0;
  pid_t pid_ = -1;
};

}  // namespace synattn_bench

#endif  // SYNATTN_BENCH_BUSY_CORE_HPP
