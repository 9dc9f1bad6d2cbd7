// synattn — knowledge distillation for a token classifier: a student's
// logits trained against a teacher's softened distribution and, where a
// token has one, its gold label (Hinton, Vinyals and Dean, 2015).
//
// For each counted row t of `logits` (tokens, C), with p = softmax(z_t),
// p_T = softmax(z_t / T) and the teacher's q_t = softmax(teacher z_t / T):
//
//   L_t = gold_weight_t * (-log p[y_t]) + soft_weight_t * T^2 * KL(q_t || p_T)
//   dL_t/dz_t = gold_weight_t * (p - onehot(y_t)) + soft_weight_t * T * (p_T - q_t)
//
// T^2 keeps the soft term's gradient the size of the hard term's as T
// grows (its gradient carries 1/T from the softened logits, and p_T - q_t
// shrinks as 1/T once T exceeds the logits' spread). A row is counted when
// it is a real position and has a nonzero weight; the loss is the sum over
// counted rows divided by the normaliser (<= 0: the count), the same rule as
// cross_entropy (token_classifier.hpp), so at soft weight 0 the two agree.
//
// Soft targets are stored per row as probabilities (soft_targets() writes
// them from a teacher's logits): the teacher runs once, not every step.
#ifndef SYNATTN_NN_DISTILLATION_HPP
#define SYNATTN_NN_DISTILLATION_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "token_classifier.hpp"

