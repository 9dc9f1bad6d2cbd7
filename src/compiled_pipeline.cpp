// parse::Pipeline's loading and parsing for the synattn_compiled library
// (synattn::compiled, when built with nlohmann-json): the safetensors and
// JSON reading, the tokenizer and the parser's driver compiled once. The
// library defines SYNATTN_COMPILED_PIPELINE for its users, whose files then
// see the members declared only (parse/pipeline.hpp).
#define SYNATTN_PIPELINE_SOURCE
#include <synattn/parse/pipeline.hpp>
