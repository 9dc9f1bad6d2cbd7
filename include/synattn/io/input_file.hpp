// synattn — opening a file that a reader will parse.
//
// An ifstream opens a directory without complaint on Linux, and a reader
// that then asks for its size gets a huge number (load_safetensors once
// tried to allocate 2^63 - 1 bytes). Every reader of outside files opens
// them here: FormatError(path, 0, "cannot open file") when the file cannot be
// opened, "cannot open file (it is a directory)" for a directory.
#ifndef SYNATTN_IO_INPUT_FILE_HPP
#define SYNATTN_IO_INPUT_FILE_HPP

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "../error.hpp"

namespace synattn {

inline std::ifstream open_input_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw FormatError(path, 0, "cannot open file (it is a directory)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError(path, 0, "cannot open file");
  return in;
}

}  // namespace synattn

#endif  // SYNATTN_IO_INPUT_FILE_HPP
