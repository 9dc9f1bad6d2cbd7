// synattn — a trained tokenizer: raw text in, sentences of tokens and words
// out, every one with its span in the text.
//
//   auto tok = synattn::text::TokenizerModel::load(synattn::text::default_tokenizer_path());
//   synattn::text::Document doc = tok.tokenize("Dr. Smith's team didn't finish. They left!");
//   // doc.sentences[0].tokens: Dr. | Smith | 's | team | didn't | finish | .
//   // doc.sentences[0].words:  Dr. | Smith | 's | team | did | n't | finish | .
//
// The text is split into paragraphs at blank lines (text/segmenter_labels.hpp);
// the segmenter network (text/segmenter_net.hpp) scores every character of a
// paragraph; decoding then walks the paragraph once:
//   - a token is a maximal run of non-space characters cut where the network
//     says a token ends (classes 1-4 more likely than class 0), and always
//     before a space and at the paragraph's end;
//   - at a token's end, a sentence ends when classes 2 + 4 outweigh 1 + 3,
//     and the token is a multiword token when 3 + 4 outweigh 1 + 2 or the
//     treebank always split its form (its words from text/multiword.hpp);
//   - a paragraph's last token ends its sentence, and a sentence reaching
//     max_sentence_tokens tokens ends there (documented in docs/parser.md:
//     a text with no sentence punctuation still gives bounded sentences,
//     which attention needs: its cost grows with the square of the length).
// Memory is bounded by the pieces a paragraph is scored in, and time is
// linear in the text's length. tokenize() is const and keeps its working
// memory on its own stack, so concurrent calls are safe; its result is the
// same at any thread count (the network's products use fixed row blocks).
//
// The model file is a synattn checkpoint (safetensors) whose metadata holds
// tokenizer.format, tokenizer.options, tokenizer.vocabulary and
// tokenizer.multiword (JSON): the options are checked against the tensors'
// shapes before anything is built.
//
// Needs nlohmann-json (link synattn::checkpoint).
#ifndef SYNATTN_TEXT_TOKENIZER_MODEL_HPP
#define SYNATTN_TEXT_TOKENIZER_MODEL_HPP

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../io/json_fields.hpp"
#include "../io/model_metadata.hpp"
#include "../io/safetensors.hpp"
#include "../train/checkpoint.hpp"
#include "../util/finite.hpp"
#include "../util/model_paths.hpp"
#include "document.hpp"
#include "multiword.hpp"
#include "segmenter_labels.hpp"
#include "segmenter_net.hpp"
#include "utf8.hpp"
#include "word_spans.hpp"

namespace synattn {
namespace text {

constexpr const char* kTokenizerFormat = "synattn.tokenizer.v1";

struct TokenizerOptions {
  SegmenterNetOptions net;
  int min_char_count = 2;          // characters seen fewer times read as their class
  int max_sentence_tokens = 250;   // a longer sentence is cut (see the top)
  int piece_chars = 4096;          // characters scored per piece (memory bound; results do not depend on it)

  void validate() const {
    net.validate();
    if (net.classes != kSegmenterClasses)
      throw Error("TokenizerOptions: the network must have " + std::to_string(kSegmenterClasses) + " classes, got " +
                  std::to_string(net.classes));
    if (min_char_count < 1 || max_sentence_tokens < 1 || max_sentence_tokens > 100000 || piece_chars < 1 ||
        piece_chars > (1 << 24))
      throw Error("TokenizerOptions: need min_char_count >= 1, max_sentence_tokens in [1, 100000] and piece_chars in "
                  "[1, 2^24]; got " + std::to_string(min_char_count) + ", " + std::to_string(max_sentence_tokens) +
                  ", " + std::to_string(piece_chars));
  }
};

}  // namespace text

// A model file's tokenizer.options (io/json_fields.hpp).
template <>
struct JsonFields<text::TokenizerOptions> {
  static constexpr const char* what = "tokenizer options";
  template <class O, class Visit>
  static void visit(O& o, Visit&& field) {
    field("num_chars", o.net.num_chars);
    field("char_dim", o.net.char_dim);
    field("channels", o.net.channels);
    field("dilations", o.net.dilations);
    field("classes", o.net.classes);
    field("min_char_count", o.min_char_count);
    field("max_sentence_tokens", o.max_sentence_tokens);
    field("piece_chars", o.piece_chars);
  }
};

namespace text {

class TokenizerModel {
 public:
  using Net = SegmenterNet<float>;

  TokenizerModel(const TokenizerOptions& options, CharVocabulary vocabulary, MultiwordExpander multiword,
                 const RandomStream& init = RandomStream(1))
      : options_(checked(options, vocabulary)), vocabulary_(std::move(vocabulary)), multiword_(std::move(multiword)),
        net_(options_.net, init) {}

