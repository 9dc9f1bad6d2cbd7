// synattn — BiaffineParser: a graph-based dependency parser (Dozat & Manning,
// 2017) built from synattn's own layers.
//
//   word ids -> Embedding(words, word_dim) ┐
//   chars    -> CharCnn(filters)           ┴ concat -> Dropout -> Linear(d_model) (+ sinusoidal positions)
//     -> Encoder (pre-norm Transformer; the attention bias over *sequence*
//        distance, T5-style relative-position buckets: a parser has no tree yet)
//     -> four MLPs (Linear + LeakyReLU(0.1) + Dropout): arc-dependent, arc-head (arc_dim),
//        label-dependent, label-head (label_dim)
//     -> ArcBiaffine: S[i, j], the score of head j for word i   (over the sequence, root at 0)
//     -> LabelBiaffine at the head: relation logits
//     -> optionally a UPOS classifier on the encoder output, trained jointly
//
// Training loss (per word, summed and divided by the batch's words):
// cross-entropy of the gold head over the row S[i, 0..n] (padding and the
// word itself masked), plus cross-entropy of the gold relation given the
// gold head, plus upos_weight times the tagger's cross-entropy.
//
// Parsing: S decoded into the best tree with one word under the root
// (arborescence.hpp: Chu-Liu/Edmonds, non-projective), then each word's
// relation by argmax given its predicted head. Sentences of a batch are
// decoded in parallel; every step keeps a fixed split, so heads, relations
// and every float are the same at any thread count.
//
// Every parameter lives in one flat buffer (parameters(), gradients(),
// parameter_infos()), as in nn::SyntaxTransformerTagger, so the optimisers
// and checkpoints apply unchanged. forward() is const and writes an explicit
// cache; one model can serve several threads, each with its own cache.
//
// The layer contract (docs/guide.md), with the batch as the input:
// forward(batch, cache, dropout) keeps its parts' caches (each keeps what
// its backward needs) and leaves the model's outputs, the arc scores and
// tag logits, in the cache, where loss() reads them (the relations are
// scored at the heads loss() or parse() chooses, so the output is not one
// matrix); infer(batch, workspace) gives the same scores bit for bit and
// keeps nothing for backward (every part's infer(): no attention
// probabilities, no copies of inputs); parse() runs infer().
#ifndef SYNATTN_PARSE_PARSER_HPP
#define SYNATTN_PARSE_PARSER_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../nn/common.hpp"
#include "../nn/embedding.hpp"
#include "../nn/encoder.hpp"
#include "../nn/linear.hpp"
#include "../nn/parameter_binding.hpp"
#include "../nn/token_classifier.hpp"
#include "../util/finite.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parallel.hpp"
#include "../util/parameter_access.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"
#include "arborescence.hpp"
#include "biaffine.hpp"
#include "char_cnn.hpp"
#include "parser_batch.hpp"

namespace synattn {
namespace parse {

struct ParserOptions {
  int num_words = 0;   // vocabulary sizes (ParserVocabulary)
  int num_chars = 0;
  int num_upos = 0;    // 0: no tagging head
  int num_labels = 0;

  int word_dim = 128;
  int char_dim = 32;
  int char_filters = 128;
  int char_width = 3;
  bool use_chars = true;

  int d_model = 256;
  int heads = 8;
  int d_ff = 1024;
  int layers = 4;
  bool relative_bias = true;    // the attention bias over sequence distance
  bool bias_per_head = true;
  bool absolute_positions = true;

  int arc_dim = 400;
  int label_dim = 100;
  double leaky_slope = 0.1;

  double embedding_dropout = 0.33;
  double encoder_dropout = 0.1;  // attention output, FFN hidden and output
  double attention_dropout = 0.1;
  double mlp_dropout = 0.33;
  double upos_weight = 1.0;

  int max_length = 512;  // positional rows precomputed, at most kMaxPrecomputedPositions (longer still works)
  std::uint64_t seed = 1;

  // The most rows max_length may precompute: no tensor of a model file
  // constrains it, so a file saying 2^31 - 1 would otherwise allocate
  // d_model * 2^31 values before its tensors were read.
  static constexpr int kMaxPrecomputedPositions = 1 << 16;

