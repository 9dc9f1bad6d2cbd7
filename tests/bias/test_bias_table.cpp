// The syntax-bias table: initialisers, gather, its adjoint (checked against a
// brute-force sum and central differences), frozen parts, errors.
#include <catch2/catch.hpp>

#include <synattn/bias/bias_table.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "support/gradcheck.hpp"

using synattn::BiasTable;
using synattn::BiasTableOptions;
using synattn::Bucketing;
using synattn::RowMajorMatrix;
using synattn::TableInit;
using MatrixD = RowMajorMatrix<double>;
using BucketBlock = RowMajorMatrix<std::int8_t>;

namespace {

BucketBlock random_block(int rows, int cols, int nb, std::mt19937& rng) {
  BucketBlock b(rows, cols);
  for (Eigen::Index i = 0; i < b.size(); ++i)
    b.data()[i] = static_cast<std::int8_t>(static_cast<int>(rng() % (nb + 1)) - 1);
  return b;
}

}  // namespace

TEST_CASE("a default table is zero, shared, with scale 1: plain attention", "[bias][table]") {
  BiasTable<double> t;
  CHECK(t.table().rows() == 1);
  CHECK(t.table().cols() == 11);  // linear M = 10
  CHECK(t.table().isZero(0));
  CHECK(t.scale() == 1.0);
  BiasTableOptions o;
  o.per_head = true;
  o.bucketing = Bucketing::directed(2);
  BiasTable<float> per_head(o, 4);
  CHECK(per_head.table().rows() == 4);
  CHECK(per_head.table().cols() == 9);
  CHECK(per_head.parameters().infos()[0].name == "table");
  CHECK(per_head.parameters().infos()[1].name == "scale");
}

TEST_CASE("decay initialisers give the fixed decay functions of tree distance", "[bias][table][init]") {
  BiasTableOptions o;
  o.init = TableInit::LinearDecay;
  SECTION("linear buckets: T[b] = -b, the special bucket 0") {
    o.bucketing = Bucketing::linear(5, true);
    BiasTable<double> t(o);
    CHECK(t.table() == (MatrixD(1, 7) << 0, -1, -2, -3, -4, -5, 0).finished());
  }
  SECTION("slope and exponential decay") {
    o.bucketing = Bucketing::linear(3);
    o.decay = 0.5;
    CHECK(BiasTable<double>(o).table() == (MatrixD(1, 4) << 0, -0.5, -1, -1.5).finished());
    o.init = TableInit::ExponentialDecay;
    const MatrixD e = BiasTable<double>(o).table();
    for (int b = 0; b < 4; ++b) CHECK(e(0, b) == Approx(std::exp(-0.5 * b)).epsilon(1e-15));
  }
  SECTION("log buckets: each bucket's smallest distance") {
    o.bucketing = Bucketing::log(8, 32, 4);
    BiasTable<double> t(o);
    for (int b = 0; b < 8; ++b) {
      const int d = static_cast<int>(-t.table()(0, b));
      INFO("bucket " << b << " stands for distance " << d);
      CHECK(o.bucketing.bucket(d) == b);
      if (d > 0) CHECK(o.bucketing.bucket(d - 1) < b);
    }
  }
  SECTION("directed buckets: minus (up + down)") {
    o.bucketing = Bucketing::directed(2);
    BiasTable<double> t(o, 3);
    CHECK(t.table() == (MatrixD(1, 9) << 0, -1, -2, -1, -2, -3, -2, -3, -4).finished());
  }
  SECTION("per-head tables start with the same row in every head") {
    o.per_head = true;
    o.bucketing = Bucketing::linear(4);
    BiasTable<float> t(o, 3);
    for (int h = 0; h < 3; ++h) CHECK(t.table().row(h) == t.table().row(0));
  }
}

TEST_CASE("gather reads s * T[bucket] and masks bucket -1", "[bias][table][gather]") {
  BiasTableOptions o;
  o.bucketing = Bucketing::linear(3);
  o.per_head = true;
  BiasTable<double> t(o, 2);
  t.table() << 1, 2, 3, 4, -1, -2, -3, -4;
  t.set_scale(0.5);
  BucketBlock b(2, 3);
  b << 0, 3, -1, 2, 1, 0;
  MatrixD out(2, 3);
  t.gather(1, b, out);
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(out == (MatrixD(2, 3) << -0.5, -2.0, -inf, -1.5, -1.0, -0.5).finished());
  t.gather(0, b, out);
  CHECK(out(0, 1) == 2.0);
}

