// synattn — a stack of N encoder layers with an optional final LayerNorm,
// the syntax bias on a chosen subset of layers, each biased layer with its own
// table and scale or one table + scale shared by all of them.
//
// Sharing is realised by the parameter binding of the model that owns the
// encoder (see parameter_binding.hpp): the biased layers' "table" / "scale"
// are bound to one slice of the model's buffer, named "bias.table" /
// "bias.scale", and every layer's backward adds into its one gradient. A
// standalone Encoder (not bound into a model) keeps separate tables.
//
// The layer contract (docs/guide.md), with the attention layer's inputs:
// forward({x, lengths, buckets} or {x, packed}, cache, out, stream),
// infer(input, workspace, out), backward(cache, dy, dx[, on_done]). The
// cache holds the layers' caches and two buffers the layers' outputs pass
// through (no layer's backward reads its output, so none is kept); the
// output is the caller's.
#ifndef SYNATTN_NN_ENCODER_HPP
#define SYNATTN_NN_ENCODER_HPP

#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/layer_identity.hpp"
#include "../util/random.hpp"
#include "encoder_layer.hpp"
#include "layer_norm.hpp"

namespace synattn {
namespace nn {

// Which layers get the syntax bias.
enum class BiasLayers { All, Bottom, Top, None, Custom };

struct EncoderOptions {
  int layers = 2;
  // Options of every layer (attention.syntax_bias is overridden per layer by
  // the choice below; attention.bias is passed through to biased layers).
  EncoderLayerOptions layer;
  BiasLayers bias_layers = BiasLayers::All;
  int bias_k = 0;                // the k of Bottom (layers 0..k-1) and Top (the last k)
  std::vector<bool> biased;      // Custom: one flag per layer
  bool share_table = false;      // one table + scale for all biased layers
  bool final_norm = true;        // a LayerNorm after the last layer (usual with pre-norm)

  // One flag per layer: whether it has the syntax bias. Throws on bad options.
  std::vector<bool> resolved_biased() const {
    if (layers < 1) throw Error("EncoderOptions: layers must be >= 1, got " + std::to_string(layers));
    std::vector<bool> b(static_cast<std::size_t>(layers), false);
    const auto check_k = [&] {
      if (bias_k < 0 || bias_k > layers)
        throw Error("EncoderOptions: bias_k must be in [0, " + std::to_string(layers) + "], got " +
                    std::to_string(bias_k));
    };
    switch (bias_layers) {
      case BiasLayers::All:
        b.assign(b.size(), true);
        break;
      case BiasLayers::None:
        break;
      case BiasLayers::Bottom:
        check_k();
        for (int l = 0; l < bias_k; ++l) b[static_cast<std::size_t>(l)] = true;
        break;
      case BiasLayers::Top:
        check_k();
        for (int l = layers - bias_k; l < layers; ++l) b[static_cast<std::size_t>(l)] = true;
        break;
      case BiasLayers::Custom:
        if (biased.size() != b.size())
          throw Error("EncoderOptions: biased has " + std::to_string(biased.size()) +
                      " flags, expected one per layer (" + std::to_string(layers) + ")");
        b = biased;
        break;
    }
    return b;
  }
};

template <class Scalar>
struct EncoderCache {
  std::vector<EncoderLayerCache<Scalar>> layers;
  RowMajorMatrix<Scalar> between[2];            // layer outputs on the way up (tokens, d), alternating
  LayerNormCache<Scalar> norm;
  RowMajorMatrix<Scalar> dbuf[2];               // backward ping-pong
  CacheStamp stamp;                             // which encoder filled it (util/layer_identity.hpp)
};

template <class Scalar>
class Encoder {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = EncoderCache<Scalar>;

  explicit Encoder(const EncoderOptions& options) : options_(options), biased_(options.resolved_biased()) {
    layers_.reserve(biased_.size());
    for (std::size_t l = 0; l < biased_.size(); ++l) {
      EncoderLayerOptions o = options.layer;
      o.attention.syntax_bias = biased_[l];
      o.seed = RandomStream(options.layer.seed).derive(l).key();
      layers_.emplace_back(o);
    }
    if (options.final_norm) norm_.emplace_back(options.layer.attention.d_model, options.layer.layer_norm_eps);
  }

  const EncoderOptions& options() const noexcept { return options_; }
  int num_layers() const noexcept { return static_cast<int>(layers_.size()); }
  bool is_biased(int layer) const { return biased_.at(static_cast<std::size_t>(layer)); }
  bool any_biased() const noexcept {
    for (bool b : biased_)
      if (b) return true;
    return false;
  }
  EncoderLayer<Scalar>& layer(int l) { return layers_.at(static_cast<std::size_t>(l)); }
  const EncoderLayer<Scalar>& layer(int l) const { return layers_.at(static_cast<std::size_t>(l)); }
  bool has_final_norm() const noexcept { return !norm_.empty(); }

  using SelfInput = SelfAttentionInput<Scalar>;
  using PackedInput = PackedSelfAttentionInput<Scalar>;

