// SyntaxBiasedAttention under misuse (issue 10 §1): a cache handed to a layer
// it was not filled by. Each case used to reach a memory error or a silent
// wrong result.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "naive_attention.hpp"

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
    layer.forward(x, lengths, buckets, cache);
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
  CHECK_THROWS_AS(other.backward(filled.cache, dout, dx), synattn::Error);
  CHECK_THROWS_WITH(other.backward(filled.cache, dout, dx), Contains("the cache was filled by a layer with"));
  CHECK_THROWS_WITH(other.backward(filled.cache, dout, dx), Contains(c.names));
  Eigen::VectorXd grads = Eigen::VectorXd::Zero(other.parameter_count());
  CHECK_THROWS_AS(static_cast<const Layer&>(other).backward(filled.cache, dout, dx, grads), synattn::Error);
  // The layer that filled it (or an identical one) still accepts it.
  Layer twin(a);
  CHECK_NOTHROW(twin.backward(filled.cache, dout, dx));
}

TEST_CASE("backward_cross refuses a cache from a cross layer of other shape", "[attention][cache][errors]") {
  AttentionOptions a = base_options();
  a.memory_size = 6;
  Layer layer(a);
  std::mt19937 rng(3);
  const MatrixD xq = synattn_test::random_matrix(6, 8, rng), mem = synattn_test::random_matrix(8, 6, rng);
  const std::vector<int> lq = {3, 2}, lk = {4, 3};
  const BucketBlock buckets = synattn_test::random_buckets(lq, lk, 3, 4, layer.num_buckets(), rng);
  Layer::Cache cache;
  layer.forward_cross(xq, lq, mem, lk, buckets, cache);
  AttentionOptions b = a;
  b.bias.bucketing = Bucketing::linear(1);
  Layer fewer(b);
  MatrixD dxq(6, 8), dmem(8, 6);
  CHECK_THROWS_WITH(fewer.backward_cross(cache, MatrixD::Ones(6, 8), dxq, dmem),
                    Contains("the cache was filled by a layer with"));
  AttentionOptions wide = a;
  wide.memory_size = 5;
  Layer narrower(wide);
  MatrixD dmem5(8, 5);
  CHECK_THROWS_WITH(narrower.backward_cross(cache, MatrixD::Ones(6, 8), dxq, dmem5), Contains("memory 6"));
  CHECK_NOTHROW(layer.backward_cross(cache, MatrixD::Ones(6, 8), dxq, dmem));
}
