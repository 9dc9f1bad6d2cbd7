// SyntaxTransformerTagger as a whole: parameter names and shapes (unique,
// one flat buffer, shared table once), copy and move safety, eval vs training
// mode, ignored labels, thread-count determinism, a float smoke test, and a
// tiny model overfitting 20 synthetic sequences with plain SGD.
#include <catch2/catch.hpp>

#include <synattn/nn/tagger.hpp>

#include "support/tagger_calls.hpp"

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

using namespace synattn;
using namespace synattn::nn;
using MatrixD = RowMajorMatrix<double>;
using Buckets = RowMajorMatrix<std::int8_t>;

namespace {

Buckets make_buckets(const std::vector<int>& lengths, int n, int num_buckets) {
  Buckets b(static_cast<Index>(lengths.size()) * n, n);
  for (std::size_t s = 0; s < lengths.size(); ++s)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const bool real = i < lengths[s] && j < lengths[s];
        b(static_cast<Index>(s) * n + i, j) = static_cast<std::int8_t>(real ? std::min(std::abs(i - j), num_buckets - 1) : -1);
      }
  return b;
}

struct Batch {
  std::vector<int> lengths;
  int n = 0;
  IdVector ids, labels;
  Buckets buckets;
};

// Random sequences; the label of a token depends on it and (`neighbour`) on
// its left neighbour.
Batch make_batch(int batch, int n, int vocab, int classes, unsigned seed, int num_buckets, bool neighbour = true) {
  std::mt19937 gen(seed);
  Batch b;
  b.n = n;
  b.ids = IdVector::Zero(batch * n);
  b.labels = IdVector::Constant(batch * n, kIgnoreLabel);
  for (int s = 0; s < batch; ++s) {
    const int len = n / 2 + static_cast<int>(gen() % static_cast<unsigned>(n - n / 2 + 1));
    b.lengths.push_back(len);
    for (int i = 0; i < len; ++i) {
      const int id = 1 + static_cast<int>(gen() % static_cast<unsigned>(vocab - 1));
      b.ids[s * n + i] = id;
      const int prev = i > 0 && neighbour ? b.ids[s * n + i - 1] : 0;
      b.labels[s * n + i] = (id + prev) % classes;
    }
  }
  b.buckets = make_buckets(b.lengths, n, num_buckets);
  return b;
}

TaggerOptions options(int layers = 2) {
  TaggerOptions o;
  o.vocab_size = 20;
  o.num_classes = 3;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 16;
  o.layers = layers;
  o.bias.bucketing = Bucketing::linear(4);
  o.seed = 11;
  return o;
}

}  // namespace

TEST_CASE("Tagger: parameter names, shapes, one flat buffer", "[nn][tagger]") {
  SyntaxTransformerTagger<double> model(options());
  std::set<std::string> names;
  Index expected_offset = 0;
  for (const ParameterInfo& p : model.parameter_infos()) {
    CHECK(names.insert(p.name).second);
    CHECK(p.offset == expected_offset);  // contiguous, in order
    expected_offset += p.size();
  }
  CHECK(expected_offset == model.parameter_count());
  CHECK(model.parameters().size() == model.parameter_count());
  const std::vector<std::string> want{"embedding.weight",
                                      "layers.0.attention.Wq",
                                      "layers.0.attention.table",
                                      "layers.0.attention.scale",
                                      "layers.0.norm1.weight",
                                      "layers.0.ffn.linear1.weight",
                                      "layers.0.ffn.linear2.bias",
                                      "layers.1.norm2.bias",
                                      "layers.1.attention.table",
                                      "norm.weight",
                                      "classifier.weight",
                                      "classifier.bias"};
  for (const auto& w : want) CHECK(names.count(w) == 1);
  CHECK(names.size() == 1 + 2 * 18 + 2 + 2);  // embedding, 2 x (10 attention + 2 x 2 norms + 4 ffn), norm, classifier
  CHECK(model.parameter("embedding.weight").rows() == 20);
  CHECK(model.parameter("layers.0.ffn.linear1.weight").rows() == 16);
  CHECK(model.parameter("layers.0.ffn.linear1.weight").cols() == 8);
  CHECK(model.parameter("classifier.weight").rows() == 3);
  CHECK(model.parameter("layers.1.norm1.weight").isOnes());
  CHECK(model.parameter("embedding.weight").row(0).isZero());
  CHECK_THROWS_AS(model.parameter("nope"), Error);
  // the attention views read the model's buffer
  model.parameter("layers.1.attention.scale")(0, 0) = 2.5;
  CHECK(model.attention(1).scale() == 2.5);
  model.attention(0).table()(0, 1) = -4;
  CHECK(model.parameter("layers.0.attention.table")(0, 1) == -4);
}

