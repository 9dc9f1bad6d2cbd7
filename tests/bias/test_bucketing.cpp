#include <catch2/catch.hpp>

#include <synattn/bias/bucket_batch.hpp>
#include <synattn/bias/bucketing.hpp>
#include <synattn/tree/batch.hpp>
#include <synattn/tree/subword.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/random_trees.hpp"

using namespace synattn;

namespace {

// docs/math.md §3's log bucket, written out here in double independently of the library.
int reference_log_bucket(int d, int num_buckets, int exact, int max_distance) {
  if (d < exact) return d;
  const double v = exact + std::floor(std::log(static_cast<double>(d) / exact) /
                                      std::log(static_cast<double>(max_distance) / exact) * (num_buckets - exact));
  return v >= num_buckets - 1 ? num_buckets - 1 : static_cast<int>(v);
}

// en_ewt-ud-dev weblog-blogspot.com_thelameduck_20041119192207_ENG_20041119_192207-0003
// (40 words, depth 9): "For the last few years there have been tensions with
// Iran 's nuclear program with word coming this week that a deal was reached
// through the European Union that meets with the approval of the
// International Atomic Energy Agency ."
const std::vector<int> kEwtHeads{4,  4,  4,  4,  7,  7,  7,  -1, 7,  13, 13, 10, 13, 8,  16, 16, 7,  18, 16, 23,
                                 21, 23, 23, 15, 27, 27, 27, 23, 29, 21, 32, 32, 29, 38, 38, 38, 37, 38, 32, 7};

}  // namespace

TEST_CASE("linear buckets clamp at M", "[bucketing][linear]") {
  SECTION("default M = 10") {
    const Bucketing b = Bucketing::linear();
    CHECK(b.kind() == BucketKind::Linear);
    CHECK(b.max_distance() == 10);
    CHECK(b.num_buckets() == 11);
    CHECK(b.distance_buckets() == 11);
    CHECK(b.cross_distance() == 10);
    CHECK(b.saturation_distance() == 10);
    CHECK(b.bucket(0) == 0);
    CHECK(b.bucket(1) == 1);
    CHECK(b.bucket(9) == 9);
    CHECK(b.bucket(10) == 10);
    CHECK(b.bucket(11) == 10);
    CHECK(b.bucket(1000000) == 10);
  }
  SECTION("M = 0: one bucket for every distance") {
    const Bucketing b = Bucketing::linear(0);
    CHECK(b.num_buckets() == 1);
    CHECK(b.bucket(0) == 0);
    CHECK(b.bucket(1) == 0);
    CHECK(b.bucket(127) == 0);
  }
  SECTION("M = 126, the largest that fits int8 with a special bucket") {
    const Bucketing b = Bucketing::linear(126, true);
    CHECK(b.num_buckets() == 128);
    CHECK(b.special_index() == 127);
    CHECK(b.bucket(125) == 125);
    CHECK(b.bucket(126) == 126);
    CHECK(b.bucket(127) == 126);
    CHECK(b.bucket(-2) == 127);
  }
}

