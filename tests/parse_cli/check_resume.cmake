# Resuming is training straight on: with the training arguments ARGS (a
# list: data, sizes, seed, threads),
#   A: parse train ARGS --epochs 2 --checkpoint OUT/a.ckpt --model OUT/a.model --log OUT/a.jsonl
#   B: parse train ARGS --epochs 1 --checkpoint OUT/b.ckpt --model OUT/b.model --log OUT/b.jsonl
#      parse train ARGS --epochs 2 --resume OUT/b.ckpt --checkpoint OUT/b.ckpt --model OUT/b.model --log OUT/b.jsonl
# must give byte-identical final checkpoints (tensors, optimiser state and
# metadata: step, epoch, best LAS and epoch, epochs since the best), the same
# best model (tensors and metadata, but for train.command, which names the
# command that wrote it), the same epoch-2 line (loss, dev scores and whether
# it was the best; timings aside) and the same two-epoch log (timings aside).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

function(train name)
  execute_process(COMMAND "${EXE}" train ${ARGS} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit status ${rc}\nstdout: ${out}\nstderr: ${err}")
  endif()
  message("${name}:\n${err}")
  set(${name}_log "${err}" PARENT_SCOPE)
endfunction()

train(straight --epochs 2 --checkpoint "${OUT}/a.ckpt" --model "${OUT}/a.model" --log "${OUT}/a.jsonl")
train(first --epochs 1 --checkpoint "${OUT}/b.ckpt" --model "${OUT}/b.model" --log "${OUT}/b.jsonl")
train(resumed --epochs 2 --resume "${OUT}/b.ckpt" --checkpoint "${OUT}/b.ckpt" --model "${OUT}/b.model"
      --log "${OUT}/b.jsonl")
if(NOT resumed_log MATCHES "resumed from [^\n]*b\\.ckpt after epoch 1 \\(step [0-9]+")
  message(FATAL_ERROR "the resumed run does not say it resumed after epoch 1:\n${resumed_log}")
endif()

# The safetensors header (JSON) of a file, for saying what differs.
function(read_header path var)
  file(READ "${path}" len HEX LIMIT 8)
  set(n 0)
  foreach(i 7 6 5 4 3 2 1 0)
    math(EXPR at "${i} * 2")
    string(SUBSTRING "${len}" ${at} 2 byte)
    math(EXPR n "${n} * 256 + 0x${byte}")
  endforeach()
  file(READ "${path}" header OFFSET 8 LIMIT ${n})
  set(${var} "${header}" PARENT_SCOPE)
  math(EXPR end "8 + ${n}")
  set(${var}_end ${end} PARENT_SCOPE)  # where the tensors' bytes start
endfunction()

function(report_difference a b)
  read_header("${a}" ha)
  read_header("${b}" hb)
  string(JSON ma GET "${ha}" __metadata__)
  string(JSON mb GET "${hb}" __metadata__)
  string(JSON count LENGTH "${ma}")
  set(diff "")
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON key MEMBER "${ma}" ${i})
    string(JSON va GET "${ma}" "${key}")
    string(JSON vb ERROR_VARIABLE missing GET "${mb}" "${key}")
    if(missing)
      string(APPEND diff "\n  ${key}: '${va}' / missing")
    elseif(NOT va STREQUAL vb)
      string(APPEND diff "\n  ${key}: '${va}' / '${vb}'")
    endif()
  endforeach()
  if(diff STREQUAL "")
    set(diff "\n  (no metadata key differs: the tensors do)")
  endif()
  message(SEND_ERROR "${a} and ${b} differ; metadata (straight / resumed):${diff}")
endfunction()

# The epoch-2 lines without their timings.
foreach(run straight resumed)
  if(NOT ${run}_log MATCHES "\n(epoch 2/2 [^\n]*) train [0-9]+ words/s")
    message(FATAL_ERROR "no epoch 2/2 line in the ${run} run:\n${${run}_log}")
  endif()
  set(${run}_epoch2 "${CMAKE_MATCH_1}")
endforeach()
# TIE: the seed was chosen for epoch 2 to tie epoch 1's dev LAS (a tie is
# not an improvement); say so when it no longer does (other numerics).
if(TIE)
  string(REGEX MATCH "\nepoch 1/2 [^\n]* LAS ([0-9.]+)" _ "${straight_log}")
  set(las1 "${CMAKE_MATCH_1}")
  string(REGEX MATCH "\nepoch 2/2 [^\n]* LAS ([0-9.]+)" _ "${straight_log}")
  if(NOT las1 STREQUAL CMAKE_MATCH_1)
    message(WARNING "epoch 2 (dev LAS ${CMAKE_MATCH_1}) does not tie epoch 1 (${las1}) here: this run checks no tie")
  endif()
endif()
if(NOT straight_epoch2 STREQUAL resumed_epoch2)
  message(SEND_ERROR "epoch 2 differs:\n  straight: ${straight_epoch2}\n  resumed:  ${resumed_epoch2}")
endif()

# The logs: one record per epoch, the resumed run's continuing the first's.
foreach(run a b)
  file(READ "${OUT}/${run}.jsonl" log)
  string(REGEX REPLACE "\"(train_words_per_s|dev_words_per_s|seconds)\": [0-9.]+" "\"\\1\": T" log "${log}")
  set(${run}_records "${log}")
endforeach()
if(NOT a_records MATCHES "^{\"epoch\": 1, [^\n]*}\n{\"epoch\": 2, [^\n]*}\n$")
  message(SEND_ERROR "the straight run's log is not two epoch records:\n${a_records}")
endif()
if(NOT a_records STREQUAL b_records)
  message(SEND_ERROR "the logs differ (timings aside):\n  straight: ${a_records}\n  resumed:  ${b_records}")
endif()

# The best models: the same tensors and metadata, but for the command each
# names (the one that wrote it); both name a source commit.
function(model_without_command path var)
  read_header("${path}" header)
  string(JSON command ERROR_VARIABLE missing GET "${header}" __metadata__ train.command)
  string(JSON commit ERROR_VARIABLE no_commit GET "${header}" __metadata__ train.source_commit)
  if(missing OR no_commit OR NOT command MATCHES "^parse train " OR commit STREQUAL "")
    message(SEND_ERROR "${path} does not name its command and source commit: '${command}', '${commit}'")
  endif()
  string(JSON header REMOVE "${header}" __metadata__ train.command)
  file(READ "${path}" data HEX OFFSET ${header_end})
  set(${var} "${header}" PARENT_SCOPE)
  set(${var}_data "${data}" PARENT_SCOPE)
endfunction()
model_without_command("${OUT}/a.model" a_model)
model_without_command("${OUT}/b.model" b_model)
if(NOT a_model STREQUAL b_model)
  message(SEND_ERROR "the best models' headers differ (train.command aside):\n  straight: ${a_model}\n  resumed:  ${b_model}")
endif()
if(NOT a_model_data STREQUAL b_model_data)
  message(SEND_ERROR "the best models' tensors differ")
endif()

foreach(pair "a.ckpt;b.ckpt")
  list(GET pair 0 a)
  list(GET pair 1 b)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUT}/${a}" "${OUT}/${b}" RESULT_VARIABLE differ)
  if(differ)
    report_difference("${OUT}/${a}" "${OUT}/${b}")
  endif()
endforeach()