  const TokenizerOptions& options() const noexcept { return options_; }
  const CharVocabulary& vocabulary() const noexcept { return vocabulary_; }
  const MultiwordExpander& multiword() const noexcept { return multiword_; }
  Net& net() noexcept { return net_; }
  const Net& net() const noexcept { return net_; }
  void set_max_sentence_tokens(int n) {
    TokenizerOptions o = options_;
    o.max_sentence_tokens = n;
    o.validate();
    options_ = o;
  }

  std::map<std::string, std::string> metadata() const {
    return {{"tokenizer.format", kTokenizerFormat},
            {"tokenizer.options", options_to_json(options_)},
            {"tokenizer.vocabulary", vocabulary_.to_json()},
            {"tokenizer.multiword", multiword_.to_json()}};
  }

  // Weights in F32 (with the optimiser's state for a training checkpoint).
  void save(const std::string& path, const Optimizer<float>* optimizer = nullptr, long long step = 0,
            std::map<std::string, std::string> extra = {}) const {
    for (const auto& kv : metadata()) extra[kv.first] = kv.second;
    save_checkpoint<float>(path, net_.parameter_store(), optimizer, step, extra);
  }

  static TokenizerModel load(const std::string& path, CheckpointInfo* info = nullptr) {
    const SafetensorsFile file = load_safetensors(path);
    const ModelMetadata meta(file, path, "tokenizer", kTokenizerFormat);
    TokenizerOptions options;
    CharVocabulary vocabulary;
    MultiwordExpander multiword;
    meta.read([&] {
      options = options_from_json<TokenizerOptions>(meta.at("tokenizer.options"));
      vocabulary = CharVocabulary::from_json(meta.at("tokenizer.vocabulary"));
      multiword = MultiwordExpander::from_json(meta.at("tokenizer.multiword"));
      check_tensor_shapes(options, file);
    });
    TokenizerModel model(options, std::move(vocabulary), std::move(multiword));
    const CheckpointInfo got = load_checkpoint<float>(path, model.net_.parameter_store(), nullptr);
    if (info) *info = got;
    return model;
  }

  // Class probabilities (code points x 5) for the paragraph characters of
  // `cps`; rows of characters outside every paragraph stay zero.
  RowMajorMatrix<float> probabilities(const std::vector<char32_t>& cps, const std::vector<Paragraph>& paragraphs) const {
    RowMajorMatrix<float> probs = RowMajorMatrix<float>::Zero(static_cast<Index>(cps.size()), kSegmenterClasses);
    const int gap = options_.net.max_dilation(), margin = options_.net.context();
    // Batches of pieces of at most ~piece_chars characters each, so that the
    // network's buffers stay bounded whatever the text's length.
    std::vector<Piece> batch;
    long long rows = 0;
    SegmenterWorkspace<float> ws;
    RowMajorMatrix<float> logits;
    const auto run = [&]() {
      if (batch.empty()) return;
      const PackedPieces packed = pack_pieces(cps, batch, vocabulary_, gap);
      logits.resize(static_cast<Index>(packed.ids.size()), kSegmenterClasses);
      net_.infer(packed.ids, ws, logits);
      for (std::size_t k = 0; k < batch.size(); ++k) {
        const Piece& p = batch[k];
        for (int c = p.core_begin; c < p.core_end; ++c) {
          const Index r = packed.row_of_piece[k] + (c - p.begin);
          // The library's non-finite policy (docs/errors.md), as the
          // parser's relations and tags: finite but huge weights overflow a
          // logit to inf, the softmax makes it NaN, and every boundary test
          // on a NaN probability is false, so the text would be segmented
          // by nothing in silence.
          check_finite_scores<float>("TokenizerModel", "segmenter class", logits.row(r).data(), kSegmenterClasses,
                                     [c] { return "code point " + std::to_string(c) + " of the text"; });
          softmax_row(logits.row(r).data(), kSegmenterClasses, probs.row(c).data());
        }
      }
      batch.clear();
      rows = 0;
    };
    for (const Paragraph& para : paragraphs)
      for (const Piece& p : paragraph_pieces(para, options_.piece_chars, margin)) {
        batch.push_back(p);
        rows += p.end - p.begin + gap;
        if (rows >= options_.piece_chars) run();
      }
    run();
    return probs;
  }

  // Raw UTF-8 text -> sentences (see the top). Invalid UTF-8 is a Utf8Error
  // naming `name` and the byte offset.
  Document tokenize(const std::string& text, const std::string& name = "<text>") const {
    const DecodedText decoded = decode_utf8(text, name);
    const std::vector<char32_t>& cps = decoded.code_points;
    const std::vector<Paragraph> paragraphs = split_paragraphs(cps);
    const RowMajorMatrix<float> probs = probabilities(cps, paragraphs);
    Document doc;
    doc.text = text;
    for (std::size_t p = 0; p < paragraphs.size(); ++p) decode_paragraph(paragraphs[p], cps, decoded, probs, p == 0, doc);
    return doc;
  }

