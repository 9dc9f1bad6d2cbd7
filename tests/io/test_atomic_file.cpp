// io/atomic_file.hpp: synattn::write_file_atomically, and save_safetensors
// through it. Every case lists the folder afterwards (a temporary file left
// behind shows there) and checks that the file that was there before is
// intact byte for byte, or, where the write succeeds, that it was replaced
// and not rewritten in place (a reader holding it open still sees the old
// bytes).
//
// The implementation this replaced wrote to a fixed '<path>.tmp' through
// std::ofstream, renamed it over the destination, and removed nothing on
// failure. Which case catches which of its defects:
//   - "a write gives exactly the bytes ...": a stale '<path>.tmp' (as a crashed
//     save of the old writer left) was opened and reused, so the new file took
//     its permissions (0600 instead of the umask's 0644) and the stale file
//     disappeared;
//   - "a symlink planted at '<path>.tmp' ...": std::ofstream followed the link
//     and overwrote the victim, and the rename turned the destination into a
//     symlink;
//   - "a folder that cannot be written to ..." and "a folder that does not
//     exist ...": messages named the internal '<path>.tmp', not the path the
//     caller passed (the check wants "'<path>'", quotes included);
//   - "a full disk ...": the half-written '<path>.tmp' was left behind;
//   - "a directory as the destination ...": the rename failed with EISDIR
//     after '<path>.tmp' had been written, and it was left behind; the message
//     did not say the destination is a directory;
//   - "concurrent saves ...": the threads shared one '<path>.tmp', so one
//     thread's rename took another's half-written file (readers saw mixed or
//     truncated contents) and the others' renames failed (ENOENT);
//   - "save_safetensors writes through write_file_atomically": its own copy of
//     the old writer (messages, a '<path>.tmp' left beside a directory, the
//     planted symlink followed).
//
// Runs as root too (as in CI containers), where permission bits do not stop
// a write: the read-only folder case then drops to user "nobody" in a child
// process, and only when that is impossible says so (WARN) and keeps the
// missing-folder variant.
#include <catch2/catch.hpp>

#include <synattn/io/atomic_file.hpp>
#include <synattn/io/output_path.hpp>
#include <synattn/io/npy.hpp>

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#if __has_include(<nlohmann/json.hpp>)
#include <synattn/io/safetensors.hpp>
#define SYNATTN_TEST_HAVE_SAFETENSORS 1
#endif

#include "support/temp_dir.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using synattn_test::TempDir;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A plain (non-atomic) write, for planting files.
void plant(const std::string& path, const std::string& bytes, mode_t mode = 0644) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    REQUIRE(out);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
  }
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

// The names in `dir` (symlinks, dangling ones included, as themselves).
std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

bool is_regular_file_itself(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Every byte value, NULs and line ends included, then a pattern.
std::string awkward_bytes(std::size_t size, unsigned salt) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131u + salt * 7u + (i >> 8)) & 0xffu);
  return s;
}

// The whole content of the open descriptor `fd`, read from offset 0.
std::string read_fd(int fd) {
  std::string out;
  char buf[4096];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    REQUIRE(n >= 0);
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    offset += n;
  }
}

// Sets the umask for a scope.
class UmaskScope {
 public:
  explicit UmaskScope(mode_t mask) : old_(::umask(mask)) {}
  ~UmaskScope() { ::umask(old_); }
  UmaskScope(const UmaskScope&) = delete;
  UmaskScope& operator=(const UmaskScope&) = delete;

 private:
  mode_t old_;
};

// What a forked child reported: its exit code and the message it sent.
struct ChildResult {
  int exit_code = -1;  // -1: killed by a signal (then `signal` says which)
  int signal = 0;
  std::string message;
};

// Exit codes of run_in_child's child.
constexpr int kChildGotError = 0;
constexpr int kChildNoException = 1;
constexpr int kChildOtherException = 2;
constexpr int kChildSetupFailed = 77;

