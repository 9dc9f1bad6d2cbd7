// The basic nn layers: finite-difference gradient checks in double (Linear,
// Embedding, LayerNorm, FeedForward with ReLU and GELU, Dropout with a fixed
// stream), forward values against PyTorch (LayerNorm, GELU, cross-entropy),
// positional encodings against the formula, dropout statistics and eval mode,
// cross-entropy's ignored rows, input validation.
#include <catch2/catch.hpp>

#include <synattn/nn/embedding.hpp>
#include <synattn/nn/feed_forward.hpp>
#include <synattn/nn/layer_norm.hpp>
#include <synattn/nn/linear.hpp>
#include <synattn/nn/token_classifier.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/gradcheck.hpp"

using namespace synattn;
using namespace synattn::nn;
using synattn_test::check_gradient;
using synattn_test::MatrixD;

namespace {

MatrixD random_matrix(Index r, Index c, unsigned seed, double scale = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  MatrixD m(r, c);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = dist(gen);
  return m;
}

// L = sum(y .* R): dL/dy = R.
double weighted(const MatrixD& y, const MatrixD& R) { return y.cwiseProduct(R).sum(); }

constexpr double kRel = 1e-6, kAbs = 1e-9;

}  // namespace

TEST_CASE("Linear: forward is x W^T + b and float agrees with double", "[nn][linear]") {
  Linear<double> lin(5, 3, RandomStream(7));
  const MatrixD x = random_matrix(4, 5, 1);
  MatrixD y(4, 3);
  LinearCache<double> cache;
  lin.forward(x, cache, y);
  const MatrixD want = (x * lin.weight().transpose()).rowwise() + lin.bias().row(0);
  CHECK((y - want).cwiseAbs().maxCoeff() < 1e-12);
  // PyTorch's bound 1/sqrt(in)
  CHECK(lin.weight().cwiseAbs().maxCoeff() <= 1.0 / std::sqrt(5.0));
  CHECK(lin.weight().cwiseAbs().maxCoeff() > 0.2);
  Linear<float> linf(5, 3, RandomStream(7));
  CHECK((linf.weight().cast<double>() - lin.weight()).cwiseAbs().maxCoeff() < 1e-7);
  MatrixD bad(4, 4);
  CHECK_THROWS_AS(lin.forward(bad, cache, y), Error);
}

TEST_CASE("Linear: gradient check", "[nn][linear][gradcheck]") {
  Linear<double> lin(5, 3, RandomStream(3));
  MatrixD x = random_matrix(7, 5, 2);
  const MatrixD R = random_matrix(7, 3, 4);
  MatrixD y(7, 3), dx(7, 5);
  const auto loss = [&] {
    LinearCache<double> c;
    lin.forward(x, c, y);
    return weighted(y, R);
  };
  LinearCache<double> cache;
  lin.forward(x, cache, y);
  lin.zero_grad();
  lin.backward(cache, R, dx);
  const MatrixD dW = lin.weight_gradient(), db = lin.bias_gradient();
  for (const auto& r : {check_gradient("W", lin.weight(), dW, loss), check_gradient("b", lin.bias(), db, loss),
                        check_gradient("x", x, dx, loss)}) {
    INFO(r.describe());
    CHECK(r.passes(kRel, kAbs));
  }
  // backward adds into the gradients (here without the input gradient)
  lin.forward(x, cache, y);
  lin.backward(cache, R);
  CHECK((MatrixD(lin.weight_gradient()) - 2 * dW).cwiseAbs().maxCoeff() < 1e-12);
}

