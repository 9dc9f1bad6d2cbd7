// Training the whole model with the library's own pieces: a task that can
// only be solved through the tree (the learned table must end with its peak
// at distance 1), a short run on real EWT sentences whose loss falls, and a
// checkpointed run resumed into a fresh model and optimiser that continues
// bit for bit like the uninterrupted one.
#include <catch2/catch.hpp>

#include <synattn/bias/bucketing.hpp>
#include <synattn/data/batching.hpp>
#include <synattn/data/tagging_corpus.hpp>
#include <synattn/data/token_batch.hpp>
#include <synattn/data/vocabulary.hpp>
#include <synattn/nn/tagger.hpp>
#include <synattn/train/checkpoint.hpp>
#include <synattn/train/optimizer.hpp>
#include <synattn/train/parameter_groups.hpp>
#include <synattn/train/schedules.hpp>
#include <synattn/tree/batch.hpp>
#include <synattn/tree/dependency_tree.hpp>

#include <cstdint>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/test_data.hpp"

using namespace synattn;
using nn::IdVector;
using nn::SyntaxTransformerTagger;
using nn::TaggerOptions;

namespace {

// A batch of random recursive trees over random tokens whose label is the
// token of the word's head (the root's label is its own class). Nothing but
// the head's identity predicts a label, and only the bias tells the model
// where the head is.
struct HeadTokenBatch {
  IdVector ids, labels;
  std::vector<int> lengths;
  RowMajorMatrix<std::int8_t> buckets;
};

HeadTokenBatch head_token_batch(int batch, int n, int vocab, const Bucketing& bucketing, const RandomStream& s) {
  HeadTokenBatch out;
  out.ids = IdVector::Zero(batch * n);
  out.labels = IdVector::Constant(batch * n, nn::kIgnoreLabel);
  std::vector<DependencyTree> trees;
  for (int b = 0; b < batch; ++b) {
    const RandomStream sb = s.derive(static_cast<std::uint64_t>(b));
    const int len = n / 2 + static_cast<int>(sb.bits(0) % static_cast<std::uint64_t>(n - n / 2 + 1));
    std::vector<int> heads(static_cast<std::size_t>(len), -1);
    // Word order is a random permutation of the attachment order, so the head
    // is not simply a neighbour.
    std::vector<int> order(static_cast<std::size_t>(len));
    for (int i = 0; i < len; ++i) order[static_cast<std::size_t>(i)] = i;
    for (int i = len - 1; i > 0; --i)
      std::swap(order[static_cast<std::size_t>(i)],
                order[static_cast<std::size_t>(sb.derive(1).bits(static_cast<std::uint64_t>(i)) %
                                               static_cast<std::uint64_t>(i + 1))]);
    for (int k = 1; k < len; ++k)
      heads[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] =
          order[static_cast<std::size_t>(sb.derive(2).bits(static_cast<std::uint64_t>(k)) % static_cast<std::uint64_t>(k))];
    for (int i = 0; i < len; ++i)
      out.ids[b * n + i] = 2 + static_cast<std::int32_t>(sb.derive(3).bits(static_cast<std::uint64_t>(i)) %
                                                         static_cast<std::uint64_t>(vocab - 2));
    for (int i = 0; i < len; ++i) {
      const int h = heads[static_cast<std::size_t>(i)];
      out.labels[b * n + i] = h < 0 ? vocab : out.ids[b * n + h];
    }
    out.lengths.push_back(len);
    trees.push_back(DependencyTree::from_heads(heads, HeadConvention::ZeroBasedRootMinusOne));
  }
  const DistanceBatch<std::int8_t> d = make_distance_batch<std::int8_t>(trees, n);
  out.buckets.resize(d.distances.rows(), d.distances.cols());
  bucketize<std::int8_t, std::int8_t>(bucketing, d.distances, out.buckets);
  return out;
}

}  // namespace

TEST_CASE("On a task solved only by attending to the head, the learned table peaks at distance 1",
          "[train][tagger][synthetic]") {
  const int vocab = 10, n = 10, batch = 32;
  TaggerOptions o;
  o.vocab_size = vocab;
  o.num_classes = vocab + 1;
  o.d_model = 32;
  o.heads = 2;
  o.d_ff = 64;
  o.layers = 1;
  o.dropout = 0;
  o.bias.bucketing = Bucketing::linear(6);
  o.seed = 5;
  SyntaxTransformerTagger<float> model(o);
  Adam<float> adam(AdamOptions{}, syntax_bias_groups(10.0));
  nn::TaggerCache<float> cache;
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    const HeadTokenBatch b = head_token_batch(batch, n, vocab, o.bias.bucketing,
                                              RandomStream(99).derive(static_cast<std::uint64_t>(step)));
    model.zero_grad();
    const RandomStream drop = RandomStream(1).derive(static_cast<std::uint64_t>(step));
    const nn::LossResult l = model.loss_and_backward({b.ids, b.lengths, b.buckets}, b.labels, cache, &drop);
    adam.set_lr(3e-3 * warmup_constant(step + 1, 20));
    adam.step(model.parameter_store());
    if (step < 10) first += l.loss / 10;
    if (step >= 290) last += l.loss / 10;
  }
  INFO("mean loss over the first 10 steps " << first << ", over the last 10 " << last);
  CHECK(last < 0.5 * first);
  auto& attention = model.attention(0);
  const auto table = attention.table();
  const float s = attention.scale();
  INFO("s = " << s << ", T = " << table);
  for (Index b = 0; b < table.cols(); ++b)
    if (b != 1) CHECK(s * table(0, 1) > s * table(0, b));
}

