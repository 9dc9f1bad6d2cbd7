// The one initialiser of random weights (util/init.hpp): the documented
// distributions over a large draw, the element-to-counter rule, the linear
// rule, and every layer that draws weights drawing them by it (same seed ->
// same weights, the attention layer's projections exactly init_linear's).
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/nn/common.hpp>
#include <synattn/nn/embedding.hpp>
#include <synattn/nn/linear.hpp>
#include <synattn/nn/tagger.hpp>
#include <synattn/parse/parser.hpp>
#include <synattn/util/init.hpp>

#include <cmath>
#include <cstdint>

using synattn::Index;
using synattn::RandomStream;
using MatrixD = synattn::RowMajorMatrix<double>;
using MatrixF = synattn::RowMajorMatrix<float>;

namespace {

struct Moments {
  double mean = 0, var = 0, fourth = 0, min = 0, max = 0;
};

Moments moments(const MatrixD& m) {
  Moments r;
  const double n = static_cast<double>(m.size());
  r.mean = m.sum() / n;
  const auto centred = m.array() - r.mean;
  r.var = centred.square().sum() / n;
  r.fourth = centred.square().square().sum() / n;
  r.min = m.minCoeff();
  r.max = m.maxCoeff();
  return r;
}

}  // namespace

TEST_CASE("init_uniform: U(-bound, bound) over a large draw, in bounds, mean 0, variance bound^2 / 3", "[init]") {
  MatrixD m(400, 500);  // 200000 draws
  const double bound = 0.25;
  synattn::init_uniform(m, bound, RandomStream(11).derive(4));
  const Moments s = moments(m);
  CHECK(s.min >= -bound);
  CHECK(s.max < bound);
  CHECK(s.min < -0.999 * bound);  // the whole interval is reached
  CHECK(s.max > 0.999 * bound);
  // Standard error of the mean: bound / sqrt(3 * 200000) = 3.2e-4: 5 sigma.
  CHECK(std::abs(s.mean) < 5 * bound / std::sqrt(3.0 * 200000));
  // Of the variance: bound^2 * sqrt(4/45 / 200000) = 4.2e-5 at bound 0.25: 5 sigma.
  CHECK(s.var == Approx(bound * bound / 3).margin(5 * 4.2e-5));
}

TEST_CASE("init_normal: N(0, 1) over a large draw: mean 0, variance 1, kurtosis 3", "[init]") {
  MatrixD m(400, 500);
  synattn::init_normal(m, RandomStream(12));
  const Moments s = moments(m);
  CHECK(std::isfinite(s.min));
  CHECK(std::isfinite(s.max));
  // Standard errors over 200000 draws: mean 2.2e-3, variance 3.2e-3, 4th moment 2.2e-2: 5 sigma.
  CHECK(std::abs(s.mean) < 0.011);
  CHECK(s.var == Approx(1.0).margin(0.016));
  CHECK(s.fourth == Approx(3.0).margin(0.11));
  CHECK(s.max > 3.5);  // tails are there: P(|x| > 3.5) * 200000 ~ 93
  CHECK(s.min < -3.5);
}

