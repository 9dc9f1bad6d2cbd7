# MPI tests (included by tests/CMakeLists.txt when synattn::mpi exists): each
# program runs under `mpirun -np 2 --oversubscribe` (2 ranks on this 2-core
# machine; CI runs as root, which Open MPI refuses without the two
# OMPI_ALLOW_RUN_AS_ROOT variables).
set(SYNATTN_MPIRUN "${MPIEXEC_EXECUTABLE}" ${MPIEXEC_NUMPROC_FLAG} 2 --oversubscribe ${MPIEXEC_PREFLAGS})
set(SYNATTN_MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_NUM_THREADS=1;OMPI_MCA_btl=self,vader")

add_executable(test_mpi_data_parallel "${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi_data_parallel.cpp")
target_link_libraries(test_mpi_data_parallel PRIVATE synattn_programs synattn::mpi synattn::checkpoint Catch2::Catch2)
target_include_directories(test_mpi_data_parallel PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_compile_definitions(test_mpi_data_parallel PRIVATE SYNATTN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_test(NAME mpi_data_parallel COMMAND ${SYNATTN_MPIRUN} $<TARGET_FILE:test_mpi_data_parallel>)
set_tests_properties(mpi_data_parallel PROPERTIES ENVIRONMENT "${SYNATTN_MPI_ENV}" TIMEOUT 120 LABELS mpi
  PROCESSORS 2 RUN_SERIAL TRUE)

# A rank that throws ends the job with its message, well inside the timeout.
add_executable(mpi_abort_probe "${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_abort_probe.cpp")
target_link_libraries(mpi_abort_probe PRIVATE synattn_programs synattn::mpi)
add_test(NAME mpi_rank_failure_ends_job COMMAND ${SYNATTN_MPIRUN} $<TARGET_FILE:mpi_abort_probe> 1)
set_tests_properties(mpi_rank_failure_ends_job PROPERTIES ENVIRONMENT "${SYNATTN_MPI_ENV}" TIMEOUT 30 LABELS mpi
  PASS_REGULAR_EXPRESSION "rank 1: probe: rank 1 fails on purpose" RUN_SERIAL TRUE)

# The all-reduce alone, timed (README's scaling check); a short run keeps it working.
add_executable(mpi_ring_timing "${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_ring_timing.cpp")
target_link_libraries(mpi_ring_timing PRIVATE synattn_programs synattn::mpi)
add_test(NAME mpi_ring_timing_smoke COMMAND ${SYNATTN_MPIRUN} $<TARGET_FILE:mpi_ring_timing> 10000 3)
set_tests_properties(mpi_ring_timing_smoke PROPERTIES ENVIRONMENT "${SYNATTN_MPI_ENV}" TIMEOUT 30 LABELS mpi
  PASS_REGULAR_EXPRESSION "P=2 N=10000 floats, 1 buckets: ring [0-9.]+ ms" RUN_SERIAL TRUE)

# A rank that hangs instead of dying: the waiting rank ends the job after the
# communicator's timeout (2 s here), naming what it waited for. Before waits
# had a limit, the job hung until ctest's TIMEOUT. About 3 s each.
add_executable(mpi_timeout_probe "${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_timeout_probe.cpp")
target_link_libraries(mpi_timeout_probe PRIVATE synattn_dev synattn::mpi)
set(waited "rank 0: timed out after 2[.0-9]* s waiting for")
add_test(NAME mpi_hung_rank_times_out_collective
  COMMAND ${SYNATTN_MPIRUN} $<TARGET_FILE:mpi_timeout_probe> collective 2)
set_tests_properties(mpi_hung_rank_times_out_collective PROPERTIES ENVIRONMENT "${SYNATTN_MPI_ENV}" TIMEOUT 30
  LABELS mpi RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "${waited} MPI_Allreduce \\(Communicator::sum\\)")
add_test(NAME mpi_hung_rank_times_out_ring COMMAND ${SYNATTN_MPIRUN} $<TARGET_FILE:mpi_timeout_probe> ring 2)
set_tests_properties(mpi_hung_rank_times_out_ring PROPERTIES ENVIRONMENT "${SYNATTN_MPI_ENV}" TIMEOUT 30
  LABELS mpi RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION
  "${waited} the ring all-reduce \\(RingAllReduce::wait\\) of bucket 0 of 1, step 1 of 2: a message from rank 1")

# Ranks passing different sizes straight to the entry points (no
# verify_agreement first) are refused on every rank with both sizes named.
add_executable(mpi_mismatch_probe "${CMAKE_CURRENT_SOURCE_DIR}/mpi/mpi_mismatch_probe.cpp")
target_link_libraries(mpi_mismatch_probe PRIVATE synattn_dev synattn::mpi)
set(differ "ranks disagree on the number of")
set(sizes "rank 1 has 11 where rank 0 has 10")
foreach(mode_and_message IN ITEMS
    "broadcast|Communicator::broadcast: ${differ} values to broadcast: ${sizes}"
    "broadcast_parameters|DataParallel::broadcast_parameters: ${differ} values to broadcast: ${sizes}"
    "data_parallel|DataParallel: ${differ} parameter values \\(the ranks built different models\\): ${sizes}"
    "ring|RingAllReduce: ${differ} values in the buckets: rank 1 has 101 where rank 0 has 100")
  string(REPLACE "|" ";" parts "${mode_and_message}")
  list(GET parts 0 mode)
  list(GET parts 1 message)
  add_test(NAME mpi_size_mismatch_${mode} COMMAND ${SYNATTN_MPIRUN} $<TARGET_FILE:mpi_mismatch_probe> ${mode})
  set_tests_properties(mpi_size_mismatch_${mode} PROPERTIES ENVIRONMENT "${SYNATTN_MPI_ENV}" TIMEOUT 30 LABELS mpi
    RUN_SERIAL TRUE PASS_REGULAR_EXPRESSION "rank [01]: ${message}")
endforeach()
