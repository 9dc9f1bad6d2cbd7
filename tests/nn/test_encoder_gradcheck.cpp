// Finite-difference gradient checks (double) of an EncoderLayer (pre- and
// post-norm, with and without dropout on a fixed stream) and of the whole
// SyntaxTransformerTagger loss w.r.t. every parameter in its flat buffer, over
// the bias options: none, linear, directed buckets, per-head tables, a table
// shared across layers, bias on the top layer only, dropout on, post-norm.
#include <catch2/catch.hpp>

#include <synattn/nn/encoder_layer.hpp>
#include <synattn/nn/tagger.hpp>

#include <random>
#include <string>
#include <vector>

#include "support/gradcheck.hpp"

using namespace synattn;
using namespace synattn::nn;
using synattn_test::check_gradient;
using synattn_test::MatrixD;
using Buckets = RowMajorMatrix<std::int8_t>;

// Relative bound, and the absolute one under which a gradient counts as zero:
// the key bias bk has an exactly zero gradient (the softmax ignores a
// constant per row), whose central difference is rounding noise of order
// 1e-16 * |L| / 1e-6 ~ 1e-9 for losses of order 10.
constexpr double kRel = 1e-6, kAbs = 1e-8;

namespace {

// Bucket ids of a (batch * n, n) block for lengths, -1 on padding pairs; the
// values only need to be valid buckets for these checks.
Buckets make_buckets(const std::vector<int>& lengths, int n, int num_buckets) {
  Buckets b(static_cast<Index>(lengths.size()) * n, n);
  for (std::size_t s = 0; s < lengths.size(); ++s)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const bool real = i < lengths[s] && j < lengths[s];
        b(static_cast<Index>(s) * n + i, j) =
            static_cast<std::int8_t>(real ? (std::abs(i - j) * 3 + (i > j ? 1 : 0) + static_cast<int>(s)) % num_buckets : -1);
      }
  return b;
}

MatrixD random_matrix(Index r, Index c, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist;
  MatrixD m(r, c);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = dist(gen);
  return m;
}

}  // namespace

TEST_CASE("EncoderLayer: gradient check, pre- and post-norm, with and without dropout", "[nn][encoder][gradcheck]") {
  for (const bool pre : {true, false})
    for (const bool with_dropout : {false, true}) {
      EncoderLayerOptions o;
      o.attention = AttentionOptions(6, 2);
      o.attention.bias.bucketing = Bucketing::linear(4);
      o.attention.bias.init = TableInit::LinearDecay;
      o.d_ff = 10;
      o.activation = Activation::GELU;
      o.pre_norm = pre;
      o.attention_output_dropout = o.ffn_hidden_dropout = o.ffn_output_dropout = 0.25;
      EncoderLayer<double> layer(o);
      const std::vector<int> lengths{5, 3};
      const Buckets buckets = make_buckets(lengths, 5, 5);
      MatrixD x = random_matrix(10, 6, 1);
      const MatrixD R = random_matrix(10, 6, 2);
      for (int r = 3; r < 5; ++r) x.row(5 + r).setZero();  // padding rows (their value is irrelevant)
      const RandomStream stream(1234);
      const RandomStream* s = with_dropout ? &stream : nullptr;
      MatrixD y(10, 6), dx(10, 6);
      const auto loss = [&] {
        EncoderLayerCache<double> c;
        layer.forward({x, lengths, buckets}, c, y, s);
        double l = 0;  // padding rows excluded, as a loss does
        for (Index r = 0; r < 10; ++r)
          if (r % 5 < lengths[static_cast<std::size_t>(r / 5)]) l += y.row(r).dot(R.row(r));
        return l;
      };
      MatrixD Rm = R;
      for (Index r = 0; r < 10; ++r)
        if (r % 5 >= lengths[static_cast<std::size_t>(r / 5)]) Rm.row(r).setZero();
      EncoderLayerCache<double> cache;
      layer.forward({x, lengths, buckets}, cache, y, s);
      layer.zero_grad();
      layer.backward(cache, Rm, dx);
      INFO((pre ? "pre-norm" : "post-norm") << (with_dropout ? " with dropout" : ""));
      layer.visit_stores("", "", [&](const std::string& prefix, ParameterStore<double>& store, const std::string&) {
        for (int i = 0; i < store.count(); ++i) {
          const MatrixD analytic = store.gradient(i);
          const auto r = check_gradient(prefix + store.info(i).name, store.value(i), analytic, loss);
          INFO(r.describe());
          CHECK(r.passes(kRel, kAbs));
        }
      });
      const auto r = check_gradient("x", x, dx, loss);
      INFO(r.describe());
      CHECK(r.passes(kRel, kAbs));
    }
}