TEST_CASE("log buckets: exact below E, logarithmic up to M, saturated beyond", "[bucketing][log]") {
  SECTION("the golden case B = 8, E = 4, M = 32, by hand") {
    const Bucketing b = Bucketing::log(8, 32);  // E defaults to B / 2
    CHECK(b.exact() == 4);
    CHECK(b.num_buckets() == 8);
    // ln(d / 4) / ln 8 * 4: 6 -> 0.78, 7 -> 1.08, 11 -> 1.95, 12 -> 2.11, 19 -> 2.997, 20 -> 3.096.
    const std::vector<std::pair<int, int>> want{{0, 0},  {1, 1},  {3, 3},  {4, 4},  {6, 4},  {7, 5},
                                                {11, 5}, {12, 6}, {19, 6}, {20, 7}, {32, 7}, {33, 7}, {5000, 7}};
    for (const auto& dw : want) {
      CAPTURE(dw.first);
      CHECK(b.bucket(dw.first) == dw.second);
    }
    CHECK(b.saturation_distance() == 20);
  }
  SECTION("equals docs/math.md's formula for d in [0, 5000] and several (B, E, M)") {
    struct Params {
      int b, e, m;
    };
    const Params p = GENERATE(Params{8, 4, 32}, Params{32, 16, 128}, Params{16, 8, 64}, Params{10, 3, 50},
                              Params{2, 1, 2}, Params{127, 63, 1000}, Params{20, 5, 6}, Params{5, 4, 100},
                              Params{127, 1, 1 << 20}, Params{12, 11, 12});
    CAPTURE(p.b, p.e, p.m);
    const Bucketing b = Bucketing::log(p.b, p.m, p.e);
    CHECK(b.distance_buckets() == p.b);
    int first_last = -1;
    int previous = 0;
    for (int d = 0; d <= 5000; ++d) {
      const int got = b.bucket(d);
      if (got != reference_log_bucket(d, p.b, p.e, p.m))
        FAIL("d = " << d << ": got " << got << ", the formula gives " << reference_log_bucket(d, p.b, p.e, p.m));
      REQUIRE(got >= previous);  // monotone
      REQUIRE(got < p.b);
      previous = got;
      if (got == p.b - 1 && first_last < 0) first_last = d;
    }
    // At E the log part starts at E; at M it reaches the last bucket.
    CHECK(b.bucket(p.e) == p.e);
    CHECK(b.bucket(p.m) == p.b - 1);
    CHECK(b.bucket(p.m + 1) == p.b - 1);
    if (first_last >= 0) CHECK(b.saturation_distance() == first_last);
    CHECK(b.saturation_distance() <= p.m);
  }
}

TEST_CASE("directed buckets are (min(up, M), min(down, M)) in row-major order", "[bucketing][directed]") {
  SECTION("default M = 10") {
    const Bucketing b = Bucketing::directed();
    CHECK(b.num_buckets() == 121);
    CHECK(b.bucket(0, 0) == 0);
    CHECK(b.bucket(0, 1) == 1);    // a child
    CHECK(b.bucket(1, 0) == 11);   // the head
    CHECK(b.bucket(1, 1) == 12);   // a sibling
    CHECK(b.bucket(9, 10) == 109);
    CHECK(b.bucket(10, 10) == 120);
    CHECK(b.bucket(11, 10) == 120);
    CHECK(b.bucket(50, 2) == 112);
    CHECK(b.bucket(2, 50) == 32);
    CHECK(b.bucket(-1, -1) == -1);
  }
  SECTION("M = 0: one bucket") {
    const Bucketing b = Bucketing::directed(0);
    CHECK(b.num_buckets() == 1);
    CHECK(b.bucket(5, 7) == 0);
  }
  SECTION("M = 10 with the special bucket is 122 buckets") {
    const Bucketing b = Bucketing::directed(10, true);
    CHECK(b.num_buckets() == 122);
    CHECK(b.bucket(-2, -2) == 121);
  }
}

TEST_CASE("bad parameters are rejected with what was expected", "[bucketing][errors]") {
  CHECK_THROWS_WITH(Bucketing::linear(-1), "linear bucketing: max_distance must be >= 0, got -1");
  CHECK_THROWS_WITH(Bucketing::linear(127), Catch::StartsWith("linear bucketing: max_distance must be <= 126"));
  CHECK_THROWS_WITH(Bucketing::directed(11), Catch::StartsWith("directed bucketing: max_distance must be <= 10"));
  CHECK_THROWS_WITH(Bucketing::directed(-3), "directed bucketing: max_distance must be >= 0, got -3");
  CHECK_THROWS_WITH(Bucketing::log(1, 10), "log bucketing: num_buckets must be in [2, 127], got 1");
  CHECK_THROWS_WITH(Bucketing::log(128, 1000), "log bucketing: num_buckets must be in [2, 127], got 128");
  CHECK_THROWS_WITH(Bucketing::log(8, 32, 0), "log bucketing: exact must be in [1, num_buckets), got 0");
  CHECK_THROWS_WITH(Bucketing::log(8, 32, 8), "log bucketing: exact must be in [1, num_buckets), got 8");
  CHECK_THROWS_WITH(Bucketing::log(8, 4), "log bucketing: max_distance must be > exact (4), got 4");
  CHECK_THROWS_WITH(Bucketing::log(8, (1 << 20) + 1), Catch::StartsWith("log bucketing: max_distance must be <= 2^20"));
  CHECK_THROWS_AS(Bucketing::log(8, -1), Error);
}

