// synattn — module header of data-parallel training across processes: the
// communicator, the deterministic ring all-reduce, gradient averaging
// overlapped with the backward pass, and the checks that every rank trains
// the same model (docs/distributed.md). Needs MPI: link synattn::mpi.
// synattn.hpp leaves it out, so a program without MPI never sees <mpi.h>.
#ifndef SYNATTN_MPI_HPP
#define SYNATTN_MPI_HPP

#if !__has_include(<mpi.h>)
#error "<synattn/mpi.hpp> needs MPI: link synattn::mpi (Debian: openmpi-bin libopenmpi-dev)"
#endif

#include "mpi/communicator.hpp"
#include "mpi/checksum.hpp"
#include "mpi/ring_allreduce.hpp"
#include "mpi/data_parallel.hpp"

#endif  // SYNATTN_MPI_HPP
