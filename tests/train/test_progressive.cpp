// Progressive introduction of the syntax strength: Hold keeps s fixed and
// its optimiser state clean for K steps; Ramp anchors s to its start with a
// pull that fades over K steps.
#include <catch2/catch.hpp>

#include <synattn/train/optimizer.hpp>
#include <synattn/train/progressive.hpp>

using synattn::ParameterStore;
using synattn::ProgressiveOptions;
using synattn::ProgressiveStrength;

namespace {

ParameterStore<double> model() {
  ParameterStore<double> store;
  store.add("layers.0.attention.Wq", 2, 2);
  store.add("layers.0.attention.scale", 1, 1);
  store.add("layers.1.attention.scale", 1, 1);
  store.add("frozen.scale", 1, 1, false);
  store.values().setConstant(0.5);
  return store;
}

}  // namespace

TEST_CASE("Hold: s stays at its value with zero Adam moments for K steps, then learns",
          "[train][progressive]") {
  ParameterStore<double> store = model();
  ProgressiveOptions o;
  o.value = 0.05;
  o.steps = 3;
  const ProgressiveStrength<double> intro(o);
  synattn::AdamOptions ao = synattn::AdamOptions::adamw(0.01, 0.1);  // decay would move s
  synattn::Adam<double> opt(ao);
  const int s0 = store.id("layers.0.attention.scale"), s1 = store.id("layers.1.attention.scale");
  const int frozen = store.id("frozen.scale");

  intro.begin(store);
  CHECK(store.value(s0)(0, 0) == 0.05);
  CHECK(store.value(frozen)(0, 0) == 0.5);  // frozen: not ours to set
  for (long long t = 1; t <= 5; ++t) {
    store.gradients().setConstant(0.3);
    intro.before_step(t, store);
    if (t <= 3) {
      CHECK(store.gradient(s0)(0, 0) == 0.0);
      CHECK(store.gradient(s1)(0, 0) == 0.0);
      CHECK(store.gradient(0)(0, 0) == 0.3);
    }
    opt.step(store);
    intro.after_step(t, store);
    if (t <= 3) {
      INFO("step " << t);
      CHECK(store.value(s0)(0, 0) == 0.05);
      CHECK(store.value(s1)(0, 0) == 0.05);
      CHECK(opt.state()[0][store.info(s0).offset] == 0.0);
      CHECK(opt.state()[1][store.info(s0).offset] == 0.0);
      CHECK(store.value(0)(0, 0) != 0.5);  // the rest trains
    }
  }
  // Steps 4 and 5 were free: s moved and its moments are those of two steps.
  CHECK(store.value(s0)(0, 0) < 0.05);
  CHECK_THAT(opt.state()[0][store.info(s0).offset], Catch::Matchers::WithinRel(0.1 * 0.3 * (1 + 0.9), 1e-14));
  CHECK(intro.active(3));
  CHECK_FALSE(intro.active(4));
}

TEST_CASE("Ramp: s = start + (t/K)(s - start) after step t < K, free afterwards", "[train][progressive]") {
  ParameterStore<double> store = model();
  ProgressiveOptions o;
  o.mode = ProgressiveOptions::Mode::Ramp;
  o.value = 1.0;
  o.steps = 4;
  const ProgressiveStrength<double> intro(o);
  synattn::SgdOptions so;
  so.lr = 0.1;
  synattn::Sgd<double> opt(so);
  const int s0 = store.id("layers.0.attention.scale");

  intro.begin(store);
  double expected = 1.0;
  for (long long t = 1; t <= 6; ++t) {
    store.gradients().setConstant(-2.0);  // plain SGD adds 0.2 per step
    intro.before_step(t, store);
    CHECK(store.gradient(s0)(0, 0) == -2.0);  // Ramp never blocks the gradient
    opt.step(store);
    intro.after_step(t, store);
    expected += 0.2;
    if (t < 4) expected = 1.0 + (static_cast<double>(t) / 4.0) * (expected - 1.0);
    INFO("step " << t);
    CHECK_THAT(store.value(s0)(0, 0), Catch::Matchers::WithinRel(expected, 1e-14));
  }
}

TEST_CASE("ProgressiveStrength rejects bad options and steps", "[train][progressive][errors]") {
  ProgressiveOptions o;
  o.steps = -1;
  CHECK_THROWS_WITH(ProgressiveStrength<float>(o), Catch::Contains("options.steps must be >= 0, got -1"));
  o.steps = 2;
  ProgressiveStrength<double> intro(o);
  ParameterStore<double> store = model();
  CHECK_THROWS_WITH(intro.before_step(0, store), Catch::Contains("before_step: step must be >= 1"));
}
