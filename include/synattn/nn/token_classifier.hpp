// synattn — a token-classification head: logits = h W^T + b (nn.Linear), and
// softmax cross-entropy over the counted tokens, PyTorch's
// F.cross_entropy(logits, labels, ignore_index=-100, reduction="sum") with
// padding positions ignored whatever their label.
//
// The head follows the layer contract (docs/guide.md) through its Linear:
// forward(h, cache, logits), infer(h, workspace, logits), backward(cache,
// dlogits, dh); the loss is separate (loss(), cross_entropy()).
#ifndef SYNATTN_NN_TOKEN_CLASSIFIER_HPP
#define SYNATTN_NN_TOKEN_CLASSIFIER_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/random.hpp"
#include "embedding.hpp"
#include "linear.hpp"

namespace synattn {
namespace nn {

constexpr std::int32_t kIgnoreLabel = -100;

struct LossResult {
  double sum = 0;      // summed cross-entropy over the counted tokens
  Index count = 0;     // counted tokens (real positions whose label is not ignored)
  double loss = 0;     // sum / normaliser (the batch's own count by default)
  double normaliser = 0;
};

// Whether row r of a (batch * n) token matrix is a real position.
inline bool is_real_position(const std::vector<int>& lengths, Index n, Index r) {
  return r % n < lengths[static_cast<std::size_t>(r / n)];
}

// Checks that lengths and a per-token vector fit a (batch * n) layout; returns n.
inline Index tokens_per_sequence(const char* fn, const char* what, Index tokens, const std::vector<int>& lengths) {
  if (lengths.empty()) throw Error(std::string(fn) + ": lengths is empty (one entry per sequence expected)");
  const auto batch = static_cast<Index>(lengths.size());
  if (tokens % batch != 0)
    throw Error(std::string(fn) + ": " + what + " has " + std::to_string(tokens) + " rows, not a multiple of batch " +
                std::to_string(batch));
  const Index n = tokens / batch;
  for (std::size_t b = 0; b < lengths.size(); ++b)
    if (lengths[b] < 0 || lengths[b] > n)
      throw Error(std::string(fn) + ": lengths[" + std::to_string(b) + "] = " + std::to_string(lengths[b]) +
                  " is outside [0, " + std::to_string(n) + "]");
  return n;
}

// Cross-entropy of `logits` (tokens, C) against `labels` (tokens): sums
// -log softmax(logits[t])[labels[t]] over counted tokens (real position,
// label != ignore_label; other labels must lie in [0, C)). The loss is
// divided by `normaliser` (<= 0: the count; data-parallel training passes the
// global batch's count). When dlogits is not null it receives dL/dlogits
// (tokens, C) for that normalised loss: (softmax - onehot) / normaliser on
// counted rows, exactly 0 elsewhere. The log-softmax subtracts the row max.
// A loss's normaliser: `requested` when > 0, else `own` (the batch's counted
// tokens). NaN or infinity is refused, not read as "use the batch's own".
inline double resolve_normaliser(const char* fn, double requested, double own) {
  if (!std::isfinite(requested))
    throw Error(std::string(fn) + ": normaliser must be finite (<= 0: the batch's own count), got " +
                std::to_string(requested));
  return requested > 0 ? requested : own;
}

template <class Scalar>
LossResult cross_entropy(const Eigen::Ref<const RowMajorMatrix<Scalar>>& logits,
                         const Eigen::Ref<const IdVector>& labels, const std::vector<int>& lengths, double normaliser,
                         RowMajorMatrix<Scalar>* dlogits, std::int32_t ignore_label = kIgnoreLabel) {
  const char* fn = "cross_entropy";
  const Index tokens = logits.rows(), C = logits.cols();
  if (labels.size() != tokens)
    throw Error(std::string(fn) + ": labels has " + std::to_string(labels.size()) +
                " entries, expected one per logits row (" + std::to_string(tokens) + ")");
  const Index n = tokens_per_sequence(fn, "logits", tokens, lengths);
  LossResult r;
  for (Index t = 0; t < tokens; ++t) {
    if (!is_real_position(lengths, n, t) || labels[t] == ignore_label) continue;
    if (labels[t] < 0 || labels[t] >= C)
      throw Error(std::string(fn) + ": labels[" + std::to_string(t) + "] = " + std::to_string(labels[t]) +
                  " is outside [0, " + std::to_string(C) + ") and is not the ignore label " +
                  std::to_string(ignore_label));
    ++r.count;
  }
  r.normaliser = resolve_normaliser(fn, normaliser, static_cast<double>(r.count));
  const Scalar inv_norm = static_cast<Scalar>(r.normaliser > 0 ? 1.0 / r.normaliser : 0.0);
  if (dlogits) dlogits->setZero(tokens, C);
  for (Index t = 0; t < tokens; ++t) {
    if (!is_real_position(lengths, n, t) || labels[t] == ignore_label) continue;
    const auto row = logits.row(t);
    const Scalar m = row.maxCoeff();
    Scalar z = 0;
    for (Index c = 0; c < C; ++c) z += std::exp(row[c] - m);
    const Scalar log_z = m + std::log(z);
    r.sum += static_cast<double>(log_z - row[labels[t]]);
    if (dlogits) {
      auto g = dlogits->row(t);
      const Scalar inv_z = Scalar(1) / z;
      for (Index c = 0; c < C; ++c) g[c] = std::exp(row[c] - m) * inv_z * inv_norm;
      g[labels[t]] -= inv_norm;
    }
  }
  r.loss = r.normaliser > 0 ? r.sum / r.normaliser : 0.0;
  return r;
}

// Argmax class per row (the first on ties); -1 on padding rows.
template <class Scalar>
IdVector argmax_predictions(const Eigen::Ref<const RowMajorMatrix<Scalar>>& logits, const std::vector<int>& lengths) {
  const Index n = tokens_per_sequence("argmax_predictions", "logits", logits.rows(), lengths);
  IdVector out(logits.rows());
  for (Index t = 0; t < logits.rows(); ++t) {
    Index best = -1;
    if (is_real_position(lengths, n, t) && logits.cols() > 0) logits.row(t).maxCoeff(&best);
    out[t] = static_cast<std::int32_t>(best);
  }
  return out;
}

// Correct predictions among the counted tokens (as cross_entropy counts them).
inline Index count_correct(const Eigen::Ref<const IdVector>& predictions, const Eigen::Ref<const IdVector>& labels,
                           const std::vector<int>& lengths, std::int32_t ignore_label = kIgnoreLabel) {
  if (predictions.size() != labels.size())
    throw Error("count_correct: predictions has " + std::to_string(predictions.size()) + " entries, labels " +
                std::to_string(labels.size()));
  const Index n = tokens_per_sequence("count_correct", "labels", labels.size(), lengths);
  Index correct = 0;
  for (Index t = 0; t < labels.size(); ++t)
    if (is_real_position(lengths, n, t) && labels[t] != ignore_label && predictions[t] == labels[t]) ++correct;
  return correct;
}

// The head: a Linear(d, classes) ("weight", "bias") plus the loss above.
template <class Scalar>
class TokenClassifier {
 public:
  using Matrix = RowMajorMatrix<Scalar>;