// dx aliasing dy used to be a heap-use-after-free when in != out (resizing
// dx freed the buffer dy viewed) and wrong rows when in == out. dx is now
// caller-sized: it can be dy itself (in == out) or overlap dy's storage.
TEST_CASE("Linear: backward with dx aliasing dy gives the separate result", "[nn][linear]") {
  for (const int out : {5, 3, 8}) {  // out == in, out < in, out > in
    INFO("in 5, out " << out);
    Linear<double> lin(5, out, RandomStream(11));
    const MatrixD x = random_matrix(6, 5, 12);
    const MatrixD dy = random_matrix(6, out, 13);
    MatrixD y(6, out), want(6, 5);
    LinearCache<double> cache;
    lin.forward(x, cache, y);
    lin.zero_grad();
    lin.backward(cache, dy, want);
    const MatrixD dW = lin.weight_gradient();
    // dx and dy view one buffer: its first rows' columns (dy) and its leading columns (dx).
    MatrixD shared = MatrixD::Zero(6, std::max(5, out));
    shared.leftCols(out) = dy;
    lin.forward(x, cache, y);
    lin.zero_grad();
    lin.backward(cache, shared.leftCols(out), shared.leftCols(5));
    CHECK(MatrixD(shared.leftCols(5)) == want);
    CHECK(MatrixD(lin.weight_gradient()) == dW);
  }
}

TEST_CASE("Linear: infer equals forward bit for bit; backward refuses an infer() workspace", "[nn][linear][inference]") {
  Linear<double> lin(5, 3, RandomStream(3));
  const MatrixD x = random_matrix(7, 5, 2);
  MatrixD y(7, 3), z(7, 3), dx(7, 5);
  LinearCache<double> cache, workspace;
  lin.forward(x, cache, y);
  lin.infer(x, workspace, z);
  CHECK(y == z);
  CHECK(workspace.input.size() == 0);  // keeps nothing
  CHECK_THROWS_WITH(lin.backward(workspace, y, dx), Catch::Contains("holds no forward pass"));
  lin.infer(x, cache, z);  // a cache used for infer() no longer serves a backward
  CHECK_THROWS_WITH(lin.backward(cache, y, dx), Catch::Contains("holds no forward pass"));
  Linear<double> twin(5, 3, RandomStream(3));
  lin.forward(x, cache, y);
  CHECK_THROWS_WITH(twin.backward(cache, y, dx), Catch::Contains("filled by another layer"));
}

TEST_CASE("Embedding: rows, padding row zero, unknown ids throw naming the position", "[nn][embedding]") {
  Embedding<double> emb(10, 4, RandomStream(5));
  CHECK(emb.weight().row(0).isZero());
  CHECK(!emb.weight().row(1).isZero());
  // N(0, 1) initialisation: a large table has mean ~0 and variance ~1
  Embedding<double> big(2000, 50, RandomStream(9));
  const double mean = big.weight().mean();
  const double var = big.weight().array().square().mean() - mean * mean;
  CHECK(std::abs(mean) < 0.01);
  CHECK(std::abs(var - 1.0) < 0.02);
  IdVector ids(5);
  ids << 3, 0, 1, 9, 3;
  MatrixD out(5, 4);
  EmbeddingCache cache;
  emb.forward(ids, cache, out);
  CHECK(out.row(0) == emb.weight().row(3));
  CHECK(out.row(1).isZero());
  CHECK(out.row(3) == emb.weight().row(9));
  ids[2] = 10;
  try {
    emb.forward(ids, cache, out);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("ids[2] = 10") != std::string::npos);
  }
  ids[2] = -1;
  CHECK_THROWS_AS(emb.forward(ids, cache, out), Error);
}

