#include <catch2/catch.hpp>

#include <synattn/tree/subword.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/random_trees.hpp"

using namespace synattn;

namespace {

// The docs/math.md §2 rule written out per pair, on a word matrix of int.
template <class T>
long long expected_token_cell(const RowMajorMatrix<T>& words, const std::vector<int>& map, int s, int t) {
  const int ws = map[static_cast<std::size_t>(s)], wt = map[static_cast<std::size_t>(t)];
  if (ws < 0 || wt < 0) return -2;
  if (ws == wt) return 0;
  return words(ws, wt);
}

// Each word gets 0-3 tokens in order, and special tokens are sprinkled in.
std::vector<int> random_map(int words, std::mt19937& rng) {
  std::vector<int> map{-1};
  std::uniform_int_distribution<int> pieces(0, 3), coin(0, 9);
  for (int w = 0; w < words; ++w) {
    for (int k = pieces(rng); k > 0; --k) map.push_back(w);
    if (coin(rng) == 0) map.push_back(-1);
  }
  map.push_back(-1);
  return map;
}

}  // namespace

TEST_CASE("[CLS] w1 w2a w2b [SEP]: special tokens get -2, pieces of a word share its distances", "[subword]") {
  // Words: 0 "The" <- 1 "cat" -> 2 "sat"... a 3-word tree: 1 is the root.
  const DependencyTree tree({1, -1, 1});
  // Tokens: [CLS] The ca ##t sat [SEP]
  const std::vector<int> map{-1, 0, 1, 1, 2, -1};
  RowMajorMatrix<std::int8_t> got = RowMajorMatrix<std::int8_t>::Constant(6, 6, 99);
  token_distances<std::int8_t>(tree, map, got);
  RowMajorMatrix<std::int8_t> want(6, 6);
  want << -2, -2, -2, -2, -2, -2,  // [CLS]
      -2, 0, 1, 1, 2, -2,          // The
      -2, 1, 0, 0, 1, -2,          // ca
      -2, 1, 0, 0, 1, -2,          // ##t
      -2, 2, 1, 1, 0, -2,          // sat
      -2, -2, -2, -2, -2, -2;      // [SEP]
  CHECK(got == want);

  SECTION("the directed form expands up and down alike") {
    RowMajorMatrix<std::int8_t> wu(3, 3), wd(3, 3), tu(6, 6), td(6, 6);
    directed_distances<std::int8_t>(tree, wu, wd);
    expand_directed_to_tokens<std::int8_t>(wu, wd, map, tu, td);
    // ca -> The: word 1 is the head of word 0, so (0, 1); The -> ca: (1, 0).
    CHECK((+tu(2, 1) == 0 && +td(2, 1) == 1));
    CHECK((+tu(1, 3) == 1 && +td(1, 3) == 0));
    CHECK((+tu(1, 4) == 1 && +td(1, 4) == 1));  // siblings
    CHECK((+tu(2, 3) == 0 && +td(2, 3) == 0));  // same word
    CHECK((+tu(0, 3) == -2 && +td(5, 5) == -2));
    CHECK(RowMajorMatrix<std::int8_t>(tu + td) == (want.array() == std::int8_t(-2)).select(RowMajorMatrix<std::int8_t>::Constant(6, 6, -4), want));
  }
}

TEST_CASE("expansion matches the per-pair rule on random trees and maps", "[subword]") {
  const int n = GENERATE(1, 2, 6, 30);
  std::mt19937 rng(static_cast<unsigned>(n * 3 + 1));
  for (int rep = 0; rep < 4; ++rep) {
    const DependencyTree tree(synattn_test::random_recursive_heads(n, rng));
    const std::vector<int> map = random_map(n, rng);
    const int t = static_cast<int>(map.size());
    RowMajorMatrix<std::int16_t> words(n, n), up(n, n), down(n, n);
    pairwise_distances<std::int16_t>(tree, words);
    directed_distances<std::int16_t>(tree, up, down);
    RowMajorMatrix<std::int16_t> got(t, t), tu(t, t), td(t, t);
    expand_to_tokens<std::int16_t>(words, map, got);
    expand_directed_to_tokens<std::int16_t>(up, down, map, tu, td);
    for (int s = 0; s < t; ++s)
      for (int r = 0; r < t; ++r) {
        CAPTURE(n, rep, s, r);
        REQUIRE(got(s, r) == expected_token_cell(words, map, s, r));
        REQUIRE(tu(s, r) == expected_token_cell(up, map, s, r));
        REQUIRE(td(s, r) == expected_token_cell(down, map, s, r));
      }
  }
}