  TokenClassifier(int d, int classes, const RandomStream& init, std::int32_t ignore_label = kIgnoreLabel)
      : linear_(d, classes, init), ignore_label_(ignore_label) {}

  int num_classes() const noexcept { return linear_.out_features(); }
  std::int32_t ignore_label() const noexcept { return ignore_label_; }

  using Cache = LinearCache<Scalar>;

  // logits (tokens, classes) = h W^T + b; the cache keeps h (Linear's).
  void forward(const Eigen::Ref<const Matrix>& h, Cache& cache, Eigen::Ref<Matrix> logits) const {
    linear_.forward(h, cache, logits);
  }
  // The same logits, keeping nothing.
  void infer(const Eigen::Ref<const Matrix>& h, Cache& workspace, Eigen::Ref<Matrix> logits) const {
    linear_.infer(h, workspace, logits);
  }
  LossResult loss(const Eigen::Ref<const Matrix>& logits, const Eigen::Ref<const IdVector>& labels,
                  const std::vector<int>& lengths, double normaliser, Matrix* dlogits) const {
    return cross_entropy<Scalar>(logits, labels, lengths, normaliser, dlogits, ignore_label_);
  }
  // Adds dW, db; writes dh (tokens, d), caller-sized.
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dlogits, Eigen::Ref<Matrix> dh) {
    linear_.backward(cache, dlogits, dh);
  }

  Linear<Scalar>& linear() noexcept { return linear_; }
  const Linear<Scalar>& linear() const noexcept { return linear_; }
  ParameterStore<Scalar>& parameter_store() noexcept { return linear_.parameter_store(); }

 private:
  Linear<Scalar> linear_;
  std::int32_t ignore_label_ = kIgnoreLabel;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_TOKEN_CLASSIFIER_HPP
