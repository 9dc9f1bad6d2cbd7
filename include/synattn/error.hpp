// synattn — the library's exception types.
//
// Two roots, one per kind of failure, so a caller can tell a bug from bad
// luck:
//
//   std::invalid_argument
//     synattn::Error          an argument, shape, index or call order the
//                             caller got wrong (a programming error: fix the
//                             call). TreeError is one.
//   std::runtime_error
//     synattn::RuntimeError   the world outside the program failed: a file
//                             that cannot be opened, read or written, or an
//                             MPI call, a timeout or ranks that disagree
//                             (mpi::Error). FormatError is one: a malformed
//                             input file is an I/O-side failure of the run
//                             (the file, not the call, is wrong).
//
// The standard hierarchy has no common base of the two below std::exception
// (one synattn root over both would need a diamond through std::exception),
// so `catch (const std::exception&)` catches every synattn error. Messages
// say what was expected and what was found, and name the function (the
// "fn: " prefix), sentence, word, file or line; shapes are written "RxC" or,
// with more or fewer dimensions, "(d0, d1, ...)" (shape_text below).
#ifndef SYNATTN_ERROR_HPP
#define SYNATTN_ERROR_HPP

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config.hpp"

namespace synattn {

// A programming error: see the top of this file.
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what) : std::invalid_argument(what) {}
};

// A failure of files or MPI at run time: see the top of this file.
class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(const std::string& what) : std::runtime_error(what) {}
};

// Shapes in messages, one form each. A matrix (rows, cols): "RxC", as in
// "x is 3x5, expected 3x4".
template <class Rows, class Cols>
std::string shape_text(Rows rows, Cols cols) {
  static_assert(std::is_integral<Rows>::value && std::is_integral<Cols>::value, "shape_text takes integers");
  return std::to_string(rows) + "x" + std::to_string(cols);
}
// An array of any rank: Python's repr of the shape tuple, "()", "(3,)",
// "(2, 3)", as NumPy prints it (and the .npy header holds it).
template <class Dim>
std::string shape_text(const std::vector<Dim>& shape) {
  static_assert(std::is_integral<Dim>::value, "shape_text takes integers");
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

// An invalid dependency tree (head array). `word` is the 0-based index of the
// offending word, or -1 when the problem is not one word's (e.g. no root).
class TreeError : public Error {
 public:
  TreeError(std::string sentence, long word, std::string reason)
      : Error(compose(sentence, word, reason)),
        sentence_(std::move(sentence)),
        word_(word),
        reason_(std::move(reason)) {}

  const std::string& sentence() const noexcept { return sentence_; }
  long word() const noexcept { return word_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  static std::string compose(const std::string& sentence, long word, const std::string& reason) {
    std::string out;
    if (!sentence.empty()) out += "sentence " + sentence + ": ";
    if (word >= 0) out += "word " + std::to_string(word) + ": ";
    return out + reason;
  }
  std::string sentence_;
  long word_;
  std::string reason_;
};

// An input file (CoNLL-U, .npy, safetensors) that cannot be opened or read,
// or is malformed. what() is "FILE:LINE: reason" (line 0 means "the file as
// a whole", and is then omitted).
class FormatError : public RuntimeError {
 public:
  FormatError(std::string file, std::size_t line, std::string reason)
      : RuntimeError(compose(file, line, reason)),
        file_(std::move(file)),
        line_(line),
        reason_(std::move(reason)) {}

  const std::string& file() const noexcept { return file_; }
  std::size_t line() const noexcept { return line_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  static std::string compose(const std::string& file, std::size_t line, const std::string& reason) {
    std::string out = file.empty() ? std::string("<input>") : file;
    if (line > 0) out += ":" + std::to_string(line);
    return out + ": " + reason;
  }
  std::string file_;
  std::size_t line_;
  std::string reason_;
};

// The exception's name until this release: "parse" also names the parser's
// namespace, synattn::parse. Kept one release so that code naming it still
// compiles, with a warning.
using ParseError [[deprecated("synattn::ParseError is now synattn::FormatError")]] = FormatError;

}  // namespace synattn

#endif  // SYNATTN_ERROR_HPP