  void validate() const {
    const auto positive = [](const char* what, int v) {
      if (v < 1) throw Error(std::string("ParserOptions: ") + what + " must be >= 1, got " + std::to_string(v));
    };
    if (num_words < kReservedWords)
      throw Error("ParserOptions: num_words must be >= " + std::to_string(kReservedWords) + ", got " +
                  std::to_string(num_words));
    if (use_chars && num_chars < kReservedChars)
      throw Error("ParserOptions: num_chars must be >= " + std::to_string(kReservedChars) + ", got " +
                  std::to_string(num_chars));
    if (num_upos < 0) throw Error("ParserOptions: num_upos must be >= 0, got " + std::to_string(num_upos));
    positive("num_labels", num_labels);
    positive("word_dim", word_dim);
    positive("d_model", d_model);
    positive("heads", heads);
    positive("layers", layers);
    positive("arc_dim", arc_dim);
    positive("label_dim", label_dim);
    positive("d_ff", d_ff);
    if (use_chars) {
      positive("char_dim", char_dim);
      positive("char_filters", char_filters);
      positive("char_width", char_width);
    }
    if (max_length < 0 || max_length > kMaxPrecomputedPositions)
      throw Error("ParserOptions: max_length must lie in [0, " + std::to_string(kMaxPrecomputedPositions) + "], got " +
                  std::to_string(max_length));
    if (!std::isfinite(leaky_slope) || leaky_slope < 0 || leaky_slope > 1)
      throw Error("ParserOptions: leaky_slope must be finite and in [0, 1], got " + std::to_string(leaky_slope));
    if (d_model % heads != 0)
      throw Error("ParserOptions: d_model (" + std::to_string(d_model) + ") must be a multiple of heads (" +
                  std::to_string(heads) + ")");
    nn::check_probability("ParserOptions.embedding_dropout", embedding_dropout);
    nn::check_probability("ParserOptions.encoder_dropout", encoder_dropout);
    nn::check_probability("ParserOptions.attention_dropout", attention_dropout);
    nn::check_probability("ParserOptions.mlp_dropout", mlp_dropout);
    if (!(upos_weight >= 0) || !std::isfinite(upos_weight))
      throw Error("ParserOptions: upos_weight must be finite and >= 0, got " + std::to_string(upos_weight));
  }

  int input_dim() const noexcept { return word_dim + (use_chars ? char_filters : 0); }

  nn::EncoderOptions encoder_options() const {
    nn::EncoderOptions e;
    e.layers = layers;
    e.layer.attention.d_model = d_model;
    e.layer.attention.heads = heads;
    e.layer.attention.bias.bucketing = Bucketing::linear(kRelativePositionBuckets - 1);
    e.layer.attention.bias.per_head = bias_per_head;
    e.layer.attention.dropout = attention_dropout;
    e.layer.d_ff = d_ff;
    e.layer.activation = nn::Activation::ReLU;
    e.layer.pre_norm = true;
    e.layer.attention_output_dropout = encoder_dropout;
    e.layer.ffn_hidden_dropout = encoder_dropout;
    e.layer.ffn_output_dropout = encoder_dropout;
    e.layer.seed = RandomStream(seed).derive(4).key();
    e.bias_layers = relative_bias ? nn::BiasLayers::All : nn::BiasLayers::None;
    e.final_norm = true;
    return e;
  }
};

// What a loss() call measured (sums over the batch's words).
struct ParserLoss {
  double loss = 0;           // the normalised total
  double arc_sum = 0, label_sum = 0, upos_sum = 0;
  Index words = 0;
};

template <class Scalar>
struct ParserCache {
  using Matrix = RowMajorMatrix<Scalar>;
  static constexpr int kMlps = 4;  // arc-dep, arc-head, label-dep, label-head
  // Forward: the parts' caches, each keeping what its backward needs.
  Index m = 0, rows = 0;
  std::vector<int> lengths;
  nn::EmbeddingCache words;                       // the word ids
  Matrix word_rows, char_rows;                    // (R, word_dim), (R, filters)
  CharCnnCache<Scalar> chars;
  nn::LinearCache<Scalar> projection;             // its input (R, input_dim): [words; chars], after dropout
  Matrix projected;                               // (R, d): the encoder's input
  nn::EncoderCache<Scalar> encoder;
  nn::LinearCache<Scalar> mlp[kMlps];             // each keeps the encoder output h (R, d)
  nn::LinearCache<Scalar> upos;                   // keeps h too (with a tagging head)
  Matrix mlp_pre[kMlps];                          // (R, arc_dim | label_dim), before the LeakyReLU
  Matrix label_mlp_out[2];                        // (R, label_dim): label-dep, label-head MLP outputs
  ArcBiaffineCache<Scalar> arc;                   // keeps the arc-dep and arc-head MLP outputs (written there)
  Matrix scores;                                  // (R, m): S, padding and self masked
  Matrix upos_logits;                             // (R, num_upos)
  // Labels at the heads loss() or parse() chose
  std::vector<Index> label_dep_rows, label_head_rows;
  Matrix label_dep, label_head, label_logits;     // (T, label_dim), (T, L)
  LabelBiaffineCache<Scalar> label;
  // Backward
  Matrix dscores, dlabel_logits, dupos_logits, dlabel_dep, dlabel_head, dmlp[kMlps], dh, dpart, dprojected, dinput;
  Matrix dword_rows, dchar_rows;
  bool has_loss = false;
  bool dropout = false;
  RandomStream stream;
  CacheStamp stamp;  // which parser filled it (util/layer_identity.hpp)

