// Sizes from outside numbers (util/checked_size.hpp), the parameter layout
// checks built on them (util/parameters.hpp), and overlapping views
// (matrix.hpp's storage_overlaps).
#include <catch2/catch.hpp>

#include <synattn/matrix.hpp>
#include <synattn/util/checked_size.hpp>
#include <synattn/util/parameters.hpp>

#include <cstdint>
#include <limits>
#include <vector>

using Catch::Matchers::Contains;
using synattn::Index;

TEST_CASE("checked_multiply and checked_add refuse negatives and overflow, and leave out alone", "[checked_size]") {
  constexpr Index big = std::numeric_limits<Index>::max();
  Index out = -7;
  CHECK(synattn::checked_multiply<Index>(3, 4, out));
  CHECK(out == 12);
  CHECK(synattn::checked_multiply<Index>(0, big, out));
  CHECK(out == 0);
  out = -7;
  CHECK_FALSE(synattn::checked_multiply<Index>(Index(1) << 32, Index(1) << 31, out));
  CHECK_FALSE(synattn::checked_multiply<Index>(-1, 5, out));
  CHECK_FALSE(synattn::checked_multiply<Index>(5, -1, out));
  CHECK_FALSE(synattn::checked_multiply<Index>(10, 11, out, 100));
  CHECK(out == -7);
  CHECK(synattn::checked_multiply<Index>(10, 10, out, 100));
  CHECK(out == 100);

  CHECK(synattn::checked_add<Index>(big - 1, 1, out));
  CHECK(out == big);
  out = -7;
  CHECK_FALSE(synattn::checked_add<Index>(big, 1, out));
  CHECK_FALSE(synattn::checked_add<Index>(-1, 1, out));
  CHECK_FALSE(synattn::checked_add<Index>(60, 41, out, 100));
  CHECK(out == -7);

  std::uint64_t u = 0;
  CHECK_FALSE(synattn::checked_multiply<std::uint64_t>(std::uint64_t(1) << 63, 2, u));
  CHECK(synattn::checked_multiply<std::uint64_t>(std::uint64_t(1) << 62, 2, u));
  CHECK(u == std::uint64_t(1) << 63);
}

TEST_CASE("checked_shape_bytes: zero dimensions, NumPy's limit, and shapes that cannot exist", "[checked_size]") {
  std::uint64_t bytes = 1;
  CHECK(synattn::checked_shape_bytes(std::vector<std::uint64_t>{}, 8, bytes));
  CHECK(bytes == 8);  // a 0-d array holds one element
  CHECK(synattn::checked_shape_bytes(std::vector<std::uint64_t>{2, 3}, 4, bytes));
  CHECK(bytes == 24);
  CHECK(synattn::checked_shape_bytes(std::vector<std::uint64_t>{0, 5}, 4, bytes));
  CHECK(bytes == 0);
  // (0, 2^62, 2^62): empty, but its nonzero dimensions alone cannot exist.
  bytes = 1;
  CHECK_FALSE(synattn::checked_shape_bytes(std::vector<std::uint64_t>{0, 1ull << 62, 1ull << 62}, 1, bytes));
  CHECK(bytes == 1);
  // Exactly at the limit (2^63 - 1 bytes) and one element beyond it.
  CHECK(synattn::checked_shape_bytes(std::vector<std::uint64_t>{synattn::kMaxArrayBytes}, 1, bytes));
  CHECK(bytes == synattn::kMaxArrayBytes);
  CHECK_FALSE(synattn::checked_shape_bytes(std::vector<std::uint64_t>{synattn::kMaxArrayBytes}, 2, bytes));
  // Signed dimensions: a negative one is refused.
  CHECK_FALSE(synattn::checked_shape_bytes(std::vector<Index>{3, -1}, 4, bytes));
  CHECK(synattn::checked_shape_bytes(std::vector<Index>{3, 2}, 4, bytes));
  CHECK(bytes == 24);
}

// ParameterStore::add computed rows * cols unchecked: under NDEBUG the size
// wrapped, and the writes that followed ran off the heap.
TEST_CASE("ParameterStore::add refuses a shape whose size overflows, naming it", "[checked_size][parameters]") {
  synattn::ParameterStore<float> store;
  store.add("w", 2, 3);
  const Index huge = Index(1) << 32;
  CHECK_THROWS_WITH(store.add("v", huge, huge),
                    Contains("'v' of shape 4294967296x4294967296 does not fit: the store's size would overflow"));
  CHECK_THROWS_WITH(store.add("u", std::numeric_limits<Index>::max(), 1), Contains("would overflow"));
  CHECK(store.infos().size() == 1);
  CHECK(store.size() == 6);
}

TEST_CASE("check_parameter_span: inside, outside, negative and overflowing layouts", "[checked_size][parameters]") {
  synattn::ParameterInfo p;
  p.name = "w";
  p.offset = 2;
  p.rows = 2;
  p.cols = 3;
  Index end = 0;
  CHECK(synattn::parameter_end(p, end));
  CHECK(end == 8);
  CHECK_NOTHROW(synattn::check_parameter_span("f", 0, p, 8));
  CHECK_THROWS_WITH(synattn::check_parameter_span("f", 1, p, 7),
                    "f: parameter 1 ('w') spans [2, 8), outside the 7 values");
  CHECK_THROWS_WITH(synattn::check_parameter_span("f", 1, p, 7, "gradients"),
                    "f: parameter 1 ('w') spans [2, 8), outside the 7 gradients");
  p.rows = -2;
  CHECK_FALSE(synattn::parameter_end(p, end));
  CHECK_THROWS_WITH(synattn::check_parameter_span("f", 0, p, 100),
                    "f: parameter 0 ('w') has offset 2 and shape -2x3: negative, or its end overflows");
  p.rows = Index(1) << 40;
  p.cols = Index(1) << 40;
  CHECK_THROWS_WITH(synattn::check_parameter_span("f", 0, p, 100), Contains("its end overflows"));
  p.rows = 1;
  p.cols = 1;
  p.offset = std::numeric_limits<Index>::max();
  CHECK_THROWS_WITH(synattn::check_parameter_span("f", 0, p, 100), Contains("its end overflows"));
  p.offset = -1;
  CHECK_THROWS_WITH(synattn::check_parameter_span("f", 0, p, 100), Contains("has offset -1"));
}

TEST_CASE("storage_overlaps sees shared storage through blocks, maps and strides", "[checked_size][matrix]") {
  using M = synattn::RowMajorMatrix<double>;
  M a = M::Zero(4, 6), b = M::Zero(4, 6);
  CHECK(synattn::storage_overlaps(a, a));
  CHECK_FALSE(synattn::storage_overlaps(a, b));
  CHECK(synattn::storage_overlaps(a.topRows(1), a.bottomRows(4)));
  CHECK_FALSE(synattn::storage_overlaps(a.topRows(2), a.bottomRows(2)));
  // Column blocks of a row-major matrix interleave: their address ranges meet.
  CHECK(synattn::storage_overlaps(a.leftCols(3), a.rightCols(3)));
  const Eigen::Ref<const M> view = a.middleRows(1, 2);
  CHECK(synattn::storage_overlaps(view, a));
  Eigen::Map<M> tail(a.data() + 18, 1, 6);
  CHECK(synattn::storage_overlaps(tail, a.row(3)));
  CHECK_FALSE(synattn::storage_overlaps(tail, a.row(2)));
  M empty;
  CHECK_FALSE(synattn::storage_overlaps(empty, a));
}