  // out (batch * n, d) = the encoder over input.x (batch * n, d).
  // `stream` (null: eval) is the encoder's; layer l uses stream->derive(l).
  // out must not overlap input.x.
  void forward(const SelfInput& input, Cache& c, Eigen::Ref<Matrix> out, const RandomStream* stream = nullptr) const {
    c.stamp.clear();
    run(input, c, out, stream, false);
    c.stamp.stamp(identity_);
  }
  void forward(const PackedInput& input, Cache& c, Eigen::Ref<Matrix> out,
               const RandomStream* stream = nullptr) const {
    c.stamp.clear();
    run(input, c, out, stream, false);
    c.stamp.stamp(identity_);
  }
  // forward() without a stream, bit for bit, keeping nothing (every layer's
  // infer(); the workspace lends its buffers, and backward() refuses it).
  void infer(const SelfInput& input, Cache& workspace, Eigen::Ref<Matrix> out) const {
    workspace.stamp.clear();
    run(input, workspace, out, nullptr, true);
  }
  void infer(const PackedInput& input, Cache& workspace, Eigen::Ref<Matrix> out) const {
    workspace.stamp.clear();
    run(input, workspace, out, nullptr, true);
  }

  // dy: dL/d(output) -> dx: dL/dx; adds every parameter gradient.
  // on_done (optional) is called as each part's gradients become final:
  // on_done(num_layers()) after the final norm (when there is one), then
  // on_done(l) after layer l, top to bottom. A data-parallel trainer uses it
  // to start reducing those gradients while lower layers are still being
  // differentiated (mpi/data_parallel.hpp). The cache must come from this
  // encoder's last forward() with it, and is used once; all checks precede
  // any write.
  void backward(Cache& c, const Eigen::Ref<const Matrix>& dy, Eigen::Ref<Matrix> dx,
                const std::function<void(int)>& on_done = {}) {
    const char* fn = "Encoder::backward";
    c.stamp.check(fn, identity_);
    const std::size_t L = layers_.size();
    const Index rows = c.layers.empty() ? 0 : c.layers.back().ffn_out.rows(), d = options_.layer.attention.d_model;
    if (dy.rows() != rows || dy.cols() != d || dx.rows() != rows || dx.cols() != d)
      throw Error(std::string(fn) + ": dy is " + shape_text(dy.rows(), dy.cols()) + " and dx " +
                  shape_text(dx.rows(), dx.cols()) + ", expected both " + shape_text(rows, d) +
                  " (the forward's output)");
    c.stamp.mark_used();
    Matrix* cur = &c.dbuf[0];
    Matrix* next = &c.dbuf[1];
    if (!norm_.empty()) {
      cur->resize(dy.rows(), dy.cols());
      norm_[0].backward(c.norm, dy, *cur);
      if (on_done) on_done(static_cast<int>(L));
    } else {
      *cur = dy;
    }
    for (std::size_t l = L; l-- > 0;) {
      if (l == 0) {
        layers_[l].backward(c.layers[l], *cur, dx);
      } else {
        next->resize(dy.rows(), dy.cols());
        layers_[l].backward(c.layers[l], *cur, *next);
      }
      if (on_done) on_done(static_cast<int>(l));
      if (l > 0) std::swap(cur, next);
    }
  }

  // Stores in order: "layers.<l>.{attention,norm1,ffn.linear1,ffn.linear2,norm2}.", then "norm.".
  template <class F>
  void visit_stores(const std::string& prefix, F&& f) {
    const std::string shared = options_.share_table ? prefix + "bias." : std::string();
    for (std::size_t l = 0; l < layers_.size(); ++l)
      layers_[l].visit_stores(prefix + "layers." + std::to_string(l) + ".", shared, f);
    if (!norm_.empty()) f(prefix + "norm.", norm_[0].parameter_store(), std::string());
  }
  void zero_grad() {
    for (auto& l : layers_) l.zero_grad();
    for (auto& n : norm_) n.zero_grad();
  }

 private:
  EncoderOptions options_;
  std::vector<bool> biased_;
  std::vector<EncoderLayer<Scalar>> layers_;
  // forward() and infer(): layer l reads layer l-1's output from one buffer
  // and writes the other; the last step (the final norm, or the top layer)
  // writes out.
  template <class Input>
  void run(const Input& input, Cache& c, Eigen::Ref<Matrix> out, const RandomStream* stream, bool inference) const {
    const Eigen::Ref<const Matrix>& x = input.x;
    const std::size_t L = layers_.size();
    if (out.rows() != x.rows() || out.cols() != x.cols())
      throw Error(std::string(inference ? "Encoder::infer" : "Encoder::forward") + ": out is " +
                  shape_text(out.rows(), out.cols()) + ", expected " + shape_text(x.rows(), x.cols()) +
                  " (the input's shape)");
    c.layers.resize(L);
    for (std::size_t l = 0; l < L; ++l) {
      const RandomStream ls = stream ? stream->derive(l) : RandomStream();
      const Eigen::Ref<const Matrix> in = l == 0 ? x : Eigen::Ref<const Matrix>(c.between[(l - 1) % 2]);
      const bool last = l + 1 == L && norm_.empty();
      Matrix& buffer = c.between[l % 2];
      if (!last) buffer.resize(x.rows(), x.cols());
      Eigen::Ref<Matrix> y = last ? out : Eigen::Ref<Matrix>(buffer);
      if (inference)
        layers_[l].infer(EncoderLayer<Scalar>::rows_of(input, in), c.layers[l], y);
      else
        layers_[l].forward(EncoderLayer<Scalar>::rows_of(input, in), c.layers[l], y, stream ? &ls : nullptr);
    }
    if (!norm_.empty()) {
      if (inference)
        norm_[0].infer(c.between[(L - 1) % 2], c.norm, out);
      else
        norm_[0].forward(c.between[(L - 1) % 2], c.norm, out);
    }
  }

  std::vector<LayerNorm<Scalar>> norm_;  // empty or one
  LayerIdentity identity_;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_ENCODER_HPP
