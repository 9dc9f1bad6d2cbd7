#include <catch2/catch.hpp>

#include <synattn/tree/stats.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/random_trees.hpp"

using namespace synattn;
using Catch::Matchers::WithinAbs;

namespace {

// Reference counts by BFS over every ordered pair i != j of each tree.
std::vector<std::int64_t> bfs_histogram(const std::vector<DependencyTree>& trees) {
  std::vector<std::int64_t> counts;
  for (const auto& t : trees) {
    const auto dist = synattn_test::bfs_distances(t.heads());
    for (int i = 0; i < t.size(); ++i)
      for (int j = 0; j < t.size(); ++j) {
        const int d = dist[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
        if (i == j || d < 0) continue;
        if (counts.size() <= static_cast<std::size_t>(d)) counts.resize(static_cast<std::size_t>(d) + 1, 0);
        ++counts[static_cast<std::size_t>(d)];
      }
  }
  return counts;
}

}  // namespace

TEST_CASE("the histogram counts ordered pairs on hand-made trees", "[stats]") {
  DistanceHistogram hist;
  CHECK(hist.counts().empty());
  CHECK(hist.pairs() == 0);
  CHECK(hist.max_distance() == -1);
  CHECK(hist.mean_length() == 0.0);

  // A path 0 - 1 - 2: (0,1) (1,0) (1,2) (2,1) at 1; (0,2) (2,0) at 2.
  hist.add(DependencyTree({-1, 0, 1}));
  CHECK(hist.counts() == std::vector<std::int64_t>{0, 4, 2});
  // A star of 4 words: 6 ordered pairs at 1 (with the centre), 6 at 2.
  hist.add(DependencyTree({-1, 0, 0, 0}));
  CHECK(hist.counts() == std::vector<std::int64_t>{0, 10, 8});
  CHECK(hist.pairs() == 18);
  CHECK(hist.count(1) == 10);
  CHECK(hist.count(7) == 0);
  CHECK(hist.count(-1) == 0);
  CHECK(hist.max_distance() == 2);
  CHECK(hist.sentences() == 2);
  CHECK(hist.words() == 7);
  CHECK(hist.longest_sentence() == 4);
  CHECK_THAT(hist.mean_length(), WithinAbs(3.5, 1e-12));
  CHECK_THAT(hist.mean_distance(), WithinAbs(26.0 / 18.0, 1e-12));

  SECTION("one-word and empty sentences add no pairs but count as sentences") {
    hist.add(DependencyTree({-1}));
    hist.add(DependencyTree(std::vector<int>{}));
    CHECK(hist.pairs() == 18);
    CHECK(hist.sentences() == 4);
    CHECK(hist.words() == 8);
    CHECK_THAT(hist.mean_length(), WithinAbs(2.0, 1e-12));
  }
  SECTION("a forest counts each tree as a sentence and skips cross-tree pairs") {
    DistanceHistogram f;
    f.add(DependencyTree({-1, 0, -1, 2, 3}, Structure::Forest));
    CHECK(f.counts() == std::vector<std::int64_t>{0, 6, 2});
    CHECK(f.sentences() == 2);
    CHECK_THAT(f.mean_length(), WithinAbs(2.5, 1e-12));
  }
}

TEST_CASE("distances are exact beyond int8 and int16 ranges", "[stats]") {
  DistanceHistogram hist;
  const int n = 400;  // a path hung from one end: distances up to 399
  hist.add(DependencyTree(synattn_test::path_heads(n, 0)));
  REQUIRE(hist.max_distance() == n - 1);
  for (int d = 1; d < n; ++d) REQUIRE(hist.count(d) == 2 * (n - d));
  CHECK(hist.pairs() == static_cast<std::int64_t>(n) * (n - 1));
}

TEST_CASE("suggest_max_distance finds the smallest M covering a share of pairs", "[stats]") {
  // A 21-word path: 2 (21 - d) ordered pairs at distance d = 1..20, 420 in
  // all; pairs at distance <= M: 42 M - M (M + 1).
  DistanceHistogram hist;
  hist.add(DependencyTree(synattn_test::path_heads(21, 0)));
  REQUIRE(hist.pairs() == 420);
  SECTION("95 % and 99 %") {
    // M = 15 covers 390 < 399; M = 16 covers 400.
    CHECK(suggest_max_distance(hist, 0.95) == 16);
    // M = 18 covers 414 < 415.8; M = 19 covers 418.
    CHECK(suggest_max_distance(hist, 0.99) == 19);
    CHECK_THAT(coverage(hist, 16), WithinAbs(400.0 / 420.0, 1e-12));
    CHECK_THAT(coverage(hist, 15), WithinAbs(390.0 / 420.0, 1e-12));
  }
  SECTION("a share met exactly is met at that distance") {
    // M = 6 covers exactly 210 = 50 %.
    CHECK(suggest_max_distance(hist, 0.5) == 6);
    CHECK_THAT(coverage(hist, 6), WithinAbs(0.5, 1e-15));
    // 0.2 of the 90 pairs of a 10-word star: exactly the 18 at distance 1.
    DistanceHistogram star;
    star.add(DependencyTree({-1, 0, 0, 0, 0, 0, 0, 0, 0, 0}));  // 18 at 1, 72 at 2
    REQUIRE(star.pairs() == 90);
    CHECK(suggest_max_distance(star, 0.2) == 1);
    CHECK(suggest_max_distance(star, 0.21) == 2);
    // A 40-word path: M = 13 covers 858 of 1560 pairs, exactly 55 %; but
    // 0.55 * 1560 is 858.0000000000001 in double, which must not push it to 14.
    DistanceHistogram path40;
    path40.add(DependencyTree(synattn_test::path_heads(40, 0)));
    REQUIRE(path40.pairs() == 1560);
    CHECK(suggest_max_distance(path40, 0.55) == 13);
    CHECK(suggest_max_distance(path40, 0.551) == 14);
  }
  SECTION("the whole histogram and the extremes") {
    CHECK(suggest_max_distance(hist, 1.0) == 20);
    CHECK(suggest_max_distance(hist, 1e-9) == 1);
    CHECK(coverage(hist, 20) == 1.0);
    CHECK(coverage(hist, 1000) == 1.0);
    CHECK(coverage(hist, 0) == 0.0);
    CHECK(coverage(hist, -3) == 0.0);
    CHECK(coverage(DistanceHistogram(), 5) == 0.0);
  }
  SECTION("bad shares and empty histograms are errors") {
    CHECK_THROWS_WITH(suggest_max_distance(hist, 0.0), Catch::StartsWith("suggest_max_distance: share must be in (0, 1], got 0"));
    CHECK_THROWS_WITH(suggest_max_distance(hist, 1.5), Catch::Contains("got 1.5"));
    CHECK_THROWS_AS(suggest_max_distance(hist, -0.1), Error);
    CHECK_THROWS_AS(suggest_max_distance(hist, std::numeric_limits<double>::quiet_NaN()), Error);
    DistanceHistogram singles;
    singles.add(DependencyTree({-1}));
    CHECK_THROWS_WITH(suggest_max_distance(singles, 0.95),
                      "suggest_max_distance: the histogram has no pairs (add trees of 2 or more words)");
  }
}

TEST_CASE("adding trees one at a time equals BFS over all, a packed forest and merged halves", "[stats]") {
  std::mt19937 rng(2024);
  std::vector<DependencyTree> trees;
  std::uniform_int_distribution<int> length(0, 45);
  for (int k = 0; k < 60; ++k) {
    const int n = length(rng);
    trees.emplace_back(k % 3 ? synattn_test::random_recursive_heads(n, rng) : synattn_test::random_projective_heads(n, rng));
  }
  // Longer first, then shorter: the scratch matrix is reused at smaller sizes.
  trees.emplace_back(synattn_test::path_heads(90, 30));
  trees.emplace_back(synattn_test::random_recursive_heads(3, rng));

  DistanceHistogram streamed, first, second, packed;
  long long words = 0;
  for (std::size_t k = 0; k < trees.size(); ++k) {
    streamed.add(trees[k]);
    (k % 2 ? second : first).add(trees[k]);
    words += trees[k].size();
  }
  CHECK(streamed.counts() == bfs_histogram(trees));
  CHECK(streamed.sentences() == static_cast<std::int64_t>(trees.size()));
  CHECK(streamed.words() == words);
  CHECK_THAT(streamed.mean_length(), WithinAbs(static_cast<double>(words) / static_cast<double>(trees.size()), 1e-12));

  first.merge(second);
  CHECK(first.counts() == streamed.counts());
  CHECK(first.sentences() == streamed.sentences());
  CHECK(first.words() == streamed.words());
  CHECK(first.longest_sentence() == 90);

  // All at once as one forest: empty trees add no root, so count the rest.
  packed.add(DependencyTree::pack(trees));
  CHECK(packed.counts() == streamed.counts());
  long long nonempty = 0;
  for (const auto& t : trees) nonempty += t.empty() ? 0 : 1;
  CHECK(packed.sentences() == nonempty);
  CHECK(suggest_max_distance(packed, 0.95) == suggest_max_distance(streamed, 0.95));
}
