# Runs EXE ARG and checks its exit status is WANT_RC and stderr contains WANT_ERR.
execute_process(COMMAND "${EXE}" "${ARG}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL WANT_RC)
  message(FATAL_ERROR "exit status ${rc}, expected ${WANT_RC}\nstdout: ${out}\nstderr: ${err}")
endif()
string(FIND "${err}" "${WANT_ERR}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "stderr does not contain '${WANT_ERR}':\n${err}")
endif()