TEST_CASE("Tagger: a shared table appears once, as bias.table / bias.scale", "[nn][tagger]") {
  TaggerOptions o = options(3);
  o.share_table = true;
  o.bias_layers = BiasLayers::Bottom;
  o.bias_k = 2;
  SyntaxTransformerTagger<double> model(o);
  std::set<std::string> names;
  for (const auto& p : model.parameter_infos()) names.insert(p.name);
  CHECK(names.count("bias.table") == 1);
  CHECK(names.count("bias.scale") == 1);
  for (int l = 0; l < 3; ++l) CHECK(names.count("layers." + std::to_string(l) + ".attention.table") == 0);
  CHECK(model.attention(0).has_syntax_bias());
  CHECK(model.attention(1).has_syntax_bias());
  CHECK(!model.attention(2).has_syntax_bias());
  model.parameter("bias.table")(0, 2) = 0.75;
  CHECK(model.attention(0).table()(0, 2) == 0.75);
  CHECK(model.attention(1).table()(0, 2) == 0.75);
}

TEST_CASE("Tagger: copies do not alias, moves keep working, results identical", "[nn][tagger]") {
  const Batch b = make_batch(3, 6, 20, 3, 1, 5);
  SyntaxTransformerTagger<double> model(options());
  TaggerCache<double> c0;
  const MatrixD y0 = synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c0, nullptr);

  SyntaxTransformerTagger<double> copy = model;
  TaggerCache<double> c1;
  CHECK(synattn_test::forward_logits(copy, {b.ids, b.lengths, b.buckets}, c1, nullptr) == y0);
  CHECK(copy.parameters() == model.parameters());
  CHECK(copy.parameters().data() != model.parameters().data());
  copy.parameter("layers.0.attention.Wq")(0, 0) += 1;
  copy.parameter("layers.0.attention.table")(0, 1) = 3;
  CHECK(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c0, nullptr) == y0);  // original unchanged
  CHECK(synattn_test::forward_logits(copy, {b.ids, b.lengths, b.buckets}, c1, nullptr) != y0);
  CHECK(model.attention(0).table()(0, 1) == 0);

  // gradients go to each model's own buffer
  model.zero_grad();
  copy.zero_grad();
  copy.loss(c1, c1.logits, b.labels);
  copy.backward(c1);
  CHECK(model.gradients().isZero(0));
  CHECK(!copy.gradients().isZero(0));

  // copy assignment
  SyntaxTransformerTagger<double> assigned(options(1));
  assigned = model;
  TaggerCache<double> c2;
  CHECK(synattn_test::forward_logits(assigned, {b.ids, b.lengths, b.buckets}, c2, nullptr) == y0);
  assigned.parameter("classifier.bias")(0, 0) += 1;
  CHECK(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c0, nullptr) == y0);

  // moves
  SyntaxTransformerTagger<double> moved = std::move(assigned);
  TaggerCache<double> c3;
  const MatrixD y3 = synattn_test::forward_logits(moved, {b.ids, b.lengths, b.buckets}, c3, nullptr);
  CHECK(y3 != y0);
  moved.parameter("classifier.bias")(0, 0) = model.parameter("classifier.bias")(0, 0);
  CHECK(synattn_test::forward_logits(moved, {b.ids, b.lengths, b.buckets}, c3, nullptr) == y0);
  SyntaxTransformerTagger<double> target(options(1));
  target = std::move(moved);
  CHECK(synattn_test::forward_logits(target, {b.ids, b.lengths, b.buckets}, c3, nullptr) == y0);
  target.zero_grad();
  target.loss(c3, c3.logits, b.labels);
  target.backward(c3);
  CHECK(!target.gradients().isZero(0));
}