namespace synattn {
namespace nn {

// How a row of the batch is trained: weights of its two terms.
struct DistillationWeights {
  Eigen::VectorXd gold;  // per row: weight of -log p[y] (0 where the row has no gold label)
  Eigen::VectorXd soft;  // per row: weight of T^2 KL(q || p_T)
};

namespace detail {

inline void check_temperature(const char* fn, double temperature) {
  if (!(temperature > 0) || !std::isfinite(temperature))
    throw Error(std::string(fn) + ": temperature must be a positive finite number, got " +
                std::to_string(temperature));
}

// log-sum-exp of row / T (the row's max subtracted first).
template <class Row>
double log_sum_exp(const Row& row, double inv_t, double& max_scaled) {
  max_scaled = static_cast<double>(row.maxCoeff()) * inv_t;
  double z = 0;
  for (Index c = 0; c < row.size(); ++c) z += std::exp(static_cast<double>(row[c]) * inv_t - max_scaled);
  return max_scaled + std::log(z);
}

}  // namespace detail

// The teacher's softened distribution q = softmax(logits / T) of each real
// row (zeros on padding rows), as distillation_loss() reads them. Refuses
// non-finite logits (docs/errors.md: no choice from a non-finite score),
// naming the row.
template <class Scalar>
RowMajorMatrix<Scalar> soft_targets(const Eigen::Ref<const RowMajorMatrix<Scalar>>& logits,
                                    const std::vector<int>& lengths, double temperature) {
  const char* fn = "soft_targets";
  nn::detail::check_temperature(fn, temperature);
  const Index n = tokens_per_sequence(fn, "logits", logits.rows(), lengths);
  RowMajorMatrix<Scalar> q = RowMajorMatrix<Scalar>::Zero(logits.rows(), logits.cols());
  const double inv_t = 1.0 / temperature;
  for (Index t = 0; t < logits.rows(); ++t) {
    if (!is_real_position(lengths, n, t)) continue;
    const auto row = logits.row(t);
    if (!row.allFinite())
      throw Error(std::string(fn) + ": the teacher's logits row " + std::to_string(t) + " is not finite");
    double max_scaled = 0;
    const double lse = nn::detail::log_sum_exp(row, inv_t, max_scaled);
    for (Index c = 0; c < logits.cols(); ++c)
      q(t, c) = static_cast<Scalar>(std::exp(static_cast<double>(row[c]) * inv_t - lse));
  }
  return q;
}

// The loss above over `logits` (tokens, C) with gold `labels` (ignore_label
// where a row has none; such a row's gold weight is not read) and soft
// targets `targets` (tokens, C; each counted row with soft weight > 0 a
// distribution). dlogits, when not null, receives dL/dlogits. LossResult's
// sum is the summed loss, count the counted rows.
template <class Scalar>
LossResult distillation_loss(const Eigen::Ref<const RowMajorMatrix<Scalar>>& logits,
                             const Eigen::Ref<const IdVector>& labels,
                             const Eigen::Ref<const RowMajorMatrix<Scalar>>& targets,
                             const DistillationWeights& weights, const std::vector<int>& lengths, double temperature,
                             double normaliser, RowMajorMatrix<Scalar>* dlogits,
                             std::int32_t ignore_label = kIgnoreLabel) {
  const char* fn = "distillation_loss";
  nn::detail::check_temperature(fn, temperature);
  const Index tokens = logits.rows(), C = logits.cols();
  const auto rows_text = [](Index r) { return std::to_string(r); };
  if (labels.size() != tokens || targets.rows() != tokens || targets.cols() != C ||
      weights.gold.size() != tokens || weights.soft.size() != tokens)
    throw Error(std::string(fn) + ": logits has " + rows_text(tokens) + " rows and " + rows_text(C) +
                " classes; labels, targets, gold and soft weights must match (they have " +
                rows_text(labels.size()) + ", " + rows_text(targets.rows()) + " x " + rows_text(targets.cols()) +
                ", " + rows_text(weights.gold.size()) + ", " + rows_text(weights.soft.size()) + ")");
  const Index n = tokens_per_sequence(fn, "logits", tokens, lengths);
  const auto gold_of = [&](Index t) { return labels[t] == ignore_label ? 0.0 : weights.gold[t]; };
  LossResult r;
  for (Index t = 0; t < tokens; ++t) {
    if (!is_real_position(lengths, n, t)) continue;
    const double g = gold_of(t), s = weights.soft[t];
    if (!(g >= 0) || !(s >= 0) || !std::isfinite(g) || !std::isfinite(s))
      throw Error(std::string(fn) + ": row " + rows_text(t) + "'s weights must be finite and >= 0, got gold " +
                  std::to_string(g) + ", soft " + std::to_string(s));
    if (g > 0 && (labels[t] < 0 || labels[t] >= C))
      throw Error(std::string(fn) + ": labels[" + rows_text(t) + "] = " + std::to_string(labels[t]) +
                  " is outside [0, " + rows_text(C) + ") and is not the ignore label " + std::to_string(ignore_label));
    if (s > 0) {
      double total = 0;
      for (Index c = 0; c < C; ++c) {
        const double q = static_cast<double>(targets(t, c));
        if (!(q >= 0) || !std::isfinite(q))
          throw Error(std::string(fn) + ": targets(" + rows_text(t) + ", " + rows_text(c) + ") = " +
                      std::to_string(q) + " is not a probability");
        total += q;
      }
      if (std::abs(total - 1.0) > 1e-3)
        throw Error(std::string(fn) + ": targets row " + rows_text(t) + " sums to " + std::to_string(total) +
                    ", not 1");
    }
    if (g > 0 || s > 0) ++r.count;
  }
  r.normaliser = resolve_normaliser(fn, normaliser, static_cast<double>(r.count));
  const double inv_norm = r.normaliser > 0 ? 1.0 / r.normaliser : 0.0;
  const double T = temperature, inv_t = 1.0 / T;
  if (dlogits) dlogits->setZero(tokens, C);
  for (Index t = 0; t < tokens; ++t) {
    if (!is_real_position(lengths, n, t)) continue;
    const double g = gold_of(t), s = weights.soft[t];
    if (!(g > 0 || s > 0)) continue;
    const auto row = logits.row(t);
    double m1 = 0, mT = 0;
    const double lse1 = nn::detail::log_sum_exp(row, 1.0, m1);
    const double lseT = nn::detail::log_sum_exp(row, inv_t, mT);
    if (g > 0) r.sum += g * (lse1 - static_cast<double>(row[labels[t]]));
    if (s > 0) {
      double kl = 0;  // sum q (log q - log p_T), 0 log 0 = 0
      for (Index c = 0; c < C; ++c) {
        const double q = static_cast<double>(targets(t, c));
        if (q > 0) kl += q * (std::log(q) - (static_cast<double>(row[c]) * inv_t - lseT));
      }
      r.sum += s * T * T * kl;
    }
    if (!dlogits) continue;
    auto d = dlogits->row(t);
    for (Index c = 0; c < C; ++c) {
      const double z = static_cast<double>(row[c]);
      double grad = 0;
      if (g > 0) grad += g * std::exp(z - lse1);
      if (s > 0) grad += s * T * (std::exp(z * inv_t - lseT) - static_cast<double>(targets(t, c)));
      d[c] = static_cast<Scalar>(grad * inv_norm);
    }
    if (g > 0) d[labels[t]] -= static_cast<Scalar>(g * inv_norm);
  }
  r.loss = r.normaliser > 0 ? r.sum / r.normaliser : 0.0;
  return r;
}

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_DISTILLATION_HPP
