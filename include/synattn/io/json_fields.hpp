// synattn — JSON in a model file's metadata: integers read whole and in
// range, and options structs written and read through one list of their keys.
//
//   checked_integer<T>(v, what)     v as a T, or Error "WHAT is 'V', expected
//                                   an integer in [lo, hi]"
//   checked_integers<T>(v, what)    an array of them
//   JsonFields<Options>             an options struct's keys, specialised
//                                   once beside the struct
//   options_to_json(o)              the struct as a JSON object
//   options_from_json<Options>(text)
//                                   the struct back, every key required, then
//                                   its validate()
//
// nlohmann's own get<int>() casts a fractional or huge number (1e300 to int
// is undefined behaviour) and wraps an integer out of range, which must not
// happen to what a model file says; the number is read as its text by the
// one metadata-number helper (util/metadata_number.hpp), so the rule and the
// message are those of every other number a file's metadata holds.
//
// An options struct lists its keys once, in its JsonFields specialisation
// (parse::ParserOptions in parse/parser_model.hpp, text::TokenizerOptions in
// text/tokenizer_model.hpp); both directions walk that list, so no key is
// written under one name and read under another, or written and never read.
// Reading needs every key (a file from another version fails naming
// the key, rather than building a different model): integers whole and in
// their type's range, booleans as booleans, reals as numbers, integer lists
// as arrays of at most kMaxJsonList.
#ifndef SYNATTN_IO_JSON_FIELDS_HPP
#define SYNATTN_IO_JSON_FIELDS_HPP

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../error.hpp"
#include "../util/metadata_number.hpp"

namespace synattn {

// The longest integer list an options struct holds (the tokenizer's dilations).
constexpr std::size_t kMaxJsonList = 64;

namespace detail {

// `v` as an integer of type T in [lo, hi] (default: T's range).
template <class T>
T checked_integer(const nlohmann::json& v, const std::string& what,
                  long long lo = static_cast<long long>(std::numeric_limits<T>::min()),
                  long long hi = static_cast<long long>(
                      std::min<std::uint64_t>(std::numeric_limits<T>::max(), std::numeric_limits<long long>::max()))) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer type");
  long long out = 0;
  if constexpr (std::is_same_v<T, std::uint64_t>)  // beyond long long: a seed, say (whole by its JSON type)
    if (v.is_number_unsigned() && hi == std::numeric_limits<long long>::max() && lo <= 0 &&
        v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      return v.get<std::uint64_t>();
  if ((v.is_number_integer() || v.is_number_unsigned()) && whole_number(v.dump(), lo, hi, out))
    return static_cast<T>(out);
  throw Error(integer_refusal(what, v.is_number() ? v.dump() : std::string("a ") + v.type_name(), lo, hi));
}

// An array of such integers.
template <class T>
std::vector<T> checked_integers(const nlohmann::json& v, const std::string& what) {
  if (!v.is_array()) throw Error(what + " is a " + std::string(v.type_name()) + ", expected an array");
  std::vector<T> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(checked_integer<T>(v[i], what + "[" + std::to_string(i) + "]"));
  return out;
}

// One member from j[key], by the member's type.
template <class T>
void read_json_field(const nlohmann::json& j, const char* key, T& out, const std::string& what) {
  const nlohmann::json& v = j.at(key);
  const std::string name = what + ": " + key;
  if constexpr (std::is_same_v<T, bool> || std::is_floating_point_v<T>) {
    v.get_to(out);  // nlohmann refuses another JSON type (a number as a bool, a string as a real)
  } else if constexpr (std::is_integral_v<T>) {
    out = checked_integer<T>(v, name);
  } else {
    static_assert(std::is_same_v<T, std::vector<int>>, "an options field is a bool, an integer, a real or a list of ints");
    if (!v.is_array() || v.size() > kMaxJsonList)
      throw Error(name + " must be an array of at most " + std::to_string(kMaxJsonList) + " numbers");
    out = checked_integers<int>(v, name);
  }
}

}  // namespace detail

// The keys of Options in JSON and its name in messages, as fmt::formatter is
// specialised per type:
//   template <> struct JsonFields<MyOptions> {
//     static constexpr const char* what = "my options";
//     template <class O, class Visit>
//     static void visit(O& o, Visit&& field) { field("size", o.size); field("rate", o.rate); }
//   };
// visit(o, field) calls field(key, o.member) once per key, for a const o
// (writing) and a mutable one (reading).
template <class Options>
struct JsonFields;

template <class Options>
std::string options_to_json(const Options& o) {
  nlohmann::json j = nlohmann::json::object();
  JsonFields<Options>::visit(o, [&j](const char* key, const auto& member) { j[key] = member; });
  return j.dump();
}

template <class Options>
Options options_from_json(const std::string& text) {
  const std::string what = JsonFields<Options>::what;
  Options o;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    JsonFields<Options>::visit(o, [&](const char* key, auto& member) { detail::read_json_field(j, key, member, what); });
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": " + e.what());
  }
  o.validate();
  return o;
}

}  // namespace synattn

#endif  // SYNATTN_IO_JSON_FIELDS_HPP
