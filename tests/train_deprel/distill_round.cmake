# Distillation end to end (cmake -P): EXE trains a `shared` teacher on
# TRAIN (40 sentences, two epochs, scored on DEV) and saves its best epoch
# (--save-best); a `none` student of it then trains with 20 transfer
# sentences. Checks that the student's run scores the loaded teacher on dev
# exactly as the teacher's own run scored its best epoch (the file holds
# that epoch's parameters, read back bit for bit), that the transfer set was
# drawn, that --report prints the distillation table, and that a student of
# another training size is refused before training.
cmake_minimum_required(VERSION 3.19)
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(common --train "${TRAIN}" --dev "${DEV}" --train-size 40 --seeds 1 --epochs 2 --threads 1)

function(run_ok)
  execute_process(COMMAND "${EXE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${EXE} ${ARGN}: exit ${rc}\n${out}\n${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

run_ok(${common} --variants shared --save-best "${OUT}/teacher.safetensors" --json "${OUT}/teacher.jsonl")
run_ok(${common} --variants none --distill-from "${OUT}/teacher.safetensors" --distill-temperature 3
       --distill-weight 0.7 --transfer-size 20 --json "${OUT}/student.jsonl")

file(READ "${OUT}/teacher.jsonl" teacher)
file(READ "${OUT}/student.jsonl" student)
string(JSON teacher_best GET "${teacher}" best_dev_accuracy)
string(JSON measured GET "${student}" teacher_dev_accuracy)
if(NOT teacher_best STREQUAL measured)
  message(FATAL_ERROR "the student's run scored the teacher at ${measured} on dev, the teacher's run at ${teacher_best}")
endif()
foreach(key_value "teacher_variant=shared" "transfer_size=20"
        "teacher_trees=gold" "variant=none")
  string(REPLACE "=" ";" kv "${key_value}")
  list(GET kv 0 key)
  list(GET kv 1 want)
  string(JSON got GET "${student}" ${key})
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "student.jsonl: ${key} is '${got}', expected '${want}'")
  endif()
endforeach()
string(JSON temperature GET "${student}" distill_temperature)
string(JSON weight GET "${student}" distill_weight)
if(NOT temperature MATCHES "^3(\\.0*)?$" OR NOT weight MATCHES "^0\\.(7|69999999)")
  message(FATAL_ERROR "student.jsonl: distill_temperature ${temperature}, distill_weight ${weight}; expected 3 and 0.7")
endif()
string(JSON transferred GET "${student}" transfer_sentences)
if(transferred LESS 15 OR transferred GREATER 20)
  message(FATAL_ERROR "student.jsonl: transfer_sentences is ${transferred}, expected 15 to 20 of the 20 drawn")
endif()

file(READ "${OUT}/teacher.jsonl" a)
file(WRITE "${OUT}/both.jsonl" "${a}${student}")
run_ok(--report "${OUT}/both.jsonl")
if(NOT run_out MATCHES "Distillation:.*\\| 40 \\| shared \\(gold\\) \\| T=3 A=0.7, labelled \\+ 20 transfer \\|")
  message(FATAL_ERROR "--report printed no distillation row:\n${run_out}")
endif()

execute_process(COMMAND "${EXE}" --train "${TRAIN}" --dev "${DEV}" --train-size 41 --seeds 1 --epochs 1 --threads 1
                        --variants none --distill-from "${OUT}/teacher.safetensors"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "the teacher was trained with --train-size 40, this run has 41"
   OR err MATCHES "best dev")
  message(FATAL_ERROR "a student of another size: exit ${rc}\n${err}")
endif()
message(STATUS "distillation round trip ok: teacher ${teacher_best} on dev in both runs, ${transferred} transfer sentences")
