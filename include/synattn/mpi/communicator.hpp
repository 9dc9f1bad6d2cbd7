// synattn — a thin RAII layer over MPI for data-parallel training: the MPI
// environment, a communicator whose errors become exceptions, the few
// collectives the trainer needs, and the "one rank failed, stop the job"
// helper.
//
// Needs MPI: link synattn::mpi (CMake option SYNATTN_MPI; the target links
// MPI::MPI_CXX). Nothing else in synattn includes this header, so header-only
// users who never train across processes never see MPI.
//
//   int main(int argc, char** argv) {
//     synattn::mpi::Environment env(argc, argv);
//     return synattn::mpi::run_or_abort([&] { ...; return 0; });
//   }
//
// Error handling. MPI's default handler aborts the job without a word about
// what went wrong. Communicator installs MPI_ERRORS_RETURN on its duplicate
// of the base communicator and turns every failed call into mpi::Error
// ("MPI_Bcast (broadcast_values): <MPI's error string>"). A C++ exception on
// one rank must still end the whole job, or the other ranks wait in their
// next collective forever: run_or_abort() catches it at the top level,
// prints "rank r: message" to stderr and calls MPI_Abort, which makes mpirun
// kill every rank within seconds.
//
// Timeouts. A rank that hangs (a deadlock, a stopped process, a lost node)
// rather than dies raises nothing: the others would wait in their next
// collective forever. So no call here blocks inside MPI. Every collective is
// posted non-blocking (MPI_Ibcast, MPI_Iallreduce, ...) and completed by
// wait_all(), which polls MPI_Testall until a deadline; past it the waiting
// rank prints "rank r: timed out after S s waiting for <call> (<where>)" and
// ends the job with MPI_Abort. The limit is the communicator's
// (set_timeout(), 600 s by default: far above any start-up skew or
// checkpoint write we have seen, yet an hour-long hang ends in ten minutes).
//
// Sizes. A collective whose ranks pass different counts is erroneous MPI: a
// broadcast may truncate with an obscure error, or succeed with a short
// message and leave the tail stale. broadcast() first checks that every rank
// passes the same count (require_same(): one small allgather), and throws the
// same mpi::Error on every rank, naming both counts, when they differ.
#ifndef SYNATTN_MPI_COMMUNICATOR_HPP
#define SYNATTN_MPI_COMMUNICATOR_HPP

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace synattn {
namespace mpi {

// A failed MPI call, or ranks that disagree on what they must share: a
// runtime failure (synattn::RuntimeError, see error.hpp). A bad argument to
// an MPI function (a rank out of range, a timeout <= 0) is synattn::Error.
class Error : public synattn::RuntimeError {
 public:
  explicit Error(const std::string& what) : synattn::RuntimeError(what) {}
};

// Throws mpi::Error naming the call and where it was made unless rc is MPI_SUCCESS.
inline void check(int rc, const char* call, const char* where) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw Error(std::string(call) + " (" + where + "): " + (len > 0 ? std::string(text, static_cast<std::size_t>(len))
                                                                    : "MPI error " + std::to_string(rc)));
}

// The MPI datatype of a C++ scalar.
template <class T>
MPI_Datatype datatype() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, long long>) return MPI_LONG_LONG;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return MPI_UINT64_T;
  else if constexpr (std::is_same_v<T, int>) return MPI_INT;
  else if constexpr (std::is_same_v<T, char>) return MPI_CHAR;
  else static_assert(sizeof(T) == 0, "synattn::mpi::datatype: no MPI datatype for this type");
}

