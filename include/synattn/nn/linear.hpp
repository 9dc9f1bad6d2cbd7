// synattn — nn.Linear: y = x W^T + b over all tokens of a batch at once.
//
// Tokens are rows of a row-major (tokens, in) matrix. Products go through
// kernels::linear_product and kernels::product (the faster of Eigen's and
// the dispatched GEMM) in fixed row blocks (parallel_chunks), so results are
// bit-identical for any thread count.
//
// The layer contract (docs/guide.md, "The layer contract"): forward(x, cache,
// y) keeps in the cache what backward needs, here the input rows x (a
// composite layer that writes its sub-layer's input straight into
// cache.input pays no copy); infer(x, workspace, y) keeps nothing and is
// const; backward(cache, dy, dx) adds the parameter gradients and writes dx,
// or backward(cache, dy) only the parameter gradients. A cache serves one
// backward() of the layer that filled it (util/layer_identity.hpp).
#ifndef SYNATTN_NN_LINEAR_HPP
#define SYNATTN_NN_LINEAR_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../error.hpp"
#include "../kernels/linear_small.hpp"
#include "../kernels/product.hpp"
#include "../matrix.hpp"
#include "../util/parallel.hpp"
#include "../util/init.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"
#include "common.hpp"

namespace synattn {
namespace nn {

// What Linear's backward needs: its forward input.
template <class Scalar>
struct LinearCache {
  RowMajorMatrix<Scalar> input;  // (tokens, in): x (dW = dy^T x)
  CacheStamp stamp;              // which layer filled it (util/layer_identity.hpp)
};

template <class Scalar>
class Linear : public LeafLayer<Scalar> {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = LinearCache<Scalar>;

  // Parameters "weight" (out, in) and, with `bias`, "bias" (1, out), both
  // U(-1/sqrt(in), 1/sqrt(in)) from stream `init` (PyTorch's default).
  Linear(int in, int out, const RandomStream& init, bool bias = true) : in_(in), out_(out) {
    if (in < 1 || out < 1)
      throw Error("Linear: in and out must be >= 1, got in " + std::to_string(in) + ", out " + std::to_string(out));
    weight_ = this->store_.add("weight", out, in);
    if (bias) bias_ = this->store_.add("bias", 1, out);
    reset_parameters(init);
  }

  // util/init.hpp's linear rule: the weight from init.derive(0), the bias from init.derive(1).
  void reset_parameters(const RandomStream& init) {
    if (bias_ >= 0)
      init_linear(this->store_.value(weight_), this->store_.value(bias_), init);
    else
      init_linear(this->store_.value(weight_), init);
  }

  int in_features() const noexcept { return in_; }
  int out_features() const noexcept { return out_; }
  bool has_bias() const noexcept { return bias_ >= 0; }

  // y (tokens, out) = x (tokens, in) W^T + b; the cache keeps x (no copy
  // when x is cache.input itself). y must not overlap x.
  void forward(const Eigen::Ref<const Matrix>& x, Cache& cache, Eigen::Ref<Matrix> y) const {
    cache.stamp.clear();
    apply("Linear::forward", x, y);
    if (x.data() != cache.input.data() || x.rows() != cache.input.rows() || x.cols() != cache.input.cols())
      cache.input = x;
    cache.stamp.stamp(this->identity_);
  }

  // The same y, keeping nothing: `workspace` is not used (Linear needs no
  // buffers) but is cleared, so backward() refuses it.
  void infer(const Eigen::Ref<const Matrix>& x, Cache& workspace, Eigen::Ref<Matrix> y) const {
    workspace.stamp.clear();
    apply("Linear::infer", x, y);
  }

