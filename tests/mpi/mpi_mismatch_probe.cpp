// Ranks that pass different sizes straight to the library's entry points,
// without verify_agreement first. Each mode must end the job with a clear
// message naming both sizes ("rank r: <where>: ranks disagree on <what>:
// rank 1 has X where rank 0 has Y"), not with MPI's truncation error, a
// silently short broadcast or an exchange that never completes:
//   broadcast             Communicator::broadcast of 10 vs 11 values
//   broadcast_parameters  the same model, a buffer of 11 values on rank 1
//   data_parallel         DataParallel over models of 10 vs 11 values
//   ring                  RingAllReduce over one bucket of 100 vs 101 values
#include <synattn/error.hpp>
#include <synattn/mpi/communicator.hpp>
#include <synattn/mpi/data_parallel.hpp>
#include <synattn/mpi/ring_allreduce.hpp>

#include <Eigen/Core>

#include <string>
#include <vector>

namespace {
std::vector<synattn::ParameterInfo> layout(synattn::Index values) {
  return {synattn::ParameterInfo{"w", 0, values, 1, true}};
}
}  // namespace

int main(int argc, char** argv) {
  synattn::mpi::Environment env(argc, argv);
  return synattn::mpi::run_or_abort([&] {
    const std::string mode = argc > 1 ? argv[1] : "broadcast";
    // Short: were a check missing and a rank left waiting, the job still
    // ends well inside ctest's limit, with a timeout message the test rejects.
    synattn::mpi::Communicator comm(MPI_COMM_WORLD, 5.0);
    const int extra = comm.rank() == 1 ? 1 : 0;
    if (mode == "broadcast") {
      std::vector<float> values(static_cast<std::size_t>(10 + extra), 1.0f);
      comm.broadcast(values.data(), values.size());
    } else if (mode == "broadcast_parameters") {
      synattn::mpi::DataParallel<float> dp(comm, layout(10));
      Eigen::VectorXf values = Eigen::VectorXf::Zero(10 + extra);
      dp.broadcast_parameters(values);
    } else if (mode == "data_parallel") {
      synattn::mpi::DataParallel<float> dp(comm, layout(10 + extra));
    } else if (mode == "ring") {
      std::vector<float> values(static_cast<std::size_t>(100 + extra), 1.0f);
      synattn::mpi::RingAllReduce<float> ring(comm, {{0, static_cast<synattn::Index>(values.size())}});
      ring.start(values.data(), 0);
      ring.wait();
    } else {
      throw synattn::Error("mpi_mismatch_probe: unknown mode '" + mode + "'");
    }
    return 0;
  });
}
