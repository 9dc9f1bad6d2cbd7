// TempDir: unique per call (so parallel test programs never share one) and
// removed with everything in it on scope exit.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "support/temp_dir.hpp"

namespace fs = std::filesystem;

TEST_CASE("TempDir makes a fresh directory per call and removes it", "[support][tempdir]") {
  fs::path first, second;
  {
    const synattn_test::TempDir a("synattn_tempdir_test"), b("synattn_tempdir_test");
    first = a.path();
    second = b.path();
    CHECK(first != second);
    CHECK(fs::is_directory(first));
    CHECK(fs::is_directory(second));
    CHECK(fs::is_empty(first));
    CHECK(first.filename().string().rfind("synattn_tempdir_test_", 0) == 0);
    std::ofstream(a.file("x.txt")) << "x";
    fs::create_directories(first / "sub" / "dir");
    CHECK(fs::exists(a.file("x.txt")));
  }
  CHECK_FALSE(fs::exists(first));
  CHECK_FALSE(fs::exists(second));
}