TEST_CASE("padding stays padding, special goes to the extra bucket only when enabled", "[bucketing]") {
  const auto kind = GENERATE(BucketKind::Linear, BucketKind::Log, BucketKind::Directed);
  const auto make = [&](bool special) {
    switch (kind) {
      case BucketKind::Linear: return Bucketing::linear(5, special);
      case BucketKind::Log: return Bucketing::log(8, 32, 4, special);
      case BucketKind::Directed: return Bucketing::directed(3, special);
    }
    return Bucketing::linear();
  };
  CAPTURE(bucket_kind_name(kind));
  const Bucketing with = make(true), without = make(false);
  CHECK(with.num_buckets() == without.num_buckets() + 1);
  CHECK(with.special_index() == without.num_buckets());

  RowMajorMatrix<std::int8_t> dist(2, 3), out(2, 3);
  dist << 0, -1, -2,  //
      3, -2, -1;
  if (kind == BucketKind::Directed) {
    bucketize_directed<std::int8_t, std::int8_t>(with, dist, dist, out);
    CHECK(+out(0, 0) == 0);
    CHECK(+out(1, 0) == 15);  // (3, 3)
  } else {
    bucketize<std::int8_t, std::int8_t>(with, dist, out);
    CHECK(+out(0, 0) == 0);
    CHECK(+out(1, 0) == 3);
  }
  CHECK(+out(0, 1) == -1);
  CHECK(+out(1, 2) == -1);
  CHECK(+out(0, 2) == with.special_index());
  CHECK(+out(1, 1) == with.special_index());

  const std::string disabled = "distance -2 (special token) but the special bucket is not enabled in " + without.describe();
  if (kind == BucketKind::Directed) {
    CHECK_THROWS_WITH(without.bucket(-2, -2), "Bucketing::bucket: " + disabled);
    CHECK_THROWS_WITH((bucketize_directed<std::int8_t, std::int8_t>(without, dist, dist, out)), Catch::Contains(disabled));
  } else {
    CHECK_THROWS_WITH(without.bucket(-2), "Bucketing::bucket: " + disabled);
    CHECK_THROWS_WITH((bucketize<std::int8_t, std::int8_t>(without, dist, out)), Catch::Contains(disabled));
  }
}

TEST_CASE("invalid_reason says why bucket() would throw, and nothing for a valid value", "[bucketing][errors]") {
  const Bucketing linear = Bucketing::linear(5), special = Bucketing::linear(5, true), directed = Bucketing::directed(3);
  CHECK(linear.invalid_reason(3).empty());
  CHECK(linear.invalid_reason(kPaddingDistance).empty());
  CHECK(special.invalid_reason(kSpecialDistance).empty());
  CHECK(linear.invalid_reason(kSpecialDistance) ==
        "distance -2 (special token) but the special bucket is not enabled in linear (M=5, 6 buckets)");
  CHECK(linear.invalid_reason(-9) == "distance -9 is invalid: expected >= 0, -1 (padding) or -2 (special)");
  CHECK(directed.invalid_reason(2) == "a directed bucketing needs bucket(up, down)");
  CHECK(directed.invalid_reason(1, 2).empty());
  CHECK(directed.invalid_reason(-1, -1).empty());
  CHECK(directed.invalid_reason(-1, 2) ==
        "directed pair (-1, 2) is invalid: a padding or special pair has up == down (-1 or -2)");
  CHECK(linear.invalid_reason(1, 2) == "bucket(up, down) needs a directed bucketing, this one is linear (M=5, 6 buckets)");
  // bucket() throws exactly the reason, under its own name.
  CHECK_THROWS_WITH(linear.bucket(-9), "Bucketing::bucket: " + linear.invalid_reason(-9));
  CHECK_THROWS_WITH(directed.bucket(-1, 2), "Bucketing::bucket: " + directed.invalid_reason(-1, 2));
}

