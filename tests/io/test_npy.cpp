#include <catch2/catch.hpp>

#include <synattn/io/npy.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/json_file.hpp"
#include "support/temp_dir.hpp"
#include "support/test_data.hpp"

using synattn::NpyArray;
using synattn::NpyDType;
using synattn::FormatError;
using synattn::read_npy;
using synattn::write_npy;
using Shape = std::vector<std::size_t>;

namespace {

template <class T>
std::string npy_bytes(const T* data, const Shape& shape) {
  std::ostringstream out(std::ios::binary);
  write_npy(out, data, shape);
  return out.str();
}

NpyArray parse(const std::string& bytes, const std::string& name = "mem.npy") {
  std::istringstream in(bytes, std::ios::binary);
  return read_npy(in, name);
}

// A hand-made file: magic, version, a header length of the version's width,
// the header text exactly as given (no padding added) and the data.
std::string make_npy(int major, int minor, const std::string& header, const std::string& data = "") {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  const std::size_t width = major == 1 ? 2 : 4;
  for (std::size_t b = 0; b < width; ++b) out += static_cast<char>((header.size() >> (8 * b)) & 0xff);
  return out + header + data;
}

std::string f8_header(const std::string& shape) {
  return "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }\n";
}

std::string doubles(std::initializer_list<double> values) {
  std::string out;
  for (double v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

// The reason of the FormatError that reading `bytes` raises ("" if none).
std::string refusal(const std::string& bytes) {
  try {
    parse(bytes);
  } catch (const FormatError& e) {
    CHECK(e.file() == "mem.npy");
    return e.reason();
  }
  return "";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using synattn_test::TempDir;

// Test values that stress each type: its extremes, zero, and for floats the
// IEEE specials, so a round trip must be bit-exact to pass.
template <class T>
std::vector<T> sample_values(std::size_t n) {
  std::vector<T> special;
  using L = std::numeric_limits<T>;
  if constexpr (std::is_floating_point<T>::value) {
    special = {T(-0.0), L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
               L::lowest(), L::max(), L::epsilon()};
  } else {
    special = {L::lowest(), L::max(), T(0), T(1)};
  }
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i < special.size())
      out[i] = special[i];
    else if constexpr (std::is_floating_point<T>::value)
      out[i] = static_cast<T>(0.37 * static_cast<double>(i) - 3.0);
    else
      out[i] = static_cast<T>((i * 37) % 101);
  }
  return out;
}

// memcmp that accepts the null pointers of empty vectors.
bool same_bytes(const void* a, const void* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n) == 0;
}

std::size_t product(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

}  // namespace

TEMPLATE_TEST_CASE("every dtype survives a write/read round trip bit for bit", "[io][npy]", float,
                   double, std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t) {
  const Shape shape = GENERATE(Shape{}, Shape{7}, Shape{3, 4}, Shape{2, 3, 4}, Shape{0},
                               Shape{3, 0, 2}, Shape{1, 1, 1, 1, 9});
  CAPTURE(synattn::shape_text(shape));
  const std::vector<TestType> values = sample_values<TestType>(product(shape));
  const std::string bytes = npy_bytes(values.data(), shape);
  const std::size_t nbytes = values.size() * sizeof(TestType);

  REQUIRE(bytes.size() > nbytes);
  CHECK((bytes.size() - nbytes) % 64 == 0);  // data starts 64-byte aligned

  const NpyArray a = parse(bytes);
  CHECK(a.dtype() == synattn::npy_dtype_of<TestType>());
  CHECK(a.shape() == shape);
  CHECK(a.ndim() == shape.size());
  CHECK(a.size() == values.size());
  REQUIRE(a.nbytes() == nbytes);
  CHECK(same_bytes(a.bytes(), values.data(), nbytes));

  const std::vector<TestType> back = a.to_vector<TestType>();
  REQUIRE(back.size() == values.size());
  CHECK(same_bytes(back.data(), values.data(), nbytes));

  // Writing what we read reproduces the file exactly.
  std::ostringstream again(std::ios::binary);
  write_npy(again, a);
  CHECK(again.str() == bytes);
}

TEMPLATE_TEST_CASE("write_npy and read_npy work through files", "[io][npy]", float, double,
                   std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t) {
  TempDir dir;
  const std::string path = dir.file("a.npy");
  const Shape shape{2, 5};
  const std::vector<TestType> values = sample_values<TestType>(10);
  write_npy(path, values.data(), shape);
  CHECK(slurp(path) == npy_bytes(values.data(), shape));
  const NpyArray a = read_npy(path);
  CHECK(a.dtype() == synattn::npy_dtype_of<TestType>());
  CHECK(a.shape() == shape);
  CHECK(same_bytes(a.bytes(), values.data(), sizeof(TestType) * values.size()));
}

TEST_CASE("npy_dtype_of maps C++ types by size and signedness", "[io][npy]") {
  STATIC_REQUIRE(synattn::npy_dtype_of<float>() == NpyDType::Float32);
  STATIC_REQUIRE(synattn::npy_dtype_of<const double>() == NpyDType::Float64);
  STATIC_REQUIRE(synattn::npy_dtype_of<signed char>() == NpyDType::Int8);
  STATIC_REQUIRE(synattn::npy_dtype_of<short>() == NpyDType::Int16);
  STATIC_REQUIRE(synattn::npy_dtype_of<long long>() == NpyDType::Int64);
  STATIC_REQUIRE(synattn::npy_dtype_of<unsigned char>() == NpyDType::UInt8);
  STATIC_REQUIRE_FALSE(synattn::is_npy_scalar<bool>());
  STATIC_REQUIRE_FALSE(synattn::is_npy_scalar<char>());
  STATIC_REQUIRE_FALSE(synattn::is_npy_scalar<unsigned int>());
  STATIC_REQUIRE_FALSE(synattn::is_npy_scalar<long double>());
}

TEST_CASE("to_matrix flattens leading dimensions into rows", "[io][npy]") {
  std::vector<std::int32_t> flat(24);
  for (std::size_t i = 0; i < flat.size(); ++i) flat[i] = static_cast<std::int32_t>(i * 3) - 7;

  struct Case {
    Shape shape;
    Eigen::Index rows, cols;
  };
  const Case c = GENERATE(Case{{}, 1, 1}, Case{{5}, 1, 5}, Case{{4, 6}, 4, 6},
                          Case{{2, 3, 4}, 6, 4}, Case{{2, 1, 3, 4}, 6, 4}, Case{{0}, 1, 0},
                          Case{{3, 0}, 3, 0}, Case{{3, 0, 2}, 0, 2});
  CAPTURE(synattn::shape_text(c.shape));
  const NpyArray a = parse(npy_bytes(flat.data(), c.shape));
  const auto m = a.to_matrix<double>();
  REQUIRE(m.rows() == c.rows);
  REQUIRE(m.cols() == c.cols);
  for (Eigen::Index r = 0; r < m.rows(); ++r)
    for (Eigen::Index k = 0; k < m.cols(); ++k)
      CHECK(m(r, k) == static_cast<double>(flat[static_cast<std::size_t>(r * m.cols() + k)]));
}

TEST_CASE("to_vector converts between dtypes like static_cast", "[io][npy]") {
  SECTION("integers widen to floating point exactly") {
    const std::vector<std::int64_t> v{-3, 0, 5, (std::int64_t(1) << 53)};
    const auto d = parse(npy_bytes(v.data(), {4})).to_vector<double>();
    CHECK_THAT(d, Catch::Matchers::Equals(std::vector<double>{-3.0, 0.0, 5.0, 9007199254740992.0}));
  }
  SECTION("float64 narrows to float32 by rounding") {
    const std::vector<double> v{0.1, -2.5};
    const auto f = parse(npy_bytes(v.data(), {2})).to_vector<float>();
    CHECK_THAT(f[0], Catch::Matchers::WithinULP(0.1f, 0));
    CHECK_THAT(f[1], Catch::Matchers::WithinULP(-2.5f, 0));
  }
  SECTION("floating point truncates toward zero into integers") {
    const std::vector<double> v{1.9, -1.9, 2.5, -0.5, -2147483648.0};
    const auto i = parse(npy_bytes(v.data(), {5})).to_vector<std::int32_t>();
    CHECK(i == std::vector<std::int32_t>{1, -1, 2, 0, std::numeric_limits<std::int32_t>::min()});
  }
  SECTION("a floating value an integer type cannot hold is an error, not undefined behaviour") {
    struct Case {
      double value;
      const char* text;
    };
    const Case c = GENERATE(Case{std::nan(""), "is nan, which int32 cannot represent"},
                            Case{2147483648.0, "is 2147483648, which int32"},
                            Case{-2147483649.0, "is -2147483649, which int32"},
                            Case{std::numeric_limits<double>::infinity(), "is inf, which int32"});
    const std::vector<double> v{0.0, c.value};
    const NpyArray a = parse(npy_bytes(v.data(), {2}));
    CHECK_THROWS_WITH(a.to_vector<std::int32_t>(),
                      Catch::Contains(std::string("NpyArray: element 1 of the float64 array ") + c.text));
  }
  SECTION("the 64-bit and unsigned bounds are exact") {
    const std::vector<double> ok{-9223372036854775808.0};
    CHECK(parse(npy_bytes(ok.data(), {1})).to_vector<std::int64_t>()[0] ==
          std::numeric_limits<std::int64_t>::min());
    const std::vector<double> over{9223372036854775808.0};
    CHECK_THROWS_AS(parse(npy_bytes(over.data(), {1})).to_vector<std::int64_t>(), synattn::Error);
    const std::vector<float> u{255.9f, 256.0f};
    const NpyArray a = parse(npy_bytes(u.data(), {2}));
    CHECK_THROWS_WITH(a.to_vector<std::uint8_t>(), Catch::Contains("element 1 of the float32 array is 256, which uint8"));
    CHECK(parse(npy_bytes(u.data(), {1})).to_vector<std::uint8_t>()[0] == 255);
  }
}

TEST_CASE("write_npy writes Eigen expressions in C order whatever their storage", "[io][npy]") {
  TempDir dir;
  Eigen::MatrixXd m(2, 3);  // column-major storage
  m << 1, 2, 3, 4, 5, 6;

  SECTION("a column-major matrix") {
    write_npy(dir.file("m.npy"), m);
    const NpyArray a = read_npy(dir.file("m.npy"));
    CHECK(a.dtype() == NpyDType::Float64);
    CHECK(a.shape() == Shape{2, 3});
    CHECK_THAT(a.to_vector<double>(), Catch::Matchers::Equals(std::vector<double>{1, 2, 3, 4, 5, 6}));
    CHECK(a.to_matrix<double>() == m);
  }
  SECTION("an expression (transpose)") {
    std::ostringstream out(std::ios::binary);
    write_npy(out, m.transpose());
    const NpyArray a = parse(out.str());
    CHECK(a.shape() == Shape{3, 2});
    CHECK_THAT(a.to_vector<double>(), Catch::Matchers::Equals(std::vector<double>{1, 4, 2, 5, 3, 6}));
  }
  SECTION("a row-major block and an integer array") {
    Eigen::Matrix<float, 3, 4, Eigen::RowMajor> r;
    r.setZero();
    r(1, 2) = 7.5f;
    write_npy(dir.file("b.npy"), r.block(1, 1, 2, 3));
    const NpyArray b = read_npy(dir.file("b.npy"));
    CHECK(b.dtype() == NpyDType::Float32);
    CHECK(b.shape() == Shape{2, 3});
    CHECK_THAT(b.to_vector<float>(), Catch::Matchers::Equals(std::vector<float>{0, 7.5f, 0, 0, 0, 0}));

    Eigen::ArrayXXi ints(2, 2);
    ints << -1, 2, 3, -4;
    write_npy(dir.file("i.npy"), ints);
    const NpyArray i = read_npy(dir.file("i.npy"));
    CHECK(i.dtype() == NpyDType::Int32);
    CHECK(i.to_vector<int>() == std::vector<int>{-1, 2, 3, -4});
  }
}

TEST_CASE("our writer's bytes equal NumPy's np.save", "[io][npy]") {
  // Produced by NumPy 1.24.2: f = io.BytesIO(); np.save(f, a); f.getvalue().
  SECTION("float32 (2, 3)") {
    static const char numpy[] =
        "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }     "
        "                                                     \012\000\000\300\277\000\000\000\000"
        "\000\000\020@o\022\203:\000\000\000\200\346\261a\177";
    const std::vector<float> a{-1.5f, 0.0f, 2.25f, 1e-3f, -0.0f, 3e38f};
    CHECK(npy_bytes(a.data(), {2, 3}) == std::string(numpy, sizeof numpy - 1));
  }
  SECTION("float64 0-d") {
    static const char numpy[] =
        "\223NUMPY\001\000v\000{'descr': '<f8', 'fortran_order': False, 'shape': (), }         "
        "                                                     \012ffffff\346\077";
    const double a = 0.7;
    CHECK(npy_bytes(&a, {}) == std::string(numpy, sizeof numpy - 1));
  }
  SECTION("int16 (3,)") {
    static const char numpy[] =
        "\223NUMPY\001\000v\000{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }       "
        "                                                     \012\377\377\000\000,\001";
    const std::vector<std::int16_t> a{-1, 0, 300};
    CHECK(npy_bytes(a.data(), {3}) == std::string(numpy, sizeof numpy - 1));
  }
  SECTION("int64 (2, 0)") {
    static const char numpy[] =
        "\223NUMPY\001\000v\000{'descr': '<i8', 'fortran_order': False, 'shape': (2, 0), }     "
        "                                                     \012";
    CHECK(npy_bytes<std::int64_t>(nullptr, {2, 0}) == std::string(numpy, sizeof numpy - 1));
  }
  SECTION("int8 (2, 2)") {
    static const char numpy[] =
        "\223NUMPY\001\000v\000{'descr': '|i1', 'fortran_order': False, 'shape': (2, 2), }     "
        "                                                     \012\200\177\000\005";
    const std::vector<std::int8_t> a{-128, 127, 0, 5};
    CHECK(npy_bytes(a.data(), {2, 2}) == std::string(numpy, sizeof numpy - 1));
  }
  SECTION("int32 (1, 2, 2)") {
    static const char numpy[] =
        "\223NUMPY\001\000v\000{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2, 2), }  "
        "                                                     \012\000\000\000\200\377\377\377\177"
        "\007\000\000\000\371\377\377\377";
    const std::vector<std::int32_t> a{std::numeric_limits<std::int32_t>::min(),
                                      std::numeric_limits<std::int32_t>::max(), 7, -7};
    CHECK(npy_bytes(a.data(), {1, 2, 2}) == std::string(numpy, sizeof numpy - 1));
  }
  SECTION("uint8 whose header is already aligned gets a full 64 bytes of padding") {
    static const char numpy[] =
        "\223NUMPY\001\000\266\000{'descr': '|u1', 'fortran_order': False, 'shape': (0, 1, 1, 1"
        ", 1, 1, 1, 1, 1, 1, 1, 1, 1, 100), }                                                  "
        "                                  \012";
    const Shape shape{0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 100};
    CHECK(npy_bytes<std::uint8_t>(nullptr, shape) == std::string(numpy, sizeof numpy - 1));
  }
}

TEST_CASE("the writer switches to version 2.0 only when the header needs it", "[io][npy]") {
  const std::uint8_t one = 42;
  const auto header_length = [](const std::string& b, int width) {
    std::size_t n = 0;
    for (int i = 0; i < width; ++i) n |= std::size_t(static_cast<unsigned char>(b[8 + i])) << (8 * i);
    return n;
  };
  SECTION("a long but not too long header stays 1.0") {
    const Shape shape(20000, 1);  // ~60 kB of "1, "
    const std::string b = npy_bytes(&one, shape);
    CHECK(b[6] == 1);
    CHECK(header_length(b, 2) + 10 == b.size() - 1);
    CHECK((b.size() - 1) % 64 == 0);
  }
  SECTION("a header over 65535 bytes is written as 2.0 and read back") {
    const Shape shape(22000, 1);
    const std::string b = npy_bytes(&one, shape);
    CHECK(b[6] == 2);
    CHECK(b[7] == 0);
    CHECK(header_length(b, 4) + 12 == b.size() - 1);
    CHECK((b.size() - 1) % 64 == 0);
    const NpyArray a = parse(b);
    CHECK(a.shape() == shape);
    CHECK(a.to_vector<int>() == std::vector<int>{42});
  }
}

TEST_CASE("every golden array reads with the shape and dtype config.json lists", "[io][npy][golden]") {
  const std::string name = GENERATE("tiny", "padded", "perhead_log", "causal", "directed", "fused", "fused_perhead");
  const std::string dir = "mha/" + name + "/";
  const nlohmann::json config = synattn_test::read_json_file(synattn_test::golden_path(dir + "config.json"));
  const auto& shapes = config.at("shapes");
  const auto& dtypes = config.at("dtypes");
  REQUIRE(shapes.is_object());
  REQUIRE(dtypes.is_object());
  REQUIRE(shapes.size() >= 29);
  REQUIRE(shapes.size() == dtypes.size());

  for (const auto& entry : shapes.items()) {
    const std::string& array = entry.key();
    Shape want_shape;
    REQUIRE(entry.value().is_array());
    for (const auto& d : entry.value())
      want_shape.push_back(static_cast<std::size_t>(synattn_test::json_int(d, array)));
    CAPTURE(name, array);
    const std::string path = synattn_test::golden_path(dir + array + ".npy");
    const NpyArray a = read_npy(path);
    CHECK(a.shape() == want_shape);
    CHECK(synattn::npy_dtype_name(a.dtype()) == dtypes.at(array).get<std::string>());
    // np.save wrote these files; writing what we read must give them back.
    std::ostringstream again(std::ios::binary);
    write_npy(again, a);
    CHECK(again.str() == slurp(path));
  }

  // The values decode too, not only the headers.
  const auto lengths = read_npy(synattn_test::golden_path(dir + "lengths.npy")).to_vector<long>();
  std::vector<long> config_lengths;
  REQUIRE(config.at("lengths").is_array());
  for (const auto& v : config.at("lengths")) config_lengths.push_back(synattn_test::json_int(v, "lengths"));
  CHECK(lengths == config_lengths);
}

TEST_CASE("golden tiny case decodes to the documented values", "[io][npy][golden]") {
  const auto path = [](const char* a) { return synattn_test::golden_path(std::string("mha/tiny/") + a); };
  const NpyArray x = read_npy(path("x.npy"));
  CHECK(x.dtype() == NpyDType::Float64);
  CHECK(x.shape() == Shape{1, 5, 8});
  CHECK(x.to_matrix<double>().rows() == 5);

  const NpyArray scale = read_npy(path("scale.npy"));
  CHECK(scale.shape().empty());
  CHECK(scale.size() == 1);
  CHECK_THAT(scale.to_vector<double>()[0], Catch::Matchers::WithinULP(0.7, 0));

  const NpyArray heads = read_npy(path("heads_array.npy"));
  CHECK(heads.dtype() == NpyDType::Int64);
  const auto h = heads.to_vector<int>();
  CHECK(std::count(h.begin(), h.end(), -1) == 1);  // one root in a complete sentence
  for (int v : h) CHECK((v >= -1 && v < 5));

  // probs is (1, 2, 5, 5); no padding in this case, so every row sums to 1.
  const auto probs = read_npy(path("probs.npy")).to_matrix<double>();
  REQUIRE(probs.rows() == 10);
  REQUIRE(probs.cols() == 5);
  for (Eigen::Index r = 0; r < probs.rows(); ++r)
    CHECK_THAT(probs.row(r).sum(), Catch::Matchers::WithinAbs(1.0, 1e-12));
}

TEST_CASE("hand-made headers in every supported version and spelling are read", "[io][npy]") {
  const std::string data = doubles({1, 2, 3, 4, 5, 6});
  SECTION("versions 2.0 and 3.0") {
    const int major = GENERATE(1, 2, 3);
    const NpyArray a = parse(make_npy(major, 0, f8_header("(2, 3)"), data));
    CHECK(a.shape() == Shape{2, 3});
    CHECK_THAT(a.to_vector<double>(), Catch::Matchers::Equals(std::vector<double>{1, 2, 3, 4, 5, 6}));
  }
  SECTION("keys in any order, any spacing, either quote, trailing commas") {
    const std::string header = GENERATE(
        std::string("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f8'}"),
        std::string("{'descr':'<f8','fortran_order':False,'shape':(2,3)}"),
        std::string("{ \"descr\" : \"<f8\" ,\t'fortran_order' :False ,'shape':( 2 , 3 , ) , }\r\n"),
        std::string("{'descr': '<f8',\n 'fortran_order': False,\n 'shape': (2L, 3L), }    \n"),
        std::string("  {'fortran_order': False, 'shape': (2, 3), 'descr': '<f8', }"));
    CAPTURE(header);
    const NpyArray a = parse(make_npy(1, 0, header, data));
    CHECK(a.dtype() == NpyDType::Float64);
    CHECK(a.shape() == Shape{2, 3});
  }
  SECTION("Python tuple syntax for 0-d and 1-D shapes") {
    CHECK(parse(make_npy(1, 0, f8_header("()"), doubles({9}))).shape().empty());
    CHECK(parse(make_npy(1, 0, f8_header("( )"), doubles({9}))).size() == 1);
    CHECK(parse(make_npy(1, 0, f8_header("(6,)"), data)).shape() == Shape{6});
    CHECK(parse(make_npy(1, 0, f8_header("(0,)"))).size() == 0);
  }
  SECTION("one-byte dtypes with any byte-order mark") {
    const std::string descr = GENERATE("|i1", "<i1", ">i1", "|u1", "<u1");
    const NpyArray a = parse(make_npy(
        1, 0, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }", "\x80\x05"));
    CHECK(a.to_vector<int>() == std::vector<int>{descr[1] == 'i' ? -128 : 128, 5});
  }
}

TEST_CASE("consecutive arrays in one stream are read in turn", "[io][npy]") {
  const std::vector<double> a{1.5, -2};
  const std::vector<std::int16_t> b{7};
  std::istringstream in(npy_bytes(a.data(), {2}) + npy_bytes(b.data(), {}), std::ios::binary);
  CHECK(read_npy(in, "s").to_vector<double>() == a);
  CHECK(read_npy(in, "s").to_vector<std::int16_t>() == b);
  CHECK_THROWS_WITH(read_npy(in, "s"), "s: not a .npy file (empty input)");
}

TEST_CASE("unsupported or broken files are refused with a reason", "[io][npy]") {
  const std::string good = make_npy(1, 0, f8_header("(2,)"), doubles({1, 2}));

  SECTION("not a .npy file") {
    CHECK(refusal("") == "not a .npy file (empty input)");
    CHECK(refusal("PK\x03\x04 zip archive") == "not a .npy file (bad magic)");
    CHECK(refusal("\x93NUMPZ\x01\x00") == "not a .npy file (bad magic)");
    CHECK(refusal(std::string("\x93NUM")) == "header truncated: expected the 6-byte magic string, found 4 bytes");
  }
  SECTION("versions other than 1.0, 2.0 and 3.0") {
    CHECK(refusal(make_npy(4, 0, f8_header("(1,)"))) == "unsupported version 4.0 (expected 1.0, 2.0 or 3.0)");
    CHECK(refusal(make_npy(1, 1, f8_header("(1,)"))) == "unsupported version 1.1 (expected 1.0, 2.0 or 3.0)");
    CHECK(refusal(make_npy(0, 0, f8_header("(1,)"))) == "unsupported version 0.0 (expected 1.0, 2.0 or 3.0)");
  }
  SECTION("truncation anywhere") {
    CHECK_THAT(refusal(good.substr(0, 7)), Catch::StartsWith("header truncated: expected the 2-byte format version"));
    CHECK(refusal(good.substr(0, 9)) == "header truncated: expected a 2-byte header length, found 1 bytes");
    CHECK(refusal(good.substr(0, 40)) == "header truncated: expected " +
                                             std::to_string(f8_header("(2,)").size()) + " bytes, found 30");
    CHECK(refusal(good.substr(0, good.size() - 3)) == "data truncated: expected 16 bytes, found 13");
    const std::string short_data(312, '\0');
    CHECK(refusal(make_npy(1, 0, f8_header("(100,)"), short_data)) ==
          "data truncated: expected 800 bytes, found 312");
  }
  SECTION("layouts and dtypes we do not support") {
    CHECK(refusal(make_npy(1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }",
                           doubles({1, 2, 3, 4}))) == "Fortran-order arrays are not supported");
    CHECK(refusal(make_npy(1, 0, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", doubles({1}))) ==
          "big-endian dtype '>f8' is not supported");
    CHECK(refusal(make_npy(1, 0, "{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", "abcd")) ==
          "big-endian dtype '>i4' is not supported");
    CHECK(refusal(make_npy(1, 0, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "12345678")) ==
          "object arrays are not supported");
    CHECK_THAT(refusal(make_npy(1, 0, "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }")),
               Catch::StartsWith("dtype '<c16' is not supported (expected one of '<f4', '<f8'"));
    const std::string other = GENERATE("<u2", "<u8", "|b1", "<f2", "<M8[ns]", "|S5", "float64");
    CHECK_THAT(refusal(make_npy(1, 0, "{'descr': '" + other + "', 'fortran_order': False, 'shape': (1,), }")),
               Catch::StartsWith("dtype '" + other + "' is not supported"));
    CHECK(refusal(make_npy(1, 0, "{'descr': 'f8', 'fortran_order': False, 'shape': (1,), }", doubles({1}))) ==
          "dtype 'f8' does not state its byte order (expected '<f8')");
    CHECK(refusal(make_npy(1, 0, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }")) ==
          "structured dtypes are not supported (descr is a list of fields)");
  }
  SECTION("malformed header dicts") {
    struct Case {
      const char* header;
      const char* reason;
    };
    const Case c = GENERATE(
        Case{"", "expected '{' at the start of the header dict, found the end of the header"},
        Case{"['descr']", "expected '{' at the start of the header dict, found '[' at offset 0"},
        Case{"{}", "missing key 'descr'"},
        Case{"{'descr': '<f8', 'shape': (2,)}", "missing key 'fortran_order'"},
        Case{"{'descr': '<f8', 'fortran_order': False}", "missing key 'shape'"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
             "unexpected key 'extra' (expected 'descr', 'fortran_order' and 'shape')"},
        Case{"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
             "duplicate key 'descr'"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (2)}",
             "expected 'shape' to be a tuple, found a parenthesised integer (write (n,))"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': [2]}",
             "expected 'shape' to be a tuple, found '[' at offset 50"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}",
             "expected a non-negative integer for dimension 0 of 'shape', found '-' at offset 51"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (2.0,)}",
             "expected ',' or ')' in 'shape', found '.' at offset 52"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (1, 02)}",
             "dimension 1 of 'shape' has a leading zero"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (,)}",
             "expected a non-negative integer for dimension 0 of 'shape', found ',' at offset 51"},
        Case{"{'descr': '<f8', 'fortran_order': 0, 'shape': (2,)}",
             "expected True or False for 'fortran_order', found '0' at offset 34"},
        Case{"{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}",
             "expected ',' or '}' after the value of 'descr', found 'f' at offset 17"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)",
             "expected ',' or '}' after the value of 'shape', found the end of the header"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} x",
             "expected only padding after the closing '}', found 'x' at offset 56"},
        Case{"{'descr': '<f8',, 'fortran_order': False, 'shape': (2,)}",
             "expected a quoted key or '}', found ',' at offset 16"},
        Case{"{'descr': 8, 'fortran_order': False, 'shape': (2,)}",
             "expected 'descr' to be a string, found '8' at offset 10"},
        Case{"{'descr': '', 'fortran_order': False, 'shape': (2,)}", "'descr' is empty"},
        Case{"{'descr': '<f\xe9', 'fortran_order': False, 'shape': (2,)}",
             "unexpected character '\\xe9' at offset 13 in a string"},
        Case{"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'unterminated}",
             "unterminated string starting at offset 56"});
    CAPTURE(c.header);
    CHECK(refusal(make_npy(1, 0, c.header, doubles({1, 2}))) == std::string("malformed header: ") + c.reason);
  }
  SECTION("padding other than whitespace") {
    const std::string header = std::string("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}") + '\0';
    CHECK(refusal(make_npy(1, 0, header, doubles({1, 2}))) ==
          "malformed header: expected only padding after the closing '}', found '\\x00' at offset 55");
  }
  SECTION("huge shapes are refused or found truncated without allocating for them") {
    CHECK(refusal(make_npy(1, 0, f8_header("(4611686018427387904, 4611686018427387904)"))) ==
          "malformed header: shape (4611686018427387904, 4611686018427387904) of float64 is too large");
    CHECK(refusal(make_npy(1, 0, f8_header("(0, 4611686018427387904, 4)"))) ==
          "malformed header: shape (0, 4611686018427387904, 4) of float64 is too large");
    CHECK(refusal(make_npy(1, 0, f8_header("(99999999999999999999999,)"))) ==
          "malformed header: dimension 0 of 'shape' (99999999999999999999999) is too large");
    // 8 TiB claimed, 16 bytes present: under ASan an allocation of the
    // claimed size would abort the test.
    CHECK(refusal(make_npy(1, 0, f8_header("(1099511627776,)"), doubles({1, 2}))) ==
          "data truncated: expected 8796093022208 bytes, found 16");
    CHECK(refusal(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12) + "abc") ==
          "header truncated: expected 4294967295 bytes, found 3");
    // A zero-size array may have large other dimensions, as in NumPy.
    const NpyArray empty = parse(make_npy(1, 0, f8_header("(0, 1099511627776)")));
    CHECK(empty.size() == 0);
    CHECK(empty.to_matrix<float>().rows() == 0);
  }
}