// Runs `setup` then `body` in a forked child. The child exits kChildGotError
// when `body` throws synattn::Error (its what() is sent back), kChildNoException
// when it returns, kChildOtherException for any other exception and
// kChildSetupFailed when `setup` returns false (its reason is sent back). The
// child leaves by _exit, so no destructor of the parent's objects (TempDir!)
// runs in it.
ChildResult run_in_child(const std::function<bool(std::string&)>& setup, const std::function<void()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    int code = kChildNoException;
    std::string message;
    try {
      if (!setup(message)) {
        code = kChildSetupFailed;
      } else {
        body();
      }
    } catch (const synattn::RuntimeError& e) {
      code = kChildGotError;
      message = e.what();
    } catch (const std::exception& e) {
      code = kChildOtherException;
      message = e.what();
    } catch (...) {
      code = kChildOtherException;
    }
    const char* p = message.data();
    std::size_t left = message.size();
    while (left > 0) {
      const ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::close(fds[1]);
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildResult result;
  char buf[1024];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.message.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) REQUIRE(errno == EINTR);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace

TEST_CASE("a write gives exactly the bytes, with the umask's permissions, replacing the old file",
          "[atomic_file]") {
  TempDir dir("synattn_atomic");
  const std::string path = dir.file("out.bin");
  // As a crashed save of the old writer (fixed '<path>.tmp') left it.
  const std::string stale = path + ".tmp";
  const std::string stale_bytes = "stale temporary of an earlier crash";
  plant(stale, stale_bytes, 0600);

  SECTION("a new file, then replaced by shorter and empty contents") {
    const UmaskScope mask(022);
    const std::string first = awkward_bytes(70000, 1);
    synattn::write_file_atomically(path, first, "test");
    CHECK(read_bytes(path) == first);
    CHECK(mode_of(path) == 0644);
    CHECK(is_regular_file_itself(path));

    // A reader holding the old file open keeps its bytes: the file is
    // replaced (renamed over), never rewritten in place.
    const int old_fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(old_fd >= 0);
    const std::string second = awkward_bytes(300, 2);  // shorter: nothing of the first may stay
    synattn::write_file_atomically(path, second, "test");
    CHECK(read_bytes(path) == second);
    CHECK(read_fd(old_fd) == first);
    ::close(old_fd);

    synattn::write_file_atomically(path, std::string(), "test");
    CHECK(read_bytes(path).empty());
    CHECK(mode_of(path) == 0644);
  }

  SECTION("other umasks") {
    {
      const UmaskScope mask(077);
      synattn::write_file_atomically(path, "private", "test");
      CHECK(mode_of(path) == 0600);
    }
    {
      const UmaskScope mask(002);
      synattn::write_file_atomically(path, "group-writable", "test");
      CHECK(mode_of(path) == 0664);
      CHECK(read_bytes(path) == "group-writable");
    }
    {
      // A file that had other permissions gets the umask's, as a new file would.
      REQUIRE(::chmod(path.c_str(), 0400) == 0);
      const UmaskScope mask(022);
      synattn::write_file_atomically(path, "readable again", "test");
      CHECK(mode_of(path) == 0644);
      CHECK(read_bytes(path) == "readable again");
    }
  }

  // The stale temporary is somebody else's file: neither reused nor removed,
  // and nothing else is left.
  CHECK(read_bytes(stale) == stale_bytes);
  CHECK(mode_of(stale) == 0600);
  CHECK(listing(dir.path()) == std::set<std::string>{"out.bin", "out.bin.tmp"});
}

TEST_CASE("a symlink planted at '<path>.tmp' is not followed: its target is left as it was",
          "[atomic_file][security]") {
  TempDir dir("synattn_atomic");
  TempDir elsewhere("synattn_victim");
  const std::string victim = elsewhere.file("victim.txt");
  const std::string victim_bytes = "the victim's own contents\n";
  plant(victim, victim_bytes, 0644);
  const std::string path = dir.file("model.bin");
  const std::string previous = "previous model";
  plant(path, previous);
  REQUIRE(::symlink(victim.c_str(), (path + ".tmp").c_str()) == 0);
  // A dangling one too: following it would create a file in `elsewhere`.
  const std::string fresh = dir.file("fresh.bin");
  const std::string not_there = elsewhere.file("created-through-the-link");
  REQUIRE(::symlink(not_there.c_str(), (fresh + ".tmp").c_str()) == 0);
  // (The real temporary's name is unique per process, call and time, and is
  // created with O_EXCL | O_NOFOLLOW, so a link planted under it only makes
  // the writer pick another name; the fixed name is what the old writer used.)

  const int old_fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(old_fd >= 0);
  const std::string bytes = awkward_bytes(5000, 3);
  synattn::write_file_atomically(path, bytes, "test");
  synattn::write_file_atomically(fresh, "fresh", "test");

  CHECK(read_bytes(victim) == victim_bytes);
  CHECK(mode_of(victim) == 0644);
  CHECK(listing(elsewhere.path()) == std::set<std::string>{"victim.txt"});
  // The destinations are regular files of their own, not the links renamed.
  CHECK(is_regular_file_itself(path));
  CHECK(read_bytes(path) == bytes);
  CHECK(is_regular_file_itself(fresh));
  CHECK(read_bytes(fresh) == "fresh");
  CHECK(read_fd(old_fd) == previous);
  ::close(old_fd);
  // The links are still there, untouched.
  CHECK(fs::is_symlink(path + ".tmp"));
  CHECK(fs::read_symlink(path + ".tmp") == fs::path(victim));
  CHECK(fs::read_symlink(fresh + ".tmp") == fs::path(not_there));
  CHECK(listing(dir.path()) == std::set<std::string>{"fresh.bin", "fresh.bin.tmp", "model.bin", "model.bin.tmp"});
}

TEST_CASE("a folder that cannot be written to gives a RuntimeError naming the path, and leaves nothing",
          "[atomic_file][errors]") {
  TempDir dir("synattn_atomic");
  const fs::path folder = dir.path() / "read-only";
  fs::create_directory(folder);
  const std::string path = (folder / "model.bin").string();
  const std::string previous = awkward_bytes(1000, 4);
  plant(path, previous, 0644);
  REQUIRE(::chmod(folder.c_str(), 0555) == 0);

  ChildResult got;
  if (::geteuid() != 0) {
    try {
      synattn::write_file_atomically(path, "new contents", "test");
      got.exit_code = kChildNoException;
    } catch (const synattn::RuntimeError& e) {
      got.exit_code = kChildGotError;
      got.message = e.what();
    }
  } else {
    // Root writes whatever the permission bits say: drop to "nobody" in a
    // child process. The scratch folder is 0700 (mkdtemp); nobody may enter
    // it but not write to `folder`.
    REQUIRE(::chmod(dir.path().c_str(), 0755) == 0);
    got = run_in_child(
        [](std::string& why) {
          const uid_t nobody = 65534;
          if (::setgroups(0, nullptr) != 0 || ::setgid(nobody) != 0 || ::setuid(nobody) != 0) {
            why = std::string("cannot switch to uid 65534: ") + std::strerror(errno);
            return false;
          }
          return true;
        },
        [&] { synattn::write_file_atomically(path, "new contents", "test"); });
  }
  REQUIRE(::chmod(folder.c_str(), 0755) == 0);  // so that TempDir can remove it

  if (got.exit_code == kChildSetupFailed) {
    WARN("running as root and " << got.message
                                << ": the permission bits cannot be tested here (root ignores them); "
                                   "only the missing-folder case below runs");
  } else {
    INFO("child: exit " << got.exit_code << ", signal " << got.signal << ", message: " << got.message);
    REQUIRE(got.exit_code == kChildGotError);
    CHECK_THAT(got.message, Contains("test: cannot write '" + path + "'"));
    CHECK_THAT(got.message, Contains("cannot create a temporary file"));
    CHECK_THAT(got.message, Contains(std::strerror(EACCES)));
  }
  CHECK(read_bytes(path) == previous);
  CHECK(mode_of(path) == 0644);
  CHECK(listing(folder) == std::set<std::string>{"model.bin"});
  CHECK(listing(dir.path()) == std::set<std::string>{"read-only"});
}

TEST_CASE("a folder that does not exist gives a RuntimeError naming the path, and is not created",
          "[atomic_file][errors]") {
  TempDir dir("synattn_atomic");
  plant(dir.file("bystander"), "bystander");
  const std::string path = dir.file("missing/model.bin");
  try {
    synattn::write_file_atomically(path, "contents", "saver");
    FAIL("no error for a path in a missing folder");
  } catch (const synattn::RuntimeError& e) {
    CHECK_THAT(e.what(), Contains("saver: cannot write '" + path + "'"));
    CHECK_THAT(e.what(), Contains(std::strerror(ENOENT)));
  }
  CHECK(read_bytes(dir.file("bystander")) == "bystander");
  CHECK(listing(dir.path()) == std::set<std::string>{"bystander"});
}

TEST_CASE("a full disk (a file size limit) gives a RuntimeError, keeps the old file and leaves no temporary",
          "[atomic_file][errors]") {
  TempDir dir("synattn_atomic");
  const std::string path = dir.file("model.bin");
  const std::string good = awkward_bytes(1000, 5);
  plant(path, good, 0644);
  constexpr rlim_t kLimit = 4096;
  const std::string too_big = awkward_bytes(64 * 1024, 6);

  // In a child: the limit and the ignored SIGXFSZ (else the signal kills it
  // instead of write() failing with EFBIG, as on a full disk) stay there.
  const ChildResult got = run_in_child(
      [&](std::string& why) {
        if (::signal(SIGXFSZ, SIG_IGN) == SIG_ERR) {
          why = "signal(SIGXFSZ) failed";
          return false;
        }
        const struct rlimit limit {kLimit, kLimit};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
          why = std::string("setrlimit failed: ") + std::strerror(errno);
          return false;
        }
        return true;
      },
      [&] { synattn::write_file_atomically(path, too_big, "test"); });

  INFO("child: exit " << got.exit_code << ", signal " << got.signal << ", message: " << got.message);
  REQUIRE(got.exit_code == kChildGotError);
  CHECK_THAT(got.message, Contains("test: cannot write '" + path + "'"));
  CHECK_THAT(got.message, Contains(std::strerror(EFBIG)));
  CHECK(read_bytes(path) == good);
  CHECK(mode_of(path) == 0644);
  CHECK(listing(dir.path()) == std::set<std::string>{"model.bin"});

  // Below the limit the same child writes (the limit is what failed).
  const std::string fits = awkward_bytes(kLimit, 7);
  const ChildResult small = run_in_child(
      [&](std::string&) {
        ::signal(SIGXFSZ, SIG_IGN);
        const struct rlimit limit {kLimit, kLimit};
        return ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
      },
      [&] { synattn::write_file_atomically(path, fits, "test"); });
  CHECK(small.exit_code == kChildNoException);
  CHECK(read_bytes(path) == fits);
  CHECK(listing(dir.path()) == std::set<std::string>{"model.bin"});
}

