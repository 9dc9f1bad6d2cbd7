# syntax_attention_demo: its banner and one of its bias tables.
synattn_cli_test(example_syntax_attention_demo
  COMMAND syntax_attention_demo "${sample}" --sentences 8
  OUTPUT_MATCHES "^synattn [0-9]+\\.[0-9]+\\.[0-9]+; Eigen [^\n]*; OpenMP: [^\n]*\n.*linear decay +0\\.[0-9]+")