TEST_CASE("the gather's adjoint sums score gradients per bucket, times s, and gives dL/ds", "[bias][table][gradient]") {
  const bool per_head = GENERATE(false, true);
  BiasTableOptions o;
  o.bucketing = Bucketing::log(6, 20, 3, true);  // 7 buckets with the special one
  o.per_head = per_head;
  BiasTable<double> t(o, 2);
  std::mt19937 rng(8);
  std::normal_distribution<double> g(0.0, 1.0);
  for (Eigen::Index i = 0; i < t.table().size(); ++i) t.table().data()[i] = g(rng);
  t.set_scale(0.7);
  const int head = 1;
  const BucketBlock b = random_block(5, 6, 7, rng);
  MatrixD G(5, 6);
  for (Eigen::Index i = 0; i < G.size(); ++i) G.data()[i] = g(rng);
  t.accumulate_gradient(head, b, G);

  // Brute force.
  const Eigen::Index row = per_head ? head : 0;
  MatrixD want = MatrixD::Zero(t.table().rows(), 7);
  double want_ds = 0;
  for (Eigen::Index i = 0; i < 5; ++i)
    for (Eigen::Index j = 0; j < 6; ++j)
      if (b(i, j) >= 0) {
        want(row, b(i, j)) += 0.7 * G(i, j);
        want_ds += G(i, j) * t.table()(row, b(i, j));
      }
  CHECK((t.table_gradient() - want).cwiseAbs().maxCoeff() <= 1e-14);
  CHECK(t.scale_gradient() == Approx(want_ds).epsilon(1e-13));

  // Central differences of L = sum over unmasked pairs of G * bias.
  auto loss = [&] {
    MatrixD bias(5, 6);
    t.gather(head, b, bias);
    double l = 0;
    for (Eigen::Index i = 0; i < bias.size(); ++i)
      if (std::isfinite(bias.data()[i])) l += bias.data()[i] * G.data()[i];
    return l;
  };
  const auto table_check = synattn_test::check_gradient("table", t.table().row(row), t.table_gradient().row(row), loss);
  INFO(table_check.describe());
  CHECK(table_check.passes(1e-8, 1e-10));
  const double eps = 1e-6, s = t.scale();
  t.set_scale(s + eps);
  const double up = loss();
  t.set_scale(s - eps);
  const double down = loss();
  t.set_scale(s);
  CHECK(t.scale_gradient() == Approx((up - down) / (2 * eps)).margin(1e-8));

  // Gradients accumulate until zero_grad.
  t.accumulate_gradient(head, b, G);
  CHECK((t.table_gradient() - 2 * want).cwiseAbs().maxCoeff() <= 1e-13);
  t.zero_grad();
  CHECK(t.table_gradient().isZero(0));
  CHECK(t.scale_gradient() == 0.0);
}

TEST_CASE("a frozen table or scale takes no gradient", "[bias][table][gradient]") {
  BiasTableOptions o;
  o.bucketing = Bucketing::linear(3);
  o.init = TableInit::LinearDecay;
  const bool freeze_table = GENERATE(false, true);
  o.table_learnable = !freeze_table;
  o.scale_learnable = freeze_table;
  BiasTable<double> t(o);
  const BucketBlock b = (BucketBlock(1, 4) << 0, 1, 2, 3).finished();
  t.accumulate_gradient(0, b, MatrixD::Ones(1, 4));
  CHECK(t.table_gradient().isZero(0) == freeze_table);
  CHECK((t.scale_gradient() == 0.0) == !freeze_table);
  if (freeze_table) CHECK(t.scale_gradient() == -6.0);  // sum of T = 0 - 1 - 2 - 3
  CHECK(t.parameters().infos()[0].trainable == !freeze_table);
}

TEST_CASE("bad table input raises synattn::Error with the index", "[bias][table][errors]") {
  BiasTableOptions o;
  o.bucketing = Bucketing::linear(3);
  BiasTable<double> t(o, 2);
  MatrixD out(2, 2);
  BucketBlock b(2, 2);
  b << 0, 1, 4, 2;
  CHECK_THROWS_WITH(t.gather(0, b, out), Catch::Contains("buckets(1, 0) = 4 is out of range [-1, 4)"));
  b(1, 0) = -3;
  CHECK_THROWS_AS(t.accumulate_gradient(0, b, out), synattn::Error);
  b(1, 0) = 0;
  CHECK_THROWS_WITH(t.gather(2, b, out), Catch::Contains("head 2 out of range [0, 2)"));
  MatrixD wrong(3, 2);
  CHECK_THROWS_WITH(t.gather(0, b, wrong), Catch::Contains("bias is 3x2 but buckets are 2x2"));
  o.decay = -1;
  CHECK_THROWS_WITH(BiasTable<double>(o), Catch::Contains("decay must be finite and >= 0"));
  o.decay = 1;
  o.scale = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(BiasTable<double>(o), synattn::Error);
  CHECK_THROWS_WITH(BiasTable<double>(BiasTableOptions{}, 0), Catch::Contains("heads must be >= 1"));
}

TEST_CASE("a table copies by value", "[bias][table]") {
  BiasTable<float> a;
  BiasTable<float> b = a;
  b.table()(0, 2) = 5.0f;
  b.set_scale(2.0f);
  CHECK(a.table()(0, 2) == 0.0f);
  CHECK(a.scale() == 1.0f);
  CHECK(b.ref().table()(0, 2) == 5.0f);
}
