// synattn — a trained parser with everything it needs to read new text: its
// options and vocabulary travel in the model file's metadata, so
//
//   auto model = synattn::parse::ParserModel::load(synattn::parse::default_model_path());
//   auto trees = model.parse({{"The", "cat", "sat", "."}});   // heads (1-based, 0 = root), relations
//
// is all a user needs to get trees for tokenised sentences (and
// trees[k].tree() gives the DependencyTree that SyntaxBiasedAttention's
// distance and bucket functions take).
//
// The file is a synattn checkpoint (train/checkpoint.hpp: safetensors,
// loadable by any safetensors reader) with three more metadata keys:
// parser.format = "synattn.parser.v1", parser.options and parser.vocabulary
// (JSON). Loading refuses a file without them, of another parser format, or
// whose tensors do not fit its own options, naming what differs.
//
// Needs nlohmann-json (link synattn::checkpoint).
#ifndef SYNATTN_PARSE_PARSER_MODEL_HPP
#define SYNATTN_PARSE_PARSER_MODEL_HPP

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../io/model_metadata.hpp"
#include "../io/safetensors.hpp"
#include "../train/checkpoint.hpp"
#include "../tree/dependency_tree.hpp"
#include "../util/checked_size.hpp"
#include "../util/metadata_number.hpp"
#include "../util/model_paths.hpp"
#include "parser.hpp"
#include "parser_batch.hpp"
#include "parser_vocabulary.hpp"
#include "sentence_length.hpp"

