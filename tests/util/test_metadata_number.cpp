// util/metadata_number.hpp: the one parser of numbers read from files'
// metadata. std::stoi read "-5x" as -5 and said only "stoi"
// for "abc" and 99999999999; std::stod read "nan".
#include <catch2/catch.hpp>

#include <synattn/util/metadata_number.hpp>

#include <limits>
#include <string>

using Catch::Matchers::Contains;

TEST_CASE("whole_number takes decimal digits with an optional '-', in range, and nothing else", "[metadata]") {
  long long v = -1;
  CHECK(synattn::whole_number("0", 0, 10, v));
  CHECK(v == 0);
  CHECK(synattn::whole_number("-5", -10, 10, v));
  CHECK(v == -5);
  CHECK(synattn::whole_number("9223372036854775807", 0, std::numeric_limits<long long>::max(), v));
  CHECK(v == std::numeric_limits<long long>::max());
  CHECK(synattn::whole_number("-9223372036854775808", std::numeric_limits<long long>::min(), 0, v));
  CHECK(v == std::numeric_limits<long long>::min());
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "-5x", "abc", "1.0", "1e3", "0x10", "9223372036854775808",
                          "99999999999999999999", "--1"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(synattn::whole_number(bad, std::numeric_limits<long long>::min(),
                                      std::numeric_limits<long long>::max(), v));
  }
  CHECK_FALSE(synattn::whole_number("11", 0, 10, v));
  CHECK_FALSE(synattn::whole_number("-1", 0, 10, v));
}

TEST_CASE("real_number takes one finite number in range: no NaN, infinity, overflow or trailing text",
          "[metadata]") {
  double v = 0;
  CHECK(synattn::real_number("12.345678901234567", -1, 100, v));
  CHECK(v == 12.345678901234567);
  CHECK(synattn::real_number("-1", -1, 100, v));
  for (const char* bad : {"", "nan", "NaN", "inf", "-inf", "1e400", "1x", " 1", "0x1p3", "101", "-1.5"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(synattn::real_number(bad, -1, 100, v));
  }
}

TEST_CASE("metadata_integer and metadata_real name the file, the field and the value", "[metadata][errors]") {
  CHECK_THROWS_AS(synattn::metadata_integer("c.ckpt", "train.epoch", "abc", 0, 10), synattn::FormatError);
  CHECK_THROWS_WITH(synattn::metadata_integer("c.ckpt", "train.epoch", "99999999999", 0, 100000),
                    Contains("c.ckpt") && Contains("'train.epoch' is '99999999999'") &&
                        Contains("non-negative integer of at most 100000"));
  CHECK_THROWS_WITH(synattn::metadata_integer("c.ckpt", "x", "-5x", -10, 10),
                    Contains("'x' is '-5x', expected an integer in [-10, 10]"));
  CHECK_THROWS_WITH(synattn::metadata_real("c.ckpt", "train.best_las", "nan", -1, 100),
                    Contains("c.ckpt") && Contains("'train.best_las' is 'nan', expected a finite number in [-1, 100]"));
  CHECK(synattn::metadata_integer("c.ckpt", "k", "42", 0, 100) == 42);
  CHECK(synattn::metadata_real("c.ckpt", "k", "0.5", 0, 1) == 0.5);
}
