// Optimisers: SGD (momentum, dampening, Nesterov, weight decay), Adam and
// AdamW against hand-derived updates and against torch.optim's numbers;
// parameter groups' rates and weight decays; frozen parameters; state layout.
// Eigen's own allocations bypass operator new: make them checkable too
// (EIGEN_RUNTIME_NO_MALLOC), with an assertion that reports even under NDEBUG.
#include <stdexcept>
#define EIGEN_RUNTIME_NO_MALLOC
#define eigen_assert(x) \
  do {                  \
    if (!(x)) throw std::logic_error("Eigen assertion failed: " #x); \
  } while (0)

#include <catch2/catch.hpp>

#include <synattn/train/optimizer.hpp>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "support/count_allocations.hpp"  // g_allocations

using synattn::Adam;
using synattn::AdamOptions;
using synattn::ParameterGroup;
using synattn::ParameterGroups;
using synattn::ParameterStore;
using synattn::Sgd;
using synattn::SgdOptions;

namespace {

// The parameter and gradients of tools/torch_optimizer_reference.py.
const std::vector<double> kP0 = {0.5, -1.25, 2.0, 0.75};
const std::vector<std::vector<double>> kGrads = {
    {0.1, -0.2, 0.3, 0.05}, {-0.4, 0.25, 0.0, 1.5}, {0.2, 0.2, -0.6, -0.1}};

template <class Scalar>
ParameterStore<Scalar> one_matrix() {
  ParameterStore<Scalar> store;
  const int id = store.add("w", 2, 2);
  for (int i = 0; i < 4; ++i) store.value(id).data()[i] = static_cast<Scalar>(kP0[static_cast<std::size_t>(i)]);
  return store;
}

// Runs the three reference steps and checks each against `expected`.
template <class Scalar>
void check_against(synattn::Optimizer<Scalar>& opt, const std::vector<std::vector<double>>& expected, double rel) {
  ParameterStore<Scalar> store = one_matrix<Scalar>();
  for (std::size_t t = 0; t < kGrads.size(); ++t) {
    for (int i = 0; i < 4; ++i) store.gradients()[i] = static_cast<Scalar>(kGrads[t][static_cast<std::size_t>(i)]);
    opt.step(store);
    for (int i = 0; i < 4; ++i) {
      INFO("step " << t + 1 << " entry " << i);
      CHECK_THAT(static_cast<double>(store.values()[i]),
                 Catch::Matchers::WithinRel(expected[t][static_cast<std::size_t>(i)], rel));
    }
  }
}

// Made by tools/torch_optimizer_reference.py (PyTorch 1.13.0, float64):
//   SGD(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)
const std::vector<std::vector<double>> kTorchSgdMomentum = {
    {0.48949999999999999, -1.22875, 1.968, 0.74424999999999997},
    {0.51560945000000002, -1.231019125, 1.9374288, 0.60340517500000002},
    {0.52064390649500003, -1.2499534202875, 1.96217103408, 0.48510176784250003}};
//   SGD(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
const std::vector<std::vector<double>> kTorchSgdNesterov = {
    {0.48004999999999998, -1.209625, 1.9392, 0.73907500000000004},
    {0.54663290499999995, -1.2376142125, 1.9095955200000001, 0.44801325750000004},
    {0.53195096198049996, -1.2770416992462501, 1.995068536512, 0.33987163156075001}};
//   Adam(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
const std::vector<std::vector<double>> kTorchAdam = {
    {0.4900000006666666, -1.2400000003076923, 1.9900000002, 0.74000000079999995},
    {0.49421122910693693, -1.2364439659702722, 1.981021888843838, 0.73205176830542718},
    {0.49344007773318244, -1.2351270790561928, 1.9792879247898632, 0.72601709233767053}};
//   AdamW(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
const std::vector<std::vector<double>> kTorchAdamW = {
    {0.48950009999900002, -1.2387500499997501, 1.9880000333332222, 0.73925019999600006},
    {0.49509483287588302, -1.2397187035887414, 1.9797108172526039, 0.73046931481692279},
    {0.49546658153041723, -1.2435938176035102, 1.9820355247266848, 0.72439661712395864}};

SgdOptions sgd_momentum() {
  SgdOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.dampening = 0.1;
  o.weight_decay = 0.01;
  return o;
}
SgdOptions sgd_nesterov() {
  SgdOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.nesterov = true;
  o.weight_decay = 0.01;
  return o;
}
AdamOptions adam_l2() {
  AdamOptions o;
  o.lr = 0.01;
  o.weight_decay = 0.1;
  return o;
}
AdamOptions adamw() {
  AdamOptions o = AdamOptions::adamw(0.01, 0.1);
  o.beta1 = 0.8;
  o.beta2 = 0.99;
  o.eps = 1e-6;
  return o;
}

}  // namespace

TEMPLATE_TEST_CASE("optimisers reproduce torch.optim's steps", "[train][optimizer]", float, double) {
  // float runs the same arithmetic in float: agreement to a few ulps of float.
  const double rel = std::is_same<TestType, double>::value ? 1e-14 : 2e-6;
  SECTION("SGD with momentum, dampening and weight decay") {
    Sgd<TestType> opt(sgd_momentum());
    check_against(opt, kTorchSgdMomentum, rel);
  }
  SECTION("SGD with Nesterov momentum") {
    Sgd<TestType> opt(sgd_nesterov());
    check_against(opt, kTorchSgdNesterov, rel);
  }
  SECTION("Adam with L2 weight decay") {
    Adam<TestType> opt(adam_l2());
    check_against(opt, kTorchAdam, rel);
  }
  SECTION("AdamW") {
    Adam<TestType> opt(adamw());
    check_against(opt, kTorchAdamW, rel);
  }
}

TEST_CASE("plain SGD is p -= lr * g, and momentum starts from the first gradient", "[train][optimizer]") {
  ParameterStore<double> store = one_matrix<double>();
  SgdOptions o;
  o.lr = 0.5;
  Sgd<double> plain(o);
  CHECK(plain.state_names().empty());
  for (int i = 0; i < 4; ++i) store.gradients()[i] = kGrads[0][static_cast<std::size_t>(i)];
  plain.step(store);
  for (int i = 0; i < 4; ++i) CHECK(store.values()[i] == kP0[static_cast<std::size_t>(i)] - 0.5 * kGrads[0][static_cast<std::size_t>(i)]);

  // Momentum 0.9, dampening 0.5: buf1 = g1 (no dampening on the first step),
  // buf2 = 0.9 g1 + 0.5 g2.
  ParameterStore<double> m = one_matrix<double>();
  o.momentum = 0.9;
  o.dampening = 0.5;
  Sgd<double> mom(o);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 4; ++i) m.gradients()[i] = kGrads[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)];
    mom.step(m);
  }
  for (std::size_t i = 0; i < 4; ++i) {
    const double buf1 = kGrads[0][i], buf2 = 0.9 * buf1 + 0.5 * kGrads[1][i];
    CHECK_THAT(mom.state()[0][static_cast<Eigen::Index>(i)], Catch::Matchers::WithinRel(buf2, 1e-15));
    CHECK_THAT(m.values()[static_cast<Eigen::Index>(i)], Catch::Matchers::WithinRel(kP0[i] - 0.5 * buf1 - 0.5 * buf2, 1e-15));
  }
  CHECK(mom.steps() == 2);
}

