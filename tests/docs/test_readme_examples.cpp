// Every ```cpp block of README.md and docs/*.md, compiled here and run with
// CHECKs, so that the documented API cannot drift from the real one.
//
// Each block is copied verbatim between a line "// snippet: FILE" and a line
// "// end snippet", at column 0, with the names it leaves open (x, lengths,
// vocab, ...) defined just before it. The test docs_snippets_match
// (tests/docs/check_snippets.cmake) fails when a block of a markdown file is
// found in no file of tests/docs/, or when a snippet here is no longer a
// block of the file it names. The MPI snippet of docs/distributed.md needs
// mpirun and lives in mpi_snippets.cpp, built only when synattn::mpi exists.
#include <catch2/catch.hpp>

#include <synattn/synattn.hpp>
#if defined(SYNATTN_DOCS_CHECKPOINT)
#include <synattn/io/npy.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/pipeline.hpp>
#include <synattn/train/checkpoint.hpp>
#endif

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/test_data.hpp"

namespace {

// The snippets name files relative to the checkout, as a user in it would.
struct InSourceDir {
  std::filesystem::path previous = std::filesystem::current_path();
  InSourceDir() { std::filesystem::current_path(SYNATTN_SOURCE_DIR); }
  ~InSourceDir() { std::filesystem::current_path(previous); }
};

}  // namespace

// README's complete program; a function named main in a namespace is an
// ordinary function, so the test can call it. Its headers were included above.
namespace readme_example {
// snippet: README.md
#include <synattn/synattn.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

int main() {
  using namespace synattn;
  // Two sentences. Heads are 0-based and the root's head is -1.
  std::vector<DependencyTree> trees = {
      DependencyTree::from_heads({1, -1, 1}, HeadConvention::ZeroBasedRootMinusOne),         // She reads books
      DependencyTree::from_heads({1, 3, 3, -1, 3}, HeadConvention::ZeroBasedRootMinusOne)};  // The cat quickly ate fish
  AttentionOptions options(64, 4);                  // d_model 64, 4 heads
  options.bias.bucketing = Bucketing::linear(10);   // distances 0..9, 10 and more share bucket 10
  // Tree distance of every word pair, padded (-1) to the longest sentence, bucketed.
  BucketBatch batch = make_bucket_batch(trees, options.bias.bucketing);

  SyntaxBiasedAttention<float> layer(options);      // the bias table starts at 0: plain attention
  RowMajorMatrix<float> x = RowMajorMatrix<float>::Random(batch.buckets.rows(), 64);  // one row per token
  AttentionCache<float> cache;                      // what backward needs
  RowMajorMatrix<float> y(x.rows(), 64), dx(x.rows(), 64);
  layer.forward({x, batch.lengths, batch.buckets}, cache, y);  // the input: tokens, lengths, buckets
  RowMajorMatrix<float> dy = RowMajorMatrix<float>::Ones(y.rows(), y.cols());   // dL/dy of L = sum(y)
  layer.backward(cache, dy, {dx});                  // dL/dx; parameter gradients accumulate
  std::cout << "y: " << y.rows() << " x " << y.cols() << ", dL/dx: " << dx.rows() << " x " << dx.cols()
            << ", dL/dT: " << layer.gradient("table") << "\n";
  return 0;
}
// end snippet
}  // namespace readme_example

TEST_CASE("README: the complete program runs", "[readme]") { CHECK(readme_example::main() == 0); }

TEST_CASE("guide: trees, CoNLL-U, distances, batches and buckets", "[readme]") {
  const InSourceDir in_source_dir;
// snippet: docs/guide.md
#include <synattn/synattn.hpp>
using namespace synattn;

// Trees: canonical heads are 0-based with root = -1; other conventions are
// converted explicitly, never guessed.
DependencyTree tree = DependencyTree::from_heads({2, 3, 0, 3}, HeadConvention::OneBasedRootZero);

// CoNLL-U: streaming, strict (throws "FILE:LINE: reason") or lenient (skips
// and reports bad sentences).
std::vector<ConlluSentence> sentences = read_conllu("examples/data/en_ewt-dev-sample.conllu");

// All-pairs distances, O(n^2), into caller storage (int8 saturates at 127);
// O(n) working memory; more than max_distance_words = 32768 words throws.
RowMajorMatrix<std::int8_t> d(tree.size(), tree.size());
pairwise_distances<std::int8_t>(tree, d);
// Directed: up(i, j) + down(i, j) == dist(i, j).
RowMajorMatrix<std::int8_t> up(tree.size(), tree.size()), down(tree.size(), tree.size());
directed_distances<std::int8_t>(tree, up, down);

// A batch of sentences as a (batch * n_max, n_max) block, -1 on padding.
std::vector<DependencyTree> trees;
for (const auto& s : sentences) trees.push_back(s.tree());
DistanceBatch<std::int8_t> batch = make_distance_batch<std::int8_t>(trees);

// Buckets: linear clamp (default M = 10), log (T5-style) or directed 2-D.
Bucketing bucketing = Bucketing::linear(10);
RowMajorMatrix<std::int8_t> buckets(batch.distances.rows(), batch.distances.cols());
bucketize<std::int8_t, std::int8_t>(bucketing, batch.distances, buckets);
// end snippet

  // Word 1 heads word 0 and is a child of word 2, the root, which also heads word 3.
  CHECK(+d(0, 1) == 1);
  CHECK(+d(0, 3) == 3);
  CHECK((+up(0, 3) == 2 && +down(0, 3) == 1));
  CHECK(sentences.size() == 50);
  CHECK(buckets.rows() == 50 * batch.n_max);
  CHECK(buckets.maxCoeff() == 10);
  CHECK(buckets.minCoeff() == -1);
}

