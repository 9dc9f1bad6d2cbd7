#include <catch2/catch.hpp>

#include <synattn/util/random.hpp>

#include <bitset>
#include <cmath>
#include <cstdint>
#include <set>

using synattn::RandomStream;

TEST_CASE("RandomStream bits are a pure function of key and counter", "[random]") {
  const RandomStream a(42), b(42), c(43);
  for (std::uint64_t i = 0; i < 100; ++i) {
    CHECK(a.bits(i) == b.bits(i));
    CHECK(a.bits(i) != c.bits(i));
  }
  CHECK(a.derive(1).key() == b.derive(1).key());
  CHECK(a.derive(1).key() != a.derive(2).key());
  CHECK(a.derive(1).key() != a.key());
  // Counters and derived ids do not collide into the same words.
  std::set<std::uint64_t> seen;
  for (std::uint64_t s = 0; s < 8; ++s)
    for (std::uint64_t i = 0; i < 256; ++i) seen.insert(a.derive(s).bits(i));
  CHECK(seen.size() == 8 * 256);
}

TEST_CASE("RandomStream uniform is in [0, 1) with mean and variance of U(0, 1)", "[random]") {
  const RandomStream s = RandomStream(7).derive(3);
  const int count = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < count; ++i) {
    const double u = s.uniform(static_cast<std::uint64_t>(i));
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    sum2 += u * u;
  }
  const double mean = sum / count, var = sum2 / count - mean * mean;
  // Standard error of the mean is sqrt(1/12 / count) ~ 6.5e-4: 5 sigma.
  CHECK(std::abs(mean - 0.5) < 3.3e-3);
  CHECK(std::abs(var - 1.0 / 12.0) < 2e-3);
}

TEST_CASE("lowbias32 matches its published values and drop_bits mixes both key halves and counter halves",
          "[random]") {
  // Reference values from the published definition (x ^= x >> 16; x *=
  // 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16), in Python.
  CHECK(synattn::lowbias32(0u) == 0u);
  CHECK(synattn::lowbias32(1u) == 0x688990c0u);
  CHECK(synattn::lowbias32(0xdeadbeefu) == 0xe628c683u);
  const RandomStream s(5);
  const std::uint32_t base = s.drop_bits(7);
  CHECK(s.drop_bits(7) == base);                           // a pure function
  CHECK(s.derive(1).drop_bits(7) != base);                 // another key
  CHECK(s.drop_bits(7 + (std::uint64_t(1) << 32)) != base);  // the high counter half counts
  // Flipping one input bit flips about half the output bits (avalanche),
  // over the 64 counter bits.
  double flipped = 0;
  for (int bit = 0; bit < 64; ++bit)
    for (std::uint64_t c = 0; c < 200; ++c) {
      const std::uint64_t counter = c * 0x9e3779b97f4a7c15ull;
      flipped += std::bitset<32>(s.drop_bits(counter) ^ s.drop_bits(counter ^ (std::uint64_t(1) << bit))).count();
    }
  CHECK(std::abs(flipped / (64 * 200 * 32) - 0.5) < 0.01);
}

TEST_CASE("keep() decisions of neighbouring counters and sibling streams are uncorrelated", "[random]") {
  // For independent Bernoulli(1 - p) draws, P(both kept) = (1 - p)^2.
  const double p = 0.3;
  const std::uint32_t t = synattn::drop_threshold(p);
  const RandomStream step = RandomStream(3).derive(9);
  const int count = 200000;
  int neighbours = 0, siblings = 0, sequences = 0;
  for (int i = 0; i < count; ++i) {
    const auto c = static_cast<std::uint64_t>(i);
    const bool k = step.keep(c, t);
    neighbours += k && step.keep(c + 1, t);
    siblings += k && step.derive(1).keep(c, t);
    sequences += step.sequence(0).keep(c, t) && step.sequence(1).keep(c, t);
  }
  const double q = (1 - p) * (1 - p), sigma = std::sqrt(q * (1 - q) / count);
  CHECK(std::abs(neighbours / double(count) - q) <= 5 * sigma);
  CHECK(std::abs(siblings / double(count) - q) <= 5 * sigma);
  CHECK(std::abs(sequences / double(count) - q) <= 5 * sigma);
}

TEST_CASE("keep() keeps a fraction 1 - p of elements", "[random]") {
  const RandomStream s(11);
  for (double p : {0.0, 0.1, 0.5, 0.9}) {
    const std::uint32_t t = synattn::drop_threshold(p);
    const int count = 100000;
    int kept = 0;
    for (int i = 0; i < count; ++i) kept += s.keep(static_cast<std::uint64_t>(i), t) ? 1 : 0;
    const double sigma = std::sqrt(p * (1 - p) / count);
    INFO("p = " << p << ", kept " << kept);
    CHECK(std::abs(kept / double(count) - (1 - p)) <= 5 * sigma + 1e-12);
  }
  CHECK(synattn::drop_threshold(0.0) == 0u);
  CHECK_THROWS_AS(synattn::drop_threshold(1.0), synattn::Error);
  CHECK_THROWS_AS(synattn::drop_threshold(-0.1), synattn::Error);
  CHECK_THROWS_AS(synattn::drop_threshold(std::nan("")), synattn::Error);
}

TEST_CASE("RandomStream sequences: keyed by global sequence, kept by derive, a domain of their own", "[random]") {
  const RandomStream step = RandomStream(5).derive(9);
  const RandomStream shard = step.sequences_from(16);
  CHECK(shard.key() == step.key());  // the key is unchanged
  CHECK(step.first_sequence() == 0);
  CHECK(shard.first_sequence() == 16);
  CHECK(shard.derive(3).first_sequence() == 16);  // sites derived from a step keep its offset
  CHECK(shard.derive(3).key() == step.derive(3).key());
  for (std::uint64_t b = 0; b < 20; ++b) {
    // Sequence b of a shard starting at 16 is global sequence 16 + b.
    CHECK(shard.sequence(b).key() == step.sequence(16 + b).key());
    CHECK(shard.derive(2).sequence(b).key() == step.derive(2).sequence(16 + b).key());
    CHECK(shard.sequence(b).first_sequence() == 0);
    // sequence(k) and derive(k) are different streams.
    CHECK(step.sequence(b).key() != step.derive(b).key());
    CHECK(step.sequence(b).key() != step.sequence(b + 1).key());
  }
  // The offset's streams are those of other sequences, not of this one.
  CHECK(shard.sequence(0).key() != step.sequence(0).key());
}
