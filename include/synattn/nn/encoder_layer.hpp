// synattn — one Transformer encoder layer around SyntaxBiasedAttention,
// pre-norm or post-norm, with residual connections and dropout:
//
//   pre-norm:   h = x + Drop(Attn(LN1(x)));   y = h + Drop(FFN(LN2(h)))
//   post-norm:  h = LN1(x + Drop(Attn(x)));   y = LN2(h + Drop(FFN(h)))
//
// Dropout sites (each its own stream derived from the layer's stream, see
// common.hpp): attention output, FFN hidden, FFN output, and the attention
// probabilities (options.attention.dropout, applied by the attention layer
// from its own derived stream). Without a stream (eval mode) nothing is
// dropped.
//
// The layer contract (docs/guide.md), with the attention layer's inputs
// (attention/inputs.hpp): forward({x, lengths, buckets}, cache, y, stream)
// or forward({x, packed}, ...), infer(input, workspace, y) (the same y
// bit for bit, keeping nothing: the attention layer's infer(), which keeps
// no probabilities), backward(cache, dy, dx). The cache holds the
// sub-layers' caches (the attention's keeps its input, the FFN's linears
// theirs) and the residual sums; dx may alias dy.
#ifndef SYNATTN_NN_ENCODER_LAYER_HPP
#define SYNATTN_NN_ENCODER_LAYER_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../attention/syntax_attention.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/layer_identity.hpp"
#include "../util/random.hpp"
#include "common.hpp"
#include "feed_forward.hpp"
#include "layer_norm.hpp"

namespace synattn {
namespace nn {

struct EncoderLayerOptions {
  // d_model, heads, key/value sizes, syntax_bias and its BiasTableOptions.
  // Its seed is replaced by one derived from `seed` below.
  AttentionOptions attention;
  int d_ff = 0;  // 0: 4 * d_model
  Activation activation = Activation::ReLU;
  bool pre_norm = true;
  double attention_output_dropout = 0.0;
  double ffn_hidden_dropout = 0.0;
  double ffn_output_dropout = 0.0;
  double layer_norm_eps = 1e-5;
  std::uint64_t seed = 0x5eed;

  int resolved_d_ff() const noexcept { return d_ff > 0 ? d_ff : 4 * attention.d_model; }
  void validate(const std::string& where) const {
    check_probability(where + ".attention_output_dropout", attention_output_dropout);
    check_probability(where + ".ffn_hidden_dropout", ffn_hidden_dropout);
    check_probability(where + ".ffn_output_dropout", ffn_output_dropout);
    if (d_ff < 0) throw Error(where + ": d_ff must be >= 0 (0: 4 * d_model), got " + std::to_string(d_ff));
  }
};

template <class Scalar>
struct EncoderLayerCache {
  using Matrix = RowMajorMatrix<Scalar>;
  AttentionCache<Scalar> attention;
  LayerNormCache<Scalar> norm1, norm2;
  FeedForwardCache<Scalar> ffn;  // ffn.linear1.input: the FFN's input (pre-norm LN2(h); post-norm h)
  Matrix attn_in;   // pre-norm: LN1(x) (the attention's input, which its cache copies); post-norm: unused
  Matrix attn_out;  // Drop(Attn(.)), then the residual sum h (pre-norm) or x + a (post-norm)
  Matrix ffn_out;   // Drop(FFN(.)), then the pre-LN2 sum (post-norm)
  Matrix d1, d2, d3;  // backward scratch
  bool dropout = false;
  RandomStream stream;
  Index rows_per_sequence = 1;  // the forward's padded length n: masks are keyed by (sequence, position)
  CacheStamp stamp;             // which layer filled it (util/layer_identity.hpp)
};

template <class Scalar>
class EncoderLayer {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = EncoderLayerCache<Scalar>;

  explicit EncoderLayer(const EncoderLayerOptions& options)
      : options_(checked(options)),
        attention_(attention_options(options)),
        norm1_(options.attention.d_model, options.layer_norm_eps),
        norm2_(options.attention.d_model, options.layer_norm_eps),
        ffn_(options.attention.d_model, options.resolved_d_ff(), options.activation, options.ffn_hidden_dropout,
             RandomStream(options.seed).derive(2)) {}

  const EncoderLayerOptions& options() const noexcept { return options_; }
  int d_model() const noexcept { return options_.attention.d_model; }

  using SelfInput = SelfAttentionInput<Scalar>;
  using PackedInput = PackedSelfAttentionInput<Scalar>;

