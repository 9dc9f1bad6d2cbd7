// Locations of the shared treebanks and golden vectors used by the tests.
#ifndef SYNATTN_TESTS_SHARED_DATA_HPP
#define SYNATTN_TESTS_SHARED_DATA_HPP

#include <fstream>
#include <stdexcept>
#include <string>

namespace synattn_test {

// Path of `relative` inside the shared directory (../shared beside the
// checkout by default; CMake's SYNATTN_SHARED_DIR overrides it). A missing
// file is an error, not a skip: these tests must not pass vacuously.
inline std::string shared_path(const std::string& relative) {
  const std::string path = std::string(SYNATTN_SHARED_DIR) + "/" + relative;
  if (!std::ifstream(path).good())
    throw std::runtime_error("shared test data not found: " + path +
                             " (configure with -DSYNATTN_SHARED_DIR=...)");
  return path;
}

inline std::string source_path(const std::string& relative) {
  return std::string(SYNATTN_SOURCE_DIR) + "/" + relative;
}

inline std::string ewt(const std::string& split) {
  return shared_path("data/ud/UD_English-EWT/en_ewt-ud-" + split + ".conllu");
}
inline std::string gsd(const std::string& split) {
  return shared_path("data/ud/UD_Chinese-GSD/zh_gsd-ud-" + split + ".conllu");
}

}  // namespace synattn_test

#endif