 private:
  static const TokenizerOptions& checked(const TokenizerOptions& o, const CharVocabulary& v) {
    o.validate();
    if (o.net.num_chars != v.size())
      throw Error("TokenizerModel: the options say " + std::to_string(o.net.num_chars) +
                  " character ids, the vocabulary has " + std::to_string(v.size()));
    return o;
  }

  // Every tensor the options imply, with its shape, before anything is
  // allocated (an edited option cannot make loading build a huge network).
  static void check_tensor_shapes(const TokenizerOptions& o, const SafetensorsFile& file) {
    std::vector<ParameterInfo> want;
    const auto add = [&](std::string name, Index rows, Index cols) {
      ParameterInfo p;
      p.name = std::move(name);
      p.rows = rows;
      p.cols = cols;
      want.push_back(p);
    };
    add("embedding.weight", o.net.num_chars, o.net.char_dim);
    Index in = o.net.char_dim;
    for (std::size_t l = 0; l < o.net.dilations.size(); ++l) {
      add("conv" + std::to_string(l) + ".weight", 3 * in, o.net.channels);
      add("conv" + std::to_string(l) + ".bias", 1, o.net.channels);
      in = o.net.channels;
    }
    add("output.weight", o.net.channels, o.net.classes);
    add("output.bias", 1, o.net.classes);
    for (const ParameterInfo& w : want) {
      const auto it = file.tensors.find(w.name);
      if (it == file.tensors.end()) throw Error("the options call for a tensor '" + w.name + "' the file does not hold");
      if (!synattn::detail::shape_accepted(w, it->second.shape)) {
        std::string got;
        for (auto s : it->second.shape) got += (got.empty() ? "" : " x ") + std::to_string(s);
        throw Error("tensor '" + w.name + "' is " + (got.empty() ? "a scalar" : got) + ", the options call for " +
                    shape_text(w.rows, w.cols));
      }
    }
  }

  void decode_paragraph(const Paragraph& para, const std::vector<char32_t>& cps, const DecodedText& decoded,
                        const RowMajorMatrix<float>& probs, bool first, Document& doc) const {
    bool new_paragraph = true;
    Sentence sentence;
    const auto close_sentence = [&]() {
      if (sentence.tokens.empty()) return;
      sentence.new_paragraph = new_paragraph;
      sentence.new_document = first && doc.sentences.empty();
      new_paragraph = false;
      doc.sentences.push_back(std::move(sentence));
      sentence = Sentence();
    };
    int start = -1;
    for (int c = para.begin; c < para.end; ++c) {
      if (is_space(cps[static_cast<std::size_t>(c)])) continue;
      if (start < 0) start = c;
      const bool forced = c + 1 == para.end || is_space(cps[static_cast<std::size_t>(c) + 1]);
      const auto pr = probs.row(c);
      const float end_p = pr(kTokenEnd) + pr(kSentenceEnd) + pr(kMultiwordEnd) + pr(kMultiwordSentenceEnd);
      if (!forced && !(end_p > pr(kInside))) continue;
      Token token;
      token.span.code_points = {start, c + 1};
      token.span.bytes = {decoded.byte_offset[static_cast<std::size_t>(start)],
                          decoded.byte_offset[static_cast<std::size_t>(c) + 1]};
      token.form = doc.text.substr(static_cast<std::size_t>(token.span.bytes.begin),
                                   static_cast<std::size_t>(token.span.bytes.end - token.span.bytes.begin));
      token.first_word = static_cast<int>(sentence.words.size());
      const bool multiword = pr(kMultiwordEnd) + pr(kMultiwordSentenceEnd) > pr(kTokenEnd) + pr(kSentenceEnd) ||
                             multiword_.always_split(token.form);
      std::vector<std::string> forms;
      if (multiword) forms = multiword_.expand(token.form);
      if (forms.size() < 2) forms = {token.form};
      token.word_count = static_cast<int>(forms.size());
      for (auto& f : forms) {
        Word w;
        w.form = std::move(f);
        sentence.words.push_back(std::move(w));
      }
      assign_word_spans(token, sentence.words);
      sentence.tokens.push_back(std::move(token));
      start = -1;
      const bool sentence_end = pr(kSentenceEnd) + pr(kMultiwordSentenceEnd) > pr(kTokenEnd) + pr(kMultiwordEnd);
      if (sentence_end || static_cast<int>(sentence.tokens.size()) >= options_.max_sentence_tokens) close_sentence();
    }
    close_sentence();
  }

  TokenizerOptions options_;
  CharVocabulary vocabulary_;
  MultiwordExpander multiword_;
  Net net_;
};

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_TOKENIZER_MODEL_HPP