namespace synattn {

// A model file's parser.options (io/json_fields.hpp).
template <>
struct JsonFields<parse::ParserOptions> {
  static constexpr const char* what = "parser options";
  template <class O, class Visit>
  static void visit(O& o, Visit&& field) {
    field("num_words", o.num_words);
    field("num_chars", o.num_chars);
    field("num_upos", o.num_upos);
    field("num_labels", o.num_labels);
    field("word_dim", o.word_dim);
    field("char_dim", o.char_dim);
    field("char_filters", o.char_filters);
    field("char_width", o.char_width);
    field("use_chars", o.use_chars);
    field("d_model", o.d_model);
    field("heads", o.heads);
    field("d_ff", o.d_ff);
    field("layers", o.layers);
    field("relative_bias", o.relative_bias);
    field("bias_per_head", o.bias_per_head);
    field("absolute_positions", o.absolute_positions);
    field("arc_dim", o.arc_dim);
    field("label_dim", o.label_dim);
    field("leaky_slope", o.leaky_slope);
    field("embedding_dropout", o.embedding_dropout);
    field("encoder_dropout", o.encoder_dropout);
    field("attention_dropout", o.attention_dropout);
    field("mlp_dropout", o.mlp_dropout);
    field("upos_weight", o.upos_weight);
    field("max_length", o.max_length);
    field("seed", o.seed);
  }
};

namespace parse {

constexpr const char* kParserFormat = "synattn.parser.v1";


// Checks a model file's options against the tensors it holds, before any
// layer is built from them (without it, a file whose metadata alone said
// layers = 10^6 or d_ff = 2 * 10^9 would build the parser first, layer after
// layer, and fail with a bare std::bad_alloc). Every size option is read
// off a tensor: the vocabulary sizes, word_dim, char_dim, char_filters,
// char_width, d_model, d_ff, arc_dim, label_dim and num_upos from the shapes
// of the tensors they size, layers from the number of encoder layers the
// file holds (each with its projections and feed-forward weights); heads
// must divide d_model (validate), and max_length, which no tensor
// constrains, is held to kMaxPrecomputedPositions there. So what loading
// allocates is bounded by the file's own size. FormatError "FILE:
// parser.options 'OPTION' = V does not fit tensor 'NAME' ...".
inline void check_options_fit_tensors(const std::string& path, const ParserOptions& o, const SafetensorsFile& file) {
  // `options`: the options that size the tensor, as "'d_ff' = 24, 'd_model' = 16".
  const auto fits = [&](const std::string& name, const std::string& options, long long rows, long long cols) {
    const auto it = file.tensors.find(name);
    ParameterInfo p;
    p.rows = static_cast<Index>(rows);
    p.cols = static_cast<Index>(cols);
    if (it != file.tensors.end() && rows >= 1 && cols >= 1 && synattn::detail::shape_accepted(p, it->second.shape))
      return;
    throw FormatError(
        path, 0,
        "parser.options " + options +
            (it == file.tensors.end() ? " do not fit the file: it has no tensor '" + name + "'"
                                      : " do not fit tensor '" + name + "' of shape " + shape_text(it->second.shape) +
                                            ", expected " + shape_text(p.rows, p.cols)));
  };
  const auto opt = [](const char* option, long long value) {
    return std::string("'") + option + "' = " + std::to_string(value);
  };
  const long long d = o.d_model;
  fits("words.weight", opt("num_words", o.num_words) + ", " + opt("word_dim", o.word_dim), o.num_words, o.word_dim);
  bool has_chars = false;
  for (const auto& kv : file.tensors) has_chars = has_chars || starts_with(kv.first, "chars.");
  if (has_chars != o.use_chars)
    throw FormatError(path, 0,
                     std::string("parser.options 'use_chars' = ") + (o.use_chars ? "true" : "false") +
                         " does not fit the file: it " + (has_chars ? "holds" : "has no") + " chars.* tensors");
  if (o.use_chars) {
    fits("chars.embedding.weight", opt("num_chars", o.num_chars) + ", " + opt("char_dim", o.char_dim), o.num_chars,
         o.char_dim);
    long long taps = 0;
    if (!checked_multiply<long long>(o.char_dim, o.char_width, taps, std::numeric_limits<int>::max())) taps = -1;
    fits("chars.conv.weight",
         opt("char_filters", o.char_filters) + ", " + opt("char_dim", o.char_dim) + ", " +
             opt("char_width", o.char_width),
         o.char_filters, taps);
  }
  fits("projection.weight",
       opt("d_model", d) + ", " + opt("word_dim", o.word_dim) + ", " + opt("char_filters", o.char_filters), d,
       o.input_dim());
  // The encoder layers the file holds: encoder.layers.K.* for K in [0, count).
  long long count = 0;
  for (const auto& kv : file.tensors) {
    constexpr const char* prefix = "encoder.layers.";
    if (!starts_with(kv.first, prefix)) continue;
    long long k = 0;
    const std::string rest = kv.first.substr(std::string(prefix).size());
    if (whole_number(rest.substr(0, rest.find('.')), 0, std::numeric_limits<int>::max() - 1, k))
      count = std::max(count, k + 1);
  }
  if (o.layers != count)
    throw FormatError(path, 0,
                     "parser.options 'layers' = " + std::to_string(o.layers) + " does not fit the file: it holds " +
                         std::to_string(count) + " encoder layers (encoder.layers.*)");
  for (long long k = 0; k < count; ++k) {
    const std::string layer = "encoder.layers." + std::to_string(k) + ".";
    fits(layer + "attention.Wq", opt("d_model", d), d, d);
    fits(layer + "ffn.linear1.weight", opt("d_ff", o.d_ff) + ", " + opt("d_model", d), o.d_ff, d);
    // A per-head bias table has one row per head.
    const auto table = file.tensors.find(layer + "attention.table");
    if (o.bias_per_head && table != file.tensors.end() && table->second.shape.size() == 2)
      fits(layer + "attention.table", opt("heads", o.heads), o.heads, static_cast<long long>(table->second.shape[1]));
  }
  fits("arc_dep.weight", opt("arc_dim", o.arc_dim) + ", " + opt("d_model", d), o.arc_dim, d);
  fits("label_dep.weight", opt("label_dim", o.label_dim) + ", " + opt("d_model", d), o.label_dim, d);
  long long label_cols = 0;
  if (!checked_multiply<long long>(o.num_labels, static_cast<long long>(o.label_dim) + 1, label_cols,
                                   std::numeric_limits<int>::max()))
    label_cols = -1;
  fits("label.weight", opt("num_labels", o.num_labels) + ", " + opt("label_dim", o.label_dim),
       static_cast<long long>(o.label_dim) + 1, label_cols);
  if (o.num_upos > 0) {
    fits("upos.weight", opt("num_upos", o.num_upos) + ", " + opt("d_model", d), o.num_upos, d);
  } else if (file.tensors.count("upos.weight")) {
    throw FormatError(path, 0,
                     "parser.options 'num_upos' = 0 does not fit the file: it holds a tagging head (upos.weight)");
  }
}

// One parsed sentence: heads[i] is word i+1's head (1-based, 0 = the root),
// as in CoNLL-U's HEAD column; deprels and upos its relation and tag.
struct ParsedSentence {
  std::vector<int> heads;
  std::vector<std::string> deprels, upos;
  // The tree in synattn's convention (0-based, root = -1).
  DependencyTree tree(const std::string& name = {}) const {
    std::vector<int> h(heads.size());
    for (std::size_t i = 0; i < heads.size(); ++i) h[i] = heads[i] - 1;
    return DependencyTree(h, Structure::Tree, name);
  }
};

class ParserModel {
 public:
  using Parser = BiaffineParser<float>;

