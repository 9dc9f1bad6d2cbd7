// SyntaxBiasedAttention behaviour: a naive loop reference for every option,
// zero table == plain attention, identity talking heads == none, masked rows,
// thread-count invariance, caches, gradient buffers, parameters, and the
// errors bad input raises.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "naive_attention.hpp"
#include "support/attention_calls.hpp"
#include "support/gradcheck.hpp"

using synattn::AttentionOptions;
using synattn::Bucketing;
using synattn::ParameterInfo;
using synattn::RowMajorMatrix;
using synattn::SyntaxBiasedAttention;
using synattn::TableInit;
using synattn_test::BucketBlock;
using synattn_test::MatrixD;
using MatrixF = RowMajorMatrix<float>;
using Layer = SyntaxBiasedAttention<double>;

namespace {

AttentionOptions small_options() {
  AttentionOptions o(8, 2);
  o.key_size = 5;
  o.value_size = 3;
  o.bias.bucketing = Bucketing::linear(4);
  return o;
}

// Copies every parameter `from` has into `to` (same names, same shapes).
template <class A, class B>
void copy_shared_parameters(const A& from, B& to) {
  for (const auto& p : from.parameter_infos())
    if (to.has_parameter(p.name))
      to.set_parameter(p.name, from.parameter(p.name).template cast<typename B::Matrix::Scalar>());
}

bool same_bits(const MatrixD& a, const MatrixD& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

struct Run {
  MatrixD out, probs, dx, dmem, grads;
};

// Forward + backward of L = sum(out * G) on a fresh cache.
Run run(Layer& layer, const MatrixD& xq, const std::vector<int>& lq, const MatrixD& xkv, const std::vector<int>& lkv,
        const BucketBlock& buckets, const MatrixD& G, bool cross) {
  Run r;
  Layer::Cache cache;
  layer.zero_grad();
  r.dx.resize(xq.rows(), xq.cols());
  if (cross) {
    r.out = synattn_test::forward_value(layer, {xq, lq, xkv, lkv, buckets}, cache);
    r.dmem.resize(xkv.rows(), xkv.cols());
    layer.backward(cache, G, {r.dx, r.dmem});
  } else {
    r.out = synattn_test::forward_value(layer, {xq, lq, buckets}, cache);
    layer.backward(cache, G, {r.dx});
  }
  r.probs = cache.probabilities();
  r.grads = layer.gradients();
  return r;
}

}  // namespace

TEST_CASE("the forward pass matches a naive loop reference for every option", "[attention][reference]") {
  struct Case {
    const char* label;
    void (*edit)(AttentionOptions&);
    bool cross;
  };
  const Case cases[] = {
      {"shared linear", [](AttentionOptions&) {}, false},
      {"per-head log",
       [](AttentionOptions& o) {
         o.bias.per_head = true;
         o.bias.bucketing = Bucketing::log(8, 30, 4);
       },
       false},
      {"directed", [](AttentionOptions& o) { o.bias.bucketing = Bucketing::directed(3); }, false},
      {"causal", [](AttentionOptions& o) { o.causal = true; }, false},
      {"talking heads pre and post, three heads",
       [](AttentionOptions& o) {
         o.heads = 3;
         o.talking_heads_pre = o.talking_heads_post = true;
       },
       false},
      {"no syntax bias", [](AttentionOptions& o) { o.syntax_bias = false; }, false},
      {"cross-attention", [](AttentionOptions& o) { o.memory_size = 6; }, true},
      {"cross-attention, talking heads, per-head",
       [](AttentionOptions& o) {
         o.talking_heads_pre = o.talking_heads_post = true;
         o.bias.per_head = true;
       },
       true},
      {"tree fusion: 3 views, a table each", [](AttentionOptions& o) { o.bias.fusion.views = 3; }, false},
      {"tree fusion: 2 views, one per-head table, per-head weights, causal",
       [](AttentionOptions& o) {
         o.bias.fusion.views = 2;
         o.bias.fusion.shared_table = o.bias.fusion.per_head_weights = o.bias.per_head = true;
         o.causal = true;
       },
       false},
      {"tree fusion: 2 directed views, talking heads pre and post",
       [](AttentionOptions& o) {
         o.bias.fusion.views = 2;
         o.bias.bucketing = Bucketing::directed(3);
         o.talking_heads_pre = o.talking_heads_post = true;
       },
       false},
      {"tree fusion: cross-attention, 4 views, per-head weights",
       [](AttentionOptions& o) {
         o.bias.fusion.views = 4;
         o.bias.fusion.per_head_weights = true;
       },
       true},
  };
  const int k = GENERATE(range(0, 12));
  const Case& c = cases[k];
  INFO("configuration: " << c.label);
  AttentionOptions o = small_options();
  c.edit(o);
  std::mt19937 rng(77 + k);
  Layer layer(o);
  synattn_test::randomise(layer, rng);
  SyntaxBiasedAttention<float> layer_f(o);
  copy_shared_parameters(layer, layer_f);

  const std::vector<int> lq = {7, 0, 1, 5}, lkv = c.cross ? std::vector<int>{4, 6, 0, 6} : lq;
  const int nq = 7, nkv = c.cross ? 6 : 7;
  const MatrixD xq = synattn_test::random_matrix(4 * nq, o.d_model, rng);
  const MatrixD xkv = synattn_test::random_matrix(4 * nkv, layer.memory_size(), rng);
  const int views = o.syntax_bias ? o.bias.fusion.views : 1;
  const BucketBlock buckets =
      synattn_test::random_bucket_views(views, lq, lkv, nq, nkv, std::max(layer.num_buckets(), 1), rng);
  const auto want = synattn_test::naive_attention(layer, xq, lq, c.cross ? xkv : xq, lkv, buckets);

  Layer::Cache cache;
  const MatrixD out = c.cross ? synattn_test::forward_value(layer, {xq, lq, xkv, lkv, buckets}, cache)
                              : synattn_test::forward_value(layer, {xq, lq, buckets}, cache);
  CHECK((out - want.out).cwiseAbs().maxCoeff() <= 1e-12 * want.out.cwiseAbs().maxCoeff());
  CHECK((cache.probabilities() - want.probs).cwiseAbs().maxCoeff() <= 1e-12);

  SyntaxBiasedAttention<float>::Cache cache_f;
  const MatrixF xqf = xq.cast<float>(), xkvf = xkv.cast<float>();
  const MatrixF out_f = c.cross ? synattn_test::forward_value(layer_f, {xqf, lq, xkvf, lkv, buckets}, cache_f)
                                : synattn_test::forward_value(layer_f, {xqf, lq, buckets}, cache_f);
  CHECK((out_f.cast<double>() - want.out).cwiseAbs().maxCoeff() <= 1e-5 * want.out.cwiseAbs().maxCoeff());
  CHECK((cache_f.probabilities().cast<double>() - want.probs).cwiseAbs().maxCoeff() <= 1e-5);
}

TEST_CASE("a zero table gives exactly plain scaled dot-product attention", "[attention][reference]") {
  AttentionOptions with = small_options();
  AttentionOptions plain = with;
  plain.syntax_bias = false;
  const bool per_head = GENERATE(false, true);
  with.bias.per_head = per_head;
  Layer biased(with), unbiased(plain);
  std::mt19937 rng(5);
  synattn_test::randomise(unbiased, rng);
  copy_shared_parameters(unbiased, biased);
  biased.table().setZero();  // the default, restated: randomise() is not used on `biased`
  REQUIRE(biased.table().isZero(0));

  const std::vector<int> lengths = {6, 3, 0};
  const int n = 6;
  const MatrixD x = synattn_test::random_matrix(3 * n, 8, rng);
  // No -1 inside the sequences: the bucket mask would be a difference.
  const BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, n, n, biased.num_buckets(), rng, 0.0);
  const MatrixD G = synattn_test::random_matrix(3 * n, 8, rng);
  const Run a = run(biased, x, lengths, x, lengths, buckets, G, false);
  const Run b = run(unbiased, x, lengths, x, lengths, BucketBlock(), G, false);
  CHECK(same_bits(a.out, b.out));
  CHECK(same_bits(a.probs, b.probs));
  CHECK(same_bits(a.dx, b.dx));
  CHECK(same_bits(MatrixD(biased.gradient("Wq")), MatrixD(unbiased.gradient("Wq"))));

