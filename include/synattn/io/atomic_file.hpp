// synattn — writing a whole file atomically: the bytes go to a temporary
// file in the same folder, created exclusively under a fresh unique name
// (O_CREAT | O_EXCL | O_NOFOLLOW: a planted symlink is never followed), flushed to the
// disk (fsync), then renamed over the destination, and the folder is synced
// so the rename itself survives a crash. Readers see either the old file or
// the new one, never a truncated mix; on any failure the temporary file is
// removed and the old file is left as it was.
//
// POSIX (Linux, macOS, the BSDs). The file gets the permissions a plain
// open(O_CREAT, 0666) would give under the process's umask.
#ifndef SYNATTN_IO_ATOMIC_FILE_HPP
#define SYNATTN_IO_ATOMIC_FILE_HPP

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

#include "../error.hpp"

namespace synattn {

namespace atomic_file_detail {
inline std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
// A name no other writer picks: the process id, a per-process counter and
// the clock's nanoseconds (O_EXCL below still refuses any collision).
inline std::string unique_suffix() {
  static std::atomic<unsigned long long> counter{0};
  const auto now = static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ".tmp." + std::to_string(static_cast<long long>(::getpid())) + "." + std::to_string(counter++) + "." +
         std::to_string(now % 1000000007ULL);
}
}  // namespace atomic_file_detail

// Replaces `path` by the concatenation of `pieces` atomically (see the top),
// without joining them in memory first (a header and an array's data, say).
// `who` names the caller in messages ("save_safetensors").
inline void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> pieces,
                                  const std::string& who) {
  namespace d = atomic_file_detail;
  const std::string fail = who + ": cannot write '" + path + "': ";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw RuntimeError(fail + "it is a directory");
  // Created exclusively and never through a symlink, with mode 0666 so that
  // the kernel applies the umask (reading the umask would race other threads).
  std::string temp_name;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    temp_name = path + d::unique_suffix();
    fd = ::open(temp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt >= 100))
      throw RuntimeError(fail + "cannot create a temporary file beside it: " + std::strerror(errno));
  }
  const auto give_up = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(temp_name.c_str());
    throw RuntimeError(fail + what + ": " + std::strerror(err));
  };
  for (const std::string_view bytes : pieces) {
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        give_up("writing failed", errno);
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  if (::fsync(fd) != 0) give_up("flushing to disk failed", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_name.c_str());
    throw RuntimeError(fail + "closing failed: " + std::strerror(err));
  }
  if (std::rename(temp_name.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_name.c_str());
    throw RuntimeError(fail + "cannot rename the temporary file into place: " + std::strerror(err));
  }
  // The rename is durable once the folder's entry is on disk; a folder that
  // cannot be opened or synced (some file systems) does not undo the write.
  const int dir = ::open(d::folder_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

// Replaces `path` by `bytes` atomically (see the top).
inline void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& who) {
  write_file_atomically(path, std::initializer_list<std::string_view>{bytes}, who);
}

}  // namespace synattn

#endif  // SYNATTN_IO_ATOMIC_FILE_HPP
