// A model file's metadata: integers read whole and in range, options structs
// written and read through one list of keys (io/json_fields.hpp), and the
// format, missing keys and bad values reported against the file
// (io/model_metadata.hpp).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <synattn/io/json_fields.hpp>
#include <synattn/io/model_metadata.hpp>

namespace {

using synattn::Error;
namespace json = synattn::detail;  // the helpers under test

struct Options {
  int size = 3;
  std::uint64_t seed = 7;
  bool flag = true;
  double rate = 0.25;
  std::vector<int> steps{1, 2, 4};
  void validate() const {
    if (size > 100) throw Error("Options: size must be <= 100");
  }
};

}  // namespace

template <>
struct synattn::JsonFields<Options> {
  static constexpr const char* what = "test options";
  template <class O, class Visit>
  static void visit(O& o, Visit&& field) {
    field("size", o.size);
    field("seed", o.seed);
    field("flag", o.flag);
    field("rate", o.rate);
    field("steps", o.steps);
  }
};

namespace {

std::string to_json(const Options& o) { return synattn::options_to_json(o); }
Options from_json(const std::string& text) { return synattn::options_from_json<Options>(text); }

// `text` of Options' defaults with `key` set to the JSON `value` (or removed when empty).
std::string edited(const std::string& key, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(to_json(Options{}));
  if (value.empty())
    j.erase(key);
  else
    j[key] = nlohmann::json::parse(value);
  return j.dump();
}

}  // namespace

TEST_CASE("checked_integer takes whole numbers in range and refuses the rest by name", "[io][json]") {
  CHECK(json::checked_integer<int>(nlohmann::json::parse("-12"), "x") == -12);
  CHECK(json::checked_integer<long long>(nlohmann::json::parse("9007199254740993"), "x") == 9007199254740993LL);
  CHECK(json::checked_integer<std::uint64_t>(nlohmann::json::parse("18446744073709551615"), "seed") ==
        std::numeric_limits<std::uint64_t>::max());
  CHECK(json::checked_integer<int>(nlohmann::json::parse("5"), "x", 1, 5) == 5);
  for (const char* bad : {"2.7", "1e300", "2147483648", "-2147483649", "true", "\"3\"", "null", "[1]"})
    CHECK_THROWS_WITH(json::checked_integer<int>(nlohmann::json::parse(bad), "opts: size"),
                      Catch::Contains("opts: size is") && Catch::Contains("expected an integer"));
  CHECK_THROWS_WITH(json::checked_integer<int>(nlohmann::json::parse("0"), "x", 1, 5), Catch::Contains("[1, 5]"));
}

TEST_CASE("checked_integers reads an array, naming the element that fails", "[io][json]") {
  CHECK(json::checked_integers<int>(nlohmann::json::parse("[3, -1, 0]"), "v") == std::vector<int>{3, -1, 0});
  CHECK(json::checked_integers<int>(nlohmann::json::parse("[]"), "v").empty());
  CHECK_THROWS_WITH(json::checked_integers<int>(nlohmann::json::parse("[1, 2.5]"), "v"), Catch::Contains("v[1] is '2.5'"));
  CHECK_THROWS_WITH(json::checked_integers<int>(nlohmann::json::parse("{\"a\": 1}"), "v"),
                    Catch::Contains("v is a object, expected an array"));
}

TEST_CASE("an options struct round-trips through its one key list", "[io][json]") {
  Options o;
  o.size = -4;
  o.seed = std::numeric_limits<std::uint64_t>::max();
  o.flag = false;
  o.rate = 0.1;
  o.steps = {8, 16};
  const Options back = from_json(to_json(o));
  CHECK(back.size == o.size);
  CHECK(back.seed == o.seed);
  CHECK(back.flag == o.flag);
  CHECK(back.rate == o.rate);
  CHECK(back.steps == o.steps);
  // Every listed key is written, and nothing else.
  const nlohmann::json j = nlohmann::json::parse(to_json(o));
  CHECK(j.size() == 5);
  for (const char* key : {"size", "seed", "flag", "rate", "steps"}) CHECK(j.contains(key));
}

TEST_CASE("reading options refuses a missing key, a wrong type or a bad number by name", "[io][json]") {
  CHECK_NOTHROW(from_json(edited("rate", "1")));  // an integer is a real
  CHECK_THROWS_WITH(from_json(edited("size", "")), Catch::Contains("test options") && Catch::Contains("size"));
  CHECK_THROWS_WITH(from_json(edited("size", "2.5")), Catch::Contains("test options: size is '2.5'"));
  CHECK_THROWS_WITH(from_json(edited("flag", "1")), Catch::StartsWith("test options: "));
  CHECK_THROWS_WITH(from_json(edited("rate", "\"fast\"")), Catch::StartsWith("test options: "));
  CHECK_THROWS_WITH(from_json(edited("steps", "3")), Catch::Contains("test options: steps must be an array"));
  CHECK_THROWS_WITH(from_json(edited("steps", "[1, \"2\"]")), Catch::Contains("test options: steps[1]"));
  CHECK_THROWS_WITH(from_json(edited("steps", nlohmann::json(std::vector<int>(65, 1)).dump())),
                    Catch::Contains("at most 64"));
  CHECK_THROWS_WITH(from_json(edited("size", "101")), Catch::Contains("size must be <= 100"));  // validate() runs
  CHECK_THROWS_WITH(from_json("[1, 2]"), Catch::StartsWith("test options: "));
  CHECK_THROWS_WITH(from_json("{\"size\": "), Catch::StartsWith("test options: "));
}

TEST_CASE("ModelMetadata checks the format and names the file and the missing key", "[io][json]") {
  synattn::SafetensorsFile file;
  file.metadata = {{"toy.format", "toy.v1"}, {"toy.options", "{}"}};
  const synattn::ModelMetadata meta(file, "m.safetensors", "toy", "toy.v1");
  CHECK(meta.at("toy.options") == "{}");
  CHECK_THROWS_WITH(meta.at("toy.vocabulary"),
                    "m.safetensors: not a synattn toy model: its metadata has no 'toy.vocabulary'");
  CHECK_THROWS_AS(meta.at("toy.vocabulary"), synattn::FormatError);
  CHECK_THROWS_WITH(synattn::ModelMetadata(file, "m.safetensors", "toy", "toy.v2"),
                    "m.safetensors: toy.format is 'toy.v1', this build reads 'toy.v2'");
  CHECK_THROWS_WITH(synattn::ModelMetadata(file, "m.safetensors", "other", "toy.v1"),
                    Catch::Contains("not a synattn other model") && Catch::Contains("'other.format'"));
  // An Error while reading becomes the file's FormatError; a FormatError passes as it is.
  int read = 0;
  meta.read([&] { ++read; });
  CHECK(read == 1);
  CHECK_THROWS_AS(meta.read([] { throw Error("bad option"); }), synattn::FormatError);
  CHECK_THROWS_WITH(meta.read([] { throw Error("bad option"); }), "m.safetensors: bad option");
  CHECK_THROWS_WITH(meta.read([&] { meta.at("nope"); }), Catch::Contains("metadata has no 'nope'"));
}
