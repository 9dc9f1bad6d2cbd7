// A minimal JSON reader for test fixtures (golden-vector config.json): objects,
// arrays, strings (with \uXXXX escapes for the basic plane), numbers, true,
// false, null. Strict: trailing commas, comments, NaN and leading zeros are
// rejected, and errors say where ("config.json: offset 120: expected ','").
// Test support only, not part of the library.
#ifndef SYNATTN_TESTS_JSON_LITE_HPP
#define SYNATTN_TESTS_JSON_LITE_HPP

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace synattn_test {
namespace json {

class Value {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const noexcept { return kind_; }
  bool is_null() const noexcept { return kind_ == Kind::Null; }

  bool as_bool() const {
    expect(Kind::Bool, "a boolean");
    return bool_;
  }
  double as_number() const {
    expect(Kind::Number, "a number");
    return number_;
  }
  // A number with no fractional part that fits an int.
  int as_int() const {
    const double v = as_number();
    if (v != std::floor(v) || v < -2147483648.0 || v > 2147483647.0)
      throw std::runtime_error(where_ + ": expected an integer, found " + std::to_string(v));
    return static_cast<int>(v);
  }
  const std::string& as_string() const {
    expect(Kind::String, "a string");
    return string_;
  }
  const std::vector<Value>& as_array() const {
    expect(Kind::Array, "an array");
    return array_;
  }
  const std::vector<std::pair<std::string, Value>>& as_object() const {
    expect(Kind::Object, "an object");
    return object_;
  }

  bool has(const std::string& key) const {
    if (kind_ != Kind::Object) return false;
    for (const auto& kv : object_)
      if (kv.first == key) return true;
    return false;
  }
  // Member `key` of an object; throws naming the key when it is absent.
  const Value& at(const std::string& key) const {
    expect(Kind::Object, "an object");
    for (const auto& kv : object_)
      if (kv.first == key) return kv.second;
    throw std::runtime_error(where_ + ": missing key \"" + key + "\"");
  }
  const Value& operator[](const std::string& key) const { return at(key); }

  // Where this value came from, for messages: "config.json: offset 12".
  const std::string& where() const noexcept { return where_; }

 private:
  friend class Parser;
  static const char* kind_name(Kind k) {
    switch (k) {
      case Kind::Null:
        return "null";
      case Kind::Bool:
        return "a boolean";
      case Kind::Number:
        return "a number";
      case Kind::String:
        return "a string";
      case Kind::Array:
        return "an array";
      case Kind::Object:
        return "an object";
    }
    return "?";
  }
  void expect(Kind k, const char* what) const {
    if (kind_ != k) throw std::runtime_error(where_ + ": expected " + what + ", found " + kind_name(kind_));
  }

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_;
  std::vector<Value> array_;
  std::vector<std::pair<std::string, Value>> object_;
  std::string where_;
};

class Parser {
 public:
  Parser(const std::string& text, std::string name) : s_(text), name_(std::move(name)) {}

  Value parse_document() {
    Value v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(name_ + ": offset " + std::to_string(pos_) + ": " + what);
  }
  std::string here() const { return name_ + ": offset " + std::to_string(pos_); }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void require(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) == 0) {
      pos_ += w.size();
      return true;
    }
    return false;
  }

  Value parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 64");
    skip_ws();
    Value v;
    v.where_ = here();
    if (pos_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind_ = Value::Kind::Object;
      if (consume('}')) return v;
      do {
        skip_ws();
        if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
        std::string key = parse_string();
        require(':');
        v.object_.emplace_back(std::move(key), parse_value(depth + 1));
      } while (consume(','));
      require('}');
    } else if (c == '[') {
      ++pos_;
      v.kind_ = Value::Kind::Array;
      if (consume(']')) return v;
      do {
        v.array_.push_back(parse_value(depth + 1));
      } while (consume(','));
      require(']');
    } else if (c == '"') {
      v.kind_ = Value::Kind::String;
      v.string_ = parse_string();
    } else if (literal("true")) {
      v.kind_ = Value::Kind::Bool;
      v.bool_ = true;
    } else if (literal("false")) {
      v.kind_ = Value::Kind::Bool;
    } else if (literal("null")) {
      v.kind_ = Value::Kind::Null;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind_ = Value::Kind::Number;
      v.number_ = parse_number();
    } else {
      fail(std::string("unexpected character '") + c + "'");
    }
    return v;
  }

  double parse_number() {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t d = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - d;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
      if (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') fail("leading zero in a number");
    } else if (digits() == 0) {
      fail("expected digits");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("expected exponent digits");
    }
    std::istringstream in(s_.substr(start, pos_ - start));
    in.imbue(std::locale::classic());
    double v = 0;
    in >> v;
    if (in.fail()) fail("number out of range");
    return v;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          unsigned code = 0;
          for (int k = 0; k < 4; ++k) {
            const char h = s_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9')
              code |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f')
              code |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
              code |= static_cast<unsigned>(h - 'A' + 10);
            else
              fail("bad hex digit in \\u escape");
          }
          // UTF-8 of a basic-plane code point (surrogates are kept as is).
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
          } else {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
          }
          break;
        }
        default:
          fail(std::string("bad escape \\") + e);
      }
    }
  }

  const std::string& s_;
  std::string name_;
  std::size_t pos_ = 0;
};

inline Value parse(const std::string& text, const std::string& name = "<json>") {
  return Parser(text, name).parse_document();
}

inline Value parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse(buf.str(), path);
}

}  // namespace json
}  // namespace synattn_test

#endif  // SYNATTN_TESTS_JSON_LITE_HPP