TEST_CASE("Adam's first step moves every entry by lr * g / (|g| + eps)", "[train][optimizer]") {
  // After one step m = (1-b1) g and v = (1-b2) g^2, so the bias corrections
  // cancel: p1 = p0 - lr * g / (|g| + eps).
  ParameterStore<double> store = one_matrix<double>();
  AdamOptions o;
  o.lr = 0.05;
  o.eps = 1e-3;
  Adam<double> opt(o);
  for (int i = 0; i < 4; ++i) store.gradients()[i] = kGrads[0][static_cast<std::size_t>(i)];
  opt.step(store);
  for (std::size_t i = 0; i < 4; ++i) {
    const double g = kGrads[0][i];
    CHECK_THAT(store.values()[static_cast<Eigen::Index>(i)],
               Catch::Matchers::WithinRel(kP0[i] - 0.05 * g / (std::abs(g) + 1e-3), 1e-14));
    CHECK_THAT(opt.state()[0][static_cast<Eigen::Index>(i)], Catch::Matchers::WithinRel(0.1 * g, 1e-14));
    CHECK_THAT(opt.state()[1][static_cast<Eigen::Index>(i)], Catch::Matchers::WithinRel(0.001 * g * g, 1e-12));
  }
  CHECK(opt.kind() == "adam");
  CHECK(Adam<double>(AdamOptions::adamw()).kind() == "adamw");
}

