# train_deprel: a smoke run of the experiment (40 training sentences, two
# epochs, scored on the bundled sample), every variant's options built and
# trained; then the same seed at 1 and 2 threads gives identical results;
# then a bad command line.
synattn_cli_test(example_train_deprel_smoke
  COMMAND train_deprel --train "${ewt_train}" --dev "${sample}" --train-size 40
          --variants none,fixed,shared,per-head,directed,shared-decay --seeds 1 --epochs 2
          --out "${cli_dir}/train_deprel_smoke"
  OUTPUT_MATCHES "\\| directed \\(bias lr x10\\) \\| [0-9.]+")
# Packed documents: whole documents of the training file, scored on the
# sample's packed documents; a packing refuses the unbiased variant.
synattn_cli_test(example_train_deprel_packed
  COMMAND train_deprel --train "${ewt_train}" --dev "${sample}" --train-size 60 --variants shared,directed
          --seeds 1 --epochs 2 --threads 1 --pack-documents --sentence-window 1 --root-links
  OUTPUT_MATCHES "\\| directed \\(bias lr x10\\), packed documents w=1, root links \\| [0-9.]+")
synattn_cli_test(example_train_deprel_packed_refuses_none
  COMMAND train_deprel --pack-documents --variants none,shared
  OUTPUT_MATCHES "the none variant cannot be packed")
synattn_cli_test(example_train_deprel_threads
  PROGRAM train_deprel
  ARGS --train "${ewt_train}" --dev "${sample}" --train-size 60 --variants none,directed --seeds 3 --epochs 2
  DEFINE "OUT=${cli_dir}/train_deprel_threads"
  SCRIPT "${PROJECT_SOURCE_DIR}/tests/cmake/compare_train_runs.cmake")
# --report tabulates the smoke run's JSON lines again without training.
synattn_cli_test(example_train_deprel_report
  COMMAND train_deprel --report "${cli_dir}/train_deprel_threads/t1.jsonl" --out "${cli_dir}/train_deprel_report"
  DEPENDS example_train_deprel_threads
  OUTPUT_MATCHES "\\| none \\| [0-9.]+ ± 0.00 \\(n=1\\) \\| — \\|")
# The sample with one word's form changed (the MPI data-mismatch and the
# tree-file mismatch tests).
file(READ "${sample}" text)
string(REPLACE "\n5\tthis\tthis\tDET\t" "\n5\tthe\tthis\tDET\t" changed "${text}")
if(changed STREQUAL text)
  message(FATAL_ERROR "tests/cli/train_deprel.cmake: the sample no longer has the word the mismatch tests change")