TEST_CASE("file errors name the file", "[io][npy]") {
  TempDir dir;
  CHECK_THROWS_WITH(read_npy(dir.file("missing.npy")),
                    dir.file("missing.npy") + ": cannot open file");

  const std::string path = dir.file("long.npy");
  {
    std::ofstream out(path, std::ios::binary);
    out << make_npy(1, 0, f8_header("(1,)"), doubles({1, 2}));
  }
  CHECK_THROWS_WITH(read_npy(path), path + ": unexpected data after the array (the header's shape "
                                           "accounts for 8 data bytes)");
  const std::string bad = dir.file("bad.npy");
  {
    std::ofstream out(bad, std::ios::binary);
    out << "hello";
  }
  CHECK_THROWS_AS(read_npy(bad), FormatError);
  CHECK_THROWS_WITH(read_npy(bad), bad + ": not a .npy file (bad magic)");

  const double v = 1;
  CHECK_THROWS_WITH(write_npy(dir.file("no/such/dir.npy"), &v, {1}),
                    Catch::Contains("write_npy: cannot write '" + dir.file("no/such/dir.npy") + "'"));
}

TEST_CASE("writer and constructor validate their arguments", "[io][npy]") {
  std::ostringstream out;
  CHECK_THROWS_WITH(write_npy<double>(out, nullptr, {2}),
                    "write_npy: <stream>: data is null but shape (2,) has 2 elements");
  const double v = 0;
  CHECK_THROWS_WITH(write_npy(out, &v, {std::size_t(1) << 62, 4}),
                    Catch::Contains("shape (4611686018427387904, 4) of float64 is too large"));
  CHECK_THROWS_WITH(NpyArray(NpyDType::Int16, {3}, std::vector<unsigned char>(5)),
                    "NpyArray: shape (3,) of int16 needs 6 bytes, got 5");
  const NpyArray ok(NpyDType::Int16, {3}, {1, 0, 2, 0, 0xff, 0xff});
  CHECK(ok.to_vector<int>() == std::vector<int>{1, 2, -1});
  const NpyArray empty;
  CHECK(empty.size() == 0);
  CHECK(empty.shape() == Shape{0});
}

