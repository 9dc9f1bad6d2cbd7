// Shuffles, training subset and length batches: determinism, coverage, and
// numbers pinned against the Python twin (bench/pytorch_train_reference.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include <synattn/data/batching.hpp>

using namespace synattn;

// Produced by the Python implementation:
//   /usr/bin/python3 bench/pytorch_train_reference.py pins
// (the same function computes them there; its `selftest` mode checks the
// C++-printed values below against Python, so either side drifting fails).
TEST_CASE("RNG, shuffle, subset and batches match the Python twin bit for bit", "[batching][pins]") {
  CHECK(mix64(12345) == 17540659726606785873ull);
  const RandomStream s(7);
  CHECK(s.key() == 7191089600892374487ull);
  CHECK(s.derive(3).bits(0) == 18299605080711404622ull);
  CHECK(s.uniform(5) == 0x1.7551f69e6c4c8p-3);

  DrawSequence draws(s);
  std::vector<std::uint64_t> below;
  for (int k = 0; k < 6; ++k) below.push_back(draws.below(1000));
  CHECK(below == std::vector<std::uint64_t>{221, 174, 827, 45, 790, 174});

  CHECK(shuffled_indices(10, RandomStream(7)) == std::vector<std::size_t>{7, 6, 9, 2, 8, 4, 0, 3, 5, 1});

  const std::vector<int> lengths{5, 70, 12, 3, 61, 9, 60, 1, 2, 33, 8, 40};
  CHECK(select_training_subset(lengths, 8, 60, 99) == std::vector<std::size_t>{9, 3, 2, 5, 7, 11, 6});

  const std::vector<std::vector<std::size_t>> want{{7}, {6, 8, 0}, {2, 9, 5}, {4, 1, 3}};
  CHECK(length_batches({3, 9, 4, 12, 7, 7, 1, 30, 2, 5}, 11, 2, 3) == want);

  const RandomStream d = word_dropout_stream(3, 1, 5);
  CHECK(d.uniform(0) == 0x1.d000949a9f76dp-1);
  CHECK(d.uniform(1) == 0x1.73abf9830fef4p-1);
  CHECK(d.uniform(2) == 0x1.9e471efd3cb22p-2);
  CHECK(d.uniform(3) == 0x1.b6aa5eb7ee625p-1);
}

TEST_CASE("below(m) is in range, unbiased enough, and rejects a zero bound", "[batching]") {
  DrawSequence draws(RandomStream(42));
  std::vector<int> hist(6, 0);
  for (int k = 0; k < 60000; ++k) {
    const std::uint64_t x = draws.below(6);
    REQUIRE(x < 6);
    ++hist[x];
  }
  for (int h : hist) CHECK(std::abs(h - 10000) < 500);  // ~5 sigma
  CHECK(draws.counter() == 60000);  // no rejection at m = 6 in practice
  CHECK_THROWS_WITH(draws.below(0), Catch::Contains("bound must be >= 1"));
  DrawSequence one(RandomStream(1));
  CHECK(one.below(1) == 0);
}

TEST_CASE("shuffles are permutations, depend on the seed only, and cover every position", "[batching]") {
  const std::size_t n = GENERATE(0, 1, 2, 17, 1000);
  const auto a = shuffled_indices(n, RandomStream(5));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> iota(n);
  std::iota(iota.begin(), iota.end(), std::size_t{0});
  CHECK(sorted == iota);
  CHECK(shuffled_indices(n, RandomStream(5)) == a);
  if (n >= 17) CHECK(shuffled_indices(n, RandomStream(6)) != a);
}

TEST_CASE("the training subset takes the first N of a seeded shuffle and drops long sentences", "[batching]") {
  std::vector<int> lengths(300);
  for (std::size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int>(1 + (i * 37) % 90);
  const auto subset = select_training_subset(lengths, 100, 60, 3);
  const auto order = shuffled_indices(lengths.size(), RandomStream(3).derive(kSubsetSite));
  std::vector<std::size_t> want;
  for (std::size_t k = 0; k < 100; ++k)
    if (lengths[order[k]] <= 60) want.push_back(order[k]);
  CHECK(subset == want);
  CHECK(subset.size() < 100);  // some of the first 100 are longer than 60
  for (std::size_t i : subset) CHECK(lengths[i] <= 60);
  CHECK(select_training_subset(lengths, 100, 60, 4) != subset);
  CHECK(select_training_subset(lengths, 5000, 90, 3).size() == lengths.size());
  CHECK_THROWS_WITH(select_training_subset(lengths, 10, 0, 3), Catch::Contains("max_words must be >= 1"));
}

TEST_CASE("length batches cover every position once per epoch, group similar lengths, vary by epoch",
          "[batching]") {
  std::vector<int> lengths(1000);
  for (std::size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int>(1 + (i * 7919) % 60);
  for (std::uint64_t epoch : {0ull, 1ull, 7ull}) {
    const auto batches = length_batches(lengths, 9, epoch);
    CHECK(batches.size() == (lengths.size() + 31) / 32);
    std::vector<int> seen(lengths.size(), 0);
    for (const auto& b : batches) {
      CHECK(b.size() >= 1);
      CHECK(b.size() <= 32);
      int lo = 1000, hi = 0;
      for (std::size_t s : b) {
        ++seen[s];
        lo = std::min(lo, lengths[s]);
        hi = std::max(hi, lengths[s]);
      }
      // Keys are length + noise in [0, 4): lengths in a batch differ by < 4
      // plus the spread of one batch's worth of keys (here at most 1).
      CHECK(hi - lo <= 5);
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    CHECK(length_batches(lengths, 9, epoch) == batches);
  }
  CHECK(length_batches(lengths, 9, 0) != length_batches(lengths, 9, 1));
  CHECK(length_batches(lengths, 9, 0) != length_batches(lengths, 10, 0));
  CHECK_THROWS_WITH(length_batches(lengths, 9, 0, 0), Catch::Contains("batch must be >= 1"));
}

TEST_CASE("evaluation batches are sorted by length and then position", "[batching]") {
  const std::vector<int> lengths{4, 2, 9, 2, 4, 1};
  const std::vector<std::vector<std::size_t>> want{{5, 1}, {3, 0}, {4, 2}};
  CHECK(eval_batches(lengths, 2) == want);
}