  // And plain attention is softmax(q k^T / sqrt(dk)) v, written out here.
  const auto want = synattn_test::naive_attention(unbiased, x, lengths, x, lengths, BucketBlock());
  CHECK((a.out - want.out).cwiseAbs().maxCoeff() <= 1e-12 * want.out.cwiseAbs().maxCoeff());
}

TEST_CASE("talking heads initialised to the identity change nothing", "[attention][talking-heads]") {
  AttentionOptions o = small_options();
  o.heads = 3;
  AttentionOptions th = o;
  th.talking_heads_pre = GENERATE(false, true);
  th.talking_heads_post = GENERATE(false, true);
  Layer plain(o), mixed(th);
  std::mt19937 rng(9);
  synattn_test::randomise(plain, rng);
  copy_shared_parameters(plain, mixed);
  if (th.talking_heads_pre) CHECK(mixed.mix_pre().isIdentity(0));
  if (th.talking_heads_post) CHECK(mixed.mix_post().isIdentity(0));

  const std::vector<int> lengths = {5, 2};
  const MatrixD x = synattn_test::random_matrix(10, 8, rng);
  const BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, 5, 5, plain.num_buckets(), rng);
  const MatrixD G = synattn_test::random_matrix(10, 8, rng);
  const Run a = run(plain, x, lengths, x, lengths, buckets, G, false);
  const Run b = run(mixed, x, lengths, x, lengths, buckets, G, false);
  const double scale = a.out.cwiseAbs().maxCoeff();
  CHECK((a.out - b.out).cwiseAbs().maxCoeff() <= 1e-15 * scale);
  CHECK((a.dx - b.dx).cwiseAbs().maxCoeff() <= 1e-14 * a.dx.cwiseAbs().maxCoeff());
  for (const char* p : {"Wq", "Wk", "Wv", "Wo", "table", "scale"}) {
    INFO("gradient of " << p);
    const MatrixD ga = plain.gradient(p), gb = mixed.gradient(p);
    CHECK((ga - gb).cwiseAbs().maxCoeff() <= 1e-14 * std::max(ga.cwiseAbs().maxCoeff(), 1e-300));
  }
}

