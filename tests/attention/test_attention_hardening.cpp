// SyntaxBiasedAttention under misuse: a cache handed to a layer
// it was not filled by, non-finite parameters, options that do not fit the
// layer's number type, scores that overflow, and empty sequences. Each case
// used to reach a memory error, an Eigen assertion or a silent wrong result.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "naive_attention.hpp"
#include "support/attention_calls.hpp"

using synattn::AttentionOptions;
using synattn::Bucketing;
using synattn::RowMajorMatrix;
using synattn::SyntaxBiasedAttention;
using synattn::TableInit;
using synattn_test::BucketBlock;
using synattn_test::MatrixD;
using MatrixF = RowMajorMatrix<float>;
using Layer = SyntaxBiasedAttention<double>;
using LayerF = SyntaxBiasedAttention<float>;
using Catch::Contains;

namespace {

AttentionOptions base_options() {
  AttentionOptions o(8, 1);
  o.key_size = 4;
  o.value_size = 4;
  o.bias.bucketing = Bucketing::linear(7);  // 8 buckets
  return o;
}

// A forward pass of a layer built from `a` on a 2 x 5 batch, every bucket in
// range for `a` (so up to its last bucket).
struct Filled {
  Layer layer;
  Layer::Cache cache;
  MatrixD x;
  explicit Filled(const AttentionOptions& a) : layer(a) {
    std::mt19937 rng(5);
    x = synattn_test::random_matrix(10, a.d_model, rng);
    const std::vector<int> lengths = {5, 4};
    const BucketBlock buckets =
        synattn_test::random_buckets(lengths, lengths, 5, 5, std::max(layer.num_buckets(), 1), rng);
    synattn_test::forward_value(layer, {x, lengths, buckets}, cache);
  }
};

}  // namespace

TEST_CASE("backward refuses a cache filled by a layer of other shape or options, naming both",
          "[attention][cache][errors]") {
  struct Case {
    const char* label;
    std::function<void(AttentionOptions&)> edit;
    const char* names;  // a part of the message that names the difference
  };
  const Case cases[] = {
      {"fewer buckets", [](AttentionOptions& o) { o.bias.bucketing = Bucketing::linear(2); }, "3 buckets"},
      {"same width, other key/value split",
       [](AttentionOptions& o) {
         o.key_size = 2;
         o.value_size = 8;
       },
       "key 2, value 8"},
      {"non-causal -> causal", [](AttentionOptions& o) { o.causal = true; }, ", causal"},
      {"shared -> per-head table", [](AttentionOptions& o) { o.bias.per_head = true; }, "per-head"},
      {"bias -> no bias", [](AttentionOptions& o) { o.syntax_bias = false; }, "no syntax bias"},
      {"talking heads", [](AttentionOptions& o) { o.talking_heads_post = true; }, "talking heads post"},
      {"more heads", [](AttentionOptions& o) {
         o.heads = 2;
         o.key_size = 2;
         o.value_size = 2;
       },
       "heads 2"},
  };
  const int k = GENERATE(range(0, 7));
  const Case& c = cases[k];
  INFO("case: " << c.label);
  const AttentionOptions a = base_options();
  Filled filled(a);
  AttentionOptions bo = a;
  c.edit(bo);
  Layer other(bo);
  MatrixD dx(10, 8);
  const MatrixD dout = MatrixD::Ones(10, 8);
  CHECK_THROWS_AS(other.backward(filled.cache, dout, {dx}), synattn::Error);
  CHECK_THROWS_WITH(other.backward(filled.cache, dout, {dx}), Contains("the cache was filled by a layer with"));
  CHECK_THROWS_WITH(other.backward(filled.cache, dout, {dx}), Contains(c.names));
  Eigen::VectorXd grads = Eigen::VectorXd::Zero(other.parameter_count());
  CHECK_THROWS_AS(static_cast<const Layer&>(other).backward(filled.cache, dout, {dx}, grads), synattn::Error);
  // An identical layer is refused too (it holds other weights), and nothing
  // is written; the layer that filled the cache accepts it, once.
  Layer twin(a);
  CHECK_THROWS_WITH(twin.backward(filled.cache, dout, {dx}), Contains("filled by another layer"));
  CHECK(twin.gradients().isZero(0));
  Layer copy = filled.layer;
  CHECK_THROWS_WITH(copy.backward(filled.cache, dout, {dx}), Contains("filled by another layer"));
  CHECK_NOTHROW(filled.layer.backward(filled.cache, dout, {dx}));
  CHECK_THROWS_WITH(filled.layer.backward(filled.cache, dout, {dx}), Contains("already run on this cache"));
}

