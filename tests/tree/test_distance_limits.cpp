// Working memory and the documented size limit of the distance functions.
// In its own program: the memory test reads the process's peak resident set
// size, which only means something when nothing larger ran before it.
#include <catch2/catch.hpp>

#include <synattn/tree/distance.hpp>

#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/resource.h>
#endif

#include "support/random_trees.hpp"

using namespace synattn;

namespace {

#if defined(__linux__)
// Peak resident set size of this process so far, in bytes.
long long peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<long long>(usage.ru_maxrss) * 1024;
}
#endif

}  // namespace

TEST_CASE("deep trees need no n^2 scratch beyond the output", "[distance][deep][memory]") {
#if !defined(__linux__)
  SUCCEED("peak RSS is read with getrusage on Linux only");
#else
  // A 6000-word chain: height 5999, far past int8's 127. The output is 36 MB;
  // an int32 n^2 scratch would add 144 MB (two of them for directed).
  constexpr int n = 6000;
  const DependencyTree chain(synattn_test::path_heads(n, 1234));
  RowMajorMatrix<std::int8_t> out(n, n), down(n, n);
  out.setConstant(1);  // touch every page now, so it counts before the call
  down.setConstant(1);
  const long long before = peak_rss_bytes();
  pairwise_distances<std::int8_t>(chain, out);
  directed_distances<std::int8_t>(chain, out, down);
  pairwise_distances<std::int8_t>(chain, out);
  const long long grown = peak_rss_bytes() - before;
  // O(n) working memory is a few pages; allow 8 MB for allocator noise.
  CHECK(grown < 8LL * 1024 * 1024);
  // And the values are right: on a chain dist(i, j) = |i - j|.
  for (int i = 0; i < n; i += 97)
    for (int j = 0; j < n; ++j) REQUIRE(+out(i, j) == std::min(std::abs(i - j), 127));
#endif
}

TEST_CASE("distance outputs beyond max_distance_words are refused before any allocation",
          "[distance][errors]") {
  STATIC_REQUIRE(max_distance_words == 32768);
  const DependencyTree big(synattn_test::path_heads(max_distance_words + 1, 0));
  const std::string expected = "pairwise_distances: tree has 32769 words, more than max_distance_words = 32768 "
                               "(the n x n output would be 1073807361 elements)";
  CHECK_THROWS_WITH(pairwise_distances<std::int8_t>(big), expected);
  RowMajorMatrix<std::int8_t> tiny(1, 1), tiny2(1, 1);
  CHECK_THROWS_WITH(pairwise_distances<std::int8_t>(big, tiny), expected);
  CHECK_THROWS_WITH(directed_distances<std::int8_t>(big, tiny, tiny2),
                    Catch::StartsWith("directed_distances: tree has 32769 words, more than max_distance_words"));
  // The limit itself is allowed (checked on the shape error, which comes next).
  const DependencyTree at_limit(synattn_test::path_heads(max_distance_words, 0));
  CHECK_THROWS_WITH(pairwise_distances<std::int8_t>(at_limit, tiny),
                    Catch::Contains("output 'out' is 1x1, expected 32768x32768"));
}
