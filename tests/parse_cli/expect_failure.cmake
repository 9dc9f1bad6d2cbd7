# cmake/expect_failure.cmake for a command of several arguments: runs EXE
# with ARGS (a list) and checks that its exit status is WANT_RC and its stderr
# contains WANT_ERR. Besides:
#   ABSENT     paths (removed before the run) that must not exist afterwards;
#   EMPTY_DIR  a folder (emptied before the run) that must still be empty
#              afterwards: no output, no temporary file left behind;
#   NO_STDOUT  when true, nothing may be written to stdout.
foreach(path IN LISTS ABSENT)
  file(REMOVE_RECURSE "${path}")
endforeach()
if(EMPTY_DIR)
  file(REMOVE_RECURSE "${EMPTY_DIR}")
  file(MAKE_DIRECTORY "${EMPTY_DIR}")
endif()
execute_process(COMMAND "${EXE}" ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL WANT_RC)
  message(FATAL_ERROR "exit status ${rc}, expected ${WANT_RC}\nstdout: ${out}\nstderr: ${err}")
endif()
string(FIND "${err}" "${WANT_ERR}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "stderr does not contain '${WANT_ERR}':\n${err}")
endif()
if(NO_STDOUT AND NOT out STREQUAL "")
  message(FATAL_ERROR "expected no output on stdout, got:\n${out}")
endif()
foreach(path IN LISTS ABSENT)
  if(EXISTS "${path}" OR IS_SYMLINK "${path}")
    message(FATAL_ERROR "${path} exists after the failed run\nstderr: ${err}")
  endif()
endforeach()
if(EMPTY_DIR)
  file(GLOB left LIST_DIRECTORIES true "${EMPTY_DIR}/*" "${EMPTY_DIR}/.*")
  if(left)
    message(FATAL_ERROR "the failed run left files in ${EMPTY_DIR}: ${left}\nstderr: ${err}")
  endif()
endif()