TEST_CASE("backward refuses a cross-attention cache from a layer of other shape", "[attention][cache][errors]") {
  AttentionOptions a = base_options();
  a.memory_size = 6;
  Layer layer(a);
  std::mt19937 rng(3);
  const MatrixD xq = synattn_test::random_matrix(6, 8, rng), mem = synattn_test::random_matrix(8, 6, rng);
  const std::vector<int> lq = {3, 2}, lk = {4, 3};
  const BucketBlock buckets = synattn_test::random_buckets(lq, lk, 3, 4, layer.num_buckets(), rng);
  Layer::Cache cache;
  synattn_test::forward_value(layer, {xq, lq, mem, lk, buckets}, cache);
  AttentionOptions b = a;
  b.bias.bucketing = Bucketing::linear(1);
  Layer fewer(b);
  MatrixD dxq(6, 8), dmem(8, 6);
  CHECK_THROWS_WITH(fewer.backward(cache, MatrixD::Ones(6, 8), {dxq, dmem}),
                    Contains("the cache was filled by a layer with"));
  AttentionOptions wide = a;
  wide.memory_size = 5;
  Layer narrower(wide);
  MatrixD dmem5(8, 5);
  CHECK_THROWS_WITH(narrower.backward(cache, MatrixD::Ones(6, 8), {dxq, dmem5}), Contains("memory 6"));
  // The cache decides self or cross: a cross-attention pass needs dmemory.
  CHECK_THROWS_WITH(layer.backward(cache, MatrixD::Ones(6, 8), {dxq}), Contains("dmemory is 0x0, expected 8x6"));
  CHECK_NOTHROW(layer.backward(cache, MatrixD::Ones(6, 8), {dxq, dmem}));
}

TEST_CASE("with check_finite on, a non-finite parameter is refused by name and element", "[attention][nan]") {
  AttentionOptions o = base_options();
  o.heads = 2;
  o.key_size = o.value_size = 2;
  o.bias.per_head = true;
  o.talking_heads_pre = o.talking_heads_post = true;
  std::mt19937 rng(9);
  const MatrixD x = synattn_test::random_matrix(6, 8, rng);
  const std::vector<int> lengths = {3, 3};
  const BucketBlock buckets = BucketBlock::Zero(6, 3);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* name;
    int r, c;
    double value;
    const char* message;
  };
  const Case cases[] = {
      {"Wq", 0, 0, nan, "parameter Wq(0, 0) = nan is not finite"},
      {"Wv", 3, 5, inf, "parameter Wv(3, 5) = inf is not finite"},
      {"bo", 0, 7, nan, "parameter bo(0, 7) = nan"},
      {"table", 1, 2, nan, "parameter table(1, 2) = nan"},
      {"scale", 0, 0, inf, "parameter scale(0, 0) = inf"},
      {"mix_pre", 1, 0, nan, "parameter mix_pre(1, 0) = nan"},
      {"mix_post", 0, 1, -inf, "parameter mix_post(0, 1) = -inf"},
  };
  const int k = GENERATE(range(0, 7));
  const Case& c = cases[k];
  INFO("parameter " << c.name);
  Layer layer(o);
  layer.parameter(c.name)(c.r, c.c) = c.value;
  Layer::Cache cache;
  CHECK_THROWS_AS(synattn_test::forward_value(layer, {x, lengths, buckets}, cache), synattn::Error);
  CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, buckets}, cache), Contains(c.message));
  CHECK_THROWS_WITH(synattn_test::infer_value(layer, {x, lengths, buckets}), Contains(c.message));
  // Checking off: NaN (or inf arithmetic) propagates; nothing throws.
  AttentionOptions off = o;
  off.check_finite = false;
  Layer unchecked(off);
  unchecked.parameter(c.name)(c.r, c.c) = c.value;
  CHECK_NOTHROW(synattn_test::forward_value(unchecked, {x, lengths, buckets}, cache));
}