TEST_CASE("parameter groups scale the rate, override weight decay, and frozen parameters stay put",
          "[train][optimizer][groups]") {
  ParameterStore<double> store;
  store.add("layers.0.attention.Wq", 2, 2);
  store.add("layers.0.attention.scale", 1, 1);
  store.add("bias.table", 1, 3);
  store.add("frozen", 1, 2, false);
  store.values().setConstant(1.0);
  store.gradients().setConstant(0.25);

  SgdOptions o;
  o.lr = 0.1;
  o.weight_decay = 0.5;
  Sgd<double> opt(o, synattn::syntax_bias_groups(10.0));  // bias group: 10x, no decay
  opt.step(store);

  // Default group: p -= 0.1 * (0.25 + 0.5 * 1).
  CHECK_THAT(store.value(0)(1, 1), Catch::Matchers::WithinRel(1.0 - 0.1 * 0.75, 1e-15));
  // Syntax bias group: p -= 1.0 * 0.25 (weight decay overridden to 0).
  CHECK_THAT(store.value(1)(0, 0), Catch::Matchers::WithinRel(1.0 - 1.0 * 0.25, 1e-15));
  CHECK_THAT(store.value(2)(0, 2), Catch::Matchers::WithinRel(1.0 - 1.0 * 0.25, 1e-15));
  // Frozen: untouched despite a gradient.
  CHECK(store.value(3)(0, 0) == 1.0);
  CHECK(store.value(3)(0, 1) == 1.0);

  SECTION("first matching group wins; the default group keeps the optimiser's decay") {
    ParameterGroups g;
    g.add(ParameterGroup{"tables", synattn::name_ends_with(".table"), 2.0, std::nullopt});
    g.add(ParameterGroup{"bias", synattn::name_starts_with("bias."), 100.0, 0.0});
    const synattn::ParameterInfo& table = store.info(2);
    CHECK(g.group_of(table) == 0);
    CHECK(g.lr_multiplier(table) == 2.0);
    CHECK(g.weight_decay(table, 0.5) == 0.5);
    CHECK(g.group_of(store.info(0)) == -1);
    CHECK(g.lr_multiplier(store.info(0)) == 1.0);
  }
  SECTION("the syntax-bias predicate") {
    synattn::ParameterInfo p;
    for (const char* yes : {"table", "scale", "layers.3.attention.table", "layers.0.attention.scale", "bias.table",
                            "view_logits", "layers.1.attention.view_logits"}) {
      p.name = yes;
      CHECK(synattn::is_syntax_bias_parameter(p));
    }
    for (const char* no :
         {"rescale", "layers.1.norm2.bias", "classifier.weight", "embedding.weight", "timetable", "my_view_logits"}) {
      p.name = no;
      CHECK_FALSE(synattn::is_syntax_bias_parameter(p));
    }
  }
}

TEST_CASE("optimiser state is laid out like the parameters and not reallocated", "[train][optimizer]") {
  ParameterStore<float> store;
  store.add("a", 2, 3);
  store.add("frozen", 1, 2, false);
  store.add("b", 1, 4);
  store.gradients().setConstant(1.0f);
  Adam<float> opt(AdamOptions{});
  opt.step(store);
  REQUIRE(opt.state().size() == 2);
  REQUIRE(opt.state()[0].size() == store.size());
  const float* m = opt.state()[0].data();
  for (int t = 0; t < 3; ++t) opt.step(store);
  CHECK(opt.state()[0].data() == m);
  CHECK(opt.steps() == 4);
  // Frozen entries: no state, no change.
  CHECK(opt.state()[0].segment(6, 2).isZero(0));
  CHECK(opt.state()[1].segment(6, 2).isZero(0));
  CHECK(store.values().segment(6, 2).isZero(0));
  CHECK(opt.state()[0][0] > 0);
  CHECK(opt.state()[1][10] > 0);
}

TEST_CASE("optimisers reject bad hyper-parameters and mismatched buffers", "[train][optimizer][errors]") {
  SgdOptions s;
  s.nesterov = true;
  CHECK_THROWS_WITH(Sgd<double>(s), Catch::Contains("nesterov needs momentum > 0"));
  AdamOptions a;
  a.beta1 = 1.0;
  CHECK_THROWS_WITH(Adam<double>(a), Catch::Contains("beta1 must be in [0, 1)"));
  a = AdamOptions{};
  a.lr = -1;
  CHECK_THROWS_WITH(Adam<double>(a), Catch::Contains("learning rate must be finite and >= 0"));

  ParameterStore<double> store;
  store.add("w", 2, 2);
  Adam<double> opt(AdamOptions{});
  Eigen::VectorXd short_grads(3);
  CHECK_THROWS_WITH(opt.step(store.infos(), store.values(), short_grads),
                    Catch::Contains("gradients has 3 entries, values has 4"));
  std::vector<synattn::ParameterInfo> infos = store.infos();
  infos[0].rows = 3;
  CHECK_THROWS_WITH(opt.step(infos, store.values(), store.gradients()), Catch::Contains("'w') spans [0, 6)"));
  CHECK_THROWS_WITH(opt.restore({Eigen::VectorXd(4)}, 1), Catch::Contains("expected 2 state vectors, got 1"));
  CHECK_THROWS_WITH(ParameterGroups().add(ParameterGroup{"g", nullptr, 1.0, std::nullopt}),
                    Catch::Contains("group 'g' has no predicate"));
}