  // MLP k's output (after LeakyReLU and dropout): the arc scorer's inputs
  // live in its cache, the label MLPs' here.
  Matrix& mlp_out(int k) noexcept { return k == 0 ? arc.dep : k == 1 ? arc.head : label_mlp_out[k - 2]; }
  const Matrix& mlp_out(int k) const noexcept {
    return k == 0 ? arc.dep : k == 1 ? arc.head : label_mlp_out[k - 2];
  }
};

// Per-thread buffers of parse(): after the first batches, decoding a
// sentence allocates nothing.
struct ParseWorkspace {
  std::vector<ArborescenceWorkspace> decoders;
  std::vector<std::vector<int>> heads;
};

// A parsed batch: per position b * m + i (i >= 1 a word), its head (0 = root)
// and relation id; -1 on the roots and padding.
struct ParsedBatch {
  nn::IdVector heads, labels, upos;
};

template <class Scalar>
class BiaffineParser : public nn::BoundModelAccess<BiaffineParser<Scalar>, ParserOptions, Scalar> {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = ParserCache<Scalar>;

  explicit BiaffineParser(const ParserOptions& options);

  // Encoder, MLPs, arc scores and tag logits of `batch` into the cache.
  // `dropout` null: evaluation (no dropout).
  void forward(const ParserBatch& batch, Cache& c, const RandomStream* dropout = nullptr) const;
  // The same arc scores and tag logits as forward() without dropout, bit
  // for bit, into the workspace, keeping nothing for backward (which
  // refuses the workspace): less memory and time (no attention
  // probabilities are stored).
  void infer(const ParserBatch& batch, Cache& workspace) const;

  // The training loss of the cached forward pass against the batch's gold
  // heads, relations and tags; keeps what backward() needs. normaliser <= 0:
  // the batch's words.
  ParserLoss loss(const ParserBatch& batch, Cache& c, double normaliser = 0) const;

  // Adds dL/dparameters of the last loss() into gradients().
  void backward(Cache& c);

  ParserLoss loss_and_backward(const ParserBatch& batch, Cache& c, const RandomStream* dropout, double normaliser = 0);

  // Parses the batch (through infer(), `c` its workspace): the best
  // single-rooted tree per sentence, then the relations at its heads (and
  // tags, with a tagging head). `ws` holds the decoders' per-thread
  // buffers (grown here, reused across calls).
  void parse(const ParserBatch& batch, Cache& c, ParseWorkspace& ws, ParsedBatch& out) const;

 private:
  static constexpr std::uint64_t kSiteInput = 1, kSiteEncoder = 2, kSiteMlp = 10;

