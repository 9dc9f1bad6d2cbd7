// Locations of the treebanks and golden vectors the tests read. All of them
// live in the repository (data/ud/, tests/golden/), so a fresh clone with
// nothing beside it runs every test.
#ifndef SYNATTN_TESTS_TEST_DATA_HPP
#define SYNATTN_TESTS_TEST_DATA_HPP

#include <fstream>
#include <stdexcept>
#include <string>

namespace synattn_test {

inline std::string source_path(const std::string& relative) {
  return std::string(SYNATTN_SOURCE_DIR) + "/" + relative;
}

// Path of `relative` inside the checkout. A missing file is an error, not a
// skip: these tests must not pass vacuously.
inline std::string data_path(const std::string& relative) {
  const std::string path = source_path(relative);
  if (!std::ifstream(path).good())
    throw std::runtime_error("test data not found: " + path + " (it is tracked in the repository)");
  return path;
}

// A file of the bundled golden vectors, e.g. golden_path("mha/tiny/x.npy").
inline std::string golden_path(const std::string& relative) { return data_path("tests/golden/" + relative); }

inline std::string ewt(const std::string& split) {
  return data_path("data/ud/UD_English-EWT/en_ewt-ud-" + split + ".conllu");
}
inline std::string gsd(const std::string& split) {
  return data_path("data/ud/UD_Chinese-GSD/zh_gsd-ud-" + split + ".conllu");
}

}  // namespace synattn_test

#endif
