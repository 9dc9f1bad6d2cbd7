// Packed documents (bias/packed_buckets.hpp, attention/key_windows.hpp):
// the per-sentence bucket layout and its window rule against a dense
// expansion and the packed forest's own buckets; the row blocks' key ranges
// against every visible pair; and the layer on a packed input against the
// same layer on the dense masked input, the naive reference, a finite-
// difference check, several thread counts, its refusals and its memory.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/bias/packed_buckets.hpp>
#include <synattn/tree/distance.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "naive_attention.hpp"
#include "support/gradcheck.hpp"
#include "support/heap_bytes.hpp"
#include "support/random_trees.hpp"

using synattn::AttentionOptions;
using synattn::AttentionPath;
using synattn::Bucketing;
using synattn::DependencyTree;
using synattn::Error;
using synattn::Index;
using synattn::PackedBuckets;
using synattn::RandomStream;
using synattn::RootLinks;
using synattn::RowMajorMatrix;
using synattn::SyntaxBiasedAttention;
using synattn_test::BucketBlock;
using synattn_test::MatrixD;

namespace {

// Documents of random trees: `sizes` sentences each, lengths drawn from
// [1, max_len], some documents with one sentence longer than a row block.
std::vector<std::vector<DependencyTree>> random_documents(const std::vector<int>& sizes, int max_len, bool long_one,
                                                          std::mt19937& rng) {
  std::vector<std::vector<DependencyTree>> docs;
  std::uniform_int_distribution<int> len(1, max_len);
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    std::vector<DependencyTree> doc;
    for (int s = 0; s < sizes[d]; ++s) {
      const int n = long_one && d == 0 && s == 1 ? 150 : len(rng);
      doc.emplace_back(synattn_test::random_recursive_heads(n, rng));
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

synattn::PackingOptions packing(int window, int cutoff = -1, RootLinks links = RootLinks::none) {
  synattn::PackingOptions o;
  o.window = window;
  o.max_tree_distance = cutoff;
  o.root_links = links;
  return o;
}

int longest(const PackedBuckets& p) {
  int n = 0;
  for (int l : p.lengths()) n = std::max(n, l);
  return n;
}

}  // namespace

TEST_CASE("PackedBuckets keeps each sentence's block and gives cross-sentence pairs by the window",
          "[attention][packed]") {
  PackedBuckets p(1, 4);
  p.begin_sequence();
  BucketBlock a(2, 2), b(3, 3), c(1, 1);
  a << 0, 1, 1, 0;
  b << 0, 1, 2, 1, 0, -1, 2, 1, 0;
  c << 0;
  p.add_sentence(a);
  p.add_sentence(b);
  p.add_sentence(c);
  p.begin_sequence();  // an empty sequence
  CHECK(p.sequences() == 2);
  CHECK(p.lengths() == std::vector<int>{6, 0});
  CHECK(p.sentences(0) == 3);
  CHECK(p.sentences(1) == 0);
  CHECK(p.sentence_start(0, 2) == 5);
  CHECK(p.block_bytes() == 4 + 9 + 1);
  CHECK(p.max_bucket() == 4);
  CHECK(p.sentence_of(0, 4) == 1);
  CHECK(p.bucket(0, 0, 1) == 1);   // within sentence 0
  CHECK(p.bucket(0, 3, 4) == -1);  // masked within sentence 1
  CHECK(p.bucket(0, 0, 3) == 4);   // neighbours: the cross bucket
  CHECK(p.bucket(0, 0, 5) == -1);  // two sentences apart: masked
  CHECK(p.bucket(0, 5, 2) == 4);
  CHECK(p.bucket(0, 6, 0) == -1);  // past the words
  const BucketBlock dense = p.dense(7);
  REQUIRE(dense.rows() == 14);
  for (Index i = 0; i < 7; ++i)
    for (Index j = 0; j < 7; ++j) {
      CHECK(dense(i, j) == p.bucket(0, i, j));
      CHECK(dense(7 + i, j) == -1);
    }

  CHECK_THROWS_WITH(PackedBuckets(-1, 0), Catch::Contains("window must be >= 0"));
  CHECK_THROWS_WITH(PackedBuckets(0, 128), Catch::Contains("cross_bucket must be in [-1, 127]"));
  CHECK_THROWS_WITH(PackedBuckets(0, -2), Catch::Contains("cross_bucket must be in [-1, 127]"));
  PackedBuckets q(0, -1);
  CHECK_THROWS_WITH(q.add_sentence(a), Catch::Contains("begin_sequence() before the first sentence"));
  q.begin_sequence();
  CHECK_THROWS_WITH(q.add_sentence(BucketBlock(2, 3)), Catch::Contains("sentence 0's block is 2 x 3"));
  CHECK_THROWS_WITH(q.add_sentence(BucketBlock(0, 0)), Catch::Contains("sentence 0 has no words"));
  BucketBlock bad = a;
  bad(1, 0) = -2;
  CHECK_THROWS_WITH(q.add_sentence(bad),
                    Catch::Contains("sentence 0 has bucket -2 at (1, 0); expected -1 (masked) or a bucket >= 0"));
  CHECK(q.sequences() == 1);
  CHECK(q.lengths() == std::vector<int>{0});  // a refused sentence adds nothing
  CHECK_THROWS_WITH(p.dense(5), Catch::Contains("sequence 0 has 6 words, more than n = 5"));
  CHECK_THROWS_WITH(p.sentence_start(0, 3), Catch::Contains("sentence 3 of sequence 0 out of range"));
}

TEST_CASE("make_packed_buckets: a window over the whole document gives the packed forest's buckets; the cutoff "
          "masks by tree distance",
          "[attention][packed]") {
  std::mt19937 rng(5);
  for (const Bucketing& bucketing : {Bucketing::linear(6), Bucketing::log(8, 40, 4), Bucketing::directed(3)}) {
    INFO(bucketing.describe());
    const auto docs = random_documents({7, 1, 4}, 30, false, rng);
    const PackedBuckets packed = synattn::make_packed_buckets(docs, bucketing, packing(1000));
    const int n = longest(packed);
    const BucketBlock dense = packed.dense(n);
    for (std::size_t d = 0; d < docs.size(); ++d) {
      const DependencyTree forest = DependencyTree::pack(docs[d]);
      const synattn::BucketBatch reference = synattn::make_bucket_batch({forest}, bucketing, n);
      CHECK(dense.middleRows(Index(d) * n, n) == reference.buckets);
    }
    // The cutoff: pairs further apart than k in their tree are masked, the rest kept.
    const int k = 3;
    const PackedBuckets cut = synattn::make_packed_buckets(docs, bucketing, packing(1, k));
    const PackedBuckets full = synattn::make_packed_buckets(docs, bucketing, packing(1));
    for (std::size_t d = 0; d < docs.size(); ++d)
      for (Index s = 0; s < cut.sentences(Index(d)); ++s) {
        const auto dist = synattn::pairwise_distances<std::int16_t>(docs[d][std::size_t(s)]);
        for (Index i = 0; i < dist.rows(); ++i)
          for (Index j = 0; j < dist.cols(); ++j)
            CHECK(cut.sentence_row(Index(d), s, i)[j] ==
                  (dist(i, j) > k ? -1 : full.sentence_row(Index(d), s, i)[j]));
      }
  }
}

TEST_CASE("key windows: the row blocks cover every row once, their ranges every visible pair, and their tiles are "
          "the dense buckets",
          "[attention][packed]") {
  std::mt19937 rng(11);
  for (int window : {0, 1, 2, 50})
    for (bool causal : {false, true})
      for (RootLinks links : {RootLinks::none, RootLinks::all_roots}) {
        INFO("window " << window << (causal ? ", causal" : "")
                       << (links == RootLinks::all_roots ? ", root links" : ""));
        const auto docs = random_documents({12, 1, 30}, 40, true, rng);
        const PackedBuckets packed =
            synattn::make_packed_buckets(docs, Bucketing::linear(5), packing(window, 4, links));
        const int n = longest(packed) + 70;  // padding rows too
        const BucketBlock dense = packed.dense(n);
        const auto w = synattn::detail::key_windows(packed, n, causal);
        REQUIRE(w.first.size() == docs.size() + 1);
        std::vector<std::int8_t> tile;
        Index live = 0, outside = 0, wrong = 0;  // visible pairs outside a range; tile entries that differ
        for (std::size_t b = 0; b < docs.size(); ++b) {
          Index next_row = 0;
          for (Index k = w.first[b]; k < w.first[b + 1]; ++k) {
            const auto& blk = w.blocks[std::size_t(k)];
            REQUIRE(blk.b == Index(b));
            REQUIRE(blk.r0 == next_row);
            REQUIRE(blk.m <= w.rows);
            REQUIRE(blk.m * blk.span <= w.max_tile);
            next_row += blk.m;
            live += blk.m * blk.span;
            tile.assign(std::size_t(blk.m * blk.span), 0);
            synattn::detail::fill_bucket_tile(tile.data(), packed, blk);
            for (Index i = 0; i < blk.m; ++i) {
              const Index row = Index(b) * n + blk.r0 + i;
              for (Index j = 0; j < n; ++j) {
                const bool visible = dense(row, j) >= 0 && (!causal || j <= blk.r0 + i);
                const bool inside = j >= blk.key0 && j < blk.key0 + blk.span;
                outside += visible && !inside;
                wrong += inside && (!causal || j <= blk.r0 + i) &&
                         tile[std::size_t(i * blk.span + j - blk.key0)] != dense(row, j);
              }
            }
          }
          CHECK(next_row == n);
        }
        CHECK(outside == 0);
        CHECK(wrong == 0);
        // Skipping pays: with a narrow window most of the n^2 pairs are never computed.
        if (window <= 1) CHECK(double(live) < 0.5 * double(docs.size()) * n * n);
      }
}

namespace {

struct PackedCase {
  std::string label;
  AttentionOptions options;
  int window = 1;
  int cutoff = -1;
  RootLinks links = RootLinks::none;
  bool dropout = false;
  std::vector<int> sizes = {9, 0, 1, 5};  // sentences per document
  bool long_one = true;
  int padding = 7;
};

std::vector<PackedCase> packed_cases() {
  std::vector<PackedCase> out;
  auto add = [&](std::string label, auto edit) {
    PackedCase c;
    c.label = std::move(label);
    c.options = AttentionOptions(8, 2);
    c.options.key_size = 5;
    c.options.value_size = 3;
    c.options.bias.bucketing = Bucketing::linear(6);
    edit(c);
    out.push_back(c);
  };
  add("window 1, a long sentence, an empty document, padding", [](PackedCase&) {});
  add("window 0, per-head log table, causal", [](PackedCase& c) {
    c.window = 0;
    c.options.bias.per_head = true;
    c.options.bias.bucketing = Bucketing::log(6, 20, 3);
    c.options.causal = true;
  });
  add("window 2, directed buckets, dropout", [](PackedCase& c) {
    c.window = 2;
    c.options.bias.bucketing = Bucketing::directed(3);
    c.options.dropout = 0.25;
    c.dropout = true;
  });
  add("window 1, tree-distance cutoff 2, causal, dropout, frozen table", [](PackedCase& c) {
    c.cutoff = 2;
    c.options.causal = true;
    c.options.dropout = 0.3;
    c.options.bias.table_learnable = false;
    c.dropout = true;
  });
  add("window 0, root links, causal, per-head table", [](PackedCase& c) {
    c.window = 0;
    c.links = RootLinks::all_roots;
    c.options.causal = true;
    c.options.bias.per_head = true;
  });
  add("window 40 (the whole document), no padding", [](PackedCase& c) {
    c.window = 40;
    c.padding = 0;
    c.long_one = false;
  });
  return out;
}

struct Run {
  MatrixD out, dx;
  std::vector<MatrixD> grads;
};

struct Problem {
  PackedBuckets packed;
  int n = 0;
};

Problem make_problem(const PackedCase& pc, std::mt19937& rng) {
  const auto docs = random_documents(pc.sizes, 25, pc.long_one, rng);
  Problem p;
  p.packed = synattn::make_packed_buckets(docs, pc.options.bias.bucketing, packing(pc.window, pc.cutoff, pc.links));
  p.n = longest(p.packed) + pc.padding;
  return p;
}

// forward + backward of `layer` on the packed input (packed) or on its dense
// expansion, loss <out, G>.
template <class Scalar>
Run run(SyntaxBiasedAttention<Scalar>& layer, const Problem& p, const RowMajorMatrix<Scalar>& x,
        const RowMajorMatrix<Scalar>& G, bool packed, bool dropout) {
  using Matrix = RowMajorMatrix<Scalar>;
  const Index rows = p.packed.sequences() * p.n;
  const RandomStream stream(91);
  typename SyntaxBiasedAttention<Scalar>::Cache cache;
  Matrix out(rows, layer.d_model()), dx(rows, layer.d_model());
  layer.zero_grad();
  if (packed) {
    layer.forward({x, p.packed}, cache, out, dropout ? &stream : nullptr);
    CHECK(cache.packed_input());
    CHECK(cache.fused_path());
  } else {
    const BucketBlock dense = p.packed.dense(p.n);
    layer.forward({x, p.packed.lengths(), dense}, cache, out, dropout ? &stream : nullptr);
  }
  layer.backward(cache, G, {dx});
  Run r;
  r.out = out.template cast<double>();
  r.dx = dx.template cast<double>();
  for (const auto& info : layer.parameter_infos())
    r.grads.push_back(layer.gradient(info.name).template cast<double>());
  return r;
}

void check_close(const MatrixD& a, const MatrixD& b, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(a.rows() == b.rows());
  REQUIRE(a.cols() == b.cols());
  const double scale = std::max(1.0, b.cwiseAbs().maxCoeff());
  CHECK((a - b).cwiseAbs().maxCoeff() <= tol * scale);
}

bool same_bits(const MatrixD& a, const MatrixD& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(double) * std::size_t(a.size())) == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("a packed input gives the dense masked input's output and gradients", "[attention][packed]", float,
                   double) {
  using Matrix = RowMajorMatrix<TestType>;
  const auto all = packed_cases();
  const int k = GENERATE(range(0, 6));
  REQUIRE(all.size() == 6);
  const PackedCase& pc = all[std::size_t(k)];
  INFO("configuration: " << pc.label);
  std::mt19937 rng(200 + k);
  const Problem p = make_problem(pc, rng);
  SyntaxBiasedAttention<TestType> layer(pc.options);
  synattn_test::randomise(layer, rng);
  const Index rows = p.packed.sequences() * p.n;
  const Matrix x = synattn_test::random_matrix(rows, 8, rng).template cast<TestType>();
  const Matrix G = synattn_test::random_matrix(rows, 8, rng).template cast<TestType>();
  const Run packed = run<TestType>(layer, p, x, G, true, pc.dropout);
  const Run dense = run<TestType>(layer, p, x, G, false, pc.dropout);
  // Only the order of sums over keys differs (the masked keys add exact zeros).
  const double tol = std::is_same<TestType, float>::value ? 2e-5 : 1e-12;
  check_close(packed.out, dense.out, tol, "out");
  check_close(packed.dx, dense.dx, tol, "dx");
  REQUIRE(packed.grads.size() == dense.grads.size());
  for (std::size_t i = 0; i < packed.grads.size(); ++i)
    check_close(packed.grads[i], dense.grads[i], tol, "gradient of parameter " + layer.parameter_infos()[i].name);
  CHECK(packed.dx.cwiseAbs().maxCoeff() > 0);
  // And the naive reference (plain loops over the dense block), without dropout.
  if (!pc.dropout) {
    const BucketBlock dense_buckets = p.packed.dense(p.n);
    const MatrixD xd = x.template cast<double>();
    const auto naive =
        synattn_test::naive_attention(layer, xd, p.packed.lengths(), xd, p.packed.lengths(), dense_buckets);
    check_close(packed.out, naive.out, std::is_same<TestType, float>::value ? 1e-4 : 1e-11, "out vs naive");
  }
  // infer() on the packed input: the forward's output.
  Matrix out(rows, 8);
  typename SyntaxBiasedAttention<TestType>::Cache workspace;
  layer.infer({x, p.packed}, workspace, out);
  if (!pc.dropout) CHECK(same_bits(out.template cast<double>(), packed.out));
}

TEST_CASE("the packed path's gradients pass a finite-difference check in double", "[attention][packed][gradcheck]") {
  const auto all = packed_cases();
  const int k = GENERATE(0, 1, 3, 4);
  PackedCase pc = all[std::size_t(k)];
  pc.dropout = false;
  pc.options.dropout = 0;
  pc.sizes = {4, 2};
  pc.long_one = false;
  INFO("configuration: " << pc.label);
  std::mt19937 rng(300 + k);
  const Problem p = make_problem(pc, rng);
  SyntaxBiasedAttention<double> layer(pc.options);
  synattn_test::randomise(layer, rng);
  const Index rows = p.packed.sequences() * p.n;
  MatrixD x = synattn_test::random_matrix(rows, 8, rng);
  const MatrixD G = synattn_test::random_matrix(rows, 8, rng);
  const Run analytic = run<double>(layer, p, x, G, true, false);
  auto loss = [&] {
    SyntaxBiasedAttention<double>::Cache workspace;
    MatrixD out(rows, 8);
    layer.infer({x, p.packed}, workspace, out);
    return (out.array() * G.array()).sum();
  };
  const auto dx = synattn_test::check_gradient("dx", x, analytic.dx, loss);
  CHECK(dx.passes(1e-6, 1e-8));
  INFO(dx.describe());
  const auto infos = layer.parameter_infos();
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (!infos[i].trainable) continue;
    auto param = layer.parameter(infos[i].name);
    const auto r = synattn_test::check_gradient(infos[i].name, param, analytic.grads[i], loss);
    INFO(r.describe());
    CHECK(r.passes(1e-6, 1e-8));  // 1e-8: dbk is zero in exact arithmetic
  }
}

TEST_CASE("the packed path is bit-identical at any thread count", "[attention][packed][threads]") {
#if defined(_OPENMP)
  const auto all = packed_cases();
  const PackedCase& pc = all[2];  // dropout
  std::mt19937 rng(17);
  const Problem p = make_problem(pc, rng);
  SyntaxBiasedAttention<float> layer(pc.options);
  synattn_test::randomise(layer, rng);
  const Index rows = p.packed.sequences() * p.n;
  const RowMajorMatrix<float> x = synattn_test::random_matrix(rows, 8, rng).cast<float>();
  const RowMajorMatrix<float> G = synattn_test::random_matrix(rows, 8, rng).cast<float>();
  const int saved = omp_get_max_threads();
  std::vector<Run> runs;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    runs.push_back(run<float>(layer, p, x, G, true, true));
  }
  omp_set_num_threads(saved);
  for (std::size_t t = 1; t < runs.size(); ++t) {
    CHECK(same_bits(runs[0].out, runs[t].out));
    CHECK(same_bits(runs[0].dx, runs[t].dx));
    for (std::size_t i = 0; i < runs[0].grads.size(); ++i) CHECK(same_bits(runs[0].grads[i], runs[t].grads[i]));
  }
#else
  SUCCEED("built without OpenMP: one thread only");
#endif
}

TEST_CASE("a packed input is refused where it cannot run, naming why", "[attention][packed][validation]") {
  std::mt19937 rng(23);
  PackedBuckets packed =
      synattn::make_packed_buckets(random_documents({3}, 6, false, rng), Bucketing::linear(6), packing(1));
  const int n = longest(packed);
  RowMajorMatrix<float> x = synattn_test::random_matrix(n, 8, rng).cast<float>(), out(n, 8);
  SyntaxBiasedAttention<float>::Cache cache;
  auto refuses = [&](AttentionOptions o, const std::string& message) {
    SyntaxBiasedAttention<float> layer(o);
    CHECK_THROWS_WITH(layer.forward({x, packed}, cache, out), Catch::Contains(message));
    CHECK_THROWS_WITH(layer.infer({x, packed}, cache, out), Catch::Contains(message));
  };
  AttentionOptions o(8, 2);
  o.bias.bucketing = Bucketing::linear(6);
  AttentionOptions no_bias = o;
  no_bias.syntax_bias = false;
  refuses(no_bias, "packed documents need a layer with a syntax bias");
  AttentionOptions views = o;
  views.bias.fusion.views = 2;
  refuses(views, "packed documents take one tree view (bias.fusion.views is 2)");
  AttentionOptions mixing = o;
  mixing.talking_heads_post = true;
  refuses(mixing, "packed documents cannot run talking heads");
  AttentionOptions materialized = o;
  materialized.path = AttentionPath::materialized;
  refuses(materialized, "options.path is materialized");
  AttentionOptions small = o;
  small.bias.bucketing = Bucketing::linear(3);  // 4 buckets; the packing uses 0..6
  refuses(small, "the layer's table has 4 buckets");
  SyntaxBiasedAttention<float> layer(o);
  RowMajorMatrix<float> short_x(n - 1, 8), short_out(n - 1, 8);
  CHECK_THROWS_WITH(layer.forward({short_x, packed}, cache, short_out), Catch::Contains("the packing's lengths[0] = "));
  // The dense path's cache after a packed pass, and back: each pass is its own.
  layer.forward({x, packed}, cache, out);
  CHECK(cache.packed_input());
  const BucketBlock dense = packed.dense(n);
  layer.forward({x, packed.lengths(), dense}, cache, out);
  CHECK_FALSE(cache.packed_input());
}

TEST_CASE("a packed training pass keeps memory linear in n, far below the dense path's",
          "[attention][packed][memory]") {
  if (!synattn_test::heap_bytes_available()) {
    WARN("no heap byte count in this build (neither glibc nor AddressSanitizer): skipped");
    return;
  }
  using Layer = SyntaxBiasedAttention<float>;
  AttentionOptions o(64, 8);
  o.bias.bucketing = Bucketing::linear(6);
  Layer layer(o);
  std::mt19937 rng(29);
  synattn_test::randomise(layer, rng);
  auto kept = [&](const PackedBuckets& packed, bool packed_input) {
    const int n = longest(packed);
    const RowMajorMatrix<float> x = synattn_test::random_matrix(n, 64, rng).cast<float>();
    const RowMajorMatrix<float> G = synattn_test::random_matrix(n, 64, rng).cast<float>();
    const BucketBlock dense = packed_input ? BucketBlock() : packed.dense(n);
    RowMajorMatrix<float> out(n, 64), dx(n, 64);
    const long long before = synattn_test::heap_bytes();
    long long bytes = 0;
    {
      Layer::Cache cache;
      if (packed_input)
        layer.forward({x, packed}, cache, out);
      else
        layer.forward({x, packed.lengths(), dense}, cache, out);
      layer.backward(cache, G, {dx});
      bytes = synattn_test::heap_bytes() - before;
    }
    return double(bytes);
  };
  const PackedBuckets shorter =
      synattn::make_packed_buckets(random_documents({60}, 40, false, rng), o.bias.bucketing, packing(1));
  const PackedBuckets longer =
      synattn::make_packed_buckets(random_documents({120}, 40, false, rng), o.bias.bucketing, packing(1));
  const double n1 = longest(shorter), n2 = longest(longer);
  const double small = kept(shorter, true), large = kept(longer, true), dense = kept(longer, false);
  INFO("packed: n " << n1 << " keeps " << small / 1e6 << " MB, n " << n2 << " keeps " << large / 1e6
                    << " MB; the dense input at n " << n2 << ": " << dense / 1e6 << " MB");
  // Per token: the n x d activations (x, Q, K, V, ctx and their gradients), not n^2.
  CHECK(large / n2 < 1.3 * small / n1);
  // The dense input keeps (at least) its n x n int8 block besides.
  CHECK(large + 0.9 * n2 * n2 < dense);
}