  struct State {
    explicit State(const ParserOptions& o)
        : options((o.validate(), o)),
          words(o.num_words, o.word_dim, RandomStream(o.seed).derive(1)),
          projection(o.input_dim(), o.d_model, RandomStream(o.seed).derive(3)),
          positions(o.d_model, o.max_length),
          encoder(o.encoder_options()),
          arc(o.arc_dim),
          label(o.label_dim, o.num_labels) {
      if (o.use_chars) {
        CharCnnOptions co;
        co.num_chars = o.num_chars;
        co.char_dim = o.char_dim;
        co.filters = o.char_filters;
        co.width = o.char_width;
        chars.emplace_back(co, RandomStream(o.seed).derive(2));
      }
      const int dims[4] = {o.arc_dim, o.arc_dim, o.label_dim, o.label_dim};
      for (int k = 0; k < 4; ++k) mlps.emplace_back(o.d_model, dims[k], RandomStream(o.seed).derive(5).derive(k));
      if (o.num_upos > 0) upos.emplace_back(o.d_model, o.num_upos, RandomStream(o.seed).derive(6));
    }
    ParserOptions options;
    nn::Embedding<Scalar> words;
    std::vector<CharCnn<Scalar>> chars;  // empty or one
    nn::Linear<Scalar> projection;
    nn::SinusoidalPositionalEncoding<Scalar> positions;
    nn::Encoder<Scalar> encoder;
    std::vector<nn::Linear<Scalar>> mlps;  // arc-dep, arc-head, label-dep, label-head
    ArcBiaffine<Scalar> arc;
    LabelBiaffine<Scalar> label;
    std::vector<nn::Linear<Scalar>> upos;  // empty or one
    ParameterStore<Scalar> root;
    LayerIdentity identity;  // new for a copy or an assignment: caches of the old parser are refused

    static constexpr const char* kCopyName = "BiaffineParser (copy)";

    // Every part's store, in the order of the flat buffer (nn::BoundModel binds them).
    template <class F>
    void visit_stores(F&& f) {
      f(std::string("words."), words.parameter_store(), std::string());
      if (!chars.empty()) chars.front().visit_stores("chars.", f);
      f(std::string("projection."), projection.parameter_store(), std::string());
      encoder.visit_stores("encoder.", f);
      const char* names[4] = {"arc_dep.", "arc_head.", "label_dep.", "label_head."};
      for (std::size_t k = 0; k < mlps.size(); ++k) f(std::string(names[k]), mlps[k].parameter_store(), std::string());
      f(std::string("arc."), arc.parameter_store(), std::string());
      f(std::string("label."), label.parameter_store(), std::string());
      if (!upos.empty()) f(std::string("upos."), upos.front().parameter_store(), std::string());
    }
  };

  void check_batch(const char* fn, const ParserBatch& batch) const;
  // forward() and infer(): one sequence of steps.
  void run(const char* fn, const ParserBatch& batch, Cache& c, const RandomStream* dropout, bool inference) const;

  // label_logits (T, L) for the pairs in label_dep_rows / label_head_rows;
  // for_backward false: parsing (LabelBiaffine::infer, less memory).
  void label_forward(Cache& c, bool for_backward = true) const;