TEST_CASE("init_uniform and init_normal: element (r, c) is counter r * cols + c of the stream, whatever the shape",
          "[init]") {
  const RandomStream stream = RandomStream(5).derive(9);
  MatrixD grid(3, 4), row(1, 12), twice(3, 4);
  synattn::init_uniform(grid, 0.5, stream);
  synattn::init_uniform(row, 0.5, stream);
  synattn::init_uniform(twice, 0.5, stream);
  CHECK((twice.array() == grid.array()).all());  // a pure function: the same draw again
  for (Index r = 0; r < 3; ++r)
    for (Index c = 0; c < 4; ++c) {
      CHECK(grid(r, c) == row(0, r * 4 + c));
      CHECK(grid(r, c) == (2.0 * stream.uniform(static_cast<std::uint64_t>(r * 4 + c)) - 1.0) * 0.5);
    }
  MatrixD normal_grid(3, 4), normal_row(1, 12);
  synattn::init_normal(normal_grid, stream);
  synattn::init_normal(normal_row, stream);
  CHECK((Eigen::Map<const MatrixD>(normal_grid.data(), 1, 12).array() == normal_row.array()).all());
  const double u1 = 1.0 - stream.uniform(2 * 5), u2 = stream.uniform(2 * 5 + 1);
  CHECK(normal_grid(1, 1) == std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2));
  // float holds the double draw rounded; a block of a larger matrix draws like a matrix of its own.
  MatrixF f(3, 4);
  synattn::init_uniform(f, 0.5, stream);
  CHECK((f.array() == grid.cast<float>().array()).all());
  MatrixD big = MatrixD::Zero(5, 6);
  synattn::init_uniform(big.block(1, 2, 3, 4), 0.5, stream);
  CHECK((big.block(1, 2, 3, 4).array() == grid.array()).all());
  CHECK(big.col(0).isZero());
  // Other streams draw other values.
  MatrixD other(3, 4);
  synattn::init_uniform(other, 0.5, RandomStream(5).derive(10));
  CHECK((other.array() != grid.array()).any());
}

TEST_CASE("nn::fill_uniform and nn::fill_normal are init_uniform and init_normal", "[init]") {
  const RandomStream stream(21);
  MatrixD a(4, 7), b(4, 7);
  synattn::nn::fill_uniform(Eigen::Map<MatrixD>(a.data(), 4, 7), 0.3, stream);  // they take a layer's Map
  synattn::init_uniform(b, 0.3, stream);
  CHECK((a.array() == b.array()).all());
  synattn::nn::fill_normal(Eigen::Map<MatrixD>(a.data(), 4, 7), stream);
  synattn::init_normal(b, stream);
  CHECK((a.array() == b.array()).all());
}

TEST_CASE("linear_init_bound is 1 / sqrt(fan_in) and refuses fan_in < 1", "[init]") {
  CHECK(synattn::linear_init_bound(1) == 1.0);
  CHECK(synattn::linear_init_bound(16) == 0.25);
  CHECK(synattn::linear_init_bound(3) == 1.0 / std::sqrt(3.0));
  CHECK_THROWS_WITH(synattn::linear_init_bound(0), Catch::Contains("fan_in must be >= 1, got 0"));
}

TEST_CASE("init_linear: weight from derive(0), bias from derive(1), both U(-1/sqrt(in), 1/sqrt(in))", "[init]") {
  const RandomStream stream = RandomStream(3).derive(7);
  MatrixD w(6, 9), b(1, 6);
  synattn::init_linear(w, b, stream);
  MatrixD want_w(6, 9), want_b(1, 6);
  synattn::init_uniform(want_w, 1.0 / 3.0, stream.derive(0));
  synattn::init_uniform(want_b, 1.0 / 3.0, stream.derive(1));
  CHECK((w.array() == want_w.array()).all());
  CHECK((b.array() == want_b.array()).all());
  MatrixD alone(6, 9);
  synattn::init_linear(alone, stream);  // no bias: the weight's draw is the same
  CHECK((alone.array() == w.array()).all());
  MatrixD none(0, 0);
  synattn::init_linear(alone, none, stream);
  CHECK((alone.array() == w.array()).all());
  MatrixD wrong(1, 5);
  CHECK_THROWS_WITH(synattn::init_linear(w, wrong, stream), Catch::Contains("bias has 5 entries, expected 6"));
}

