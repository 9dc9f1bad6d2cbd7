// The parser's sentence-length limit (parse/sentence_length.hpp): one number
// for ParserModel::parse, the pipeline and token text, refused by name.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/pipeline.hpp>
#include <synattn/parse/sentence_length.hpp>
#include <synattn/parse/token_text.hpp>
#include <synattn/text/tokenizer_model.hpp>

#include "support/test_data.hpp"

using namespace synattn;
using namespace synattn::parse;

namespace {

std::vector<std::string> words(std::size_t n) {
  static const char* const cycle[] = {"The", "cat", "sat", "on", "the", "mat", "and", "looked", "at", "it", "."};
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.emplace_back(cycle[i % (sizeof cycle / sizeof cycle[0])]);
  return out;
}

const ParserModel& shipped_parser() {
  static const ParserModel model = ParserModel::load(synattn_test::data_path("models/en_ewt.parser.safetensors"));
  return model;
}

}  // namespace

TEST_CASE("the limit is one number: token text's per-line limit is the parser's", "[parse][limits]") {
  STATIC_REQUIRE(kMaxTokensPerLine == kMaxSentenceWords);
  CHECK(kMaxSentenceWords == 1000);
  CHECK(sentence_length_problem(kMaxSentenceWords).empty());
  CHECK_THAT(sentence_length_problem(kMaxSentenceWords + 1),
             Catch::StartsWith("1001 words, more than the limit of 1000 a sentence (the parser's time and memory "
                               "grow with the square of the length"));
  CHECK(sentence_length_problem(5, 4) == sentence_length_problem(5, 4));
  CHECK_THAT(sentence_length_problem(5, 4), Catch::StartsWith("5 words, more than the limit of 4 a sentence"));
}

TEST_CASE("ParserModel::parse refuses a sentence past the limit by index and length, before parsing any",
          "[parse][limits]") {
  const ParserModel& model = shipped_parser();
  // At the limit: parsed, a tree of every word.
  const std::vector<ParsedSentence> at = model.parse({words(kMaxSentenceWords)});
  REQUIRE(at.size() == 1);
  CHECK(at[0].heads.size() == kMaxSentenceWords);
  CHECK(at[0].tree().size() == static_cast<Index>(kMaxSentenceWords));
  // One word more, as the second sentence: refused, naming it.
  CHECK_THROWS_AS(model.parse({words(3), words(kMaxSentenceWords + 1)}), Error);
  CHECK_THROWS_WITH(model.parse({words(3), words(kMaxSentenceWords + 1)}),
                    Catch::StartsWith("ParserModel::parse: sentence 1 has 1001 words, more than the limit of 1000 a "
                                      "sentence"));
  // A caller who means it raises the limit; a lower one is kept too.
  CHECK(model.parse({words(kMaxSentenceWords + 1)}, 4096, kMaxSentenceWords + 1)[0].heads.size() ==
        kMaxSentenceWords + 1);
  CHECK_THROWS_WITH(model.parse({words(3), words(8)}, 4096, 5),
                    Catch::StartsWith("ParserModel::parse: sentence 1 has 8 words, more than the limit of 5"));
}

TEST_CASE("Pipeline refuses a sentence past the limit by name, sentence and bytes", "[parse][limits]") {
  const Pipeline pipeline(text::TokenizerModel::load(synattn_test::data_path("models/en_ewt.tokenizer.safetensors")),
                          shipped_parser());
  // The tokenizer cuts its sentences at max_sentence_tokens (250 for the
  // shipped model): raw text never reaches the limit through it.
  CHECK(pipeline.tokenizer().options().max_sentence_tokens < static_cast<int>(kMaxSentenceWords));
  // A document whose second sentence has more words than the limit (as
  // multiword tokens or another tokenizer could give): refused, nothing parsed.
  text::Document doc;
  const auto add = [&doc](std::size_t n, const std::string& id) {
    text::Sentence s;
    s.sent_id = id;
    for (std::size_t i = 0; i < n; ++i) {
      const auto begin = static_cast<int>(doc.text.size());
      doc.text += "w ";
      text::Token t;
      t.form = "w";
      t.span = {{begin, begin + 1}, {begin, begin + 1}};
      t.first_word = static_cast<int>(i);
      s.tokens.push_back(t);
      text::Word w;
      w.form = "w";
      w.span = t.span;
      s.words.push_back(w);
    }
    doc.sentences.push_back(s);
  };
  add(3, "short");
  add(kMaxSentenceWords + 1, "long");
  CHECK_THROWS_WITH(pipeline.parse_sentences(doc, "in.txt"),
                    Catch::StartsWith("in.txt: sentence long (bytes 6-2007) has 1001 words, more than the limit of "
                                      "1000 a sentence"));
  CHECK(doc.sentences[0].words[0].head == -1);  // nothing was parsed
  doc.sentences.pop_back();
  add(kMaxSentenceWords, "at the limit");
  pipeline.parse_sentences(doc, "in.txt");
  CHECK(doc.sentences[1].words.back().head >= 0);
}

TEST_CASE("Pipeline copies and moves share their read-only models and parse alike", "[parse][pipeline]") {
  Pipeline pipeline(text::TokenizerModel::load(synattn_test::data_path("models/en_ewt.tokenizer.safetensors")),
                    shipped_parser());
  const Pipeline copy = pipeline;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the point
  CHECK(&copy.tokenizer() == &pipeline.tokenizer());
  CHECK(&copy.parser() == &pipeline.parser());
  const auto same_parse = [](const text::Document& a, const text::Document& b) {
    REQUIRE(a.sentences.size() == b.sentences.size());
    for (std::size_t s = 0; s < a.sentences.size(); ++s) {
      REQUIRE(a.sentences[s].words.size() == b.sentences[s].words.size());
      for (std::size_t i = 0; i < a.sentences[s].words.size(); ++i) {
        CHECK(a.sentences[s].words[i].head == b.sentences[s].words[i].head);
        CHECK(a.sentences[s].words[i].deprel == b.sentences[s].words[i].deprel);
      }
    }
  };
  const std::string text = "The cat sat. It slept.";
  const text::Document a = pipeline.parse_text(text);
  REQUIRE(a.sentences.size() == 2);
  same_parse(a, copy.parse_text(text));
  // A moved-from pipeline keeps its models (no null to dereference).
  const Pipeline moved = std::move(pipeline);
  CHECK(&moved.parser() == &copy.parser());
  same_parse(a, moved.parse_text(text));
  same_parse(a, pipeline.parse_text(text));  // NOLINT(bugprone-use-after-move): the point of the check
  Pipeline assigned = copy;
  assigned = std::move(pipeline);
  same_parse(a, assigned.parse_text(text));
  same_parse(a, pipeline.parse_text(text));  // NOLINT(bugprone-use-after-move)
}