TEST_CASE("rows without a visible key give zero probabilities and out = bo, never NaN", "[attention][masking]") {
  AttentionOptions o = small_options();
  o.causal = GENERATE(false, true);
  Layer layer(o);
  std::mt19937 rng(3);
  synattn_test::randomise(layer, rng);
  const std::vector<int> lengths = {0, 4, 1};
  const int n = 4;
  MatrixD x = synattn_test::random_matrix(3 * n, 8, rng);
  BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, n, n, layer.num_buckets(), rng, 0.0);
  buckets.row(n + 2).setConstant(-1);  // sequence 1, query 2: every key masked by its bucket
  Layer::Cache cache;
  const MatrixD out = synattn_test::forward_value(layer, {x, lengths, buckets}, cache);
  REQUIRE(out.allFinite());
  const MatrixD bo = layer.bo();
  for (int r : {0, 1, 2, 3, n + 2, 2 * n + 1, 2 * n + 2, 2 * n + 3}) {
    INFO("row " << r);
    CHECK(same_bits(out.row(r), bo));
  }
  for (int a = 0; a < 2; ++a) {
    CHECK(cache.probabilities(0, a).isZero(0));
    CHECK(cache.probabilities(1, a).row(2).isZero(0));
    CHECK(cache.probabilities(2, a).bottomRows(3).isZero(0));
    CHECK(cache.probabilities(2, a)(0, 0) == 1.0);  // a length-1 sequence attends to itself
  }
  const MatrixD G = MatrixD::Ones(3 * n, 8);
  const MatrixD dx = synattn_test::backward_value(layer, cache, G);
  CHECK(dx.allFinite());
  CHECK(dx.topRows(n).isZero(0));
  CHECK(dx.row(n + 2).isZero(0) == false);  // its key/value rows still feed other queries
  CHECK(layer.gradients().allFinite());
  // out = bo on those rows, so dbo counts them.
  CHECK(layer.gradient("bo").isApprox(MatrixD::Constant(1, 8, 3.0 * n), 1e-15));

  SyntaxBiasedAttention<float> layer_f(o);
  copy_shared_parameters(layer, layer_f);
  SyntaxBiasedAttention<float>::Cache cache_f;
  const MatrixF out_f = synattn_test::forward_value(layer_f, {x.cast<float>(), lengths, buckets}, cache_f);
  CHECK(out_f.allFinite());
  CHECK(out_f.row(n + 2) == layer_f.bo());
}

TEST_CASE("causal attention does not look ahead", "[attention][masking]") {
  AttentionOptions o = small_options();
  o.causal = true;
  Layer layer(o);
  std::mt19937 rng(4);
  synattn_test::randomise(layer, rng);
  const std::vector<int> lengths = {6};
  MatrixD x = synattn_test::random_matrix(6, 8, rng);
  const BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, 6, 6, layer.num_buckets(), rng, 0.0);
  Layer::Cache cache;
  const MatrixD before = synattn_test::forward_value(layer, {x, lengths, buckets}, cache);
  x.bottomRows(2) = synattn_test::random_matrix(2, 8, rng);
  const MatrixD after = synattn_test::forward_value(layer, {x, lengths, buckets}, cache);
  CHECK(same_bits(before.topRows(4), after.topRows(4)));
  CHECK(!before.bottomRows(2).isApprox(after.bottomRows(2)));
}

TEST_CASE("results are bit-identical whatever the number of threads", "[attention][threads]") {
#if !defined(_OPENMP)
  WARN("built without OpenMP: nothing to compare");
#else
  const bool cross = GENERATE(false, true);
  const bool talking = GENERATE(false, true);
  const int views = GENERATE(1, 3);  // tree fusion: per-view histograms and view-weight gradients
  AttentionOptions o(64, 4);
  o.key_size = 24;
  o.bias.bucketing = Bucketing::linear(8);
  o.bias.fusion.views = views;
  o.bias.fusion.per_head_weights = talking;
  o.bias.per_head = talking;
  o.talking_heads_pre = o.talking_heads_post = talking;
  Layer layer(o);
  std::mt19937 rng(11);
  synattn_test::randomise(layer, rng);
  // Large enough to run in parallel: several (sequence, head) tasks, and
  // projections of more than one row block (chunk_rows(240) = 128).
  const std::vector<int> lq = {40, 33, 0, 40, 17, 38}, lkv = cross ? std::vector<int>{30, 40, 12, 0, 40, 25} : lq;
  const int n = 40;
  const MatrixD xq = synattn_test::random_matrix(6 * n, 64, rng);
  const MatrixD xkv = synattn_test::random_matrix(6 * n, 64, rng);
  const BucketBlock buckets = synattn_test::random_bucket_views(views, lq, lkv, n, n, layer.num_buckets(), rng);
  const MatrixD G = synattn_test::random_matrix(6 * n, 64, rng);
  const int saved = omp_get_max_threads();
  std::vector<Run> runs;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    runs.push_back(run(layer, xq, lq, xkv, lkv, buckets, G, cross));
  }
  omp_set_num_threads(saved);
  for (std::size_t t = 1; t < runs.size(); ++t) {
    INFO("1 thread vs " << t + 1 << " threads, cross " << cross << ", talking heads " << talking << ", views "
                        << views);
    CHECK(same_bits(runs[0].out, runs[t].out));
    CHECK(same_bits(runs[0].probs, runs[t].probs));
    CHECK(same_bits(runs[0].dx, runs[t].dx));
    CHECK(same_bits(runs[0].grads, runs[t].grads));
    if (cross) CHECK(same_bits(runs[0].dmem, runs[t].dmem));
  }
#endif
}

