// Checkpoints: parameters and optimiser state round-trip bit for bit (float
// and double); shapes are PyTorch's and both row layouts load; every way a
// checkpoint can disagree with the model is refused without changing it;
// NaN and infinity are refused both ways unless asked for, and then
// round-trip bit for bit; and a real attention layer trained with Adam,
// checkpointed at step 5 and resumed into a fresh layer and optimiser
// continues bit-identically.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/train/checkpoint.hpp>
#include <synattn/train/clipping.hpp>
#include <synattn/train/optimizer.hpp>
#include <synattn/train/progressive.hpp>
#include <synattn/train/schedules.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>
#include "support/attention_calls.hpp"

using synattn::Adam;
using synattn::AdamOptions;
using synattn::BucketBlock;
using synattn::ParameterStore;
using synattn::SafetensorsFile;
using synattn::SafeTensor;

namespace {

template <class Scalar>
ParameterStore<Scalar> small_model(unsigned seed) {
  ParameterStore<Scalar> store;
  store.add("embedding.weight", 3, 2);
  store.add("layers.0.attention.table", 1, 4);
  store.add("layers.0.attention.scale", 1, 1);
  store.add("frozen.weight", 2, 1, false);
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  for (Eigen::Index i = 0; i < store.size(); ++i) store.values()[i] = static_cast<Scalar>(normal(rng));
  return store;
}

template <class Scalar>
void fill_gradients(ParameterStore<Scalar>& store, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  for (Eigen::Index i = 0; i < store.size(); ++i) store.gradients()[i] = static_cast<Scalar>(normal(rng));
}

template <class V>
bool same_bits(const V& a, const V& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), sizeof(typename V::Scalar) * static_cast<std::size_t>(a.size())) == 0;
}

std::string temp_path(const std::string& name) { return "synattn_test_ckpt_" + name + ".safetensors"; }

struct Remove {
  std::string path;
  ~Remove() { std::remove(path.c_str()); }
};

}  // namespace

TEMPLATE_TEST_CASE("a checkpoint restores parameters, optimiser state and step bit for bit", "[checkpoint]", float,
                   double) {
  using Vector = Eigen::Matrix<TestType, Eigen::Dynamic, 1>;
  ParameterStore<TestType> a = small_model<TestType>(1);
  Adam<TestType> opt_a(AdamOptions::adamw(0.01), synattn::syntax_bias_groups());
  for (unsigned t = 0; t < 3; ++t) {
    fill_gradients(a, 10 + t);
    opt_a.step(a);
  }
  const Remove file{temp_path(sizeof(TestType) == 4 ? "f" : "d")};
  synattn::save_checkpoint(file.path, a, &opt_a, 3, {{"run", "unit test"}});

  ParameterStore<TestType> b = small_model<TestType>(2);
  Adam<TestType> opt_b(AdamOptions::adamw(0.01), synattn::syntax_bias_groups());
  const synattn::CheckpointInfo info = synattn::load_checkpoint(file.path, b, &opt_b);
  CHECK(info.step == 3);
  CHECK(info.metadata.at("run") == "unit test");
  CHECK(info.metadata.at("optimizer") == "adamw");
  CHECK(info.metadata.at("dtype") == (sizeof(TestType) == 4 ? "F32" : "F64"));
  CHECK(same_bits(Vector(a.values()), Vector(b.values())));
  CHECK(opt_b.steps() == 3);
  REQUIRE(opt_b.state().size() == 2);
  CHECK(same_bits(opt_a.state()[0], opt_b.state()[0]));
  CHECK(same_bits(opt_a.state()[1], opt_b.state()[1]));

  // Both continue identically.
  fill_gradients(a, 99);
  fill_gradients(b, 99);
  opt_a.step(a);
  opt_b.step(b);
  CHECK(same_bits(Vector(a.values()), Vector(b.values())));

  SECTION("weights alone load without an optimiser") {
    ParameterStore<TestType> c = small_model<TestType>(3);
    synattn::load_checkpoint<TestType>(file.path, c, nullptr);
    CHECK(same_bits(Vector(c.values()).eval(), Vector(a.values()).eval()) == false);  // a moved on
    ParameterStore<TestType> d = small_model<TestType>(3);
    synattn::load_checkpoint<TestType>(file.path, d, nullptr);
    CHECK(same_bits(Vector(c.values()), Vector(d.values())));
  }
}

