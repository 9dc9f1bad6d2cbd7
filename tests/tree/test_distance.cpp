#include <catch2/catch.hpp>

#include <synattn/tree/distance.hpp>
#include <synattn/tree/lca.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>

#include "support/random_trees.hpp"

using namespace synattn;
using synattn_test::bfs_distances;

namespace {

enum class Shape { Recursive, Projective, Path };

std::vector<int> make_heads(Shape shape, int n, std::mt19937& rng) {
  switch (shape) {
    case Shape::Recursive: return synattn_test::random_recursive_heads(n, rng);
    case Shape::Projective: return synattn_test::random_projective_heads(n, rng);
    case Shape::Path: return synattn_test::path_heads(n, static_cast<int>(rng() % static_cast<unsigned>(n)));
  }
  return {};
}

template <class T>
void expect_matches_bfs(const DependencyTree& tree, long long cross) {
  const auto want = bfs_distances(tree.heads());
  RowMajorMatrix<T> got(tree.size(), tree.size());
  pairwise_distances<T>(tree, got, cross);
  const long long top = std::numeric_limits<T>::max();
  for (int i = 0; i < tree.size(); ++i)
    for (int j = 0; j < tree.size(); ++j) {
      const long long w = want[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      const long long expect = w < 0 ? std::min(cross, top) : std::min(w, top);
      if (got(i, j) != expect) {
        FAIL("n=" << tree.size() << " pair (" << i << ", " << j << "): got " << +got(i, j)
                  << ", BFS says " << expect);
      }
    }
}

}  // namespace

TEST_CASE("all-pairs distances equal BFS on random trees of every shape", "[distance]") {
  const Shape shape = GENERATE(Shape::Recursive, Shape::Projective, Shape::Path);
  const int n = GENERATE(1, 2, 3, 7, 31, 64, 200);
  std::mt19937 rng(static_cast<unsigned>(n * 17 + static_cast<int>(shape)));
  for (int rep = 0; rep < 3; ++rep) {
    const DependencyTree tree(make_heads(shape, n, rng));
    CAPTURE(n, static_cast<int>(shape), rep, tree.is_projective());
    expect_matches_bfs<std::int32_t>(tree, 0);
    expect_matches_bfs<std::int16_t>(tree, 0);
    // int8 saturates at 127 on deep trees (paths of 200 words).
    expect_matches_bfs<std::int8_t>(tree, 0);
  }
}

TEST_CASE("projective trees are recognised as such", "[distance]") {
  std::mt19937 rng(5);
  for (int rep = 0; rep < 20; ++rep) {
    CHECK(DependencyTree(synattn_test::random_projective_heads(40, rng)).is_projective());
  }
  // 0 -> 2 and 1 -> 3 cross: word 2's subtree {2, 0} has a gap at 1.
  CHECK_FALSE(DependencyTree({2, 3, -1, 2}).is_projective());
}

TEST_CASE("forests give cross_distance between trees and tree distances within", "[distance]") {
  std::mt19937 rng(11);
  std::vector<DependencyTree> parts;
  for (int len : {5, 1, 9, 3}) parts.emplace_back(synattn_test::random_recursive_heads(len, rng));
  const DependencyTree forest = DependencyTree::pack(parts);
  REQUIRE(forest.num_trees() == 4);
  SECTION("explicit cross distance") { expect_matches_bfs<std::int32_t>(forest, 42); }
  SECTION("default cross distance saturates at the type's maximum") {
    expect_matches_bfs<std::int8_t>(forest, 127);
    RowMajorMatrix<std::int8_t> d(forest.size(), forest.size());
    pairwise_distances<std::int8_t>(forest, d);
    CHECK(+d(0, 5) == 127);
    CHECK(+d(5, 0) == 127);
  }
  SECTION("interleaved (non-contiguous) trees still work") {
    const DependencyTree mixed({-1, -1, 0, 1, 2, 3}, Structure::Forest);
    expect_matches_bfs<std::int32_t>(mixed, 99);
  }
}

TEST_CASE("distances are written into caller storage with an outer stride", "[distance]") {
  std::mt19937 rng(3);
  const DependencyTree tree(synattn_test::random_recursive_heads(12, rng));
  RowMajorMatrix<std::int8_t> big = RowMajorMatrix<std::int8_t>::Constant(20, 30, 99);
  pairwise_distances<std::int8_t>(tree, big.block(4, 7, 12, 12));
  const auto want = bfs_distances(tree.heads());
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 12; ++j) REQUIRE(+big(4 + i, 7 + j) == want[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)]);
  // Nothing outside the block was touched.
  CHECK(+big(3, 7) == 99);
  CHECK(+big(4, 6) == 99);
  CHECK(+big(16, 7) == 99);
  CHECK(+big(4, 19) == 99);

  SECTION("packed forests too, with spans shorter and longer than a vector chunk") {
    std::vector<DependencyTree> parts;
    for (int len : {3, 17, 1, 40, 16, 5}) parts.emplace_back(synattn_test::random_projective_heads(len, rng));
    const DependencyTree forest = DependencyTree::pack(parts);
    const int n = forest.size();
    RowMajorMatrix<std::int8_t> wide = RowMajorMatrix<std::int8_t>::Constant(n + 4, n + 21, 99);
    pairwise_distances<std::int8_t>(forest, wide.block(2, 3, n, n), 50);
    const auto bfs = bfs_distances(forest.heads());
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        const int w = bfs[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
        REQUIRE(+wide(2 + i, 3 + j) == (w < 0 ? 50 : w));
      }
      for (int j = n + 3; j < n + 21; ++j) REQUIRE(+wide(2 + i, j) == 99);
      for (int j = 0; j < 3; ++j) REQUIRE(+wide(2 + i, j) == 99);
    }
  }
}

