# Runs train_deprel (EXE) twice on the same seed, with --threads 1 and with
# --threads 2, and checks that every result but the timings is identical:
# same seed -> bit-identical training at any thread count; the final
# checkpoints (--save-checkpoint, one per run) must be identical too. ARGS is
# the rest of the command line (a ;-list), OUT a scratch directory.
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
foreach(threads 1 2)
  file(MAKE_DIRECTORY "${OUT}/t${threads}")
  execute_process(COMMAND "${EXE}" ${ARGS} --threads ${threads} --json "${OUT}/t${threads}.jsonl"
                          --save-checkpoint "${OUT}/t${threads}/final.safetensors"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "train_deprel --threads ${threads} failed (${rc}):\n${out}\n${err}")
  endif()
  file(READ "${OUT}/t${threads}.jsonl" json)
  # Timings differ by nature; everything else must not.
  string(REGEX REPLACE "\"train_seconds\":[^,}]*" "" json "${json}")
  string(REGEX REPLACE "\"train_tokens_per_second\":[^,}]*" "" json "${json}")
  set(result_${threads} "${json}")
  file(GLOB checkpoints RELATIVE "${OUT}/t${threads}" "${OUT}/t${threads}/final-*.safetensors")
  list(SORT checkpoints)
  set(hashes "")
  foreach(f IN LISTS checkpoints)
    file(SHA256 "${OUT}/t${threads}/${f}" h)
    list(APPEND hashes "${f}=${h}")
  endforeach()
  if(hashes STREQUAL "")
    message(FATAL_ERROR "--save-checkpoint wrote no final-*.safetensors in ${OUT}/t${threads}")
  endif()
  set(hashes_${threads} "${hashes}")
endforeach()
if(NOT hashes_1 STREQUAL hashes_2)
  message(FATAL_ERROR "final checkpoints differ between 1 and 2 threads:\n1: ${hashes_1}\n2: ${hashes_2}")
endif()
if(NOT result_1 STREQUAL result_2)
  message(FATAL_ERROR "results differ between 1 and 2 threads:\n1: ${result_1}\n2: ${result_2}")
endif()
string(FIND "${result_1}" "\"best_dev_accuracy\"" at)
if(at EQUAL -1)
  message(FATAL_ERROR "no results written:\n${result_1}")
endif()
message(STATUS "identical at 1 and 2 threads:\n${result_1}")