TEST_CASE("with check_finite off, a NaN weight propagates to the output", "[attention][nan]") {
  AttentionOptions o = base_options();
  o.check_finite = false;
  Layer layer(o);
  layer.Wq()(0, 0) = std::numeric_limits<double>::quiet_NaN();
  std::mt19937 rng(2);
  const MatrixD x = synattn_test::random_matrix(6, 8, rng);
  Layer::Cache cache;
  const MatrixD out = synattn_test::forward_value(layer, {x, {3, 3}, BucketBlock::Zero(6, 3)}, cache);
  // Every query row reads the NaN through q: every output row is NaN, with
  // whichever row kernel is active (one NaN policy; test_attention_isa checks
  // each ISA forced in turn).
  Eigen::Index finite_rows = 0;
  for (Eigen::Index r = 0; r < out.rows(); ++r) finite_rows += std::isnan(out(r, 0)) ? 0 : 1;
  CAPTURE(synattn::to_string(synattn::kernels::active_isa()));
  CHECK(finite_rows == 0);
}

TEST_CASE("options that feed arithmetic are validated in the layer's own number type", "[attention][options]") {
  AttentionOptions o = base_options();
  SECTION("bias.scale beyond float") {
    o.bias.scale = 1e300;
    CHECK_THROWS_AS(LayerF{o}, synattn::Error);
    CHECK_THROWS_WITH(LayerF{o}, Contains("bias.scale = 1e+300 is not representable in float"));
    CHECK_NOTHROW(Layer{o});  // fine in double, with a zero table
  }
  SECTION("bias.decay beyond float") {
    o.bias.init = TableInit::LinearDecay;
    o.bias.decay = 1e308;
    CHECK_THROWS_WITH(LayerF{o}, Contains("bias.decay = 1e+308 is not representable in float"));
    // In double the decay fits but the initial table -decay * 7 does not.
    CHECK_THROWS_WITH(Layer{o}, Contains("makes the initial table entry"));
  }
  SECTION("scale times the initial table overflows float") {
    o.bias.init = TableInit::LinearDecay;
    o.bias.decay = 1e20;
    o.bias.scale = 1e20;
    CHECK_THROWS_WITH(LayerF{o}, Contains("bias.scale * table[1]"));
    CHECK_NOTHROW(Layer{o});
  }
  SECTION("representable values pass") {
    o.bias.scale = 3e38;
    CHECK_NOTHROW(LayerF{o});
  }
}

