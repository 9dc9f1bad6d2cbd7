// A scratch directory that is unique per call, even when several test
// programs run at once (ctest -j), and removed on scope exit.
#ifndef SYNATTN_TESTS_TEMP_DIR_HPP
#define SYNATTN_TESTS_TEMP_DIR_HPP

#include <stdlib.h>  // mkdtemp (POSIX)

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace synattn_test {

class TempDir {
 public:
  // mkdtemp creates the directory atomically with a name no other process
  // holds, so parallel test programs never share (and delete) one: an
  // unseeded std::rand gave every program the same name.
  explicit TempDir(const std::string& prefix = "synattn_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("TempDir: mkdtemp failed for " + pattern);
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace synattn_test

#endif
