// Learning-rate schedules against values worked out by hand at several steps.
#include <catch2/catch.hpp>

#include <synattn/train/schedules.hpp>

#include <cmath>

using Catch::Matchers::WithinRel;
using Catch::Matchers::WithinAbs;

TEST_CASE("linear warmup then constant", "[train][schedule]") {
  CHECK_THAT(synattn::warmup_constant(1, 4), WithinRel(0.25, 1e-15));
  CHECK_THAT(synattn::warmup_constant(3, 4), WithinRel(0.75, 1e-15));
  CHECK(synattn::warmup_constant(4, 4) == 1.0);
  CHECK(synattn::warmup_constant(1000, 4) == 1.0);
  CHECK(synattn::warmup_constant(1, 0) == 1.0);
}

TEST_CASE("warmup + inverse square root peaks at lr at the end of the warmup", "[train][schedule]") {
  // warmup 100: step 25 -> 0.25; step 100 -> 1; step 400 -> sqrt(100/400) = 0.5;
  // step 10000 -> 0.1. The paper's d^-0.5 min(s^-0.5, s w^-1.5) divided by its peak.
  CHECK_THAT(synattn::warmup_inverse_sqrt(25, 100), WithinRel(0.25, 1e-15));
  CHECK_THAT(synattn::warmup_inverse_sqrt(100, 100), WithinRel(1.0, 1e-15));
  CHECK_THAT(synattn::warmup_inverse_sqrt(400, 100), WithinRel(0.5, 1e-15));
  CHECK_THAT(synattn::warmup_inverse_sqrt(10000, 100), WithinRel(0.1, 1e-15));
  for (long long s : {1LL, 50LL, 99LL, 100LL, 101LL, 4000LL}) {
    const double d = 512, w = 100;
    const double paper = std::pow(d, -0.5) * std::min(std::pow(s, -0.5), s * std::pow(w, -1.5));
    CHECK_THAT(synattn::warmup_inverse_sqrt(s, 100), WithinRel(paper / (std::pow(d, -0.5) * std::pow(w, -0.5)), 1e-13));
  }
  CHECK_THAT(synattn::warmup_inverse_sqrt(4, 0), WithinRel(0.5, 1e-15));
}

TEST_CASE("warmup + cosine decay to a floor", "[train][schedule]") {
  // warmup 10, total 110, floor 0.1: step 5 -> 0.5; step 10 -> 1;
  // step 60 (half-way) -> 0.1 + 0.9 * 0.5 = 0.55; step 35 (quarter) ->
  // 0.1 + 0.9 * (1 + cos(pi/4)) / 2; step 110 and after -> 0.1.
  CHECK_THAT(synattn::warmup_cosine(5, 10, 110, 0.1), WithinRel(0.5, 1e-15));
  CHECK_THAT(synattn::warmup_cosine(10, 10, 110, 0.1), WithinRel(1.0, 1e-15));
  CHECK_THAT(synattn::warmup_cosine(60, 10, 110, 0.1), WithinRel(0.55, 1e-14));
  CHECK_THAT(synattn::warmup_cosine(35, 10, 110, 0.1), WithinRel(0.1 + 0.45 * (1 + std::sqrt(0.5)), 1e-14));
  CHECK_THAT(synattn::warmup_cosine(110, 10, 110, 0.1), WithinRel(0.1, 1e-14));
  CHECK_THAT(synattn::warmup_cosine(500, 10, 110, 0.1), WithinRel(0.1, 1e-14));
  CHECK_THAT(synattn::warmup_cosine(110, 10, 110), WithinAbs(0.0, 1e-16));
}

TEST_CASE("LrSchedule multiplies the base rate by the schedule", "[train][schedule]") {
  synattn::LrSchedule s;
  s.kind = synattn::LrSchedule::Kind::WarmupInverseSqrt;
  s.base_lr = 2e-3;
  s.warmup = 100;
  CHECK_THAT(s.lr(400), WithinRel(1e-3, 1e-15));
  s.kind = synattn::LrSchedule::Kind::Constant;
  CHECK(s.lr(7) == 2e-3);
  s.kind = synattn::LrSchedule::Kind::WarmupCosine;
  s.total = 50;
  CHECK_THROWS_WITH(s.lr(1), Catch::Contains("total (50) must exceed warmup (100)"));
}

TEST_CASE("schedules reject steps before the first", "[train][schedule][errors]") {
  CHECK_THROWS_WITH(synattn::warmup_constant(0, 4), Catch::Contains("step must be >= 1"));
  CHECK_THROWS_WITH(synattn::warmup_inverse_sqrt(3, -1), Catch::Contains("warmup must be >= 0"));
  CHECK_THROWS_WITH(synattn::warmup_cosine(3, 1, 10, 1.5), Catch::Contains("floor must be in [0, 1]"));
}
