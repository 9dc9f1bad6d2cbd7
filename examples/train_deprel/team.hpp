// train_deprel — the processes that train one model together: this process
// alone, or mpirun's ranks when the example is built with MPI
// (SYNATTN_EXAMPLE_MPI, set by examples/CMakeLists.txt when synattn::mpi
// exists) and started by an MPI launcher. Started any other way it runs
// alone and never initialises MPI, so the one-process behaviour is the
// example's usual one, bit for bit.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_TEAM_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_TEAM_HPP

#include <cstddef>
#include <cstdlib>
#include <vector>

#if defined(SYNATTN_EXAMPLE_MPI)
#include <synattn/mpi/communicator.hpp>
#include <synattn/mpi/data_parallel.hpp>
#endif

namespace train_deprel {

// Whether an MPI launcher (Open MPI's mpirun, or a PMI/PMIx one) started us.
inline bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         std::getenv("PMI_RANK") != nullptr;
}

class Team {
 public:
  Team() = default;  // this process alone
#if defined(SYNATTN_EXAMPLE_MPI)
  explicit Team(const synattn::mpi::Communicator& comm) : comm_(&comm), rank_(comm.rank()), size_(comm.size()) {}
  const synattn::mpi::Communicator* communicator() const noexcept { return comm_; }
#endif
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  bool root() const noexcept { return rank_ == 0; }

  // Sum over the team (exact for counts).
  long long sum(long long v) const {
#if defined(SYNATTN_EXAMPLE_MPI)
    if (comm_) return comm_->sum(v);
#endif
    return v;
  }
  double sum(double v) const {
#if defined(SYNATTN_EXAMPLE_MPI)
    if (comm_) return comm_->sum(v);
#endif
    return v;
  }

  // This process's contiguous share of a global batch (all of it when alone):
  // mpi::shard's split, so the example and the library cannot disagree.
  std::vector<std::size_t> share(const std::vector<std::size_t>& global) const {
#if defined(SYNATTN_EXAMPLE_MPI)
    if (comm_) return synattn::mpi::shard_of(global, rank_, size_);
#endif
    return global;
  }
  // Where this process's share of a global batch of n sentences starts (the
  // index of its first sentence in the global batch; 0 when alone).
  std::size_t share_begin(std::size_t n) const {
#if defined(SYNATTN_EXAMPLE_MPI)
    if (comm_) return synattn::mpi::shard(n, rank_, size_).first;
#endif
    (void)n;
    return 0;
  }

 private:
#if defined(SYNATTN_EXAMPLE_MPI)
  const synattn::mpi::Communicator* comm_ = nullptr;
#endif
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_TEAM_HPP
