// Dropout masks keyed by (stream, global sequence, position, feature): a
// global batch split into sub-batches (each padded to its own longest
// sequence, each stream set with sequences_from(first)) draws exactly the
// whole batch's masks, at every site — embedding, attention probabilities,
// attention output, FFN hidden, FFN output — forward and backward. This is
// what lets P MPI ranks match one process with dropout on.
#include <catch2/catch.hpp>

#include <synattn/nn/tagger.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/tagger_calls.hpp"

using namespace synattn;
using namespace synattn::nn;
using MatrixD = RowMajorMatrix<double>;
using Buckets = RowMajorMatrix<std::int8_t>;

namespace {

// The global batch: sequences of these lengths, content fixed per sequence.
const std::vector<int> kLengths{3, 4, 7, 2, 5};
constexpr int kVocab = 20, kClasses = 3, kBuckets = 4;

int token_of(int s, int i) { return 1 + (7 * s + 3 * i * i + 1) % (kVocab - 1); }
int label_of(int s, int i) { return (token_of(s, i) + i) % kClasses; }

struct Batch {
  std::vector<int> lengths;
  int n = 0;
  IdVector ids, labels;
  Buckets buckets;
};

// Sequences [lo, hi) of the global batch, padded to their own longest
// (pad = 0) or to `pad` positions.
Batch sub_batch(int lo, int hi, int pad = 0) {
  Batch b;
  b.n = pad;
  for (int s = lo; s < hi; ++s) b.n = std::max(b.n, kLengths[static_cast<std::size_t>(s)]);
  const int B = hi - lo, n = b.n;
  b.ids = IdVector::Zero(B * n);
  b.labels = IdVector::Constant(B * n, kIgnoreLabel);
  b.buckets.resize(B * n, n);
  for (int s = lo; s < hi; ++s) {
    const int len = kLengths[static_cast<std::size_t>(s)], r = s - lo;
    b.lengths.push_back(len);
    for (int i = 0; i < len; ++i) {
      b.ids[r * n + i] = token_of(s, i);
      b.labels[r * n + i] = label_of(s, i);
    }
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        b.buckets(r * n + i, j) =
            static_cast<std::int8_t>(i < len && j < len ? std::min(std::abs(i - j), kBuckets - 1) : -1);
  }
  return b;
}

struct Run {
  std::vector<MatrixD> logits;  // per global sequence: (length, classes)
  Eigen::VectorXd gradients;
  double loss = 0;
};

// Forward, loss (normalised by the global token count) and backward of the
// global batch cut at `cuts` (sub-batch k = sequences [cuts[k], cuts[k+1])),
// gradients summed over the sub-batches. `offset`: each sub-batch's stream
// starts at its first global sequence (false: at 0, the old keying).
Run run(SyntaxTransformerTagger<double>& model, const std::vector<int>& cuts, const RandomStream& step, bool offset,
        int pad = 0) {
  Run out;
  double global_tokens = 0;
  for (int l : kLengths) global_tokens += l;
  model.zero_grad();
  TaggerCache<double> c;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const Batch b = sub_batch(cuts[k], cuts[k + 1], pad);
    const RandomStream s = offset ? step.sequences_from(static_cast<std::uint64_t>(cuts[k])) : step;
    const MatrixD& logits = synattn_test::forward_logits(model, {b.ids, b.lengths, b.buckets}, c, &s);
    for (std::size_t r = 0; r < b.lengths.size(); ++r)
      out.logits.push_back(logits.middleRows(static_cast<Index>(r) * b.n, b.lengths[r]));
    out.loss += model.loss(c, c.logits, b.labels, global_tokens).loss;
    model.backward(c);
  }
  out.gradients = model.gradients();
  return out;
}

struct Site {
  const char* name;
  double TaggerOptions::*member;
};

}  // namespace

TEST_CASE("apply_dropout: a sequence's mask does not depend on its padding or place in the batch", "[nn][dropout]") {
  const RandomStream step = RandomStream(17).derive(4);
  const Index cols = 9;
  MatrixD whole = MatrixD::Ones(5 * 7, cols);
  apply_dropout(step, 0.3, 7, whole);
  MatrixD first = MatrixD::Ones(2 * 4, cols), second = MatrixD::Ones(3 * 7, cols);
  apply_dropout(step, 0.3, 4, first);
  apply_dropout(step.sequences_from(2), 0.3, 7, second);
  for (int s = 0; s < 5; ++s) {
    const int len = kLengths[static_cast<std::size_t>(s)];
    const MatrixD part = s < 2 ? MatrixD(first.middleRows(s * 4, len)) : MatrixD(second.middleRows((s - 2) * 7, len));
    INFO("sequence " << s);
    CHECK(part == whole.middleRows(s * 7, len));
  }
  // Without the offset the second part draws sequences 0..2's masks instead.
  MatrixD wrong = MatrixD::Ones(3 * 7, cols);
  apply_dropout(step, 0.3, 7, wrong);
  CHECK(wrong.topRows(2) != whole.middleRows(2 * 7, 2));
  CHECK(wrong.topRows(7) == whole.topRows(7));
  CHECK_THROWS_AS(apply_dropout(step, 0.3, 4, whole), Error);  // 35 rows are not sequences of 4
}

