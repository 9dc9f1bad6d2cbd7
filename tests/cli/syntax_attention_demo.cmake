# syntax_attention_demo: its banner and one of its bias tables.
synattn_cli_test(example_syntax_attention_demo
  COMMAND syntax_attention_demo "${sample}" --sentences 8
  OUTPUT_MATCHES "^synattn [0-9]+\\.[0-9]+\\.[0-9]+; Eigen [^\n]*; OpenMP: [^\n]*\n.*linear decay +0\\.[0-9]+")

# Command-line numbers are read whole and range-checked: "4x", "abc" and
# 99999999999 are refused with exit status 2 (std::atoi read them as 4, 0
# and a wrapped int).
synattn_cli_test(example_syntax_attention_demo_bad_number
  PROGRAM syntax_attention_demo ARGS --heads 4x
  EXPECT_RC 2 EXPECT_ERR "syntax_attention_demo: --heads is '4x', expected an integer in [1, 4096]" NO_STDOUT)
synattn_cli_test(example_load_pytorch_weights_bad_number
  PROGRAM load_pytorch_weights ARGS --heads 99999999999 somewhere
  EXPECT_RC 2 EXPECT_ERR "load_pytorch_weights: --heads is '99999999999', expected an integer in [1, 4096]" NO_STDOUT)
