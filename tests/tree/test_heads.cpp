#include <catch2/catch.hpp>

#include <synattn/tree/dependency_tree.hpp>
#include <synattn/tree/heads.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "support/random_trees.hpp"

using namespace synattn;

namespace {

// A forest of random trees laid out one after another (docs/math.md §1: each
// sentence contiguous).
std::vector<int> random_forest_heads(const std::vector<int>& lengths, std::mt19937& rng) {
  std::vector<int> heads;
  for (int len : lengths) {
    const int offset = static_cast<int>(heads.size());
    for (int h : synattn_test::random_recursive_heads(len, rng)) heads.push_back(h < 0 ? -1 : h + offset);
  }
  return heads;
}

// Depth by walking up (independent of DependencyTree's DFS).
int naive_depth(const std::vector<int>& heads, int w) {
  int d = 0;
  for (int h = heads[static_cast<std::size_t>(w)]; h >= 0; h = heads[static_cast<std::size_t>(h)]) ++d;
  return d;
}

bool is_ancestor_or_self(const std::vector<int>& heads, int a, int w) {
  for (int x = w; x >= 0; x = heads[static_cast<std::size_t>(x)])
    if (x == a) return true;
  return false;
}

int naive_root(const std::vector<int>& heads, int w) {
  while (heads[static_cast<std::size_t>(w)] >= 0) w = heads[static_cast<std::size_t>(w)];
  return w;
}

// Checks every accessor of `tree` against walks over its head array.
void check_accessors(const DependencyTree& tree) {
  const std::vector<int>& heads = tree.heads();
  const int n = tree.size();
  REQUIRE(static_cast<int>(tree.preorder().size()) == n);

  std::vector<int> roots;
  for (int w = 0; w < n; ++w)
    if (heads[static_cast<std::size_t>(w)] < 0) roots.push_back(w);
  REQUIRE(tree.roots() == roots);
  REQUIRE(tree.num_trees() == static_cast<int>(roots.size()));

  // preorder is a permutation and position() its inverse.
  std::vector<int> sorted = tree.preorder();
  std::sort(sorted.begin(), sorted.end());
  for (int k = 0; k < n; ++k) REQUIRE(sorted[static_cast<std::size_t>(k)] == k);
  for (int k = 0; k < n; ++k)
    REQUIRE(tree.position()[static_cast<std::size_t>(tree.preorder()[static_cast<std::size_t>(k)])] == k);

  for (int w = 0; w < n; ++w) {
    CAPTURE(w);
    REQUIRE(tree.head(w) == heads[static_cast<std::size_t>(w)]);
    REQUIRE(tree.depth()[static_cast<std::size_t>(w)] == naive_depth(heads, w));
    const int root = naive_root(heads, w);
    REQUIRE(tree.roots()[static_cast<std::size_t>(tree.tree_of()[static_cast<std::size_t>(w)])] == root);

    // The preorder range of w's subtree holds exactly its descendants.
    const int pos = tree.position()[static_cast<std::size_t>(w)];
    const int size = tree.subtree_size()[static_cast<std::size_t>(w)];
    REQUIRE(pos + size <= n);
    std::set<int> in_range(tree.preorder().begin() + pos, tree.preorder().begin() + pos + size);
    std::set<int> descendants;
    for (int v = 0; v < n; ++v)
      if (is_ancestor_or_self(heads, w, v)) descendants.insert(v);
    REQUIRE(in_range == descendants);

    // Children: exactly the words headed by w, in word order.
    std::vector<int> children(tree.children_begin(w), tree.children_end(w));
    std::vector<int> want;
    for (int v = 0; v < n; ++v)
      if (heads[static_cast<std::size_t>(v)] == w) want.push_back(v);
    REQUIRE(children == want);
  }
  // Trees come in root order in the preorder.
  for (int k = 1; k < n; ++k)
    REQUIRE(tree.tree_of()[static_cast<std::size_t>(tree.preorder()[static_cast<std::size_t>(k - 1)])] <=
            tree.tree_of()[static_cast<std::size_t>(tree.preorder()[static_cast<std::size_t>(k)])]);
}

}  // namespace

