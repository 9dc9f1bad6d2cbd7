// save_weights / load_weights (train/checkpoint.hpp): a whole layer's or
// model's parameters to a file and back, refused without a change when the
// file does not fit the model.
#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"

// The umbrella alone: linking synattn::checkpoint (SYNATTN_WITH_CHECKPOINT)
// makes it bring the checkpoint functions.
#include <synattn/synattn.hpp>

#include <map>
#include <string>
#include <vector>
#include "support/attention_calls.hpp"

using namespace synattn;
using synattn_test::TempDir;

namespace {

AttentionOptions attention_options(std::uint64_t seed) {
  AttentionOptions o(8, 2);
  o.bias.bucketing = Bucketing::linear(4);
  o.bias.init = TableInit::LinearDecay;  // a table that is not all zeros
  o.seed = seed;
  return o;
}

nn::TaggerOptions tagger_options(std::uint64_t seed, int layers = 2) {
  nn::TaggerOptions o;
  o.vocab_size = 20;
  o.num_classes = 3;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 16;
  o.layers = layers;
  o.bias.bucketing = Bucketing::linear(4);
  o.seed = seed;
  return o;
}

const std::vector<DependencyTree> kTrees{DependencyTree({1, -1, 1, 2}), DependencyTree({-1, 0, 1})};

}  // namespace

TEST_CASE("a layer's weights saved and loaded into a layer drawn from another seed give its outputs",
          "[checkpoint][weights]") {
  TempDir dir;
  const std::string path = dir.file("attention.safetensors");
  const SyntaxBiasedAttention<double> saved(attention_options(1));
  SyntaxBiasedAttention<double> loaded(attention_options(2));
  REQUIRE(loaded.parameters() != saved.parameters());

  save_weights(path, saved, {{"note", "layer"}});
  const CheckpointInfo info = load_weights(path, loaded);
  CHECK(info.step == 0);
  CHECK(info.metadata.at("note") == "layer");
  CHECK(loaded.parameters() == saved.parameters());

  const BucketBatch batch = make_bucket_batch(kTrees, saved.options().bias.bucketing);
  const RowMajorMatrix<double> x = RowMajorMatrix<double>::Random(2 * batch.n_max, 8);
  CHECK(synattn_test::infer_value(loaded, {x, batch.lengths, batch.buckets}) ==
        synattn_test::infer_value(saved, {x, batch.lengths, batch.buckets}));
}

TEST_CASE("a tagger's weights round-trip bit for bit, and its predictions with them", "[checkpoint][weights]") {
  TempDir dir;
  const std::string path = dir.file("tagger.safetensors");
  const nn::SyntaxTransformerTagger<float> saved(tagger_options(3));
  nn::SyntaxTransformerTagger<float> loaded(tagger_options(4));
  REQUIRE(loaded.parameters() != saved.parameters());

  save_weights(path, saved);
  load_weights(path, loaded);
  CHECK(loaded.parameters() == saved.parameters());

  const BucketBatch batch = make_bucket_batch(kTrees, saved.options().bias.bucketing);
  nn::IdVector ids = nn::IdVector::Zero(2 * batch.n_max);
  ids << 3, 5, 7, 9, 2, 4, 6, 0;
  nn::SyntaxTransformerTagger<float>::Cache a, b;
  CHECK(loaded.predict({ids, batch.lengths, batch.buckets}, a) == saved.predict({ids, batch.lengths, batch.buckets}, b));
}

TEST_CASE("weights of another model are refused naming the tensor, and the model keeps its own",
          "[checkpoint][weights]") {
  TempDir dir;
  const std::string path = dir.file("three_layers.safetensors");
  save_weights(path, nn::SyntaxTransformerTagger<double>(tagger_options(5, 3)));

  nn::SyntaxTransformerTagger<double> two_layers(tagger_options(6, 2));
  const Eigen::VectorXd before = two_layers.parameters();
  CHECK_THROWS_WITH(load_weights(path, two_layers),
                    Catch::Matchers::Contains(path) && Catch::Matchers::Contains("unexpected tensor") &&
                        Catch::Matchers::Contains("layers.2."));
  CHECK(two_layers.parameters() == before);

  // A layer of another width: its projection is the wrong shape.
  const std::string layer_path = dir.file("wide.safetensors");
  AttentionOptions wide = attention_options(7);
  wide.d_model = 16;
  save_weights(layer_path, SyntaxBiasedAttention<double>(wide));
  SyntaxBiasedAttention<double> narrow(attention_options(8));
  const Eigen::VectorXd narrow_before = narrow.parameters();
  CHECK_THROWS_WITH(load_weights(layer_path, narrow), Catch::Matchers::Contains("Wq"));
  CHECK(narrow.parameters() == narrow_before);
}

TEST_CASE("load_weights of a missing file names it", "[checkpoint][weights]") {
  TempDir dir;
  SyntaxBiasedAttention<float> layer(attention_options(9));
  CHECK_THROWS_WITH(load_weights(dir.file("absent.safetensors"), layer), Catch::Matchers::Contains("absent.safetensors"));
}