TEST_CASE("checkpoint tensors have PyTorch's shapes and other layouts load", "[checkpoint]") {
  ParameterStore<double> a = small_model<double>(1);
  const Remove file{temp_path("shapes")};
  synattn::save_checkpoint<double>(file.path, a, nullptr, 0);
  SafetensorsFile f = synattn::load_safetensors(file.path);
  CHECK(f.tensors.at("embedding.weight").shape == std::vector<std::uint64_t>{3, 2});
  CHECK(f.tensors.at("layers.0.attention.table").shape == std::vector<std::uint64_t>{4});
  CHECK(f.tensors.at("layers.0.attention.scale").shape == std::vector<std::uint64_t>{1});
  CHECK(f.tensors.at("frozen.weight").shape == std::vector<std::uint64_t>{2, 1});
  CHECK(f.metadata.at("optimizer") == "none");

  // [1, k], [k, 1] for a row; [] for the (1, 1) strength.
  f.tensors.at("layers.0.attention.table").shape = {1, 4};
  f.tensors.at("layers.0.attention.scale").shape = {};
  synattn::save_safetensors(file.path, f);
  ParameterStore<double> b = small_model<double>(2);
  synattn::load_checkpoint<double>(file.path, b, nullptr);
  CHECK(b.values() == a.values());
  f.tensors.at("layers.0.attention.table").shape = {4, 1};
  synattn::save_safetensors(file.path, f);
  ParameterStore<double> c = small_model<double>(2);
  synattn::load_checkpoint<double>(file.path, c, nullptr);
  CHECK(c.values() == a.values());
}