TEST_CASE("steps after the first allocate nothing", "[train][optimizer]") {
  ParameterStore<double> store;
  store.add("layers.0.attention.Wq", 4, 4);
  store.add("layers.0.attention.table", 1, 8);
  store.add("layers.0.attention.scale", 1, 1);
  store.add("classifier.weight", 2, 4);
  store.gradients().setConstant(0.5);
  SgdOptions so;
  so.momentum = 0.9;
  Sgd<double> sgd(so, synattn::syntax_bias_groups());
  Adam<double> adam(AdamOptions::adamw(), synattn::syntax_bias_groups());
  sgd.step(store);
  adam.step(store);
  const long long before = g_allocations;
  Eigen::internal::set_is_malloc_allowed(false);  // an Eigen allocation now throws
  try {
    for (int t = 0; t < 5; ++t) {
      sgd.step(store);
      adam.step(store);
    }
  } catch (...) {
    Eigen::internal::set_is_malloc_allowed(true);
    throw;
  }
  Eigen::internal::set_is_malloc_allowed(true);
  CHECK(g_allocations == before);
  const long long probe = g_allocations;
  { std::vector<int> counted(10); }
  CHECK(g_allocations == probe + 1);  // the counter itself works
  // The guard itself works: an Eigen allocation while it is on throws.
  bool guarded = false;
  Eigen::internal::set_is_malloc_allowed(false);
  try {
    Eigen::VectorXd v(3);
    v.setZero();
  } catch (const std::logic_error&) {
    guarded = true;
  }
  Eigen::internal::set_is_malloc_allowed(true);
  CHECK(guarded);
}

// A checkpoint's optimizer.steps of LLONG_MAX was accepted, and the next
// step() overflowed a signed integer.
TEST_CASE("the step count stays within 2^53, where bias corrections are exact", "[train][optimizer]") {
  ParameterStore<double> store;
  store.add("w", 2, 2);
  store.gradients().setConstant(0.5);
  Adam<double> opt(AdamOptions{});
  const std::vector<Eigen::VectorXd> zeros(2, Eigen::VectorXd::Zero(4));
  CHECK_THROWS_WITH(opt.restore(zeros, std::numeric_limits<long long>::max()),
                    Catch::Contains("step count must be in [0, 2^53], got 9223372036854775807"));
  CHECK_THROWS_WITH(opt.restore(zeros, -1), Catch::Contains("step count must be in [0, 2^53]"));
  opt.restore(zeros, Adam<double>::kMaxSteps - 1);
  opt.step(store);
  CHECK(opt.steps() == Adam<double>::kMaxSteps);
  const Eigen::VectorXd before = store.values();
  CHECK_THROWS_WITH(opt.step(store), Catch::Contains("the step count has reached 9007199254740992"));
  CHECK(opt.steps() == Adam<double>::kMaxSteps);
  CHECK(store.values() == before);  // the refused step changed nothing
}

