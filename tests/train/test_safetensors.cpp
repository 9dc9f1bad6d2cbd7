// The safetensors layer: bit-exact round trips, a file written by Python
// (json + numpy only), and a table of malformed files, each refused with a
// FormatError naming the problem; no truncation of a valid file crashes.
#include <catch2/catch.hpp>

#include <synattn/io/safetensors.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"

using synattn::SafetensorsDType;
using synattn::SafetensorsFile;
using synattn::SafeTensor;

namespace {

std::string le64(std::uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return s;
}

// A file with this header text and `data_bytes` zero bytes of data.
std::string file_of(const std::string& header, std::size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\0');
}

SafetensorsFile parse(const std::string& bytes) {
  return synattn::parse_safetensors(bytes.data(), bytes.size(), "bad.safetensors");
}

template <class T>
std::vector<T> awkward_values() {
  return {T(1.5), T(-0.0), std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
          std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max(), T(0.1)};
}

std::string temp_path(const std::string& name) { return "synattn_test_" + name + ".safetensors"; }

}  // namespace

TEMPLATE_TEST_CASE("safetensors files load back bit for bit", "[safetensors]", float, double) {
  SafetensorsFile f;
  const std::vector<TestType> v = awkward_values<TestType>();
  f.tensors["b.vector"] = SafeTensor::from(v.data(), {7});
  f.tensors["a.matrix"] = SafeTensor::from(v.data(), {1, 3, 2});
  f.tensors["empty"] = SafeTensor::from(v.data(), {0, 4});
  f.tensors["scalar"] = SafeTensor::from(v.data() + 6, {});
  const std::uint8_t bytes[3] = {1, 2, 3};
  f.tensors["odd"].dtype = SafetensorsDType::U8;  // misaligns what follows unless the writer sorts by size
  f.tensors["odd"].shape = {3};
  f.tensors["odd"].bytes.assign(bytes, bytes + 3);
  f.metadata["note"] = "ünïcode ok";

  const std::string path = temp_path(std::string("roundtrip_") + (sizeof(TestType) == 4 ? "f" : "d"));
  synattn::save_safetensors(path, f);
  const SafetensorsFile g = synattn::load_safetensors(path);
  std::remove(path.c_str());

  REQUIRE(g.tensors.size() == f.tensors.size());
  for (const auto& kv : f.tensors) {
    INFO(kv.first);
    const SafeTensor& t = g.tensors.at(kv.first);
    CHECK(t.dtype == kv.second.dtype);
    CHECK(t.shape == kv.second.shape);
    CHECK(t.bytes == kv.second.bytes);
  }
  CHECK(g.metadata == f.metadata);
  CHECK(std::isnan(g.tensors.at("b.vector").get<TestType>(2)));
  CHECK(std::signbit(g.tensors.at("b.vector").get<TestType>(1)));

  // The header is padded to 8 bytes and every tensor is aligned to its size.
  const std::string raw = synattn::serialize_safetensors(f);
  std::uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  CHECK(n % 8 == 0);
  CHECK(raw.size() == 8 + n + 14 * sizeof(TestType) + 3);  // 7 + 6 + 0 + 1 values, 3 bytes
}