TEST_CASE("checkpoints that disagree with the model are refused, leaving it unchanged", "[checkpoint][errors]") {
  ParameterStore<double> a = small_model<double>(1);
  Adam<double> opt(AdamOptions{});
  fill_gradients(a, 5);
  opt.step(a);
  const Remove file{temp_path("errors")};
  synattn::save_checkpoint(file.path, a, &opt, 1);
  const SafetensorsFile good = synattn::load_safetensors(file.path);

  ParameterStore<double> target = small_model<double>(7);
  const Eigen::VectorXd before = target.values();
  Adam<double> fresh(AdamOptions{});
  const auto expect_refused = [&](const SafetensorsFile& f, const char* expected,
                                  synattn::Optimizer<double>* o, const synattn::CheckpointLoadOptions& options = {}) {
    synattn::save_safetensors(file.path, f);
    CHECK_THROWS_WITH(synattn::load_checkpoint<double>(file.path, target, o, options),
                      Catch::StartsWith(file.path + ": ") && Catch::Contains(expected));
    CHECK(target.values() == before);
    CHECK(fresh.steps() == 0);
  };

  SafetensorsFile f = good;
  f.tensors.erase("embedding.weight");
  expect_refused(f, "missing tensor 'embedding.weight'", &fresh);
  f = good;
  f.tensors.erase("optimizer.exp_avg_sq.layers.0.attention.table");
  expect_refused(f, "missing tensor 'optimizer.exp_avg_sq.layers.0.attention.table'", &fresh);
  f = good;
  f.tensors["extra.weight"] = f.tensors.at("embedding.weight");
  expect_refused(f, "unexpected tensor 'extra.weight'", &fresh);
  f = good;
  f.tensors.at("embedding.weight").shape = {2, 3};
  expect_refused(f, "shape mismatch: tensor 'embedding.weight' is (2, 3), expected (3, 2)", &fresh);
  f = good;
  {
    std::vector<float> w(6, 0.5f);
    f.tensors.at("embedding.weight") = SafeTensor::from(w.data(), {3, 2});
  }
  expect_refused(f, "dtype mismatch: tensor 'embedding.weight' is F32, the model is F64", &fresh);
  f = good;
  {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(f.tensors.at("embedding.weight").bytes.data() + 8, &nan, 8);
  }
  expect_refused(f, "tensor 'embedding.weight' element 1 is not finite", &fresh);
  f = good;
  f.metadata["optimizer.steps"] = "x";
  expect_refused(f, "__metadata__ 'optimizer.steps' is 'x', expected a non-negative integer", &fresh);
  // Step counts: only digits, as written; the optimiser's at most 2^53, checked
  // before anything changes (Optimizer::restore refused it after the
  // parameters had been overwritten).
  f = good;
  f.metadata["optimizer.steps"] = "9007199254740993";
  expect_refused(f, "__metadata__ 'optimizer.steps' is '9007199254740993', expected a non-negative integer of at most "
                    "9007199254740992", &fresh);
  f = good;
  f.metadata["optimizer.steps"] = " 1";
  expect_refused(f, "'optimizer.steps' is ' 1'", &fresh);
  f = good;
  f.metadata["step"] = "+1";
  expect_refused(f, "'step' is '+1'", &fresh);
  f = good;
  f.metadata["step"] = "99999999999999999999";
  expect_refused(f, "'step' is '99999999999999999999'", &fresh);
  f = good;
  {
    // 1e300 fits F64 but not float: converting it would make it infinite.
    const double huge = 1e300;
    std::memcpy(f.tensors.at("embedding.weight").bytes.data() + 16, &huge, 8);
  }
  {
    ParameterStore<float> small = small_model<float>(7);
    const Eigen::VectorXf small_before = small.values();
    synattn::save_safetensors(file.path, f);
    synattn::CheckpointLoadOptions convert;
    convert.convert_dtype = true;
    convert.allow_non_finite = true;  // a finite value made infinite is not a NaN saved on purpose
    CHECK_THROWS_WITH(synattn::load_checkpoint<float>(file.path, small, nullptr, convert),
                      Catch::Contains("tensor 'embedding.weight' element 2 = 1.0000000000000001e+300 overflows the "
                                      "model's F32"));
    CHECK(small.values() == small_before);
  }
  f = good;
  f.metadata["format"] = "other";
  expect_refused(f, "format is 'other', expected 'synattn.checkpoint.v1'", &fresh);
  synattn::Sgd<double> sgd(synattn::SgdOptions{});
  expect_refused(good, "the checkpoint's optimizer is 'adam', this optimizer is 'sgd'", &sgd);
  f = good;
  f.metadata["optimizer"] = "none";
  expect_refused(f, "the checkpoint holds no optimizer state", &fresh);

  SECTION("unexpected tensors may be allowed, and F32 converted on request") {
    synattn::CheckpointLoadOptions lenient;
    lenient.allow_unexpected = true;
    lenient.convert_dtype = true;
    f = good;
    f.tensors["extra.weight"] = f.tensors.at("embedding.weight");
    std::vector<float> w = {0.5f, 1.5f, -2.0f, 0.1f, 3.0f, 4.0f};
    f.tensors.at("embedding.weight") = SafeTensor::from(w.data(), {3, 2});
    synattn::save_safetensors(file.path, f);
    synattn::load_checkpoint<double>(file.path, target, &fresh, lenient);
    for (int i = 0; i < 6; ++i) CHECK(target.values()[i] == static_cast<double>(w[static_cast<std::size_t>(i)]));
    CHECK(fresh.steps() == 1);
  }
  SECTION("reserved metadata keys are refused when saving") {
    CHECK_THROWS_WITH(synattn::save_checkpoint(file.path, a, &opt, 1, {{"step", "9"}}),
                      Catch::Contains("extra metadata key 'step' is reserved"));
    CHECK_THROWS_WITH(synattn::save_checkpoint(file.path, a, &opt, -1), Catch::Contains("step must be >= 0, got -1"));
  }
}

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A NaN with a payload (not the default quiet NaN), so "bit for bit" means it.
template <class Scalar>
Scalar payload_nan() {
  if (sizeof(Scalar) == 4) {
    const std::uint32_t bits = 0x7fc01234u;
    float v;
    std::memcpy(&v, &bits, 4);
    return static_cast<Scalar>(v);
  }
  const std::uint64_t bits = 0x7ff8000000001234ull;
  double v;
  std::memcpy(&v, &bits, 8);
  return static_cast<Scalar>(v);
}

}  // namespace

