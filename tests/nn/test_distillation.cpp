// Distillation loss (nn/distillation.hpp): the gradient by central
// differences in double over mixed gold and soft rows at several
// temperatures, agreement with cross_entropy when the soft weight is 0, the
// soft term's minimum at the teacher's own logits, soft targets as
// distributions, and every refusal.
#include <catch2/catch.hpp>

#include <synattn/nn/distillation.hpp>
#include <synattn/nn/token_classifier.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "support/gradcheck.hpp"

using namespace synattn;
using namespace synattn::nn;
using synattn_test::check_gradient;
using synattn_test::MatrixD;

namespace {

MatrixD random_matrix(Index r, Index c, unsigned seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  MatrixD m(r, c);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = dist(gen);
  return m;
}

// Two sequences of n = 4 (lengths 4 and 3: row 7 is padding), C = 5.
struct Batch {
  std::vector<int> lengths{4, 3};
  IdVector labels;
  DistillationWeights w;
  Batch() : labels(8) {
    labels << 2, 0, kIgnoreLabel, 4, 1, kIgnoreLabel, 3, 0;
    w.gold.resize(8);
    w.soft.resize(8);
    // Rows 0-3: labelled (gold 0.3, soft 0.7; row 2's label is ignored, so
    // only its soft term counts); rows 4-6: a transfer sentence (soft only,
    // its labels hidden); row 7: padding, whatever its weights.
    w.gold << 0.3, 0.3, 0.3, 0.3, 0, 0, 0, 1;
    w.soft << 0.7, 0.7, 0.7, 0.7, 1, 1, 1, 1;
  }
};

}  // namespace

TEST_CASE("distillation_loss: gradient by central differences in double, mixed gold and soft rows", "[nn][distill]") {
  Batch b;
  const double temperature = GENERATE(1.0, 2.0, 4.5);
  MatrixD logits = random_matrix(8, 5, 7, 2.0);
  const MatrixD teacher = random_matrix(8, 5, 8, 3.0);
  const MatrixD q = soft_targets<double>(teacher, b.lengths, temperature);
  MatrixD d;
  const LossResult r = distillation_loss<double>(logits, b.labels, q, b.w, b.lengths, temperature, 0, &d);
  CHECK(r.count == 7);  // every real row has a weight
  CHECK(d.row(7).isZero(0));
  const auto loss = [&] {
    return distillation_loss<double>(logits, b.labels, q, b.w, b.lengths, temperature, 0, nullptr).loss;
  };
  const auto check = check_gradient("logits", logits, d, loss);
  INFO(check.describe());
  CHECK(check.passes(1e-7, 1e-10));
}

TEST_CASE("distillation_loss: at soft weight 0 it is cross_entropy, value and gradient", "[nn][distill]") {
  Batch b;
  b.w.gold.setOnes();
  b.w.soft.setZero();
  const MatrixD logits = random_matrix(8, 5, 11, 1.5);
  const MatrixD q = MatrixD::Zero(8, 5);  // never read at soft weight 0
  MatrixD d, ce_d;
  const LossResult r = distillation_loss<double>(logits, b.labels, q, b.w, b.lengths, 2.0, 0, &d);
  const LossResult ce = cross_entropy<double>(logits, b.labels, b.lengths, 0, &ce_d);
  CHECK(r.count == ce.count);
  CHECK(r.loss == Approx(ce.loss).epsilon(1e-12));
  CHECK((d - ce_d).cwiseAbs().maxCoeff() < 1e-14);
  // The same in float against float cross_entropy.
  const RowMajorMatrix<float> lf = logits.cast<float>();
  RowMajorMatrix<float> df, ce_df;
  const RowMajorMatrix<float> qf = q.cast<float>();
  distillation_loss<float>(lf, b.labels, qf, b.w, b.lengths, 2.0, 0, &df);
  cross_entropy<float>(lf, b.labels, b.lengths, 0, &ce_df);
  CHECK((df - ce_df).cwiseAbs().maxCoeff() < 1e-6f);
}