TEST_CASE("integer conversions that would wrap around are errors naming the element", "[io][npy]") {
  SECTION("int64 into int8: the issue's [300, -129]") {
    const std::vector<std::int64_t> v{1, 300, -129};
    const NpyArray a = parse(npy_bytes(v.data(), {3}));
    CHECK_THROWS_WITH(a.to_vector<std::int8_t>(),
                      "NpyArray: element 1 of the int64 array is 300, which int8 cannot represent");
    const std::vector<std::int64_t> low{-128, -129};
    CHECK_THROWS_WITH(parse(npy_bytes(low.data(), {2})).to_vector<std::int8_t>(),
                      "NpyArray: element 1 of the int64 array is -129, which int8 cannot represent");
    CHECK(parse(npy_bytes(v.data(), {1})).to_vector<std::int8_t>() == std::vector<std::int8_t>{1});
  }
  SECTION("uint8 255 into int8 is not the masked-pair -1") {
    const std::vector<std::uint8_t> v{0, 127, 255};
    const NpyArray a = parse(npy_bytes(v.data(), {3}));
    CHECK_THROWS_WITH(a.to_vector<std::int8_t>(),
                      "NpyArray: element 2 of the uint8 array is 255, which int8 cannot represent");
    CHECK(a.to_vector<std::int16_t>() == std::vector<std::int16_t>{0, 127, 255});
  }
  SECTION("negative values into unsigned types") {
    const std::vector<std::int8_t> v{3, -1};
    CHECK_THROWS_WITH(parse(npy_bytes(v.data(), {2})).to_vector<std::uint8_t>(),
                      "NpyArray: element 1 of the int8 array is -1, which uint8 cannot represent");
    CHECK_THROWS_WITH(parse(npy_bytes(v.data(), {2})).to_vector<unsigned long long>(),
                      Catch::Contains("element 1 of the int8 array is -1, which uint64"));
  }
  SECTION("every boundary of every integer pair") {
    const std::vector<std::int64_t> v{std::numeric_limits<std::int64_t>::min(), -2147483649LL,
                                      -2147483648LL, -32769, -32768, -129, -128, -1, 0, 127, 128,
                                      255, 256, 32767, 32768, 2147483647LL, 2147483648LL,
                                      std::numeric_limits<std::int64_t>::max()};
    const NpyArray a = parse(npy_bytes(v.data(), {v.size()}));
    auto accepted_by = [&](auto zero, std::int64_t lo, std::int64_t hi) {
      using T = decltype(zero);
      for (std::size_t i = 0; i < v.size(); ++i) {
        const NpyArray one = parse(npy_bytes(&v[i], {1}));
        CAPTURE(v[i]);
        if (v[i] >= lo && v[i] <= hi)
          CHECK(static_cast<std::int64_t>(one.to_vector<T>()[0]) == v[i]);
        else
          CHECK_THROWS_WITH(one.to_vector<T>(), Catch::Contains("element 0 of the int64 array is " +
                                                                std::to_string(v[i])));
      }
      CHECK_THROWS_AS(a.to_vector<T>(), synattn::Error);
    };
    accepted_by(std::int8_t{}, -128, 127);
    accepted_by(std::uint8_t{}, 0, 255);
    accepted_by(std::int16_t{}, -32768, 32767);
    accepted_by(std::int32_t{}, -2147483648LL, 2147483647LL);
    CHECK(a.to_vector<std::int64_t>() == v);
  }
}

