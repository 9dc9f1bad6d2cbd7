// synattn — the library's exception types.
//
// Every error derives from synattn::Error, which derives from
// std::invalid_argument, so callers may catch either. Messages say what was
// expected and what was found, and name the sentence, word, file or line.
#ifndef SYNATTN_ERROR_HPP
#define SYNATTN_ERROR_HPP

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "config.hpp"

namespace synattn {

class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& what) : std::invalid_argument(what) {}
};

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

// Malformed outside data (CoNLL-U, .npy). what() is "FILE:LINE: reason"
// (line 0 means "the file as a whole", and is then omitted).
class ParseError : public Error {
 public:
  ParseError(std::string file, std::size_t line, std::string reason)
      : Error(compose(file, line, reason)),
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

}  // namespace synattn

#endif  // SYNATTN_ERROR_HPP
