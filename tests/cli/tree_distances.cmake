# tree_distances: one sentence's distance matrix (undirected and directed),
# the corpus statistics, and a bad file refused by file and line.
synattn_cli_test(example_tree_distances_sentence
  COMMAND tree_distances "${sample}" --sentence 1
  OUTPUT_MATCHES "^# sent 1 n=19\n0 1 4 3 2 4 3 4 3 5 4 6 6 5 7 7 7 6 3\n1 0 3 2 1")
synattn_cli_test(example_tree_distances_directed
  COMMAND tree_distances "${sample}" --sentence 1 --directed
  OUTPUT_MATCHES "^# sent 1 n=19\n0:0 1:0 2:2 2:1 2:0 ")
synattn_cli_test(example_tree_distances_stats
  COMMAND tree_distances "${sample}" --stats
  OUTPUT_MATCHES "^# synattn [0-9.]+; [^\n]*\n# sentences 50, words 1166.*# suggested max_distance: [0-9]+ \\(covers 95% of pairs\\)")
# A bad file: "FILE:LINE: reason" and exit status 1.
file(WRITE "${cli_dir}/bad.conllu" "1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\t_\t_\t9\troot\t_\t_\n\n")
synattn_cli_test(example_tree_distances_bad_file
  PROGRAM tree_distances ARGS "${cli_dir}/bad.conllu"
  EXPECT_RC 1 EXPECT_ERR "bad.conllu:2: HEAD 9 out of range")
