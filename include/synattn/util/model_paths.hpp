// synattn — where the shipped models are, for a program that names none.
//
// In order: the environment variable a user sets ($SYNATTN_PARSER_MODEL,
// $SYNATTN_TOKENIZER_MODEL); the path a program compiled in (the examples
// compile in the source tree's models/); the models folder of the build or
// installed package the program was compiled against (synattn::checkpoint
// defines SYNATTN_MODEL_DIR: the source tree's models/ from a build tree,
// <prefix>/share/synattn/models once installed, where `cmake --install`
// puts them); last, models/FILE relative to the working directory.
#ifndef SYNATTN_UTIL_MODEL_PATHS_HPP
#define SYNATTN_UTIL_MODEL_PATHS_HPP

#include <cstdlib>
#include <string>

namespace synattn {

inline std::string shipped_model_path(const char* env_var, const char* compiled_in, const char* file) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  if (compiled_in && *compiled_in) return compiled_in;
#if defined(SYNATTN_MODEL_DIR)
  return std::string(SYNATTN_MODEL_DIR) + "/" + file;
#else
  return std::string("models/") + file;
#endif
}

namespace detail {
// The paths a program compiled in (the examples: the source tree's models/).
#if defined(SYNATTN_DEFAULT_TOKENIZER_MODEL)
inline constexpr const char* kCompiledTokenizerModel = SYNATTN_DEFAULT_TOKENIZER_MODEL;
#else
inline constexpr const char* kCompiledTokenizerModel = nullptr;
#endif
#if defined(SYNATTN_DEFAULT_PARSER_MODEL)
inline constexpr const char* kCompiledParserModel = SYNATTN_DEFAULT_PARSER_MODEL;
#else
inline constexpr const char* kCompiledParserModel = nullptr;
#endif
}  // namespace detail

// The shipped English tokenizer: $SYNATTN_TOKENIZER_MODEL,
// SYNATTN_DEFAULT_TOKENIZER_MODEL, the package's models folder, or
// models/en_ewt.tokenizer.safetensors.
namespace text {
inline std::string default_tokenizer_path() {
  return shipped_model_path("SYNATTN_TOKENIZER_MODEL", synattn::detail::kCompiledTokenizerModel,
                            "en_ewt.tokenizer.safetensors");
}
}  // namespace text

// The shipped English parser: $SYNATTN_PARSER_MODEL,
// SYNATTN_DEFAULT_PARSER_MODEL, the package's models folder, or
// models/en_ewt.parser.safetensors.
namespace parse {
inline std::string default_model_path() {
  return shipped_model_path("SYNATTN_PARSER_MODEL", synattn::detail::kCompiledParserModel,
                            "en_ewt.parser.safetensors");
}
}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_UTIL_MODEL_PATHS_HPP
