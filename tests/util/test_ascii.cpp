// util/ascii.hpp: the one ASCII lower-casing of the corpus reader, the
// parser's vocabulary and the tokenizer's word spans.
#include <catch2/catch.hpp>

#include <string>

#include <synattn/util/ascii.hpp>

TEST_CASE("ascii_lower changes A-Z and keeps every other byte", "[ascii]") {
  static_assert(synattn::ascii_lower('Q') == 'q' && synattn::ascii_lower('q') == 'q', "constexpr");
  CHECK(synattn::ascii_lower(std::string("The CAT, 42 @[`{")) == "the cat, 42 @[`{");
  // Every byte outside A-Z is kept, so UTF-8 stays the same UTF-8 ("ÉCOLE": É is not ASCII).
  CHECK(synattn::ascii_lower(std::string("\xC3\x89" "COLE")) == "\xC3\x89" "cole");
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    CHECK(synattn::ascii_lower(c) == (b >= 'A' && b <= 'Z' ? static_cast<char>(b + 32) : c));
  }
  CHECK(synattn::ascii_lower(std::string()).empty());
}