  ParserModel(const ParserOptions& options, ParserVocabulary vocabulary)
      : vocabulary_(std::move(vocabulary)), parser_(checked(options, vocabulary_)) {}

  const ParserVocabulary& vocabulary() const noexcept { return vocabulary_; }
  Parser& parser() noexcept { return parser_; }
  const Parser& parser() const noexcept { return parser_; }
  const ParserOptions& options() const noexcept { return parser_.options(); }

  // The model file's metadata keys (for save_checkpoint's `extra`).
  std::map<std::string, std::string> metadata() const {
    return {{"parser.format", kParserFormat},
            {"parser.options", options_to_json(parser_.options())},
            {"parser.vocabulary", vocabulary_.to_json()}};
  }

  // Weights (and, for a training checkpoint, the optimiser's state and step)
  // written atomically through a temporary file.
  void save(const std::string& path, const Optimizer<float>* optimizer = nullptr, long long step = 0,
            std::map<std::string, std::string> extra = {}) const {
    for (const auto& kv : metadata()) extra[kv.first] = kv.second;
    save_checkpoint<float>(path, parser_.parameter_store(), optimizer, step, extra);
  }

  // Weights only, rounded to F16: half the size, for shipping (the shipped
  // English model is stored so; its scores are measured after the rounding).
  void save_half(const std::string& path, std::map<std::string, std::string> extra = {}) const {
    for (const auto& kv : metadata()) extra[kv.first] = kv.second;
    save_weights_half<float>(path, parser_.parameter_store(), extra);
  }

  // Reads the options and vocabulary from the file, builds the parser and
  // loads its weights (and the optimiser's state when `optimizer` is given).
  static ParserModel load(const std::string& path, Optimizer<float>* optimizer = nullptr,
                          CheckpointInfo* info = nullptr) {
    return load(load_safetensors(path), path, optimizer, info);
  }

  // The same from a parsed file; `path` names it in errors ("PATH: reason").
  static ParserModel load(const SafetensorsFile& file, const std::string& path, Optimizer<float>* optimizer = nullptr,
                          CheckpointInfo* info = nullptr) {
    const ModelMetadata meta(file, path, "parser", kParserFormat);
    ParserOptions options;
    ParserVocabulary vocabulary;
    meta.read([&] {
      options = options_from_json<ParserOptions>(meta.at("parser.options"));
      vocabulary = ParserVocabulary::from_json(meta.at("parser.vocabulary"));
    });
    check_options_fit_tensors(path, options, file);  // before anything is built from them
    ParserModel model(options, std::move(vocabulary));
    // F16 weights (save_half) are widened; any F64 tensor is refused as usual,
    // so conversion is allowed only for a file of F16 and F32 tensors alone.
    CheckpointLoadOptions load_options;
    load_options.convert_dtype = std::all_of(file.tensors.begin(), file.tensors.end(), [](const auto& kv) {
      return kv.second.dtype == SafetensorsDType::F16 || kv.second.dtype == SafetensorsDType::F32;
    });
    const CheckpointInfo got =
        load_checkpoint<float>(file, path, model.parser_.parameter_store(), optimizer, load_options);
    if (info) *info = got;
    return model;
  }

