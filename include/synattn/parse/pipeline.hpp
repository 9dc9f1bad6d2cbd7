// synattn — raw text in, trees out: the tokenizer, then the parser.
//
//   const auto pipeline = synattn::parse::Pipeline::load_default();
//   const synattn::text::Document doc = pipeline.parse_text("Dr. Smith's team didn't finish. They left!");
//   for (const auto& s : doc.sentences) {
//     const synattn::DependencyTree tree = synattn::parse::sentence_tree(s);   // for the attention bias
//     // s.words[i].form, .head (1-based, 0 = root), .deprel, .upos, .span (bytes and code points)
//   }
//
// The tokenizer (text/tokenizer_model.hpp) splits the text into paragraphs,
// sentences, tokens and words, each with its span in the text; the parser
// (parse/parser_model.hpp) gives every sentence's words their heads,
// relations and tags. Both models are read once; parse_text() is const and
// safe to call from several threads at once, and its result does not depend
// on the number of threads.
//
// Copies of a Pipeline (and moves: a moved-from one still parses) share its
// models, which nothing changes after loading.
//
// Needs nlohmann-json (link synattn::checkpoint). Linking synattn::compiled
// built with it (SYNATTN_COMPILED_PIPELINE) makes this header light: the
// models' classes are declared only, and a file that parses text includes
// neither the tokenizer's and parser's code nor the JSON reader.
#ifndef SYNATTN_PARSE_PIPELINE_HPP
#define SYNATTN_PARSE_PIPELINE_HPP

#include <memory>
#include <string>
#include <vector>

#include "../text/document.hpp"
#include "../tree/dependency_tree.hpp"
#include "../util/model_paths.hpp"

namespace synattn {
namespace text {
class TokenizerModel;
}  // namespace text

namespace parse {

class ParserModel;

// A sentence's tree in synattn's convention (0-based, root = -1), from its
// words' CoNLL-U heads. Throws TreeError when the heads are missing (-1) or
// do not form a tree.
inline DependencyTree sentence_tree(const text::Sentence& s) {
  std::vector<int> heads(s.words.size());
  for (std::size_t i = 0; i < s.words.size(); ++i) heads[i] = s.words[i].head - 1;
  return DependencyTree(heads, Structure::Tree, s.sent_id);
}

class Pipeline {
 public:
  Pipeline(text::TokenizerModel tokenizer, ParserModel parser);
  // Copies and moves share the models: a moved-from pipeline still parses
  // (a plain move would leave it holding none, and a call on it would crash).
  Pipeline(const Pipeline&) = default;
  Pipeline(Pipeline&& other) noexcept : models_(other.models_) {}
  Pipeline& operator=(const Pipeline&) = default;
  Pipeline& operator=(Pipeline&& other) noexcept {
    models_ = other.models_;
    return *this;
  }

  // The shipped English models (text::default_tokenizer_path(), default_model_path()).
  // Inline in every mode: the models' folder is the program's
  // (SYNATTN_MODEL_DIR, util/model_paths.hpp), not the compiled library's.
  static Pipeline load_default() { return load(text::default_tokenizer_path(), default_model_path()); }
  static Pipeline load(const std::string& tokenizer_path, const std::string& parser_path);

  // The models (include text/tokenizer_model.hpp or parse/parser_model.hpp to use them).
  const text::TokenizerModel& tokenizer() const noexcept;
  const ParserModel& parser() const noexcept;

  // Sentences of `doc` get their words' heads, relations and tags. A
  // sentence of more than kMaxSentenceWords words (the tokenizer cuts at its
  // max_sentence_tokens, but multiword tokens expand) is refused before any
  // is parsed, naming `name`, the sentence and its bytes.
  void parse_sentences(text::Document& doc, const std::string& name = "<text>") const;

  // Raw UTF-8 text -> parsed sentences. `name` names the text in errors
  // (invalid UTF-8: the byte offset).
  text::Document parse_text(const std::string& raw, const std::string& name = "<text>") const;

 private:
  struct Models;
  std::shared_ptr<const Models> models_;
};

}  // namespace parse
}  // namespace synattn

// The members' definitions. With SYNATTN_COMPILED_PIPELINE (linking
// synattn::compiled built with nlohmann-json defines it) a program sees only
// the declarations above and links src/compiled_pipeline.cpp's copies: the
// loading (safetensors, JSON metadata), the tokenizer and the parser's
// driver are compiled once there instead of in every file that parses text,
// and their headers are not read, most of such a file's compile time.
// Otherwise they are inline here.
#if !defined(SYNATTN_COMPILED_PIPELINE) || defined(SYNATTN_PIPELINE_SOURCE)
#include "../text/tokenizer_model.hpp"
#include "parser_model.hpp"
#include "sentence_length.hpp"

#include <utility>

#if defined(SYNATTN_PIPELINE_SOURCE)
#define SYNATTN_PIPELINE_INLINE
#else
#define SYNATTN_PIPELINE_INLINE inline
#endif

namespace synattn {
namespace parse {

struct Pipeline::Models {
  text::TokenizerModel tokenizer;
  ParserModel parser;
};

SYNATTN_PIPELINE_INLINE Pipeline::Pipeline(text::TokenizerModel tokenizer, ParserModel parser)
    : models_(std::make_shared<const Models>(Models{std::move(tokenizer), std::move(parser)})) {}

SYNATTN_PIPELINE_INLINE Pipeline Pipeline::load(const std::string& tokenizer_path, const std::string& parser_path) {
  return Pipeline(text::TokenizerModel::load(tokenizer_path), ParserModel::load(parser_path));
}

SYNATTN_PIPELINE_INLINE const text::TokenizerModel& Pipeline::tokenizer() const noexcept { return models_->tokenizer; }
SYNATTN_PIPELINE_INLINE const ParserModel& Pipeline::parser() const noexcept { return models_->parser; }

SYNATTN_PIPELINE_INLINE void Pipeline::parse_sentences(text::Document& doc, const std::string& name) const {
  std::vector<std::vector<std::string>> forms(doc.sentences.size());
  for (std::size_t s = 0; s < doc.sentences.size(); ++s) {
    const text::Sentence& sentence = doc.sentences[s];
    const std::string too_long = sentence_length_problem(sentence.words.size());
    if (!too_long.empty()) {
      const text::TextSpan span = sentence.span();
      throw Error(name + ": sentence " + (sentence.sent_id.empty() ? std::to_string(s + 1) : sentence.sent_id) +
                  " (bytes " + std::to_string(span.bytes.begin) + "-" + std::to_string(span.bytes.end) + ") has " +
                  too_long);
    }
    for (const text::Word& w : sentence.words) forms[s].push_back(w.form);
  }
  const std::vector<ParsedSentence> parsed = models_->parser.parse(forms);
  for (std::size_t s = 0; s < doc.sentences.size(); ++s) {
    auto& words = doc.sentences[s].words;
    for (std::size_t i = 0; i < words.size(); ++i) {
      words[i].head = parsed[s].heads[i];
      words[i].deprel = parsed[s].deprels[i];
      words[i].upos = parsed[s].upos[i];
    }
  }
}

SYNATTN_PIPELINE_INLINE text::Document Pipeline::parse_text(const std::string& raw, const std::string& name) const {
  text::Document doc = models_->tokenizer.tokenize(raw, name);
  parse_sentences(doc, name);
  return doc;
}

}  // namespace parse
}  // namespace synattn

#undef SYNATTN_PIPELINE_INLINE
#endif

#endif  // SYNATTN_PARSE_PIPELINE_HPP