TEST_CASE("directed distances: up + down == dist, and they follow the LCA", "[distance][directed]") {
  const Shape shape = GENERATE(Shape::Recursive, Shape::Projective, Shape::Path);
  const int n = GENERATE(1, 5, 33, 150);
  std::mt19937 rng(static_cast<unsigned>(n + 1000 * static_cast<int>(shape)));
  const DependencyTree tree(make_heads(shape, n, rng));
  const LcaIndex lca(tree);
  RowMajorMatrix<std::int32_t> up(n, n), down(n, n), dist(n, n);
  directed_distances<std::int32_t>(tree, up, down);
  pairwise_distances<std::int32_t>(tree, dist);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const int a = lca.lca(i, j);
      REQUIRE(up(i, j) == tree.depth()[static_cast<std::size_t>(i)] - tree.depth()[static_cast<std::size_t>(a)]);
      REQUIRE(down(i, j) == tree.depth()[static_cast<std::size_t>(j)] - tree.depth()[static_cast<std::size_t>(a)]);
      REQUIRE(up(i, j) + down(i, j) == dist(i, j));
    }
  SECTION("int8 output saturates each part at 127") {
    RowMajorMatrix<std::int8_t> up8(n, n), down8(n, n);
    directed_distances<std::int8_t>(tree, up8, down8);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        REQUIRE(+up8(i, j) == std::min(up(i, j), 127));
        REQUIRE(+down8(i, j) == std::min(down(i, j), 127));
      }
  }
}

TEST_CASE("directed cells of head, child and sibling", "[distance][directed]") {
  // 1 is the root; 0 and 2 are its children; 3 is a child of 2.
  const DependencyTree tree({1, -1, 1, 2});
  RowMajorMatrix<std::int8_t> up(4, 4), down(4, 4);
  directed_distances<std::int8_t>(tree, up, down);
  CHECK((+up(0, 1) == 1 && +down(0, 1) == 0));  // head of 0
  CHECK((+up(1, 0) == 0 && +down(1, 0) == 1));  // child of 1
  CHECK((+up(0, 2) == 1 && +down(0, 2) == 1));  // sibling
  CHECK((+up(3, 0) == 2 && +down(3, 0) == 1));
  CHECK((+up(0, 3) == 1 && +down(0, 3) == 2));
}

TEST_CASE("directed forests put (cross, cross) between trees", "[distance][directed]") {
  const DependencyTree forest({-1, 0, -1, 2, 3}, Structure::Forest);
  RowMajorMatrix<std::int8_t> up(5, 5), down(5, 5);
  directed_distances<std::int8_t>(forest, up, down, 10);
  CHECK((+up(1, 3) == 10 && +down(1, 3) == 10));
  CHECK((+up(4, 2) == 2 && +down(4, 2) == 0));
}

TEST_CASE("LCA queries agree with a naive walk", "[lca]") {
  std::mt19937 rng(77);
  for (int n : {1, 2, 10, 100}) {
    const DependencyTree tree(synattn_test::random_recursive_heads(n, rng));
    const LcaIndex index(tree);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) REQUIRE(index.lca(i, j) == synattn_test::naive_lca(tree.heads(), i, j));
  }
  const DependencyTree forest({-1, 0, -1, 2}, Structure::Forest);
  const LcaIndex findex(forest);
  CHECK(findex.lca(1, 3) == -1);
  CHECK(findex.distance(1, 3) == -1);
  CHECK(findex.distance(3, 2) == 1);
  CHECK_THROWS_WITH(findex.lca(0, 4), Catch::Contains("word v = 4 out of range [0, 4)"));
}