TEST_CASE("guide: the attention layer", "[readme]") {
  const int batch = 2, n = 6;
  std::vector<int> lengths{6, 4};
  synattn::RowMajorMatrix<std::int8_t> buckets(batch * n, n);
  buckets.setConstant(-1);
  buckets.topRows(n).setConstant(1);
  buckets.block(n, 0, 4, 4).setConstant(2);
  synattn::RowMajorMatrix<float> x = synattn::RowMajorMatrix<float>::Random(batch * n, 512);
  synattn::RowMajorMatrix<float> dout = synattn::RowMajorMatrix<float>::Ones(batch * n, 512);
  const float lr = 0.01f;
  int visited = 0;

// snippet: docs/guide.md
#include <synattn/synattn.hpp>

synattn::AttentionOptions options(512, 8);              // d_model, heads
options.bias.bucketing = synattn::Bucketing::linear(10);  // 11 buckets, the default
// options.bias.per_head = true;  options.key_size = 128;  options.talking_heads_pre = true; ...
synattn::SyntaxBiasedAttention<float> layer(options);     // table = 0: plain attention at start

// x: (batch * n, 512) row-major, one row per token; lengths: one per sequence;
// buckets: (batch * n, n) int8 from bucketize (-1 = masked pair).
synattn::AttentionCache<float> cache;                   // everything backward needs
synattn::RowMajorMatrix<float> out(x.rows(), 512), dx(x.rows(), 512);
layer.forward({x, lengths, buckets}, cache, out);       // out: (batch * n, 512)
layer.backward(cache, dout, {dx});                      // dx = dL/dx; gradients accumulate in layer
layer.visit_parameters([&](const synattn::ParameterInfo& info, auto value, auto grad) {
  if (info.trainable) value -= lr * grad;               // an optimiser step; info.name names it
  ++visited;
});
layer.zero_grad();

synattn::AttentionCache<float> workspace;               // reusable buffers, one per concurrent call
synattn::RowMajorMatrix<float> y(x.rows(), 512);
layer.infer({x, lengths, buckets}, workspace, y);       // inference: same output, keeps nothing
// end snippet

  CHECK(y.rows() == batch * n);
  CHECK(y.allFinite());
  CHECK(out.rows() == batch * n);
  CHECK(dx.rows() == batch * n);
  CHECK(visited == 10);  // Wq Wk Wv bq bk bv Wo bo table scale
  CHECK(layer.gradients().isZero(0));
  CHECK(out.allFinite());
}

TEST_CASE("guide: long documents, packed", "[readme]") {
  using namespace synattn;
  const DependencyTree tree_a({1, -1, 1}), tree_b({-1, 0}), tree_c({2, 2, -1, 2});

// snippet: docs/guide.md
// One sequence per document (e.g. a CoNLL-U file's `# newdoc id` groups), its sentences' trees in order.
const std::vector<std::vector<DependencyTree>> documents = {{tree_a, tree_b, tree_c}};
PackingOptions packing;
packing.window = 1;  // a sentence sees itself and its neighbours; 0: itself only
// packing.root_links = RootLinks::all_roots;  packing.max_tree_distance = 4;
const PackedBuckets packed = make_packed_buckets(documents, Bucketing::linear(10), packing);

AttentionOptions options(64, 4);
SyntaxBiasedAttention<float> layer(options);
const Eigen::Index n = packed.lengths()[0];  // x: (documents * n, 64), n >= the longest document
RowMajorMatrix<float> x = RowMajorMatrix<float>::Random(n, 64), out(n, 64), dx(n, 64);
AttentionCache<float> cache;
layer.forward({x, packed}, cache, out);  // computes only the keys each row's window sees
layer.backward(cache, RowMajorMatrix<float>::Ones(n, 64), {dx});
// end snippet

  CHECK(n == 9);
  CHECK(packed.block_bytes() == 9 + 4 + 16);
  CHECK(cache.packed_input());
  CHECK(out.allFinite());
  CHECK(dx.allFinite());
}

