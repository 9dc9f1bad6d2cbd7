// synattn — SyntaxTransformerTagger: a whole token-classification model,
//
//   ids -> Embedding(vocab, d) + sinusoidal positions -> Dropout
//       -> Encoder (N syntax-biased layers, optional final LayerNorm)
//       -> Linear(d, classes) -> softmax cross-entropy
//
// with every parameter in ONE flat values buffer and ONE flat gradients
// buffer (parameters(), gradients(); named views by parameter_infos()), so an
// optimiser, a checkpoint or an all-reduce each see one vector. Names:
//   embedding.weight
//   layers.<l>.attention.{Wq,Wk,Wv,bq,bk,bv,Wo,bo[,table,scale]}
//   layers.<l>.norm1.{weight,bias}  layers.<l>.ffn.linear{1,2}.{weight,bias}
//   layers.<l>.norm2.{weight,bias}  norm.{weight,bias}  (final LayerNorm)
//   bias.{table,scale}  (instead of per-layer table/scale when shared)
//   classifier.{weight,bias}
//
// A batch is `batch` sequences padded to n positions: token ids and labels
// are flat (batch * n) vectors in row-major (batch, n) order; lengths has one
// entry per sequence; buckets is the (batch * n, n) int8 block from
// synattn::bucketize (-1 masked), and may be empty when no layer is biased;
// with tree fusion (bias.fusion.views = V > 1) it stacks V such blocks,
// (V * batch * n, n), as data/token_batch.hpp makes them.
//
// Packed documents (bias/packed_buckets.hpp, data/packed_batch.hpp) take the
// place of lengths and buckets (PackedTokenInput: {ids, packed}): each
// sequence is several sentences, and attention sees only each sentence's
// window. Every layer must then have the syntax bias, and one tree view.
//
// The layer contract (docs/guide.md): forward(input, cache, logits,
// dropout) writes the caller's logits (batch * n, classes) and keeps in the
// cache what backward needs (the parts' caches: the embedding's ids, the
// classifier's input rows); infer(input, workspace, logits) keeps nothing;
// backward(cache, dlogits) (ids have no gradient). loss(cache, logits,
// labels) computes the cross-entropy and keeps dL/dlogits for backward(cache).
//
// Training step:
//   model.zero_grad();
//   RandomStream drop = RandomStream(seed).derive(step);
//   // (a process holding sequences [first, ...) of a global batch:
//   //  RandomStream(seed).derive(step).sequences_from(first), so its masks
//   //  are the one-process masks of those sequences)
//   model.forward({ids, lengths, buckets}, cache, logits, &drop);
//   LossResult l = model.loss(cache, logits, labels);
//   model.backward(cache);
//   params -= lr * grads  (on model.parameters(), model.gradients())
//
// backward(cache, on_ready) also reports, as it goes, which gradients are
// final: on_ready(from) means every gradient at flat offsets [from,
// parameter_count()) is complete (the buffer is laid out bottom-up and
// backward runs top-down: classifier, final norm, layers L-1..0, embedding).
// A shared table lives at its lowest layer's place, so it is reported with
// that layer. Data-parallel training starts reducing those slices while the
// lower layers are still being differentiated (mpi/data_parallel.hpp).
#ifndef SYNATTN_NN_TAGGER_HPP
#define SYNATTN_NN_TAGGER_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../attention/syntax_attention.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parameter_access.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"
#include "common.hpp"
#include "embedding.hpp"
#include "encoder.hpp"
#include "parameter_binding.hpp"
#include "token_classifier.hpp"

namespace synattn {
namespace nn {

struct TaggerOptions {
  int vocab_size = 0;   // ids in [0, vocab_size); 0 = padding, 1 = unknown word
  int num_classes = 0;
  int d_model = 128;
  int heads = 4;
  int d_ff = 256;
  int layers = 2;
  Activation activation = Activation::ReLU;
  bool pre_norm = true;
  bool final_norm = true;  // LayerNorm after the last layer

  // Dropout: `dropout` at every site, unless a per-site value is set: any
  // value but a negative one (unset) is that site's, so NaN is refused as
  // a probability rather than read as unset.
  double dropout = 0.1;
  double embedding_dropout = -1;
  double attention_output_dropout = -1;
  double ffn_hidden_dropout = -1;
  double ffn_output_dropout = -1;
  // Dropout of the attention probabilities (AttentionOptions::dropout).
  double attention_dropout = -1;