TEST_CASE("with check_finite on, scores that would overflow are refused", "[attention][overflow]") {
  AttentionOptions o = base_options();
  std::mt19937 rng(4);
  const std::vector<int> lengths = {3, 3};
  const BucketBlock buckets = BucketBlock::Zero(6, 3);
  LayerF::Cache cache;
  SECTION("x = 1e20 in float") {
    LayerF layer(o);
    const MatrixF x = MatrixF::Constant(6, 8, 1e20f);
    CHECK_THROWS_AS(synattn_test::forward_value(layer, {x, lengths, buckets}, cache), synattn::Error);
    CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, buckets}, cache), Contains("overflow"));
    CHECK_THROWS_WITH(synattn_test::infer_value(layer, {x, lengths, buckets}), Contains("overflow"));
    AttentionOptions off = o;
    off.check_finite = false;
    CHECK_NOTHROW(synattn_test::forward_value(LayerF(off), {x, lengths, buckets}, cache));
  }
  SECTION("table -3e38 times scale 10 makes every bias -inf") {
    LayerF layer(o);
    layer.table().setConstant(-3e38f);
    layer.scale() = 10.0f;
    const MatrixF x = synattn_test::random_matrix(6, 8, rng).cast<float>();
    CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, buckets}, cache), Contains("scale * table"));
    CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, buckets}, cache), Contains("overflows float"));
  }
  SECTION("pre-mixing talking heads that would overflow the mixed scores") {
    AttentionOptions th = o;
    th.heads = 2;
    th.key_size = th.value_size = 4;
    th.talking_heads_pre = true;
    LayerF layer(th);
    layer.mix_pre().setConstant(1e37f);
    const MatrixF x = synattn_test::random_matrix(6, 8, rng).cast<float>() * 3.0f;
    CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, buckets}, cache), Contains("M_pre"));
    layer.mix_pre().setIdentity();
    CHECK_NOTHROW(synattn_test::forward_value(layer, {x, lengths, buckets}, cache));
  }
  SECTION("huge values in padding rows only: the loose whole-matrix bound fails, the exact one passes") {
    LayerF layer(o);
    MatrixF x = synattn_test::random_matrix(6, 8, rng).cast<float>();
    x.row(5).setConstant(1e30f);  // sequence 1 has length 2: row 5 is padding
    const std::vector<int> short_lengths = {3, 2};
    const BucketBlock short_buckets = synattn_test::padded_buckets(short_lengths, short_lengths, 3, 3);
    MatrixF out;
    REQUIRE_NOTHROW(out = synattn_test::forward_value(layer, {x, short_lengths, short_buckets}, cache));
    CHECK(out.topRows(5).allFinite());
    x.row(4).setConstant(1e30f);  // now a real word: refused, by sequence and position
    CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, short_lengths, short_buckets}, cache),
                      Contains("sequence 1"));
  }
  SECTION("large but safe inputs pass and give finite outputs") {
    LayerF layer(o);
    const MatrixF x = (synattn_test::random_matrix(6, 8, rng) * 1e8).cast<float>();
    MatrixF out;
    REQUIRE_NOTHROW(out = synattn_test::forward_value(layer, {x, lengths, buckets}, cache));
    CHECK(out.allFinite());
  }
}