TEST_CASE("a directory as the destination gives a RuntimeError saying so, and leaves nothing",
          "[atomic_file][errors]") {
  TempDir dir("synattn_atomic");
  const fs::path target = dir.path() / "model.bin";
  fs::create_directory(target);
  plant((target / "inside.txt").string(), "inside");
  const std::string path = target.string();
  try {
    synattn::write_file_atomically(path, "contents", "test");
    FAIL("no error for a directory as the destination");
  } catch (const synattn::RuntimeError& e) {
    CHECK_THAT(e.what(), Contains("test: cannot write '" + path + "'"));
    CHECK_THAT(e.what(), Contains("it is a directory"));
  }
  CHECK(fs::is_directory(target));
  CHECK(read_bytes((target / "inside.txt").string()) == "inside");
  CHECK(listing(target) == std::set<std::string>{"inside.txt"});
  CHECK(listing(dir.path()) == std::set<std::string>{"model.bin"});

  // The same with a trailing slash.
  CHECK_THROWS_WITH(synattn::write_file_atomically(path + "/", "contents", "test"), Contains("it is a directory"));
  CHECK(listing(dir.path()) == std::set<std::string>{"model.bin"});
  CHECK(listing(target) == std::set<std::string>{"inside.txt"});
}

TEST_CASE("concurrent saves to one path leave one complete content, readers never see a mix, and no temporary",
          "[atomic_file][threads]") {
  TempDir dir("synattn_atomic");
  const std::string path = dir.file("shared.bin");
  const std::string initial = "initial contents";
  plant(path, initial, 0644);
  const UmaskScope mask(022);

  constexpr int kThreads = 4, kWrites = 20;
  // Distinct contents of different sizes (about 1 KB to 64 KB), each with a
  // header naming its writer, so that no two are equal and a mix shows.
  std::vector<std::string> contents;
  for (int t = 0; t < kThreads; ++t)
    for (int w = 0; w < kWrites; ++w) {
      const std::string head = "thread " + std::to_string(t) + " write " + std::to_string(w) + "\n";
      const std::size_t size = 1000 + static_cast<std::size_t>((t * kWrites + w) * 7919) % 64000;
      contents.push_back(head + awkward_bytes(size, static_cast<unsigned>(t * kWrites + w)));
    }
  std::unordered_set<std::string> known(contents.begin(), contents.end());
  known.insert(initial);
  REQUIRE(known.size() == contents.size() + 1);

  std::vector<std::vector<std::string>> errors(kThreads);
  std::atomic<int> running{kThreads};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      for (int w = 0; w < kWrites; ++w) {
        try {
          synattn::write_file_atomically(path, contents[static_cast<std::size_t>(t * kWrites + w)], "test");
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(t)].push_back(e.what());
        }
      }
      --running;
    });
  // A reader meanwhile: every read sees one whole content.
  long reads = 0, mixed = 0, unreadable = 0;
  std::string example;
  while (running.load() > 0) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      ++unreadable;
      continue;
    }
    const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++reads;
    if (known.count(got) == 0) {
      ++mixed;
      if (example.empty()) example = got.substr(0, std::min<std::size_t>(got.find('\n'), 40));
    }
  }
  for (std::thread& w : writers) w.join();

  for (int t = 0; t < kThreads; ++t) {
    const std::vector<std::string>& failed = errors[static_cast<std::size_t>(t)];
    INFO("thread " << t << ": " << failed.size() << " failed writes, first: " << (failed.empty() ? "" : failed[0]));
    CHECK(failed.empty());
  }
  INFO(reads << " reads during the writes, " << mixed << " not one whole content (e.g. starting '" << example
             << "'), " << unreadable << " found no file");
  CHECK(mixed == 0);
  CHECK(unreadable == 0);
  const std::string final_bytes = read_bytes(path);
  CHECK(known.count(final_bytes) == 1);
  CHECK(final_bytes != initial);
  // creation_mode() reads the umask by setting it: threads racing there
  // could leave 0666 files, or the process's umask at 0.
  CHECK(mode_of(path) == 0644);
  const mode_t umask_now = ::umask(022);
  CHECK(umask_now == 022);
  CHECK(listing(dir.path()) == std::set<std::string>{"shared.bin"});
}

