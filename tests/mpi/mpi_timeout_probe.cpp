// A job in which rank 1 hangs (sleeps) instead of dying, while rank 0 waits
// for it: in a collective ("collective") or in the ring all-reduce ("ring").
// With the communicator's timeout set to argv[2] seconds, rank 0 must end the
// whole job soon after that with "rank 0: timed out after S s waiting for
// ..." on stderr (tests/mpi/mpi_tests.cmake runs it under a ctest timeout far
// above both S and the start-up); before waits had a limit, rank 0 waited as
// long as rank 1 slept (kSleepSeconds, past the ctest timeout).
#include <synattn/error.hpp>
#include <synattn/mpi/communicator.hpp>
#include <synattn/mpi/ring_allreduce.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {
constexpr int kSleepSeconds = 120;
}

int main(int argc, char** argv) {
  synattn::mpi::Environment env(argc, argv);
  return synattn::mpi::run_or_abort([&] {
    const std::string mode = argc > 1 ? argv[1] : "collective";
    synattn::mpi::Communicator comm;
    comm.set_timeout(argc > 2 ? std::stod(argv[2]) : 2.0);
    // Set up together (RingAllReduce's constructor is itself collective).
    std::vector<float> data(1000, 1.0f);
    synattn::mpi::RingAllReduce<float> ring(comm, {{0, static_cast<synattn::Index>(data.size())}});
    if (comm.rank() == 1) {  // hangs: alive, never answering
      std::this_thread::sleep_for(std::chrono::seconds(kSleepSeconds));
      return 0;
    }
    if (mode == "collective") {
      (void)comm.sum(1LL);
    } else if (mode == "ring") {
      ring.start(data.data(), 0);
      ring.wait();
    } else {
      throw synattn::Error("mpi_timeout_probe: unknown mode '" + mode + "', expected collective or ring");
    }
    return 0;
  });
}