TEST_CASE("saving NaN or infinity is refused naming the tensor and element, leaving the previous file intact",
          "[checkpoint][non-finite]") {
  const synattn_test::TempDir dir("synattn_ckpt_nan");
  const std::string path = dir.file("run.safetensors");
  ParameterStore<double> a = small_model<double>(1);
  Adam<double> opt(AdamOptions{});
  fill_gradients(a, 5);
  opt.step(a);
  synattn::save_checkpoint(path, a, &opt, 1);
  const std::string good = file_bytes(path);
  REQUIRE(!good.empty());
  const auto unchanged = [&] {
    CHECK(file_bytes(path) == good);
    // Nothing else in the folder: no temporary file was left behind.
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
  };

  SECTION("a parameter") {
    a.values()[1] = std::numeric_limits<double>::quiet_NaN();  // embedding.weight element 1
    CHECK_THROWS_WITH(synattn::save_checkpoint(path, a, &opt, 2),
                      Catch::StartsWith("save_checkpoint: parameter 'embedding.weight' element 1 is NaN") &&
                          Catch::Contains("allow_non_finite"));
    unchanged();
  }
  SECTION("a frozen parameter") {
    a.values()[a.size() - 1] = -std::numeric_limits<double>::infinity();  // frozen.weight element 1
    CHECK_THROWS_WITH(synattn::save_checkpoint<double>(path, a, nullptr, 2),
                      Catch::Contains("parameter 'frozen.weight' element 1 is -inf"));
    unchanged();
  }
  SECTION("the optimiser's state") {
    std::vector<Eigen::VectorXd> state = opt.state();
    state[1][a.info(1).offset + 2] = std::numeric_limits<double>::infinity();
    opt.restore(state, opt.steps());
    CHECK_THROWS_WITH(synattn::save_checkpoint(path, a, &opt, 2),
                      Catch::Contains("optimizer state 'optimizer.exp_avg_sq.layers.0.attention.table' element 2 "
                                      "is inf"));
    unchanged();
  }
  SECTION("F16 weights: NaN, and a finite value F16 cannot hold") {
    const std::string half = dir.file("half.safetensors");
    synattn::save_weights_half(half, a);
    const std::string good_half = file_bytes(half);
    a.values()[6] = std::numeric_limits<double>::quiet_NaN();  // layers.0.attention.table element 0
    CHECK_THROWS_WITH(synattn::save_weights_half(half, a),
                      Catch::Contains("save_weights_half: parameter 'layers.0.attention.table' element 0 is NaN"));
    CHECK(file_bytes(half) == good_half);
    a.values()[6] = 1e6;  // finite, but rounds to F16 infinity: refused even when non-finite values are allowed
    synattn::CheckpointSaveOptions keep;
    keep.allow_non_finite = true;
    CHECK_THROWS_WITH(synattn::save_weights_half(half, a, {}, keep),
                      Catch::Contains("parameter 'layers.0.attention.table' has a value beyond F16's range"));
    CHECK(file_bytes(half) == good_half);
    // A double beyond float's range too (it became float inf on the way,
    // which half_from took for a deliberate infinity and wrote).
    a.values()[6] = 1e300;
    CHECK_THROWS_WITH(synattn::save_weights_half(half, a, {}, keep),
                      Catch::Contains("parameter 'layers.0.attention.table' has a value beyond F16's range"));
    CHECK(file_bytes(half) == good_half);
  }
}

TEMPLATE_TEST_CASE("a diverged run saved on purpose round-trips NaN and inf bit for bit; a default load refuses it",
                   "[checkpoint][non-finite]", float, double) {
  using Vector = Eigen::Matrix<TestType, Eigen::Dynamic, 1>;
  const synattn_test::TempDir dir("synattn_ckpt_nan");
  const std::string path = dir.file("diverged.safetensors");
  ParameterStore<TestType> a = small_model<TestType>(1);
  Adam<TestType> opt(AdamOptions{});
  fill_gradients(a, 5);
  opt.step(a);
  a.values()[1] = payload_nan<TestType>();                          // embedding.weight element 1
  a.values()[7] = std::numeric_limits<TestType>::infinity();        // layers.0.attention.table element 1
  a.values()[a.size() - 1] = -std::numeric_limits<TestType>::infinity();  // frozen.weight element 1
  std::vector<Vector> state = opt.state();
  state[0][3] = -payload_nan<TestType>();  // optimizer.exp_avg.embedding.weight element 3
  opt.restore(state, opt.steps());

  synattn::CheckpointSaveOptions keep;
  keep.allow_non_finite = true;
  synattn::save_checkpoint(path, a, &opt, 1, {}, keep);

  ParameterStore<TestType> b = small_model<TestType>(2);
  const Vector before = b.values();
  Adam<TestType> fresh(AdamOptions{});
  CHECK_THROWS_WITH(synattn::load_checkpoint(path, b, &fresh),
                    Catch::StartsWith(path + ": tensor 'embedding.weight' element 1 is not finite (NaN") &&
                        Catch::Contains("allow_non_finite"));
  CHECK(same_bits(Vector(b.values()), before));
  CHECK(fresh.steps() == 0);

  synattn::CheckpointLoadOptions inspect;
  inspect.allow_non_finite = true;
  synattn::load_checkpoint(path, b, &fresh, inspect);
  CHECK(same_bits(Vector(b.values()), Vector(a.values())));
  REQUIRE(fresh.state().size() == 2);
  CHECK(same_bits(fresh.state()[0], opt.state()[0]));
  CHECK(same_bits(fresh.state()[1], opt.state()[1]));

  SECTION("F16 weights keep NaN and infinity too, and load into the model's dtype") {
    const std::string half = dir.file("diverged_half.safetensors");
    a.values()[1] = std::numeric_limits<TestType>::quiet_NaN();
    CHECK_THROWS_WITH(synattn::save_weights_half(half, a), Catch::Contains("'embedding.weight' element 1 is NaN"));
    synattn::save_weights_half(half, a, {}, keep);
    ParameterStore<TestType> c = small_model<TestType>(3);
    synattn::CheckpointLoadOptions widen;
    widen.convert_dtype = true;
    CHECK_THROWS_WITH(synattn::load_checkpoint<TestType>(half, c, nullptr, widen),
                      Catch::Contains("tensor 'embedding.weight' element 1 is not finite (NaN"));
    widen.allow_non_finite = true;
    synattn::load_checkpoint<TestType>(half, c, nullptr, widen);
    CHECK(std::isnan(c.values()[1]));
    CHECK(c.values()[7] == std::numeric_limits<TestType>::infinity());
    CHECK(c.values()[c.size() - 1] == -std::numeric_limits<TestType>::infinity());
  }
}