TEST_CASE("head conventions convert to and from canonical form", "[heads]") {
  // 1 is the root; 0 and 2 hang from it; 3 hangs from 2.
  const std::vector<int> canonical{1, -1, 1, 2};
  SECTION("hand-made values") {
    CHECK(from_canonical_heads(canonical, HeadConvention::ZeroBasedRootMinusOne) == canonical);
    CHECK(from_canonical_heads(canonical, HeadConvention::OneBasedRootZero) == std::vector<int>{2, 0, 2, 3});
    CHECK(from_canonical_heads(canonical, HeadConvention::RootIsSelf) == std::vector<int>{1, 1, 1, 2});
    CHECK(to_canonical_heads({2, 0, 2, 3}, HeadConvention::OneBasedRootZero) == canonical);
    CHECK(to_canonical_heads({1, 1, 1, 2}, HeadConvention::RootIsSelf) == canonical);
    CHECK(to_canonical_heads(canonical, HeadConvention::ZeroBasedRootMinusOne) == canonical);
  }
  SECTION("the empty sentence") {
    for (auto c : {HeadConvention::ZeroBasedRootMinusOne, HeadConvention::OneBasedRootZero,
                   HeadConvention::RootIsSelf}) {
      CHECK(to_canonical_heads({}, c).empty());
      CHECK(from_canonical_heads({}, c).empty());
    }
  }
}

TEST_CASE("head conventions round-trip on random trees and forests", "[heads]") {
  const auto convention = GENERATE(HeadConvention::ZeroBasedRootMinusOne, HeadConvention::OneBasedRootZero,
                                   HeadConvention::RootIsSelf);
  const int n = GENERATE(1, 2, 9, 60);
  std::mt19937 rng(static_cast<unsigned>(n * 7 + static_cast<int>(convention)));
  for (int rep = 0; rep < 5; ++rep) {
    const std::vector<int> tree = rep % 2 ? synattn_test::random_projective_heads(n, rng)
                                          : synattn_test::random_recursive_heads(n, rng);
    const std::vector<int> forest = random_forest_heads({n, 1, n / 2 + 1}, rng);
    for (const auto* heads : {&tree, &forest}) {
      const std::vector<int> other = from_canonical_heads(*heads, convention);
      CAPTURE(convention_name(convention), n, rep);
      REQUIRE(to_canonical_heads(other, convention) == *heads);
      // The converted array describes the same tree.
      const DependencyTree direct(*heads, Structure::Forest);
      const DependencyTree via = DependencyTree::from_heads(other, convention, Structure::Forest);
      REQUIRE(via.heads() == direct.heads());
      REQUIRE(via.depth() == direct.depth());
    }
  }
}

TEST_CASE("conversion rejects heads out of range for the convention, naming the word", "[heads][errors]") {
  SECTION("1-based: a head beyond n") {
    CHECK_THROWS_WITH(to_canonical_heads({0, 5, 1}, HeadConvention::OneBasedRootZero, "s1"),
                      "sentence s1: word 1: head 5 out of range [0, 3] (1-based, root = 0)");
  }
  SECTION("1-based: -1 is not a root marker there") {
    CHECK_THROWS_WITH(to_canonical_heads({-1, 1}, HeadConvention::OneBasedRootZero),
                      "word 0: head -1 out of range [0, 2] (1-based, root = 0)");
  }
  SECTION("root-is-self: -1 is out of range") {
    CHECK_THROWS_WITH(to_canonical_heads({0, -1}, HeadConvention::RootIsSelf),
                      "word 1: head -1 out of range [0, 2) (0-based, root points to itself)");
  }
  SECTION("canonical: -2 and n are out of range") {
    CHECK_THROWS_WITH(to_canonical_heads({-1, -2}, HeadConvention::ZeroBasedRootMinusOne),
                      "word 1: head -2 out of range [-1, 2) (0-based, root = -1)");
    CHECK_THROWS_WITH(to_canonical_heads({-1, 2}, HeadConvention::ZeroBasedRootMinusOne),
                      Catch::Contains("word 1: head 2 out of range [-1, 2)"));
  }
  SECTION("the error is a TreeError carrying the sentence, word and reason") {
    try {
      to_canonical_heads({0, 7, 1}, HeadConvention::OneBasedRootZero, "doc-3");
      FAIL("no exception");
    } catch (const TreeError& e) {
      CHECK(e.sentence() == "doc-3");
      CHECK(e.word() == 1);
      CHECK(e.reason() == "head 7 out of range [0, 3] (1-based, root = 0)");
    }
  }
}

