// synattn — the metadata of a model file (the parser's, the tokenizer's),
// read with one set of rules: the file must say it is a model of this kind
// in this format ("KIND.format"), a missing key names the file and the key,
// and whatever fails while a value is read is reported against the file.
//
//   const ModelMetadata meta(file, path, "parser", kParserFormat);
//   meta.read([&] { options = options_from_json<ParserOptions>(meta.at("parser.options")); });
#ifndef SYNATTN_IO_MODEL_METADATA_HPP
#define SYNATTN_IO_MODEL_METADATA_HPP

#include <string>
#include <utility>

#include "../error.hpp"
#include "safetensors.hpp"

namespace synattn {

class ModelMetadata {
 public:
  // Throws FormatError when the file has no KIND.format or another format.
  ModelMetadata(const SafetensorsFile& file, std::string path, std::string kind, const std::string& format)
      : file_(file), path_(std::move(path)), kind_(std::move(kind)) {
    const std::string& got = at(kind_ + ".format");
    if (got != format)
      throw FormatError(path_, 0, kind_ + ".format is '" + got + "', this build reads '" + format + "'");
  }

  // The value of `key`; FormatError "PATH: not a synattn KIND model: its
  // metadata has no 'KEY'" without it.
  const std::string& at(const std::string& key) const {
    const auto it = file_.metadata.find(key);
    if (it == file_.metadata.end())
      throw FormatError(path_, 0, "not a synattn " + kind_ + " model: its metadata has no '" + key + "'");
    return it->second;
  }

  // Runs read(); an Error it throws (a bad option, a bad vocabulary) becomes
  // a FormatError naming the file.
  template <class Read>
  void read(Read&& read) const {
    try {
      read();
    } catch (const FormatError&) {
      throw;
    } catch (const Error& e) {
      throw FormatError(path_, 0, e.what());
    }
  }

 private:
  const SafetensorsFile& file_;
  std::string path_;
  std::string kind_;
};

}  // namespace synattn

#endif  // SYNATTN_IO_MODEL_METADATA_HPP
