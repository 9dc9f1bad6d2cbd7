// synattn — the position-wise feed-forward block of a Transformer layer:
//   y = Linear2(Dropout(act(Linear1(x))))     Linear1: d -> d_ff, Linear2: d_ff -> d
// with act ReLU or exact (erf) GELU. Dropout is on only when a stream is given.
//
// The layer contract (docs/guide.md): forward({x, n}, cache, y, dropout)
// keeps its sub-layers' caches (linear1's holds x, linear2's the hidden
// activations, written there directly: no copies) and the pre-activations;
// infer({x, n}, workspace, y) keeps nothing; backward(cache, dy, dx) writes
// dx, which may alias dy.
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
  LinearCache<Scalar> linear1;    // its input: x (tokens, d)
  RowMajorMatrix<Scalar> pre;     // (tokens, d_ff): Linear1 output, before the activation
  LinearCache<Scalar> linear2;    // its input: the hidden rows (tokens, d_ff), after activation and dropout
  RowMajorMatrix<Scalar> dhidden; // (tokens, d_ff): backward scratch
  bool dropout = false;           // whether the forward pass dropped (then `stream` is its mask)
  RandomStream stream;
  Index rows_per_sequence = 1;    // the forward's padded length n (masks are keyed by sequence and position)
  CacheStamp stamp;               // which layer filled it (util/layer_identity.hpp)

  // After activation and dropout (linear2's input).
  const RowMajorMatrix<Scalar>& hidden() const noexcept { return linear2.input; }
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

  using Input = SequenceRows<Scalar>;

  // y (tokens, d) for input.x (tokens = batch * n, d). `stream` (null: eval
  // mode) draws the hidden dropout mask: element (b * n + i, c) from
  // stream->sequence(b) at counter i * d_ff + c (see apply_dropout), n =
  // input.rows_per_sequence.
  void forward(const Input& input, Cache& cache, Eigen::Ref<Matrix> y, const RandomStream* stream = nullptr) const {
    cache.stamp.clear();
    run("FeedForward::forward", input, cache, y, stream, false);
    cache.stamp.stamp(identity_);
  }
  // The same y as forward() without a stream, bit for bit, keeping nothing:
  // the workspace lends its buffers and is left holding no forward pass.
  void infer(const Input& input, Cache& workspace, Eigen::Ref<Matrix> y) const {
    workspace.stamp.clear();
    run("FeedForward::infer", input, workspace, y, nullptr, true);
  }

  // dy (tokens, d): adds both linears' gradients; writes dx (tokens, d),
  // which may alias dy. The cache must come from this layer's last
  // forward() with it, and is used once; all checks precede any write.
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dy, Eigen::Ref<Matrix> dx) {
    const char* fn = "FeedForward::backward";
    cache.stamp.check(fn, identity_);
    const Index rows = cache.pre.rows();
    if (dy.rows() != rows || dy.cols() != dim() || dx.rows() != rows || dx.cols() != dim())
      throw Error(std::string(fn) + ": dy and dx must be " + shape_text(rows, dim()) +
                  " (the forward's shape), got " + shape_text(dy.rows(), dy.cols()) + " and " +
                  shape_text(dx.rows(), dx.cols()));
    cache.stamp.mark_used();
    // dhidden (tokens, d_ff) = dy W2; dW2 += dy^T hidden
    cache.dhidden.resize(rows, hidden_dim());
    linear2_.backward(cache.linear2, dy, cache.dhidden);
    const Index tokens = rows, cols = hidden_dim();
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
    linear1_.backward(cache.linear1, cache.dhidden, dx);
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
  // forward() and infer(): the same arithmetic; a training pass keeps the
  // linears' caches, inference only borrows their buffers.
  void run(const char* fn, const Input& input, Cache& cache, Eigen::Ref<Matrix> y, const RandomStream* stream,
           bool inference) const {
    const Eigen::Ref<const Matrix>& x = input.x;
    const Index tokens = x.rows(), rows_per_sequence = input.rows_per_sequence;
    if (x.cols() != dim() || y.rows() != tokens || y.cols() != dim())
      throw Error(std::string(fn) + ": x is " + shape_text(x.rows(), x.cols()) + " and y " +
                  shape_text(y.rows(), y.cols()) + ", expected both (tokens, " + std::to_string(dim()) + ")");
    const Index cols = hidden_dim();
    // One fused pass per row: activation, then the row's dropout mask.
    cache.dropout = stream != nullptr && p_ > 0;
    if (stream) cache.stream = *stream;
    if (cache.dropout && (rows_per_sequence <= 0 || tokens % rows_per_sequence != 0))
      throw Error(std::string(fn) + ": rows_per_sequence is " + std::to_string(rows_per_sequence) +
                  ", expected a positive divisor of the " + std::to_string(tokens) + " rows of x");
    cache.rows_per_sequence = rows_per_sequence;
    cache.pre.resize(tokens, cols);
    Matrix& hidden = cache.linear2.input;  // linear2's cache keeps its input: written there, not copied
    hidden.resize(tokens, cols);
    if (inference)
      linear1_.infer(x, cache.linear1, cache.pre);
    else
      linear1_.forward(x, cache.linear1, cache.pre);
    const bool gelu_act = activation_ == Activation::GELU;
    const std::uint32_t threshold = cache.dropout ? drop_threshold(p_) : 0;
    const Scalar keep_scale = static_cast<Scalar>(cache.dropout ? 1.0 / (1.0 - p_) : 1.0);
    parallel_for(tokens, (gelu_act ? 30.0 : 2.0) * cols * tokens, [&](Index r) {
      const Scalar* pre = cache.pre.row(r).data();
      Scalar* h = hidden.row(r).data();
      for (Index c = 0; c < cols; ++c) h[c] = gelu_act ? gelu(pre[c]) : (pre[c] > 0 ? pre[c] : Scalar(0));
      if (cache.dropout) dropout_token_row(cache.stream, cache.rows_per_sequence, r, h, cols, threshold, keep_scale);
    });
    if (inference)
      linear2_.infer(hidden, cache.linear2, y);
    else
      linear2_.forward(hidden, cache.linear2, y);
  }

  Linear<Scalar> linear1_, linear2_;
  Activation activation_ = Activation::ReLU;
  double p_ = 0;
  LayerIdentity identity_;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_FEED_FORWARD_HPP