TEST_CASE("distance functions reject wrongly shaped outputs", "[distance][errors]") {
  const DependencyTree tree({-1, 0, 0});
  RowMajorMatrix<std::int8_t> small(2, 3), ok(3, 3);
  CHECK_THROWS_WITH(pairwise_distances<std::int8_t>(tree, small),
                    Catch::Contains("output 'out' is 2x3, expected 3x3"));
  CHECK_THROWS_WITH(directed_distances<std::int8_t>(tree, ok, small),
                    Catch::Contains("output 'down' is 2x3, expected 3x3"));
  CHECK_THROWS_WITH(pairwise_distances<std::int8_t>(tree, ok, -3), Catch::Contains("cross_distance"));
}

TEST_CASE("an empty tree gives an empty matrix", "[distance]") {
  const DependencyTree empty(std::vector<int>{});
  RowMajorMatrix<std::int8_t> d(0, 0);
  pairwise_distances<std::int8_t>(empty, d);
  CHECK(pairwise_distances<std::int8_t>(empty).size() == 0);
}

namespace {

// A chain in a random word order: deep (height n-1) and, for n > 3, almost
// surely non-projective, so rows go through the multi-interval fix-ups.
std::vector<int> shuffled_chain_heads(int n, std::mt19937& rng) {
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> heads(static_cast<std::size_t>(n), -1);
  for (int k = 1; k < n; ++k)
    heads[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = order[static_cast<std::size_t>(k - 1)];
  return heads;
}

template <class T>
void expect_directed_matches_lca(const DependencyTree& tree, long long cross) {
  const auto bfs = bfs_distances(tree.heads());
  const int n = tree.size();
  RowMajorMatrix<T> up(n, n), down(n, n);
  directed_distances<T>(tree, up, down, cross);
  const long long top = std::numeric_limits<T>::max();
  const LcaIndex lca(tree);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const int a = lca.lca(i, j);
      long long want_up = std::min(cross, top), want_down = want_up;
      if (a >= 0) {
        want_up = std::min<long long>(tree.depth()[static_cast<std::size_t>(i)] - tree.depth()[static_cast<std::size_t>(a)], top);
        want_down = std::min<long long>(tree.depth()[static_cast<std::size_t>(j)] - tree.depth()[static_cast<std::size_t>(a)], top);
      }
      if (up(i, j) != want_up || down(i, j) != want_down)
        FAIL("n=" << n << " pair (" << i << ", " << j << "): got " << +up(i, j) << ":" << +down(i, j)
                  << ", want " << want_up << ":" << want_down);
    }
}

}  // namespace

TEST_CASE("deep trees saturate exactly where BFS passes the type's maximum", "[distance][deep]") {
  std::mt19937 rng(2024);
  SECTION("chains hung from the end, the middle and a random word, in int8") {
    for (int root : {0, 150, 299, static_cast<int>(rng() % 300)}) {
      CAPTURE(root);
      expect_matches_bfs<std::int8_t>(DependencyTree(synattn_test::path_heads(300, root)), 0);
    }
  }
  SECTION("non-projective deep chains") {
    for (int rep = 0; rep < 3; ++rep) {
      const DependencyTree tree(shuffled_chain_heads(257, rng));
      REQUIRE_FALSE(tree.is_projective());
      expect_matches_bfs<std::int8_t>(tree, 5);
      expect_directed_matches_lca<std::int8_t>(tree, 5);
    }
  }
  SECTION("forests with a deep tree: packed and interleaved, cross below and at the maximum") {
    std::vector<DependencyTree> parts;
    parts.emplace_back(synattn_test::random_recursive_heads(20, rng));
    parts.emplace_back(synattn_test::path_heads(200, 37));
    parts.emplace_back(synattn_test::random_projective_heads(3, rng));
    parts.emplace_back(shuffled_chain_heads(140, rng));
    const DependencyTree packed = DependencyTree::pack(parts);
    // The same forest with its words interleaved: trees are not contiguous.
    const int n = packed.size();
    std::vector<int> perm(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) perm[static_cast<std::size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int> mixed_heads(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const int h = packed.head(i);
      mixed_heads[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = h < 0 ? -1 : perm[static_cast<std::size_t>(h)];
    }
    const DependencyTree mixed(mixed_heads, Structure::Forest);
    for (const DependencyTree* forest : {&packed, &mixed}) {
      for (long long cross : {9LL, 127LL, 1000LL}) {
        CAPTURE(forest == &packed, cross);
        expect_matches_bfs<std::int8_t>(*forest, cross);
        expect_directed_matches_lca<std::int8_t>(*forest, cross);
      }
    }
  }
  SECTION("int16 agrees with int32 wherever int32 is below 32767") {
    const DependencyTree tree(shuffled_chain_heads(400, rng));
    RowMajorMatrix<std::int16_t> d16(400, 400);
    RowMajorMatrix<std::int32_t> d32(400, 400);
    pairwise_distances<std::int16_t>(tree, d16);
    pairwise_distances<std::int32_t>(tree, d32);
    CHECK((d16.cast<std::int32_t>().array() == d32.array()).all());
  }
}
