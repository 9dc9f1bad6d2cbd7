# tests/cmake/expect_failure.cmake (EXE, ARGS, WANT_RC, WANT_ERR, ...), and then
# FORBID_ERR: a regular expression stderr must not match, e.g. the line
# train_deprel prints once its data is loaded: a refusal that must come
# before any training is then shown to come before it.
include("${CMAKE_CURRENT_LIST_DIR}/../cmake/expect_failure.cmake")
if(DEFINED FORBID_ERR AND err MATCHES "${FORBID_ERR}")
  message(FATAL_ERROR "stderr matches '${FORBID_ERR}': the run got further than it should have:\n${err}")
endif()
