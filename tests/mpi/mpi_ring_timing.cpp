// Times the gradient all-reduce alone: synattn's deterministic ring
// (RingAllReduce, over buckets as DataParallel cuts them) against MPI's own
// MPI_Allreduce, for a buffer of N floats — the communication term of the
// scaling model in README ("Training across processes"), measured.
//
//   mpirun -np 2 mpi_ring_timing [N floats = 1054140] [repetitions = 50] [bucket bytes = 262144]
//
// Prints, on rank 0, the median seconds per all-reduce and the bus bandwidth
// 2 (P-1)/P * 4 N / t.
#include <synattn/mpi/communicator.hpp>
#include <synattn/mpi/ring_allreduce.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  synattn::mpi::Environment env(argc, argv);
  return synattn::mpi::run_or_abort([&] {
    using synattn::Index;
    const synattn::mpi::Communicator comm;
    const Index n = argc > 1 ? std::stol(argv[1]) : 1054140;
    const int reps = argc > 2 ? std::stoi(argv[2]) : 50;
    const Index bucket = argc > 3 ? std::stol(argv[3]) / 4 : 65536;
    std::vector<synattn::mpi::RingAllReduce<float>::Bucket> buckets;
    for (Index b = 0; b < n; b += bucket) buckets.push_back({b, std::min(n, b + bucket)});
    synattn::mpi::RingAllReduce<float> ring(comm, buckets);
    std::vector<float> data(static_cast<std::size_t>(n), 1.0f), out(data.size());
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::vector<double> t_ring, t_mpi;
    for (int r = 0; r < reps + 2; ++r) {  // two warm-up rounds
      comm.barrier();
      double t0 = MPI_Wtime();
      for (std::size_t b = buckets.size(); b-- > 0;) ring.start(data.data(), b);
      ring.wait();
      const double ring_seconds = MPI_Wtime() - t0;
      comm.barrier();
      t0 = MPI_Wtime();
      synattn::mpi::check(MPI_Allreduce(data.data(), out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm.get()),
                          "MPI_Allreduce", "mpi_ring_timing");
      const double mpi_seconds = MPI_Wtime() - t0;
      if (r >= 2) {
        t_ring.push_back(ring_seconds);
        t_mpi.push_back(mpi_seconds);
      }
      std::fill(data.begin(), data.end(), 1.0f);  // keep the values finite
    }
    const double P = comm.size(), bytes = 2.0 * (P - 1.0) / P * 4.0 * static_cast<double>(n);
    if (comm.is_root())
      std::printf("P=%d N=%ld floats, %zu buckets: ring %.3f ms (%.2f GB/s bus), MPI_Allreduce %.3f ms (%.2f GB/s bus)\n",
                  comm.size(), static_cast<long>(n), buckets.size(), 1e3 * median(t_ring), bytes / median(t_ring) / 1e9,
                  1e3 * median(t_mpi), bytes / median(t_mpi) / 1e9);
    return 0;
  });
}