#ifdef SYNATTN_TEST_HAVE_SAFETENSORS
TEST_CASE("save_safetensors writes through write_file_atomically", "[atomic_file][safetensors]") {
  TempDir dir("synattn_atomic");
  const std::vector<float> values{1.5f, -2.0f, 0.25f};
  synattn::SafetensorsFile file;
  file.tensors["w"] = synattn::SafeTensor::from(values.data(), {3});
  file.metadata["step"] = "7";
  const std::string previous = "previous model file";
  plant(dir.file("bystander.safetensors"), previous);

  SECTION("a failed save into a missing folder leaves nothing and names the path") {
    const std::string path = dir.file("missing/model.safetensors");
    try {
      synattn::save_safetensors(path, file);
      FAIL("no error for a missing folder");
    } catch (const synattn::RuntimeError& e) {
      CHECK_THAT(e.what(), Contains("save_safetensors: cannot write '" + path + "'"));
    }
    CHECK(listing(dir.path()) == std::set<std::string>{"bystander.safetensors"});
  }

  SECTION("a directory as the destination leaves nothing beside it") {
    const fs::path target = dir.path() / "model.safetensors";
    fs::create_directory(target);
    CHECK_THROWS_WITH(synattn::save_safetensors(target.string(), file),
                      Contains("save_safetensors: cannot write '" + target.string() + "'") &&
                          Contains("it is a directory"));
    CHECK(listing(dir.path()) == std::set<std::string>{"bystander.safetensors", "model.safetensors"});
    CHECK(listing(target).empty());
  }

  SECTION("a planted '<path>.tmp' symlink is not followed, and the file loads back") {
    const std::string path = dir.file("model.safetensors");
    const std::string victim = dir.file("bystander.safetensors");
    REQUIRE(::symlink(victim.c_str(), (path + ".tmp").c_str()) == 0);
    synattn::save_safetensors(path, file);
    CHECK(is_regular_file_itself(path));
    const synattn::SafetensorsFile back = synattn::load_safetensors(path);
    CHECK(back.metadata == file.metadata);
    REQUIRE(back.tensors.count("w") == 1);
    CHECK(back.tensors.at("w").bytes == file.tensors.at("w").bytes);
    CHECK(listing(dir.path()) ==
          std::set<std::string>{"bystander.safetensors", "model.safetensors", "model.safetensors.tmp"});
  }

  CHECK(read_bytes(dir.file("bystander.safetensors")) == previous);
}
#endif

