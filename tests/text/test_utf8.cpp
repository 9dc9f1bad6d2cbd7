// text/utf8.hpp: decoding with offsets, refusal of every class of invalid
// sequence with its byte offset, U+FFFD replacement of maximal subparts,
// White_Space and encoding.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include <synattn/text/utf8.hpp>

using synattn::text::check_utf8;
using synattn::text::decode_utf8;
using synattn::text::encode_utf8;
using synattn::text::is_space;
using synattn::text::replace_invalid_utf8;
using synattn::text::Utf8Error;

namespace {

std::size_t count_replacements(const std::string& s) {
  std::size_t n = 0;
  for (std::size_t i = s.find("\xEF\xBF\xBD"); i != std::string::npos; i = s.find("\xEF\xBF\xBD", i + 3)) ++n;
  return n;
}

}  // namespace

TEST_CASE("decode_utf8 gives code points and byte offsets for 1- to 4-byte characters", "[utf8]") {
  // a, e-acute (2 bytes), euro sign (3), grinning face (4), then a again.
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" "a";
  const auto d = decode_utf8(s, "mem");
  CHECK(d.code_points == std::vector<char32_t>{U'a', 0xE9, 0x20AC, 0x1F600, U'a'});
  CHECK(d.byte_offset == std::vector<int>{0, 1, 3, 6, 10, 11});

  const auto empty = decode_utf8("", "mem");
  CHECK(empty.code_points.empty());
  CHECK(empty.byte_offset == std::vector<int>{0});

  // The extremes of each length.
  const std::string edges = "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF";
  CHECK(decode_utf8(edges, "mem").code_points ==
        std::vector<char32_t>{0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF});
}

TEST_CASE("decode_utf8 refuses every class of invalid sequence, naming its byte offset and line", "[utf8]") {
  struct Case {
    const char* name;
    std::string bytes;
    std::size_t offset, line;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"stray continuation", "ab\x80", 2, 1, "byte 0x80 is a continuation byte without a lead byte"},
      {"overlong C0", "x\n\xC0\xAF", 2, 2, "byte 0xc0 starts an overlong encoding"},
      {"overlong C1", "\xC1\xBF", 0, 1, "byte 0xc1 starts an overlong encoding"},
      {"overlong E0", "ok\n\n\xE0\x80\x80", 4, 3, "bytes 0xe0 0x80 start an overlong encoding"},
      {"overlong F0", "\xF0\x8F\xBF\xBF", 0, 1, "bytes 0xf0 0x8f start an overlong encoding"},
      {"surrogate", "a\xED\xA0\x80", 1, 1, "bytes 0xed 0xa0 encode a UTF-16 surrogate"},
      {"above U+10FFFF", "\xF4\x90\x80\x80", 0, 1, "bytes 0xf4 0x90 encode a code point above U+10FFFF"},
      {"byte F5", "\xF5\x80\x80\x80", 0, 1, "byte 0xf5 never appears in UTF-8"},
      {"byte FF", "abc\xFF", 3, 1, "byte 0xff never appears in UTF-8"},
      {"truncated at the end", "\xE2\x82", 0, 1,
       "a 3-byte sequence starting with 0xe2 is cut short by the end of the input"},
      {"truncated 4-byte", "12\xF0\x9F\x98 x", 2, 1,
       "a 4-byte sequence starting with 0xf0 is cut short (0x20 is not a continuation byte)"},
      {"truncated by a newline", "\xC3\nx", 0, 1,
       "a 2-byte sequence starting with 0xc3 is cut short (0x0a is not a continuation byte)"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    try {
      (void)decode_utf8(c.bytes, "input.txt");
      FAIL("accepted");
    } catch (const Utf8Error& e) {
      CHECK(e.byte_offset() == c.offset);
      CHECK(e.line() == c.line);
      CHECK(e.file() == "input.txt");
      const std::string what = e.what();
      CHECK(what.rfind("input.txt:" + std::to_string(c.line) + ": invalid UTF-8 at byte offset " +
                           std::to_string(c.offset) + " ",
                       0) == 0);
      CHECK_THAT(what, Catch::Contains(c.why));
    }
    // check_utf8 agrees on the offset.
    std::size_t at = 99;
    std::string why;
    CHECK_FALSE(check_utf8(c.bytes, at, why));
    CHECK(at == c.offset);
  }
  // A Utf8Error is a FormatError, as every reader's errors are.
  CHECK_THROWS_AS(decode_utf8("\x80", "f"), synattn::FormatError);
}

