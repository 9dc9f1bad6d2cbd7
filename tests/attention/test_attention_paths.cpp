// The layer's two training paths (attention/path.hpp): the fused path, which
// keeps no probabilities and recomputes them in backward(), against the
// materialized one on every option combination, bit for bit; its memory, by
// the heap's own count; thread-count determinism; and the rule that chooses
// between them (option, SYNATTN_ATTENTION_PATH, size).
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/build_info.hpp>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "naive_attention.hpp"
#include "support/heap_bytes.hpp"

using synattn::AttentionOptions;
using synattn::AttentionPath;
using synattn::Bucketing;
using synattn::Error;
using synattn::RandomStream;
using synattn::RowMajorMatrix;
using synattn::SyntaxBiasedAttention;
using synattn_test::BucketBlock;
using synattn_test::MatrixD;

namespace {

struct PathCase {
  std::string label;
  AttentionOptions options;
  bool cross = false;
  bool dropout = false;
  std::vector<int> lq, lkv;
  int nq = 0, nkv = 0;
  bool masked_rows = false;  // some query rows see no key at all
};

AttentionOptions base_options() {
  AttentionOptions o(8, 2);
  o.key_size = 5;  // != d_model / heads
  o.value_size = 3;
  o.bias.bucketing = Bucketing::linear(6);
  return o;
}

std::vector<PathCase> cases() {
  std::vector<PathCase> out;
  auto add = [&](std::string label, auto edit) {
    PathCase c;
    c.label = std::move(label);
    c.options = base_options();
    c.lq = {37, 0, 1, 20};
    c.nq = 37;
    edit(c);
    if (c.lkv.empty()) c.lkv = c.lq;
    if (c.nkv == 0) c.nkv = c.nq;
    out.push_back(c);
  };
  add("shared linear table, padding, empty and one-token sequences", [](PathCase&) {});
  add("per-head log table, causal", [](PathCase& c) {
    c.options.bias.per_head = true;
    c.options.bias.bucketing = Bucketing::log(6, 20, 3);
    c.options.causal = true;
  });
  add("directed buckets, dropout", [](PathCase& c) {
    c.options.bias.bucketing = Bucketing::directed(3);
    c.options.dropout = 0.25;
    c.dropout = true;
  });
  add("causal, dropout, frozen table", [](PathCase& c) {
    c.options.causal = true;
    c.options.dropout = 0.4;
    c.options.bias.table_learnable = false;
    c.dropout = true;
  });
  add("rows with no visible key", [](PathCase& c) { c.masked_rows = true; });
  add("tree fusion: 3 views, per-head weights", [](PathCase& c) {
    c.options.bias.fusion.views = 3;
    c.options.bias.fusion.per_head_weights = true;
  });
  add("no syntax bias, causal", [](PathCase& c) {
    c.options.syntax_bias = false;
    c.options.causal = true;
  });
  add("cross-attention with bias, memory width 7, dropout", [](PathCase& c) {
    c.options.memory_size = 7;
    c.options.dropout = 0.2;
    c.dropout = true;
    c.cross = true;
    c.lq = {23, 0, 5};
    c.lkv = {31, 4, 0};
    c.nq = 23;
    c.nkv = 31;
  });
  add("long sequences: several row blocks per (sequence, head), causal", [](PathCase& c) {
    c.options.causal = true;
    c.lq = {700, 517};
    c.nq = 700;
  });
  return out;
}

// One forward and backward: output, input gradients and every parameter
// gradient, as double.
struct Run {
  MatrixD out, dx, dmemory;
  std::vector<MatrixD> grads;
  bool fused = false;
};

template <class Scalar>
Run run(const PathCase& pc, AttentionPath path, std::uint32_t seed) {
  using Layer = SyntaxBiasedAttention<Scalar>;
  using Matrix = RowMajorMatrix<Scalar>;
  AttentionOptions o = pc.options;
  o.path = path;
  Layer layer(o);
  std::mt19937 rng(seed);
  synattn_test::randomise(layer, rng);
  const int B = static_cast<int>(pc.lq.size());
  const Matrix xq = synattn_test::random_matrix(B * pc.nq, o.d_model, rng).template cast<Scalar>();
  const Matrix xkv = synattn_test::random_matrix(B * pc.nkv, layer.memory_size(), rng).template cast<Scalar>();
  const int views = o.syntax_bias ? o.bias.fusion.views : 1;
  BucketBlock buckets;
  if (o.syntax_bias) {
    buckets = synattn_test::random_bucket_views(views, pc.lq, pc.lkv, pc.nq, pc.nkv, layer.num_buckets(), rng);
    if (pc.masked_rows)
      for (int v = 0; v < views; ++v)
        for (int r : {0, 3, 4, 36}) buckets.row(v * B * pc.nq + r).setConstant(-1);
  }
  const Matrix G = synattn_test::random_matrix(B * pc.nq, o.d_model, rng).template cast<Scalar>();
  const RandomStream stream(77);
  typename Layer::Cache cache;
  Matrix out(B * pc.nq, o.d_model), dx(B * pc.nq, o.d_model), dmem(B * pc.nkv, layer.memory_size());
  if (pc.cross) {
    layer.forward({xq, pc.lq, xkv, pc.lkv, buckets}, cache, out, pc.dropout ? &stream : nullptr);
    layer.backward(cache, G, {dx, dmem});
  } else {
    layer.forward({xq, pc.lq, buckets}, cache, out, pc.dropout ? &stream : nullptr);
    layer.backward(cache, G, {dx});
  }
  Run r;
  r.fused = cache.fused_path();
  r.out = out.template cast<double>();
  r.dx = dx.template cast<double>();
  if (pc.cross) r.dmemory = dmem.template cast<double>();
  for (const auto& p : layer.parameter_infos()) r.grads.push_back(layer.gradient(p.name).template cast<double>());
  if (r.fused) CHECK(cache.probabilities().size() == 0);
  return r;
}

bool same_bits(const MatrixD& a, const MatrixD& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(double) * std::size_t(a.size())) == 0);
}