TEST_CASE("Embedding: gradient check; the padding row gets no gradient", "[nn][embedding][gradcheck]") {
  Embedding<double> emb(6, 3, RandomStream(5));
  IdVector ids(7);
  ids << 2, 0, 5, 2, 1, 0, 3;  // repeated id 2, padding twice
  const MatrixD R = random_matrix(7, 3, 8);
  MatrixD out(7, 3);
  const auto loss = [&] {
    EmbeddingCache c;
    emb.forward(ids, c, out);
    return weighted(out, R);
  };
  EmbeddingCache cache;
  emb.forward(ids, cache, out);
  emb.backward(cache, R);
  const MatrixD g = emb.weight_gradient();
  CHECK(g.row(0).isZero());
  CHECK(g.row(4).isZero());
  // row 0 is excluded from the numeric check: its value is used but it is
  // not trained (PyTorch's padding_idx semantics)
  MatrixD analytic = g;
  const auto r = check_gradient("weight", emb.weight().bottomRows(5), analytic.bottomRows(5), loss);
  INFO(r.describe());
  CHECK(r.passes(kRel, kAbs));
}

TEST_CASE("SinusoidalPositionalEncoding: Vaswani et al.'s formula, beyond the table too", "[nn][positional]") {
  SinusoidalPositionalEncoding<double> pe(6, 3);
  MatrixD x = MatrixD::Zero(2 * 5, 6);  // batch 2, n 5 > max_length 3
  pe.add_to(x, 5);
  for (int pos = 0; pos < 5; ++pos)
    for (int i = 0; i < 3; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / 6.0);
      CHECK(x(pos, 2 * i) == Approx(std::sin(angle)).margin(1e-15));
      CHECK(x(pos, 2 * i + 1) == Approx(std::cos(angle)).margin(1e-15));
      CHECK(x(5 + pos, 2 * i) == x(pos, 2 * i));
    }
  MatrixD bad(7, 6);
  CHECK_THROWS_AS(pe.add_to(bad, 5), Error);
}

TEST_CASE("LayerNorm: forward matches PyTorch", "[nn][layernorm]") {
  LayerNorm<double> ln(4);
  ln.weight() << 1, 0.5, 2, -1;
  ln.bias() << 0, 0.1, -0.2, 0.3;
  MatrixD x(2, 4);
  x << 1, 2, 3, 4, 0.5, -1, 2, 0;
  MatrixD y(2, 4);
  LayerNormCache<double> cache;
  ln.forward(x, cache, y);
  // torch.nn.functional.layer_norm(x, (4,), weight, bias, 1e-5) on float64
  // tensors (/usr/bin/python3 + torch)
  MatrixD want(2, 4);
  want << -1.341635419968927, -0.12360590332815455, 0.6944236133126178, -1.0416354199689268, 0.11546956116884854,
      -0.5350825864286669, 2.8022085903900615, 0.6464086835065456;
  CHECK((y - want).cwiseAbs().maxCoeff() < 1e-12);
}

TEST_CASE("LayerNorm: gradient check", "[nn][layernorm][gradcheck]") {
  LayerNorm<double> ln(5);
  ln.weight() = random_matrix(1, 5, 11);
  ln.bias() = random_matrix(1, 5, 12);
  MatrixD x = random_matrix(4, 5, 13, 2.0);
  const MatrixD R = random_matrix(4, 5, 14);
  MatrixD y(4, 5), dx(4, 5);
  LayerNormCache<double> cache;
  const auto loss = [&] {
    LayerNormCache<double> c;
    ln.forward(x, c, y);
    return weighted(y, R);
  };
  ln.forward(x, cache, y);
  ln.zero_grad();
  ln.backward(cache, R, dx);
  const MatrixD dw = ln.parameter_store().gradient(0), db = ln.parameter_store().gradient(1);
  for (const auto& r : {check_gradient("weight", ln.weight(), dw, loss), check_gradient("bias", ln.bias(), db, loss),
                        check_gradient("x", x, dx, loss)}) {
    INFO(r.describe());
    CHECK(r.passes(kRel, kAbs));
  }
}