TEST_CASE("a wide distance that a cast to int would make -1 is an error, not padding", "[bucketing][errors]") {
  // -2^32 - 1 is -1 in its low 32 bits.
  RowMajorMatrix<std::int64_t> dist(1, 2), up(1, 1), down(1, 1);
  dist << 1, -4294967297LL;
  RowMajorMatrix<std::int8_t> out(1, 2), dout(1, 1);
  CHECK_THROWS_WITH((bucketize<std::int64_t, std::int8_t>(Bucketing::linear(5), dist, out)),
                    Catch::StartsWith("bucketize: distance -2147483648 is invalid") &&
                        Catch::EndsWith("(at row 0, column 1)"));
  up << -4294967297LL;
  down << -4294967297LL;
  CHECK_THROWS_WITH((bucketize_directed<std::int64_t, std::int8_t>(Bucketing::directed(3), up, down, dout)),
                    Catch::StartsWith("bucketize_directed: distance -2147483648 is invalid"));
}

TEST_CASE("describe() names the kind and parameters", "[bucketing]") {
  CHECK(Bucketing::linear(10).describe() == "linear (M=10, 11 buckets)");
  CHECK(Bucketing::linear(10, true).describe() == "linear (M=10, 12 buckets incl. special)");
  CHECK(Bucketing::log(8, 32).describe() == "log (M=32, B=8, E=4, 8 buckets)");
  CHECK(Bucketing::directed(3).describe() == "directed (M=3, 16 buckets)");
}

TEST_CASE("invalid distances are errors that say what is allowed", "[bucketing][errors]") {
  const Bucketing b = Bucketing::linear(5, true);
  CHECK_THROWS_WITH(b.bucket(-3), "Bucketing::bucket: distance -3 is invalid: expected >= 0, -1 (padding) or -2 (special)");
  RowMajorMatrix<std::int16_t> dist(1, 2), out(1, 2);
  dist << 2, -7;
  CHECK_THROWS_WITH((bucketize<std::int16_t, std::int16_t>(b, dist, out)),
                    Catch::StartsWith("bucketize: distance -7 is invalid"));

  RowMajorMatrix<std::int8_t> up(2, 2), down(2, 2), dout(2, 2);
  up << 0, -1, 1, 2;
  down << 0, 3, 1, 2;
  CHECK_THROWS_WITH((bucketize_directed<std::int8_t, std::int8_t>(Bucketing::directed(3), up, down, dout)),
                    Catch::Contains("directed pair (-1, 3) is invalid") && Catch::Contains("(at row 0, column 1)"));
  CHECK_THROWS_WITH((bucketize<std::int8_t, std::int8_t>(Bucketing::directed(3), up, dout)),
                    "bucketize: directed bucketing needs up and down distances (use bucketize_directed)");
  CHECK_THROWS_WITH((bucketize_directed<std::int8_t, std::int8_t>(Bucketing::linear(3), up, up, dout)),
                    "bucketize_directed: needs a directed bucketing, got linear (M=3, 4 buckets)");
  RowMajorMatrix<std::int8_t> wrong(2, 3);
  CHECK_THROWS_WITH((bucketize<std::int8_t, std::int8_t>(b, up, wrong)), "bucketize: 'buckets' is 2x3, expected 2x2 like the distances");
}