TEST_CASE("pieces are written in order, as one file, without being joined first", "[atomic_file]") {
  TempDir dir("synattn_atomic");
  const std::string path = dir.file("joined.bin");
  const std::string a = awkward_bytes(100, 8), b = awkward_bytes(3, 9);
  synattn::write_file_atomically(path, {a, std::string_view(), b}, "test");
  CHECK(read_bytes(path) == a + b);
  CHECK(listing(dir.path()) == std::set<std::string>{"joined.bin"});
}

// write_npy used to truncate the file in place: a full disk replaced a good
// array by a truncated one.
TEST_CASE("write_npy is atomic: a full disk keeps the old array and leaves no temporary", "[atomic_file][npy]") {
  TempDir dir("synattn_atomic");
  const std::string path = dir.file("x.npy");
  const std::vector<double> old_values{1.0, 2.0, 3.0};
  synattn::write_npy(path, old_values.data(), {3});
  const std::string good = read_bytes(path);
  const std::vector<double> big(64 * 1024, 0.5);  // 512 KiB, beyond the limit
  const ChildResult got = run_in_child(
      [&](std::string& why) {
        ::signal(SIGXFSZ, SIG_IGN);
        const struct rlimit limit {4096, 4096};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
          why = std::string("setrlimit failed: ") + std::strerror(errno);
          return false;
        }
        return true;
      },
      [&] { synattn::write_npy(path, big.data(), {big.size()}); });
  INFO("child: exit " << got.exit_code << ", signal " << got.signal << ", message: " << got.message);
  REQUIRE(got.exit_code == kChildGotError);
  CHECK_THAT(got.message, Contains("write_npy: cannot write '" + path + "'"));
  CHECK(read_bytes(path) == good);
  CHECK(listing(dir.path()) == std::set<std::string>{"x.npy"});
  // And a planted '<path>.tmp' symlink is not followed.
  const std::string victim = dir.file("victim.txt");
  plant(victim, "untouched");
  REQUIRE(::symlink(victim.c_str(), (path + ".tmp").c_str()) == 0);
  synattn::write_npy(path, big.data(), {big.size()});
  CHECK(synattn::read_npy(path).shape() == std::vector<std::size_t>{big.size()});
  CHECK(read_bytes(victim) == "untouched");
}

