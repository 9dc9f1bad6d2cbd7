// synattn — what writing to an output path means: the one policy every
// writer of the library and the programs follows (io/atomic_file.hpp, and
// through it .npy, safetensors, checkpoints, parser models, the programs'
// JSON, figures, tables and parses; train_deprel --json appends through it).
//
//   "-"                         standard output, written directly;
//   a new path                  created atomically (its folder must exist);
//   a regular file              replaced atomically (a new file renamed over it);
//   a FIFO or character device  written directly: opened for writing (a FIFO
//                               waits for its reader, as a shell redirection
//                               does), never renamed over, never replaced by
//                               a regular file (/dev/null stays a device);
//   /dev/stdout, /dev/stderr,   written directly (O_APPEND) whatever they lead
//   /dev/fd/N, /proc/.../fd/N   to: a rename would replace the file a shell
//                               redirected there, not write to it;
//   a symlink                   followed, link by link: the file it leads to
//                               follows the rules above (a regular file is
//                               replaced atomically in its own folder; the
//                               link itself stays a link); a link to nothing
//                               is refused, as is a loop;
//   a directory, block device,  refused: "WHO: cannot write 'PATH': it is a
//   socket, empty path          directory" (RuntimeError).
//
// resolve_output_path() classifies a path (and refuses) without writing
// anything, so a program can check its outputs before any work.
#ifndef SYNATTN_IO_OUTPUT_PATH_HPP
#define SYNATTN_IO_OUTPUT_PATH_HPP

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "../error.hpp"

namespace synattn {

enum class OutputKind {
  NewFile,         // nothing there yet: created atomically
  RegularFile,     // replaced atomically
  StandardOutput,  // "-"
  Stream,          // a FIFO, a character device or a descriptor path: written directly
};

struct OutputTarget {
  OutputKind kind = OutputKind::NewFile;
  std::string path;  // the file to write: a symlink's final target, the path itself otherwise ("-" for stdout)
};

namespace detail {
inline std::string folder_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
inline bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
// A path that names an open descriptor of this process (or another's).
inline bool descriptor_path(const std::string& p) {
  if (p == "/dev/stdout" || p == "/dev/stderr" || p == "/dev/stdin" || starts_with(p, "/dev/fd/")) return true;
  return starts_with(p, "/proc/") && p.find("/fd/") != std::string::npos;
}
}  // namespace detail

// How `path` is to be written (see the top); RuntimeError "WHO: cannot write
// 'PATH': reason" for what is refused. Writes nothing.
inline OutputTarget resolve_output_path(const std::string& path, const std::string& who) {
  namespace d = detail;
  const auto refuse = [&](const std::string& why) -> OutputTarget {
    throw RuntimeError(who + ": cannot write '" + path + "': " + why);
  };
  if (path.empty()) return refuse("an empty path");
  if (path == "-") return {OutputKind::StandardOutput, "-"};
  std::string at = path;
  for (int hop = 0; hop < 40; ++hop) {
    // "it is a directory", or "it is a symlink to 'T', which is a directory"
    const std::string it = hop == 0 ? std::string("it ") : "it is a symlink to '" + at + "', which ";
    struct stat st {};
    if (d::descriptor_path(at)) {
      if (::stat(at.c_str(), &st) != 0) return refuse(it + "cannot be examined: " + std::strerror(errno));
      if (S_ISDIR(st.st_mode)) return refuse(it + "is a directory");
      return {OutputKind::Stream, at};
    }
    if (::lstat(at.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT) return refuse(it + "cannot be examined: " + std::strerror(err));
      if (hop > 0) return refuse(it + "does not exist (a symlink to nothing is not followed)");
      const std::string folder = d::folder_of(at);
      struct stat fs {};
      if (::stat(folder.c_str(), &fs) != 0)
        return refuse("its folder '" + folder + "' cannot be used: " + std::strerror(errno));
      if (!S_ISDIR(fs.st_mode)) return refuse("'" + folder + "' is not a folder");
      return {OutputKind::NewFile, at};
    }
    if (S_ISLNK(st.st_mode)) {
      std::vector<char> buf(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 255) + 2);
      const ssize_t n = ::readlink(at.c_str(), buf.data(), buf.size() - 1);
      if (n < 0) return refuse(it + "cannot be read: " + std::strerror(errno));
      std::string target(buf.data(), static_cast<std::size_t>(n));
      if (target.empty()) return refuse("an empty symlink");
      at = target[0] == '/' ? target : d::folder_of(at) + "/" + target;
      continue;
    }
    if (S_ISREG(st.st_mode)) return {OutputKind::RegularFile, at};
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return {OutputKind::Stream, at};
    if (S_ISDIR(st.st_mode)) return refuse(it + "is a directory");
    return refuse(it +
                  (S_ISBLK(st.st_mode)    ? "is a block device"
                   : S_ISSOCK(st.st_mode) ? "is a socket"
                                          : "is not a file") +
                  " (only regular files, FIFOs and character devices are written)");
  }
  return refuse("too many levels of symlinks");
}

}  // namespace synattn

#endif  // SYNATTN_IO_OUTPUT_PATH_HPP