// Whether MPI_Init has run and MPI_Finalize has not.
inline bool active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// This process's rank in MPI_COMM_WORLD (0 when MPI is not running).
inline int world_rank() {
  int rank = 0;
  if (active()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// The default limit on any one wait (see the top of the file).
constexpr double kDefaultTimeoutSeconds = 600.0;

// Throws synattn::Error unless `seconds` is a valid limit: > 0 (infinity: wait forever).
inline double checked_timeout(double seconds, const char* where) {
  if (!(seconds > 0.0))
    throw synattn::Error(std::string(where) + ": timeout must be > 0 seconds (infinity: no limit), got " +
                         std::to_string(seconds));
  return seconds;
}

// Prints "rank r: timed out after S s waiting for <what>" and ends the job.
// Not an exception: the pending operations still own their buffers (MPI
// cannot cancel a collective), so unwinding the stack past them would let
// MPI write into freed memory; and the hung rank would never join whatever
// collective the handler reached next.
[[noreturn]] inline void abort_on_timeout(const std::string& what, double waited) {
  std::fprintf(stderr,
               "rank %d: timed out after %.3g s waiting for %s; another rank is hung or far behind (the limit "
               "is the communicator's timeout); ending the job\n",
               world_rank(), waited, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; if it ever did, do not carry on
}

// The one way this library waits for MPI: completes n requests, polling
// MPI_Testall (which also drives MPI's progress engine), or ends the job
// after timeout_seconds (abort_on_timeout). describe() names what is waited
// for; it is called only on failure, so building its text costs nothing on
// the normal path. Between polls: yield for the first millisecond (most
// waits end within it: the ring all-reduce of the experiment's whole 4 MB of
// gradients takes ~1 ms here, and a sleep would add its ~0.1 ms of timer
// latency to every exchange), then sleep 50 us, then 1 ms after a second, so
// that a waiting rank stops taking the core a slower peer needs (as Open
// MPI's mpi_yield_when_idle does) and a long wait costs no CPU.
template <class Describe>
void wait_all(int n, MPI_Request* requests, double timeout_seconds, Describe&& describe) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (;;) {
    int done = 0;
    const int rc = MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) check(rc, "MPI_Testall", std::string(describe()).c_str());
    if (done) return;
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (waited >= timeout_seconds) abort_on_timeout(describe(), waited);
    if (waited < 1e-3)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(waited < 1.0 ? 50 : 1000));
  }
}
inline void wait_all(int n, MPI_Request* requests, double timeout_seconds, const char* call, const char* where) {
  wait_all(n, requests, timeout_seconds, [&] { return std::string(call) + " (" + where + ")"; });
}