  friend nn::BoundModelAccess<BiaffineParser, ParserOptions, Scalar>;  // options() and parameter_store() read s_
  nn::BoundModel<State> s_;  // the parts, bound into one buffer, with the copy and move rules
};

// Out-of-line members: with SYNATTN_COMPILED (synattn::compiled), the float
// and double instantiations are compiled once in src/compiled_parser.cpp and
// declared extern below, so a program that uses the parser does not compile
// them again.
template <class Scalar>
BiaffineParser<Scalar>::BiaffineParser(const ParserOptions& options) : s_(options) {}

template <class Scalar>
void BiaffineParser<Scalar>::forward(const ParserBatch& batch, ParserCache<Scalar>& c,
                                     const RandomStream* dropout) const {
  c.stamp.clear();  // first: a cache whose forward pass throws belongs to nobody
  run("BiaffineParser::forward", batch, c, dropout, false);
  c.stamp.stamp(s_.identity);
}

template <class Scalar>
void BiaffineParser<Scalar>::infer(const ParserBatch& batch, ParserCache<Scalar>& workspace) const {
  workspace.stamp.clear();
  run("BiaffineParser::infer", batch, workspace, nullptr, true);
}

template <class Scalar>
void BiaffineParser<Scalar>::run(const char* fn, const ParserBatch& batch, ParserCache<Scalar>& c,
                                 const RandomStream* dropout, bool inference) const {
  s_.require(fn);  // a moved-from model holds no layers
  const ParserOptions& o = s_.options;
  const Index m = batch.m, R = batch.words.size();
  check_batch(fn, batch);
  // One pass over the flat buffer: a NaN weight anywhere is named here,
  // before it reaches a loss or a gradient.
  check_finite_parameters(fn, s_.root, "");
  c.m = m;
  c.rows = R;
  c.lengths = batch.lengths;
  c.has_loss = false;
  c.dropout = dropout != nullptr;
  if (dropout) c.stream = *dropout;
  // input (R, word_dim [+ filters]) = [E_w[word]; charcnn(chars)], written
  // where the projection's cache keeps its input
  Matrix& input = c.projection.input;
  c.word_rows.resize(R, o.word_dim);
  if (inference)
    s_.words.infer(batch.words, c.words, c.word_rows);
  else
    s_.words.forward(batch.words, c.words, c.word_rows);
  input.resize(R, o.input_dim());
  input.leftCols(o.word_dim) = c.word_rows;
  if (o.use_chars) {
    c.char_rows.resize(R, o.char_filters);
    if (inference)
      s_.chars.front().infer({batch.chars, batch.char_lengths}, c.chars, c.char_rows);
    else
      s_.chars.front().forward({batch.chars, batch.char_lengths}, c.chars, c.char_rows);
    input.rightCols(o.char_filters) = c.char_rows;
  }
  if (dropout) nn::apply_dropout(c.stream.derive(kSiteInput), o.embedding_dropout, m, input);
  // projected (R, d) = input W^T + b (+ PE)
  c.projected.resize(R, o.d_model);
  if (inference)
    s_.projection.infer(input, c.projection, c.projected);
  else
    s_.projection.forward(input, c.projection, c.projected);
  if (o.absolute_positions) s_.positions.add_to(c.projected, m);
  // h (R, d): the encoder's output, written where the first MLP's cache keeps its input
  Matrix& h = c.mlp[0].input;
  h.resize(R, o.d_model);
  const SelfAttentionInput<Scalar> encoder_input{c.projected, batch.lengths, batch.buckets};
  const RandomStream enc = c.stream.derive(kSiteEncoder);
  if (inference)
    s_.encoder.infer(encoder_input, c.encoder, h);
  else
    s_.encoder.forward(encoder_input, c.encoder, h, dropout ? &enc : nullptr);
  // mlp_out[k] (R, dim_k) = dropout(leaky_relu(h W_k^T + b_k))
  for (int k = 0; k < Cache::kMlps; ++k) {
    const nn::Linear<Scalar>& lin = s_.mlps[static_cast<std::size_t>(k)];
    c.mlp_pre[k].resize(R, lin.out_features());
    if (inference)
      lin.infer(h, c.mlp[k], c.mlp_pre[k]);
    else
      lin.forward(h, c.mlp[k], c.mlp_pre[k]);
    const Scalar slope = static_cast<Scalar>(o.leaky_slope);
    Matrix& out = c.mlp_out(k);
    out = c.mlp_pre[k].unaryExpr([slope](Scalar v) { return v > Scalar(0) ? v : slope * v; });
    if (dropout)
      nn::apply_dropout(c.stream.derive(kSiteMlp + static_cast<std::uint64_t>(k)), o.mlp_dropout, m, out);
  }
  // scores (R, m): S_b[i, j], heads j outside [0, n_b] and j == i masked
  c.scores.resize(R, m);
  if (inference)
    s_.arc.infer({c.arc.dep, c.arc.head, m}, c.arc, c.scores);
  else
    s_.arc.forward({c.arc.dep, c.arc.head, m}, c.arc, c.scores);
  const Scalar neg_inf = -std::numeric_limits<Scalar>::infinity();
  for (Index r = 0; r < R; ++r) {
    const Index b = r / m, i = r % m;
    const Index len = batch.lengths[static_cast<std::size_t>(b)];
    if (len < m) c.scores.row(r).tail(m - len).setConstant(neg_inf);
    c.scores(r, i) = neg_inf;
  }
  if (o.num_upos > 0) {
    c.upos_logits.resize(R, o.num_upos);
    if (inference)
      s_.upos.front().infer(h, c.upos, c.upos_logits);
    else
      s_.upos.front().forward(h, c.upos, c.upos_logits);
  }
}

template <class Scalar>
ParserLoss BiaffineParser<Scalar>::loss(const ParserBatch& batch, ParserCache<Scalar>& c, double normaliser) const {
  const char* fn = "BiaffineParser::loss";
  s_.require(fn);  // a moved-from model holds no layers
  c.stamp.check_filled(fn, s_.identity);
  if (c.m != batch.m || c.lengths != batch.lengths)
    throw Error(std::string(fn) + ": the cache holds a forward pass of another batch");
  const ParserOptions& o = s_.options;
  const Index R = batch.words.size();
  ParserLoss out;
  out.words = batch.words_count;
  const double norm =
      nn::resolve_normaliser(fn, normaliser, static_cast<double>(std::max<Index>(1, batch.words_count)));
  // Arc cross-entropy over each word's row.
  const nn::LossResult arc = nn::cross_entropy<Scalar>(c.scores, batch.heads, batch.lengths, norm, &c.dscores);
  out.arc_sum = arc.sum;
  // Relations at the gold heads.
  c.label_dep_rows.clear();
  c.label_head_rows.clear();
  std::vector<std::int32_t> gold;
  for (Index r = 0; r < R; ++r) {
    const Index b = r / c.m, i = r % c.m;
    if (i == 0 || i >= batch.lengths[static_cast<std::size_t>(b)] || batch.heads[r] < 0) continue;
    c.label_dep_rows.push_back(r);
    c.label_head_rows.push_back(b * c.m + batch.heads[r]);
    gold.push_back(batch.labels[r]);
  }
  label_forward(c);
  const nn::IdVector gold_labels = Eigen::Map<const nn::IdVector>(gold.data(), static_cast<Index>(gold.size()));
  const nn::LossResult lab = nn::cross_entropy<Scalar>(c.label_logits, gold_labels,
                                                       {static_cast<int>(gold.size())}, norm, &c.dlabel_logits);
  out.label_sum = lab.sum;
  double total = arc.loss + lab.loss;
  if (o.num_upos > 0 && o.upos_weight > 0) {
    const nn::LossResult tag = nn::cross_entropy<Scalar>(c.upos_logits, batch.upos, batch.lengths, norm / o.upos_weight,
                                                         &c.dupos_logits);
    out.upos_sum = tag.sum;
    total += tag.loss;
  } else {
    c.dupos_logits.resize(0, 0);
  }
  out.loss = total;
  c.has_loss = true;
  return out;
}

template <class Scalar>
void BiaffineParser<Scalar>::backward(ParserCache<Scalar>& c) {
  const char* fn = "BiaffineParser::backward";
  s_.require(fn);  // a moved-from model holds no layers
  // Every check before the first gradient is written (the cache's owner,
  // its loss, a second backward), so a refused call changes nothing.
  c.stamp.check(fn, s_.identity);
  if (!c.has_loss) throw Error(std::string(fn) + ": call loss() on this cache first");
  c.stamp.mark_used();
  const ParserOptions& o = s_.options;
  const Index R = c.rows, m = c.m;
  const Index T = static_cast<Index>(c.label_dep_rows.size());
  // Relations: dlabel_dep, dlabel_head (T, label_dim) -> scattered to their rows.
  c.dlabel_dep.resize(T, o.label_dim);
  c.dlabel_head.resize(T, o.label_dim);
  s_.label.backward(c.label, c.dlabel_logits, {c.dlabel_dep, c.dlabel_head});
  c.dmlp[2].setZero(R, o.label_dim);
  c.dmlp[3].setZero(R, o.label_dim);
  for (std::size_t t = 0; t < c.label_dep_rows.size(); ++t) {  // in order: a head's sum is fixed
    c.dmlp[2].row(c.label_dep_rows[t]) += c.dlabel_dep.row(static_cast<Index>(t));
    c.dmlp[3].row(c.label_head_rows[t]) += c.dlabel_head.row(static_cast<Index>(t));
  }
  // Arcs: dS (R, m) -> d(arc-dep), d(arc-head) (R, arc_dim).
  c.dmlp[0].resize(R, o.arc_dim);
  c.dmlp[1].resize(R, o.arc_dim);
  s_.arc.backward(c.arc, c.dscores, {c.dmlp[0], c.dmlp[1]});
  // MLPs: through dropout and the LeakyReLU, then dh (R, d) += dpre W_k.
  c.dh.setZero(R, o.d_model);
  c.dpart.resize(R, o.d_model);
  const Scalar slope = static_cast<Scalar>(o.leaky_slope);
  for (int k = 0; k < Cache::kMlps; ++k) {
    Matrix& d = c.dmlp[k];
    if (c.dropout) nn::apply_dropout(c.stream.derive(kSiteMlp + static_cast<std::uint64_t>(k)), o.mlp_dropout, m, d);
    d = d.binaryExpr(c.mlp_pre[k], [slope](Scalar g, Scalar v) { return v > Scalar(0) ? g : slope * g; });
    s_.mlps[static_cast<std::size_t>(k)].backward(c.mlp[k], d, c.dpart);
    c.dh += c.dpart;
  }
  if (o.num_upos > 0 && c.dupos_logits.rows() == R) {
    s_.upos.front().backward(c.upos, c.dupos_logits, c.dpart);
    c.dh += c.dpart;
  }
  // Encoder: dh -> dprojected (R, d); projection: -> dinput (R, input_dim).
  c.dprojected.resize(R, o.d_model);
  s_.encoder.backward(c.encoder, c.dh, c.dprojected);
  c.dinput.resize(R, o.input_dim());
  s_.projection.backward(c.projection, c.dprojected, c.dinput);
  if (c.dropout) nn::apply_dropout(c.stream.derive(kSiteInput), o.embedding_dropout, m, c.dinput);
  c.dword_rows = c.dinput.leftCols(o.word_dim);
  s_.words.backward(c.words, c.dword_rows);
  if (o.use_chars) {
    c.dchar_rows = c.dinput.rightCols(o.char_filters);
    s_.chars.front().backward(c.chars, c.dchar_rows);
  }
}

template <class Scalar>
ParserLoss BiaffineParser<Scalar>::loss_and_backward(const ParserBatch& batch, ParserCache<Scalar>& c,
                                                     const RandomStream* dropout, double normaliser) {
  forward(batch, c, dropout);
  const ParserLoss l = loss(batch, c, normaliser);
  backward(c);
  return l;
}

template <class Scalar>
void BiaffineParser<Scalar>::parse(const ParserBatch& batch, ParserCache<Scalar>& c, ParseWorkspace& ws,
                                   ParsedBatch& out) const {
  infer(batch, c);
  const Index m = batch.m, R = batch.words.size();
  const Index B = static_cast<Index>(batch.lengths.size());
  out.heads.setConstant(R, -1);
  out.labels.setConstant(R, -1);
  out.upos.setConstant(R, -1);
  double work = 0;
  for (int len : batch.lengths) work += double(len) * len * len;
  const int team = team_size(work);
  if (static_cast<int>(ws.decoders.size()) < team) {
    ws.decoders.resize(static_cast<std::size_t>(team));
    ws.heads.resize(static_cast<std::size_t>(team));
  }
  parallel_for_threads(B, work, [&](Index b, int thread) {
    const Index len = batch.lengths[static_cast<std::size_t>(b)];
    std::vector<int>& heads = ws.heads[static_cast<std::size_t>(thread)];
    max_spanning_tree<Scalar>(c.scores.data() + b * m * m, len - 1, m, heads,
                              ws.decoders[static_cast<std::size_t>(thread)]);
    for (Index i = 1; i < len; ++i) out.heads[b * m + i] = heads[static_cast<std::size_t>(i)];
  });
  c.label_dep_rows.clear();
  c.label_head_rows.clear();
  for (Index r = 0; r < R; ++r)
    if (out.heads[r] >= 0) {
      c.label_dep_rows.push_back(r);
      c.label_head_rows.push_back((r / m) * m + out.heads[r]);
    }
  label_forward(c, false);
  // The library's non-finite policy (docs/errors.md) at every choice: the
  // arcs' decoder refuses non-finite scores, and so do the relations and
  // tags here (util/finite.hpp's check_finite_scores, as the tokenizer's
  // segmenter). Finite but huge weights overflow the logits to inf or NaN,
  // and an argmax over them silently chose relation 0 for every word.
  const auto word = [m](Index position) {
    return [m, position] {
      return "word " + std::to_string(position % m) + " (sentence " + std::to_string(position / m) + " of the batch)";
    };
  };
  for (std::size_t t = 0; t < c.label_dep_rows.size(); ++t) {
    const Index row = static_cast<Index>(t);
    check_finite_scores<Scalar>("BiaffineParser::parse", "relation", c.label_logits.row(row).data(),
                                c.label_logits.cols(), word(c.label_dep_rows[t]));
    Index best = 0;
    c.label_logits.row(row).maxCoeff(&best);
    out.labels[c.label_dep_rows[t]] = static_cast<std::int32_t>(best);
  }
  if (s_.options.num_upos > 0)
    for (Index r = 0; r < R; ++r)
      if (out.heads[r] >= 0) {
        check_finite_scores<Scalar>("BiaffineParser::parse", "tag", c.upos_logits.row(r).data(), c.upos_logits.cols(),
                                    word(r));
        Index best = 0;
        c.upos_logits.row(r).maxCoeff(&best);
        out.upos[r] = static_cast<std::int32_t>(best);
      }
}

template <class Scalar>
void BiaffineParser<Scalar>::check_batch(const char* fn, const ParserBatch& batch) const {
  const Index m = batch.m, R = batch.words.size();
  const Index B = static_cast<Index>(batch.lengths.size());
  if (B < 1 || m < 1 || R != B * m)
    throw Error(std::string(fn) + ": the batch has " + std::to_string(R) + " positions, expected lengths.size() (" +
                std::to_string(B) + ") x m (" + std::to_string(m) + ")");
  for (std::size_t b = 0; b < batch.lengths.size(); ++b)
    if (batch.lengths[b] < 1 || batch.lengths[b] > m)
      throw Error(std::string(fn) + ": lengths[" + std::to_string(b) + "] = " + std::to_string(batch.lengths[b]) +
                  " is outside [1, " + std::to_string(m) + "] (a sequence holds the root and its words)");
  if (batch.heads.size() != R || batch.labels.size() != R || batch.upos.size() != R ||
      static_cast<Index>(batch.char_lengths.size()) != R || batch.chars.rows() != R)
    throw Error(std::string(fn) + ": heads, labels, upos, chars and char_lengths must have one row per position (" +
                std::to_string(R) + ")");
  for (Index r = 0; r < R; ++r) {
    const Index len = batch.lengths[static_cast<std::size_t>(r / m)];
    const std::int32_t hd = batch.heads[r];
    if (r % m == 0 || r % m >= len || hd == nn::kIgnoreLabel) continue;
    if (hd < 0 || hd >= len || hd == r % m)
      throw Error(std::string(fn) + ": heads[" + std::to_string(r) + "] = " + std::to_string(hd) +
                  " is not another position of its sentence [0, " + std::to_string(len) + ")");
  }
}

template <class Scalar>
void BiaffineParser<Scalar>::label_forward(ParserCache<Scalar>& c, bool for_backward) const {
  const Index T = static_cast<Index>(c.label_dep_rows.size());
  const int dl = s_.options.label_dim;
  c.label_dep.resize(T, dl);
  c.label_head.resize(T, dl);
  for (Index t = 0; t < T; ++t) {
    c.label_dep.row(t) = c.mlp_out(2).row(c.label_dep_rows[static_cast<std::size_t>(t)]);
    c.label_head.row(t) = c.mlp_out(3).row(c.label_head_rows[static_cast<std::size_t>(t)]);
  }
  c.label_logits.resize(T, s_.options.num_labels);
  if (for_backward)
    s_.label.forward({c.label_dep, c.label_head}, c.label, c.label_logits);
  else
    s_.label.infer({c.label_dep, c.label_head}, c.label, c.label_logits);
}

#if defined(SYNATTN_COMPILED)
extern template class BiaffineParser<float>;
extern template class BiaffineParser<double>;
#endif

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_PARSER_HPP