TEMPLATE_TEST_CASE("bucketize maps every input width to int8 and int16 buckets", "[bucketing]", std::int8_t,
                   std::int16_t, std::int32_t) {
  const Bucketing lin = Bucketing::linear(126, true);
  const Bucketing lg = Bucketing::log(8, 32, 4, true);
  RowMajorMatrix<TestType> dist(1, 8);
  dist << 0, 1, 20, 126, 127, -1, -2, 5;
  if (sizeof(TestType) > 1) dist(0, 7) = static_cast<TestType>(5000);
  RowMajorMatrix<std::int8_t> b8(1, 8);
  RowMajorMatrix<std::int16_t> b16(1, 8);
  bucketize<TestType, std::int8_t>(lin, dist, b8);
  bucketize<TestType, std::int16_t>(lin, dist, b16);
  for (int c = 0; c < 8; ++c) {
    CAPTURE(c);
    CHECK(+b8(0, c) == lin.bucket(static_cast<int>(dist(0, c))));
    CHECK(b16(0, c) == lin.bucket(static_cast<int>(dist(0, c))));
  }
  CHECK(+b8(0, 4) == 126);   // saturated int8 distance 127 -> last bucket
  CHECK(+b8(0, 6) == 127);   // the special bucket is 127 and still fits int8
  bucketize<TestType, std::int8_t>(lg, dist, b8);
  for (int c = 0; c < 8; ++c) CHECK(+b8(0, c) == lg.bucket(static_cast<int>(dist(0, c))));
  CHECK(+b8(0, 7) == (sizeof(TestType) > 1 ? 7 : 4));  // 5000, or 5 in int8
}

TEST_CASE("bucketize over a real sentence's batch block equals bucket() per cell", "[bucketing][tree]") {
  std::mt19937 rng(40);
  const std::vector<DependencyTree> trees{DependencyTree(kEwtHeads, Structure::Tree, "ewt-dev"),
                                          DependencyTree(synattn_test::random_recursive_heads(17, rng)),
                                          DependencyTree(std::vector<int>{})};
  const Index n = 40;
  RowMajorMatrix<std::int8_t> dist(3 * n, n), up(3 * n, n), down(3 * n, n);
  batch_distances<std::int8_t>(trees, dist);
  batch_directed_distances<std::int8_t>(trees, up, down);
  REQUIRE(dist.maxCoeff() >= 12);  // the real tree reaches past every M below
  const auto ntokens = [](const std::vector<int>& m) { return static_cast<Index>(m.size()); };

  // The same sentences at token level: specials at both ends and a split word.
  std::vector<std::vector<int>> maps;
  for (const auto& t : trees) {
    std::vector<int> m{-1};
    for (int w = 0; w < t.size(); ++w) {
      m.push_back(w);
      if (w % 7 == 3) m.push_back(w);
    }
    m.push_back(-1);
    maps.push_back(m);
  }
  const Index nt = ntokens(maps[0]);
  RowMajorMatrix<std::int8_t> tdist(3 * nt, nt), tup(3 * nt, nt), tdown(3 * nt, nt);
  batch_token_distances<std::int8_t>(trees, maps, tdist);
  batch_token_directed_distances<std::int8_t>(trees, maps, tup, tdown);

  SECTION("linear and log") {
    for (const Bucketing& b : {Bucketing::linear(10, true), Bucketing::linear(3, true), Bucketing::log(8, 32, 4, true),
                               Bucketing::log(16, 12, 3, true)}) {
      CAPTURE(b.describe());
      for (const auto* block : {&dist, &tdist}) {
        RowMajorMatrix<std::int8_t> got(block->rows(), block->cols());
        bucketize<std::int8_t, std::int8_t>(b, *block, got);
        for (Index r = 0; r < block->rows(); ++r)
          for (Index c = 0; c < block->cols(); ++c) REQUIRE(+got(r, c) == b.bucket((*block)(r, c)));
      }
    }
  }
  SECTION("directed") {
    for (const Bucketing& b : {Bucketing::directed(3, true), Bucketing::directed(10, true)}) {
      CAPTURE(b.describe());
      const std::vector<std::pair<const RowMajorMatrix<std::int8_t>*, const RowMajorMatrix<std::int8_t>*>> blocks{
          {&up, &down}, {&tup, &tdown}};
      for (const auto& ud : blocks) {
        RowMajorMatrix<std::int16_t> got(ud.first->rows(), ud.first->cols());
        bucketize_directed<std::int8_t, std::int16_t>(b, *ud.first, *ud.second, got);
        for (Index r = 0; r < got.rows(); ++r)
          for (Index c = 0; c < got.cols(); ++c)
            REQUIRE(got(r, c) == b.bucket((*ud.first)(r, c), (*ud.second)(r, c)));
      }
    }
  }
}