TEST_CASE("validation names the sentence, the word and the problem", "[heads][errors]") {
  SECTION("head out of range (docs/math.md §1's example)") {
    std::vector<int> heads{-1, 0, 0, 0, 0, 0, 0, 12, 0};
    CHECK_THROWS_WITH(validate_heads(heads, Structure::Tree),
                      "word 7: head 12 out of range [0, 9) (root = -1)");
    heads[7] = -3;
    CHECK_THROWS_WITH(validate_heads(heads, Structure::Tree), Catch::StartsWith("word 7: head -3 out of range"));
  }
  SECTION("no root") {
    CHECK_THROWS_WITH(validate_heads({1, 2, 0}, Structure::Tree, "s"),
                      "sentence s: no root: every word has a head");
    CHECK_THROWS_WITH(validate_heads({1, 0}, Structure::Forest), Catch::Contains("no root"));
    try {
      validate_heads({1, 0}, Structure::Tree);
      FAIL("no exception");
    } catch (const TreeError& e) {
      CHECK(e.word() == -1);
    }
  }
  SECTION("several roots are an error in a tree") {
    CHECK_THROWS_WITH(validate_heads({-1, 0, -1, 2}, Structure::Tree),
                      "word 2: second root (word 0 is a root too); a tree has exactly one root");
  }
  SECTION("several roots are fine in a forest") {
    CHECK_NOTHROW(validate_heads({-1, 0, -1, 2}, Structure::Forest));
    CHECK_NOTHROW(validate_heads({-1, -1, -1}, Structure::Forest));
    CHECK(DependencyTree({-1, 0, -1, 2}, Structure::Forest).num_trees() == 2);
  }
  SECTION("self-loop") {
    CHECK_THROWS_WITH(validate_heads({-1, 1, 0}, Structure::Tree), "word 1: word is its own head (self-loop)");
  }
  SECTION("cycle: names the words on it and not the tail leading into it") {
    // 1 -> 2 -> 3 -> 4 -> 2: word 1 leads into the cycle 2 -> 3 -> 4.
    CHECK_THROWS_WITH(validate_heads({-1, 2, 3, 4, 2}, Structure::Tree),
                      "word 2: cycle through words 2 -> 3 -> 4 -> 2");
    // Entered at word 3 (from the tail 1 -> 3), reported at the smallest word on it.
    CHECK_THROWS_WITH(validate_heads({-1, 3, 4, 2, 3}, Structure::Forest),
                      "word 2: cycle through words 3 -> 2 -> 4 -> 3");
    CHECK_THROWS_WITH(validate_heads({-1, 0, 3, 2}, Structure::Tree, "s9"),
                      "sentence s9: word 2: cycle through words 2 -> 3 -> 2");
  }
  SECTION("a long cycle is cut as the CoNLL-U reader cuts it") {
    // Words 1..999 form one cycle: k -> k+1, 999 -> 1.
    std::vector<int> heads(1000);
    heads[0] = -1;
    for (int k = 1; k < 1000; ++k) heads[static_cast<std::size_t>(k)] = k == 999 ? 1 : k + 1;
    CHECK_THROWS_WITH(validate_heads(heads, Structure::Tree),
                      "word 1: cycle through words 1 -> 2 -> 3 -> 4 -> 5 -> 6 -> 7 -> 8 -> 9 -> 10 "
                      "-> 11 -> 12 -> ... -> 1 (999 words)");
  }
  SECTION("DependencyTree validates with its sentence label") {
    CHECK_THROWS_AS(DependencyTree({-1, 5}), TreeError);
    CHECK_THROWS_WITH(DependencyTree({-1, -1}, Structure::Tree, "en-7"),
                      Catch::StartsWith("sentence en-7: word 1: second root"));
  }
  SECTION("errors are synattn::Error and std::invalid_argument") {
    CHECK_THROWS_AS(validate_heads({0}, Structure::Tree), Error);
    CHECK_THROWS_AS(validate_heads({0}, Structure::Tree), std::invalid_argument);
  }
  SECTION("the empty array is a valid empty tree") {
    CHECK_NOTHROW(validate_heads(std::vector<int>{}, Structure::Tree));
    const DependencyTree empty(std::vector<int>{});
    CHECK(empty.empty());
    CHECK(empty.num_trees() == 0);
  }
}

// from_heads passes `sentence` to to_canonical_heads and std::move(sentence)
// to the constructor in one call; argument evaluation order is unspecified,
// and g++ moves the label away first, so conversion errors lose it.
TEST_CASE("from_heads names the sentence in conversion errors", "[heads][errors][regression]") {
  CHECK_THROWS_WITH(DependencyTree::from_heads({0, 3}, HeadConvention::OneBasedRootZero, Structure::Tree, "x"),
                    "sentence x: word 1: head 3 out of range [0, 2] (1-based, root = 0)");
  // Validation errors after conversion do keep it.
  CHECK_THROWS_WITH(DependencyTree::from_heads({0, 0}, HeadConvention::OneBasedRootZero, Structure::Tree, "y"),
                    "sentence y: word 1: second root (word 0 is a root too); a tree has exactly one root");
}

