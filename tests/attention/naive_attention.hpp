// A deliberately naive reference of docs/math.md §4 for the attention tests: plain
// loops in double over (sequence, head, query, key), written from the formulas
// and sharing no code with the library (talking heads and cross-attention
// included). Test support only.
#ifndef SYNATTN_TESTS_NAIVE_ATTENTION_HPP
#define SYNATTN_TESTS_NAIVE_ATTENTION_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <synattn/attention/syntax_attention.hpp>

namespace synattn_test {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using BucketBlock = Eigen::Matrix<std::int8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct NaiveResult {
  MatrixD out;    // (batch * n_q, d_model)
  MatrixD probs;  // (batch * heads * n_q, n_kv), softmax output before post-mixing
};

// Parameters are read from `layer` by name (any scalar type). With
// `dropout` (and options().dropout = p > 0) the final attention weights
// (after post-mixing) are dropped explicitly: weight (b, a, i, j) of the valid
// corner (i < lq[b], j < lkv[b]) is kept iff
// dropout->sequence(b).keep((a * lq[b] + i) * lkv[b] + j, drop_threshold(p))
// and then divided by 1 - p (the rest is 0: never read).
template <class Layer>
NaiveResult naive_attention(const Layer& layer, const MatrixD& xq, const std::vector<int>& lq, const MatrixD& xkv,
                            const std::vector<int>& lkv, const BucketBlock& buckets,
                            const synattn::RandomStream* dropout = nullptr) {
  const synattn::AttentionOptions& o = layer.options();
  const int H = o.heads, dk = layer.key_size(), dv = layer.value_size();
  const int B = static_cast<int>(lq.size());
  const int nq = B ? static_cast<int>(xq.rows()) / B : 0;
  const int nkv = B ? static_cast<int>(xkv.rows()) / B : 0;
  auto P = [&](const char* name) { return MatrixD(layer.parameter(name).template cast<double>()); };
  const MatrixD Wq = P("Wq"), bq = P("bq"), Wk = P("Wk"), bk = P("bk"), Wv = P("Wv"), bv = P("bv"), Wo = P("Wo"),
                bo = P("bo");
  const bool bias = o.syntax_bias;
  const MatrixD table = bias ? P("table") : MatrixD();
  const double s = bias ? P("scale")(0, 0) : 0.0;
  // Tree fusion: V stacked bucket views, w = softmax(view_logits) per row.
  const int views = bias ? o.bias.fusion.views : 1;
  const int table_rows = o.bias.per_head ? H : 1;
  MatrixD weights = MatrixD::Ones(1, 1);
  if (views > 1) {
    const MatrixD logits = P("view_logits");
    weights.resize(logits.rows(), logits.cols());
    for (int r = 0; r < logits.rows(); ++r) {
      double total = 0;
      for (int v = 0; v < views; ++v) total += std::exp(logits(r, v));
      for (int v = 0; v < views; ++v) weights(r, v) = std::exp(logits(r, v)) / total;
    }
  }
  const MatrixD pre = o.talking_heads_pre ? P("mix_pre") : MatrixD::Identity(H, H);
  const MatrixD post = o.talking_heads_post ? P("mix_post") : MatrixD::Identity(H, H);
  const double inf = std::numeric_limits<double>::infinity();

  NaiveResult r;
  r.out = MatrixD::Zero(B * nq, o.d_model);
  r.probs = MatrixD::Zero(static_cast<Eigen::Index>(B) * H * nq, nkv);
  for (int b = 0; b < B; ++b) {
    // Projections of this sequence, token by token.
    MatrixD q(nq, H * dk), k(nkv, H * dk), v(nkv, H * dv);
    for (int i = 0; i < nq; ++i) q.row(i) = xq.row(b * nq + i) * Wq.transpose() + bq;
    for (int j = 0; j < nkv; ++j) {
      k.row(j) = xkv.row(b * nkv + j) * Wk.transpose() + bk;
      v.row(j) = xkv.row(b * nkv + j) * Wv.transpose() + bv;
    }
    auto masked = [&](int i, int j) {
      if (i >= lq[static_cast<std::size_t>(b)] || j >= lkv[static_cast<std::size_t>(b)]) return true;
      if (o.causal && j > i) return true;
      return bias && buckets(b * nq + i, j) < 0;
    };
    std::vector<MatrixD> raw(static_cast<std::size_t>(H), MatrixD::Zero(nq, nkv));
    for (int a = 0; a < H; ++a)
      for (int i = 0; i < nq; ++i)
        for (int j = 0; j < nkv; ++j) {
          double dot = 0;
          for (int c = 0; c < dk; ++c) dot += q(i, a * dk + c) * k(j, a * dk + c);
          raw[static_cast<std::size_t>(a)](i, j) = dot / std::sqrt(static_cast<double>(dk));
        }
    std::vector<MatrixD> prob(static_cast<std::size_t>(H), MatrixD::Zero(nq, nkv));
    for (int a = 0; a < H; ++a)
      for (int i = 0; i < nq; ++i) {
        std::vector<double> z(static_cast<std::size_t>(nkv), -inf);
        double mx = -inf;
        for (int j = 0; j < nkv; ++j) {
          if (masked(i, j)) continue;
          double sc = 0;
          for (int c = 0; c < H; ++c) sc += pre(a, c) * raw[static_cast<std::size_t>(c)](i, j);
          for (int view = 0; bias && view < views; ++view) {
            const int row = (o.bias.fusion.shared_table ? 0 : view) * table_rows + (o.bias.per_head ? a : 0);
            const double w = weights(o.bias.fusion.per_head_weights ? a : 0, view);
            sc += s * w * table(row, buckets((view * B + b) * nq + i, j));
          }
          z[static_cast<std::size_t>(j)] = sc;
          mx = std::max(mx, sc);
        }
        if (mx == -inf) continue;  // no visible key: p = 0
        double sum = 0;
        for (int j = 0; j < nkv; ++j)
          sum += z[static_cast<std::size_t>(j)] == -inf ? 0.0 : std::exp(z[static_cast<std::size_t>(j)] - mx);
        for (int j = 0; j < nkv; ++j)
          if (z[static_cast<std::size_t>(j)] != -inf)
            prob[static_cast<std::size_t>(a)](i, j) = std::exp(z[static_cast<std::size_t>(j)] - mx) / sum;
      }
    MatrixD ctx = MatrixD::Zero(nq, H * dv);
    for (int a = 0; a < H; ++a) {
      r.probs.block((static_cast<Eigen::Index>(b) * H + a) * nq, 0, nq, nkv) = prob[static_cast<std::size_t>(a)];
      MatrixD mixed = MatrixD::Zero(nq, nkv);
      for (int c = 0; c < H; ++c) mixed += post(a, c) * prob[static_cast<std::size_t>(c)];
      if (dropout && o.dropout > 0) {
        const std::uint32_t threshold = synattn::drop_threshold(o.dropout);
        const synattn::RandomStream seq = dropout->sequence(static_cast<std::uint64_t>(b));
        const std::uint64_t lqb = static_cast<std::uint64_t>(lq[static_cast<std::size_t>(b)]);
        const std::uint64_t lkb = static_cast<std::uint64_t>(lkv[static_cast<std::size_t>(b)]);
        for (int i = 0; i < nq; ++i)
          for (int j = 0; j < nkv; ++j) {
            const auto ui = static_cast<std::uint64_t>(i), uj = static_cast<std::uint64_t>(j);
            const std::uint64_t counter = (static_cast<std::uint64_t>(a) * lqb + ui) * lkb + uj;
            const bool valid = ui < lqb && uj < lkb;
            mixed(i, j) = valid && seq.keep(counter, threshold) ? mixed(i, j) / (1.0 - o.dropout) : 0.0;
          }
      }
      for (int i = 0; i < nq; ++i)
        for (int j = 0; j < nkv; ++j)
          for (int e = 0; e < dv; ++e) ctx(i, a * dv + e) += mixed(i, j) * v(j, a * dv + e);
    }
    for (int i = 0; i < nq; ++i) r.out.row(b * nq + i) = ctx.row(i) * Wo.transpose() + bo;
  }
  return r;
}

// `views` bucket blocks stacked as a fused layer takes them ((views * B *
// nq, nkv)): view 0 from random_buckets, the others with view 0's mask and
// their own random buckets.
inline BucketBlock random_bucket_views(int views, const std::vector<int>& lq, const std::vector<int>& lkv, int nq,
                                       int nkv, int num_buckets, std::mt19937& rng, double masked_share = 0.1);

// Random bucket block for tests: values in [0, num_buckets) on visible pairs,
// -1 on padding pairs, and about `masked_share` of the visible pairs -1 too.
inline BucketBlock random_buckets(const std::vector<int>& lq, const std::vector<int>& lkv, int nq, int nkv,
                                  int num_buckets, std::mt19937& rng, double masked_share = 0.1) {
  const int B = static_cast<int>(lq.size());
  BucketBlock out = BucketBlock::Constant(B * nq, nkv, -1);
  std::uniform_int_distribution<int> pick(0, num_buckets - 1);
  std::uniform_real_distribution<double> u(0, 1);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < lq[static_cast<std::size_t>(b)]; ++i)
      for (int j = 0; j < lkv[static_cast<std::size_t>(b)]; ++j)
        out(b * nq + i, j) = static_cast<std::int8_t>(u(rng) < masked_share ? -1 : pick(rng));
  return out;
}