TEST_CASE("guide: a whole model, trained", "[readme]") {
  using namespace synattn;
  using nn::IdVector;
  const std::vector<TaggedSentence> corpus =
      load_tagging_corpus(synattn_test::source_path("examples/data/en_ewt-dev-sample.conllu"));
  const Vocabulary vocab = Vocabulary::build(corpus, nullptr);
  const LabelSet label_set = LabelSet::build(corpus);
  const Bucketing linear10 = Bucketing::linear(10);
  const EncodedCorpus encoded(corpus, vocab, label_set, &linear10);
  TokenBatch token_batch;
  make_token_batch(encoded, {0, 1, 2, 3, 4, 5, 6, 7}, WordDropout::none(), token_batch);
  // One batch, used at every step: ids and labels flat, (batch * n).
  const Eigen::Map<const IdVector> ids(token_batch.ids.data(), token_batch.ids.size());
  const Eigen::Map<const IdVector> labels(token_batch.labels.data(), token_batch.labels.size());
  const std::vector<int>& lengths = token_batch.lengths;
  const auto& buckets = token_batch.buckets;
  const std::uint64_t seed = 1;
  const long steps = 3;

// snippet: docs/guide.md
nn::TaggerOptions o;                      // d_model 128, 4 heads, FFN 256, 2 pre-norm layers
o.vocab_size = vocab.size();  o.num_classes = label_set.size();
o.bias.bucketing = Bucketing::linear(10); // each layer its own 11-bucket table, s = 1
nn::SyntaxTransformerTagger<float> model(o);
Adam<float> adam(AdamOptions{}, syntax_bias_groups(10.0));  // table and s at 10x the rate
nn::TaggerCache<float> cache;
for (long step = 0; step < steps; ++step) {  // ids, lengths, buckets, labels: this step's batch
  model.zero_grad();
  const RandomStream dropout = RandomStream(seed).derive(step);
  model.loss_and_backward({ids, lengths, buckets}, labels, cache, &dropout);
  adam.set_lr(1e-3 * warmup_constant(step + 1, 50));
  adam.step(model.parameter_store());
}
// end snippet

  CHECK(model.parameters().allFinite());
  CHECK_FALSE(model.gradients().isZero(0));
}

#if defined(SYNATTN_DOCS_CHECKPOINT)
TEST_CASE("guide: training machinery, with a checkpoint", "[readme]") {
  using namespace synattn;
  const synattn_test::TempDir tmp("synattn_docs");
  const std::string path = tmp.file("layer.safetensors");
  const long long steps = 3;
  AttentionOptions options(16, 2);
  options.bias.bucketing = Bucketing::linear(4);
  SyntaxBiasedAttention<double> layer(options);
  const std::vector<int> lengths{5};
  RowMajorMatrix<std::int8_t> buckets = RowMajorMatrix<std::int8_t>::Constant(5, 5, 1);
  const RowMajorMatrix<double> x = RowMajorMatrix<double>::Random(5, 16);
  const RowMajorMatrix<double> target = RowMajorMatrix<double>::Random(5, 16);
  AttentionCache<double> cache;

// snippet: docs/guide.md
Adam<double> opt(AdamOptions::adamw(1e-3), syntax_bias_groups(10.0));
ProgressiveStrength<double> intro({ProgressiveOptions::Mode::Hold, 0.1, 1000});
intro.begin(layer.parameter_infos(), layer.parameters());   // s = 0.1 before the first forward
RowMajorMatrix<double> y(x.rows(), layer.d_model()), dx = y;
for (long long t = 1; t <= steps; ++t) {
  layer.zero_grad();
  layer.forward({x, lengths, buckets}, cache, y);
  layer.backward(cache, y - target, {dx});                   // L = |y - target|^2 / 2
  clip_grad_norm<double>(layer.parameter_infos(), layer.gradients(), 1.0);
  intro.before_step(t, layer.parameter_infos(), layer.parameters(), layer.gradients());
  opt.set_lr(1e-3 * warmup_inverse_sqrt(t, 4000));
  opt.step(layer.parameter_infos(), layer.parameters(), layer.gradients());
  intro.after_step(t, layer.parameter_infos(), layer.parameters());
}
save_checkpoint(path, layer.parameter_infos(), layer.parameters(), &opt, steps);
// end snippet

  CHECK(layer.scale() == 0.1);  // held for 1000 steps
  CHECK(std::filesystem::exists(path));
}

