// synattn — writing a whole file atomically: the bytes go to a temporary
// file in the same folder, created exclusively under a fresh unique name
// (O_CREAT | O_EXCL | O_NOFOLLOW: a planted symlink is never followed), flushed to the
// disk (fsync), then renamed over the destination, and the folder is synced
// so the rename itself survives a crash. Readers see either the old file or
// the new one, never a truncated mix; on any failure the temporary file is
// removed and the old file is left as it was.
//
// What a path is written as (a symlink followed to its regular file, a FIFO
// or a character device written directly, "-" standard output, a directory
// refused) is io/output_path.hpp's policy, the same for every writer.
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
#include "output_path.hpp"

namespace synattn {

namespace detail {
// A name no other writer picks: the process id, a per-process counter and
// the clock's nanoseconds (O_EXCL below still refuses any collision).
inline std::string unique_suffix() {
  static std::atomic<unsigned long long> counter{0};
  const auto now = static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count());
  return ".tmp." + std::to_string(static_cast<long long>(::getpid())) + "." + std::to_string(counter++) + "." +
         std::to_string(now % 1000000007ULL);
}
// Every byte of `pieces` to `fd`; false with errno set on failure.
inline bool write_all(int fd, std::initializer_list<std::string_view> pieces) {
  for (const std::string_view bytes : pieces) {
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }
  return true;
}
// Standard output, a FIFO, a character device or a descriptor path: written
// where it is (a rename would replace the device, FIFO or redirected file
// with a regular file). Opened without O_CREAT, so nothing new is created.
inline void write_directly(const OutputTarget& target, std::initializer_list<std::string_view> pieces,
                           const std::string& fail) {
  if (target.kind == OutputKind::StandardOutput) {
    std::fflush(stdout);  // what the program printed before comes first
    if (!write_all(STDOUT_FILENO, pieces)) throw RuntimeError(fail + "writing to standard output failed: " + std::strerror(errno));
    return;
  }
  const int fd = ::open(target.path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw RuntimeError(fail + "cannot open it for writing: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode)) {
    ::close(fd);
    throw RuntimeError(fail + "it changed into a directory or block device while being opened");
  }
  if (!write_all(fd, pieces)) {
    const int err = errno;
    ::close(fd);
    throw RuntimeError(fail + "writing failed: " + std::strerror(err));
  }
  if (::close(fd) != 0) throw RuntimeError(fail + "closing failed: " + std::strerror(errno));
}
}  // namespace detail

// Replaces `path` by the concatenation of `pieces` atomically (see the top),
// without joining them in memory first (a header and an array's data, say).
// `who` names the caller in messages ("save_safetensors").
inline void write_file_atomically(const std::string& path, std::initializer_list<std::string_view> pieces,
                                  const std::string& who) {
  namespace d = detail;
  const std::string fail = who + ": cannot write '" + path + "': ";
  const OutputTarget target = resolve_output_path(path, who);
  if (target.kind == OutputKind::StandardOutput || target.kind == OutputKind::Stream) {
    d::write_directly(target, pieces, fail);
    return;
  }
  // A symlink's regular file is replaced in its own folder; the link stays.
  const std::string& file = target.path;
  // Created exclusively and never through a symlink, with mode 0666 so that
  // the kernel applies the umask (reading the umask would race other threads).
  std::string temp_name;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    temp_name = file + d::unique_suffix();
    fd = ::open(temp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt >= 100))
      throw RuntimeError(fail + "cannot create a temporary file beside it: " + std::strerror(errno));
  }
  const auto give_up = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(temp_name.c_str());
    throw RuntimeError(fail + what + ": " + std::strerror(err));
  };
  if (!d::write_all(fd, pieces)) give_up("writing failed", errno);
  if (::fsync(fd) != 0) give_up("flushing to disk failed", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_name.c_str());
    throw RuntimeError(fail + "closing failed: " + std::strerror(err));
  }
  if (std::rename(temp_name.c_str(), file.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_name.c_str());
    throw RuntimeError(fail + "cannot rename the temporary file into place: " + std::strerror(err));
  }
  // The rename is durable once the folder's entry is on disk; a folder that
  // cannot be opened or synced (some file systems) does not undo the write.
  const int dir = ::open(d::folder_of(file).c_str(), O_RDONLY | O_DIRECTORY);
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