TEST_CASE("GELU: exact erf form matches PyTorch; derivative by differences", "[nn][gelu]") {
  const double xs[] = {-2.0, -0.5, 0.0, 0.7, 3.0};
  // torch.nn.functional.gelu (default approximate='none') in float64
  const double want[] = {-0.04550026389635842, -0.15426876936299344, 0.0, 0.5306254434438489, 2.99595030590511};
  for (int i = 0; i < 5; ++i) {
    CHECK(gelu(xs[i]) == Approx(want[i]).epsilon(1e-14).margin(1e-16));
    const double h = 1e-6;
    CHECK(gelu_derivative(xs[i]) == Approx((gelu(xs[i] + h) - gelu(xs[i] - h)) / (2 * h)).epsilon(1e-8));
  }
}

TEST_CASE("FeedForward: gradient checks with ReLU and GELU, with and without dropout", "[nn][ffn][gradcheck]") {
  for (const Activation act : {Activation::ReLU, Activation::GELU})
    for (const bool with_dropout : {false, true}) {
      FeedForward<double> ffn(4, 6, act, 0.3, RandomStream(21));
      MatrixD x = random_matrix(5, 4, 22);
      const MatrixD R = random_matrix(5, 4, 23);
      const RandomStream stream(99);
      const RandomStream* s = with_dropout ? &stream : nullptr;
      MatrixD y(5, 4), dx(5, 4);
      const auto loss = [&] {
        FeedForwardCache<double> c;
        ffn.forward({x, 5}, c, y, s);
        return weighted(y, R);
      };
      FeedForwardCache<double> cache;
      ffn.forward({x, 5}, cache, y, s);
      ffn.zero_grad();
      ffn.backward(cache, R, dx);
      if (with_dropout) {
        // some hidden units are dropped and the rest scaled by 1/(1-p)
        const Index zeros = (cache.hidden().array() == 0.0).count();
        CHECK(zeros > 0);
      }
      const MatrixD dW1 = ffn.linear1().weight_gradient(), db1 = ffn.linear1().bias_gradient();
      const MatrixD dW2 = ffn.linear2().weight_gradient(), db2 = ffn.linear2().bias_gradient();
      INFO(activation_name(act) << (with_dropout ? " with dropout" : ""));
      for (const auto& r :
           {check_gradient("W1", ffn.linear1().weight(), dW1, loss), check_gradient("b1", ffn.linear1().bias(), db1, loss),
            check_gradient("W2", ffn.linear2().weight(), dW2, loss), check_gradient("b2", ffn.linear2().bias(), db2, loss),
            check_gradient("x", x, dx, loss)}) {
        INFO(r.describe());
        CHECK(r.passes(kRel, kAbs));
      }
    }
}

TEST_CASE("Dropout: keeps ~1-p scaled by 1/(1-p), same mask when redrawn, identity at p = 0", "[nn][dropout]") {
  const double p = 0.1;
  MatrixD x = MatrixD::Ones(200, 500);
  MatrixD y = x;
  const RandomStream s = RandomStream(42).derive(3);
  apply_dropout(s, p, 100, y);
  const double kept = static_cast<double>((y.array() != 0.0).count()) / static_cast<double>(y.size());
  CHECK(kept == Approx(1 - p).margin(0.005));  // 100000 draws: sd 0.001
  CHECK(((y.array() == 0.0) || (y.array() == 1.0 / (1 - p))).all());
  CHECK(y.mean() == Approx(1.0).margin(0.01));  // inverted dropout keeps the expectation
  MatrixD z = x;
  apply_dropout(s, p, 100, z);
  CHECK(z == y);  // the mask is a function of (stream, index)
  MatrixD w = x;
  apply_dropout(RandomStream(42).derive(4), p, 100, w);
  CHECK(w != y);
  MatrixD v = x;
  apply_dropout(s, 0.0, 100, v);
  CHECK(v == x);
  CHECK_THROWS_AS(apply_dropout(s, 1.0, 100, v), Error);
}