TEST_CASE("Linear and Embedding draw by the rule: same stream, same weights", "[init]") {
  const RandomStream stream = RandomStream(8).derive(2);
  synattn::nn::Linear<double> a(5, 3, stream), b(5, 3, stream), c(5, 3, RandomStream(9));
  MatrixD w(3, 5), bias(1, 3);
  synattn::init_linear(w, bias, stream);
  CHECK((a.weight().array() == w.array()).all());
  CHECK((a.bias().array() == bias.array()).all());
  CHECK((a.weight().array() == b.weight().array()).all());
  CHECK((a.weight().array() != c.weight().array()).any());
  synattn::nn::Linear<double> no_bias(5, 3, stream, false);
  CHECK((no_bias.weight().array() == w.array()).all());

  synattn::nn::Embedding<double> e(7, 4, stream), f(7, 4, stream);
  MatrixD table(7, 4);
  synattn::init_normal(table, stream);
  table.row(synattn::nn::kPaddingId).setZero();
  CHECK((e.weight().array() == table.array()).all());
  CHECK((e.weight().array() == f.weight().array()).all());
}

TEST_CASE("SyntaxBiasedAttention: projection k is init_linear from RandomStream(seed).derive(k)", "[init]") {
  synattn::AttentionOptions o(12, 3);
  o.memory_size = 10;  // Wk and Wv have fan_in 10, Wq 12, Wo heads * dv = 12
  o.seed = 77;
  synattn::SyntaxBiasedAttention<double> layer(o), again(o);
  CHECK((layer.parameters().array() == again.parameters().array()).all());
  const RandomStream init(77);
  const auto check = [&](const char* w, const char* b, std::uint64_t k) {
    MatrixD want_w(layer.parameter(w).rows(), layer.parameter(w).cols()), want_b(1, want_w.rows());
    synattn::init_linear(want_w, want_b, init.derive(k));
    CHECK((layer.parameter(w).array() == want_w.array()).all());
    CHECK((layer.parameter(b).array() == want_b.array()).all());
  };
  check("Wq", "bq", 0);
  check("Wk", "bk", 1);
  check("Wv", "bv", 2);
  check("Wo", "bo", 3);
  CHECK(layer.parameter("Wk").cols() == 10);
  CHECK(layer.Wk().cwiseAbs().maxCoeff() < 1.0 / std::sqrt(10.0));
  // float draws the same values rounded; reset_parameters(seed) is a fresh layer's draw.
  synattn::SyntaxBiasedAttention<float> single(o);
  CHECK((single.parameters().array() == layer.parameters().cast<float>().array()).all());
  synattn::AttentionOptions other = o;
  other.seed = 78;
  synattn::SyntaxBiasedAttention<double> moved(other);
  CHECK((moved.Wq().array() != layer.Wq().array()).any());
  moved.reset_parameters(77);
  CHECK((moved.parameters().array() == layer.parameters().array()).all());
}

TEST_CASE("The tagger and the parser: the same seed gives the same weights, another seed others", "[init]") {
  synattn::nn::TaggerOptions t;
  t.vocab_size = 20;
  t.num_classes = 5;
  t.d_model = 8;
  t.heads = 2;
  t.d_ff = 12;
  t.layers = 2;
  t.seed = 4;
  synattn::nn::SyntaxTransformerTagger<double> ta(t), tb(t);
  CHECK((ta.parameters().array() == tb.parameters().array()).all());
  t.seed = 5;
  synattn::nn::SyntaxTransformerTagger<double> tc(t);
  CHECK((ta.parameters().array() != tc.parameters().array()).any());

  synattn::parse::ParserOptions p;
  p.num_words = 12;
  p.num_chars = 9;
  p.num_upos = 4;
  p.num_labels = 3;
  p.word_dim = 6;
  p.char_dim = 4;
  p.char_filters = 6;
  p.d_model = 8;
  p.heads = 2;
  p.d_ff = 12;
  p.layers = 1;
  p.arc_dim = 6;
  p.label_dim = 5;
  p.seed = 3;
  synattn::parse::BiaffineParser<double> pa(p), pb(p);
  CHECK((pa.parameters().array() == pb.parameters().array()).all());
  p.seed = 4;
  synattn::parse::BiaffineParser<double> pc(p);
  CHECK((pa.parameters().array() != pc.parameters().array()).any());
}