TEST_CASE("maps need not be contiguous or cover every word", "[subword]") {
  // Word 1 has no token (e.g. truncated); word 0's tokens are split by word 2's.
  const DependencyTree tree({-1, 0, 1});
  RowMajorMatrix<std::int32_t> got(4, 4);
  token_distances<std::int32_t>(tree, {0, 2, 0, -1}, got);
  RowMajorMatrix<std::int32_t> want(4, 4);
  want << 0, 2, 0, -2,  //
      2, 0, 2, -2,      //
      0, 2, 0, -2,      //
      -2, -2, -2, -2;
  CHECK(got == want);
  SECTION("an all-special sequence and an empty one") {
    RowMajorMatrix<std::int8_t> specials(2, 2), none(0, 0);
    token_distances<std::int8_t>(tree, {-1, -1}, specials);
    CHECK((specials.array() == std::int8_t(-2)).all());
    token_distances<std::int8_t>(DependencyTree(std::vector<int>{}), {}, none);
    token_distances<std::int8_t>(tree, {}, none);
  }
}

TEST_CASE("expansion validates the map and the shapes", "[subword][errors]") {
  const DependencyTree tree({-1, 0, 0}, Structure::Tree, "en-4");
  RowMajorMatrix<std::int8_t> words(3, 3), out(4, 4);
  pairwise_distances<std::int8_t>(tree, words);
  CHECK_THROWS_WITH(expand_to_tokens<std::int8_t>(words, {0, 1, 3, -1}, out),
                    "token map: token 2: word 3 out of range [0, 3) (-1 = special token)");
  CHECK_THROWS_WITH(expand_to_tokens<std::int8_t>(words, {0, -2, 1, -1}, out),
                    Catch::Contains("token 1: word -2 out of range"));
  CHECK_THROWS_WITH(token_distances<std::int8_t>(tree, {0, 1, 2, 7}, out),
                    "token map: en-4: token 3: word 7 out of range [0, 3) (-1 = special token)");
  CHECK_THROWS_WITH(expand_to_tokens<std::int8_t>(words, {0, 1, 2}, out),
                    "expand_to_tokens: output 'token_distances' is 4x4, expected 3x3 (one row and column per token)");
  RowMajorMatrix<std::int8_t> oblong(3, 2);
  CHECK_THROWS_WITH(expand_to_tokens<std::int8_t>(oblong, {0, 1, 2, 0}, out),
                    "expand_to_tokens: word distances 'word_distances' are 3x2, expected a square matrix");
  RowMajorMatrix<std::int8_t> small(2, 2);
  CHECK_THROWS_WITH(expand_directed_to_tokens<std::int8_t>(words, small, {0, 1, 2, 0}, out, out),
                    Catch::Contains("word_down is 2x2 but word_up is 3x3"));
  CHECK_THROWS_WITH(expand_directed_to_tokens<std::int8_t>(words, words, {0, 1, 2, 0}, out, small),
                    Catch::Contains("output 'token_down' is 2x2, expected 4x4"));
  CHECK_THROWS_AS(validate_token_map({0, 3}, 3), Error);
  CHECK_NOTHROW(validate_token_map({0, 2, -1}, 3));
}

