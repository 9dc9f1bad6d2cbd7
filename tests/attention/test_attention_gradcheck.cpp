// Finite-difference gradient checks of SyntaxBiasedAttention<double> for every
// parameter and every input, over the option grid: shared / per-head tables;
// linear, log, directed (and special-bucket) bucketing; causal; padding with a
// length-0 and a length-1 sequence; key size != d_model / heads; talking heads
// pre / post; frozen scale; frozen table; no bias; cross-attention; each on
// the materialized and (without talking heads) the fused training path.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>

#include <random>
#include <string>
#include <vector>

#include "naive_attention.hpp"
#include "support/attention_calls.hpp"
#include "support/gradcheck.hpp"

using synattn::AttentionOptions;
using synattn::AttentionPath;
using synattn::Bucketing;
using synattn::SyntaxBiasedAttention;
using synattn::TableInit;
using synattn_test::BucketBlock;
using synattn_test::MatrixD;

namespace {

struct GridCase {
  std::string label;
  AttentionOptions options;
  bool cross = false;
};

AttentionOptions base_options() {
  AttentionOptions o(6, 2);
  o.key_size = 4;  // != d_model / heads = 3
  o.value_size = 3;
  o.bias.bucketing = Bucketing::linear(4);
  return o;
}

std::vector<GridCase> grid() {
  std::vector<GridCase> cases;
  auto add = [&](std::string label, auto edit, bool cross = false) {
    GridCase c;
    c.label = std::move(label);
    c.options = base_options();
    edit(c.options);
    c.cross = cross;
    cases.push_back(c);
  };
  add("shared linear table", [](AttentionOptions&) {});
  add("per-head log table", [](AttentionOptions& o) {
    o.bias.per_head = true;
    o.bias.bucketing = Bucketing::log(6, 20, 3);
  });
  add("directed buckets, frozen scale", [](AttentionOptions& o) {
    o.bias.bucketing = Bucketing::directed(2);
    o.bias.scale_learnable = false;
  });
  add("special bucket, key size = head size", [](AttentionOptions& o) {
    o.key_size = 0;
    o.value_size = 0;
    o.bias.bucketing = Bucketing::linear(3, true);
  });
  add("causal, per-head table", [](AttentionOptions& o) {
    o.causal = true;
    o.bias.per_head = true;
  });
  add("frozen linear-decay table, learnable scale", [](AttentionOptions& o) {
    o.bias.init = TableInit::LinearDecay;
    o.bias.table_learnable = false;
  });
  add("frozen table and frozen scale", [](AttentionOptions& o) {
    o.bias.table_learnable = false;
    o.bias.scale_learnable = false;
  });
  add("talking heads pre", [](AttentionOptions& o) { o.talking_heads_pre = true; });
  add("talking heads post", [](AttentionOptions& o) { o.talking_heads_post = true; });
  add("talking heads pre and post, causal, per-head, three heads", [](AttentionOptions& o) {
    o.heads = 3;
    o.talking_heads_pre = o.talking_heads_post = true;
    o.causal = true;
    o.bias.per_head = true;
  });
  add("tree fusion: 3 views, a table each, per-layer weights", [](AttentionOptions& o) { o.bias.fusion.views = 3; });
  add("tree fusion: 2 views, one per-head table, per-head weights, causal", [](AttentionOptions& o) {
    o.bias.fusion.views = 2;
    o.bias.fusion.shared_table = true;
    o.bias.fusion.per_head_weights = true;
    o.bias.per_head = true;
    o.causal = true;
  });
  add("tree fusion: 2 directed views, frozen table, talking heads pre and post", [](AttentionOptions& o) {
    o.bias.fusion.views = 2;
    o.bias.bucketing = Bucketing::directed(2);
    o.bias.table_learnable = false;
    o.talking_heads_pre = o.talking_heads_post = true;
  });
  add(
      "tree fusion: cross-attention, 4 views, per-head tables and weights",
      [](AttentionOptions& o) {
        o.bias.fusion.views = 4;
        o.bias.fusion.per_head_weights = true;
        o.bias.per_head = true;
      },
      true);
  add("no syntax bias", [](AttentionOptions& o) { o.syntax_bias = false; });
  add(
      "cross-attention with bias, memory width 5", [](AttentionOptions& o) { o.memory_size = 5; }, true);
  add(
      "cross-attention without bias, talking heads",
      [](AttentionOptions& o) {
        o.syntax_bias = false;
        o.talking_heads_pre = o.talking_heads_post = true;
      },
      true);
  return cases;
}

constexpr double kRelTol = 1e-6;  // central differences in double reach ~1e-9
constexpr double kAbsTol = 1e-8;  // for gradients that are zero in exact arithmetic (dbk)

}  // namespace

