// Property tests over every sentence of real treebanks (UD English EWT dev,
// Chinese GSD dev): the fast distance kernels against a plain BFS and the
// tree-metric laws.
#include <catch2/catch.hpp>

#include <synattn/io/conllu.hpp>
#include <synattn/tree/distance.hpp>

#include <cstdint>
#include <random>

#include "support/random_trees.hpp"
#include "support/test_data.hpp"

using namespace synattn;

namespace {

struct Totals {
  std::size_t sentences = 0, non_projective = 0, pairs = 0, triples = 0;
};

void check_sentence(const ConlluSentence& s, std::mt19937& rng, Totals& totals) {
  const DependencyTree tree = s.tree();
  const int n = tree.size();
  const auto bfs = synattn_test::bfs_distances(tree.heads());
  RowMajorMatrix<std::int32_t> dist(n, n), up(n, n), down(n, n);
  RowMajorMatrix<std::int8_t> dist8(n, n);
  pairwise_distances<std::int32_t>(tree, dist);
  pairwise_distances<std::int8_t>(tree, dist8);
  directed_distances<std::int32_t>(tree, up, down);
  INFO("sentence " << s.label() << " (n=" << n << ")");
  ++totals.sentences;
  totals.non_projective += tree.is_projective() ? 0 : 1;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const int d = dist(i, j);
      if (d != bfs[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] || d != dist(j, i) ||
          +dist8(i, j) != std::min(d, 127) || up(i, j) + down(i, j) != d || up(i, j) != down(j, i)) {
        FAIL("pair (" << i << ", " << j << "): dist " << d << ", BFS "
                      << bfs[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] << ", transposed "
                      << dist(j, i) << ", int8 " << +dist8(i, j) << ", up " << up(i, j) << ", down "
                      << down(i, j));
      }
    }
    const int h = tree.head(i);
    if (h >= 0) {
      REQUIRE(dist(i, h) == 1);
      REQUIRE((up(i, h) == 1 && down(i, h) == 0));  // the head of i
      REQUIRE((up(h, i) == 0 && down(h, i) == 1));  // a child of h
      for (const int* c = tree.children_begin(h); c != tree.children_end(h); ++c)
        if (*c != i) REQUIRE((up(i, *c) == 1 && down(i, *c) == 1));  // siblings
    }
  }
  totals.pairs += static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  if (n < 3) return;
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (int t = 0; t < 4 * n; ++t) {
    const int a = pick(rng), b = pick(rng), c = pick(rng);
    REQUIRE(dist(a, c) <= dist(a, b) + dist(b, c));
    ++totals.triples;
  }
}

void check_treebank(const std::string& path) {
  std::mt19937 rng(2026);
  Totals totals;
  for (const ConlluSentence& s : read_conllu(path)) check_sentence(s, rng, totals);
  INFO(path);
  CHECK(totals.sentences >= 500);
  CHECK(totals.triples > 10000);
  WARN(path << ": " << totals.sentences << " sentences (" << totals.non_projective
            << " non-projective), " << totals.pairs << " pairs, " << totals.triples << " triples");
}

}  // namespace

TEST_CASE("distances over every EWT dev sentence obey BFS and the tree-metric laws", "[treebank][distance]") {
  check_treebank(synattn_test::ewt("dev"));
}

TEST_CASE("distances over every Chinese GSD dev sentence obey BFS and the tree-metric laws", "[treebank][distance]") {
  check_treebank(synattn_test::gsd("dev"));
}

TEST_CASE("EWT dev packed into forests gives sentence distances within and cross between", "[treebank][forest]") {
  const auto sentences = read_conllu(synattn_test::ewt("dev"));
  std::vector<DependencyTree> group;
  std::size_t checked = 0;
  for (std::size_t k = 0; k < sentences.size() && checked < 200; ++k) {
    group.push_back(sentences[k].tree());
    if (group.size() < 5) continue;
    const DependencyTree forest = DependencyTree::pack(group);
    const auto bfs = synattn_test::bfs_distances(forest.heads());
    RowMajorMatrix<std::int16_t> d(forest.size(), forest.size());
    pairwise_distances<std::int16_t>(forest, d, 99);
    for (int i = 0; i < forest.size(); ++i)
      for (int j = 0; j < forest.size(); ++j) {
        const int want = bfs[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
        REQUIRE(d(i, j) == (want < 0 ? 99 : want));
      }
    group.clear();
    ++checked;
  }
  CHECK(checked == 200);
}