  // Further attention options (key_size, value_size, causal, talking heads,
  // check_finite); d_model, heads, syntax_bias, bias and seed are set from
  // this struct.
  AttentionOptions attention;
  BiasLayers bias_layers = BiasLayers::All;
  int bias_k = 0;
  std::vector<bool> biased;  // BiasLayers::Custom
  bool share_table = false;
  BiasTableOptions bias;

  int max_length = 512;  // positional table rows precomputed (longer still works)
  std::int32_t ignore_label = kIgnoreLabel;
  std::uint64_t seed = 1;

  static double site(double specific, double all) { return specific < 0 ? all : specific; }

  EncoderOptions encoder_options() const {
    EncoderOptions e;
    e.layers = layers;
    e.layer.attention = attention;
    e.layer.attention.d_model = d_model;
    e.layer.attention.heads = heads;
    e.layer.attention.bias = bias;
    e.layer.attention.dropout = site(attention_dropout, dropout);
    e.layer.d_ff = d_ff;
    e.layer.activation = activation;
    e.layer.pre_norm = pre_norm;
    e.layer.attention_output_dropout = site(attention_output_dropout, dropout);
    e.layer.ffn_hidden_dropout = site(ffn_hidden_dropout, dropout);
    e.layer.ffn_output_dropout = site(ffn_output_dropout, dropout);
    e.layer.seed = RandomStream(seed).derive(2).key();
    e.bias_layers = bias_layers;
    e.bias_k = bias_k;
    e.biased = biased;
    e.share_table = share_table;
    e.final_norm = final_norm;
    return e;
  }
};

// The tagger's inputs: token ids (batch * n) with the attention layer's
// lengths and buckets (attention/inputs.hpp; buckets 0 x 0 when no layer is
// biased), or with packed documents. Views, built in the call:
//   model.forward({ids, lengths, buckets}, cache, logits, &drop);
//   model.infer({ids, packed}, workspace, logits);
struct TokenInput {
  Eigen::Ref<const IdVector> ids;
  const std::vector<int>& lengths;
  Eigen::Ref<const BucketBlock> buckets = synattn::detail::no_buckets();
};
struct PackedTokenInput {
  Eigen::Ref<const IdVector> ids;
  const PackedBuckets& packed;
};

template <class Scalar>
struct TaggerCache {
  using Matrix = RowMajorMatrix<Scalar>;
  EmbeddingCache embedding;  // keeps the ids
  std::vector<int> lengths;
  Matrix embedded;  // (tokens, d): embeddings + positions, after dropout (the encoder's input)
  EncoderCache<Scalar> encoder;
  LinearCache<Scalar> classifier;  // keeps its input, the encoder's output (written there directly)
  Matrix logits;    // lent: loss_and_backward() and predict() write their logits here
  Matrix dlogits, dh, dx;
  bool dropout = false;
  RandomStream stream;
  Index rows_per_sequence = 1;  // the forward's padded length n (embedding dropout is keyed by sequence, position)
  bool has_loss = false;
  CacheStamp stamp;  // which model filled it (util/layer_identity.hpp)
};

template <class Scalar>
class SyntaxTransformerTagger : public BoundModelAccess<SyntaxTransformerTagger<Scalar>, TaggerOptions, Scalar> {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = TaggerCache<Scalar>;

  explicit SyntaxTransformerTagger(const TaggerOptions& options);

  // logits (batch * n, classes), caller-sized. `dropout` null: eval mode.
  void forward(const TokenInput& input, Cache& c, Eigen::Ref<Matrix> logits,
               const RandomStream* dropout = nullptr) const;
  // Packed documents: ids (batch * n), batch = packed.sequences().
  void forward(const PackedTokenInput& input, Cache& c, Eigen::Ref<Matrix> logits,
               const RandomStream* dropout = nullptr) const;
  // forward() without dropout, bit for bit, keeping nothing for backward
  // (every part's infer(): no attention probabilities are stored). The
  // workspace lends its buffers, one per concurrent call; backward() refuses it.
  void infer(const TokenInput& input, Cache& workspace, Eigen::Ref<Matrix> logits) const;
  void infer(const PackedTokenInput& input, Cache& workspace, Eigen::Ref<Matrix> logits) const;

