#include <catch2/catch.hpp>

#include <synattn/bias/bucketing.hpp>
#include <synattn/io/npy.hpp>
#include <synattn/tree/batch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/random_trees.hpp"
#include "support/test_data.hpp"

using namespace synattn;

namespace {

std::vector<DependencyTree> random_batch(const std::vector<int>& lengths, std::mt19937& rng) {
  std::vector<DependencyTree> trees;
  int k = 0;
  for (int len : lengths)
    trees.emplace_back(synattn_test::random_recursive_heads(len, rng), Structure::Tree, "s" + std::to_string(k++));
  return trees;
}

// Checks sequence b of a padded block: its corner equals `want` and every
// other cell of its n_max x n_max block is -1.
template <class T>
void expect_sequence(const RowMajorMatrix<T>& block, Index b, const RowMajorMatrix<T>& want) {
  const Index n_max = block.cols(), len = want.rows();
  for (Index i = 0; i < n_max; ++i)
    for (Index j = 0; j < n_max; ++j) {
      const long long got = block(b * n_max + i, j);
      const long long expect = i < len && j < len ? static_cast<long long>(want(i, j)) : -1;
      if (got != expect)
        FAIL("sequence " << b << " (length " << len << ", n_max " << n_max << ") cell (" << i << ", " << j
                         << "): got " << got << ", expected " << expect);
    }
}

// A golden int64 array through the library's reader, with 2-D/3-D indexing.
struct NpyInt64 {
  std::vector<long long> shape;
  std::vector<std::int64_t> data;
  std::int64_t at(long long i, long long j) const { return data[static_cast<std::size_t>(i * shape[1] + j)]; }
  std::int64_t at(long long b, long long i, long long j) const {
    return data[static_cast<std::size_t>((b * shape[1] + i) * shape[2] + j)];
  }
  // View v's (b, i, j) of a fused case's (views, ...) array; an unfused case's array is view 0.
  std::int64_t view(long long v, long long b, long long i) const {
    return shape.size() == 3 ? data[static_cast<std::size_t>((v * shape[1] + b) * shape[2] + i)] : at(b, i);
  }
  std::int64_t view(long long v, long long b, long long i, long long j) const {
    if (shape.size() == 3) return at(b, i, j);
    return data[static_cast<std::size_t>(((v * shape[1] + b) * shape[2] + i) * shape[3] + j)];
  }
};

NpyInt64 read_npy_int64(const std::string& path) {
  const NpyArray array = read_npy(path);
  INFO(path);
  REQUIRE(array.dtype() == NpyDType::Int64);
  NpyInt64 out;
  for (std::size_t d : array.shape()) out.shape.push_back(static_cast<long long>(d));
  out.data = array.to_vector<std::int64_t>();
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("a batch block holds each sentence's distances and -1 on every padding pair",
                   "[batch]", std::int8_t, std::int16_t, std::int32_t) {
  std::mt19937 rng(4);
  const std::vector<int> lengths{5, 0, 12, 1, 3};
  const auto trees = random_batch(lengths, rng);
  const Index n_max = GENERATE(12, 15);
  RowMajorMatrix<TestType> block = RowMajorMatrix<TestType>::Constant(5 * n_max, n_max, TestType(99));
  const std::vector<int> got_lengths = batch_distances<TestType>(trees, block);
  CHECK(got_lengths == lengths);
  for (Index b = 0; b < 5; ++b) {
    CAPTURE(b);
    expect_sequence<TestType>(block, b, pairwise_distances<TestType>(trees[static_cast<std::size_t>(b)]));
  }
  SECTION("a length-0 sentence is all padding, a length-1 sentence is one 0") {
    CHECK((block.middleRows(1 * n_max, n_max).array() == TestType(-1)).all());
    CHECK(+block(3 * n_max, 0) == 0);
    CHECK((block.middleRows(3 * n_max, n_max).array() == TestType(-1)).count() == n_max * n_max - 1);
  }
}

TEST_CASE("the batch is written into caller storage with an outer stride", "[batch]") {
  std::mt19937 rng(8);
  const auto trees = random_batch({4, 6}, rng);
  RowMajorMatrix<std::int8_t> big = RowMajorMatrix<std::int8_t>::Constant(20, 10, 77);
  const auto lengths = batch_distances<std::int8_t>(trees, big.block(3, 2, 12, 6));
  CHECK(lengths == std::vector<int>{4, 6});
  const RowMajorMatrix<std::int8_t> got = big.block(3, 2, 12, 6);
  expect_sequence<std::int8_t>(got, 0, pairwise_distances<std::int8_t>(trees[0]));
  expect_sequence<std::int8_t>(got, 1, pairwise_distances<std::int8_t>(trees[1]));
  // Nothing outside the block was touched.
  CHECK((big.topRows(3).array() == 77).all());
  CHECK((big.bottomRows(5).array() == 77).all());
  CHECK((big.block(3, 0, 12, 2).array() == 77).all());
  CHECK((big.block(3, 8, 12, 2).array() == 77).all());
}

TEMPLATE_TEST_CASE("directed batches pad up and down alike", "[batch][directed]", std::int8_t, std::int32_t) {
  std::mt19937 rng(12);
  const std::vector<int> lengths{7, 1, 0, 9};
  const auto trees = random_batch(lengths, rng);
  const Index n_max = 10;
  RowMajorMatrix<TestType> up = RowMajorMatrix<TestType>::Constant(4 * n_max, n_max, TestType(55));
  RowMajorMatrix<TestType> down = up;
  CHECK(batch_directed_distances<TestType>(trees, up, down) == lengths);
  for (Index b = 0; b < 4; ++b) {
    const auto& tree = trees[static_cast<std::size_t>(b)];
    RowMajorMatrix<TestType> u(tree.size(), tree.size()), d(tree.size(), tree.size());
    directed_distances<TestType>(tree, u, d);
    expect_sequence<TestType>(up, b, u);
    expect_sequence<TestType>(down, b, d);
  }
}

TEST_CASE("the allocating conveniences size the block to the longest sentence", "[batch]") {
  std::mt19937 rng(5);
  const auto trees = random_batch({3, 8, 2}, rng);
  const auto batch = make_distance_batch<std::int16_t>(trees);
  CHECK(batch.n_max == 8);
  CHECK(batch.lengths == std::vector<int>{3, 8, 2});
  REQUIRE(batch.distances.rows() == 24);
  REQUIRE(batch.distances.cols() == 8);
  for (Index b = 0; b < 3; ++b)
    expect_sequence<std::int16_t>(batch.distances, b, pairwise_distances<std::int16_t>(trees[static_cast<std::size_t>(b)]));

  const auto wide = make_directed_distance_batch<std::int8_t>(trees, 11);
  CHECK(wide.n_max == 11);
  CHECK(wide.up.rows() == 33);
  CHECK(wide.down.cols() == 11);
  CHECK(+wide.up(11 + 9, 0) == -1);

  const auto empty = make_distance_batch<std::int8_t>({});
  CHECK(empty.n_max == 0);
  CHECK(empty.distances.size() == 0);
  CHECK(empty.lengths.empty());

  CHECK(longest(trees) == 8);
  CHECK(batch_lengths(trees) == std::vector<int>{3, 8, 2});
}

TEST_CASE("mask_padding writes -1 outside the given lengths and nothing inside", "[batch]") {
  RowMajorMatrix<std::int8_t> block = RowMajorMatrix<std::int8_t>::Constant(9, 3, 4);
  mask_padding<std::int8_t>(block, {2, 0, 3});
  RowMajorMatrix<std::int8_t> want(9, 3);
  want << 4, 4, -1,  //
      4, 4, -1,      //
      -1, -1, -1,    //
      -1, -1, -1,    //
      -1, -1, -1,    //
      -1, -1, -1,    //
      4, 4, 4,       //
      4, 4, 4,       //
      4, 4, 4;
  CHECK(block == want);
  CHECK_THROWS_WITH(mask_padding<std::int8_t>(block, {2, 4, 1}),
                    "mask_padding: sentence 1 has 4 positions, more than n_max = 3 (the output's column count)");
  CHECK_THROWS_WITH(mask_padding<std::int8_t>(block, {2, -1, 1}),
                    "mask_padding: length of sequence 1 is -1, expected >= 0");
  CHECK_THROWS_WITH(mask_padding<std::int8_t>(block, {2, 1}), Catch::Contains("is 9x3, expected (batch * n_max) x n_max = 6x3"));
}

TEST_CASE("batch functions reject a sentence longer than n_max and wrong shapes before writing", "[batch][errors]") {
  std::mt19937 rng(9);
  std::vector<DependencyTree> trees = random_batch({3, 6, 2}, rng);
  RowMajorMatrix<std::int8_t> block = RowMajorMatrix<std::int8_t>::Constant(15, 5, 42);
  SECTION("too long, naming the sentence index, its label and both lengths") {
    CHECK_THROWS_WITH(batch_distances<std::int8_t>(trees, block),
                      "batch_distances: sentence 1 (s1) has 6 words, more than n_max = 5 (the output's column count)");
    CHECK((block.array() == 42).all());
    RowMajorMatrix<std::int8_t> down = block;
    CHECK_THROWS_WITH(batch_directed_distances<std::int8_t>(trees, block, down),
                      Catch::StartsWith("batch_directed_distances: sentence 1 (s1) has 6 words"));
    CHECK_THROWS_WITH(make_distance_batch<std::int8_t>(trees, 4),
                      Catch::StartsWith("make_distance_batch: sentence 1 (s1) has 6 words, more than n_max = 4"));
  }
  SECTION("an unlabelled sentence is named by index only") {
    trees[1] = DependencyTree({-1, 0, 0, 0, 0, 0});
    CHECK_THROWS_WITH(batch_distances<std::int8_t>(trees, block),
                      "batch_distances: sentence 1 has 6 words, more than n_max = 5 (the output's column count)");
  }
  SECTION("rows that are not batch * n_max") {
    RowMajorMatrix<std::int8_t> wrong(17, 6);
    CHECK_THROWS_WITH(batch_distances<std::int8_t>(trees, wrong),
                      "batch_distances: output 'out' is 17x6, expected (batch * n_max) x n_max = 18x6 for 3 sentences "
                      "(n_max is the column count)");
  }
  SECTION("up and down of different shapes") {
    RowMajorMatrix<std::int8_t> up(18, 6), down(18, 7);
    CHECK_THROWS_WITH(batch_directed_distances<std::int8_t>(trees, up, down),
                      "batch_directed_distances: output 'down' is 18x7 but 'up' is 18x6; they must match");
  }
  SECTION("negative cross distance and n_max") {
    RowMajorMatrix<std::int8_t> ok(18, 6);
    CHECK_THROWS_WITH(batch_distances<std::int8_t>(trees, ok, -1), Catch::Contains("cross_distance must be >= 0, got -1"));
    CHECK_THROWS_WITH(make_distance_batch<std::int8_t>(trees, -2), Catch::Contains("n_max must be >= 0"));
  }
  SECTION("errors are synattn::Error") { CHECK_THROWS_AS(batch_distances<std::int8_t>(trees, block), Error); }
}

TEST_CASE("an empty batch needs an empty block", "[batch]") {
  RowMajorMatrix<std::int8_t> none(0, 7), some(7, 7);
  CHECK(batch_distances<std::int8_t>({}, none).empty());
  CHECK_THROWS_WITH(batch_distances<std::int8_t>({}, some), Catch::Contains("expected (batch * n_max) x n_max = 0x7"));
}

TEST_CASE("pack_sequences fills forests greedily and they batch like sentences", "[batch][pack]") {
  std::mt19937 rng(31);
  const auto trees = random_batch({3, 4, 2, 5, 1, 7}, rng);
  const auto packed = pack_sequences(trees, 7);
  REQUIRE(packed.size() == 4);  // [3 4] [2 5] [1] [7]
  CHECK(batch_lengths(packed) == std::vector<int>{7, 7, 1, 7});
  CHECK(packed[0].sentence() == "packed 0..1");
  CHECK(packed[1].sentence() == "packed 2..3");
  CHECK(packed[3].sentence() == "packed 5..5");
  CHECK(packed[1].num_trees() == 2);
  CHECK(packed[1].tree_of() == std::vector<int>{0, 0, 1, 1, 1, 1, 1});

  RowMajorMatrix<std::int8_t> block(4 * 7, 7);
  CHECK(batch_distances<std::int8_t>(packed, block, 10) == std::vector<int>{7, 7, 1, 7});
  // Forest 1 = trees 2 and 3: their own distances on the diagonal blocks,
  // the cross distance between them.
  const auto d2 = pairwise_distances<std::int8_t>(trees[2]);
  const auto d3 = pairwise_distances<std::int8_t>(trees[3]);
  const auto seq = block.middleRows(7, 7);
  CHECK(seq.topLeftCorner(2, 2) == d2);
  CHECK(seq.bottomRightCorner(5, 5) == d3);
  CHECK((seq.topRightCorner(2, 5).array() == 10).all());
  CHECK((seq.bottomLeftCorner(5, 2).array() == 10).all());
  CHECK((block.middleRows(14, 7).array() == -1).count() == 48);

  CHECK(pack_sequences({}, 3).empty());
  CHECK_THROWS_WITH(pack_sequences(trees, 6), "pack_sequences: sentence 5 (s5) has 7 words, more than n_max = 6 (the output's column count)");
  CHECK_THROWS_WITH(pack_sequences(trees, -1), "pack_sequences: n_max must be >= 0, got -1");
}

TEST_CASE("batches of the golden trees reproduce the golden dist, up/down and buckets", "[batch][golden]") {
  struct Case {
    const char* name;
    Bucketing bucketing;
    int views;  // tree fusion: heads_views, buckets (and up/down) have a leading view axis
  };
  const std::vector<Case> cases{{"tiny", Bucketing::linear(3), 1},
                                {"padded", Bucketing::linear(10), 1},
                                {"perhead_log", Bucketing::log(8, 32, 4), 1},
                                {"causal", Bucketing::linear(5), 1},
                                {"directed", Bucketing::directed(3), 1},
                                {"fused", Bucketing::linear(4), 3},
                                {"fused_perhead", Bucketing::directed(2), 2}};
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const std::string dir = std::string("mha/") + c.name + "/";
    const auto heads = read_npy_int64(synattn_test::golden_path(dir + "heads_array.npy"));
    const auto lengths = read_npy_int64(synattn_test::golden_path(dir + "lengths.npy"));
    const auto dist = read_npy_int64(synattn_test::golden_path(dir + "dist.npy"));
    const auto buckets = read_npy_int64(synattn_test::golden_path(dir + "buckets.npy"));
    const NpyInt64 views_file =
        c.views > 1 ? read_npy_int64(synattn_test::golden_path(dir + "heads_views.npy")) : NpyInt64{};
    const NpyInt64& heads_views = c.views > 1 ? views_file : heads;
    const long long batch = heads.shape[0], n = heads.shape[1];
    REQUIRE(buckets.shape.size() == (c.views > 1 ? 4u : 3u));
    for (int v = 0; v < c.views; ++v) {
      CAPTURE(v);
      std::vector<DependencyTree> trees;
      for (long long b = 0; b < batch; ++b) {
        std::vector<int> h;
        for (long long i = 0; i < lengths.data[static_cast<std::size_t>(b)]; ++i)
          h.push_back(static_cast<int>(heads_views.view(v, b, i)));
        for (long long i = static_cast<long long>(h.size()); i < n; ++i) REQUIRE(heads_views.view(v, b, i) == -2);
        trees.emplace_back(h);
      }
      // View 0 is the gold tree, whose heads and distances heads_array and dist hold.
      if (v == 0)
        for (long long b = 0; b < batch; ++b)
          for (long long i = 0; i < n; ++i) REQUIRE(heads_views.view(0, b, i) == heads.at(b, i));
      RowMajorMatrix<std::int32_t> block(batch * n, n);
      const auto got_lengths = batch_distances<std::int32_t>(trees, block);
      RowMajorMatrix<std::int16_t> got_buckets(batch * n, n);
      if (c.bucketing.kind() == BucketKind::Directed) {
        const auto up = read_npy_int64(synattn_test::golden_path(dir + "up.npy"));
        const auto down = read_npy_int64(synattn_test::golden_path(dir + "down.npy"));
        RowMajorMatrix<std::int8_t> u(batch * n, n), d(batch * n, n);
        batch_directed_distances<std::int8_t>(trees, u, d);
        for (long long b = 0; b < batch; ++b)
          for (long long i = 0; i < n; ++i)
            for (long long j = 0; j < n; ++j) {
              REQUIRE(+u(b * n + i, j) == up.view(v, b, i, j));
              REQUIRE(+d(b * n + i, j) == down.view(v, b, i, j));
            }
        bucketize_directed<std::int8_t, std::int16_t>(c.bucketing, u, d, got_buckets);
      } else {
        bucketize<std::int32_t, std::int16_t>(c.bucketing, block, got_buckets);
      }
      for (long long b = 0; b < batch; ++b) {
        REQUIRE(got_lengths[static_cast<std::size_t>(b)] == lengths.data[static_cast<std::size_t>(b)]);
        for (long long i = 0; i < n; ++i)
          for (long long j = 0; j < n; ++j) {
            CAPTURE(b, i, j);
            if (v == 0) REQUIRE(block(b * n + i, j) == dist.at(b, i, j));
            REQUIRE(got_buckets(b * n + i, j) == buckets.view(v, b, i, j));
          }
      }
    }
  }
}
