// libFuzzer target for the parse program's raw-text input: any bytes as
// `parse --format text` (and --format auto on input that is not CoNLL-U)
// reads them, with the shipped tokenizer (models/en_ewt.tokenizer.safetensors,
// or $SYNATTN_TOKENIZER_MODEL). Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_raw_text &&
//   tools/make_raw_text_seeds.sh build/fuzz/raw-text-seeds &&
//   build/fuzz/fuzz/fuzz_raw_text -max_total_time=60 -timeout=10 build/fuzz/raw-text-seeds
//
// The path is the program's own (examples/parse/run.hpp, raw_text.hpp):
// detect_format, checked_raw_text (UTF-8, control characters, no text), with
// and without --replace-invalid-utf8, the tokenizer, the CoNLL-U writer.
// Tokenising only: the shipped parser is too slow for fuzzing under the
// sanitizers, and what it reads (the words' forms) is checked here. Promises,
// each a finding (abort) when broken:
// - an input is accepted, or refused with synattn's own exceptions
//   (synattn::Error, RuntimeError, FormatError), never another one;
// - with --replace-invalid-utf8 no input is refused for its UTF-8;
// - what is accepted tokenizes without an exception, into sentences of at
//   most max_sentence_tokens tokens and at most kMaxSentenceWords words
//   (so the pipeline never refuses raw text for its length), every token its
//   text's bytes, every word a non-empty form without tabs or line breaks;
// - the written CoNLL-U reads back (text::read_conllu_text) to the input
//   text byte for byte, with the same sentences, tokens and words, and the
//   parser's own reader (parse::ConlluDocument) takes it and a tree for
//   every sentence.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "../examples/parse/raw_text.hpp"

namespace {

void expect(bool ok, const char* promise) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_raw_text: broken promise: %s\n", promise);
    std::abort();
  }
}

const synattn::text::TokenizerModel& tokenizer() {
  static const synattn::text::TokenizerModel model = [] {
    const char* env = std::getenv("SYNATTN_TOKENIZER_MODEL");
    return synattn::text::TokenizerModel::load(env && *env ? env : SYNATTN_FUZZ_TOKENIZER_MODEL);
  }();
  return model;
}

bool has_line_break_or_tab(const std::string& s) { return s.find_first_of("\t\n\r") != std::string::npos; }

// The program's path after checked_raw_text accepted `text`.
void tokenize_and_write(const std::string& text) {
  using namespace synattn;
  const text::TokenizerModel& model = tokenizer();
  const text::Document doc = model.tokenize(text, "<fuzz>");  // valid UTF-8: may not throw
  expect(doc.text == text, "the document keeps the text");
  // A text of nothing but Unicode spaces (U+00A0, U+3000, ...) has no
  // sentences: the program refuses it ("the input holds no text").
  if (doc.sentences.empty()) return;
  for (const text::Sentence& s : doc.sentences) {
    expect(!s.tokens.empty() && !s.words.empty(), "a sentence has tokens and words");
    expect(static_cast<int>(s.tokens.size()) <= model.options().max_sentence_tokens,
           "a sentence has at most max_sentence_tokens tokens");
    expect(s.words.size() <= parse::kMaxSentenceWords, "a sentence stays within the parser's limit");
    for (const text::Token& t : s.tokens) {
      const auto b = static_cast<std::size_t>(t.span.bytes.begin), e = static_cast<std::size_t>(t.span.bytes.end);
      expect(b < e && e <= text.size() && text.compare(b, e - b, t.form) == 0, "a token is its text's bytes");
    }
    for (const text::Word& w : s.words)
      expect(!w.form.empty() && !has_line_break_or_tab(w.form), "a word's form fits one CoNLL-U field");
  }
  std::string conllu;
  try {
    conllu = text::to_conllu_text(doc);
  } catch (const Error& e) {
    std::fprintf(stderr, "fuzz_raw_text: the writer refused: %s\n", e.what());
    expect(false, "the writer takes every document the tokenizer makes");
  }
  std::istringstream in(conllu);
  const text::Document back = text::read_conllu_text(in, "<written>");
  expect(back.text == text, "the written CoNLL-U reads back to the input byte for byte");
  expect(back.sentences.size() == doc.sentences.size(), "the same sentences");
  for (std::size_t s = 0; s < doc.sentences.size(); ++s) {
    const text::Sentence &a = doc.sentences[s], &b = back.sentences[s];
    expect(a.tokens.size() == b.tokens.size() && a.words.size() == b.words.size(), "the same tokens and words");
    for (std::size_t k = 0; k < a.tokens.size(); ++k)
      expect(a.tokens[k].form == b.tokens[k].form && a.tokens[k].span.bytes.begin == b.tokens[k].span.bytes.begin &&
                 a.tokens[k].span.bytes.end == b.tokens[k].span.bytes.end,
             "a token's form and bytes read back");
    for (std::size_t k = 0; k < a.words.size(); ++k) expect(a.words[k].form == b.words[k].form, "a word reads back");
  }
  // The parser's reader takes the output, and a tree for every sentence
  // (word 1 the root, every other word attached to it).
  std::istringstream again(conllu);
  parse::ConlluDocument parsed = parse::ConlluDocument::read(again, "<written>");
  expect(parsed.size() == doc.sentences.size(), "the parser's reader sees the same sentences");
  for (std::size_t s = 0; s < parsed.size(); ++s) {
    expect(parsed.word_count(s) == doc.sentences[s].words.size(), "the parser's reader sees the same words");
    std::vector<int> heads(parsed.word_count(s), 1);
    heads[0] = 0;
    parsed.set_heads(s, heads, std::vector<std::string>(heads.size(), "dep"));
  }
}

// Refusals are caught here only; what follows an accepted input may throw
// nothing (an exception there escapes to libFuzzer: a finding).
void run(const std::string& input, bool replace_invalid) {
  std::string text;
  try {
    text = parse_cli::checked_raw_text(input, "<fuzz>", replace_invalid);
  } catch (const synattn::text::Utf8Error&) {
    expect(!replace_invalid, "--replace-invalid-utf8 leaves no invalid UTF-8 to refuse");
    return;
  } catch (const synattn::Error&) {
    return;
  } catch (const synattn::RuntimeError&) {  // FormatError: control characters, no text
    return;
  }
  tokenize_and_write(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string format = parse_cli::detect_format(input);
  expect(format == "conllu" || format == "text", "detect_format says conllu or text");
  run(input, false);
  run(input, true);
  return 0;
}