TEST_CASE("a hand-made tree exposes depths, preorder, subtrees and children", "[tree]") {
  // 1 is the root with children 0, 2, 4; 3 hangs from 2.
  const DependencyTree tree({1, -1, 1, 2, 1}, Structure::Tree, "hand");
  CHECK(tree.size() == 5);
  CHECK(tree.sentence() == "hand");
  CHECK(tree.structure() == Structure::Tree);
  CHECK(tree.roots() == std::vector<int>{1});
  CHECK(tree.depth() == std::vector<int>{1, 0, 1, 2, 1});
  CHECK(tree.preorder() == std::vector<int>{1, 0, 2, 3, 4});
  CHECK(tree.position() == std::vector<int>{1, 0, 2, 3, 4});
  CHECK(tree.subtree_size() == std::vector<int>{1, 5, 2, 1, 1});
  CHECK(std::vector<int>(tree.children_begin(1), tree.children_end(1)) == std::vector<int>{0, 2, 4});
  CHECK(std::vector<int>(tree.children_begin(2), tree.children_end(2)) == std::vector<int>{3});
  CHECK(tree.children_begin(3) == tree.children_end(3));
  CHECK(tree.tree_of() == std::vector<int>{0, 0, 0, 0, 0});
  check_accessors(tree);
}

TEST_CASE("an interleaved forest keeps trees in root order", "[tree]") {
  // Roots 0 and 1; 2 hangs from 0, 3 from 1.
  const DependencyTree forest({-1, -1, 0, 1}, Structure::Forest);
  CHECK(forest.roots() == std::vector<int>{0, 1});
  CHECK(forest.tree_of() == std::vector<int>{0, 1, 0, 1});
  CHECK(forest.preorder() == std::vector<int>{0, 2, 1, 3});
  check_accessors(forest);
}

TEST_CASE("accessors agree with naive walks on random trees", "[tree]") {
  const int n = GENERATE(1, 2, 5, 40, 150);
  std::mt19937 rng(static_cast<unsigned>(n));
  check_accessors(DependencyTree(synattn_test::random_recursive_heads(n, rng)));
  check_accessors(DependencyTree(synattn_test::random_projective_heads(n, rng)));
  check_accessors(DependencyTree(synattn_test::path_heads(n, n / 2)));
  check_accessors(DependencyTree(random_forest_heads({n, 3, 1}, rng), Structure::Forest));
}

TEST_CASE("a deep path does not overflow the stack", "[tree]") {
  const int n = 200000;
  const DependencyTree path(synattn_test::path_heads(n, 0));
  CHECK(path.depth()[static_cast<std::size_t>(n - 1)] == n - 1);
  CHECK(path.subtree_size()[0] == n);
  CHECK(path.preorder()[static_cast<std::size_t>(n - 1)] == n - 1);
}

TEST_CASE("pack lays trees out one after another as a forest", "[tree][pack]") {
  std::mt19937 rng(21);
  std::vector<DependencyTree> parts;
  const std::vector<int> lengths{4, 1, 0, 7};
  for (int len : lengths) parts.emplace_back(synattn_test::random_recursive_heads(len, rng));
  const DependencyTree forest = DependencyTree::pack(parts, "batch-0");
  CHECK(forest.structure() == Structure::Forest);
  CHECK(forest.sentence() == "batch-0");
  REQUIRE(forest.size() == 12);
  CHECK(forest.num_trees() == 3);  // the empty part adds no tree
  int offset = 0;
  int tree_index = 0;
  for (const auto& part : parts) {
    for (int j = 0; j < part.size(); ++j) {
      const int w = offset + j;
      CAPTURE(w);
      const int h = part.head(j);
      CHECK(forest.head(w) == (h < 0 ? -1 : h + offset));
      CHECK(forest.depth()[static_cast<std::size_t>(w)] == part.depth()[static_cast<std::size_t>(j)]);
      CHECK(forest.tree_of()[static_cast<std::size_t>(w)] == tree_index);
    }
    if (part.size() > 0) ++tree_index;
    offset += part.size();
  }
  check_accessors(forest);
  SECTION("no parts give an empty forest") { CHECK(DependencyTree::pack({}).empty()); }
}
