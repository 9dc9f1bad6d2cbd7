// Test fixtures' JSON (golden-vector config.json), read with nlohmann-json,
// the library's own JSON dependency. Test support only.
#ifndef SYNATTN_TESTS_JSON_FILE_HPP
#define SYNATTN_TESTS_JSON_FILE_HPP

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace synattn_test {

// The whole file as JSON; throws naming the file when it cannot be opened or
// is not JSON (nlohmann's message says where).
inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

// `v` as an int, refusing what get<int>() would truncate or wrap (1.5, 1e10)
// and non-numbers; `what` names the value in the message.
inline int json_int(const nlohmann::json& v, const std::string& what) {
  const bool integral = v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (!integral || v.get<double>() < -2147483648.0 || v.get<double>() > 2147483647.0)
    throw std::runtime_error(what + ": expected an integer, found " + v.dump());
  return v.get<int>();
}

}  // namespace synattn_test

#endif  // SYNATTN_TESTS_JSON_FILE_HPP
