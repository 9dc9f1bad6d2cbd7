// README's code, compiled and run: if the README's API drifts, this fails.
#include <catch2/catch.hpp>

#include <synattn/synattn.hpp>

#include <cstdint>
#include <random>

#include "support/test_data.hpp"

TEST_CASE("README tour: trees, CoNLL-U, distances, batches and buckets", "[readme]") {
  using namespace synattn;
  const std::string path = synattn_test::source_path("examples/data/en_ewt-dev-sample.conllu");

  DependencyTree tree = DependencyTree::from_heads({2, 3, 0, 3}, HeadConvention::OneBasedRootZero);
  std::vector<ConlluSentence> sentences = read_conllu(path);
  RowMajorMatrix<std::int8_t> d(tree.size(), tree.size());
  pairwise_distances<std::int8_t>(tree, d);
  RowMajorMatrix<std::int8_t> up(tree.size(), tree.size()), down(tree.size(), tree.size());
  directed_distances<std::int8_t>(tree, up, down);
  std::vector<DependencyTree> trees;
  for (const auto& s : sentences) trees.push_back(s.tree());
  DistanceBatch<std::int8_t> batch = make_distance_batch<std::int8_t>(trees);
  Bucketing bucketing = Bucketing::linear(10);
  RowMajorMatrix<std::int8_t> buckets(batch.distances.rows(), batch.distances.cols());
  bucketize<std::int8_t, std::int8_t>(bucketing, batch.distances, buckets);

  // Word 1 heads word 0 and is a child of word 2, the root, which also heads word 3.
  CHECK(+d(0, 1) == 1);
  CHECK(+d(0, 3) == 3);
  CHECK((+up(0, 3) == 2 && +down(0, 3) == 1));
  CHECK(sentences.size() == 50);
  CHECK(buckets.rows() == 50 * batch.n_max);
  CHECK(buckets.maxCoeff() == 10);
  CHECK(buckets.minCoeff() == -1);
}

TEST_CASE("README tour: the attention layer", "[readme]") {
  const int batch = 2, n = 6;
  std::vector<int> lengths{6, 4};
  synattn::RowMajorMatrix<std::int8_t> buckets(batch * n, n);
  buckets.setConstant(-1);
  buckets.topRows(n).setConstant(1);
  buckets.block(n, 0, 4, 4).setConstant(2);
  synattn::RowMajorMatrix<float> x = synattn::RowMajorMatrix<float>::Random(batch * n, 512);
  synattn::RowMajorMatrix<float> dout = synattn::RowMajorMatrix<float>::Ones(batch * n, 512);

  synattn::AttentionOptions options(512, 8);
  options.bias.bucketing = synattn::Bucketing::linear(10);
  synattn::SyntaxBiasedAttention<float> layer(options);
  synattn::AttentionCache<float> cache;
  auto out = layer.forward(x, lengths, buckets, cache);
  auto dx = layer.backward(cache, dout);
  int visited = 0;
  float lr = 0.01f;
  layer.visit_parameters([&](const synattn::ParameterInfo& info, auto value, auto grad) {
    if (info.trainable) value -= lr * grad;
    ++visited;
  });
  layer.zero_grad();

  auto y = layer.infer(x, lengths, buckets);

  CHECK(y.rows() == batch * n);
  CHECK(y.allFinite());
  CHECK(out.rows() == batch * n);
  CHECK(dx.rows() == batch * n);
  CHECK(visited == 10);  // Wq Wk Wv bq bk bv Wo bo table scale
  CHECK(layer.gradients().isZero(0));
  CHECK(out.allFinite());
}
