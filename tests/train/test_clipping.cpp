// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_.
#include <catch2/catch.hpp>

#include <synattn/train/clipping.hpp>

#include <cmath>
#include <limits>
#include <vector>

using synattn::ParameterStore;

TEMPLATE_TEST_CASE("clip_grad_norm scales trainable gradients to max_norm", "[train][clip]", float, double) {
  ParameterStore<TestType> store;
  store.add("a", 1, 2);
  store.add("frozen", 1, 1, false);
  store.add("b", 2, 1);
  // Trainable gradients 3, 4 | 12 | 0, 0: norm 5 (the frozen 12 is not counted).
  store.gradients() << 3, 4, 12, 0, 0;

  SECTION("below the limit nothing changes") {
    const auto r = synattn::clip_grad_norm(store, 10.0);
    CHECK(r.total_norm == 5.0);
    CHECK(r.scale == 1.0);
    CHECK_FALSE(r.clipped());
    CHECK(store.gradients()[0] == TestType(3));
  }
  SECTION("above it the gradients are scaled by max_norm / (norm + 1e-6)") {
    const auto r = synattn::clip_grad_norm(store, 1.0);
    CHECK(r.total_norm == 5.0);
    CHECK(r.clipped());
    CHECK_THAT(r.scale, Catch::Matchers::WithinRel(1.0 / (5.0 + 1e-6), 1e-15));
    CHECK_THAT(static_cast<double>(store.gradients()[0]), Catch::Matchers::WithinRel(3 / (5.0 + 1e-6), 1e-6));
    CHECK_THAT(static_cast<double>(store.gradients()[1]), Catch::Matchers::WithinRel(4 / (5.0 + 1e-6), 1e-6));
    CHECK(store.gradients()[2] == TestType(12));  // frozen: untouched
    const auto again = synattn::clip_grad_norm(store, 1.0);
    CHECK_THAT(again.total_norm, Catch::Matchers::WithinRel(1.0, 1e-6));
  }
}

TEST_CASE("clip_grad_norm sums in double, so float gradients do not overflow", "[train][clip]") {
  ParameterStore<float> store;
  store.add("a", 1, 2);
  store.gradients() << 3e20f, 4e20f;  // squares overflow float
  const auto r = synattn::clip_grad_norm(store, 1.0);
  CHECK(r.finite);
  CHECK_THAT(r.total_norm, Catch::Matchers::WithinRel(5e20, 1e-6));
  CHECK_THAT(static_cast<double>(store.gradients()[1]), Catch::Matchers::WithinRel(0.8, 1e-6));
}

// The sum of squares of finite 1e200 gradients overflowed double, which was
// then reported as a non-finite norm and left the gradients unclipped.
TEST_CASE("clip_grad_norm scales huge finite double gradients, as LAPACK's nrm2 does", "[train][clip][nan]") {
  ParameterStore<double> store;
  store.add("a", 1, 2);
  store.add("frozen", 1, 1, false);
  store.add("b", 1, 1);
  store.gradients() << 3e200, -4e200, std::numeric_limits<double>::quiet_NaN(), 12e200;
  const auto r = synattn::clip_grad_norm(store, 2.0);
  CHECK(r.finite);
  CHECK_THAT(r.total_norm, Catch::Matchers::WithinRel(13e200, 1e-14));
  CHECK(r.clipped());
  CHECK_THAT(store.gradients()[0], Catch::Matchers::WithinRel(6.0 / 13, 1e-14));
  CHECK_THAT(store.gradients()[1], Catch::Matchers::WithinRel(-8.0 / 13, 1e-14));
  CHECK_THAT(store.gradients()[3], Catch::Matchers::WithinRel(24.0 / 13, 1e-14));
  CHECK(std::isnan(store.gradients()[2]));  // frozen: neither counted nor scaled
  // Near the largest double the norm itself is not representable, but the
  // gradients still come out at max_norm.
  store.gradients() << 1.5e308, 1.5e308, 0, 1.5e308;
  const auto top = synattn::clip_grad_norm(store, 1.0);
  CHECK(top.finite);
  CHECK(std::isinf(top.total_norm));
  CHECK_THAT(store.gradients()[0], Catch::Matchers::WithinRel(1 / std::sqrt(3.0), 1e-14));
}

TEST_CASE("a non-finite norm is reported, or thrown naming the entry", "[train][clip][errors]") {
  ParameterStore<double> store;
  store.add("a", 1, 2);
  store.add("b", 1, 3);
  store.gradients() << 1, 2, 3, std::numeric_limits<double>::quiet_NaN(), 5;
  const auto r = synattn::clip_grad_norm(store, 1.0);
  CHECK_FALSE(r.finite);
  CHECK(std::isnan(r.total_norm));
  CHECK(store.gradients()[0] == 1.0);  // left alone
  synattn::ClipOptions strict;
  strict.error_if_nonfinite = true;
  CHECK_THROWS_WITH(synattn::clip_grad_norm(store, 1.0, strict), Catch::Contains("gradient of 'b' entry 1 is nan"));
  CHECK_THROWS_WITH(synattn::clip_grad_norm(store, 0.0), Catch::Contains("max_norm must be finite and > 0"));
}

// The clipping layout check accepted negative shapes and computed
// offset + rows * cols without overflow checks.
TEST_CASE("clip_grad_norm refuses a layout with a negative or overflowing shape", "[train][clip][errors]") {
  ParameterStore<double> store;
  store.add("w", 2, 2);
  std::vector<synattn::ParameterInfo> infos = store.infos();
  infos[0].rows = -2;
  infos[0].cols = -2;  // rows * cols = 4 would pass a size-only check
  CHECK_THROWS_WITH(synattn::clip_grad_norm<double>(infos, store.gradients(), 1.0),
                    "clip_grad_norm: parameter 0 ('w') has offset 0 and shape -2x-2: negative, or its end overflows");
  infos[0].rows = Eigen::Index(1) << 40;
  infos[0].cols = Eigen::Index(1) << 40;
  CHECK_THROWS_WITH(synattn::clip_grad_norm<double>(infos, store.gradients(), 1.0),
                    Catch::Contains("its end overflows"));
  infos[0].rows = 3;
  infos[0].cols = 2;
  CHECK_THROWS_WITH(synattn::clip_grad_norm<double>(infos, store.gradients(), 1.0),
                    "clip_grad_norm: parameter 0 ('w') spans [0, 6), outside the 4 gradients");
}