inline BucketBlock random_bucket_views(int views, const std::vector<int>& lq, const std::vector<int>& lkv, int nq,
                                       int nkv, int num_buckets, std::mt19937& rng, double masked_share) {
  const BucketBlock first = random_buckets(lq, lkv, nq, nkv, num_buckets, rng, masked_share);
  BucketBlock out(views * first.rows(), nkv);
  std::uniform_int_distribution<int> pick(0, num_buckets - 1);
  for (int v = 0; v < views; ++v)
    for (Eigen::Index r = 0; r < first.rows(); ++r)
      for (Eigen::Index j = 0; j < nkv; ++j)
        out(v * first.rows() + r, j) = v == 0 || first(r, j) < 0 ? first(r, j) : static_cast<std::int8_t>(pick(rng));
  return out;
}

// A bucket block as make_distance_batch and bucketize write one: `value` on
// the pairs within the lengths, -1 (padding) everywhere else.
inline BucketBlock padded_buckets(const std::vector<int>& lq, const std::vector<int>& lkv, Eigen::Index nq,
                                  Eigen::Index nkv, int value = 0) {
  BucketBlock out = BucketBlock::Constant(static_cast<Eigen::Index>(lq.size()) * nq, nkv, -1);
  for (std::size_t b = 0; b < lq.size(); ++b)
    out.block(static_cast<Eigen::Index>(b) * nq, 0, lq[b], lkv[b]).setConstant(static_cast<std::int8_t>(value));
  return out;
}

inline MatrixD random_matrix(Eigen::Index rows, Eigen::Index cols, std::mt19937& rng, double sd = 1.0) {
  std::normal_distribution<double> g(0.0, sd);
  MatrixD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = g(rng);
  return m;
}

// Fills every parameter of `layer` with random values that make each one
// matter: N(0, 0.3) projections, N(0, 0.5) table, scale 0.7 (when learnable),
// mixing I + N(0, 0.3).
template <class Layer>
void randomise(Layer& layer, std::mt19937& rng) {
  layer.visit_parameters([&](const synattn::ParameterInfo& p, auto value, auto) {
    using S = typename decltype(value)::Scalar;
    double sd = 0.3;
    if (p.name == "table" || p.name == "view_logits") sd = 0.5;
    MatrixD m = random_matrix(p.rows, p.cols, rng, sd);
    if (p.name == "scale") m(0, 0) = p.trainable ? 0.7 : 1.0;
    if (p.name == "mix_pre" || p.name == "mix_post") m += MatrixD::Identity(p.rows, p.cols);
    value = m.cast<S>();
  });
}

}  // namespace synattn_test

#endif  // SYNATTN_TESTS_NAIVE_ATTENTION_HPP