TEST_CASE("one layer serves several batches through separate caches", "[attention][cache]") {
  AttentionOptions o = small_options();
  o.talking_heads_post = true;
  Layer layer(o);
  std::mt19937 rng(21);
  synattn_test::randomise(layer, rng);
  const std::vector<int> la = {5, 3}, lb = {2, 4, 4};
  const MatrixD xa = synattn_test::random_matrix(10, 8, rng), xb = synattn_test::random_matrix(12, 8, rng);
  const BucketBlock ba = synattn_test::random_buckets(la, la, 5, 5, layer.num_buckets(), rng);
  const BucketBlock bb = synattn_test::random_buckets(lb, lb, 4, 4, layer.num_buckets(), rng);
  const MatrixD ga = synattn_test::random_matrix(10, 8, rng), gb = synattn_test::random_matrix(12, 8, rng);
  const Run ra = run(layer, xa, la, xa, la, ba, ga, false);
  const Run rb = run(layer, xb, lb, xb, lb, bb, gb, false);

  SECTION("interleaved forwards, then both backwards: gradients add up") {
    Layer::Cache ca, cb;
    layer.zero_grad();
    const MatrixD oa = synattn_test::forward_value(layer, {xa, la, ba}, ca);
    const MatrixD ob = synattn_test::forward_value(layer, {xb, lb, bb}, cb);
    const MatrixD dxb = synattn_test::backward_value(layer, cb, gb);
    const MatrixD dxa = synattn_test::backward_value(layer, ca, ga);
    CHECK(same_bits(oa, ra.out));
    CHECK(same_bits(ob, rb.out));
    CHECK(same_bits(dxa, ra.dx));
    CHECK(same_bits(dxb, rb.dx));
    const MatrixD sum = ra.grads + rb.grads;
    CHECK((MatrixD(layer.gradients()) - sum).cwiseAbs().maxCoeff() <= 1e-13 * sum.cwiseAbs().maxCoeff());
  }
  SECTION("backward into caller-owned gradient vectors gives the layer's own gradients") {
    Layer::Cache ca;
    synattn_test::forward_value(layer, {xa, la, ba}, ca);
    Eigen::VectorXd mine = Eigen::VectorXd::Zero(layer.parameter_count());
    MatrixD dx(10, 8);
    layer.zero_grad();
    static_cast<const Layer&>(layer).backward(ca, ga, {dx}, mine);
    CHECK(layer.gradients().isZero(0));  // untouched
    CHECK(same_bits(MatrixD(mine.transpose()), MatrixD(ra.grads.transpose())));
  }
  SECTION("a cache is reused across shapes without stale state") {
    Layer::Cache c;
    synattn_test::forward_value(layer, {xb, lb, bb}, c);
    const MatrixD again = synattn_test::forward_value(layer, {xa, la, ba}, c);
    CHECK(same_bits(again, ra.out));
    CHECK(same_bits(MatrixD(c.probabilities()), ra.probs));
    layer.zero_grad();
    CHECK(same_bits(synattn_test::backward_value(layer, c, ga), ra.dx));
  }
  SECTION("gradients accumulate until zero_grad; a cache serves one backward") {
    Layer::Cache c;
    layer.zero_grad();
    synattn_test::forward_value(layer, {xa, la, ba}, c);
    synattn_test::backward_value(layer, c, ga);
    // Once more on the used cache: refused, and the gradients are as they were.
    const MatrixD once = layer.gradients();
    CHECK_THROWS_WITH(synattn_test::backward_value(layer, c, ga),
                      Catch::Contains("backward() has already run on this cache"));
    CHECK(same_bits(MatrixD(layer.gradients()), once));
    synattn_test::forward_value(layer, {xa, la, ba}, c);
    synattn_test::backward_value(layer, c, ga);
    CHECK((MatrixD(layer.gradients()) - 2 * ra.grads).cwiseAbs().maxCoeff() <= 1e-13 * ra.grads.cwiseAbs().maxCoeff());
    layer.zero_grad();
    CHECK(layer.gradients().isZero(0));
  }
}

TEST_CASE("parameters are named views into one flat buffer", "[attention][parameters]") {
  AttentionOptions o = small_options();
  o.memory_size = 6;
  o.bias.per_head = true;
  o.bias.table_learnable = false;
  o.talking_heads_pre = o.talking_heads_post = true;
  Layer layer(o);
  const std::vector<std::string> names = {"Wq", "Wk", "Wv",    "bq",    "bk",      "bv",
                                          "Wo", "bo", "table", "scale", "mix_pre", "mix_post"};
  const std::vector<std::pair<Eigen::Index, Eigen::Index>> shapes = {
      {10, 8}, {10, 6}, {6, 6}, {1, 10}, {1, 10}, {1, 6}, {8, 6}, {1, 8}, {2, 5}, {1, 1}, {2, 2}, {2, 2}};
  REQUIRE(layer.parameter_infos().size() == names.size());
  Eigen::Index total = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const ParameterInfo& p = layer.parameter_infos()[i];
    INFO("parameter " << i);
    CHECK(p.name == names[i]);
    CHECK(p.rows == shapes[i].first);
    CHECK(p.cols == shapes[i].second);
    CHECK(p.offset == total);
    CHECK(p.trainable == (p.name != "table"));
    total += p.size();
  }
  CHECK(layer.parameter_count() == total);

  layer.parameters().setZero();
  layer.parameters()[layer.parameter_infos()[6].offset + 1] = 3.5;  // Wo(0, 1)
  CHECK(layer.Wo()(0, 1) == 3.5);
  int visited = 0;
  layer.visit_parameters([&](const ParameterInfo& p, Eigen::Map<MatrixD> value, Eigen::Map<MatrixD> grad) {
    CHECK(value.rows() == p.rows);
    CHECK(grad.cols() == p.cols);
    value.setConstant(visited);
    ++visited;
  });
  CHECK(visited == 12);
  CHECK(layer.bq().isConstant(3.0));
  CHECK(layer.scale() == 9.0);

  Layer copy = layer;
  copy.Wq().setConstant(-1.0);
  CHECK(layer.Wq().isConstant(0.0));
  CHECK(copy.parameter("Wq").isConstant(-1.0));

  // Loading: shape checks, columns accepted for rows, finiteness.
  CHECK_NOTHROW(layer.set_parameter("bo", MatrixD::Constant(8, 1, 2.0)));
  CHECK(layer.bo().isConstant(2.0));
  CHECK_THROWS_WITH(layer.set_parameter("Wo", MatrixD::Zero(6, 8)), Catch::Contains("'Wo' is 8x6, got a 6x8"));
  CHECK_THROWS_WITH(layer.set_parameter("W_q", MatrixD::Zero(1, 1)),
                    Catch::Contains("no parameter named 'W_q'") && Catch::Contains("Wq, Wk"));
  MatrixD bad = MatrixD::Zero(1, 8);
  bad(0, 5) = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(layer.set_parameter("bo", bad), Catch::Contains("'bo' element (0, 5) is not finite"));
}