TEST_CASE("Dropout: the vectorised row path equals the element-wise definition; dropped inf and NaN become +0",
          "[nn][dropout]") {
  const double p = 0.3;
  const std::uint32_t threshold = drop_threshold(p);
  const RandomStream s = RandomStream(5).derive(2);
  {
    // float and double rows of odd widths (vector remainders), 3 sequences of 4 rows.
    RowMajorMatrix<float> xf = RowMajorMatrix<float>::Random(12, 37);
    RowMajorMatrix<double> xd = RowMajorMatrix<double>::Random(12, 21);
    xf.row(1).setConstant(-std::numeric_limits<float>::infinity());  // 37 draws: some dropped
    xf.row(6).setConstant(std::numeric_limits<float>::quiet_NaN());
    xd(7, 20) = -std::numeric_limits<double>::infinity();
    const RowMajorMatrix<float> f0 = xf;
    const RowMajorMatrix<double> d0 = xd;
    // The definition, element by element; and a column-major copy, which
    // takes the generic (non-vectorised) path.
    Eigen::MatrixXf col = f0;
    apply_dropout(s, p, 4, xf);
    apply_dropout(s, p, 4, col);
    apply_dropout(s, p, 4, xd);
    for (Index r = 0; r < 12; ++r) {
      const RandomStream seq = s.sequence(static_cast<std::uint64_t>(r / 4));
      for (Index c = 0; c < xf.cols(); ++c) {
        const bool kept = seq.keep(static_cast<std::uint64_t>((r % 4) * xf.cols() + c), threshold);
        const float want = kept ? f0(r, c) * static_cast<float>(1 / (1 - p)) : 0.0f;
        if (std::isnan(want)) {
          CHECK(std::isnan(xf(r, c)));
          CHECK(std::isnan(col(r, c)));
        } else {
          CHECK(xf(r, c) == want);
          CHECK(col(r, c) == want);
          if (!kept) CHECK_FALSE(std::signbit(xf(r, c)));  // +0, whatever was dropped
        }
      }
      for (Index c = 0; c < xd.cols(); ++c) {
        const bool kept = seq.keep(static_cast<std::uint64_t>((r % 4) * xd.cols() + c), threshold);
        CHECK(xd(r, c) == (kept ? d0(r, c) * (1 / (1 - p)) : 0.0));
      }
    }
    CHECK((xf.row(1).array() == 0.0f).count() > 0);  // dropped infinities are 0, not NaN
    CHECK((xf.row(6).array() == 0.0f).count() > 0);
  }
}

TEST_CASE("Dropout: gradient check with a fixed stream", "[nn][dropout][gradcheck]") {
  MatrixD x = random_matrix(6, 5, 31);
  const MatrixD R = random_matrix(6, 5, 32);
  const RandomStream s(7);
  const auto loss = [&] {
    MatrixD y = x;
    apply_dropout(s, 0.4, 3, y);
    return weighted(y, R);
  };
  MatrixD dx = R;
  apply_dropout(s, 0.4, 3, dx);  // backward = the same mask on the gradient
  const auto r = check_gradient("x", x, dx, loss);
  INFO(r.describe());
  CHECK(r.passes(kRel, kAbs));
}