TEST_CASE("Adam on 20 real EWT sentences: the training loss falls", "[train][tagger][ewt]") {
  std::vector<TaggedSentence> all = load_tagging_corpus(synattn_test::ewt("dev"));
  std::vector<TaggedSentence> sentences(all.begin(), all.begin() + 20);
  const Vocabulary vocab = Vocabulary::build(sentences, nullptr);
  const LabelSet labels = LabelSet::build(all);
  const Bucketing bucketing = Bucketing::linear(10);
  const EncodedCorpus corpus(sentences, vocab, labels, &bucketing);
  const std::vector<int> lengths = sentence_lengths(sentences);
  TaggerOptions o;
  o.vocab_size = vocab.size();
  o.num_classes = labels.size();
  o.d_model = 32;
  o.heads = 4;
  o.d_ff = 64;
  o.dropout = 0;  // memorising 20 sentences: nothing to regularise
  o.bias.bucketing = bucketing;
  SyntaxTransformerTagger<float> model(o);
  Adam<float> adam(AdamOptions{}, syntax_bias_groups(10.0));
  nn::TaggerCache<float> cache;
  TokenBatch batch;
  std::vector<double> epoch_loss;
  long step = 0;
  for (int epoch = 0; epoch < 30; ++epoch) {
    double sum = 0;
    const auto batches = length_batches(lengths, 1, static_cast<std::uint64_t>(epoch), 8);
    for (const auto& indices : batches) {
      make_token_batch(corpus, indices, WordDropout::none(), batch);
      const Eigen::Map<const IdVector> ids(batch.ids.data(), batch.ids.size());
      const Eigen::Map<const IdVector> y(batch.labels.data(), batch.labels.size());
      model.zero_grad();
      const RandomStream drop = RandomStream(3).derive(static_cast<std::uint64_t>(step));
      sum += model.loss_and_backward({ids, batch.lengths, batch.buckets}, y, cache, &drop).loss;
      adam.set_lr(5e-3 * warmup_constant(++step, 10));
      adam.step(model.parameter_store());
    }
    epoch_loss.push_back(sum / static_cast<double>(batches.size()));
  }
  INFO("loss in the first epoch " << epoch_loss.front() << ", in the last " << epoch_loss.back());
  CHECK(epoch_loss.back() < 0.5 * epoch_loss.front());
}

TEST_CASE("A tagger trained from a checkpoint continues exactly as if it had never stopped",
          "[train][tagger][checkpoint]") {
  const int vocab = 12, n = 9;
  TaggerOptions o;
  o.vocab_size = vocab;
  o.num_classes = vocab + 1;
  o.d_model = 16;
  o.heads = 2;
  o.d_ff = 32;
  o.dropout = 0.1;
  o.bias.bucketing = Bucketing::linear(6);
  o.bias.per_head = true;
  o.seed = 11;
  const auto train = [&](SyntaxTransformerTagger<double>& model, Adam<double>& adam, int from, int to) {
    nn::TaggerCache<double> cache;
    for (int step = from; step < to; ++step) {
      const HeadTokenBatch b = head_token_batch(6, n, vocab, o.bias.bucketing,
                                                RandomStream(5).derive(static_cast<std::uint64_t>(step)));
      model.zero_grad();
      const RandomStream drop = RandomStream(8).derive(static_cast<std::uint64_t>(step));
      model.loss_and_backward({b.ids, b.lengths, b.buckets}, b.labels, cache, &drop);
      adam.set_lr(1e-2 * warmup_constant(step + 1, 3));
      adam.step(model.parameter_store());
    }
  };
  SyntaxTransformerTagger<double> straight(o);
  Adam<double> straight_adam(AdamOptions{}, syntax_bias_groups(10.0));
  train(straight, straight_adam, 0, 8);

  synattn_test::TempDir dir;
  const std::string path = dir.file("tagger.safetensors");
  SyntaxTransformerTagger<double> first(o);
  Adam<double> first_adam(AdamOptions{}, syntax_bias_groups(10.0));
  train(first, first_adam, 0, 4);
  save_checkpoint<double>(path, first.parameter_store(), &first_adam, 4);

  TaggerOptions other = o;
  other.seed = 12345;  // different initial weights: all of them must come from the file
  SyntaxTransformerTagger<double> resumed(other);
  Adam<double> resumed_adam(AdamOptions{}, syntax_bias_groups(10.0));
  const CheckpointInfo info = load_checkpoint<double>(path, resumed.parameter_store(), &resumed_adam);
  REQUIRE(info.step == 4);
  REQUIRE(resumed_adam.steps() == 4);
  train(resumed, resumed_adam, 4, 8);
  // Bit for bit, every parameter.
  CHECK((resumed.parameters().array() == straight.parameters().array()).all());
  CHECK((first.parameters().array() != straight.parameters().array()).any());
}