void check_same(const Run& a, const Run& b) {
  CHECK(same_bits(a.out, b.out));
  CHECK(same_bits(a.dx, b.dx));
  CHECK(same_bits(a.dmemory, b.dmemory));
  REQUIRE(a.grads.size() == b.grads.size());
  for (std::size_t i = 0; i < a.grads.size(); ++i) {
    INFO("parameter gradient " << i);
    CHECK(same_bits(a.grads[i], b.grads[i]));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("the fused path gives the materialized path's output and gradients bit for bit", "[attention][path]",
                   float, double) {
  const auto all = cases();
  const int k = GENERATE(range(0, 9));
  REQUIRE(all.size() == 9);
  const PathCase& pc = all[static_cast<std::size_t>(k)];
  INFO("configuration: " << pc.label);
  const Run materialized = run<TestType>(pc, AttentionPath::materialized, 100u + std::uint32_t(k));
  const Run fused = run<TestType>(pc, AttentionPath::fused, 100u + std::uint32_t(k));
  CHECK_FALSE(materialized.fused);
  REQUIRE(fused.fused);
  check_same(materialized, fused);
  // The gradients are not trivially equal: something flows.
  CHECK(fused.dx.cwiseAbs().maxCoeff() > 0);
}

TEST_CASE("the fused path is bit-identical at any thread count", "[attention][path][threads]") {
#if defined(_OPENMP)
  const auto all = cases();
  const int k = GENERATE(2, 5, 8);  // dropout; fusion; several row blocks
  const PathCase& pc = all[static_cast<std::size_t>(k)];
  INFO("configuration: " << pc.label);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Run one = run<float>(pc, AttentionPath::fused, 7);
  omp_set_num_threads(2);
  const Run two = run<float>(pc, AttentionPath::fused, 7);
  omp_set_num_threads(3);
  const Run three = run<float>(pc, AttentionPath::fused, 7);
  omp_set_num_threads(saved);
  check_same(one, two);
  check_same(one, three);
#else
  SUCCEED("built without OpenMP: one thread only");
#endif
}

namespace {

struct Kept {
  long long forward = 0;   // what the cache holds after forward()
  long long backward = 0;  // and after backward(), with its workspace
};

// Heap bytes a training pass of one float sequence of n tokens keeps
// (d_model 64, 8 heads, the syntax bias), on `path`.
Kept kept_bytes(AttentionPath path, int n) {
  using Layer = SyntaxBiasedAttention<float>;
  AttentionOptions o(64, 8);
  o.path = path;
  o.bias.bucketing = Bucketing::linear(6);
  Layer layer(o);
  std::mt19937 rng(3);
  synattn_test::randomise(layer, rng);
  const std::vector<int> lengths = {n};
  const RowMajorMatrix<float> x = synattn_test::random_matrix(n, 64, rng).cast<float>();
  const BucketBlock buckets = synattn_test::random_buckets(lengths, lengths, n, n, layer.num_buckets(), rng);
  RowMajorMatrix<float> out(n, 64), dx(n, 64);
  const RowMajorMatrix<float> G = synattn_test::random_matrix(n, 64, rng).cast<float>();
  Kept k;
  const long long before = synattn_test::heap_bytes();
  {
    Layer::Cache cache;
    layer.forward({x, lengths, buckets}, cache, out);
    k.forward = synattn_test::heap_bytes() - before;
    layer.backward(cache, G, {dx});
    k.backward = synattn_test::heap_bytes() - before;
    CHECK(cache.fused_path() == (path == AttentionPath::fused));
  }
  return k;
}

}  // namespace

TEST_CASE("the fused path's memory grows linearly in n; the materialized path keeps n^2 per head",
          "[attention][path][memory]") {
  if (!synattn_test::heap_bytes_available()) {
    WARN("no heap byte count in this build (neither glibc nor AddressSanitizer): skipped");
    return;
  }
  const double mb = 1024.0 * 1024.0;
  for (int n : {512, 1024}) {
    const double probs = 8.0 * n * n * sizeof(float), buckets = double(n) * n;
    const Kept fused = kept_bytes(AttentionPath::fused, n);
    const Kept materialized = kept_bytes(AttentionPath::materialized, n);
    INFO("n = " << n << ": fused keeps " << fused.forward / mb << " MB after forward, " << fused.backward / mb
                << " MB after backward; materialized " << materialized.forward / mb << " / "
                << materialized.backward / mb << " MB; P is " << probs / mb << " MB");
    CHECK(double(materialized.forward - fused.forward) >= 0.95 * probs);
    // What the fused cache keeps past the caller's bucket block (copied, n^2
    // int8 by its nature) is under a sixth of P once P outgrows the
    // per-thread row blocks (512 KB each).
    if (n == 1024) {
      CHECK(double(fused.forward) - buckets < probs / 6);
      CHECK(double(fused.backward) - buckets < probs / 6);
    }
  }
  // Linear: doubling n at most doubles what the fused path keeps besides the buckets (plus slack).
  const Kept small = kept_bytes(AttentionPath::fused, 512), large = kept_bytes(AttentionPath::fused, 1024);
  INFO("fused, past the buckets: " << (small.backward - 512.0 * 512) / mb << " MB at n = 512, "
                                   << (large.backward - 1024.0 * 1024) / mb << " MB at n = 1024");
  CHECK(double(large.backward) - 1024.0 * 1024 <= 2.2 * (double(small.backward) - 512.0 * 512));
}

TEST_CASE("choosing the path: the option, SYNATTN_ATTENTION_PATH, then the size rule", "[attention][path]") {
  using synattn::detail::kFusedPathBytes;
  using synattn::detail::path_from_environment;
  using synattn::detail::takes_fused_path;
  const char* saved = std::getenv("SYNATTN_ATTENTION_PATH");
  const std::string saved_value = saved ? saved : "";
  SECTION("the environment variable's values") {
    setenv("SYNATTN_ATTENTION_PATH", "fused", 1);
    CHECK(path_from_environment() == AttentionPath::fused);
    setenv("SYNATTN_ATTENTION_PATH", "materialized", 1);
    CHECK(path_from_environment() == AttentionPath::materialized);
    setenv("SYNATTN_ATTENTION_PATH", "auto", 1);
    CHECK(path_from_environment() == AttentionPath::automatic);
    setenv("SYNATTN_ATTENTION_PATH", "", 1);
    CHECK(path_from_environment() == AttentionPath::automatic);
    setenv("SYNATTN_ATTENTION_PATH", "flash", 1);
    CHECK_THROWS_WITH(path_from_environment(), Catch::Contains("SYNATTN_ATTENTION_PATH is 'flash'") &&
                                                   Catch::Contains("fused, materialized or auto"));
    unsetenv("SYNATTN_ATTENTION_PATH");
    CHECK(path_from_environment() == AttentionPath::automatic);
  }
  if (saved) setenv("SYNATTN_ATTENTION_PATH", saved_value.c_str(), 1);
  SECTION("an explicit option wins; talking heads are always materialized") {
    CHECK(takes_fused_path(AttentionPath::fused, false, 1.0));
    CHECK_FALSE(takes_fused_path(AttentionPath::materialized, false, 1e12));
    CHECK_FALSE(takes_fused_path(AttentionPath::fused, true, 1e12));
    CHECK_FALSE(takes_fused_path(AttentionPath::automatic, true, 1e12));
  }
  SECTION("the size rule, when nothing forces a path") {
    if (!saved_value.empty() && saved_value != "auto") {
      SUCCEED("SYNATTN_ATTENTION_PATH is set for this run: the rule is not consulted");
    } else {
      CHECK_FALSE(takes_fused_path(AttentionPath::automatic, false, kFusedPathBytes));
      CHECK(takes_fused_path(AttentionPath::automatic, false, kFusedPathBytes + 1));
      // A small training pass keeps its probabilities.
      SyntaxBiasedAttention<float> layer(AttentionOptions(8, 2));
      const std::vector<int> lengths = {5};
      const RowMajorMatrix<float> x = RowMajorMatrix<float>::Ones(5, 8);
      const BucketBlock buckets = BucketBlock::Zero(5, 5);
      SyntaxBiasedAttention<float>::Cache cache;
      RowMajorMatrix<float> out(5, 8);
      layer.forward({x, lengths, buckets}, cache, out);
      CHECK_FALSE(cache.fused_path());
      CHECK(cache.probabilities().rows() == 2 * 5);
    }
  }
  SECTION("build_info names the rule") {
    CHECK_THAT(synattn::build_info(), Catch::Contains("attention path: "));
    CHECK_THAT(synattn::path_rule_text(),
               Catch::Contains("talking heads") || Catch::Contains("SYNATTN_ATTENTION_PATH"));
  }
}

TEST_CASE("the options refuse the fused path with talking heads, and a path that is no AttentionPath",
          "[attention][path]") {
  AttentionOptions o(8, 2);
  o.path = AttentionPath::fused;
  o.talking_heads_pre = true;
  CHECK_THROWS_WITH(SyntaxBiasedAttention<float>(o), Catch::Contains("path fused cannot run talking heads"));
  o.talking_heads_pre = false;
  o.talking_heads_post = true;
  CHECK_THROWS_AS(SyntaxBiasedAttention<float>(o), Error);
  o.talking_heads_post = false;
  CHECK_NOTHROW(SyntaxBiasedAttention<float>(o));
  o.path = static_cast<AttentionPath>(7);
  CHECK_THROWS_WITH(SyntaxBiasedAttention<float>(o), Catch::Contains("path is not an AttentionPath value (7)"));
  // Automatic with talking heads is fine: it takes the materialized path.
  o.path = AttentionPath::automatic;
  o.talking_heads_pre = true;
  CHECK_NOTHROW(SyntaxBiasedAttention<float>(o));
}