TEST_CASE("every gradient matches central differences across the option grid", "[attention][gradcheck]") {
  const auto cases = grid();
  const int k = GENERATE(range(0, 17));
  REQUIRE(cases.size() == 17);
  // Each configuration on both training paths (attention/path.hpp); talking
  // heads have only the materialized one.
  const AttentionPath path = GENERATE(AttentionPath::materialized, AttentionPath::fused);
  GridCase gc = cases[static_cast<std::size_t>(k)];
  if (path == AttentionPath::fused && (gc.options.talking_heads_pre || gc.options.talking_heads_post)) {
    SUCCEED("talking heads: materialized path only");
    return;
  }
  gc.options.path = path;
  INFO("configuration: " << gc.label << ", " << synattn::to_string(path) << " path");

  std::mt19937 rng(1234 + k);
  SyntaxBiasedAttention<double> layer(gc.options);
  synattn_test::randomise(layer, rng);
  const int d = gc.options.d_model;

  // Self: n = 4 with lengths (4, 0, 1, 3). Cross: n_q = 3, n_kv = 5, and a
  // sequence whose queries have no key at all.
  const std::vector<int> lq = gc.cross ? std::vector<int>{3, 0, 2, 3} : std::vector<int>{4, 0, 1, 3};
  const std::vector<int> lkv = gc.cross ? std::vector<int>{5, 2, 0, 4} : lq;
  const int nq = gc.cross ? 3 : 4, nkv = gc.cross ? 5 : 4;
  const int B = static_cast<int>(lq.size());
  MatrixD xq = synattn_test::random_matrix(B * nq, d, rng);
  MatrixD xkv = synattn_test::random_matrix(B * nkv, layer.memory_size(), rng);
  const int views = gc.options.syntax_bias ? gc.options.bias.fusion.views : 1;
  BucketBlock buckets = views > 1
                            ? synattn_test::random_bucket_views(views, lq, lkv, nq, nkv, layer.num_buckets(), rng)
                            : synattn_test::random_buckets(lq, lkv, nq, nkv, std::max(layer.num_buckets(), 1), rng);
  if (!gc.cross)  // query 2 of sequence 0 sees no key at all (in every view)
    for (int v = 0; v < views; ++v) buckets.row(v * B * nq + 2).setConstant(-1);
  // Upstream gradient everywhere, padding rows included: out = bo there, so
  // only dbo may see them.
  const MatrixD G = synattn_test::random_matrix(B * nq, d, rng);

  SyntaxBiasedAttention<double>::Cache cache;
  auto loss = [&]() {
    SyntaxBiasedAttention<double>::Cache c;
    const MatrixD out = gc.cross ? synattn_test::forward_value(layer, {xq, lq, xkv, lkv, buckets}, c)
                                 : synattn_test::forward_value(layer, {xq, lq, buckets}, c);
    return (out.array() * G.array()).sum();
  };

  MatrixD dxq(B * nq, d), dxkv(B * nkv, layer.memory_size());
  layer.zero_grad();
  if (gc.cross) {
    synattn_test::forward_value(layer, {xq, lq, xkv, lkv, buckets}, cache);
    layer.backward(cache, G, {dxq, dxkv});
  } else {
    synattn_test::forward_value(layer, {xq, lq, buckets}, cache);
    layer.backward(cache, G, {dxq});
  }
  std::vector<std::pair<std::string, MatrixD>> analytic;
  for (const auto& p : layer.parameter_infos()) analytic.emplace_back(p.name, layer.gradient(p.name));

  for (const auto& p : layer.parameter_infos()) {
    const MatrixD& g = analytic[static_cast<std::size_t>(&p - &layer.parameter_infos()[0])].second;
    if (!p.trainable) {
      INFO("frozen parameter " << p.name << " must keep a zero gradient");
      CHECK(g.isZero(0));
      continue;
    }
    const auto r = synattn_test::check_gradient(p.name, layer.parameter(p.name), g, loss);
    INFO(r.describe());
    CHECK(r.passes(kRelTol, kAbsTol));
  }
  {
    const auto r = synattn_test::check_gradient(gc.cross ? "dx_q" : "dx", xq, dxq, loss);
    INFO(r.describe());
    CHECK(r.passes(kRelTol, kAbsTol));
  }
  if (gc.cross) {
    const auto r = synattn_test::check_gradient("dmemory", xkv, dxkv, loss);
    INFO(r.describe());
    CHECK(r.passes(kRelTol, kAbsTol));
  }
  // Padding query rows take no gradient (exactly).
  for (int b = 0; b < B; ++b)
    for (int i = lq[static_cast<std::size_t>(b)]; i < nq; ++i) {
      INFO("padding query row " << i << " of sequence " << b);
      CHECK(dxq.row(b * nq + i).isZero(0));
    }
}