// EncoderLayer::backward resized dx first: with dy a view into dx's own
// larger buffer (a caller reusing one scratch matrix), that freed the
// storage dy was read from afterwards. dx is now caller-sized; it may be
// the very rows dy views.
TEST_CASE("EncoderLayer: backward with dy a view into dx's buffer gives the separate result", "[nn][encoder]") {
  for (const bool pre : {true, false}) {
    EncoderLayerOptions o;
    o.attention = AttentionOptions(6, 2);
    o.d_ff = 10;
    o.pre_norm = pre;
    EncoderLayer<double> layer(o);
    const std::vector<int> lengths{4, 4};
    const Buckets buckets = make_buckets(lengths, 4, 11);
    const MatrixD x = random_matrix(8, 6, 3);
    MatrixD y(8, 6);
    EncoderLayerCache<double> cache;
    layer.forward({x, lengths, buckets}, cache, y, nullptr);
    const MatrixD dy = random_matrix(8, 6, 4);
    MatrixD want(8, 6);
    layer.zero_grad();
    layer.backward(cache, dy, want);
    MatrixD scratch = MatrixD::Zero(20, 6);  // more rows than dx needs
    scratch.topRows(8) = dy;
    layer.zero_grad();
    layer.forward({x, lengths, buckets}, cache, y, nullptr);  // a cache serves one backward
    layer.backward(cache, scratch.topRows(8), scratch.topRows(8));
    INFO((pre ? "pre-norm" : "post-norm"));
    CHECK(MatrixD(scratch.topRows(8)) == want);
    CHECK(scratch.bottomRows(12).isZero(0));
  }
}

TEST_CASE("EncoderLayer and Encoder: backward refuses another's cache of the same shape, and a used one",
          "[nn][encoder][cache][errors]") {
  using Catch::Contains;
  EncoderOptions o;
  o.layers = 2;
  o.layer.attention = AttentionOptions(6, 2);
  o.layer.d_ff = 10;
  Encoder<double> encoder(o), twin(o);
  const std::vector<int> lengths{4, 3};
  const Buckets buckets = make_buckets(lengths, 4, 11);
  const MatrixD x = random_matrix(8, 6, 3), dy = random_matrix(8, 6, 4);
  MatrixD dx(8, 6), y(8, 6), dx7(7, 6);
  EncoderCache<double> cache;
  encoder.forward({x, lengths, buckets}, cache, y);
  CHECK_THROWS_WITH(twin.backward(cache, dy, dx), Contains("Encoder::backward: the cache was filled by another"));
  CHECK_THROWS_WITH(twin.layer(1).backward(cache.layers[1], dy, dx),
                    Contains("EncoderLayer::backward: the cache was filled by another"));
  CHECK_THROWS_WITH(encoder.backward(cache, random_matrix(7, 6, 5), dx7), Contains("the forward's output"));
  encoder.zero_grad();
  encoder.backward(cache, dy, dx);
  CHECK_THROWS_WITH(encoder.backward(cache, dy, dx), Contains("already run on this cache"));
  CHECK_THROWS_WITH(encoder.layer(0).backward(cache.layers[0], dy, dx), Contains("already run on this cache"));
  EncoderLayerCache<double> empty;
  CHECK_THROWS_WITH(encoder.layer(0).backward(empty, dy, dx), Contains("holds no forward pass"));
}

TEST_CASE("EncoderLayer and Encoder: infer equals forward without dropout bit for bit; backward refuses an infer() "
          "workspace",
          "[nn][encoder][inference]") {
  using Catch::Contains;
  const std::vector<int> lengths{5, 3};
  const Buckets buckets = make_buckets(lengths, 5, 5);
  const MatrixD x = random_matrix(10, 6, 7), dy = random_matrix(10, 6, 8);
  for (const bool pre : {true, false}) {
    INFO((pre ? "pre-norm" : "post-norm"));
    EncoderOptions o;
    o.layers = 2;
    o.layer.attention = AttentionOptions(6, 2);
    o.layer.attention.bias.bucketing = Bucketing::linear(4);
    o.layer.attention.bias.init = TableInit::LinearDecay;
    o.layer.attention.dropout = 0.2;
    o.layer.d_ff = 10;
    o.layer.pre_norm = pre;
    o.final_norm = pre;
    o.layer.attention_output_dropout = o.layer.ffn_hidden_dropout = o.layer.ffn_output_dropout = 0.25;
    Encoder<double> encoder(o);
    MatrixD a(10, 6), b(10, 6), dx(10, 6);
    EncoderCache<double> cache, workspace;
    encoder.forward({x, lengths, buckets}, cache, a);
    encoder.infer({x, lengths, buckets}, workspace, b);
    CHECK(a == b);
    CHECK_THROWS_WITH(encoder.backward(workspace, dy, dx), Contains("holds no forward pass"));
    CHECK_THROWS_WITH(encoder.layer(0).backward(workspace.layers[0], dy, dx), Contains("holds no forward pass"));
    EncoderLayerCache<double> lc, lw;
    encoder.layer(1).forward({x, lengths, buckets}, lc, a);
    encoder.layer(1).infer({x, lengths, buckets}, lw, b);
    CHECK(a == b);
    CHECK_THROWS_WITH(encoder.layer(1).backward(lw, dy, dx), Contains("holds no forward pass"));
    // A training pass (a stream) drops: not the inference result.
    const RandomStream s(3);
    encoder.forward({x, lengths, buckets}, cache, a, &s);
    CHECK(a != b);
  }
}