  // Trees for tokenised sentences (any number; batched by `batch_tokens`
  // positions, results in input order, the same at any thread count). A
  // sentence of more than `max_words` words is refused before any is parsed
  // (time and memory grow with the square of the length:
  // parse/sentence_length.hpp).
  std::vector<ParsedSentence> parse(const std::vector<std::vector<std::string>>& sentences,
                                    long long batch_tokens = 4096,
                                    std::size_t max_words = kMaxSentenceWords) const {
    std::vector<EncodedSentence> corpus;
    corpus.reserve(sentences.size());
    for (std::size_t s = 0; s < sentences.size(); ++s) {
      if (sentences[s].empty()) throw Error("ParserModel::parse: sentence " + std::to_string(s) + " has no words");
      const std::string too_long = sentence_length_problem(sentences[s].size(), max_words);
      if (!too_long.empty()) throw Error("ParserModel::parse: sentence " + std::to_string(s) + " has " + too_long);
    }
    for (std::size_t s = 0; s < sentences.size(); ++s) {
      corpus.push_back(encode_words(sentences[s], vocabulary_));
    }
    std::vector<ParsedSentence> out(sentences.size());
    ParserBatch batch;
    ParserCache<float> cache;
    ParseWorkspace ws;
    ParsedBatch parsed;
    for (const auto& indices : token_budget_batches(corpus, batch_tokens, nullptr)) {
      make_parser_batch(corpus, indices, vocabulary_, WordDropoutRule{}, nullptr, batch);
      parser_.parse(batch, cache, ws, parsed);
      for (std::size_t b = 0; b < indices.size(); ++b) {
        ParsedSentence& p = out[indices[b]];
        const Index n = batch.lengths[b] - 1, base = static_cast<Index>(b) * batch.m;
        p.heads.resize(static_cast<std::size_t>(n));
        p.deprels.resize(static_cast<std::size_t>(n));
        p.upos.assign(static_cast<std::size_t>(n), "_");
        for (Index i = 0; i < n; ++i) {
          p.heads[static_cast<std::size_t>(i)] = parsed.heads[base + i + 1];
          p.deprels[static_cast<std::size_t>(i)] = vocabulary_.label(parsed.labels[base + i + 1]);
          if (parsed.upos[base + i + 1] >= 0)
            p.upos[static_cast<std::size_t>(i)] = vocabulary_.upos(parsed.upos[base + i + 1]);
        }
      }
    }
    return out;
  }

 private:
  static const ParserOptions& checked(const ParserOptions& o, const ParserVocabulary& v) {
    o.validate();
    if (o.num_words != v.num_words() || (o.use_chars && o.num_chars != v.num_chars()) ||
        o.num_labels != v.num_labels() || (o.num_upos != 0 && o.num_upos != v.num_upos()))
      throw Error("ParserModel: the options (" + std::to_string(o.num_words) + " words, " +
                  std::to_string(o.num_chars) + " characters, " + std::to_string(o.num_labels) + " relations, " +
                  std::to_string(o.num_upos) + " tags) do not fit the vocabulary (" + std::to_string(v.num_words()) +
                  ", " + std::to_string(v.num_chars()) + ", " + std::to_string(v.num_labels()) + ", " +
                  std::to_string(v.num_upos()) + ")");
    return o;
  }

  ParserVocabulary vocabulary_;
  Parser parser_;
};

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_PARSER_MODEL_HPP
