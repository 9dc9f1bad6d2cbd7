// Attention-probability dropout in SyntaxBiasedAttention<double>: gradients
// by central differences with a fixed mask, the output against the naive
// reference applying the same mask, p = 0 and eval mode bit-identical to no
// dropout, the mask's statistics, thread-count independence, and validation.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/kernels/dropout_rows.hpp>

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
using synattn::RandomStream;
using synattn_test::BucketBlock;
using synattn_test::MatrixD;
using Layer = synattn::SyntaxBiasedAttention<double>;
using Catch::Matchers::Contains;

namespace {

bool same_bits(const MatrixD& a, const MatrixD& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

struct Case {
  std::string label;
  AttentionOptions options;
  bool cross = false;
};

AttentionOptions base_options() {
  AttentionOptions o(6, 2);
  o.key_size = 4;
  o.value_size = 3;
  o.bias.bucketing = Bucketing::linear(4);
  o.dropout = 0.3;
  return o;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  auto add = [&](std::string label, auto edit, bool cross = false) {
    Case c;
    c.label = std::move(label);
    c.options = base_options();
    edit(c.options);
    c.cross = cross;
    out.push_back(c);
  };
  add("shared linear table", [](AttentionOptions&) {});
  add("per-head table", [](AttentionOptions& o) { o.bias.per_head = true; });
  add("causal", [](AttentionOptions& o) { o.causal = true; });
  add("talking heads pre and post, three heads", [](AttentionOptions& o) {
    o.heads = 3;
    o.talking_heads_pre = o.talking_heads_post = true;
  });
  add("talking heads pre only", [](AttentionOptions& o) { o.talking_heads_pre = true; });
  add(
      "cross-attention, memory width 5", [](AttentionOptions& o) { o.memory_size = 5; }, true);
  return out;
}

// A small batch with padding, a length-0 sequence and a query with no key.
struct Batch {
  std::vector<int> lq, lkv;
  int nq = 0, nkv = 0, B = 0;
  MatrixD xq, xkv, G;
  BucketBlock buckets;
};

Batch make_batch(const Layer& layer, bool cross, std::mt19937& rng) {
  Batch t;
  t.lq = cross ? std::vector<int>{3, 0, 2, 3} : std::vector<int>{5, 0, 1, 4};
  t.lkv = cross ? std::vector<int>{5, 2, 0, 4} : t.lq;
  t.nq = cross ? 3 : 5;
  t.nkv = 5;
  t.B = static_cast<int>(t.lq.size());
  t.xq = synattn_test::random_matrix(t.B * t.nq, layer.d_model(), rng);
  t.xkv = synattn_test::random_matrix(t.B * t.nkv, layer.memory_size(), rng);
  t.buckets = synattn_test::random_buckets(t.lq, t.lkv, t.nq, t.nkv, std::max(layer.num_buckets(), 1), rng);
  if (!cross) t.buckets.row(2).setConstant(-1);  // query 2 of sequence 0 sees no key
  t.G = synattn_test::random_matrix(t.B * t.nq, layer.d_model(), rng);
  return t;
}

MatrixD run_forward(const Layer& layer, const Batch& t, bool cross, Layer::Cache& cache, const RandomStream* s) {
  if (cross) return synattn_test::forward_value(layer, {t.xq, t.lq, t.xkv, t.lkv, t.buckets}, cache, s);
  return synattn_test::forward_value(layer, {t.xq, t.lq, t.buckets}, cache, s);
}

struct Grads {
  MatrixD out, dx, dmem, params;
};

Grads run_backward(Layer& layer, const Batch& t, bool cross, const RandomStream* s) {
  Layer::Cache cache;
  Grads g;
  g.out = run_forward(layer, t, cross, cache, s);
  g.dx.resize(t.B * t.nq, layer.d_model());
  layer.zero_grad();
  if (cross) {
    g.dmem.resize(t.B * t.nkv, layer.memory_size());
    layer.backward(cache, t.G, {g.dx, g.dmem});
  } else {
    layer.backward(cache, t.G, {g.dx});
  }
  g.params = layer.gradients().transpose();
  return g;
}

constexpr double kRelTol = 1e-6;
constexpr double kAbsTol = 1e-8;

}  // namespace

TEST_CASE("dropout gradients match central differences with a fixed mask", "[attention][dropout][gradcheck]") {
  const auto all = cases();
  const int k = GENERATE(range(0, 6));
  REQUIRE(all.size() == 6);
  const Case& tc = all[static_cast<std::size_t>(k)];
  INFO("configuration: " << tc.label);
  std::mt19937 rng(77 + k);
  Layer layer(tc.options);
  synattn_test::randomise(layer, rng);
  const Batch t = make_batch(layer, tc.cross, rng);
  const RandomStream stream = RandomStream(2024).derive(static_cast<std::uint64_t>(k));

  auto loss = [&]() {
    Layer::Cache c;
    return (run_forward(layer, t, tc.cross, c, &stream).array() * t.G.array()).sum();
  };
  const Grads g = run_backward(layer, t, tc.cross, &stream);
  {
    // The mask matters: the dropped output is not the eval output.
    Layer::Cache c;
    const MatrixD eval = run_forward(layer, t, tc.cross, c, nullptr);
    CHECK(!eval.isApprox(g.out, 1e-6));
  }
  for (const auto& p : layer.parameter_infos()) {
    const Eigen::Index offset = static_cast<Eigen::Index>(p.offset);
    const MatrixD analytic = Eigen::Map<const MatrixD>(g.params.data() + offset, p.rows, p.cols);
    const auto r = synattn_test::check_gradient(p.name, layer.parameter(p.name), analytic, loss);
    INFO(r.describe());
    CHECK(r.passes(kRelTol, kAbsTol));
  }
  Batch moving = t;
  auto loss_inputs = [&]() {
    Layer::Cache c;
    return (run_forward(layer, moving, tc.cross, c, &stream).array() * t.G.array()).sum();
  };
  {
    const auto r = synattn_test::check_gradient("dx_q", moving.xq, g.dx, loss_inputs);
    INFO(r.describe());
    CHECK(r.passes(kRelTol, kAbsTol));
  }
  if (tc.cross) {
    const auto r = synattn_test::check_gradient("dmemory", moving.xkv, g.dmem, loss_inputs);
    INFO(r.describe());
    CHECK(r.passes(kRelTol, kAbsTol));
  }
}

TEST_CASE("dropout output equals the naive reference applying the same mask", "[attention][dropout]") {
  const auto all = cases();
  const int k = GENERATE(range(0, 6));
  const Case& tc = all[static_cast<std::size_t>(k)];
  INFO("configuration: " << tc.label);
  std::mt19937 rng(500 + k);
  Layer layer(tc.options);
  synattn_test::randomise(layer, rng);
  const Batch t = make_batch(layer, tc.cross, rng);
  const RandomStream stream(99 + static_cast<std::uint64_t>(k));
  Layer::Cache cache;
  const MatrixD out = run_forward(layer, t, tc.cross, cache, &stream);
  CHECK(cache.dropout_applied());
  const auto ref =
      synattn_test::naive_attention(layer, t.xq, t.lq, tc.cross ? t.xkv : t.xq, t.lkv, t.buckets, &stream);
  const auto eval = synattn_test::naive_attention(layer, t.xq, t.lq, tc.cross ? t.xkv : t.xq, t.lkv, t.buckets);
  INFO("max |out - naive| = " << (out - ref.out).cwiseAbs().maxCoeff());
  CHECK((out - ref.out).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((out - eval.out).cwiseAbs().maxCoeff() > 1e-3);  // the mask changed something
  // probabilities() stays the softmax output before dropout.
  INFO("max |P - naive P| = " << (cache.probabilities() - ref.probs).cwiseAbs().maxCoeff());
  CHECK((cache.probabilities() - ref.probs).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("dropout 0 with a stream is bit-identical to the forward without one", "[attention][dropout]") {
  const auto all = cases();
  const int k = GENERATE(0, 3, 5);
  const Case& tc = all[static_cast<std::size_t>(k)];
  INFO("configuration: " << tc.label);
  AttentionOptions o = tc.options;
  o.dropout = 0.0;
  std::mt19937 rng(31 + k);
  Layer layer(o);
  synattn_test::randomise(layer, rng);
  const Batch t = make_batch(layer, tc.cross, rng);
  const RandomStream stream(5);
  const Grads with = run_backward(layer, t, tc.cross, &stream);
  const Grads without = run_backward(layer, t, tc.cross, nullptr);
  CHECK(same_bits(with.out, without.out));
  CHECK(same_bits(with.dx, without.dx));
  CHECK(same_bits(with.params, without.params));
  if (tc.cross) CHECK(same_bits(with.dmem, without.dmem));
}

TEST_CASE("eval forward and infer ignore the dropout option", "[attention][dropout]") {
  const auto all = cases();
  const int k = GENERATE(0, 3, 5);
  const Case& tc = all[static_cast<std::size_t>(k)];
  INFO("configuration: " << tc.label);
  AttentionOptions off = tc.options;
  off.dropout = 0.0;
  Layer with(tc.options), without(off);  // same seed: same parameters
  std::mt19937 rng(8 + k);
  const Batch t = make_batch(with, tc.cross, rng);
  Layer::Cache c1, c2;
  CHECK(same_bits(run_forward(with, t, tc.cross, c1, nullptr), run_forward(without, t, tc.cross, c2, nullptr)));
  CHECK(!c1.dropout_applied());
  const MatrixD a = tc.cross ? synattn_test::infer_value(with, {t.xq, t.lq, t.xkv, t.lkv, t.buckets})
                             : synattn_test::infer_value(with, {t.xq, t.lq, t.buckets});
  const MatrixD b = tc.cross ? synattn_test::infer_value(without, {t.xq, t.lq, t.xkv, t.lkv, t.buckets})
                             : synattn_test::infer_value(without, {t.xq, t.lq, t.buckets});
  CHECK(same_bits(a, b));
  // A dropout forward followed by eval reuses the cache without leftovers.
  const RandomStream stream(3);
  Layer::Cache c3;
  run_forward(with, t, tc.cross, c3, &stream);
  CHECK(c3.dropout_applied());
  CHECK(same_bits(run_forward(with, t, tc.cross, c3, nullptr), run_forward(without, t, tc.cross, c2, nullptr)));
  CHECK(!c3.dropout_applied());
}

TEST_CASE("different streams draw different masks", "[attention][dropout]") {
  std::mt19937 rng(4);
  Layer layer(base_options());
  synattn_test::randomise(layer, rng);
  const Batch t = make_batch(layer, false, rng);
  Layer::Cache c;
  const RandomStream root(123);
  const MatrixD a = run_forward(layer, t, false, c, &root);
  const MatrixD a2 = run_forward(layer, t, false, c, &root);
  const RandomStream other = root.derive(1);
  const MatrixD b = run_forward(layer, t, false, c, &other);
  CHECK(same_bits(a, a2));  // the same stream: the same mask
  CHECK((a - b).cwiseAbs().maxCoeff() > 1e-3);
}

TEST_CASE("dropout_rows keeps about 1 - p, scales kept entries and zeroes the rest", "[attention][dropout]") {
  const double p = GENERATE(0.1, 0.3, 0.5);
  const int rows = 64, cols = 1000;
  MatrixD src = MatrixD::Constant(rows, cols, 2.0), dst(rows, cols);
  const RandomStream stream(7);
  const double scale = 1.0 / (1.0 - p);
  synattn::kernels::dropout_rows<double>(dst.data(), cols, src.data(), cols, rows, cols, stream, 11, cols,
                                         synattn::drop_threshold(p), scale);
  int kept = 0;
  bool values_ok = true;
  for (Eigen::Index i = 0; i < dst.size(); ++i) {
    const double v = dst.data()[i];
    if (v == 2.0 * scale)
      ++kept;
    else if (!(v == 0.0 && !std::signbit(v)))
      values_ok = false;
  }
  CHECK(values_ok);
  const double n = double(rows) * cols, share = kept / n, sd = std::sqrt(p * (1 - p) / n);
  INFO("kept share " << share << ", expected " << 1 - p << " +- " << 5 * sd);
  CHECK(std::abs(share - (1 - p)) < 5 * sd);
  // The counter of element (i, j) is first + i * stride + j: a block starting
  // at row 1 draws row 1 of the whole.
  MatrixD part(rows - 1, cols);
  synattn::kernels::dropout_rows<double>(part.data(), cols, src.data(), cols, rows - 1, cols, stream, 11 + cols,
                                         cols, synattn::drop_threshold(p), scale);
  CHECK(same_bits(part, dst.bottomRows(rows - 1)));
  // Negative inputs still give +0 when dropped (exact zeros, not -0).
  MatrixD neg = -src;
  synattn::kernels::dropout_rows<double>(neg.data(), cols, neg.data(), cols, rows, cols, stream, 11, cols,
                                         synattn::drop_threshold(p), scale);
  CHECK(same_bits(MatrixD((dst.array() == 0).select(MatrixD::Zero(rows, cols), -dst)), neg));
}

TEST_CASE("dropout results are bit-identical at 1 and 2 threads", "[attention][dropout][threads]") {
#if !defined(_OPENMP)
  WARN("built without OpenMP: nothing to compare");
#else
  const bool cross = GENERATE(false, true);
  const bool talking = GENERATE(false, true);
  AttentionOptions o(32, 4);
  o.bias.bucketing = Bucketing::linear(8);
  o.talking_heads_pre = o.talking_heads_post = talking;
  o.dropout = 0.25;
  Layer layer(o);
  std::mt19937 rng(12);
  synattn_test::randomise(layer, rng);
  // (6 sequences x 4 heads x 40 x 40) blocks: far above the parallel threshold.
  const std::vector<int> lq = {40, 33, 0, 40, 17, 38}, lkv = cross ? std::vector<int>{30, 40, 12, 0, 40, 25} : lq;
  Batch t;
  t.lq = lq;
  t.lkv = lkv;
  t.nq = t.nkv = 40;
  t.B = 6;
  t.xq = synattn_test::random_matrix(t.B * t.nq, 32, rng);
  t.xkv = synattn_test::random_matrix(t.B * t.nkv, 32, rng);
  t.buckets = synattn_test::random_buckets(lq, lkv, 40, 40, layer.num_buckets(), rng);
  t.G = synattn_test::random_matrix(t.B * t.nq, 32, rng);
  const RandomStream stream = RandomStream(1).derive(2);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Grads one = run_backward(layer, t, cross, &stream);
  omp_set_num_threads(2);
  const Grads two = run_backward(layer, t, cross, &stream);
  omp_set_num_threads(saved);
  INFO("cross " << cross << ", talking heads " << talking);
  CHECK(same_bits(one.out, two.out));
  CHECK(same_bits(one.dx, two.dx));
  CHECK(same_bits(one.params, two.params));
  if (cross) CHECK(same_bits(one.dmem, two.dmem));
#endif
}

TEST_CASE("invalid dropout probabilities throw synattn::Error naming the option", "[attention][dropout]") {
  AttentionOptions o = base_options();
  for (double p : {1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    INFO("dropout " << p);
    o.dropout = p;
    CHECK_THROWS_AS(Layer(o), synattn::Error);
    CHECK_THROWS_WITH(o.validate(), Contains("AttentionOptions: dropout must be a probability in [0, 1), got"));
  }
  o.dropout = 0.999;
  CHECK_NOTHROW(o.validate());
}

TEST_CASE("every dropout overload draws the same mask", "[attention][dropout]") {
  std::mt19937 rng(21);
  const RandomStream stream(8);
  SECTION("self-attention: out form and returning form") {
    Layer layer(base_options());
    synattn_test::randomise(layer, rng);
    const Batch t = make_batch(layer, false, rng);
    Layer::Cache c;
    const MatrixD ret = synattn_test::forward_value(layer, {t.xq, t.lq, t.buckets}, c, &stream);
    MatrixD out(ret.rows(), ret.cols());
    layer.forward({t.xq, t.lq, t.buckets}, c, out, &stream);
    CHECK(same_bits(ret, out));
  }
  SECTION("cross-attention: out form and returning form") {
    AttentionOptions o = base_options();
    o.memory_size = 5;
    Layer layer(o);
    synattn_test::randomise(layer, rng);
    const Batch t = make_batch(layer, true, rng);
    Layer::Cache c;
    const MatrixD ret = synattn_test::forward_value(layer, {t.xq, t.lq, t.xkv, t.lkv, t.buckets}, c, &stream);
    MatrixD out(ret.rows(), ret.cols());
    layer.forward({t.xq, t.lq, t.xkv, t.lkv, t.buckets}, c, out, &stream);
    CHECK(same_bits(ret, out));
  }
  SECTION("no syntax bias: the form without buckets") {
    AttentionOptions o = base_options();
    o.syntax_bias = false;
    Layer layer(o);
    synattn_test::randomise(layer, rng);
    const Batch t = make_batch(layer, false, rng);
    Layer::Cache c;
    const MatrixD a = synattn_test::forward_value(layer, {t.xq, t.lq}, c, &stream);
    const MatrixD b = synattn_test::forward_value(layer, {t.xq, t.lq, BucketBlock()}, c, &stream);
    CHECK(same_bits(a, b));
    const auto ref = synattn_test::naive_attention(layer, t.xq, t.lq, t.xq, t.lkv, t.buckets, &stream);
    CHECK((a - ref.out).cwiseAbs().maxCoeff() < 1e-12);
  }
}

TEST_CASE("float dropout forward and backward follow double under the same mask", "[attention][dropout][float]") {
  const bool cross = GENERATE(false, true);
  AttentionOptions o = base_options();
  o.talking_heads_post = cross;  // the dropped mixed probabilities too
  Layer layer(o);
  synattn::SyntaxBiasedAttention<float> layer_f(o);
  std::mt19937 rng(63);
  synattn_test::randomise(layer, rng);
  layer_f.parameters() = layer.parameters().cast<float>();
  layer.parameters() = layer_f.parameters().cast<double>();  // the same (float-representable) values
  Batch t = make_batch(layer, cross, rng);
  using MatrixF = synattn::SyntaxBiasedAttention<float>::Matrix;
  t.xq = t.xq.cast<float>().cast<double>();
  t.xkv = t.xkv.cast<float>().cast<double>();
  const MatrixF xq = t.xq.cast<float>(), xkv = t.xkv.cast<float>(), G = t.G.cast<float>();
  const RandomStream stream(77);
  const Grads d = run_backward(layer, t, cross, &stream);
  synattn::AttentionCache<float> c;
  MatrixF dx(xq.rows(), xq.cols()), dmem(xkv.rows(), xkv.cols());
  MatrixF out;
  if (cross) {
    out = synattn_test::forward_value(layer_f, {xq, t.lq, xkv, t.lkv, t.buckets}, c, &stream);
    layer_f.backward(c, G, {dx, dmem});
    CHECK((dmem.cast<double>() - d.dmem).cwiseAbs().maxCoeff() < 1e-4);
  } else {
    out = synattn_test::forward_value(layer_f, {xq, t.lq, t.buckets}, c, &stream);
    layer_f.backward(c, G, {dx});
  }
  INFO("cross " << cross);
  CHECK((out.cast<double>() - d.out).cwiseAbs().maxCoeff() < 1e-4);
  CHECK((dx.cast<double>() - d.dx).cwiseAbs().maxCoeff() < 1e-4);
  CHECK((layer_f.gradients().cast<double>().transpose() - d.params).cwiseAbs().maxCoeff() < 1e-3);
}

TEST_CASE("dropout across forward row blocks: naive reference and input gradient", "[attention][dropout][gradcheck]") {
  // n = 260 in double: a 260 x 260 block is over kScoreBlockBytes, so forward
  // and backward walk the query rows in two blocks (240 + 20) and the second
  // block's counters start at row 240.
  AttentionOptions o(4, 1);
  o.bias.bucketing = Bucketing::linear(4);
  o.dropout = 0.4;
  Layer layer(o);
  std::mt19937 rng(260);
  synattn_test::randomise(layer, rng);
  const int n = 260;
  REQUIRE(synattn::detail::score_block_rows<double>(n, n) < n);
  Batch t;
  t.lq = t.lkv = {n - 3};
  t.nq = t.nkv = n;
  t.B = 1;
  t.xq = synattn_test::random_matrix(n, 4, rng);
  t.buckets = synattn_test::random_buckets(t.lq, t.lkv, n, n, layer.num_buckets(), rng);
  t.G = synattn_test::random_matrix(n, 4, rng);
  const RandomStream stream(6);
  const Grads g = run_backward(layer, t, false, &stream);
  const auto ref = synattn_test::naive_attention(layer, t.xq, t.lq, t.xq, t.lkv, t.buckets, &stream);
  CHECK((g.out - ref.out).cwiseAbs().maxCoeff() < 1e-12);
  // Every parameter (about 100 entries; dx would take 2 x 1040 forwards):
  // Wq and Wk see dQ / dK summed over both row blocks, Wv sees dV.
  auto loss = [&]() {
    Layer::Cache c;
    return (run_forward(layer, t, false, c, &stream).array() * t.G.array()).sum();
  };
  for (const auto& p : layer.parameter_infos()) {
    const MatrixD analytic = Eigen::Map<const MatrixD>(g.params.data() + p.offset, p.rows, p.cols);
    const auto r = synattn_test::check_gradient(p.name, layer.parameter(p.name), analytic, loss);
    INFO(r.describe());
    CHECK(r.passes(kRelTol, kAbsTol));
  }
}