namespace {

struct ModelCase {
  std::string label;
  TaggerOptions options;
  bool dropout = false;
};

TaggerOptions small_options() {
  TaggerOptions o;
  o.vocab_size = 11;
  o.num_classes = 4;
  o.d_model = 6;
  o.heads = 2;
  o.d_ff = 8;
  o.layers = 2;
  o.activation = Activation::GELU;  // smooth: no kinks for the differences to straddle
  o.dropout = 0.2;
  o.bias.bucketing = Bucketing::linear(4);
  o.bias.init = TableInit::LinearDecay;
  o.seed = 5;
  return o;
}

std::vector<ModelCase> model_cases() {
  std::vector<ModelCase> cases;
  const auto add = [&](std::string label, auto edit, bool dropout = false) {
    ModelCase c;
    c.label = std::move(label);
    c.options = small_options();
    edit(c.options);
    c.dropout = dropout;
    cases.push_back(c);
  };
  add("no bias", [](TaggerOptions& o) { o.bias_layers = BiasLayers::None; });
  add("own tables, linear buckets", [](TaggerOptions&) {});
  add("directed buckets, per-head tables", [](TaggerOptions& o) {
    o.bias.bucketing = Bucketing::directed(2);
    o.bias.per_head = true;
  });
  add("shared table", [](TaggerOptions& o) { o.share_table = true; });
  add("bias on the top layer only, frozen table", [](TaggerOptions& o) {
    o.bias_layers = BiasLayers::Top;
    o.bias_k = 1;
    o.bias.table_learnable = false;
  });
  add("dropout on, shared per-head table", [](TaggerOptions& o) {
    o.share_table = true;
    o.bias.per_head = true;
  }, true);
  add("post-norm, no final norm, dropout", [](TaggerOptions& o) {
    o.pre_norm = false;
    o.final_norm = false;
  }, true);
  return cases;
}

}  // namespace

TEST_CASE("SyntaxTransformerTagger: loss gradient w.r.t. every parameter", "[nn][tagger][gradcheck]") {
  const std::vector<int> lengths{5, 3};
  const int n = 5;
  IdVector ids(10), labels(10);
  ids << 3, 7, 1, 10, 2, 4, 9, 5, 0, 0;      // 1 = unknown word; 0 only on padding
  labels << 0, 3, -100, 1, 2, 1, 0, 3, 2, 1;  // an ignored label; labels on padding are ignored
  for (const ModelCase& mc : model_cases()) {
    SECTION(mc.label) {
      SyntaxTransformerTagger<double> model(mc.options);
      const Buckets buckets = make_buckets(lengths, n, mc.options.bias.num_buckets());
      const RandomStream stream(77);
      const RandomStream* s = mc.dropout ? &stream : nullptr;
      TaggerCache<double> cache;
      const auto loss = [&] {
        TaggerCache<double> c;
        MatrixD logits(10, mc.options.num_classes);
        model.forward({ids, lengths, buckets}, c, logits, s);
        return model.loss(c, logits, labels, 7.0).loss;  // a caller's normaliser
      };
      model.zero_grad();
      MatrixD logits(10, mc.options.num_classes);
      model.forward({ids, lengths, buckets}, cache, logits, s);
      const LossResult lr = model.loss(cache, logits, labels, 7.0);
      CHECK(lr.count == 7);
      model.backward(cache);
      const MatrixD analytic = model.gradients();
      // frozen parameters keep a zero gradient; the check covers all others
      for (const ParameterInfo& p : model.parameter_infos()) {
        const MatrixD g = analytic.middleRows(p.offset, p.size());
        if (!p.trainable) {
          CHECK(g.isZero(0));
          continue;
        }
        const auto r = check_gradient(p.name, model.parameters().segment(p.offset, p.size()), g, loss);
        INFO(mc.label << ": " << r.describe());
        CHECK(r.passes(kRel, kAbs));
      }
      // the padding embedding row takes no gradient
      CHECK(model.gradient("embedding.weight").row(0).isZero(0));
    }
  }
}
