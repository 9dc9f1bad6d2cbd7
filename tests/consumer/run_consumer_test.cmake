# Installs synattn into a scratch prefix, then configures, builds and runs
# tests/consumer against it with find_package(synattn). WANT_OPENMP (ON/OFF):
# whether the consumer's build_info() line must say OpenMP is on, i.e. whether
# synattn::synattn carries OpenMP to its users.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix "${WORK_DIR}/prefix")
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/synattn-build" -G "${GENERATOR}"
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=${prefix}
    -DSYNATTN_BUILD_TESTS=OFF -DSYNATTN_BUILD_EXAMPLES=OFF -DSYNATTN_BUILD_BENCH=OFF
    -DSYNATTN_INSTALL=ON -DSYNATTN_CHECKPOINT=${CHECKPOINT} -DSYNATTN_OPENMP=${WANT_OPENMP})
run("${CMAKE_COMMAND}" --install "${WORK_DIR}/synattn-build")
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/consumer-build"
    -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${prefix})
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer-build")
run("${WORK_DIR}/consumer-build/consumer")
if(WANT_OPENMP)
  set(want "OpenMP: on, ")
else()
  set(want "OpenMP: off")
endif()
string(FIND "${last_output}" "${want}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the consumer's build_info() does not say '${want}':\n${last_output}")
endif()
# synattn::native: the consumer compiled for this machine lacks no SIMD the
# CPU has, and its Eigen uses the vector sets -march=native selects.
run("${WORK_DIR}/consumer-build/consumer_native")
string(FIND "${last_output}" "SIMD this CPU has and this build lacks: none" at)
if(at EQUAL -1)
  message(FATAL_ERROR "consumer_native (synattn::native) does not use every SIMD set of this CPU:\n${last_output}")
endif()
# Every set the default-flags consumer lacks must be in the native one's
# build_info ("compiled for: ..."), and its Eigen must use more than SSE2.
string(REGEX MATCH "compiled for: [^;]*;" native_isa "${last_output}")
string(REGEX MATCH "SIMD: [^;]*;" native_simd "${last_output}")
run("${WORK_DIR}/consumer-build/consumer")
string(REGEX MATCH "this build lacks: [^\n]*" lacks "${last_output}")
string(REPLACE "this build lacks: " "" lacks "${lacks}")
string(REGEX MATCH "SIMD: [^;]*;" default_simd "${last_output}")
message(STATUS "default flags lack: ${lacks} (Eigen ${default_simd}); synattn::native: ${native_isa} (Eigen ${native_simd})")
if(NOT lacks STREQUAL "none")
  string(REPLACE " " ";" lacks "${lacks}")
  foreach(feature IN LISTS lacks)
    string(FIND "${native_isa}" " ${feature}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "synattn::native's build does not use ${feature}: ${native_isa}")
    endif()
  endforeach()
  if(native_simd STREQUAL default_simd)
    message(FATAL_ERROR "synattn::native's Eigen uses the default build's SIMD (${native_simd})")
  endif()
endif()

# With the checkpoint component installed, the consumer must have found it.
if(CHECKPOINT)
  if(NOT EXISTS "${WORK_DIR}/consumer-build/consumer_checkpoint")
    message(FATAL_ERROR "synattn::checkpoint was installed but find_package(synattn) did not provide it")
  endif()
  run("${WORK_DIR}/consumer-build/consumer_checkpoint" "${WORK_DIR}/consumer.safetensors")
endif()
# Likewise synattn::mpi when synattn was built with MPI (run as one process).
if(WANT_MPI)
  if(NOT EXISTS "${WORK_DIR}/consumer-build/consumer_mpi")
    message(FATAL_ERROR "synattn::mpi was installed but find_package(synattn) did not provide it")
  endif()
  run("${WORK_DIR}/consumer-build/consumer_mpi")
endif()

# synattn::compiled: COMPILED_BUILD_DIR is a configured and built synattn
# with SYNATTN_BUILD_COMPILED=ON (the one running this test): installed as it
# is, then a consumer that asks for the component links the library and runs.
if(COMPILED_BUILD_DIR)
  set(compiled_prefix "${WORK_DIR}/prefix-compiled")
  run("${CMAKE_COMMAND}" --install "${COMPILED_BUILD_DIR}" --prefix "${compiled_prefix}")
  run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/consumer-compiled-build"
      -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      -DCMAKE_PREFIX_PATH=${compiled_prefix} -DCONSUMER_COMPILED=ON)
  run("${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer-compiled-build" --target consumer_compiled)
  run("${WORK_DIR}/consumer-compiled-build/consumer_compiled")
  if(CHECKPOINT)  # README's snippet: synattn::compiled and synattn::checkpoint together
    run("${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer-compiled-build" --target consumer_compiled_checkpoint)
    run("${WORK_DIR}/consumer-compiled-build/consumer_compiled_checkpoint" "${WORK_DIR}/consumer-compiled.safetensors")
  endif()
endif()
