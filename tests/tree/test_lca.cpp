// LcaIndex owns what it needs: it must stay correct (and memory-safe) when
// the tree it was built from is reassigned or destroyed. Small on purpose,
// so it builds quickly under the sanitizer preset.
#include <catch2/catch.hpp>

#include <synattn/tree/lca.hpp>

#include <memory>
#include <random>

#include "support/random_trees.hpp"

using namespace synattn;

TEST_CASE("an LcaIndex keeps answering for its own tree after the tree is reassigned", "[lca]") {
  DependencyTree tree({1, -1, 1});  // 0 <- 1 -> 2
  const LcaIndex index(tree);
  tree = DependencyTree(synattn_test::path_heads(200, 0));  // a 200-word chain
  CHECK(index.size() == 3);
  CHECK(index.lca(0, 2) == 1);
  CHECK(index.distance(0, 2) == 2);
  CHECK(index.distance(2, 1) == 1);
  // Words of the new tree are out of range for the index, not read out of
  // bounds.
  CHECK_THROWS_WITH(index.lca(0, 150), "LcaIndex: word v = 150 out of range [0, 3)");
  CHECK_THROWS_AS(index.distance(199, 0), Error);
}

TEST_CASE("an LcaIndex outlives the tree it was built from", "[lca]") {
  std::mt19937 rng(4);
  const std::vector<int> heads = synattn_test::random_recursive_heads(60, rng);
  auto tree = std::make_unique<DependencyTree>(heads);
  const LcaIndex index(*tree);
  tree.reset();
  for (int i = 0; i < 60; ++i)
    for (int j = 0; j < 60; ++j) REQUIRE(index.lca(i, j) == synattn_test::naive_lca(heads, i, j));
}

TEST_CASE("a default-constructed LcaIndex refuses queries", "[lca]") {
  const LcaIndex index;
  CHECK(index.size() == 0);
  CHECK_THROWS_WITH(index.lca(0, 0), "LcaIndex: word u = 0 out of range [0, 0)");
}