  // x, y: (batch * n, d_model); lengths and buckets as for the attention
  // layer (buckets may be 0 x 0 when it has no syntax bias), or packed
  // documents. `stream` is this layer's dropout stream; null: eval mode.
  void forward(const SelfInput& input, Cache& c, Eigen::Ref<Matrix> y, const RandomStream* stream = nullptr) const {
    c.stamp.clear();
    run(input, input.lengths, c, y, stream, false);
    c.stamp.stamp(identity_);
  }
  void forward(const PackedInput& input, Cache& c, Eigen::Ref<Matrix> y, const RandomStream* stream = nullptr) const {
    c.stamp.clear();
    run(input, input.buckets.lengths(), c, y, stream, false);
    c.stamp.stamp(identity_);
  }
  // forward() without a stream, bit for bit, keeping nothing for backward
  // (the workspace lends its buffers; backward() refuses it).
  void infer(const SelfInput& input, Cache& workspace, Eigen::Ref<Matrix> y) const {
    workspace.stamp.clear();
    run(input, input.lengths, workspace, y, nullptr, true);
  }
  void infer(const PackedInput& input, Cache& workspace, Eigen::Ref<Matrix> y) const {
    workspace.stamp.clear();
    run(input, input.buckets.lengths(), workspace, y, nullptr, true);
  }

  // dy (tokens, d) -> dx (tokens, d), caller-sized; adds every parameter
  // gradient. dx may be dy itself. The cache must come from this layer's
  // last forward() with it, and is used once; all checks precede any write.
  void backward(Cache& c, const Eigen::Ref<const Matrix>& dy, Eigen::Ref<Matrix> dx) {
    c.stamp.check("EncoderLayer::backward", identity_);
    const Index tokens = dy.rows(), d = d_model();
    if (dy.cols() != d || tokens != c.ffn_out.rows() || dx.rows() != tokens || dx.cols() != d)
      throw Error("EncoderLayer::backward: dy is " + shape_text(dy.rows(), dy.cols()) + " and dx " +
                  shape_text(dx.rows(), dx.cols()) + ", expected both " + shape_text(c.ffn_out.rows(), d) +
                  " (the forward's shape)");
    c.stamp.mark_used();
    // dx is written only at the end, after the last read of dy: dx may be
    // the matrix dy views.
    Matrix& dh = c.d1;  // dL/dh (tokens, d)
    Matrix& df = c.d2;  // dL/d(FFN output) and then dL/d(FFN input) (tokens, d)
    Matrix& da = c.d3;  // dL/d(attention output), then its input (tokens, d)
    da.resize(tokens, d);
    if (options_.pre_norm) {
      // y = h + Drop(FFN(LN2(h))):  dh = dy + LN2'(FFN'(Drop'(dy)))
      df = dy;
      drop(c, kSiteFeedForwardOutput, options_.ffn_output_dropout, df);
      ffn_.backward(c.ffn, df, da);                                   // da: dL/dv (tokens, d)
      norm2_.backward(c.norm2, da, da);                               // dL/dh through LN2
      dh = dy + da;
      // h = x + Drop(Attn(LN1(x))):  dx = dh + LN1'(Attn'(Drop'(dh)))
      da = dh;
      drop(c, kSiteAttentionOutput, options_.attention_output_dropout, da);
      attention_.backward(c.attention, da, {df});                     // df: dL/du (tokens, d)
      norm1_.backward(c.norm1, df, df);                               // dL/dx through LN1
      dx = dh + df;
    } else {
      // y = LN2(g), g = h + Drop(FFN(h))
      dh.resize(tokens, d);
      norm2_.backward(c.norm2, dy, dh);                               // dh: dL/dg (tokens, d)
      df = dh;
      drop(c, kSiteFeedForwardOutput, options_.ffn_output_dropout, df);
      ffn_.backward(c.ffn, df, da);                                   // da: FFN path's dL/dh
      da += dh;                                                       // + residual: dL/dh
      // h = LN1(x + Drop(Attn(x)))
      norm1_.backward(c.norm1, da, da);                               // dL/d(x + a)
      dh = da;
      drop(c, kSiteAttentionOutput, options_.attention_output_dropout, da);
      attention_.backward(c.attention, da, {df});                     // df: attention path's dL/dx
      dx = dh + df;
    }
  }

  // The attention layer's input of the same form, over other rows.
  static SelfInput rows_of(const SelfInput& in, const Eigen::Ref<const Matrix>& x) {
    return SelfInput{x, in.lengths, in.buckets};
  }
  static PackedInput rows_of(const PackedInput& in, const Eigen::Ref<const Matrix>& x) {
    return PackedInput{x, in.buckets};
  }

  SyntaxBiasedAttention<Scalar>& attention() noexcept { return attention_; }
  const SyntaxBiasedAttention<Scalar>& attention() const noexcept { return attention_; }
  LayerNorm<Scalar>& norm1() noexcept { return norm1_; }
  LayerNorm<Scalar>& norm2() noexcept { return norm2_; }
  FeedForward<Scalar>& feed_forward() noexcept { return ffn_; }

  // f(name prefix, ParameterStore&, shared prefix) for every sub-layer store,
  // in order; `shared_bias` (non-empty) names where a shared table and scale
  // live ("bias." -> "bias.table", "bias.scale").
  template <class F>
  void visit_stores(const std::string& prefix, const std::string& shared_bias, F&& f) {
    f(prefix + "attention.", attention_.parameter_store(), attention_.has_syntax_bias() ? shared_bias : std::string());
    f(prefix + "norm1.", norm1_.parameter_store(), std::string());
    ffn_.visit_stores(prefix + "ffn.",
                      [&](const std::string& p, ParameterStore<Scalar>& s) { f(p, s, std::string()); });
    f(prefix + "norm2.", norm2_.parameter_store(), std::string());
  }
  void zero_grad() {
    attention_.zero_grad();
    norm1_.zero_grad();
    norm2_.zero_grad();
    ffn_.zero_grad();
  }