TEST_CASE("bucketize reads and writes through outer strides", "[bucketing]") {
  const DependencyTree tree(kEwtHeads);
  RowMajorMatrix<std::int16_t> dist = pairwise_distances<std::int16_t>(tree);
  RowMajorMatrix<std::int8_t> big = RowMajorMatrix<std::int8_t>::Constant(50, 50, 99);
  const Bucketing b = Bucketing::log(8, 32);
  bucketize<std::int16_t, std::int8_t>(b, dist.block(5, 5, 30, 30), big.block(2, 3, 30, 30));
  for (Index r = 0; r < 30; ++r)
    for (Index c = 0; c < 30; ++c) REQUIRE(+big(2 + r, 3 + c) == b.bucket(dist(5 + r, 5 + c)));
  CHECK(+big(1, 3) == 99);
  CHECK(+big(2, 33) == 99);
}

// ---------------------------------------------------------------------------
// Regression tests for defects found in review.
// ---------------------------------------------------------------------------

TEST_CASE("a negative exact other than -1 is rejected, not taken as the default", "[bucketing][errors][regression]") {
  CHECK_THROWS_WITH(Bucketing::log(8, 32, -2), Catch::Contains("exact"));
  CHECK_THROWS_AS(Bucketing::log(8, 32, -100), Error);
}

TEST_CASE("bucket() refuses the wrong arity for the kind instead of a wrong index", "[bucketing][errors][regression]") {
  // linear(10) has 11 buckets; the directed formula gives 2 * 11 + 3 = 25.
  CHECK_THROWS_AS(Bucketing::linear(10).bucket(2, 3), Error);
  CHECK_THROWS_AS(Bucketing::log(8, 32).bucket(2, 3), Error);
  // directed(3).bucket(d) silently returns the last bucket (15).
  CHECK_THROWS_AS(Bucketing::directed(3).bucket(2), Error);
}

TEST_CASE("bucketize errors on bad distances name the cell", "[bucketing][errors][regression]") {
  RowMajorMatrix<std::int8_t> dist(2, 2), out(2, 2);
  dist << 0, 1, 2, -2;
  CHECK_THROWS_WITH((bucketize<std::int8_t, std::int8_t>(Bucketing::linear(5), dist, out)),
                    Catch::Contains("special bucket is not enabled") && Catch::Contains("row 1, column 1"));
  dist(1, 1) = -5;
  CHECK_THROWS_WITH((bucketize<std::int8_t, std::int8_t>(Bucketing::linear(5, true), dist, out)),
                    Catch::Contains("distance -5 is invalid") && Catch::Contains("row 1, column 1"));
  CHECK_THROWS_WITH((bucketize_directed<std::int8_t, std::int8_t>(Bucketing::directed(3), dist, dist, out)),
                    Catch::Contains("row 1, column 1"));
}