  // dy = dL/dy (tokens, out): adds dW += dy^T x and db += colsum(dy) into
  // the layer's gradients and writes dx (tokens, in) = dy W, caller-sized.
  // dx may alias dy (then it is computed into a temporary first). All
  // checks precede any write.
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dy, Eigen::Ref<Matrix> dx) {
    const char* fn = "Linear::backward";
    check_backward(fn, cache, dy);
    check(fn, "dx", dx.rows(), dx.cols(), cache.input.rows(), in_);
    cache.stamp.mark_used();
    parameter_gradients(cache.input, dy);
    // dx (tokens, in) = dy (tokens, out) W (out, in); the product must not
    // write rows of dy it has yet to read.
    const auto w = this->store_.value(weight_);
    const auto input_gradient = [&](Eigen::Ref<Matrix> out) {
      parallel_chunks(dy.rows(), double(in_) * out_, [&](Index r0, Index m) {
        kernels::product<Scalar>(out.middleRows(r0, m), dy.middleRows(r0, m), w);
      });
    };
    if (storage_overlaps(dx, dy)) {
      Matrix separate(dy.rows(), in_);
      input_gradient(separate);
      dx = separate;
    } else {
      input_gradient(dx);
    }
  }
  // The parameter gradients alone (a first layer, whose input needs none).
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dy) {
    check_backward("Linear::backward", cache, dy);
    cache.stamp.mark_used();
    parameter_gradients(cache.input, dy);
  }

  Eigen::Map<Matrix> weight() { return this->store_.value(weight_); }
  Eigen::Map<const Matrix> weight() const { return this->store_.value(weight_); }
  Eigen::Map<Matrix> bias() { return this->store_.value(require_bias()); }
  Eigen::Map<Matrix> weight_gradient() { return this->store_.gradient(weight_); }
  Eigen::Map<Matrix> bias_gradient() { return this->store_.gradient(require_bias()); }

 private:
  int require_bias() const {
    if (bias_ < 0) throw Error("Linear: the layer was built without a bias");
    return bias_;
  }
  // y = x W^T + b, after the shape checks.
  void apply(const char* fn, const Eigen::Ref<const Matrix>& x, Eigen::Ref<Matrix> y) const {
    check(fn, "x", x.rows(), x.cols(), x.rows(), in_);
    check(fn, "y", y.rows(), y.cols(), x.rows(), out_);
    const auto w = this->store_.value(weight_);
    const Scalar* b = bias_ >= 0 ? this->store_.value_data(bias_) : nullptr;
    parallel_chunks(x.rows(), double(in_) * out_, [&](Index r0, Index m) {
      kernels::linear_product<Scalar>(y.middleRows(r0, m), x.middleRows(r0, m), w, b);
    });
  }
  void check_backward(const char* fn, const Cache& cache, const Eigen::Ref<const Matrix>& dy) const {
    cache.stamp.check(fn, this->identity_);
    check(fn, "dy", dy.rows(), dy.cols(), cache.input.rows(), out_);
  }
  // dW += dy^T x, db += colsum(dy).
  void parameter_gradients(const Matrix& x, const Eigen::Ref<const Matrix>& dy) {
    const Index tokens = x.rows();
    auto dw = this->store_.gradient(weight_);                                // dW: (out, in)
    Scalar* db = bias_ >= 0 ? this->store_.gradient_data(bias_) : nullptr;  // db: (out)
    // dW[r0:r0+m] (m, in) += dy[:, r0:r0+m]^T (m, tokens) x (tokens, in): row
    // blocks of W are independent, so the split never changes a sum's order.
    parallel_chunks(out_, double(tokens) * in_, [&](Index r0, Index m) {
      kernels::product<Scalar>(dw.middleRows(r0, m), dy.middleCols(r0, m), x, kernels::Transpose::lhs,
                               kernels::Accumulate::add);
      if (db) {
        Eigen::Map<Eigen::Matrix<Scalar, 1, Eigen::Dynamic>> acc(db + r0, m);
        for (Index r = 0; r < tokens; ++r) acc += dy.row(r).segment(r0, m);
      }
    });
  }
  static void check(const char* fn, const char* name, Index rows, Index cols, Index want_rows, Index want_cols) {
    if (rows != want_rows || cols != want_cols)
      throw Error(std::string(fn) + ": " + name + " is " + shape_text(rows, cols) +
                  ", expected " + shape_text(want_rows, want_cols));
  }

  int in_ = 0, out_ = 0;
  int weight_ = -1, bias_ = -1;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_LINEAR_HPP