// MPI_Init_thread(FUNNELED) ... MPI_Finalize. FUNNELED: OpenMP threads run
// inside each rank, but only the thread that called the constructor calls MPI.
class Environment {
 public:
  Environment(int& argc, char**& argv) {
    int provided = 0;
    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", "Environment");
    // Errors of calls on MPI_COMM_WORLD itself (MPI_Abort aside) become
    // exceptions too.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~Environment() {
    if (active()) MPI_Finalize();
  }
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

// Own duplicate of a base communicator (MPI_COMM_WORLD, or MPI_COMM_SELF
// for a one-process run), with errors as exceptions and a limit on every
// wait (see the top of the file). Every member below that talks to other
// ranks is collective: every rank calls it, in the same order.
class Communicator {
 public:
  explicit Communicator(MPI_Comm base = MPI_COMM_WORLD, double timeout_seconds = kDefaultTimeoutSeconds)
      : timeout_(checked_timeout(timeout_seconds, "Communicator")) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Comm_idup(base, &comm_, &request), "MPI_Comm_idup", "Communicator");
    wait_all(1, &request, timeout_, "MPI_Comm_idup", "Communicator");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "Communicator");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank", "Communicator");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size", "Communicator");
  }
  ~Communicator() {
    if (comm_ != MPI_COMM_NULL && active()) MPI_Comm_free(&comm_);
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  MPI_Comm get() const noexcept { return comm_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  bool is_root() const noexcept { return rank_ == 0; }

  // The longest any one wait on this communicator may take before the job
  // is ended (seconds; infinity: no limit). Set it on every rank alike.
  double timeout() const noexcept { return timeout_; }
  void set_timeout(double seconds) { timeout_ = checked_timeout(seconds, "Communicator::set_timeout"); }

  // Completes requests posted on this communicator, within its timeout.
  template <class Describe>
  void wait(int n, MPI_Request* requests, Describe&& describe) const {
    wait_all(n, requests, timeout_, std::forward<Describe>(describe));
  }
  void wait(int n, MPI_Request* requests, const char* call, const char* where) const {
    wait_all(n, requests, timeout_, call, where);
  }

  void barrier() const {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier", "Communicator::barrier");
    wait(1, &request, "MPI_Barrier", "Communicator::barrier");
  }

  // Throws the same mpi::Error on every rank unless every rank passed the
  // same value: "<where>: ranks disagree on <what>: rank r has X where rank
  // 0 has Y". For the sizes a transfer depends on, before the transfer.
  template <class T>
  void require_same(T value, const char* where, const char* what) const {
    static_assert(std::is_integral_v<T>, "require_same: an integer (a count, a size, a hash)");
    const auto v = static_cast<std::conditional_t<std::is_signed_v<T>, long long, std::uint64_t>>(value);
    const auto all = allgather(v);
    for (std::size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0])
        throw Error(std::string(where) + ": ranks disagree on " + what + ": rank " + std::to_string(r) + " has " +
                    std::to_string(all[r]) + " where rank 0 has " + std::to_string(all[0]) +
                    "; every rank must pass the same sizes");
  }

  // Rank `root`'s count values replace everyone's. Every rank must pass the
  // same count (checked first; `where` names the caller in the message).
  template <class T>
  void broadcast(T* data, std::size_t count, int root = 0, const char* where = "Communicator::broadcast") const {
    require_same(static_cast<long long>(count), where, "the number of values to broadcast");
    for (std::size_t done = 0; done < count;) {  // MPI counts are int
      const int n = static_cast<int>(std::min<std::size_t>(count - done, 1u << 30));
      MPI_Request request = MPI_REQUEST_NULL;
      check(MPI_Ibcast(data + done, n, datatype<T>(), root, comm_, &request), "MPI_Ibcast", where);
      wait(1, &request, "MPI_Bcast", where);
      done += static_cast<std::size_t>(n);
    }
  }
  template <class T>
  T broadcast_value(T value, int root = 0) const {
    broadcast(&value, 1, root, "Communicator::broadcast_value");
    return value;
  }

  // Sum over ranks of an exact (integer) quantity, or a double for reporting
  // (the order of a double sum is MPI's: use it for printing only).
  template <class T>
  T sum(T value) const {
    return allreduce(value, MPI_SUM, "Communicator::sum");
  }
  double max(double value) const { return allreduce(value, MPI_MAX, "Communicator::max"); }

  // Every rank's value, in rank order.
  template <class T>
  std::vector<T> allgather(T value) const {
    std::vector<T> out(static_cast<std::size_t>(size_));
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallgather(&value, 1, datatype<T>(), out.data(), 1, datatype<T>(), comm_, &request),
          "MPI_Iallgather", "Communicator::allgather");
    wait(1, &request, "MPI_Allgather", "Communicator::allgather");
    return out;
  }
  // Every rank's string, in rank order.
  std::vector<std::string> allgather(const std::string& text) const {
    const std::vector<int> lengths = allgather(static_cast<int>(text.size()));
    std::vector<int> displs(lengths.size(), 0);
    int total = 0;
    for (std::size_t r = 0; r < lengths.size(); ++r) {
      displs[r] = total;
      total += lengths[r];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallgatherv(text.data(), static_cast<int>(text.size()), MPI_CHAR, all.data(), lengths.data(),
                          displs.data(), MPI_CHAR, comm_, &request),
          "MPI_Iallgatherv", "Communicator::allgather");
    wait(1, &request, "MPI_Allgatherv", "Communicator::allgather");
    std::vector<std::string> out;
    for (std::size_t r = 0; r < lengths.size(); ++r)
      out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lengths[r])));
    return out;
  }

 private:
  template <class T>
  T allreduce(T value, MPI_Op op, const char* where) const {
    T out{};
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(&value, &out, 1, datatype<T>(), op, comm_, &request), "MPI_Iallreduce", where);
    wait(1, &request, "MPI_Allreduce", where);
    return out;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  double timeout_ = kDefaultTimeoutSeconds;
};

// Runs f() (returning int, the exit code). An exception escaping it is
// printed as "rank r: message" on stderr and ends the whole job with
// MPI_Abort(MPI_COMM_WORLD, 1): the other ranks may be waiting in a
// collective this rank will never join, and would otherwise hang.
template <class F>
int run_or_abort(F&& f) noexcept {
  std::string message;
  try {
    return std::forward<F>(f)();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown exception";
  }
  std::fprintf(stderr, "rank %d: %s\n", world_rank(), message.c_str());
  std::fflush(stderr);
  if (active()) MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

}  // namespace mpi
}  // namespace synattn

#endif  // SYNATTN_MPI_COMMUNICATOR_HPP