  // Cross-entropy of `logits` (the ones forward() wrote with this cache);
  // keeps dL/dlogits for backward(). normaliser <= 0: the batch's own
  // counted tokens.
  LossResult loss(Cache& c, const Eigen::Ref<const Matrix>& logits, const Eigen::Ref<const IdVector>& labels,
                  double normaliser = 0) const;

  // on_ready(from): the gradients at flat offsets >= from are final (see top).
  using GradientsReady = std::function<void(Index from)>;

  // Adds dL/dparameters (of the last loss()) into gradients().
  void backward(Cache& c, const GradientsReady& on_ready = {});
  // The same for a caller's dlogits (batch * n, classes), without loss().
  void backward(Cache& c, const Eigen::Ref<const Matrix>& dlogits, const GradientsReady& on_ready = {});
  // A matrix expression as dlogits. Without this overload a plain Matrix is
  // ambiguous between the two above: a matrix is callable with an index, so
  // std::function (GradientsReady) converts from it as readily as Eigen::Ref
  // does; binding to MatrixBase is a derived-to-base conversion, which wins.
  template <typename Derived>
  void backward(Cache& c, const Eigen::MatrixBase<Derived>& dlogits, const GradientsReady& on_ready = {}) {
    backward(c, Eigen::Ref<const Matrix>(dlogits), on_ready);
  }

  // forward, loss and backward, the logits in the cache's lent buffer.
  LossResult loss_and_backward(const TokenInput& input, const Eigen::Ref<const IdVector>& labels, Cache& c,
                               const RandomStream* dropout, double normaliser = 0);
  LossResult loss_and_backward(const PackedTokenInput& input, const Eigen::Ref<const IdVector>& labels, Cache& c,
                               const RandomStream* dropout, double normaliser = 0);

  // Argmax class per token (-1 on padding), through infer().
  IdVector predict(const TokenInput& input, Cache& workspace) const;
  IdVector predict(const PackedTokenInput& input, Cache& workspace) const;

  // ---- Parts ----
  Embedding<Scalar>& embedding() noexcept { return s_.embedding; }
  Encoder<Scalar>& encoder() noexcept { return s_.encoder; }
  const Encoder<Scalar>& encoder() const noexcept { return s_.encoder; }
  TokenClassifier<Scalar>& classifier() noexcept { return s_.classifier; }
  // Layer l's attention (its table() and scale() give the learned s * T).
  SyntaxBiasedAttention<Scalar>& attention(int l) { return s_.encoder.layer(l).attention(); }

 private:
  static constexpr std::uint64_t kEncoderStream = 100;

  struct State {
    explicit State(const TaggerOptions& o)
        : options((check_dropout_sites(o), o)),  // before the parts, which would name their own options
          embedding(o.vocab_size, o.d_model, RandomStream(o.seed).derive(1)),
          positions(o.d_model, o.max_length),
          encoder(o.encoder_options()),
          classifier(o.d_model, o.num_classes, RandomStream(o.seed).derive(3), o.ignore_label) {}
    TaggerOptions options;
    Embedding<Scalar> embedding;
    SinusoidalPositionalEncoding<Scalar> positions;
    Encoder<Scalar> encoder;
    TokenClassifier<Scalar> classifier;
    ParameterStore<Scalar> root;  // every parameter; the parts' stores are bound to it
    LayerIdentity identity;       // new for a copy or an assignment: caches of the old model are refused

    static constexpr const char* kCopyName = "SyntaxTransformerTagger (copy)";

    // Every part's store, in the order of the flat buffer (BoundModel binds them).
    template <class F>
    void visit_stores(F&& f) {
      f(std::string("embedding."), embedding.parameter_store(), std::string());
      encoder.visit_stores("", f);
      f(std::string("classifier."), classifier.parameter_store(), std::string());
    }

    // Each site's resolved probability, named by the option that set it.
    static void check_dropout_sites(const TaggerOptions& o) {
      check_probability("TaggerOptions.dropout", o.dropout);
      const std::pair<const char*, double> sites[] = {{"embedding_dropout", o.embedding_dropout},
                                                      {"attention_output_dropout", o.attention_output_dropout},
                                                      {"ffn_hidden_dropout", o.ffn_hidden_dropout},
                                                      {"ffn_output_dropout", o.ffn_output_dropout},
                                                      {"attention_dropout", o.attention_dropout}};
      for (const auto& site : sites)
        check_probability(std::string("TaggerOptions.") + site.first, TaggerOptions::site(site.second, o.dropout));
    }
  };