TEST_CASE("empty sequences: lengths {0, 0} with no rows, and all-padding batches", "[attention][empty]") {
  AttentionOptions o = base_options();
  o.talking_heads_post = GENERATE(false, true);
  INFO("talking heads: " << o.talking_heads_post);
  Layer layer(o);
  const std::vector<int> none = {0, 0};
  SECTION("self-attention, 0 rows") {
    Layer::Cache cache;
    const MatrixD x(0, 8);
    MatrixD out(0, 8), dx(0, 8);
    layer.forward({x, none, BucketBlock(0, 0)}, cache, out);
    layer.zero_grad();
    layer.backward(cache, MatrixD(0, 8), {dx});
    CHECK(layer.gradients().cwiseAbs().maxCoeff() == 0.0);
    CHECK(synattn_test::infer_value(layer, {x, none, BucketBlock(0, 0)}).rows() == 0);
  }
  SECTION("cross-attention, 0 rows") {
    AttentionOptions c = o;
    c.memory_size = 5;
    Layer cross(c);
    Layer::Cache cache;
    MatrixD out(0, 8), dxq(0, 8), dmem(0, 5);
    cross.forward({MatrixD(0, 8), none, MatrixD(0, 5), none, BucketBlock(0, 0)}, cache, out);
    cross.zero_grad();
    cross.backward(cache, MatrixD(0, 8), {dxq, dmem});
    CHECK(cross.gradients().cwiseAbs().maxCoeff() == 0.0);
  }
  SECTION("cross-attention with an empty side: no keys, or no queries") {
    // Blocks of the empty side's buffers sit at column offsets of a null
    // pointer: UB the sanitize preset reports (found by fuzz_attention).
    AttentionOptions c = o;
    c.heads = 2;
    c.key_size = c.value_size = 3;
    c.memory_size = 5;
    Layer cross(c);
    std::mt19937 rng(6);
    for (const bool no_keys : {true, false}) {
      INFO("no keys: " << no_keys);
      const Eigen::Index nq = no_keys ? 3 : 0, nkv = no_keys ? 0 : 4;
      const MatrixD xq = synattn_test::random_matrix(2 * nq, 8, rng);
      const MatrixD mem = synattn_test::random_matrix(2 * nkv, 5, rng);
      const std::vector<int> lq = {int(nq), int(nq) / 2}, lk = {int(nkv), int(nkv) / 2};
      Layer::Cache cache;
      MatrixD out(2 * nq, 8), dxq(2 * nq, 8), dmem(2 * nkv, 5);
      cross.forward({xq, lq, mem, lk, synattn_test::padded_buckets(lq, lk, nq, nkv)}, cache, out);
      for (Eigen::Index r = 0; r < out.rows(); ++r) CHECK((out.row(r) - cross.bo()).cwiseAbs().maxCoeff() == 0.0);
      cross.zero_grad();
      cross.backward(cache, MatrixD::Ones(2 * nq, 8), {dxq, dmem});
      CHECK((dxq.size() == 0 || dxq.cwiseAbs().maxCoeff() == 0.0));
      CHECK((dmem.size() == 0 || dmem.cwiseAbs().maxCoeff() == 0.0));
    }
  }
  SECTION("rows present, every length 0: out = bo, dx = 0") {
    std::mt19937 rng(8);
    const MatrixD x = synattn_test::random_matrix(6, 8, rng);
    Layer::Cache cache;
    const MatrixD out = synattn_test::forward_value(layer, {x, none, BucketBlock::Constant(6, 3, -1)}, cache);
    for (Eigen::Index r = 0; r < 6; ++r) CHECK((out.row(r) - layer.bo()).cwiseAbs().maxCoeff() == 0.0);
    layer.zero_grad();
    const MatrixD dx = synattn_test::backward_value(layer, cache, MatrixD::Ones(6, 8));
    CHECK(dx.cwiseAbs().maxCoeff() == 0.0);
    CHECK(layer.gradient("bo").cwiseAbs().minCoeff() == 6.0);  // dbo sums dout over every row
  }
}

TEMPLATE_TEST_CASE("all_finite finds one NaN or infinity anywhere, in contiguous and strided storage",
                   "[attention][nan]", float, double) {
  using S = TestType;
  using synattn::detail::all_finite;
  using synattn::detail::all_finite_contiguous;
  const S bad[] = {std::numeric_limits<S>::quiet_NaN(), std::numeric_limits<S>::infinity(),
                   -std::numeric_limits<S>::infinity()};
  // Sizes around the 32 partial sums: the blocked part, the tail, and both.
  for (const synattn::Index size : {0, 1, 31, 32, 33, 64, 1000}) {
    std::vector<S> v(static_cast<std::size_t>(size), S(1.5));
    CHECK(all_finite_contiguous(v.data(), size));
    for (synattn::Index at = 0; at < size; at += std::max<synattn::Index>(1, size / 7)) {
      for (const S x : bad) {
        v[static_cast<std::size_t>(at)] = x;
        INFO("size " << size << ", element " << at << " = " << x);
        CHECK_FALSE(all_finite_contiguous(v.data(), size));
        v[static_cast<std::size_t>(at)] = S(1.5);
      }
    }
    CHECK(all_finite_contiguous(v.data(), size));
  }
  // Eigen views: a whole matrix (the contiguous path), a block whose rows are
  // not contiguous with each other and a column (strided: Eigen's sum), each
  // seeing only its own entries.
  RowMajorMatrix<S> m = RowMajorMatrix<S>::Constant(37, 41, S(-2));
  CHECK(all_finite(m));
  m(36, 40) = bad[0];
  CHECK_FALSE(all_finite(m));
  CHECK(all_finite(m.block(0, 0, 36, 41)));
  CHECK(all_finite(m.block(0, 0, 37, 40)));
  CHECK_FALSE(all_finite(m.block(30, 35, 7, 6)));
  CHECK_FALSE(all_finite(m.col(40)));
  CHECK(all_finite(m.col(39)));
  const Eigen::Map<const RowMajorMatrix<S>> map(m.data(), 36, 41);
  CHECK(all_finite(map));
  m(0, 0) = bad[1];
  CHECK_FALSE(all_finite(map));
}