TEST_CASE("cross_entropy: value matches PyTorch; padding and ignored rows get exactly zero gradient", "[nn][ce]") {
  // logits of batch 2, n 2: rows 0, 1 (sequence 0, length 2), rows 2, 3 (sequence 1, length 1)
  MatrixD logits(4, 3);
  logits << 1, 2, 0.5, 0.1, -1, 3, 5, 5, 5, 1e3, -1e3, 0;
  IdVector labels(4);
  labels << 2, 0, -100, 1;  // row 2 ignored by label, row 3 by padding (label 1 would be valid)
  MatrixD d;
  const LossResult r = cross_entropy<double>(logits, labels, {2, 1}, 0, &d);
  // F.cross_entropy(logits[:2], tensor([2, 0]), reduction='sum') in float64
  CHECK(r.sum == Approx(4.935143003068436).epsilon(1e-14));
  CHECK(r.count == 2);
  CHECK(r.loss == Approx(r.sum / 2));
  CHECK(d.row(2).isZero(0));
  CHECK(d.row(3).isZero(0));
  CHECK(d.row(0).sum() == Approx(0).margin(1e-15));  // softmax - onehot sums to 0
  // a caller's normaliser (global batch count)
  MatrixD d8;
  const LossResult r8 = cross_entropy<double>(logits, labels, {2, 1}, 8, &d8);
  CHECK(r8.loss == Approx(r.sum / 8));
  CHECK((d8 * 8 - d * 2).cwiseAbs().maxCoeff() < 1e-14);
  // stable: huge logits give finite values
  labels << 0, 0, 0, 1;
  const LossResult big = cross_entropy<double>(logits, labels, {2, 2}, 0, &d);
  CHECK(std::isfinite(big.sum));
  // F.cross_entropy(all four rows, tensor([0, 0, 0, 1]), reduction='sum') in float64
  CHECK(big.sum == Approx(2005.5337552917367).epsilon(1e-13));
  CHECK(d.allFinite());
  labels[1] = 3;
  CHECK_THROWS_AS(cross_entropy<double>(logits, labels, {2, 2}, 0, &d), Error);
  // A NaN normaliser was read as "the batch's own count".
  labels[1] = 0;
  CHECK_THROWS_WITH(cross_entropy<double>(logits, labels, {2, 2}, std::nan(""), &d),
                    Catch::Contains("cross_entropy: normaliser must be finite"));
  CHECK_THROWS_WITH(cross_entropy<double>(logits, labels, {2, 2}, std::numeric_limits<double>::infinity(), &d),
                    Catch::Contains("normaliser must be finite"));
}

TEST_CASE("cross_entropy: gradient check", "[nn][ce][gradcheck]") {
  MatrixD logits = random_matrix(6, 4, 41, 2.0);
  IdVector labels(6);
  labels << 3, -100, 0, 1, 2, 2;
  const std::vector<int> lengths{3, 2};
  MatrixD d;
  cross_entropy<double>(logits, labels, lengths, 5, &d);
  const auto loss = [&] { return cross_entropy<double>(logits, labels, lengths, 5, nullptr).loss; };
  const auto r = check_gradient("logits", logits, d, loss);
  INFO(r.describe());
  CHECK(r.passes(kRel, kAbs));
}

TEST_CASE("argmax_predictions and count_correct count only counted tokens", "[nn][ce]") {
  MatrixD logits(4, 3);
  logits << 1, 2, 0, 0, 0, 3, 9, 0, 0, 0, 9, 0;
  const IdVector pred = argmax_predictions<double>(logits, {2, 1});
  CHECK(pred[0] == 1);
  CHECK(pred[1] == 2);
  CHECK(pred[2] == 0);
  CHECK(pred[3] == -1);  // padding
  IdVector labels(4);
  labels << 1, 0, 0, 1;
  CHECK(count_correct(pred, labels, {2, 1}) == 2);
  labels[2] = -100;
  CHECK(count_correct(pred, labels, {2, 1}) == 1);
}