TEST_CASE("FeedForward: the hidden mask of a sequence does not depend on its padding or place", "[nn][dropout][ffn]") {
  // GELU is 0 only at 0, so the hidden zeros are the dropped units.
  FeedForward<double> ffn(4, 16, Activation::GELU, 0.3, RandomStream(8));
  const RandomStream step = RandomStream(31).derive(2);
  const auto input = [](int lo, int hi, int n) {
    MatrixD x = MatrixD::Zero((hi - lo) * n, 4);
    for (int s = lo; s < hi; ++s)
      for (int i = 0; i < kLengths[static_cast<std::size_t>(s)]; ++i)
        for (int c = 0; c < 4; ++c) x((s - lo) * n + i, c) = 0.1 * token_of(s, i) - 0.3 * c + 0.05 * i + 0.01;
    return x;
  };
  const auto hidden_mask = [&](int lo, int hi, int n) {
    const MatrixD x = input(lo, hi, n);
    MatrixD y(x.rows(), 4);
    FeedForwardCache<double> c;
    const RandomStream s = step.sequences_from(static_cast<std::uint64_t>(lo));
    ffn.forward({x, n}, c, y, &s);
    return Eigen::Matrix<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>((c.hidden().array() == 0.0).matrix());
  };
  const auto whole = hidden_mask(0, 5, 7), first = hidden_mask(0, 2, 4), second = hidden_mask(2, 5, 7);
  CHECK(whole.count() > 0);
  for (int s = 0; s < 5; ++s) {
    const int len = kLengths[static_cast<std::size_t>(s)];
    INFO("sequence " << s);
    if (s < 2)
      CHECK(first.middleRows(s * 4, len) == whole.middleRows(s * 7, len));
    else
      CHECK(second.middleRows((s - 2) * 7, len) == whole.middleRows(s * 7, len));
  }
  MatrixD x = input(0, 5, 7), y(35, 4);
  FeedForwardCache<double> c;
  CHECK_THROWS_AS(ffn.forward({x, 4}, c, y, &step), Error);  // 35 rows are not sequences of 4
}

TEST_CASE("Tagger: split and differently padded sub-batches draw the whole batch's masks at every site",
          "[nn][dropout][tagger]") {
  const std::vector<Site> sites{{"embedding", &TaggerOptions::embedding_dropout},
                                {"attention probabilities", &TaggerOptions::attention_dropout},
                                {"attention output", &TaggerOptions::attention_output_dropout},
                                {"ffn hidden", &TaggerOptions::ffn_hidden_dropout},
                                {"ffn output", &TaggerOptions::ffn_output_dropout},
                                {"all", nullptr},
                                {"none", nullptr}};  // the baseline: padding's own rounding
  const RandomStream step = RandomStream(23).derive(5);
  for (const bool pre_norm : {true, false})
    for (const Site& site : sites) {
      TaggerOptions o;
      o.vocab_size = kVocab;
      o.num_classes = kClasses;
      o.d_model = 8;
      o.heads = 2;
      o.d_ff = 16;
      o.layers = 2;
      o.pre_norm = pre_norm;
      o.bias.bucketing = Bucketing::linear(kBuckets);
      o.seed = 3;
      const bool none = std::string(site.name) == "none";
      o.dropout = site.member || none ? 0.0 : 0.3;
      if (site.member) o.*site.member = 0.3;
      SyntaxTransformerTagger<double> model(o);
      INFO(site.name << (pre_norm ? ", pre-norm" : ", post-norm"));

      const Run whole = run(model, {0, 5}, step, true);
      const double scale = whole.gradients.cwiseAbs().maxCoeff();
      TaggerCache<double> ec;
      const MatrixD eval = synattn_test::forward_logits(model, {sub_batch(0, 5).ids, kLengths, sub_batch(0, 5).buckets}, ec, nullptr);
      if (!none) CHECK(MatrixD(eval.topRows(3)) != whole.logits[0]);  // the site does drop
      for (const std::vector<int>& cuts : {std::vector<int>{0, 2, 5}, std::vector<int>{0, 1, 3, 5}}) {
        INFO("cuts at " << cuts[1]);
        // Each sub-batch padded to its own longest. The masks are the same
        // (bit for bit: see the apply_dropout and FeedForward cases; the
        // attention layer's against the naive reference), but the products
        // over (batch * n) rows round a sequence's rows differently when the
        // row count changes, by a few ulps, as without dropout ("none"), so
        // logits are compared within 1e-14; a wrong mask moves them by ~0.1.
        // The gradient is a sum over sub-batches instead of one batch: equal
        // up to the order of additions.
        const Run own_pad = run(model, cuts, step, true);
        for (std::size_t s = 0; s < kLengths.size(); ++s)
          CHECK((own_pad.logits[s] - whole.logits[s]).cwiseAbs().maxCoeff() <= 1e-14);
        CHECK((own_pad.gradients - whole.gradients).cwiseAbs().maxCoeff() <= 1e-13 * scale);
        CHECK(own_pad.loss == Approx(whole.loss).epsilon(1e-14));
      }
      // The old keying (every sub-batch counting from sequence 0) draws other
      // masks for sequences 2..4, and this test sees it.
      if (!none) {
        const Run unkeyed = run(model, {0, 2, 5}, step, false, 7);
        double moved = 0;
        for (std::size_t s = 2; s < kLengths.size(); ++s)
          moved = std::max(moved, (unkeyed.logits[s] - whole.logits[s]).cwiseAbs().maxCoeff());
        CHECK(moved > 1e-3);
      }
    }
}