TEST_CASE("a checkpoint loads from parsed bytes as from its file", "[checkpoint]") {
  ParameterStore<float> a = small_model<float>(1);
  synattn::Sgd<float> opt(synattn::SgdOptions{0.1, 0.9});
  fill_gradients(a, 3);
  opt.step(a);
  const std::string bytes = synattn::serialize_safetensors(synattn::make_checkpoint(a, &opt, 4, {{"run", "x"}}));
  const synattn_test::TempDir dir("synattn_ckpt_bytes");
  const std::string path = dir.file("c.safetensors");
  synattn::save_checkpoint(path, a, &opt, 4, {{"run", "x"}});
  CHECK(file_bytes(path) == bytes);

  ParameterStore<float> b = small_model<float>(2);
  synattn::Sgd<float> opt_b(synattn::SgdOptions{0.1, 0.9});
  const synattn::CheckpointInfo info = synattn::load_checkpoint(
      synattn::parse_safetensors(bytes.data(), bytes.size(), "memory"), "memory", b, &opt_b);
  CHECK(info.step == 4);
  CHECK(same_bits(Eigen::VectorXf(b.values()), Eigen::VectorXf(a.values())));
  CHECK(same_bits(opt_b.state()[0], opt.state()[0]));
  // Errors name the source given.
  synattn::Sgd<float> plain(synattn::SgdOptions{});
  CHECK_THROWS_WITH(synattn::load_checkpoint(synattn::parse_safetensors(bytes.data(), bytes.size()), "memory", b,
                                             &plain),
                    Catch::StartsWith("memory: unexpected tensor 'optimizer.momentum_buffer."));
}

TEST_CASE("an optimiser state of another model's size is refused when saving, not written as zeros",
          "[checkpoint][errors]") {
  ParameterStore<double> a = small_model<double>(1);
  Adam<double> opt(AdamOptions{});
  opt.restore({Eigen::VectorXd::Ones(3), Eigen::VectorXd::Ones(3)}, 1);
  CHECK_THROWS_WITH(synattn::make_checkpoint(a, &opt, 1),
                    Catch::Contains("the optimizer's 'exp_avg' state holds 3 entries, the parameters 13"));
}

// A parameter named like optimiser state ("optimizer.exp_avg.w") was
// silently overwritten by the state of parameter "w".
TEST_CASE("a parameter named like optimiser state is refused when saving", "[checkpoint][errors]") {
  ParameterStore<double> store;
  store.add("w", 1, 2);
  store.add("optimizer.exp_avg.w", 1, 2);
  Adam<double> opt(AdamOptions{});
  CHECK_THROWS_WITH(synattn::make_checkpoint(store, &opt, 1),
                    Catch::Contains("parameter name 'optimizer.exp_avg.w' is reserved"));
  CHECK_THROWS_WITH(synattn::make_checkpoint<double>(store, nullptr, 1), Catch::Contains("is reserved"));
}