  double embedding_dropout() const { return TaggerOptions::site(s_.options.embedding_dropout, s_.options.dropout); }

  // The checks of each input form; return n.
  Index check_input(const char* fn, const TokenInput& input) const;
  Index check_input(const char* fn, const PackedTokenInput& input) const;
  // The encoder's input of the same form.
  static SelfAttentionInput<Scalar> encoder_input(const TokenInput& in, const Eigen::Ref<const Matrix>& x) {
    return {x, in.lengths, in.buckets};
  }
  static PackedSelfAttentionInput<Scalar> encoder_input(const PackedTokenInput& in,
                                                        const Eigen::Ref<const Matrix>& x) {
    return {x, in.packed};
  }
  // forward() and infer() of both forms: one sequence of steps.
  template <class Input>
  void run(const char* fn, const Input& input, const std::vector<int>& lengths, Cache& c, Eigen::Ref<Matrix> logits,
           const RandomStream* dropout, bool inference) const;
  void backward_core(const char* fn, Cache& c, const Eigen::Ref<const Matrix>& dlogits,
                     const GradientsReady& on_ready);
  // `m` (logits or their gradient) has the forward pass's rows, one column
  // a class; `whose` ends the message.
  void check_class_rows(const char* fn, const char* name, const Eigen::Ref<const Matrix>& m, const Cache& c,
                        const char* whose) const {
    if (m.rows() != c.embedded.rows() || m.cols() != s_.options.num_classes)
      throw Error(std::string(fn) + ": " + name + " is " + shape_text(m.rows(), m.cols()) + ", expected " +
                  shape_text(c.embedded.rows(), s_.options.num_classes) + whose);
  }
  // loss_and_backward() of both forms.
  template <class Input>
  LossResult forward_loss_backward(const Input& input, const Eigen::Ref<const IdVector>& labels, Cache& c,
                                   const RandomStream* dropout, double normaliser);

  // Lowest flat offset of the parameters named "<prefix>..." (a few dozen
  // names compared, a handful of times per backward: negligible).
  Index stage_offset(const std::string& prefix) const;