endif()
file(WRITE "${cli_dir}/sample-one-word-changed.conllu" "${changed}")
unset(text)
unset(changed)
# Under mpirun (2 ranks, see tests/mpi/mpi_tests.cmake for the settings):
# three runs, one without overlap, give identical results and checkpoints;
# ranks started with different data are refused at start with a clear
# error, the whole job ending (MPI_Abort) instead of hanging.
if(TARGET synattn::mpi)
  set(mpirun "${MPIEXEC_EXECUTABLE};${MPIEXEC_NUMPROC_FLAG};2;--oversubscribe")
  set(mpi_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_btl=self,vader")
  synattn_cli_test(example_train_deprel_mpi
    PROGRAM train_deprel
    ARGS --train "${ewt_train}" --dev "${sample}" --train-size 60 --variants shared --seeds 2 --epochs 2 --threads 1
    DEFINE "MPIRUN=${mpirun}" "OUT=${cli_dir}/train_deprel_mpi"
    SCRIPT "${PROJECT_SOURCE_DIR}/tests/cmake/compare_mpi_runs.cmake"
    ENVIRONMENT ${mpi_env} TIMEOUT 120 LABELS mpi RUN_SERIAL)
  set(common --dev "${sample}" --variants none --seeds 1 --epochs 1 --threads 1)
  synattn_cli_test(example_train_deprel_mpi_mismatch
    COMMAND "${MPIEXEC_EXECUTABLE}" --oversubscribe
            ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:train_deprel> --train "${ewt_train}" --train-size 40 ${common} :
            ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:train_deprel> --train "${ewt_train}" --train-size 41 ${common}
    ENVIRONMENT ${mpi_env} TIMEOUT 60 LABELS mpi RUN_SERIAL
    OUTPUT_MATCHES "rank [01]: verify_agreement: ranks disagree at start \\(model shape, options or data\\): rank 1 has 'train_size=41' where rank 0 has 'train_size=40'")
  # Files of the same size whose content differs (one word's form) are
  # refused too: the fingerprint carries checksums of the data, not only
  # its counts.
  synattn_cli_test(example_train_deprel_mpi_data_mismatch
    COMMAND "${MPIEXEC_EXECUTABLE}" --oversubscribe
            ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:train_deprel> --train "${sample}" --train-size 40 ${common} :
            ${MPIEXEC_NUMPROC_FLAG} 1 $<TARGET_FILE:train_deprel>
            --train "${cli_dir}/sample-one-word-changed.conllu" --train-size 40 ${common}
    ENVIRONMENT ${mpi_env} TIMEOUT 60 LABELS mpi RUN_SERIAL
    OUTPUT_MATCHES
    "rank [01]: verify_agreement: ranks disagree at start \\(model shape, options or data\\): rank 1 has 'train_data=[0-9a-f]+' where")
endif()
# Refusals before training: empty files named, a --train-size the file
# cannot fill, output paths that cannot be written (checked before the
# data is even read: stderr never gets the "N sentences, R relations"
# line). Each well under a second.
set(td_dir "${cli_dir}/train_deprel_refusals")
file(MAKE_DIRECTORY "${td_dir}")
file(WRITE "${td_dir}/empty.conllu" "")
set(td_refusal "${PROJECT_SOURCE_DIR}/tests/train_deprel/expect_refusal.cmake")
set(td_quick --variants none --seeds 1 --epochs 1 --threads 1)
set(td_loaded "sentences, [0-9]+ relations")
set(td_base --train "${sample}" --dev "${sample}" --train-size 40 ${td_quick})
set(td_missing "${td_dir}/no_such_folder")
synattn_cli_test(example_train_deprel_empty_dev
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS --train "${sample}" --dev "${td_dir}/empty.conllu" --train-size 40 ${td_quick}
  EXPECT_RC 1 EXPECT_ERR "train_deprel: ${td_dir}/empty.conllu: the dev file holds no sentences"
  NO_STDOUT FORBID_ERR "best dev")
synattn_cli_test(example_train_deprel_empty_train
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS --train "${td_dir}/empty.conllu" --dev "${sample}" --train-size 40 ${td_quick}
  EXPECT_RC 1 EXPECT_ERR "train_deprel: ${td_dir}/empty.conllu: the training file holds no sentences"
  NO_STDOUT FORBID_ERR "best dev")
synattn_cli_test(example_train_deprel_train_size_too_large
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS --train "${sample}" --dev "${sample}" --train-size 40,51 ${td_quick}
  EXPECT_RC 2 EXPECT_ERR "train_deprel: --train-size 51: ${sample} holds only 50 sentences"
  NO_STDOUT FORBID_ERR "best dev")
synattn_cli_test(example_train_deprel_json_folder_missing
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS ${td_base} --json "${td_missing}/r.jsonl"
  EXPECT_RC 2 EXPECT_ERR "train_deprel: --json ${td_missing}/r.jsonl: folder ${td_missing} does not exist"
  ABSENT "${td_missing}" NO_STDOUT FORBID_ERR "${td_loaded}")
synattn_cli_test(example_train_deprel_checkpoint_folder_missing
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS ${td_base} --save-checkpoint "${td_missing}/m.safetensors"
  EXPECT_RC 2
  EXPECT_ERR "train_deprel: --save-checkpoint ${td_missing}/m.safetensors: folder ${td_missing} does not"
  ABSENT "${td_missing}" NO_STDOUT FORBID_ERR "${td_loaded}")
# --out under a file: its folders could never be created.
synattn_cli_test(example_train_deprel_out_not_a_folder
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS ${td_base} --out "${td_dir}/empty.conllu/figures"
  EXPECT_RC 2
  EXPECT_ERR "train_deprel: --out ${td_dir}/empty.conllu/figures: ${td_dir}/empty.conllu is not a folder"
  NO_STDOUT FORBID_ERR "${td_loaded}")

# Tree sources: the sample parsed by the shipped model gives the
# train and dev trees (their UAS against gold and the parser's own DEPREL
# in the table); fixed and per-epoch noise; --report redraws the tree table
# and the gain-against-UAS plot; tree files that do not match, refused by
# sentence and word before training. A few seconds in all.
set(td_trees "${cli_dir}/train_deprel_trees")
set(td_predicted "${td_trees}/sample.predicted.conllu")
file(MAKE_DIRECTORY "${td_trees}")
file(REMOVE "${td_trees}/trees.jsonl")
synattn_cli_test(example_train_deprel_trees_parse
  COMMAND parse --input "${sample}" --output "${td_predicted}" --threads 1
  FIXTURES_SETUP train_deprel_predicted)
set(td_pass_table "\\| [0-9.]+ / [0-9.]+ \\| shared \\| [0-9.]+ ± [0-9.]+ \\(n=1\\) \\|")
synattn_cli_test(example_train_deprel_trees
  COMMAND train_deprel --train "${sample}" --dev "${sample}" --train-size 50 --variants none,shared --epochs 2
          --threads 1 --train-trees "${td_predicted}" --dev-trees "${td_predicted}" --trees-name predicted
          --json "${td_trees}/trees.jsonl"
  FIXTURES_REQUIRED train_deprel_predicted FIXTURES_SETUP train_deprel_tree_runs
  OUTPUT_MATCHES "\\| predicted ${td_pass_table} [+-][0-9.]+ \\|[^\n]*\n\nThe relations of [^\n]*sample.predicted.conllu itself")
synattn_cli_test(example_train_deprel_tree_noise
  COMMAND train_deprel --train "${sample}" --dev "${sample}" --train-size 50 --variants shared --epochs 2
          --threads 1 --tree-noise 0.2 --tree-noise-seed 5 --train-tree-noise 0.1 --json "${td_trees}/trees.jsonl"
  DEPENDS example_train_deprel_trees FIXTURES_SETUP train_deprel_tree_runs
  OUTPUT_MATCHES "\\| noise=0.2, train-noise=0.1 ${td_pass_table}")
# Tree fusion: the predicted trees as view 0 and the sample's own (gold)
# trees as view 1; the fusion row must come out of the tree table. Its own
# JSON file, so that the report test below reads the same runs as before.
file(REMOVE "${td_trees}/fusion.jsonl")
synattn_cli_test(example_train_deprel_fusion
  COMMAND train_deprel --train "${sample}" --dev "${sample}" --train-size 50 --variants shared,fusion --epochs 2
          --threads 1 --train-trees "${td_predicted}" --dev-trees "${td_predicted}"
          --train-view-trees "${sample}" --dev-view-trees "${sample}" --trees-name fused
          --json "${td_trees}/fusion.jsonl"
  FIXTURES_REQUIRED train_deprel_predicted
  OUTPUT_MATCHES "\\| fused \\| [0-9.]+ / [0-9.]+ \\| fusion \\| [0-9.]+ ± [0-9.]+ \\(n=1\\) \\|")
# Fusion without view files: refused by the command line, before any data is read.
# Its own arguments: td_base already names --variants none.
set(td_fusion_err "train_deprel: --variants fusion fuses several trees per sentence: give the further views")
synattn_cli_test(example_train_deprel_fusion_no_views
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS --train "${sample}" --dev "${sample}" --train-size 40 --variants fusion --seeds 1 --epochs 1
  EXPECT_RC 2 EXPECT_ERR "${td_fusion_err} with --train-view-trees and --dev-view-trees"
  NO_STDOUT FORBID_ERR "${td_loaded}")
synattn_cli_test(example_train_deprel_trees_report
  PROGRAM train_deprel
  ARGS --report "${td_trees}/trees.jsonl" --out "${td_trees}/report"
  EXPECT_OUT "\\| any \\| [^\n]* \\| none \\|.*\\| predicted \\|.*\\| noise=0.2, train-noise=0.1 \\|"
  CREATES "${td_trees}/report/gain-vs-uas.svg" "${td_trees}/report/results.md"
  FIXTURES_REQUIRED train_deprel_tree_runs)
# A tree file with one word changed, and one that lacks the sentences.
set(td_first "weblog-blogspot.com_nominations_20041117172713_ENG_20041117_172713-0001")  # the sample's first
synattn_cli_test(example_train_deprel_trees_word_mismatch
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS ${td_base} --train-trees "${cli_dir}/sample-one-word-changed.conllu"
  EXPECT_RC 1 EXPECT_ERR "train_deprel: ${cli_dir}/sample-one-word-changed.conllu:1: sentence ${td_first}: word 5 is 'the' but 'this' in ${sample} (line 1)"
  NO_STDOUT FORBID_ERR "best dev")
synattn_cli_test(example_train_deprel_trees_missing
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS --train "${sample}" --dev "${sample}" --train-size 40 ${td_quick} --dev-trees "${td_dir}/one.conllu"
  EXPECT_RC 1 EXPECT_ERR "train_deprel: replace_trees: ${sample}:1: sentence ${td_first} has no tree in ${td_dir}/one.conllu"
  NO_STDOUT FORBID_ERR "best dev")
file(WRITE "${td_dir}/one.conllu" "# sent_id = only\n1\tGo\t_\t_\t_\t_\t0\troot\t_\t_\n\n")

synattn_cli_test(example_train_deprel_bad_flag
  PROGRAM train_deprel ARGS --bogus
  EXPECT_RC 2 EXPECT_ERR "train_deprel: unknown argument '--bogus'")

# Distillation (docs/experiment.md, "Distillation"): a teacher saved by
# --save-best, then a student of it with transfer sentences; the student's
# run scores the teacher read back exactly as the teacher's own run scored
# its best epoch, --report prints the distillation table, a student of a
# teacher trained at another size is refused (tests/train_deprel/
# distill_round.cmake); distillation flags without a teacher are refused.
synattn_cli_test(example_train_deprel_distill
  PROGRAM train_deprel SCRIPT "${PROJECT_SOURCE_DIR}/tests/train_deprel/distill_round.cmake"
  DEFINE "TRAIN=${ewt_train}" "DEV=${sample}" "OUT=${cli_dir}/train_deprel_distill")
synattn_cli_test(example_train_deprel_distill_refusals
  PROGRAM train_deprel SCRIPT "${td_refusal}"
  ARGS --train "${sample}" --dev "${sample}" --train-size 40 --transfer-size 10
  EXPECT_RC 2 EXPECT_ERR "train_deprel: --transfer-size is read with --distill-from only" NO_STDOUT)
