# Runs EXE ARGS --threads 1 --output OUT/t1.conllu, then the same with
# --threads 2 into OUT/t2.conllu, and checks both succeed with byte-identical
# output.
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
foreach(threads 1 2)
  execute_process(COMMAND "${EXE}" ${ARGS} --threads ${threads} --output "${OUT}/t${threads}.conllu"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--threads ${threads}: exit status ${rc}\nstdout: ${out}\nstderr: ${err}")
  endif()
  message("--threads ${threads}: ${err}")
endforeach()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUT}/t1.conllu" "${OUT}/t2.conllu" RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  message(FATAL_ERROR "the output at 2 threads differs from the output at 1 thread: ${OUT}/t1.conllu, ${OUT}/t2.conllu")
endif()