TEST_CASE("bucketize_directed names 'down' when its shape is wrong", "[bucketing][errors][regression]") {
  RowMajorMatrix<std::int8_t> up(2, 2), down(3, 2), out(2, 2);
  up.setZero();
  down.setZero();
  CHECK_THROWS_WITH((bucketize_directed<std::int8_t, std::int8_t>(Bucketing::directed(3), up, down, out)),
                    Catch::Contains("down"));
}

TEST_CASE("make_bucket_batch gives the five-statement path's buckets and lengths in one call", "[bucketing][batch]") {
  std::mt19937 rng(17);
  std::vector<DependencyTree> trees;
  for (int n : {7, 1, 12, 0, 30})
    trees.push_back(DependencyTree::from_heads(synattn_test::random_recursive_heads(n, rng),
                                               HeadConvention::ZeroBasedRootMinusOne));
  for (const Bucketing& bucketing : {Bucketing::linear(10), Bucketing::log(8, 16), Bucketing::directed(4)}) {
    INFO(bucketing.describe());
    const BucketBatch got = make_bucket_batch(trees, bucketing);
    RowMajorMatrix<std::int8_t> want;
    std::vector<int> lengths;
    if (bucketing.kind() == BucketKind::Directed) {
      const auto d = make_directed_distance_batch<std::int8_t>(trees, -1, bucketing.cross_distance());
      want.resize(d.up.rows(), d.up.cols());
      bucketize_directed<std::int8_t, std::int8_t>(bucketing, d.up, d.down, want);
      lengths = d.lengths;
    } else {
      const auto d = make_distance_batch<std::int8_t>(trees, -1, bucketing.cross_distance());
      want.resize(d.distances.rows(), d.distances.cols());
      bucketize<std::int8_t, std::int8_t>(bucketing, d.distances, want);
      lengths = d.lengths;
    }
    CHECK(got.n_max == 30);
    CHECK(got.lengths == lengths);
    CHECK(got.buckets == want);
    // Padding is -1, every pair within a sentence has a bucket.
    for (std::size_t b = 0; b < trees.size(); ++b)
      for (int i = 0; i < got.n_max; ++i)
        for (int j = 0; j < got.n_max; ++j) {
          const bool live = i < lengths[b] && j < lengths[b];
          const int v = got.buckets(static_cast<Eigen::Index>(b) * got.n_max + i, j);
          if (live != (v >= 0)) FAIL("sentence " << b << " pair (" << i << ", " << j << ") = " << v);
        }
  }
}

TEST_CASE("make_bucket_batch: sentences past int8 distances, packed forests and a too small n_max", "[bucketing][batch]") {
  // A 300-word chain: distances up to 299, which int8 distances cannot hold.
  const std::vector<DependencyTree> chain = {
      DependencyTree::from_heads(synattn_test::path_heads(300, 0), HeadConvention::ZeroBasedRootMinusOne)};
  const BucketBatch b = make_bucket_batch(chain, Bucketing::linear(10));
  CHECK(+b.buckets(0, 299) == 10);
  CHECK(+b.buckets(0, 5) == 5);
  // A forest of two sentences: cross-tree pairs land in the last bucket.
  std::mt19937 rng(5);
  std::vector<DependencyTree> two = {
      DependencyTree::from_heads(synattn_test::random_recursive_heads(4, rng), HeadConvention::ZeroBasedRootMinusOne),
      DependencyTree::from_heads(synattn_test::random_recursive_heads(3, rng), HeadConvention::ZeroBasedRootMinusOne)};
  const std::vector<DependencyTree> forest = pack_sequences(two, 7);
  REQUIRE(forest.size() == 1);
  const BucketBatch f = make_bucket_batch(forest, Bucketing::linear(6));
  CHECK(+f.buckets(0, 5) == 6);
  CHECK(+f.buckets(5, 0) == 6);
  CHECK_THROWS_WITH(make_bucket_batch(two, Bucketing::linear(6), 3), Catch::Contains("4 words"));
}