TEST_CASE("replace_invalid_utf8 puts one U+FFFD per maximal subpart", "[utf8]") {
  struct Case {
    std::string bytes, expected;
  };
  const std::string R = "\xEF\xBF\xBD";
  const std::vector<Case> cases = {
      // Unicode 3.9, Table 3-8: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
      {"\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a" + R + R + R + "b" + R + "c" + R + R + "d"},
      {"\xC0\xAF", R + R},                  // C0 starts nothing: each byte alone
      {"\xE0\x80\x80", R + R + R},          // 80 is not a valid second byte after E0
      {"\xED\xA0\x80", R + R + R},          // surrogate
      {"\xF4\x90\x80\x80", R + R + R + R},  // above U+10FFFF
      {"\xF0\x9F\x98", R},                  // truncated: one subpart
      {"\xF0\x9F\x98" "x", R + "x"},
      {"\xE2\x82(", R + "("},
      {"\xFF\xFE", R + R},
      {"plain \xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80", "plain \xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80"},  // valid: unchanged
      {"", ""},
  };
  for (const Case& c : cases) {
    const std::string out = replace_invalid_utf8(c.bytes);
    CHECK(out == c.expected);
    std::size_t at = 0;
    std::string why;
    CHECK(check_utf8(out, at, why));
  }
  CHECK(count_replacements(replace_invalid_utf8("\x80\x80\x80 \xC3")) == 4);
}

TEST_CASE("is_space is Unicode White_Space", "[utf8]") {
  for (char32_t c : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x2005u, 0x200Au,
                     0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    INFO(static_cast<unsigned long>(c));
    CHECK(is_space(c));
  }
  // Look-alikes that are not White_Space: zero-width space and joiner,
  // Mongolian vowel separator, BOM, NUL, 'a', U+200B..U+200D.
  for (char32_t c : {0x00u, 0x08u, 0x0Eu, 0x1Fu, 0x61u, 0x84u, 0x86u, 0x9Fu, 0x180Eu, 0x1FFFu, 0x200Bu, 0x200Du,
                     0x2027u, 0x202Au, 0x2060u, 0x2FFFu, 0x3001u, 0xFEFFu}) {
    INFO(static_cast<unsigned long>(c));
    CHECK_FALSE(is_space(c));
  }
}

TEST_CASE("encode_utf8 is decode_utf8's inverse and refuses what has no UTF-8 form", "[utf8]") {
  std::string s;
  std::vector<char32_t> cps;
  for (char32_t c = 0; c <= 0x10FFFF; c += (c < 0x800 ? 1 : 61)) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    cps.push_back(c);
    encode_utf8(c, s);
  }
  for (char32_t c : {0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    cps.push_back(c);
    encode_utf8(c, s);
  }
  CHECK(decode_utf8(s, "mem").code_points == cps);
  std::string sink;
  CHECK_THROWS_AS(encode_utf8(0xD800, sink), synattn::Error);
  CHECK_THROWS_WITH(encode_utf8(0x110000, sink), Catch::Contains("U+110000"));
  CHECK(sink.empty());
}

TEST_CASE("lowercase is Python's str.lower on the scripts treebanks use, and no other", "[utf8]") {
  using synattn::text::lowercase;
  CHECK(lowercase(U"ABC xyz 09") == U"abc xyz 09");
  CHECK(lowercase(U"\u00C0\u00D6\u00D7\u00DE") == U"\u00E0\u00F6\u00D7\u00FE");  // Latin-1; U+00D7 (x) has no case
  CHECK(lowercase(U"\u0100\u0141\u0178\u017D") == U"\u0101\u0142\u00FF\u017E");  // Latin Extended-A, both parities
  CHECK(lowercase(U"\u0130") == U"i\u0307");                                     // one character to two
  CHECK(lowercase(U"\u0391\u03A3\u0386\u038F") == U"\u03B1\u03C3\u03AC\u03CE");  // Greek (every sigma to U+03C3)
  CHECK(lowercase(U"\u0400\u0410\u042F\u0460") == U"\u0450\u0430\u044F\u0461");  // Cyrillic
  CHECK(lowercase(U"\u0531\uFF21") == U"\u0561\uFF41");                          // Armenian, fullwidth Latin
  CHECK(lowercase(U"\u4E2D\u6587 \U0001F600") == U"\u4E2D\u6587 \U0001F600");    // no case: unchanged
  // Lower case is already lower: applying it twice changes nothing.
  const std::u32string mixed = U"\u0130stanbul \u0414\u041E\u041C \u039F\u0394\u039F\u03A3";
  CHECK(lowercase(lowercase(mixed)) == lowercase(mixed));
}