TEST_CASE("initialisation follows nn.Linear and the options, deterministically per seed", "[attention][parameters]") {
  AttentionOptions o(12, 3);
  o.bias.init = TableInit::LinearDecay;
  o.bias.scale = 0.5;
  o.talking_heads_post = true;
  Layer a(o), b(o);
  CHECK(same_bits(MatrixD(a.parameters().transpose()), MatrixD(b.parameters().transpose())));
  const double bound = 1 / std::sqrt(12.0);
  CHECK(a.Wq().cwiseAbs().maxCoeff() <= bound);
  CHECK(a.Wq().cwiseAbs().maxCoeff() > 0.8 * bound);
  CHECK(a.bv().cwiseAbs().maxCoeff() <= bound);
  CHECK(a.table()(0, 3) == -3.0);
  CHECK(a.scale() == 0.5);
  CHECK(a.mix_post().isIdentity(0));
  CHECK_THROWS_AS(a.mix_pre(), synattn::Error);
  a.reset_parameters(99);
  CHECK(!a.Wq().isApprox(b.Wq()));
  CHECK(a.table()(0, 3) == -3.0);
  CHECK(a.gradients().isZero(0));
}

TEST_CASE("bad input raises synattn::Error naming the argument and the index", "[attention][errors]") {
  AttentionOptions o = small_options();
  Layer layer(o);
  Layer::Cache cache;
  const std::vector<int> lengths = {3, 2};
  const MatrixD x = MatrixD::Zero(6, 8);
  const BucketBlock ok = synattn_test::padded_buckets(lengths, lengths, 3, 3);
  using Catch::Contains;

  CHECK_THROWS_AS(synattn_test::forward_value(layer, {MatrixD::Zero(6, 7), lengths, ok}, cache), synattn::Error);
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {MatrixD::Zero(6, 7), lengths, ok}, cache),
                    Contains("x has 7 columns, expected 8"));
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {MatrixD::Zero(7, 8), lengths, ok}, cache),
                    Contains("x has 7 rows, not a multiple of the batch size 2"));
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, {3, 4}, ok}, cache),
                    Contains("lengths[1] = 4 is out of range [0, 3]"));
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, {-1, 2}, ok}, cache), Contains("lengths[0] = -1"));
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, BucketBlock::Zero(6, 4)}, cache),
                    Contains("buckets is 6x4, expected 6x3"));
  BucketBlock high = ok;
  high(4, 2) = 5;  // linear M=4: 5 buckets, valid values [-1, 5)
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, high}, cache),
                    Contains("buckets(4, 2) = 5 (sequence 1, query 1, key 2) is out of range [-1, 5)"));
  BucketBlock low = ok;
  low(0, 1) = -2;
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, low}, cache), Contains("buckets(0, 1) = -2"));
  MatrixD nan = x;
  nan(4, 6) = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {nan, lengths, ok}, cache),
                    Contains("x(4, 6) = nan is not finite (sequence 1, position 1)"));
  MatrixD out_wrong(5, 8);
  CHECK_THROWS_WITH(layer.forward({x, lengths, ok}, cache, out_wrong), Contains("out is 5x8, expected 6x8"));
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths}, cache), Contains("pass the bucket block"));

  // Backward.
  Layer::Cache fresh;
  CHECK_THROWS_WITH(synattn_test::backward_value(layer, fresh, x), Contains("the cache holds no forward pass"));
  synattn_test::forward_value(layer, {x, lengths, ok}, cache);
  CHECK_THROWS_WITH(synattn_test::backward_value(layer, cache, MatrixD::Zero(6, 5)),
                    Contains("dout is 6x5, expected 6x8"));
  MatrixD inf = x;
  inf(2, 0) = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(synattn_test::backward_value(layer, cache, inf), Contains("dout(2, 0) = inf is not finite"));
  MatrixD dx_wrong(6, 9), dmem(6, 8);
  CHECK_THROWS_WITH(layer.backward(cache, x, {dx_wrong}), Contains("dx is 6x9, expected 6x8"));
  MatrixD dxq(6, 8);
  // The cache decides self or cross: a self-attention pass has no memory.
  CHECK_THROWS_WITH(layer.backward(cache, x, {dxq, dmem}), Contains("has no memory; leave dmemory out"));
  Eigen::VectorXd short_grads(3);
  MatrixD dx(6, 8);
  CHECK_THROWS_WITH(static_cast<const Layer&>(layer).backward(cache, x, {dx}, short_grads),
                    Contains("gradients has 3 entries"));
  AttentionOptions other = o;
  other.talking_heads_pre = true;
  Layer layer2(other);
  CHECK_THROWS_WITH(synattn_test::backward_value(layer2, cache, x), Contains("the cache was filled by a layer with"));

  // Cross-attention.
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, x, {3}, ok}, cache), Contains("lengths_kv has 1"));
  CHECK_THROWS_WITH(
      synattn_test::forward_value(layer, {x, lengths, MatrixD::Zero(4, 8), {2, 3}, BucketBlock::Zero(6, 2)}, cache),
      Contains("lengths_kv[1] = 3 is out of range [0, 2]"));
  AttentionOptions causal = o;
  causal.causal = true;
  CHECK_THROWS_WITH(synattn_test::forward_value(Layer(causal), {x, lengths, x, lengths, ok}, cache),
                    Contains("self-attention only"));
  AttentionOptions wide = o;
  wide.memory_size = 5;
  CHECK_THROWS_WITH(synattn_test::forward_value(Layer(wide), {x, lengths, ok}, cache),
                    Contains("memory_size == d_model"));

  // Options.
  AttentionOptions bad(10, 3);
  CHECK_THROWS_WITH(Layer{bad}, Contains("d_model 10 is not divisible by heads 3"));
  bad.key_size = bad.value_size = 4;
  CHECK_NOTHROW(Layer{bad});
  AttentionOptions no_heads(8, 0);
  CHECK_THROWS_WITH(Layer{no_heads}, Contains("heads must be >= 1"));

  // With checking off, NaN input is the caller's business: no throw.
  AttentionOptions unchecked = o;
  unchecked.check_finite = false;
  CHECK_NOTHROW(synattn_test::forward_value(Layer(unchecked), {nan, lengths, ok}, cache));
}

