// The minimal JSON reader the golden-vector tests use (tests/support/json_lite.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "support/json_lite.hpp"
#include "support/test_data.hpp"

namespace json = synattn_test::json;

TEST_CASE("json_lite reads the values config.json files use", "[support][json]") {
  const auto v = json::parse(R"( {"batch": 3, "exact": null, "per_head": false, "causal": true,
      "scale_value": 0.7, "tiny": 1e-10, "neg": -12, "name": "a\"b\\c\u00e9\n",
      "lengths": [9, 6, 1], "nested": {"empty": [], "obj": {}}} )");
  CHECK(v["batch"].as_int() == 3);
  CHECK(v["exact"].is_null());
  CHECK_FALSE(v["per_head"].as_bool());
  CHECK(v["causal"].as_bool());
  CHECK(v["scale_value"].as_number() == 0.7);
  CHECK(v["tiny"].as_number() == 1e-10);
  CHECK(v["neg"].as_int() == -12);
  CHECK(v["name"].as_string() == "a\"b\\c\xc3\xa9\n");
  REQUIRE(v["lengths"].as_array().size() == 3);
  CHECK(v["lengths"].as_array()[1].as_int() == 6);
  CHECK(v["nested"]["empty"].as_array().empty());
  CHECK(v["nested"]["obj"].as_object().empty());
  CHECK(v.has("batch"));
  CHECK_FALSE(v.has("missing"));
}

TEST_CASE("json_lite reads every shared golden config", "[support][json]") {
  for (const char* c : {"tiny", "padded", "perhead_log", "causal", "directed"}) {
    const auto v = json::parse_file(synattn_test::golden_path(std::string("mha/") + c + "/config.json"));
    CHECK(v["case"].as_string() == c);
    CHECK(v["d_model"].as_int() > 0);
    CHECK(v["shapes"]["x"].as_array().size() == 3);
  }
}

TEST_CASE("json_lite rejects malformed text and says where", "[support][json]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(json::parse(R"({"a": 1,})", "cfg"), Contains("cfg: offset 8") && Contains("expected a string key"));
  CHECK_THROWS_WITH(json::parse(R"({"a" 1})"), Contains("expected ':'"));
  CHECK_THROWS_WITH(json::parse("[1, 2"), Contains("expected ']'"));
  CHECK_THROWS_WITH(json::parse("01"), Contains("leading zero"));
  CHECK_THROWS_WITH(json::parse("NaN"), Contains("unexpected character 'N'"));
  CHECK_THROWS_WITH(json::parse("\"abc"), Contains("unterminated string"));
  CHECK_THROWS_WITH(json::parse("{} x"), Contains("unexpected text after the value"));
  CHECK_THROWS_WITH(json::parse(std::string(100, '[')), Contains("nesting deeper than 64"));
  CHECK_THROWS_WITH(json::parse_file("/nonexistent/config.json"), Contains("cannot open"));
}

TEST_CASE("json_lite type errors name the key's position", "[support][json]") {
  using Catch::Contains;
  const auto v = json::parse(R"({"batch": 1.5, "name": 3})", "config.json");
  CHECK_THROWS_WITH(v["batch"].as_int(), Contains("config.json: offset 10") && Contains("expected an integer"));
  CHECK_THROWS_WITH(v["name"].as_string(), Contains("expected a string, found a number"));
  CHECK_THROWS_WITH(v["length"], Contains("missing key \"length\""));
  CHECK_THROWS_WITH(v["batch"]["x"], Contains("expected an object"));
}