TEST_CASE("distillation_loss: the soft term is 0 with zero gradient at the teacher's own logits", "[nn][distill]") {
  Batch b;
  b.w.gold.setZero();
  b.w.soft.setOnes();
  const double temperature = 3.0;
  const MatrixD teacher = random_matrix(8, 5, 21, 2.0);
  const MatrixD q = soft_targets<double>(teacher, b.lengths, temperature);
  MatrixD d;
  const LossResult same = distillation_loss<double>(teacher, b.labels, q, b.w, b.lengths, temperature, 0, &d);
  CHECK(std::abs(same.loss) < 1e-12);
  CHECK(d.cwiseAbs().maxCoeff() < 1e-12);
  // Any other logits score higher (KL > 0), and shifting a row by a
  // constant changes nothing (softmax is shift-invariant).
  const MatrixD other = random_matrix(8, 5, 22, 2.0);
  CHECK(distillation_loss<double>(other, b.labels, q, b.w, b.lengths, temperature, 0, nullptr).loss > 1e-3);
  MatrixD shifted = teacher;
  shifted.row(1).array() += 40.0;
  CHECK(std::abs(distillation_loss<double>(shifted, b.labels, q, b.w, b.lengths, temperature, 0, nullptr).loss) <
        1e-12);
}

TEST_CASE("soft_targets: each real row a distribution at the temperature, padding zero", "[nn][distill]") {
  const std::vector<int> lengths{4, 3};
  MatrixD logits = random_matrix(8, 5, 31, 2.0);
  logits(0, 0) = 700;  // exp(700) overflows double: the row's max is subtracted first
  const MatrixD q1 = soft_targets<double>(logits, lengths, 1.0);
  const MatrixD q4 = soft_targets<double>(logits, lengths, 4.0);
  for (Index t = 0; t < 7; ++t) {
    CHECK(q1.row(t).sum() == Approx(1.0).epsilon(1e-12));
    CHECK(q4.row(t).sum() == Approx(1.0).epsilon(1e-12));
    // A higher temperature flattens: the largest probability does not grow.
    CHECK(q4.row(t).maxCoeff() <= q1.row(t).maxCoeff() + 1e-12);
  }
  CHECK(q1(0, 0) == Approx(1.0));
  CHECK(q1.row(7).isZero(0));
  CHECK(q1(1, 2) == Approx(std::exp(logits(1, 2)) / logits.row(1).array().exp().sum()).epsilon(1e-12));
}

TEST_CASE("distillation_loss and soft_targets refuse bad input by name", "[nn][distill]") {
  Batch b;
  const MatrixD logits = random_matrix(8, 5, 41, 1.0);
  const MatrixD q = soft_targets<double>(random_matrix(8, 5, 42, 1.0), b.lengths, 2.0);
  const auto loss = [&](const MatrixD& targets, const DistillationWeights& w, double temperature) {
    return distillation_loss<double>(logits, b.labels, targets, w, b.lengths, temperature, 0, nullptr);
  };
  CHECK_THROWS_WITH(loss(q, b.w, 0.0), Catch::Contains("temperature must be a positive finite number"));
  CHECK_THROWS_WITH(loss(q, b.w, NAN), Catch::Contains("temperature"));
  CHECK_THROWS_WITH(soft_targets<double>(logits, b.lengths, -1.0), Catch::Contains("temperature"));
  CHECK_THROWS_WITH(loss(q.topRows(6), b.w, 2.0), Catch::Contains("must match"));
  DistillationWeights negative = b.w;
  negative.soft[4] = -0.5;
  CHECK_THROWS_WITH(loss(q, negative, 2.0), Catch::Contains("row 4's weights must be finite and >= 0"));
  MatrixD not_a_distribution = q;
  not_a_distribution(5, 1) += 0.5;
  CHECK_THROWS_WITH(loss(not_a_distribution, b.w, 2.0), Catch::Contains("targets row 5 sums to"));
  not_a_distribution = q;
  not_a_distribution(6, 0) = NAN;
  CHECK_THROWS_WITH(loss(not_a_distribution, b.w, 2.0), Catch::Contains("is not a probability"));
  IdVector bad_labels = b.labels;
  bad_labels[0] = 9;
  CHECK_THROWS_WITH(distillation_loss<double>(logits, bad_labels, q, b.w, b.lengths, 2.0, 0, nullptr),
                    Catch::Contains("labels[0] = 9 is outside [0, 5)"));
  MatrixD inf_logits = logits;
  inf_logits(3, 2) = INFINITY;
  CHECK_THROWS_WITH(soft_targets<double>(inf_logits, b.lengths, 2.0),
                    Catch::Contains("the teacher's logits row 3 is not finite"));
  // A padding row's values are never read.
  MatrixD padded = logits;
  padded(7, 0) = NAN;
  CHECK_NOTHROW(soft_targets<double>(padded, b.lengths, 2.0));
}
