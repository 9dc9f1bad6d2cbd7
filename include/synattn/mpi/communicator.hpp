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
#ifndef SYNATTN_MPI_COMMUNICATOR_HPP
#define SYNATTN_MPI_COMMUNICATOR_HPP

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"

namespace synattn {
namespace mpi {

// A failed MPI call (or an MPI misuse the library detects).
class Error : public synattn::Error {
 public:
  explicit Error(const std::string& what) : synattn::Error(what) {}
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
// for a one-process run), with errors as exceptions.
class Communicator {
 public:
  explicit Communicator(MPI_Comm base = MPI_COMM_WORLD) {
    check(MPI_Comm_dup(base, &comm_), "MPI_Comm_dup", "Communicator");
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

  void barrier() const { check(MPI_Barrier(comm_), "MPI_Barrier", "Communicator::barrier"); }

  // Rank `root`'s count values replace everyone's.
  template <class T>
  void broadcast(T* data, std::size_t count, int root = 0) const {
    for (std::size_t done = 0; done < count;) {  // MPI counts are int
      const int n = static_cast<int>(std::min<std::size_t>(count - done, 1u << 30));
      check(MPI_Bcast(data + done, n, datatype<T>(), root, comm_), "MPI_Bcast", "Communicator::broadcast");
      done += static_cast<std::size_t>(n);
    }
  }
  template <class T>
  T broadcast_value(T value, int root = 0) const {
    broadcast(&value, 1, root);
    return value;
  }

  // Sum over ranks of an exact (integer) quantity, or a double for reporting
  // (the order of a double sum is MPI's: use it for printing only).
  template <class T>
  T sum(T value) const {
    T out{};
    check(MPI_Allreduce(&value, &out, 1, datatype<T>(), MPI_SUM, comm_), "MPI_Allreduce", "Communicator::sum");
    return out;
  }
  double max(double value) const {
    double out = 0;
    check(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce", "Communicator::max");
    return out;
  }

  // Every rank's value, in rank order.
  template <class T>
  std::vector<T> allgather(T value) const {
    std::vector<T> out(static_cast<std::size_t>(size_));
    check(MPI_Allgather(&value, 1, datatype<T>(), out.data(), 1, datatype<T>(), comm_), "MPI_Allgather",
          "Communicator::allgather");
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
    check(MPI_Allgatherv(text.data(), static_cast<int>(text.size()), MPI_CHAR, all.data(), lengths.data(),
                         displs.data(), MPI_CHAR, comm_),
          "MPI_Allgatherv", "Communicator::allgather");
    std::vector<std::string> out;
    for (std::size_t r = 0; r < lengths.size(); ++r)
      out.push_back(all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(lengths[r])));
    return out;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

// This process's rank in MPI_COMM_WORLD (0 when MPI is not running).
inline int world_rank() {
  int rank = 0;
  if (active()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

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
