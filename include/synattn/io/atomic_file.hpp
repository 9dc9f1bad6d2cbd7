// synattn — writing a whole file atomically: the bytes go to a temporary
// file in the same folder, created exclusively under a fresh unique name
// (mkstemp: a planted "<path>.tmp" symlink is never followed), flushed to the
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

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"

namespace synattn {

namespace atomic_file_detail {
inline std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
inline mode_t creation_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}
}  // namespace atomic_file_detail

// Replaces `path` by `bytes` atomically (see the top). `who` names the
// caller in messages ("save_safetensors").
inline void write_file_atomically(const std::string& path, std::string_view bytes, const std::string& who) {
  namespace d = atomic_file_detail;
  const std::string fail = who + ": cannot write '" + path + "': ";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw Error(fail + "it is a directory");
  std::vector<char> temp(path.begin(), path.end());
  const std::string suffix = ".tmp.XXXXXX";
  temp.insert(temp.end(), suffix.begin(), suffix.end());
  temp.push_back('\0');
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) throw Error(fail + "cannot create a temporary file beside it: " + std::strerror(errno));
  const std::string temp_name(temp.data());
  const auto give_up = [&](const std::string& what, int err) {
    ::close(fd);
    ::unlink(temp_name.c_str());
    throw Error(fail + what + ": " + std::strerror(err));
  };
  if (::fchmod(fd, d::creation_mode()) != 0) give_up("cannot set the permissions of the temporary file", errno);
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
  if (::fsync(fd) != 0) give_up("flushing to disk failed", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp_name.c_str());
    throw Error(fail + "closing failed: " + std::strerror(err));
  }
  if (std::rename(temp_name.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_name.c_str());
    throw Error(fail + "cannot rename the temporary file into place: " + std::strerror(err));
  }
  // The rename is durable once the folder's entry is on disk; a folder that
  // cannot be opened or synced (some file systems) does not undo the write.
  const int dir = ::open(d::folder_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

}  // namespace synattn

#endif  // SYNATTN_IO_ATOMIC_FILE_HPP