TEST_CASE("a file written by Python (json + numpy) loads", "[safetensors]") {
  // tests/golden/safetensors/python_written.safetensors, made by
  // tools/make_safetensors_reference.py; the values are its formulas.
  const SafetensorsFile f =
      synattn::load_safetensors(std::string(SYNATTN_SOURCE_DIR) + "/tests/golden/safetensors/python_written.safetensors");
  REQUIRE(f.tensors.size() == 4);
  CHECK(f.metadata.at("made_by") == "tools/make_safetensors_reference.py");

  const SafeTensor& wq = f.tensors.at("layers.0.attention.Wq");
  CHECK(wq.dtype == SafetensorsDType::F64);
  CHECK(wq.shape == std::vector<std::uint64_t>{2, 3});
  for (std::size_t i = 0; i < 6; ++i) CHECK(wq.get<double>(i) == 0.25 * static_cast<double>(i) - 0.5);

  const SafeTensor& table = f.tensors.at("bias.table");
  CHECK(table.dtype == SafetensorsDType::F32);
  CHECK(table.shape == std::vector<std::uint64_t>{3});
  CHECK(table.get<float>(0) == 1.5f);
  CHECK(table.get<float>(1) == -2.0f);
  CHECK(table.get<float>(2) == 0.125f);

  const SafeTensor& scale = f.tensors.at("layers.0.attention.scale");
  CHECK(scale.shape.empty());
  CHECK(scale.elements() == 1);
  CHECK(scale.get<double>(0) == 0.75);

  const SafeTensor& ids = f.tensors.at("token_ids");
  CHECK(ids.dtype == SafetensorsDType::I64);
  REQUIRE(ids.bytes.size() == 32);
  for (std::size_t i = 0; i < 4; ++i) {
    std::int64_t v;
    std::memcpy(&v, ids.bytes.data() + 8 * i, 8);
    CHECK(v == 7 * static_cast<std::int64_t>(i) - 3);
  }
  CHECK_THROWS_WITH(ids.get<double>(0), Catch::Contains("dtype I64 is not F32, F64 or F16"));
}

