# Runs train_deprel (EXE) under MPIRUN (a ;-list: mpirun -np 2 ...) three
# times — twice as given, once with --no-overlap — and checks that the
# results and the saved checkpoints are identical bit for bit: the same
# rank count gives the same training every run, with the reduction
# overlapped with the backward pass or not. ARGS is the rest of the command
# line (a ;-list), OUT a scratch directory.
include("${CMAKE_CURRENT_LIST_DIR}/strip_measured_keys.cmake")
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
foreach(run a b c)
  set(extra "")
  if(run STREQUAL "c")
    set(extra --no-overlap)
  endif()
  execute_process(COMMAND ${MPIRUN} "${EXE}" ${ARGS} ${extra} --json "${OUT}/${run}.jsonl"
                          --save-checkpoint "${OUT}/${run}.safetensors"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${run} failed (${rc}):\n${out}\n${err}")
  endif()
  if(NOT err MATCHES "on 2 processes, [0-9.]+ s waiting for gradient reductions")
    message(FATAL_ERROR "run ${run} did not train on 2 processes:\n${err}")
  endif()
  file(READ "${OUT}/${run}.jsonl" json)
  strip_measured_keys(json)
  set(result_${run} "${json}")
  file(SHA256 "${OUT}/${run}.safetensors" hash_${run})
endforeach()
foreach(run b c)
  if(NOT result_a STREQUAL result_${run})
    message(FATAL_ERROR "results differ between runs a and ${run}:\na: ${result_a}\n${run}: ${result_${run}}")
  endif()
  if(NOT hash_a STREQUAL hash_${run})
    message(FATAL_ERROR "the final parameters differ between runs a and ${run}")
  endif()
endforeach()
string(FIND "${result_a}" "\"processes\":2" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the results do not say 2 processes:\n${result_a}")
endif()
message(STATUS "identical in three 2-process runs (one without overlap), checkpoints too:\n${result_a}")