// A self-move-assignment used to empty the model, and forward on a moved-from
// model was undefined behaviour.
TEST_CASE("Tagger: a self-move keeps the model; a moved-from model is refused by name", "[nn][tagger][errors]") {
  const Batch b = make_batch(2, 5, 20, 3, 1, 7);
  SyntaxTransformerTagger<double> model(options());
  TaggerCache<double> c;
  const MatrixD y = synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr);
  SyntaxTransformerTagger<double>& alias = model;
  model = std::move(alias);
  CHECK(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr) == y);

  SyntaxTransformerTagger<double> taken = std::move(model);
  CHECK(synattn_test::forward_logits(taken, {b.ids, b.lengths, b.buckets}, c, nullptr) == y);
  const auto moved_from = Catch::Contains("this model was moved from and holds no layers");
  CHECK_THROWS_WITH(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr),
                    Catch::StartsWith("SyntaxTransformerTagger::forward") && moved_from);
  CHECK_THROWS_WITH(model.loss(c, c.logits, b.labels), moved_from);
  CHECK_THROWS_WITH(model.backward(c), moved_from);
  CHECK_THROWS_WITH(SyntaxTransformerTagger<double>(model), moved_from);
  SyntaxTransformerTagger<double> other(options(1));
  CHECK_THROWS_WITH(other = model, moved_from);
  // Assigning a model to it makes it whole again.
  model = taken;
  CHECK(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr) == y);
  SyntaxTransformerTagger<double> again = std::move(taken);
  taken = std::move(again);
  CHECK(synattn_test::forward_logits(taken, {b.ids, b.lengths, b.buckets}, c, nullptr) == y);
}

TEST_CASE("Tagger: eval mode is deterministic, training mode drops, ignored labels change nothing", "[nn][tagger]") {
  const Batch b = make_batch(4, 7, 20, 3, 2, 5);
  TaggerOptions o = options();
  o.dropout = 0.3;
  SyntaxTransformerTagger<double> model(o);
  TaggerCache<double> c;
  const MatrixD eval = synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr);
  CHECK(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr) == eval);
  const RandomStream s1 = RandomStream(3).derive(0), s2 = RandomStream(3).derive(1);
  const MatrixD train1 = synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, &s1);
  CHECK(train1 != eval);
  CHECK(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, &s1) == train1);
  CHECK(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, &s2) != train1);
  const IdVector pred = model.predict({b.ids, b.lengths, b.buckets}, c);
  CHECK(pred == argmax_predictions<double>(eval, b.lengths));

  // labels on padding and ignored positions do not matter
  model.zero_grad();
  const LossResult l1 = model.loss_and_backward({b.ids, b.lengths, b.buckets}, b.labels, c, &s1);
  const Eigen::VectorXd g1 = model.gradients();
  IdVector other = b.labels;
  for (Index t = 0; t < other.size(); ++t)
    if (other[t] == kIgnoreLabel) other[t] = 2;
  other[1] = kIgnoreLabel;
  IdVector again = other;
  again[1] = b.labels[1];
  for (Index t = 0; t < again.size(); ++t)
    if (!is_real_position(b.lengths, b.n, t)) again[t] = 1;
  model.zero_grad();
  const LossResult l2 = model.loss_and_backward({b.ids, b.lengths, b.buckets}, again, c, &s1);
  CHECK(l2.sum == l1.sum);
  CHECK(l2.count == l1.count);
  CHECK(model.gradients() == g1);
  model.zero_grad();
  const LossResult l3 = model.loss_and_backward({b.ids, b.lengths, b.buckets}, other, c, &s1);
  CHECK(l3.count == l1.count - 1);

  // bad inputs throw
  Buckets wrong(3, 3);
  CHECK_THROWS_AS(synattn_test::forward_logits(model, {b.ids, b.lengths, wrong}, c, nullptr), Error);
  IdVector bad_ids = b.ids;
  bad_ids[0] = 20;
  CHECK_THROWS_AS(synattn_test::forward_logits(model, {bad_ids, b.lengths, b.buckets}, c, nullptr), Error);
  TaggerOptions bad = o;
  bad.attention_dropout = 1.0;  // a probability must be < 1
  CHECK_THROWS_AS(SyntaxTransformerTagger<double>(bad), Error);
}