TEST_CASE("guide: a model's weights to a file and back", "[readme]") {
  using namespace synattn;
  const synattn_test::TempDir tmp("synattn_docs");
  const std::string path = tmp.file("tagger.safetensors");
  nn::TaggerOptions options;
  options.vocab_size = 10;
  options.num_classes = 3;
  options.d_model = 8;
  options.heads = 2;
  options.d_ff = 8;
  const nn::SyntaxTransformerTagger<float> tagger(options);

// snippet: docs/guide.md
save_weights(path, tagger, {{"layers", std::to_string(tagger.options().layers)}});
nn::SyntaxTransformerTagger<float> restored(tagger.options());
const CheckpointInfo info = load_weights(path, restored);   // info.metadata.at("layers")
// end snippet

  CHECK(restored.parameters() == tagger.parameters());
  CHECK(info.metadata.at("layers") == "2");
}

TEST_CASE("parser.md: trees for a user's own sentences", "[readme]") {
  const InSourceDir in_source_dir;
// snippet: docs/parser.md
#include <synattn/parse/parser_model.hpp>   // link synattn::checkpoint (nlohmann-json)

const auto model = synattn::parse::ParserModel::load(synattn::parse::default_model_path());
const std::vector<synattn::parse::ParsedSentence> parsed =
    model.parse({{"The", "cat", "sat", "on", "the", "mat", "."}});
// parsed[0].heads: 1-based heads, 0 = the root (CoNLL-U's HEAD); parsed[0].deprels: relations.
const synattn::DependencyTree tree = parsed[0].tree();  // into make_distance_batch / bucketize
// end snippet

  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0].heads.size() == 7);
  CHECK(parsed[0].deprels.size() == 7);
  CHECK(tree.size() == 7);
}

TEST_CASE("parser.md: raw text in, trees out", "[readme]") {
  const InSourceDir in_source_dir;
// snippet: docs/parser.md
#include <synattn/parse/pipeline.hpp>   // link synattn::checkpoint (nlohmann-json)

const auto pipeline = synattn::parse::Pipeline::load_default();   // the shipped tokenizer and parser
const synattn::text::Document doc = pipeline.parse_text("Dr. Smith's team didn't finish. They left early!");
for (const synattn::text::Sentence& s : doc.sentences) {
  const synattn::DependencyTree tree = synattn::parse::sentence_tree(s);  // for the attention bias
  // s.words[i]: form, head (1-based, 0 = root), deprel, upos, span (bytes and code points of doc.text)
}
// end snippet

  REQUIRE(doc.sentences.size() == 2);
  // Dr. Smith 's team did n't finish . | They left early !
  CHECK(doc.sentences[0].words.size() + doc.sentences[1].words.size() == 12);
}

TEST_CASE("pytorch_export.md: weights exported by PyTorch load", "[readme]") {
  const synattn_test::TempDir tmp("synattn_docs");
  const std::string dir = tmp.path().string();
  const int n_head = 4;
  {  // What the export script writes: nn.Linear weights, biases and the table.
    synattn::AttentionOptions o(32, n_head);
    o.bias.bucketing = synattn::Bucketing::linear(6);
    synattn::SyntaxBiasedAttention<float> source(o);
    for (const char* name : {"Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo", "table"}) {
      synattn::RowMajorMatrix<float> m = source.parameter(name);
      m.setRandom();
      const bool vector = m.rows() == 1 || m.cols() == 1;
      if (vector)
        synattn::write_npy(dir + "/" + name + ".npy", m.data(), {static_cast<std::size_t>(m.size())});
      else
        synattn::write_npy(dir + "/" + name + ".npy", m.data(),
                           {static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols())});
    }
  }

// snippet: docs/pytorch_export.md
#include <synattn/attention/syntax_attention.hpp>
#include <synattn/io/npy.hpp>

auto load = [&](const std::string& name) { return synattn::read_npy(dir + "/" + name + ".npy"); };
const auto wq = load("Wq").to_matrix<float>();                       // (d_model, d_model)
const auto table = load("table").to_matrix<float>();                 // (1, max_distance + 1)
synattn::AttentionOptions options(static_cast<int>(wq.cols()), n_head);  // dk = dv = d_model / n_head
options.bias.bucketing = synattn::Bucketing::linear(static_cast<int>(table.cols()) - 1);
synattn::SyntaxBiasedAttention<float> layer(options);
for (const char* name : {"Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo", "table"})
  layer.set_parameter(name, load(name).to_matrix<float>());          // checks every shape
// end snippet

  CHECK(layer.options().d_model == 32);
  CHECK(layer.num_buckets() == 7);
  CHECK(layer.parameter("Wq").isApprox(wq));
}
#endif
