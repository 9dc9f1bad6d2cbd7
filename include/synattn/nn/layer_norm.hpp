// synattn — nn.LayerNorm over the feature axis of every token row:
//   y = (x - mean) / sqrt(var + eps) * weight + bias,  var biased (as PyTorch).
//
// The layer contract (docs/guide.md): forward(x, cache, y) keeps the
// normalised rows and 1 / std, infer(x, workspace, y) keeps nothing (the
// workspace lends its buffers, and backward() refuses it), backward(cache,
// dy, dx) writes dx; y may alias x and dx may alias dy.
#ifndef SYNATTN_NN_LAYER_NORM_HPP
#define SYNATTN_NN_LAYER_NORM_HPP

#include <Eigen/Core>

#include <cmath>
#include <string>
#include <type_traits>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/parallel.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parameters.hpp"
#include "common.hpp"

namespace synattn {
namespace nn {

// What backward needs: the normalised input and 1 / sqrt(var + eps) per row,
// and which layer filled it (util/layer_identity.hpp). Buffers are reused
// across calls of the same shape.
template <class Scalar>
struct LayerNormCache {
  RowMajorMatrix<Scalar> xhat;                        // (tokens, d)
  Eigen::Matrix<Scalar, Eigen::Dynamic, 1> rstd;      // (tokens)
  CacheStamp stamp;
};

template <class Scalar>
class LayerNorm : public LeafLayer<Scalar> {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = LayerNormCache<Scalar>;

  // Parameters "weight" (1, d) = 1 and "bias" (1, d) = 0.
  explicit LayerNorm(int d, double eps = 1e-5) : d_(d), eps_(eps) {
    if (d < 1) throw Error("LayerNorm: d must be >= 1, got " + std::to_string(d));
    if (!(eps > 0)) throw Error("LayerNorm: eps must be > 0, got " + std::to_string(eps));
    weight_ = this->store_.add("weight", 1, d);
    bias_ = this->store_.add("bias", 1, d);
    this->store_.value(weight_).setOnes();
  }

  int dim() const noexcept { return d_; }
  double eps() const noexcept { return eps_; }

  // y (tokens, d) = LN(x); y may alias x (rows are processed one at a time).
  void forward(const Eigen::Ref<const Matrix>& x, Cache& cache, Eigen::Ref<Matrix> y) const {
    cache.stamp.clear();
    normalize("LayerNorm::forward", x, cache, y);
    cache.stamp.stamp(this->identity_);
  }
  // The same y bit for bit; the workspace's buffers hold the normalised rows
  // on the way, and it is left holding no forward pass.
  void infer(const Eigen::Ref<const Matrix>& x, Cache& workspace, Eigen::Ref<Matrix> y) const {
    workspace.stamp.clear();
    normalize("LayerNorm::infer", x, workspace, y);
  }

  // dy (tokens, d) -> dx (tokens, d) (may alias dy); adds dweight += colsum(dy
  // * xhat), dbias += colsum(dy). With g = dy * weight:
  //   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
  // The cache must come from this layer's last forward() with it, and is
  // used once (util/layer_identity.hpp); all checks precede any write.
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dy, Eigen::Ref<Matrix> dx) {
    const char* fn = "LayerNorm::backward";
    cache.stamp.check(fn, this->identity_);
    const Index tokens = cache.xhat.rows();
    if (dy.rows() != tokens || dy.cols() != d_ || dx.rows() != tokens || dx.cols() != d_)
      throw Error(std::string(fn) + ": dy and dx must be " + shape_text(tokens, d_) +
                  " (the forward's shape), got " + shape_text(dy.rows(), dy.cols()) +
                  " and " + shape_text(dx.rows(), dx.cols()));
    cache.stamp.mark_used();
    auto dg = this->store_.gradient(weight_);  // (1, d)
    auto db = this->store_.gradient(bias_);    // (1, d)
    // Parameter gradients first, serially in token order (fixed sums), since
    // dx may overwrite dy.
    for (Index r = 0; r < tokens; ++r) {
      dg += dy.row(r).cwiseProduct(cache.xhat.row(r));
      db += dy.row(r);
    }
    const auto w = this->store_.value(weight_);
    const Scalar inv_d = Scalar(1) / Scalar(d_);
    // Eigen's row expressions, not scalar loops: a plain loop's two sums
    // cannot be vectorised without reassociating them, which the compiler
    // may not do (no -ffast-math).
    parallel_for(tokens, 8.0 * d_ * tokens, [&](Index r) {
      const auto xh = cache.xhat.row(r).array();
      const auto g = dy.row(r).array() * w.array();
      const Scalar mean_g = g.sum() * inv_d, mean_gx = (g * xh).sum() * inv_d;
      dx.row(r) = (cache.rstd[r] * (g - mean_g - xh * mean_gx)).matrix();
    });
  }

  Eigen::Map<Matrix> weight() { return this->store_.value(weight_); }
  Eigen::Map<Matrix> bias() { return this->store_.value(bias_); }

 private:
  void normalize(const char* fn, const Eigen::Ref<const Matrix>& x, Cache& cache, Eigen::Ref<Matrix> y) const {
    if (x.cols() != d_ || y.rows() != x.rows() || y.cols() != d_)
      throw Error(std::string(fn) + ": x is " + shape_text(x.rows(), x.cols()) + " and y " +
                  shape_text(y.rows(), y.cols()) + ", expected both (tokens, " + std::to_string(d_) + ")");
    const Index tokens = x.rows();
    cache.xhat.resize(tokens, d_);
    cache.rstd.resize(tokens);
    const auto g = this->store_.value(weight_);
    const auto b = this->store_.value(bias_);
    const Scalar inv_d = Scalar(1) / Scalar(d_);
    const Scalar eps = static_cast<Scalar>(eps_);
    parallel_for(tokens, 8.0 * d_ * tokens, [&](Index r) {
      const auto xr = x.row(r);
      Scalar mean = xr.sum() * inv_d;
      // A sum of finite values near the type's largest overflows: average
      // values divided first, which cannot (slower, so only then).
      if (!std::isfinite(mean)) mean = (xr.array() * inv_d).sum();
      auto xh = cache.xhat.row(r);
      xh = xr.array() - mean;
      const Scalar var = xh.squaredNorm() * inv_d;
      Scalar rstd = Scalar(1) / std::sqrt(var + eps);
      if (!std::isfinite(var)) {
        // The squares overflowed (|x - mean| above ~1.8e19 in float), which
        // made rstd 0 and the row the bias. Scale by the largest deviation
        // first, as LAPACK's nrm2 does: var = s^2 * mean((xh / s)^2).
        const Scalar s = xh.cwiseAbs().maxCoeff();
        if (std::isfinite(s) && s > 0) {
          const Scalar scaled_var = (xh / s).squaredNorm() * inv_d;
          rstd = Scalar(1) / (s * std::sqrt(scaled_var + eps / s / s));
        }  // else x holds inf or NaN: NaN propagates as IEEE arithmetic has it
      }
      xh *= rstd;
      cache.rstd[r] = rstd;
      y.row(r) = xh.cwiseProduct(g) + b;
    });
  }

  int d_ = 0;
  double eps_ = 1e-5;
  int weight_ = -1, bias_ = -1;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_LAYER_NORM_HPP