TEST_CASE("character spans give the token-to-word map", "[subword][spans]") {
  // "The cat sat." -> words The | cat | sat | .
  const std::vector<CharSpan> words{{0, 3}, {4, 7}, {8, 11}, {11, 12}};
  SECTION("a BERT-style tokenization") {
    // [CLS] The ca ##t sat . [SEP]
    const std::vector<CharSpan> tokens{{0, 0}, {0, 3}, {4, 6}, {6, 7}, {8, 11}, {11, 12}, {0, 0}};
    CHECK(token_to_word_from_spans(words, tokens) == std::vector<int>{-1, 0, 1, 1, 2, 3, -1});
  }
  SECTION("tokens in any order, single characters, a word's exact edges") {
    const std::vector<CharSpan> tokens{{11, 12}, {10, 11}, {8, 9}, {4, 7}, {2, 3}, {0, 1}};
    CHECK(token_to_word_from_spans(words, tokens) == std::vector<int>{3, 2, 2, 1, 0, 0});
  }
  SECTION("a token that overlaps no word is special") {
    // The space between words, a trailing newline, a span beyond the text.
    const std::vector<CharSpan> tokens{{3, 4}, {12, 13}, {40, 45}, {7, 8}};
    CHECK(token_to_word_from_spans(words, tokens) == std::vector<int>{-1, -1, -1, -1});
  }
  SECTION("text before the first word is not a word") {
    CHECK(token_to_word_from_spans({{5, 9}}, {{0, 4}, {5, 9}, {0, 5}}) == std::vector<int>{-1, 0, -1});
  }
  SECTION("an empty word span is allowed and gets no token") {
    const std::vector<CharSpan> with_empty{{0, 3}, {3, 3}, {3, 6}};
    CHECK(token_to_word_from_spans(with_empty, {{0, 3}, {3, 4}, {4, 6}, {3, 3}}) == std::vector<int>{0, 2, 2, -1});
  }
  SECTION("no words: every token is special") {
    CHECK(token_to_word_from_spans({}, {{0, 2}, {0, 0}}) == std::vector<int>{-1, -1});
  }
  SECTION("a token straddling two words is an error naming it and both words") {
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{0, 3}, {2, 5}}, "s3"),
                      "token_to_word_from_spans: s3: token 1 [2, 5) straddles word 0 [0, 3) and word 1 [4, 7)");
    // Adjacent words with no space between them.
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{9, 12}}),
                      Catch::EndsWith("token 0 [9, 12) straddles word 2 [8, 11) and word 3 [11, 12)"));
    // Spanning three words names the first two.
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{0, 12}}),
                      Catch::EndsWith("token 0 [0, 12) straddles word 0 [0, 3) and word 1 [4, 7)"));
  }
  SECTION("a token sticking out of a word is an error") {
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{4, 8}}),
                      "token_to_word_from_spans: token 0 [4, 8) lies partly outside word 1 [4, 7)");
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{3, 5}}),
                      Catch::EndsWith("token 0 [3, 5) lies partly outside word 1 [4, 7)"));
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{11, 14}}),
                      Catch::EndsWith("token 0 [11, 14) lies partly outside word 3 [11, 12)"));
  }
  SECTION("invalid, unsorted or overlapping spans are errors") {
    CHECK_THROWS_WITH(token_to_word_from_spans({{0, 3}, {5, 4}}, {}),
                      "token_to_word_from_spans: word 1 span [5, 4) is invalid: expected 0 <= begin <= end");
    CHECK_THROWS_WITH(token_to_word_from_spans({{-1, 3}}, {}), Catch::Contains("word 0 span [-1, 3) is invalid"));
    CHECK_THROWS_WITH(token_to_word_from_spans({{4, 7}, {0, 3}}, {}),
                      "token_to_word_from_spans: word spans must be sorted and non-overlapping, but word 0 [4, 7) "
                      "ends after word 1 [0, 3) begins");
    CHECK_THROWS_WITH(token_to_word_from_spans({{0, 5}, {4, 7}}, {}),
                      Catch::Contains("but word 0 [0, 5) ends after word 1 [4, 7) begins"));
    CHECK_THROWS_WITH(token_to_word_from_spans({{0, 5}, {2, 2}}, {}), Catch::Contains("word 0 [0, 5) ends after word 1 [2, 2)"));
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{0, 3}, {6, 5}}),
                      "token_to_word_from_spans: token 1 [6, 5) is invalid: expected 0 <= begin <= end");
    CHECK_THROWS_WITH(token_to_word_from_spans(words, {{-2, 0}}), Catch::Contains("token 0 [-2, 0) is invalid"));
  }
}

TEST_CASE("spans and expansion together: a RoBERTa-like sentence", "[subword][spans]") {
  // "Dogs bark loudly": bark is the root; Dogs and loudly hang from it.
  const DependencyTree tree({1, -1, 1});
  const std::vector<CharSpan> words{{0, 4}, {5, 9}, {10, 16}};
  // <s> Dog s bark loud ly </s>
  const std::vector<CharSpan> tokens{{0, 0}, {0, 3}, {3, 4}, {5, 9}, {10, 14}, {14, 16}, {0, 0}};
  const auto map = token_to_word_from_spans(words, tokens);
  RowMajorMatrix<std::int8_t> got(7, 7);
  token_distances<std::int8_t>(tree, map, got);
  CHECK(+got(1, 2) == 0);  // Dog, s
  CHECK(+got(2, 5) == 2);  // s, ly: Dogs and loudly are siblings
  CHECK(+got(3, 4) == 1);  // bark, loud
  CHECK(+got(6, 3) == -2);
  CHECK(+got(0, 0) == -2);
}