TEST_CASE("LayerNorm and FeedForward: backward refuses another layer's cache and a used one, writing nothing",
          "[nn][cache][errors]") {
  using Catch::Contains;
  const MatrixD x = random_matrix(4, 5, 31), R = random_matrix(4, 5, 32);
  SECTION("LayerNorm") {
    LayerNorm<double> ln(5), twin(5), wider(7);
    MatrixD y(4, 5), dx(4, 5);
    LayerNormCache<double> cache;
    ln.forward(x, cache, y);
    // A cache of another width once read past its rows (heap overflow).
    MatrixD y7(4, 7), dx7(4, 7), R7 = random_matrix(4, 7, 33);
    CHECK_THROWS_WITH(wider.backward(cache, R7, dx7), Contains("filled by another layer"));
    CHECK_THROWS_WITH(twin.backward(cache, R, dx), Contains("filled by another layer"));
    LayerNorm<double> copy = ln;
    CHECK_THROWS_WITH(copy.backward(cache, R, dx), Contains("filled by another layer"));
    CHECK(wider.parameter_store().gradients().isZero(0));
    CHECK(twin.parameter_store().gradients().isZero(0));
    LayerNormCache<double> empty;
    CHECK_THROWS_WITH(ln.backward(empty, R, dx), Contains("holds no forward pass"));
    ln.zero_grad();
    ln.backward(cache, R, dx);
    const MatrixD once = ln.parameter_store().gradients();
    CHECK_THROWS_WITH(ln.backward(cache, R, dx), Contains("already run on this cache"));
    CHECK(MatrixD(ln.parameter_store().gradients()) == once);
    // A move carries the identity: the moved-to layer owns the cache's pass.
    ln.forward(x, cache, y);
    LayerNorm<double> moved = std::move(ln);
    CHECK_NOTHROW(moved.backward(cache, R, dx));
  }
  SECTION("FeedForward") {
    FeedForward<double> ffn(5, 6, Activation::GELU, 0.0, RandomStream(1)), twin(5, 6, Activation::GELU, 0.0,
                                                                                 RandomStream(1));
    FeedForwardCache<double> cache;
    MatrixD y(4, 5), dx(4, 5);
    ffn.forward({x, 4}, cache, y, nullptr);
    CHECK_THROWS_WITH(twin.backward(cache, R, dx), Contains("filled by another layer"));
    CHECK(twin.linear2().weight_gradient().isZero(0));
    // A wrong dx is refused before linear2's gradients are written.
    ffn.zero_grad();
    MatrixD short_dx(3, 5);
    CHECK_THROWS_WITH(ffn.backward(cache, R, short_dx), Contains("the forward's shape"));
    CHECK(ffn.linear2().weight_gradient().isZero(0));
    ffn.backward(cache, R, dx);
    CHECK_THROWS_WITH(ffn.backward(cache, R, dx), Contains("already run on this cache"));
  }
}

TEST_CASE("LayerNorm<float>: rows whose squares overflow float are normalised, not replaced by the bias",
          "[nn][layernorm][nan]") {
  // Deviations of ~1e20..3e38: the sum of squares (and for the largest, the
  // sum) overflows float; the result must match the double computation.
  LayerNorm<float> ln(4);
  ln.bias().setConstant(0.25f);
  RowMajorMatrix<float> x(3, 4), y(3, 4);
  x << 1e20f, -1e20f, 3e20f, 0.0f,  //
      3e38f, -3e38f, 3e38f, -3e38f,    //
      3.4e38f, 3.4e38f, 3.3e38f, 3.4e38f;
  LayerNormCache<float> cache;
  ln.forward(x, cache, y);
  for (Index r = 0; r < 3; ++r) {
    const Eigen::RowVectorXd xr = x.row(r).cast<double>();
    const double mean = xr.mean();
    const double var = (xr.array() - mean).square().mean();
    for (Index c = 0; c < 4; ++c) {
      const double want = (xr(c) - mean) / std::sqrt(var + 1e-5) + 0.25;
      INFO("row " << r << ", column " << c);
      CHECK(double(y(r, c)) == Approx(want).epsilon(1e-5).margin(1e-5));
    }
  }
  // Non-finite input still propagates (LayerNorm is a building block; the
  // model and the attention layer refuse it, docs/errors.md).
  x(0, 0) = std::numeric_limits<float>::infinity();
  ln.forward(x, cache, y);
  CHECK(std::isnan(y(0, 1)));
}