 private:
  static const EncoderLayerOptions& checked(const EncoderLayerOptions& o) {
    o.validate("EncoderLayerOptions");
    return o;
  }
  static AttentionOptions attention_options(const EncoderLayerOptions& o) {
    AttentionOptions a = o.attention;
    a.seed = RandomStream(o.seed).derive(1).key();
    return a;
  }

  // forward() and infer(): one sequence of steps; inference calls the
  // sub-layers' infer() (the same values) and draws no dropout.
  template <class Input>
  void run(const Input& input, const std::vector<int>& lengths, Cache& c, Eigen::Ref<Matrix> y,
           const RandomStream* stream, bool inference) const {
    const Eigen::Ref<const Matrix>& x = input.x;
    const Index tokens = x.rows(), d = d_model();
    if (x.cols() != d || y.rows() != tokens || y.cols() != d)
      throw Error(std::string(inference ? "EncoderLayer::infer" : "EncoderLayer::forward") + ": x is " +
                  shape_text(x.rows(), x.cols()) + " and y " + shape_text(y.rows(), y.cols()) +
                  ", expected both (tokens, " + std::to_string(d) + ")");
    c.dropout = stream != nullptr;
    if (stream) c.stream = *stream;
    // Padded length (the attention layer checks that the rows split evenly).
    c.rows_per_sequence = lengths.empty() ? 1 : std::max<Index>(1, tokens / static_cast<Index>(lengths.size()));
    c.attn_out.resize(tokens, d);
    Matrix& ffn_in = c.ffn.linear1.input;  // the FFN's linear1 keeps its input: written there, not copied
    ffn_in.resize(tokens, d);
    c.ffn_out.resize(tokens, d);
    const RandomStream ffn_hidden = c.stream.derive(kSiteFeedForwardHidden);
    const auto norm = [&](const LayerNorm<Scalar>& ln, const Eigen::Ref<const Matrix>& in, LayerNormCache<Scalar>& lc,
                          Eigen::Ref<Matrix> out) {
      if (inference)
        ln.infer(in, lc, out);
      else
        ln.forward(in, lc, out);
    };
    const auto feed_forward = [&] {
      if (inference)
        ffn_.infer({ffn_in, c.rows_per_sequence}, c.ffn, c.ffn_out);
      else
        ffn_.forward({ffn_in, c.rows_per_sequence}, c.ffn, c.ffn_out, stream ? &ffn_hidden : nullptr);
      drop(c, kSiteFeedForwardOutput, options_.ffn_output_dropout, c.ffn_out);
    };
    if (options_.pre_norm) {
      c.attn_in.resize(tokens, d);
      norm(norm1_, x, c.norm1, c.attn_in);                            // u = LN1(x)
      attend(rows_of(input, c.attn_in), c, stream, inference);        // a = Drop(Attn(u))
      c.attn_out += x;                                                // h = x + a (kept in attn_out)
      norm(norm2_, c.attn_out, c.norm2, ffn_in);                      // v = LN2(h)
      feed_forward();                                                 // f = Drop(FFN(v))
      y = c.attn_out + c.ffn_out;                                     // y = h + f
    } else {
      attend(rows_of(input, x), c, stream, inference);                // a = Drop(Attn(x))
      c.attn_out += x;                                                // x + a
      norm(norm1_, c.attn_out, c.norm1, ffn_in);                      // h = LN1(x + a)
      feed_forward();                                                 // f = Drop(FFN(h))
      c.ffn_out += ffn_in;                                            // h + f
      norm(norm2_, c.ffn_out, c.norm2, y);                            // y = LN2(.)
    }
  }

  // cache.attn_out = Drop(Attn(in)).
  template <class Input>
  void attend(const Input& in, Cache& c, const RandomStream* stream, bool inference) const {
    if (inference) {
      attention_.infer(in, c.attention, c.attn_out);
      return;
    }
    // Training mode hands the attention layer its own stream, which drops
    // probabilities when options().attention.dropout > 0 (and is ignored
    // otherwise); eval mode never drops.
    std::optional<RandomStream> own;
    if (stream) own = stream->derive(kSiteAttentionProbabilities);
    attention_.forward(in, c.attention, c.attn_out, own ? &*own : nullptr);
    drop(c, kSiteAttentionOutput, options_.attention_output_dropout, c.attn_out);
  }

  // In-place dropout of site `site`'s mask (forward and backward alike).
  static void drop(const Cache& c, DropoutSite site, double p, Matrix& m) {
    if (c.dropout && p > 0) apply_dropout(c.stream.derive(site), p, c.rows_per_sequence, m);
  }

  EncoderLayerOptions options_;
  SyntaxBiasedAttention<Scalar> attention_;
  LayerNorm<Scalar> norm1_, norm2_;
  FeedForward<Scalar> ffn_;
  LayerIdentity identity_;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_ENCODER_LAYER_HPP