TEST_CASE("malformed safetensors files are refused with a reason", "[safetensors][errors]") {
  const std::string t8 = R"("dtype":"F64","shape":[1])";  // one 8-byte tensor
  struct Case {
    const char* what;
    std::string bytes;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"empty file", "", "too short for the 8-byte header length"},
      {"7 bytes", std::string(7, '\0'), "too short for the 8-byte header length"},
      {"header length past the end", le64(1000) + "{}", "header length 1000 runs past the end of the file (2 bytes"},
      {"absurd header length", le64(std::uint64_t(1) << 62) + "{}", "exceeds the 100000000-byte limit"},
      {"header not an object", file_of("[1]", 0), "header does not start with '{'"},
      {"empty header", file_of("", 0), "header does not start with '{'"},
      {"bad JSON", file_of(R"({"a":)", 0), "header is not valid JSON"},
      {"invalid UTF-8", file_of("{\"\xff\":1}", 0), "header is not valid JSON"},
      {"trailing garbage", file_of("{} x", 0), "header is not valid JSON"},
      {"duplicate tensor", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[0,8]},"a":{)" + t8 +
                                       R"(,"data_offsets":[8,16]}})", 16),
       "tensor 'a' appears twice"},
      {"deep nesting", file_of(R"({"a":{"shape":[[[[1]]]]}})", 0), "nests deeper than the format allows"},
      {"entry not an object", file_of(R"({"a":3})", 0), "tensor 'a': entry is a number, expected an object"},
      {"missing dtype", file_of(R"({"a":{"shape":[1],"data_offsets":[0,8]}})", 8), "tensor 'a': missing 'dtype'"},
      {"missing shape", file_of(R"({"a":{"dtype":"F64","data_offsets":[0,8]}})", 8), "tensor 'a': missing 'shape'"},
      {"missing offsets", file_of(R"({"a":{)" + t8 + "}}", 8), "tensor 'a': missing 'data_offsets'"},
      {"extra key", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[0,8],"foo":1}})", 8),
       "tensor 'a': unexpected key 'foo'"},
      {"unknown dtype", file_of(R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'a': unknown dtype 'F128'"},
      {"dtype not a string", file_of(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'a': dtype is a number, expected a string"},
      {"negative dimension", file_of(R"({"a":{"dtype":"F64","shape":[-1],"data_offsets":[0,8]}})", 8),
       "tensor 'a': shape entry 0 is -1, expected a non-negative integer"},
      {"fractional dimension", file_of(R"({"a":{"dtype":"F64","shape":[2.5],"data_offsets":[0,8]}})", 8),
       "shape entry 0 is 2.5"},
      {"overflowing shape",
       file_of(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "is too large to exist"},
      {"offsets not a pair", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[0]}})", 8),
       "data_offsets is [0], expected [begin, end]"},
      {"offsets past the data", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[0,8]}})", 4),
       "data_offsets [0, 8] out of range (the data holds 4 bytes)"},
      {"reversed offsets", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[8,0]}})", 8), "out of range"},
      {"span not matching dtype x shape", file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "data_offsets span 8 bytes, dtype F32 x shape (3,) needs 12"},
      {"overlap", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],)" +
                              R"("data_offsets":[4,12]}})", 12),
       "tensors 'a' and 'b' overlap"},
      {"gap", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[4,12]}})", 12), "bytes [0, 4) of the data belong to no tensor"},
      {"unused tail", file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[0,8]}})", 12),
       "the data holds 12 bytes but the tensors end at 8"},
      {"metadata not strings", file_of(R"({"__metadata__":{"k":1}})", 0),
       "__metadata__ entry 'k' is a number, expected a string"},
      {"metadata not an object", file_of(R"({"__metadata__":[]})", 0), "__metadata__ is not an object"},
      {"metadata twice", file_of(R"({"__metadata__":{"k":"1"},"__metadata__":{"k":"2"}})", 0),
       "'__metadata__' appears twice"},
      {"entry an array", file_of(R"({"a":[1,2]})", 0), "tensor 'a': entry is a array, expected an object"},
      // Issue 44 §5: a field twice inside an entry loaded silently, the last one winning.
      {"a tensor's field twice", file_of(R"({"a":{"dtype":"F64","shape":[2],"shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'a': field 'shape' appears twice"},
      {"a metadata field twice", file_of(R"({"__metadata__":{"step":"1","step":"2"}})", 0),
       "__metadata__ 'step' appears twice"},
      {"an entry's fault before bad JSON", file_of(R"({"a":{"dtype":"F1"},"b":)", 0), "tensor 'a': missing"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK_THROWS_AS(parse(c.bytes), synattn::FormatError);
    CHECK_THROWS_WITH(parse(c.bytes), Catch::StartsWith("bad.safetensors: ") && Catch::Contains(c.expected));
  }
  // Padding with spaces is allowed, and a tensor-less file is valid.
  CHECK(parse(file_of(R"({"a":{)" + t8 + R"(,"data_offsets":[0,8]}}   )", 8)).tensors.size() == 1);
  CHECK(parse(file_of("{}", 0)).tensors.empty());
  CHECK_THROWS_WITH(synattn::load_safetensors("/nonexistent/x.safetensors"),
                    Catch::StartsWith("/nonexistent/x.safetensors: cannot open file"));
  // A NUL byte used to end the header silently, hiding a second one after it.
  std::string nul_header = R"({"a":{)" + t8 + R"(,"data_offsets":[0,8]}})";
  nul_header += std::string(1, '\0') + R"({"b":{)" + t8 + R"(,"data_offsets":[0,8]}})";
  CHECK_THROWS_WITH(parse(file_of(nul_header, 8)),
                    Catch::Contains("header holds a NUL byte at offset " + std::to_string(nul_header.find('\0'))));
}

// load_safetensors on a directory used to ask for 2^63 - 1 bytes: every
// reader of outside files now opens it through io/input_file.hpp.
TEST_CASE("load_safetensors on a directory says so, as the other readers do", "[safetensors][errors]") {
  synattn_test::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  std::filesystem::create_directories(path);
  CHECK_THROWS_WITH(synattn::load_safetensors(path), path + ": cannot open file (it is a directory)");
}

TEST_CASE("every truncation of a valid file is refused cleanly", "[safetensors][errors]") {
  SafetensorsFile f;
  const std::vector<double> v = awkward_values<double>();
  f.tensors["x"] = SafeTensor::from(v.data(), {7});
  f.tensors["y"] = SafeTensor::from(v.data(), {2, 2});
  f.metadata["k"] = "v";
  const std::string raw = synattn::serialize_safetensors(f);
  REQUIRE(parse(raw).tensors.size() == 2);
  for (std::size_t n = 0; n < raw.size(); ++n) {
    INFO("first " << n << " bytes");
    CHECK_THROWS_AS(parse(raw.substr(0, n)), synattn::FormatError);
  }
}

TEST_CASE("the writer refuses tensors whose bytes do not match their shape", "[safetensors][errors]") {
  SafetensorsFile f;
  const double x[2] = {1, 2};
  f.tensors["x"] = SafeTensor::from(x, {2});
  f.tensors["x"].shape = {3};
  CHECK_THROWS_WITH(synattn::serialize_safetensors(f), Catch::Contains("tensor 'x' has 16 bytes, dtype F64 x shape (3,) needs 24"));
  f.tensors["x"].shape = {2};
  f.tensors["bad\xff"] = f.tensors["x"];
  CHECK_THROWS_WITH(synattn::serialize_safetensors(f), Catch::Contains("not valid UTF-8"));
}

TEST_CASE("F16: every half survives half -> float -> half, and float_to_half rounds to the nearest half, ties to even",
          "[safetensors][f16]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = synattn::half_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      CHECK((synattn::float_to_half(f) & 0x7C00u) == 0x7C00u);
      CHECK((synattn::float_to_half(f) & 0x3FFu) != 0);
      continue;
    }
    INFO("half 0x" << std::hex << h);
    REQUIRE(synattn::float_to_half(f) == h);
  }
  // Known values.
  CHECK(synattn::half_to_float(0x3C00) == 1.0f);
  CHECK(synattn::half_to_float(0x7BFF) == 65504.0f);
  CHECK(synattn::half_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(synattn::float_to_half(65519.0f) == 0x7BFF);
  CHECK(synattn::float_to_half(65520.0f) == 0x7C00);  // the tie rounds to even: infinity
  CHECK(synattn::float_to_half(-1e30f) == 0xFC00);
  CHECK(synattn::float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie, even below
  CHECK(synattn::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // tie, even above
  CHECK(synattn::float_to_half(std::ldexp(1.0f, -25)) == 0x0000);  // half the smallest subnormal: tie to 0
  CHECK(synattn::float_to_half(std::ldexp(3.0f, -25)) == 0x0002);
  // Random floats: the result is at least as close as both neighbouring halves.
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-26, 16);
  for (int k = 0; k < 200000; ++k) {
    const float f = std::ldexp(mantissa(gen), exponent(gen));
    const std::uint16_t h = synattn::float_to_half(f);
    if ((h & 0x7C00u) == 0x7C00u) continue;  // overflow, checked above
    const double err = std::fabs(static_cast<double>(synattn::half_to_float(h)) - f);
    for (const int step : {-1, 1}) {
      const auto n = static_cast<std::uint16_t>(h + step);
      if ((n & 0x7C00u) == 0x7C00u || ((h ^ n) & 0x8000u)) continue;
      INFO("f " << f << " half 0x" << std::hex << h);
      CHECK(err <= std::fabs(static_cast<double>(synattn::half_to_float(n)) - f));
    }
  }
}

TEST_CASE("F16 tensors round-trip through a file and read as float or double", "[safetensors][f16]") {
  const std::vector<float> v = {0.0f, -0.0f, 1.0f / 3.0f, -2.5f, 65504.0f, 1e-6f, 70000.0f};
  bool finite = true;
  SafetensorsFile f;
  f.tensors["x"] = SafeTensor::half_from(v.data(), {7}, &finite);
  CHECK_FALSE(finite);  // 70000 overflows
  f.tensors["x"] = SafeTensor::half_from(v.data(), {6}, &finite);
  CHECK(finite);
  const SafetensorsFile back = parse(synattn::serialize_safetensors(f));
  const SafeTensor& t = back.tensors.at("x");
  CHECK(t.dtype == SafetensorsDType::F16);
  CHECK(t.is_floating());
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(t.get<float>(i) == synattn::half_to_float(synattn::float_to_half(v[i])));
    CHECK(t.get<double>(i) == static_cast<double>(synattn::half_to_float(synattn::float_to_half(v[i]))));
  }
  CHECK(std::signbit(t.get<float>(1)));
}