TEST_CASE("long sequences computed in row blocks match the reference and any thread count", "[attention][threads]") {
  // A 300 x 300 double score block is 720 KB, over the 512 KB a forward task
  // keeps in cache, so the forward pass splits it into row blocks.
  REQUIRE(synattn::detail::score_block_rows<double>(300, 300) < 300);
  const bool causal = GENERATE(false, true);
  AttentionOptions o(8, 2);
  o.causal = causal;
  o.bias.bucketing = Bucketing::linear(6);
  Layer layer(o);
  std::mt19937 rng(5);
  synattn_test::randomise(layer, rng);
  const std::vector<int> lengths = {300, 211};
  const int n = 300;
  const MatrixD x = synattn_test::random_matrix(2 * n, 8, rng);
  const BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, n, n, layer.num_buckets(), rng);
  const auto want = synattn_test::naive_attention(layer, x, lengths, x, lengths, buckets);
  Layer::Cache cache;
  const MatrixD out = synattn_test::forward_value(layer, {x, lengths, buckets}, cache);
  INFO("causal " << causal);
  CHECK((out - want.out).cwiseAbs().maxCoeff() <= 1e-12 * want.out.cwiseAbs().maxCoeff());
  CHECK((cache.probabilities() - want.probs).cwiseAbs().maxCoeff() <= 1e-12);
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  Layer::Cache serial;
  const MatrixD out1 = synattn_test::forward_value(layer, {x, lengths, buckets}, serial);
  omp_set_num_threads(2);
  Layer::Cache parallel;
  const MatrixD out2 = synattn_test::forward_value(layer, {x, lengths, buckets}, parallel);
  omp_set_num_threads(saved);
  CHECK(same_bits(out1, out2));
  CHECK(same_bits(serial.probabilities(), parallel.probabilities()));
#endif
}

TEST_CASE("long sequences: the row-blocked backward matches directional finite differences", "[attention][threads]") {
  // 300 x 300 double blocks are cut into row blocks in the backward pass too;
  // dK, dV and the table's bucket sums add up over the blocks.
  const bool causal = GENERATE(false, true);
  AttentionOptions o(8, 2);
  o.causal = causal;
  o.bias.bucketing = Bucketing::linear(6);
  Layer layer(o);
  std::mt19937 rng(15);
  synattn_test::randomise(layer, rng);
  const std::vector<int> lengths = {300, 211};
  const int n = 300;
  const MatrixD x = synattn_test::random_matrix(2 * n, 8, rng);
  const MatrixD G = synattn_test::random_matrix(2 * n, 8, rng);
  const BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, n, n, layer.num_buckets(), rng);
  const Run r = run(layer, x, lengths, x, lengths, buckets, G, false);
  const auto loss = [&](const MatrixD& xs) {
    Layer::Cache c;
    return (synattn_test::forward_value(layer, {xs, lengths, buckets}, c).array() * G.array()).sum();
  };
  const double eps = 1e-5;
  INFO("causal " << causal);
  // d/dt L(x + t R) at 0 = <dL/dx, R>
  const MatrixD R = synattn_test::random_matrix(2 * n, 8, rng);
  const double fd_x = (loss(x + eps * R) - loss(x - eps * R)) / (2 * eps);
  CHECK(fd_x == Approx((r.dx.array() * R.array()).sum()).epsilon(1e-6));
  // the same along a random direction in parameter space (table included)
  const Eigen::VectorXd theta = layer.parameters();
  Eigen::VectorXd dir(theta.size());
  for (Eigen::Index i = 0; i < dir.size(); ++i) dir[i] = std::normal_distribution<double>(0.0, 1.0)(rng);
  layer.parameters() = theta + eps * dir;
  const double up = loss(x);
  layer.parameters() = theta - eps * dir;
  const double down = loss(x);
  layer.parameters() = theta;
  CHECK((up - down) / (2 * eps) == Approx(r.grads.col(0).dot(dir)).epsilon(1e-6));
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Run one = run(layer, x, lengths, x, lengths, buckets, G, false);
  omp_set_num_threads(2);
  const Run two = run(layer, x, lengths, x, lengths, buckets, G, false);
  omp_set_num_threads(saved);
  CHECK(same_bits(one.dx, two.dx));
  CHECK(same_bits(one.grads, two.grads));
#endif
}