namespace {

using Layer = synattn::SyntaxBiasedAttention<double>;
using MatrixD = synattn::RowMajorMatrix<double>;

struct Problem {
  MatrixD x, target;
  std::vector<int> lengths;
  BucketBlock buckets;
};

Problem make_problem() {
  Problem p;
  const int batch = 2, n = 5, d = 8;
  p.lengths = {5, 3};
  std::mt19937 rng(42);
  std::normal_distribution<double> normal;
  p.x.resize(batch * n, d);
  p.target.resize(batch * n, d);
  for (Eigen::Index i = 0; i < p.x.size(); ++i) p.x.data()[i] = normal(rng);
  for (Eigen::Index i = 0; i < p.target.size(); ++i) p.target.data()[i] = normal(rng);
  p.buckets.resize(batch * n, n);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        p.buckets(b * n + i, j) = static_cast<std::int8_t>(i < p.lengths[b] && j < p.lengths[b] ? (i * 3 + j) % 4 : -1);
  return p;
}

synattn::AttentionOptions layer_options(std::uint64_t seed) {
  synattn::AttentionOptions o(8, 2);
  o.bias.bucketing = synattn::Bucketing::linear(3);  // 4 buckets: distances 0..3
  o.seed = seed;
  return o;
}

// The training machinery of one run: a fresh optimiser, schedule,
// progressive strength, clipping.
struct Trainer {
  Adam<double> opt{AdamOptions::adamw(0.02, 0.01), synattn::syntax_bias_groups(10.0)};
  synattn::ProgressiveStrength<double> intro{[] {
    synattn::ProgressiveOptions o;
    o.value = 0.1;
    o.steps = 3;
    return o;
  }()};

  // One step t (1-based) of L = 0.5 * ||forward(x) - target||^2.
  void step(Layer& layer, const Problem& p, long long t) {
    Layer::Cache cache;
    layer.zero_grad();
    const MatrixD out = synattn_test::forward_value(layer, {p.x, p.lengths, p.buckets}, cache);
    const MatrixD dout = out - p.target;  // dL/dout: (batch * n, d_model)
    synattn_test::backward_value(layer, cache, dout);
    synattn::clip_grad_norm<double>(layer.parameter_infos(), layer.gradients(), 1.0);
    intro.before_step(t, layer.parameter_infos(), layer.parameters(), layer.gradients());
    opt.set_lr(0.02 * synattn::warmup_cosine(t, 2, 10, 0.1));
    opt.step(layer.parameter_infos(), layer.parameters(), layer.gradients());
    intro.after_step(t, layer.parameter_infos(), layer.parameters());
  }
};

}  // namespace

TEST_CASE("training resumed from a step-5 checkpoint continues bit-identically", "[checkpoint][resume]") {
  const Problem p = make_problem();

  // Uninterrupted: 10 steps.
  Layer straight(layer_options(1));
  Trainer t1;
  t1.intro.begin(straight.parameter_infos(), straight.parameters());
  std::vector<Eigen::VectorXd> history;
  for (long long t = 1; t <= 10; ++t) {
    t1.step(straight, p, t);
    history.push_back(straight.parameters());
  }
  // The strength was held for 3 steps and then learnt.
  CHECK(history[2][straight.parameter_infos().back().offset] == 0.1);
  CHECK(straight.parameter("scale")(0, 0) != 0.1);

  // Interrupted: 5 steps, checkpoint, fresh layer (other seed) and trainer.
  const Remove file{temp_path("resume")};
  {
    Layer first(layer_options(1));
    Trainer t2;
    t2.intro.begin(first.parameter_infos(), first.parameters());
    for (long long t = 1; t <= 5; ++t) t2.step(first, p, t);
    REQUIRE(same_bits(Eigen::VectorXd(first.parameters()), history[4]));
    synattn::save_checkpoint(file.path, first.parameter_infos(), first.parameters(), &t2.opt, 5);
  }
  Layer resumed(layer_options(77));
  Trainer t3;
  const synattn::CheckpointInfo info =
      synattn::load_checkpoint(file.path, resumed.parameter_infos(), resumed.parameters(), &t3.opt);
  REQUIRE(info.step == 5);
  REQUIRE(same_bits(Eigen::VectorXd(resumed.parameters()), history[4]));
  for (long long t = info.step + 1; t <= 10; ++t) {
    t3.step(resumed, p, t);
    INFO("step " << t);
    CHECK(same_bits(Eigen::VectorXd(resumed.parameters()), history[static_cast<std::size_t>(t - 1)]));
  }
}