// The layer contract (docs/guide.md): infer() gives forward()'s output
// without dropout bit for bit, keeps nothing, and backward() refuses its
// workspace.
TEST_CASE("Embedding, LayerNorm, FeedForward, TokenClassifier: infer equals forward bit for bit; backward refuses "
          "an infer() workspace",
          "[nn][inference][cache]") {
  using Catch::Contains;
  const MatrixD x = random_matrix(6, 5, 51), R = random_matrix(6, 5, 52);
  SECTION("Embedding") {
    Embedding<double> emb(9, 5, RandomStream(2));
    IdVector ids(6);
    ids << 3, 0, 8, 1, 3, 2;
    MatrixD a(6, 5), b(6, 5);
    EmbeddingCache cache, workspace;
    emb.forward(ids, cache, a);
    emb.infer(ids, workspace, b);
    CHECK(a == b);
    CHECK_THROWS_WITH(emb.backward(workspace, R), Contains("holds no forward pass"));
    emb.backward(cache, R);
    CHECK_THROWS_WITH(emb.backward(cache, R), Contains("already run on this cache"));
  }
  SECTION("LayerNorm") {
    LayerNorm<double> ln(5);
    ln.weight() = random_matrix(1, 5, 53);
    MatrixD a(6, 5), b(6, 5), dx(6, 5);
    LayerNormCache<double> cache, workspace;
    ln.forward(x, cache, a);
    ln.infer(x, workspace, b);
    CHECK(a == b);
    CHECK_THROWS_WITH(ln.backward(workspace, R, dx), Contains("holds no forward pass"));
  }
  SECTION("FeedForward") {
    for (const Activation act : {Activation::ReLU, Activation::GELU}) {
      FeedForward<double> ffn(5, 7, act, 0.3, RandomStream(4));
      MatrixD a(6, 5), b(6, 5), dx(6, 5);
      FeedForwardCache<double> cache, workspace;
      ffn.forward({x, 3}, cache, a);
      ffn.infer({x, 3}, workspace, b);
      CHECK(a == b);
      CHECK_THROWS_WITH(ffn.backward(workspace, R, dx), Contains("holds no forward pass"));
      // A training pass with a stream differs (p = 0.3).
      const RandomStream s(8);
      ffn.forward({x, 3}, cache, a, &s);
      CHECK(a != b);
    }
  }
  SECTION("TokenClassifier") {
    TokenClassifier<double> head(5, 4, RandomStream(6));
    MatrixD a(6, 4), b(6, 4), dh(6, 5);
    TokenClassifier<double>::Cache cache, workspace;
    head.forward(x, cache, a);
    head.infer(x, workspace, b);
    CHECK(a == b);
    CHECK_THROWS_WITH(head.backward(workspace, a, dh), Contains("holds no forward pass"));
  }
}

TEST_CASE("TokenClassifier: gradient check of the head and its loss", "[nn][ce][gradcheck]") {
  TokenClassifier<double> head(5, 4, RandomStream(6));
  MatrixD h = random_matrix(6, 5, 61);
  IdVector labels(6);
  labels << 3, -100, 0, 1, 2, 2;
  const std::vector<int> lengths{3, 3};
  MatrixD logits(6, 4), dlogits, dh(6, 5);
  const auto loss = [&] {
    TokenClassifier<double>::Cache c;
    head.forward(h, c, logits);
    return head.loss(logits, labels, lengths, 0, nullptr).loss;
  };
  TokenClassifier<double>::Cache cache;
  head.forward(h, cache, logits);
  head.loss(logits, labels, lengths, 0, &dlogits);
  head.linear().zero_grad();
  head.backward(cache, dlogits, dh);
  const MatrixD dW = head.linear().weight_gradient(), db = head.linear().bias_gradient();
  for (const auto& r : {check_gradient("W", head.linear().weight(), dW, loss),
                        check_gradient("b", head.linear().bias(), db, loss), check_gradient("h", h, dh, loss)}) {
    INFO(r.describe());
    CHECK(r.passes(kRel, kAbs));
  }
}