// The mistakes a user made that used to pass silently or be reported as
// something else: lengths that belong to other sequences, a wrong number of
// lengths, and tree distances where buckets belong.
TEST_CASE("buckets beyond the lengths, a wrong number of lengths and raw distances are refused, by name",
          "[attention][errors]") {
  const int n = 6;
  const std::vector<int> lengths = {6, 4};
  std::mt19937 rng(3);
  AttentionOptions o = base_options();
  Layer layer(o);
  // Every pair within the lengths has a bucket, so the block says exactly
  // which lengths it was built for.
  const BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, n, n, layer.num_buckets(), rng, 0.0);
  const MatrixD x = synattn_test::random_matrix(2 * n, 8, rng);
  Layer::Cache cache;
  CHECK_NOTHROW(synattn_test::forward_value(layer, {x, lengths, buckets}, cache));

  SECTION("two sequences' lengths swapped") {
    const std::vector<int> swapped = {4, 6};
    CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, swapped, buckets}, cache),
                      Contains("(sequence 0, query 0, key 4) lies beyond lengths[0] = 4") && Contains("swapped"));
    CHECK_THROWS_WITH(synattn_test::infer_value(layer, {x, swapped, buckets}),
                      Contains("where only padding (-1) belongs"));
  }
  SECTION("-1 within the lengths masks a pair and is accepted") {
    BucketBlock masked = buckets;
    masked(1, 2) = -1;
    CHECK_NOTHROW(synattn_test::forward_value(layer, {x, lengths, masked}, cache));
  }
  SECTION("one length too many or too few is reported as the lengths' count") {
    for (const std::vector<int>& wrong : {std::vector<int>{6, 4, 0}, std::vector<int>{6}})
      CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, wrong, buckets}, cache),
                        Contains("lengths has " + std::to_string(wrong.size()) +
                                 " entries, but x (12 rows) and buckets (6 keys per row) hold 2 sequences"));
  }
  SECTION("tree distances beyond the bucketing get a hint") {
    BucketBlock distances = buckets;
    distances(0, 5) = 9;  // linear(7) has buckets 0..7
    CHECK_THROWS_WITH(synattn_test::forward_value(layer, {x, lengths, distances}, cache),
                      Contains("is out of range [-1, 8)") && Contains("without bucketize()"));
  }
  SECTION("cross-attention: memory lengths that do not match the block") {
    AttentionOptions oc = base_options();
    oc.memory_size = 8;
    Layer cross(oc);
    const std::vector<int> lq = {5, 3}, lkv = {6, 2};
    const BucketBlock cb = synattn_test::random_buckets(lq, lkv, 5, n, cross.num_buckets(), rng, 0.0);
    const MatrixD xq = synattn_test::random_matrix(2 * 5, 8, rng);
    MatrixD out(10, 8);
    CHECK_NOTHROW(cross.forward({xq, lq, x, lkv, cb}, cache, out));
    CHECK_THROWS_WITH(cross.forward({xq, lq, x, std::vector<int>{2, 6}, cb}, cache, out),
                      Contains("lies beyond lengths_q[0] = 5, lengths_kv[0] = 2"));
    CHECK_THROWS_WITH(cross.forward({xq, lq, x, std::vector<int>{6, 2, 1}, cb}, cache, out),
                      Contains("lengths_kv has 3 entries, but memory (12 rows)"));
  }
}