// io/output_path.hpp: the output-path policy every writer follows.
// Before it, write_file_atomically refused only directories and renamed
// a new regular file over whatever was at the path: /dev/null became a
// regular file, a FIFO's reader got nothing (the FIFO was replaced), and a
// symlink was replaced by a regular file while its target kept the old bytes.
TEST_CASE("a character device is written to, not replaced by a regular file", "[atomic_file][output_path]") {
  TempDir dir("synattn_atomic");
  // Through a symlink to /dev/null (writing /dev/null itself would replace it
  // for the whole machine when run as root with the old writer).
  const std::string link = dir.file("null-link");
  REQUIRE(::symlink("/dev/null", link.c_str()) == 0);
  CHECK(synattn::resolve_output_path(link, "test").kind == synattn::OutputKind::Stream);
  synattn::write_file_atomically(link, "discarded", "test");
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(listing(dir.path()) == std::set<std::string>{"null-link"});
}

TEST_CASE("a FIFO is written to: its reader gets the bytes and the FIFO stays", "[atomic_file][output_path]") {
  TempDir dir("synattn_atomic");
  const std::string fifo = dir.file("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  const std::string bytes = awkward_bytes(100000, 3);  // more than a pipe buffer
  synattn::write_file_atomically(fifo, bytes, "test");
  reader.join();
  CHECK(got == bytes);
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(listing(dir.path()) == std::set<std::string>{"pipe"});
}

TEST_CASE("a symlink is followed: its regular file is replaced atomically and the link stays a link",
          "[atomic_file][output_path]") {
  TempDir dir("synattn_atomic");
  fs::create_directory(dir.path() / "real");
  const std::string target = (dir.path() / "real" / "model.bin").string();
  plant(target, "old bytes");
  const std::string link = dir.file("model.bin");
  REQUIRE(::symlink("real/model.bin", link.c_str()) == 0);  // relative, as `ln -s` makes them
  const int held = ::open(target.c_str(), O_RDONLY);
  REQUIRE(held >= 0);
  synattn::write_file_atomically(link, "new bytes", "test");
  CHECK(read_bytes(target) == "new bytes");
  CHECK(read_fd(held) == "old bytes");  // replaced, not rewritten in place
  ::close(held);
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(listing(dir.path()) == std::set<std::string>{"model.bin", "real"});
  CHECK(listing(dir.path() / "real") == std::set<std::string>{"model.bin"});
}

TEST_CASE("a symlink to nothing, a loop, a socket and an empty path are refused by name, and nothing is created",
          "[atomic_file][output_path][errors]") {
  TempDir dir("synattn_atomic");
  const std::string dangling = dir.file("dangling");
  REQUIRE(::symlink("nowhere.bin", dangling.c_str()) == 0);
  CHECK_THROWS_WITH(synattn::write_file_atomically(dangling, "x", "test"),
                    Contains("test: cannot write '" + dangling + "'") && Contains("does not exist"));
  const std::string loop = dir.file("loop");
  REQUIRE(::symlink("loop", loop.c_str()) == 0);
  CHECK_THROWS_WITH(synattn::write_file_atomically(loop, "x", "test"), Contains("too many levels of symlinks"));
  const std::string to_dir = dir.file("to-dir");
  REQUIRE(::symlink(dir.path().c_str(), to_dir.c_str()) == 0);
  CHECK_THROWS_WITH(synattn::write_file_atomically(to_dir, "x", "test"), Contains("which is a directory"));
  CHECK_THROWS_WITH(synattn::write_file_atomically("", "x", "test"), Contains("an empty path"));
  CHECK(listing(dir.path()) == std::set<std::string>{"dangling", "loop", "to-dir"});
}

TEST_CASE("'-' and /dev/stdout write to standard output where it is, never renaming over a redirected file",
          "[atomic_file][output_path]") {
  TempDir dir("synattn_atomic");
  const std::string out = dir.file("stdout.txt");
  std::cout.flush();  // the child flushes stdout first: nothing of ours may be pending
  std::fflush(stdout);
  // Not /dev/stdout itself: run as root against a writer that renames, this
  // very test replaced the machine's /dev/stdout with a regular file. A link
  // of our own leads where it leads (/proc/self/fd/1), and a writer that
  // renames over /proc/self/fd/1 fails there (proc takes no new files).
  const std::string link = dir.file("stdout-link");
  REQUIRE(::symlink("/proc/self/fd/1", link.c_str()) == 0);
  for (const std::string& name : {std::string("-"), std::string("/proc/self/fd/1"), link}) {
    plant(out, "");
    const int fd = ::open(out.c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    const ChildResult got = run_in_child(
        [&](std::string& why) {
          if (::dup2(fd, STDOUT_FILENO) < 0) {
            why = "dup2 failed";
            return false;
          }
          return true;
        },
        [&] { synattn::write_file_atomically(name, "to stdout", "test"); });
    ::close(fd);
    INFO(name << ": child exit " << got.exit_code << ", message: " << got.message);
    CHECK(got.exit_code == kChildNoException);
    CHECK(read_bytes(out) == "to stdout");  // the same file the descriptor holds, not a new one
    CHECK(listing(dir.path()) == std::set<std::string>{"stdout-link", "stdout.txt"});
  }
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
}
