// Uses the installed synattn::mpi target (find_package(synattn COMPONENTS
// mpi)): one process (MPI singleton) reduces a small gradient buffer, so a
// broken export of MPI::MPI_CXX fails loudly.
#include <synattn/mpi.hpp>  // the module header (communicator, ring all-reduce, data parallel)

#include <iostream>

int main(int argc, char** argv) {
  synattn::mpi::Environment env(argc, argv);
  return synattn::mpi::run_or_abort([&] {
    const synattn::mpi::Communicator comm;
    synattn::ParameterStore<float> store;
    store.add("w", 2, 3);
    store.gradients().setConstant(0.5f);
    synattn::mpi::DataParallel<float> dp(comm, store.infos());
    dp.broadcast_parameters(store.values());
    dp.begin(store.gradients());
    dp.ready(0);
    dp.finish();
    const bool ok = store.gradients().sum() == 0.5f * 6 * static_cast<float>(comm.size());
    std::cout << (ok ? "consumer_mpi: ok\n" : "consumer_mpi: wrong sum\n");
    return ok ? 0 : 1;
  });
}
