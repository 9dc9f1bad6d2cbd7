# The output-path policy (io/output_path.hpp) at the command line: runs
# EXE ARGS --output PATH for PATH a symlink to a regular file, a symlink to
# /dev/null and a symlink to nothing, in the scratch folder DIR (emptied
# first). Before the policy, parse renamed a new regular file over each of
# them and exited 0: the link was replaced, its target kept its old bytes,
# and /dev/null's link became a regular file.
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}/real")
file(WRITE "${DIR}/real/out.conllu" "old bytes\n")
file(CREATE_LINK "real/out.conllu" "${DIR}/link.conllu" SYMBOLIC)
file(CREATE_LINK "/dev/null" "${DIR}/null.conllu" SYMBOLIC)
file(CREATE_LINK "nowhere.conllu" "${DIR}/dangling.conllu" SYMBOLIC)

execute_process(COMMAND "${EXE}" ${ARGS} --output "${DIR}/link.conllu" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--output to a symlink: exit status ${rc}, expected 0\n${err}")
endif()
if(NOT IS_SYMLINK "${DIR}/link.conllu")
  message(FATAL_ERROR "--output replaced the symlink ${DIR}/link.conllu itself")
endif()
file(READ "${DIR}/real/out.conllu" got)
if(NOT got MATCHES "^# sent_id = 1\n")
  message(FATAL_ERROR "the symlink's target was not replaced by the parse:\n${got}")
endif()

execute_process(COMMAND "${EXE}" ${ARGS} --output "${DIR}/null.conllu" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--output to a symlink to /dev/null: exit status ${rc}, expected 0\n${err}")
endif()
if(NOT IS_SYMLINK "${DIR}/null.conllu")
  message(FATAL_ERROR "--output replaced the symlink to /dev/null with a file")
endif()

execute_process(COMMAND "${EXE}" ${ARGS} --output "${DIR}/dangling.conllu" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "which does not exist")
  message(FATAL_ERROR "--output to a symlink to nothing: exit status ${rc}, expected 2 and a message naming it\n${err}")
endif()
if(EXISTS "${DIR}/nowhere.conllu" OR NOT IS_SYMLINK "${DIR}/dangling.conllu")
  message(FATAL_ERROR "--output to a symlink to nothing created or replaced a file")
endif()
message("--output: symlink followed, /dev/null written, dangling link refused")
