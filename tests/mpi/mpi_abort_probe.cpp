// A job in which one rank throws while the others wait in a collective it
// will never join. run_or_abort must end the whole job within seconds with
// "rank 1: ..." on stderr (tests/mpi/mpi_tests.cmake runs it under a short
// timeout); without it the job would hang.
#include <synattn/error.hpp>
#include <synattn/mpi/communicator.hpp>

#include <string>

int main(int argc, char** argv) {
  synattn::mpi::Environment env(argc, argv);
  return synattn::mpi::run_or_abort([&] {
    synattn::mpi::Communicator comm;
    const int failing = argc > 1 ? std::stoi(argv[1]) : 1;
    if (comm.rank() == failing) throw synattn::Error("probe: rank " + std::to_string(failing) + " fails on purpose");
    comm.barrier();  // the failing rank never arrives
    return 0;
  });
}