TEMPLATE_TEST_CASE("token batches pad with -1 and keep -2 for special tokens", "[subword][batch]", std::int8_t,
                   std::int32_t) {
  std::mt19937 rng(17);
  std::vector<DependencyTree> trees;
  std::vector<std::vector<int>> maps;
  for (int len : {4, 0, 7, 1}) {
    trees.emplace_back(synattn_test::random_recursive_heads(len, rng), Structure::Tree, "t" + std::to_string(len));
    maps.push_back(random_map(len, rng));
  }
  maps[1] = {};  // a sequence with no tokens at all
  Index n_max = 0;
  for (const auto& m : maps) n_max = std::max<Index>(n_max, static_cast<Index>(m.size()));
  n_max += 2;
  RowMajorMatrix<TestType> out = RowMajorMatrix<TestType>::Constant(4 * n_max, n_max, TestType(99));
  RowMajorMatrix<TestType> up = out, down = out;
  const auto lengths = batch_token_distances<TestType>(trees, maps, out);
  CHECK(batch_token_directed_distances<TestType>(trees, maps, up, down) == lengths);
  for (std::size_t b = 0; b < 4; ++b) {
    CAPTURE(b);
    const Index t = static_cast<Index>(maps[b].size());
    REQUIRE(lengths[b] == t);
    RowMajorMatrix<TestType> words(trees[b].size(), trees[b].size()), wu = words, wd = words;
    pairwise_distances<TestType>(trees[b], words);
    directed_distances<TestType>(trees[b], wu, wd);
    const Index top = static_cast<Index>(b) * n_max;
    for (Index i = 0; i < n_max; ++i)
      for (Index j = 0; j < n_max; ++j) {
        const bool inside = i < t && j < t;
        const auto si = static_cast<int>(i), sj = static_cast<int>(j);
        REQUIRE(+out(top + i, j) == (inside ? expected_token_cell(words, maps[b], si, sj) : -1));
        REQUIRE(+up(top + i, j) == (inside ? expected_token_cell(wu, maps[b], si, sj) : -1));
        REQUIRE(+down(top + i, j) == (inside ? expected_token_cell(wd, maps[b], si, sj) : -1));
      }
  }
}

TEST_CASE("token batches name the sentence and the token in errors", "[subword][batch][errors]") {
  const std::vector<DependencyTree> trees{DependencyTree({-1, 0}, Structure::Tree, "a"), DependencyTree({-1, 0, 0})};
  RowMajorMatrix<std::int8_t> out = RowMajorMatrix<std::int8_t>::Constant(10, 5, 42);
  CHECK_THROWS_WITH(batch_token_distances<std::int8_t>(trees, {{-1, 0, 1}}, out),
                    "batch_token_distances: 2 trees but 1 token maps; expected one map per tree");
  CHECK_THROWS_WITH(batch_token_distances<std::int8_t>(trees, {{-1, 0, 1}, {-1, 0, 1, 2, 2, -1}}, out),
                    "batch_token_distances: sentence 1 has 6 tokens, more than n_max = 5 (the output's column count)");
  CHECK_THROWS_WITH(batch_token_distances<std::int8_t>(trees, {{-1, 0, 2}, {-1, 0}}, out),
                    "token map: sentence 0 (a): token 2: word 2 out of range [0, 2) (-1 = special token)");
  RowMajorMatrix<std::int8_t> wrong(9, 5);
  CHECK_THROWS_WITH(batch_token_distances<std::int8_t>(trees, {{0}, {0}}, wrong),
                    Catch::StartsWith("batch_token_distances: output 'out' is 9x5, expected (batch * n_max) x n_max = 10x5"));
  RowMajorMatrix<std::int8_t> down(10, 4);
  CHECK_THROWS_WITH(batch_token_directed_distances<std::int8_t>(trees, {{0}, {0}}, out, down),
                    Catch::Contains("output 'down' is 10x4 but 'up' is 10x5"));
  CHECK_THROWS_WITH(batch_token_distances<std::int8_t>(trees, {{0}, {0}}, out, -5),
                    Catch::Contains("cross_distance must be >= 0, got -5"));
  // Nothing was written by the failed calls.
  CHECK((out.array() == std::int8_t(42)).all());
}