TEST_CASE("infer gives forward's output bit for bit and keeps nothing for backward", "[attention][inference]") {
  struct Case {
    const char* label;
    void (*edit)(AttentionOptions&);
    bool cross;
  };
  const Case cases[] = {
      {"shared linear", [](AttentionOptions&) {}, false},
      {"causal, per-head log",
       [](AttentionOptions& o) {
         o.causal = true;
         o.bias.per_head = true;
         o.bias.bucketing = Bucketing::log(8, 30, 4);
       },
       false},
      {"talking heads", [](AttentionOptions& o) { o.talking_heads_pre = o.talking_heads_post = true; }, false},
      {"no syntax bias", [](AttentionOptions& o) { o.syntax_bias = false; }, false},
      {"cross-attention", [](AttentionOptions& o) { o.memory_size = 6; }, true},
  };
  const int k = GENERATE(range(0, 5));
  const Case& c = cases[k];
  INFO("configuration: " << c.label);
  AttentionOptions o = small_options();
  c.edit(o);
  std::mt19937 rng(300 + k);
  Layer layer(o);
  synattn_test::randomise(layer, rng);
  const std::vector<int> lq = {7, 0, 1, 5}, lkv = c.cross ? std::vector<int>{4, 6, 0, 6} : lq;
  const int nq = 7, nkv = c.cross ? 6 : 7;
  const MatrixD xq = synattn_test::random_matrix(4 * nq, o.d_model, rng);
  const MatrixD xkv = synattn_test::random_matrix(4 * nkv, layer.memory_size(), rng);
  const BucketBlock buckets = synattn_test::random_buckets(lq, lkv, nq, nkv, std::max(layer.num_buckets(), 1), rng);

  Layer::Cache cache;
  const MatrixD trained = c.cross ? synattn_test::forward_value(layer, {xq, lq, xkv, lkv, buckets}, cache)
                                  : synattn_test::forward_value(layer, {xq, lq, buckets}, cache);
  const MatrixD inferred = c.cross ? synattn_test::infer_value(layer, {xq, lq, xkv, lkv, buckets})
                                   : synattn_test::infer_value(layer, {xq, lq, buckets});
  CHECK(same_bits(trained, inferred));

  // The same cache object as a workspace: a filled cache gives the same
  // output, and afterwards refuses backward() with a message saying why.
  MatrixD out(xq.rows(), o.d_model);
  if (c.cross)
    layer.infer({xq, lq, xkv, lkv, buckets}, cache, out);
  else
    layer.infer({xq, lq, buckets}, cache, out);
  CHECK(same_bits(trained, out));
  const MatrixD G = MatrixD::Ones(xq.rows(), o.d_model);
  MatrixD dx(xq.rows(), o.d_model), dmem(xkv.rows(), xkv.cols());
  if (c.cross)
    CHECK_THROWS_WITH(layer.backward(cache, G, {dx, dmem}), Catch::Contains("infer()"));
  else
    CHECK_THROWS_WITH(layer.backward(cache, G, {dx}), Catch::Contains("infer()"));
  // infer validates like forward
  const std::vector<int> too_long = {8, 0, 1, 5};
  if (!c.cross)
    CHECK_THROWS_WITH(synattn_test::infer_value(layer, {xq, too_long, buckets}), Catch::Contains("lengths[0] = 8"));
}

TEST_CASE("tree fusion: V equal views with equal tables are one view; the weights are softmax(view_logits)",
          "[attention][fusion]") {
  const bool per_head = GENERATE(false, true);
  AttentionOptions one = small_options();
  one.bias.per_head = per_head;
  AttentionOptions fused = one;
  fused.bias.fusion.views = 3;
  fused.bias.fusion.per_head_weights = per_head;
  std::mt19937 rng(5);
  Layer single(one), layer(fused);
  synattn_test::randomise(single, rng);
  for (const auto& p : single.parameter_infos())
    if (p.name != "table") layer.set_parameter(p.name, single.parameter(p.name));
  const int rows = per_head ? one.heads : 1;
  REQUIRE(layer.table().rows() == 3 * rows);
  REQUIRE(layer.view_logits().rows() == rows);
  REQUIRE(layer.view_logits().cols() == 3);
  // Every view's table is the single layer's; random logits then change nothing.
  for (int v = 0; v < 3; ++v) layer.table().middleRows(v * rows, rows) = single.table();
  layer.view_logits() = synattn_test::random_matrix(rows, 3, rng);
  const MatrixD w = layer.view_weights();
  for (int r = 0; r < rows; ++r) {
    const Eigen::RowVectorXd e = layer.view_logits().row(r).array().exp();
    CHECK((w.row(r) - e / e.sum()).cwiseAbs().maxCoeff() < 1e-15);
  }
  const std::vector<int> lengths = {6, 3};
  const MatrixD x = synattn_test::random_matrix(12, one.d_model, rng);
  const BucketBlock b1 = synattn_test::random_buckets(lengths, lengths, 6, 6, single.num_buckets(), rng);
  BucketBlock b3(36, 6);
  b3 << b1, b1, b1;
  Layer::Cache c1, c3;
  const MatrixD out1 = synattn_test::forward_value(single, {x, lengths, b1}, c1);
  const MatrixD out3 = synattn_test::forward_value(layer, {x, lengths, b3}, c3);
  CHECK((out1 - out3).cwiseAbs().maxCoeff() <= 1e-13);
  // The table gradient of the views sums to the single layer's; the logits get none.
  const MatrixD G = synattn_test::random_matrix(12, one.d_model, rng);
  MatrixD dx1(12, one.d_model), dx3(12, one.d_model);
  single.zero_grad();
  layer.zero_grad();
  single.backward(c1, G, {dx1});
  layer.backward(c3, G, {dx3});
  const MatrixD dt = layer.gradient("table");
  const MatrixD summed = dt.middleRows(0, rows) + dt.middleRows(rows, rows) + dt.middleRows(2 * rows, rows);
  CHECK((summed - single.gradient("table")).cwiseAbs().maxCoeff() <= 1e-12);
  CHECK(layer.gradient("view_logits").cwiseAbs().maxCoeff() <= 1e-12);
  CHECK((dx1 - dx3).cwiseAbs().maxCoeff() <= 1e-12);
}