#if defined(_OPENMP)
TEST_CASE("Tagger: forward and backward are bit-identical at 1 and 2 threads", "[nn][tagger][threads]") {
  TaggerOptions o = options();
  o.d_model = 64;
  o.heads = 4;
  o.d_ff = 128;
  o.vocab_size = 200;
  o.num_classes = 17;
  o.activation = Activation::GELU;
  o.share_table = true;
  const Batch b = make_batch(16, 40, 200, 17, 4, 5);  // 640 tokens: the products run in parallel
  SyntaxTransformerTagger<double> model(o);
  const RandomStream s = RandomStream(9).derive(1);
  const int saved = omp_get_max_threads();
  const auto run = [&](int threads, MatrixD& logits, Eigen::VectorXd& grads) {
    omp_set_num_threads(threads);
    TaggerCache<double> c;
    model.zero_grad();
    model.loss_and_backward({b.ids, b.lengths, b.buckets}, b.labels, c, &s);
    logits = c.logits;
    grads = model.gradients();
  };
  MatrixD l1, l2;
  Eigen::VectorXd g1, g2;
  run(1, l1, g1);
  run(2, l2, g2);
  omp_set_num_threads(saved);
  CHECK(l1 == l2);
  CHECK(g1 == g2);
}
#endif

TEST_CASE("Tagger<float>: runs and agrees with double", "[nn][tagger][float]") {
  const Batch b = make_batch(3, 6, 20, 3, 5, 5);
  SyntaxTransformerTagger<float> mf(options());
  SyntaxTransformerTagger<double> md(options());
  md.parameters() = mf.parameters().cast<double>();
  TaggerCache<float> cf;
  TaggerCache<double> cd;
  const RowMajorMatrix<float> yf = synattn_test::forward_logits(mf, {b.ids, b.lengths, b.buckets}, cf, nullptr);
  const MatrixD yd = synattn_test::forward_logits(md, {b.ids, b.lengths, b.buckets}, cd, nullptr);
  CHECK((yf.cast<double>() - yd).cwiseAbs().maxCoeff() < 1e-4);
  const LossResult lf = mf.loss(cf, cf.logits, b.labels), ld = md.loss(cd, cd.logits, b.labels);
  CHECK(lf.loss == Approx(ld.loss).epsilon(1e-5));
  mf.zero_grad();
  md.zero_grad();
  mf.backward(cf);
  md.backward(cd);
  CHECK((mf.gradients().cast<double>() - md.gradients()).cwiseAbs().maxCoeff() < 1e-4);
}