TEST_CASE("float64 to float32 refuses finite values beyond float's range", "[io][npy]") {
  const std::vector<double> v{1.0, 1e300};
  CHECK_THROWS_WITH(parse(npy_bytes(v.data(), {2})).to_vector<float>(),
                    "NpyArray: element 1 of the float64 array is 1.0000000000000001e+300, which "
                    "float32 cannot represent");
  const std::vector<double> neg{-3.5e38};
  CHECK_THROWS_WITH(parse(npy_bytes(neg.data(), {1})).to_vector<float>(),
                    Catch::Contains("element 0 of the float64 array is -3.5e+38, which float32"));
  SECTION("infinities and NaN are values float32 has: they carry over") {
    const std::vector<double> special{std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(), std::nan(""),
                                      static_cast<double>(std::numeric_limits<float>::max()),
                                      1e-300};
    const auto f = parse(npy_bytes(special.data(), {5})).to_vector<float>();
    CHECK(f[0] == std::numeric_limits<float>::infinity());
    CHECK(f[1] == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(f[2]));
    CHECK(f[3] == std::numeric_limits<float>::max());
    CHECK(f[4] == 0.0f);  // underflow rounds to zero, as any rounding does
  }
}

TEST_CASE("read_npy on a directory says so", "[io][npy]") {
  TempDir dir;
  const std::string path = dir.file("a_dir.npy");
  std::filesystem::create_directories(path);
  CHECK_THROWS_WITH(read_npy(path), path + ": cannot open file (it is a directory)");
  // A stream that fails (as a directory opened as a stream does) is a read
  // error, not "empty input".
  std::ifstream in(path, std::ios::binary);
  CHECK_THROWS_WITH(read_npy(in, "d"), "d: read error before the magic string (the stream failed)");
}

TEST_CASE("write_npy checks its arguments before it creates or truncates the file", "[io][npy]") {
  TempDir dir;
  const std::string path = dir.file("keep.npy");
  const auto contents = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  {
    std::ofstream out(path, std::ios::binary);
    out << "precious";
  }
  CHECK_THROWS_WITH(write_npy<double>(path, nullptr, {2}),
                    "write_npy: " + path + ": data is null but shape (2,) has 2 elements");
  CHECK(contents() == "precious");
  const double v = 0;
  CHECK_THROWS_WITH(write_npy(path, &v, {std::size_t(1) << 62, 4}), Catch::Contains("is too large"));
  CHECK(contents() == "precious");
  const std::string fresh = dir.file("never.npy");
  CHECK_THROWS_AS(write_npy<float>(fresh, nullptr, {1}), synattn::Error);
  CHECK_FALSE(std::filesystem::exists(fresh));
}