TEST_CASE("tree fusion: the bias table's gather and its adjoint agree with the layer", "[attention][fusion]") {
  AttentionOptions o = small_options();
  o.bias.fusion.views = 2;
  o.bias.fusion.per_head_weights = true;
  std::mt19937 rng(9);
  Layer layer(o);
  synattn_test::randomise(layer, rng);
  synattn::BiasTable<double> table(o.bias, o.heads);
  table.table() = layer.table();
  table.set_scale(layer.scale());
  table.ref().view_logits() = layer.view_logits();
  const std::vector<int> lengths = {5};
  const BucketBlock views = synattn_test::random_bucket_views(2, lengths, lengths, 5, 5, layer.num_buckets(), rng);
  // gather = s * sum_v w[a, v] T_v[bucket_v], -inf where masked.
  const MatrixD w = layer.view_weights();
  for (int a = 0; a < o.heads; ++a) {
    MatrixD bias(5, 5);
    table.gather(a, views, bias);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) {
        if (views(i, j) < 0) {
          CHECK(bias(i, j) == -std::numeric_limits<double>::infinity());
          continue;
        }
        const double want =
            layer.scale() * (w(a, 0) * layer.table()(0, views(i, j)) + w(a, 1) * layer.table()(1, views(5 + i, j)));
        CHECK(bias(i, j) == Approx(want).epsilon(1e-14));
      }
  }
  // Views that mask different pairs are refused, naming the view and the pair.
  BucketBlock own_mask = views;
  own_mask(5 + 2, 3) = own_mask(2, 3) < 0 ? std::int8_t(0) : std::int8_t(-1);
  MatrixD unused(5, 5);
  CHECK_THROWS_WITH(table.gather(0, own_mask, unused), Catch::Contains("tree view 1") && Catch::Contains("at (2, 3)") &&
                                                           Catch::Contains("mask the same pairs"));
  // The adjoint by finite differences of <G, gather>.
  const MatrixD G = synattn_test::random_matrix(5, 5, rng);
  auto loss = [&]() {
    MatrixD bias(5, 5);
    table.gather(1, views, bias);
    return (bias.array().isFinite()).select(bias.array() * G.array(), 0.0).sum();
  };
  table.zero_grad();
  table.accumulate_gradient(1, views, G);
  const MatrixD dt = table.table_gradient(), dl = table.ref().view_logit_gradient();
  const MatrixD ds = MatrixD::Constant(1, 1, table.scale_gradient());
  CHECK(synattn_test::check_gradient("table", table.table(), dt, loss).passes(1e-7, 1e-9));
  CHECK(synattn_test::check_gradient("view_logits", table.ref().view_logits(), dl, loss).passes(1e-7, 1e-9));
  double s = table.scale();
  Eigen::Map<MatrixD> scale(&s, 1, 1);
  auto loss_s = [&]() {
    const double saved = table.scale();
    table.set_scale(s);
    const double l = loss();
    table.set_scale(saved);
    return l;
  };
  CHECK(synattn_test::check_gradient("scale", scale, ds, loss_s).passes(1e-7, 1e-9));
}

TEST_CASE("tree fusion: bad views raise synattn::Error naming the view and the pair", "[attention][fusion][errors]") {
  AttentionOptions o = small_options();
  o.bias.fusion.views = 2;
  Layer layer(o);
  std::mt19937 rng(3);
  const std::vector<int> lengths = {4, 2};
  const MatrixD x = synattn_test::random_matrix(8, o.d_model, rng);
  MatrixD out(8, o.d_model);
  Layer::Cache cache;
  BucketBlock views = synattn_test::random_bucket_views(2, lengths, lengths, 4, 4, layer.num_buckets(), rng, 0.0);
  CHECK_NOTHROW(layer.forward({x, lengths, views}, cache, out));
  // One view only: the shape names the views.
  const BucketBlock one = views.topRows(8);
  CHECK_THROWS_WITH(layer.forward({x, lengths, one}, cache, out), Catch::Contains("fuses 2 tree views"));
  // View 1 masks a pair view 0 keeps.
  BucketBlock bad = views;
  bad(8 + 1, 2) = -1;
  CHECK_THROWS_WITH(layer.forward({x, lengths, bad}, cache, out), Catch::Contains("tree view 1") &&
                                                                      Catch::Contains("sequence 0, query 1, key 2") &&
                                                                      Catch::Contains("mask the same pairs"));
  // A bucket of view 1 out of range names the view.
  bad = views;
  bad(8 + 4, 0) = static_cast<std::int8_t>(layer.num_buckets());
  CHECK_THROWS_WITH(layer.forward({x, lengths, bad}, cache, out),
                    Catch::Contains("tree view 1") && Catch::Contains("out of range"));
  // A cache of a one-view layer is refused by the fused layer's backward.
  Layer single(small_options());
  Layer::Cache other;
  synattn_test::forward_value(single, {x, lengths, one}, other);
  MatrixD dx(8, o.d_model);
  CHECK_THROWS_WITH(layer.backward(other, out, {dx}), Catch::Contains("2 tree views"));
  // Options out of range, and view_logits without fusion.
  AttentionOptions too_many = small_options();
  too_many.bias.fusion.views = synattn::kMaxTreeViews + 1;
  CHECK_THROWS_WITH(Layer(too_many), Catch::Contains("fusion.views"));
  CHECK_THROWS_WITH(single.view_logits(), Catch::Contains("view_logits"));
}
