// synattn — the position-wise feed-forward block of a Transformer layer:
//   y = Linear2(Dropout(act(Linear1(x))))     Linear1: d -> d_ff, Linear2: d_ff -> d
// with act ReLU or exact (erf) GELU. Dropout is on only when a stream is given.
#ifndef SYNATTN_NN_FEED_FORWARD_HPP
#define SYNATTN_NN_FEED_FORWARD_HPP

#include <Eigen/Core>

#include <string>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parallel.hpp"
#include "../util/random.hpp"
#include "common.hpp"
#include "linear.hpp"

namespace synattn {
namespace nn {

template <class Scalar>
struct FeedForwardCache {
  RowMajorMatrix<Scalar> pre;     // (tokens, d_ff): Linear1 output, before the activation
  RowMajorMatrix<Scalar> hidden;  // (tokens, d_ff): after activation and dropout (Linear2's input)
  RowMajorMatrix<Scalar> dhidden; // (tokens, d_ff): backward scratch
  bool dropout = false;           // whether the forward pass dropped (then `stream` is its mask)
  RandomStream stream;
  Index rows_per_sequence = 1;    // the forward's padded length n (masks are keyed by sequence and position)
  CacheStamp stamp;               // which layer filled it (util/layer_identity.hpp)
};

template <class Scalar>
class FeedForward {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = FeedForwardCache<Scalar>;

  // Sub-layers "linear1" and "linear2", initialised from init.derive(1) and
  // init.derive(2). `dropout` is the hidden-activation dropout probability.
  FeedForward(int d, int d_ff, Activation activation, double dropout, const RandomStream& init)
      : linear1_(d, d_ff, init.derive(1)), linear2_(d_ff, d, init.derive(2)), activation_(activation), p_(dropout) {
    check_probability("FeedForward", dropout);
  }

  int dim() const noexcept { return linear1_.in_features(); }
  int hidden_dim() const noexcept { return linear1_.out_features(); }
  Activation activation() const noexcept { return activation_; }
  double dropout() const noexcept { return p_; }

  // y (tokens, d) for x (tokens = batch * n, d). `stream` (null: eval mode)
  // draws the hidden dropout mask: element (b * n + i, c) from
  // stream->sequence(b) at counter i * d_ff + c (see apply_dropout), n =
  // rows_per_sequence. Arguments in the nn/ order: inputs, cache, output,
  // dropout stream.
  void forward(const Eigen::Ref<const Matrix>& x, Index rows_per_sequence, Cache& cache, Eigen::Ref<Matrix> y,
               const RandomStream* stream) const {
    const Index tokens = x.rows();
    cache.stamp.clear();
    cache.pre.resize(tokens, hidden_dim());
    cache.hidden.resize(tokens, hidden_dim());
    linear1_.forward(x, cache.pre);
    const Index cols = hidden_dim();
    const bool gelu_act = activation_ == Activation::GELU;
    // One fused pass per row: activation, then the row's dropout mask.
    cache.dropout = stream != nullptr && p_ > 0;
    if (stream) cache.stream = *stream;
    if (cache.dropout && (rows_per_sequence <= 0 || tokens % rows_per_sequence != 0))
      throw Error("FeedForward::forward: rows_per_sequence is " + std::to_string(rows_per_sequence) +
                  ", expected a positive divisor of the " + std::to_string(tokens) + " rows of x");
    cache.rows_per_sequence = rows_per_sequence;
    const std::uint32_t threshold = cache.dropout ? drop_threshold(p_) : 0;
    const Scalar keep_scale = static_cast<Scalar>(cache.dropout ? 1.0 / (1.0 - p_) : 1.0);
    parallel_for(tokens, (gelu_act ? 30.0 : 2.0) * cols * tokens, [&](Index r) {
      const Scalar* pre = cache.pre.row(r).data();
      Scalar* h = cache.hidden.row(r).data();
      for (Index c = 0; c < cols; ++c) h[c] = gelu_act ? gelu(pre[c]) : (pre[c] > 0 ? pre[c] : Scalar(0));
      if (cache.dropout) dropout_token_row(cache.stream, cache.rows_per_sequence, r, h, cols, threshold, keep_scale);
    });
    linear2_.forward(cache.hidden, y);
    cache.stamp.stamp(identity_);
  }

  // Given the forward input x and dy (tokens, d): adds both linears'
  // gradients; writes dx (tokens, d). The cache must come from this layer's
  // last forward() with it, and is used once; all checks precede any write.
  void backward(const Eigen::Ref<const Matrix>& x, Cache& cache, const Eigen::Ref<const Matrix>& dy, Matrix& dx) {
    const char* fn = "FeedForward::backward";
    cache.stamp.check(fn, identity_);
    const Index rows = cache.pre.rows();
    if (x.rows() != rows || x.cols() != dim() || dy.rows() != rows || dy.cols() != dim())
      throw Error(std::string(fn) + ": x and dy must be " + shape_text(rows, dim()) +
                  " (the forward's shape), got " + shape_text(x.rows(), x.cols()) +
                  " and " + shape_text(dy.rows(), dy.cols()));
    cache.stamp.mark_used();
    // dhidden (tokens, d_ff) = dy W2; dW2 += dy^T hidden
    linear2_.backward(cache.hidden, dy, &cache.dhidden);
    const Index tokens = cache.pre.rows(), cols = hidden_dim();
    const bool gelu_act = activation_ == Activation::GELU;
    const std::uint32_t threshold = cache.dropout ? drop_threshold(p_) : 0;
    const Scalar keep_scale = static_cast<Scalar>(cache.dropout ? 1.0 / (1.0 - p_) : 1.0);
    // dpre (tokens, d_ff) = act'(pre) * mask * dhidden, in place in dhidden.
    parallel_for(tokens, (gelu_act ? 30.0 : 2.0) * cols * tokens, [&](Index r) {
      const Scalar* pre = cache.pre.row(r).data();
      Scalar* g = cache.dhidden.row(r).data();
      if (cache.dropout)  // the forward's mask
        dropout_token_row(cache.stream, cache.rows_per_sequence, r, g, cols, threshold, keep_scale);
      for (Index c = 0; c < cols; ++c)
        g[c] *= gelu_act ? gelu_derivative(pre[c]) : (pre[c] > 0 ? Scalar(1) : Scalar(0));
    });
    // dx (tokens, d) = dpre W1; dW1 += dpre^T x
    linear1_.backward(x, cache.dhidden, &dx);
  }

  Linear<Scalar>& linear1() noexcept { return linear1_; }
  Linear<Scalar>& linear2() noexcept { return linear2_; }
  const Linear<Scalar>& linear1() const noexcept { return linear1_; }
  const Linear<Scalar>& linear2() const noexcept { return linear2_; }

  // f(name prefix, ParameterStore&) for every sub-layer store, in order.
  template <class F>
  void visit_stores(const std::string& prefix, F&& f) {
    f(prefix + "linear1.", linear1_.parameter_store());
    f(prefix + "linear2.", linear2_.parameter_store());
  }
  void zero_grad() {
    linear1_.zero_grad();
    linear2_.zero_grad();
  }

 private:
  Linear<Scalar> linear1_, linear2_;
  Activation activation_ = Activation::ReLU;
  double p_ = 0;
  LayerIdentity identity_;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_FEED_FORWARD_HPP