TEST_CASE("Tagger: backward takes a caller's dlogits as a plain matrix, a view or an expression, alike",
          "[nn][tagger]") {
  // backward(cache, Matrix) once failed to compile: a matrix is callable with
  // an index, so the on_ready overload's std::function took it as readily as
  // the dlogits overload's Eigen::Ref.
  const Batch b = make_batch(3, 6, 20, 3, 9, 5);
  SyntaxTransformerTagger<double> model(options());
  TaggerCache<double> c;
  auto gradients_for = [&](auto&& call) {
    synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr);
    model.loss(c, c.logits, b.labels);
    model.zero_grad();
    call();
    return Eigen::VectorXd(model.gradients());
  };
  const Eigen::VectorXd from_loss = gradients_for([&] { model.backward(c); });
  const MatrixD dlogits = c.dlogits;
  const Eigen::VectorXd plain = gradients_for([&] { model.backward(c, dlogits); });
  const Eigen::VectorXd view = gradients_for([&] { model.backward(c, Eigen::Ref<const MatrixD>(dlogits)); });
  const Eigen::VectorXd doubled = gradients_for([&] { model.backward(c, 2.0 * dlogits); });
  Index ready_from = -1;
  const Eigen::VectorXd with_callback = gradients_for([&] { model.backward(c, dlogits, [&](Index from) { ready_from = from; }); });
  CHECK(plain == from_loss);
  CHECK(view == from_loss);
  CHECK(with_callback == from_loss);
  CHECK(ready_from == 0);
  CHECK((doubled - 2.0 * from_loss).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("Tagger: a tiny model overfits 20 sequences with plain SGD", "[nn][tagger][train]") {
  // (small enough that every loop runs serially: quick on a loaded machine)
  TaggerOptions o = options(1);
  o.d_model = 8;
  o.d_ff = 16;
  o.dropout = 0;
  const Batch b = make_batch(20, 8, 20, 3, 6, 5, false);
  SyntaxTransformerTagger<double> model(o);
  TaggerCache<double> c;
  double first = 0, last = 0;
  for (int step = 0; step < 500; ++step) {
    model.zero_grad();
    const LossResult l = model.loss_and_backward({b.ids, b.lengths, b.buckets}, b.labels, c, nullptr);
    if (step == 0) first = l.loss;
    last = l.loss;
    model.parameters() -= 0.3 * model.gradients();
  }
  INFO("loss " << first << " -> " << last);
  CHECK(first > 0.9);
  CHECK(last < first / 10);
  const IdVector pred = model.predict({b.ids, b.lengths, b.buckets}, c);
  Index counted = 0;
  for (Index t = 0; t < b.labels.size(); ++t) counted += b.labels[t] != kIgnoreLabel;
  CHECK(count_correct(pred, b.labels, b.lengths) > 0.95 * counted);
}

// A tagger's backward used to accept another same-shape model's cache, and
// to add the gradients again on a second call; a NaN classifier weight threw
// only in backward, after the classifier's gradients were written.
TEST_CASE("Tagger: backward refuses another model's cache and a used one, before writing any gradient",
          "[nn][tagger][cache][errors]") {
  using Catch::Contains;
  const Batch b = make_batch(2, 5, 20, 3, 4, 5);
  SyntaxTransformerTagger<double> model(options()), twin(options());  // same shape, same initial values
  TaggerCache<double> c;
  synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr);
  model.loss(c, c.logits, b.labels);
  model.zero_grad();
  twin.zero_grad();
  CHECK_THROWS_WITH(twin.backward(c), Contains("the cache was filled by another layer or model"));
  CHECK_THROWS_WITH(twin.loss(c, c.logits, b.labels), Contains("the cache was filled by another layer or model"));
  CHECK(twin.gradients().isZero(0));
  SyntaxTransformerTagger<double> copy = model;
  CHECK_THROWS_WITH(copy.backward(c), Contains("filled by another layer or model (or by this one before it was"));
  model.backward(c);
  const Eigen::VectorXd once = model.gradients();
  CHECK_THROWS_WITH(model.backward(c), Contains("backward() has already run on this cache"));
  CHECK(model.gradients() == once);
  // The loss may still be read; a new forward makes the cache usable again.
  CHECK_NOTHROW(model.loss(c, c.logits, b.labels));
  synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr);
  model.loss(c, c.logits, b.labels);
  CHECK_NOTHROW(model.backward(c));
  CHECK((model.gradients() - 2 * once).cwiseAbs().maxCoeff() <= 1e-12 * once.cwiseAbs().maxCoeff());
  TaggerCache<double> fresh;
  CHECK_THROWS_WITH(model.backward(fresh), Contains("holds no forward pass"));
}

TEST_CASE("Tagger: non-finite parameters and logits are named in forward; NaN dropout is refused",
          "[nn][tagger][nan][errors]") {
  using Catch::Contains;
  const Batch b = make_batch(2, 5, 20, 3, 6, 5);
  SECTION("a NaN classifier weight") {
    SyntaxTransformerTagger<double> model(options());
    model.parameter("classifier.weight")(1, 2) = std::nan("");
    TaggerCache<double> c;
    model.zero_grad();
    CHECK_THROWS_WITH(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr),
                      Contains("SyntaxTransformerTagger::forward: parameter classifier.weight(1, 2) = nan"));
    CHECK_THROWS_WITH(model.backward(c), Contains("holds no forward pass"));
    CHECK(model.gradients().isZero(0));
    TaggerOptions off = options();
    off.attention.check_finite = false;  // then NaN propagates, as IEEE arithmetic has it
    SyntaxTransformerTagger<double> unchecked(off);
    unchecked.parameter("classifier.weight")(1, 2) = std::nan("");
    CHECK(std::isnan(synattn_test::forward_logits(unchecked, {b.ids, b.lengths, b.buckets}, c, nullptr)(0, 1)));
  }
  SECTION("logits that overflow float") {
    SyntaxTransformerTagger<float> model(options());
    model.parameter("norm.bias").setOnes();  // the final rows sum to about d = 8
    model.parameter("classifier.weight").row(0).setConstant(3e38f);
    TaggerCache<float> c;
    CHECK_THROWS_WITH(synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, nullptr),
                      Contains("logits(0, 0) = inf is not finite (sequence 0, position 0): the model overflowed"));
  }
  SECTION("a per-site dropout of NaN is refused, not read as unset") {
    TaggerOptions o = options();
    o.ffn_hidden_dropout = std::nan("");
    CHECK_THROWS_WITH(SyntaxTransformerTagger<double>(o), Contains("TaggerOptions.ffn_hidden_dropout"));
    o = options();
    o.dropout = std::nan("");
    CHECK_THROWS_WITH(SyntaxTransformerTagger<double>(o), Contains("TaggerOptions.dropout"));
  }
}