// restore() took state of the wrong size, and step() then silently reset the
// moments while keeping the step count; one optimizer stepping a second
// model silently shared its moments with the first.
TEST_CASE("an optimizer serves one model: another layout or a state of another size is refused",
          "[train][optimizer]") {
  ParameterStore<double> a, b, c;
  a.add("w", 2, 2);
  b.add("w", 2, 3);
  c.add("v", 2, 2);  // same size as a, another name
  for (auto* s : {&a, &b, &c}) s->gradients().setConstant(0.25);
  Adam<double> opt(AdamOptions{});
  opt.step(a);
  const std::vector<Eigen::VectorXd> moments = opt.state();
  CHECK_THROWS_WITH(opt.step(b), Catch::Contains("the optimizer state holds 4 entries per vector, the parameters 6"));
  CHECK_THROWS_WITH(opt.step(c), Catch::Contains("laid out differently from those of the earlier steps"));
  CHECK(opt.steps() == 1);
  CHECK(opt.state()[0] == moments[0]);
  opt.step(a);  // its own model still steps
  CHECK(opt.steps() == 2);

  // A restored state of another model's size is refused at the next step,
  // instead of being replaced by zeros under the restored step count.
  Adam<double> restored(AdamOptions{});
  restored.restore(std::vector<Eigen::VectorXd>(2, Eigen::VectorXd::Zero(6)), 10);
  CHECK_THROWS_WITH(restored.step(a), Catch::Contains("it was restored or stepped for another model"));
  CHECK(restored.steps() == 10);
  restored.reset();
  restored.step(a);  // after reset() it starts afresh on any model
  CHECK(restored.steps() == 1);

  // Freezing a parameter keeps the layout: a schedule may do that mid-run.
  Sgd<double> sgd(SgdOptions{});
  sgd.step(a);
  std::vector<synattn::ParameterInfo> frozen = a.infos();
  frozen[0].trainable = false;
  CHECK_NOTHROW(sgd.step(frozen, a.values(), a.gradients()));
}

TEST_CASE("a layout whose size overflows is refused by step(), not used", "[train][optimizer]") {
  ParameterStore<double> store;
  store.add("w", 2, 2);
  std::vector<synattn::ParameterInfo> infos = store.infos();
  infos[0].rows = Eigen::Index(1) << 40;
  infos[0].cols = Eigen::Index(1) << 40;
  Sgd<double> sgd(SgdOptions{});
  CHECK_THROWS_WITH(sgd.step(infos, store.values(), store.gradients()),
                    Catch::Contains("sgd::step: parameter 0 ('w') has offset 0 and shape") &&
                        Catch::Contains("its end overflows"));
}

// A group learning-rate multiplier of 1e308 made parameters inf; a NaN
// gradient was applied. Either is now refused with nothing changed.
TEMPLATE_TEST_CASE("a step that would leave a parameter non-finite changes nothing", "[train][optimizer][nan]",
                   float, double) {
  using Catch::Contains;
  ParameterStore<TestType> store;
  store.add("layers.0.attention.Wq", 2, 2);
  store.add("layers.0.attention.table", 1, 3);
  store.values().setConstant(TestType(0.5));
  store.gradients().setConstant(TestType(100));
  SgdOptions so;
  so.lr = 0.1;
  so.momentum = 0.9;
  Sgd<TestType> sgd(so, synattn::syntax_bias_groups(1e308));
  Adam<TestType> adam(AdamOptions::adamw(1e-3), synattn::syntax_bias_groups(1e308));
  for (synattn::Optimizer<TestType>* opt : {static_cast<synattn::Optimizer<TestType>*>(&sgd),
                                            static_cast<synattn::Optimizer<TestType>*>(&adam)}) {
    INFO(opt->kind());
    const Eigen::Matrix<TestType, Eigen::Dynamic, 1> before = store.values();
    // SGD: 0.5 - 1e307 * 100 overflows in both types; Adam's step is about the
    // rate, 1e305, which overflows float only.
    if (opt == &sgd || sizeof(TestType) == sizeof(float)) {
      CHECK_THROWS_WITH(opt->step(store), Contains("the update would make 'layers.0.attention.table' entry 0") &&
                                              Contains("nothing was updated"));
      CHECK(store.values() == before);
      CHECK(opt->steps() == 0);
      CHECK(opt->state().empty());
    }
    // A NaN gradient, in the default group: refused by name before anything moves.
    store.gradient(0)(1, 0) = std::numeric_limits<TestType>::quiet_NaN();
    CHECK_THROWS_WITH(opt->step(store), Contains("the gradient of 'layers.0.attention.Wq' entry 2 is nan"));
    CHECK(store.values() == before);
    store.gradients().setConstant(TestType(100));
  }
  // A refused first step leaves the optimiser as new: a later good step is
  // bit for bit a fresh optimiser's.
  store.gradients().setConstant(TestType(1e-3));
  Sgd<TestType> fresh(so, synattn::syntax_bias_groups(2.0));
  Sgd<TestType> refused(so, synattn::syntax_bias_groups(2.0));
  ParameterStore<TestType> copy = store;
  copy.gradient(1)(0, 2) = std::numeric_limits<TestType>::infinity();
  CHECK_THROWS(refused.step(copy));
  copy.gradients() = store.gradients();
  refused.step(copy);
  fresh.step(store);
  CHECK(copy.values() == store.values());
  CHECK(refused.state()[0] == fresh.state()[0]);
  CHECK(refused.steps() == 1);
}