  friend BoundModelAccess<SyntaxTransformerTagger, TaggerOptions, Scalar>;  // options() and parameter_store() read s_
  BoundModel<State> s_;  // the parts, bound into one buffer, with the copy and move rules
};


// Out-of-line members: with SYNATTN_COMPILED (synattn::compiled), the float
// and double instantiations are compiled once in src/compiled_tagger.cpp and
// declared extern below, so a program that uses the tagger does not compile
// them again.
template <class Scalar>
SyntaxTransformerTagger<Scalar>::SyntaxTransformerTagger(const TaggerOptions& options) : s_(options) {}

template <class Scalar>
Index SyntaxTransformerTagger<Scalar>::check_input(const char* fn, const TokenInput& input) const {
  const Index n = tokens_per_sequence(fn, "tokens", input.ids.size(), input.lengths);
  // Tree fusion stacks V views of the (batch * n, n) block (TokenBatch::views()); the layers check each view.
  const Index views = s_.options.bias.fusion.views;
  const Index tokens = input.ids.size();
  if (s_.encoder.any_biased() && (input.buckets.rows() != views * tokens || input.buckets.cols() != n))
    throw Error(std::string(fn) + ": buckets is " + shape_text(input.buckets.rows(), input.buckets.cols()) +
                ", expected " + shape_text(views * tokens, n) +
                (views > 1 ? " (views * batch * n, n) for " + std::to_string(views) + " tree views"
                           : std::string(" (batch * n, n)")) +
                " since some layers have the syntax bias");
  return n;
}

template <class Scalar>
Index SyntaxTransformerTagger<Scalar>::check_input(const char* fn, const PackedTokenInput& input) const {
  const Index n = tokens_per_sequence(fn, "tokens", input.ids.size(), input.packed.lengths());
  for (int l = 0; l < s_.encoder.num_layers(); ++l)
    if (!s_.encoder.is_biased(l))
      throw Error(std::string(fn) + ": layer " + std::to_string(l) +
                  " has no syntax bias; packed documents need every layer biased (their windows are buckets)");
  return n;
}

template <class Scalar>
void SyntaxTransformerTagger<Scalar>::forward(const TokenInput& input, Cache& c, Eigen::Ref<Matrix> logits,
                                              const RandomStream* dropout) const {
  c.stamp.clear();  // first: a cache whose forward pass throws belongs to nobody
  run("SyntaxTransformerTagger::forward", input, input.lengths, c, logits, dropout, false);
  c.stamp.stamp(s_.identity);
}

template <class Scalar>
void SyntaxTransformerTagger<Scalar>::forward(const PackedTokenInput& input, Cache& c, Eigen::Ref<Matrix> logits,
                                              const RandomStream* dropout) const {
  c.stamp.clear();
  run("SyntaxTransformerTagger::forward", input, input.packed.lengths(), c, logits, dropout, false);
  c.stamp.stamp(s_.identity);
}

template <class Scalar>
void SyntaxTransformerTagger<Scalar>::infer(const TokenInput& input, Cache& workspace,
                                            Eigen::Ref<Matrix> logits) const {
  workspace.stamp.clear();
  run("SyntaxTransformerTagger::infer", input, input.lengths, workspace, logits, nullptr, true);
}

template <class Scalar>
void SyntaxTransformerTagger<Scalar>::infer(const PackedTokenInput& input, Cache& workspace,
                                            Eigen::Ref<Matrix> logits) const {
  workspace.stamp.clear();
  run("SyntaxTransformerTagger::infer", input, input.packed.lengths(), workspace, logits, nullptr, true);
}

template <class Scalar>
template <class Input>
void SyntaxTransformerTagger<Scalar>::run(const char* fn, const Input& input, const std::vector<int>& lengths,
                                          Cache& c, Eigen::Ref<Matrix> logits, const RandomStream* dropout,
                                          bool inference) const {
  s_.require(fn);  // a moved-from model holds no layers
  const Index n = check_input(fn, input);
  const Eigen::Ref<const IdVector>& tokens = input.ids;
  if (logits.rows() != tokens.size() || logits.cols() != s_.options.num_classes)
    throw Error(std::string(fn) + ": logits is " + shape_text(logits.rows(), logits.cols()) + ", expected " +
                shape_text(tokens.size(), s_.options.num_classes) + " (tokens, classes)");
  // One pass over the flat buffer (the attention layers check only their
  // own): a NaN weight anywhere is named here, before it reaches a loss.
  const bool check_finite = s_.options.attention.check_finite;
  if (check_finite) check_finite_parameters(fn, s_.root, kModelFiniteHint);
  c.lengths = lengths;
  c.has_loss = false;
  c.dropout = dropout != nullptr;
  if (dropout) c.stream = *dropout;
  c.embedded.resize(tokens.size(), s_.options.d_model);
  if (inference)
    s_.embedding.infer(tokens, c.embedding, c.embedded);
  else
    s_.embedding.forward(tokens, c.embedding, c.embedded);
  s_.positions.add_to(c.embedded, n);
  c.rows_per_sequence = std::max<Index>(1, n);
  if (dropout) apply_dropout(c.stream.derive(kSiteEmbedding), embedding_dropout(), c.rows_per_sequence, c.embedded);
  const RandomStream enc = c.stream.derive(kEncoderStream);
  Matrix& h = c.classifier.input;  // the classifier's cache keeps its input: the encoder writes it there
  h.resize(tokens.size(), s_.options.d_model);
  if (inference) {
    s_.encoder.infer(encoder_input(input, c.embedded), c.encoder, h);
    s_.classifier.infer(h, c.classifier, logits);
  } else {
    s_.encoder.forward(encoder_input(input, c.embedded), c.encoder, h, dropout ? &enc : nullptr);
    s_.classifier.forward(h, c.classifier, logits);
  }
  if (check_finite) check_finite_logits<Scalar>(fn, logits, n);
}

template <class Scalar>
LossResult SyntaxTransformerTagger<Scalar>::loss(Cache& c, const Eigen::Ref<const Matrix>& logits,
                                                 const Eigen::Ref<const IdVector>& labels, double normaliser) const {
  const char* fn = "SyntaxTransformerTagger::loss";
  s_.require(fn);  // a moved-from model holds no layers
  c.stamp.check_filled(fn, s_.identity);
  check_class_rows(fn, "logits", logits, c, " (the forward pass's)");
  const LossResult r = s_.classifier.loss(logits, labels, c.lengths, normaliser, &c.dlogits);
  c.has_loss = true;
  return r;
}

template <class Scalar>
void SyntaxTransformerTagger<Scalar>::backward(Cache& c, const GradientsReady& on_ready) {
  // Every check before the first gradient is written (the cache's owner,
  // its loss, a second backward), so a refused call changes nothing.
  const char* fn = "SyntaxTransformerTagger::backward";
  s_.require(fn);  // a moved-from model holds no layers
  c.stamp.check(fn, s_.identity);
  if (!c.has_loss) throw Error(std::string(fn) + ": call loss() on this cache first");
  backward_core(fn, c, c.dlogits, on_ready);
}

template <class Scalar>
void SyntaxTransformerTagger<Scalar>::backward(Cache& c, const Eigen::Ref<const Matrix>& dlogits,
                                               const GradientsReady& on_ready) {
  const char* fn = "SyntaxTransformerTagger::backward";
  s_.require(fn);  // a moved-from model holds no layers
  c.stamp.check(fn, s_.identity);
  check_class_rows(fn, "dlogits", dlogits, c, " (the forward pass's logits)");
  backward_core(fn, c, dlogits, on_ready);
}

template <class Scalar>
void SyntaxTransformerTagger<Scalar>::backward_core(const char*, Cache& c, const Eigen::Ref<const Matrix>& dlogits,
                                                    const GradientsReady& on_ready) {
  c.stamp.mark_used();
  c.dh.resize(dlogits.rows(), s_.options.d_model);
  s_.classifier.backward(c.classifier, dlogits, c.dh);
  if (on_ready) on_ready(stage_offset("classifier."));
  std::function<void(int)> layer_done;
  if (on_ready)
    layer_done = [&](int l) {
      on_ready(stage_offset(l == s_.encoder.num_layers() ? std::string("norm.") : "layers." + std::to_string(l) + "."));
    };
  c.dx.resize(dlogits.rows(), s_.options.d_model);
  s_.encoder.backward(c.encoder, c.dh, c.dx, layer_done);
  if (c.dropout) apply_dropout(c.stream.derive(kSiteEmbedding), embedding_dropout(), c.rows_per_sequence, c.dx);
  s_.embedding.backward(c.embedding, c.dx);
  if (on_ready) on_ready(0);
}

template <class Scalar>
template <class Input>
LossResult SyntaxTransformerTagger<Scalar>::forward_loss_backward(const Input& input,
                                                                  const Eigen::Ref<const IdVector>& labels, Cache& c,
                                                                  const RandomStream* dropout, double normaliser) {
  c.logits.resize(input.ids.size(), s_.options.num_classes);
  forward(input, c, c.logits, dropout);
  const LossResult r = loss(c, c.logits, labels, normaliser);
  backward(c);
  return r;
}

template <class Scalar>
LossResult SyntaxTransformerTagger<Scalar>::loss_and_backward(const TokenInput& input,
                                                              const Eigen::Ref<const IdVector>& labels, Cache& c,
                                                              const RandomStream* dropout, double normaliser) {
  return forward_loss_backward(input, labels, c, dropout, normaliser);
}

template <class Scalar>
LossResult SyntaxTransformerTagger<Scalar>::loss_and_backward(const PackedTokenInput& input,
                                                              const Eigen::Ref<const IdVector>& labels, Cache& c,
                                                              const RandomStream* dropout, double normaliser) {
  return forward_loss_backward(input, labels, c, dropout, normaliser);
}

template <class Scalar>
IdVector SyntaxTransformerTagger<Scalar>::predict(const PackedTokenInput& input, Cache& workspace) const {
  workspace.logits.resize(input.ids.size(), s_.options.num_classes);
  infer(input, workspace, workspace.logits);
  return argmax_predictions<Scalar>(workspace.logits, input.packed.lengths());
}

template <class Scalar>
IdVector SyntaxTransformerTagger<Scalar>::predict(const TokenInput& input, Cache& workspace) const {
  workspace.logits.resize(input.ids.size(), s_.options.num_classes);
  infer(input, workspace, workspace.logits);
  return argmax_predictions<Scalar>(workspace.logits, input.lengths);
}

template <class Scalar>
Index SyntaxTransformerTagger<Scalar>::stage_offset(const std::string& prefix) const {
  Index lowest = this->parameter_count();
  for (const ParameterInfo& p : s_.root.infos())
    if (p.name.compare(0, prefix.size(), prefix) == 0 && p.offset < lowest) lowest = p.offset;
  return lowest;
}

#if defined(SYNATTN_COMPILED)
extern template class SyntaxTransformerTagger<float>;
extern template class SyntaxTransformerTagger<double>;
#endif

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_TAGGER_HPP