TEST_CASE("Tagger: packed documents give the dense masked block's logits, loss and gradients",
          "[nn][tagger][packed]") {
  // Two sequences of sentences (one padded), window 1, root links: the
  // packed forward must be the dense forward over packed.dense(n), dropout
  // and all, and so must every gradient.
  std::mt19937 gen(17);
  PackedBuckets packed(/*window=*/1, /*cross_bucket=*/3, RootLinks::all_roots);
  const std::vector<std::vector<int>> sentences = {{5, 3, 7, 2}, {6, 4}};
  for (const auto& sequence : sentences) {
    packed.begin_sequence();
    for (int len : sequence) {
      Buckets block(len, len);
      for (int i = 0; i < len; ++i)
        for (int j = 0; j < len; ++j) block(i, j) = static_cast<std::int8_t>(std::min(std::abs(i - j), 3));
      packed.add_sentence(block, static_cast<Index>(gen() % static_cast<unsigned>(len)));
    }
  }
  const int n = 17;  // the first sequence's words; the second is padded
  const Index tokens = 2 * n;
  IdVector ids = IdVector::Zero(tokens), labels = IdVector::Constant(tokens, kIgnoreLabel);
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < packed.lengths()[static_cast<std::size_t>(s)]; ++i) {
      ids[s * n + i] = 1 + static_cast<int>(gen() % 19u);
      labels[s * n + i] = static_cast<int>(gen() % 3u);
    }
  const Buckets dense = packed.dense(n);
  TaggerOptions o = options();
  o.dropout = 0.1;
  o.attention_dropout = 0.2;
  o.bias.per_head = true;
  SyntaxTransformerTagger<double> model(o);
  const RandomStream drop = RandomStream(5).derive(2);
  TaggerCache<double> cp, cd;
  model.zero_grad();
  const LossResult lp = model.loss_and_backward({ids, packed}, labels, cp, &drop);
  const Eigen::VectorXd gp = model.gradients();
  model.zero_grad();
  const LossResult ld = model.loss_and_backward({ids, packed.lengths(), dense}, labels, cd, &drop);
  const Eigen::VectorXd gd = model.gradients();
  CHECK(lp.loss == Approx(ld.loss).epsilon(1e-12));
  CHECK((cp.logits - cd.logits).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((gp - gd).cwiseAbs().maxCoeff() < 1e-10 * std::max(1.0, gd.cwiseAbs().maxCoeff()));
  CHECK(model.predict({ids, packed}, cp) == model.predict({ids, packed.lengths(), dense}, cd));

  // Every layer must be biased: a packing's windows are buckets.
  TaggerOptions unbiased = options();
  unbiased.bias_layers = BiasLayers::Bottom;
  unbiased.bias_k = 1;
  SyntaxTransformerTagger<double> partial(unbiased);
  CHECK_THROWS_WITH(synattn_test::forward_logits(partial, {ids, packed}, cp, nullptr),
                    Catch::Contains("layer 1 has no syntax bias; packed documents need every layer biased"));
  // The rows must split into the packing's sequences.
  CHECK_THROWS_WITH(synattn_test::forward_logits(model, {ids.head(tokens - 1), packed}, cp, nullptr), Catch::Contains("not a multiple"));
}
