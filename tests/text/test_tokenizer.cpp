// The tokenizer model: training on a tiny treebank reaches every token and
// sentence of its own text, saving and loading keep every bit, results do not
// depend on the thread count, spans and the written CoNLL-U reproduce the
// text byte for byte (bundled files and adversarial text), long text without
// punctuation gives bounded sentences, and edited model files are refused.
#include <synattn/io/safetensors.hpp>
#include <synattn/text/conll18_eval.hpp>
#include <synattn/io/conllu_text.hpp>
#include <synattn/io/conllu_writer.hpp>
#include <synattn/text/tokenizer_model.hpp>
#include <synattn/text/tokenizer_training.hpp>

#include <catch2/catch.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/test_data.hpp"

using namespace synattn;
using namespace synattn::text;

namespace {

// Two documents, paragraphs, multiword tokens, no space before punctuation.
const char* kTinyTreebank =
    "# newdoc id = d1\n# newpar\n# sent_id = 1\n# text = I don't know.\n"
    "1\tI\t_\tPRON\t_\t_\t3\tnsubj\t_\t_\n2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdo\t_\tAUX\t_\t_\t4\taux\t_\t_\n"
    "3\tn't\t_\tPART\t_\t_\t4\tadvmod\t_\t_\n4\tknow\t_\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n5\t.\t_\tPUNCT\t_\t_\t4\tpunct\t_\t_\n\n"
    "# sent_id = 2\n# text = Dr. Lee said no.\n"
    "1\tDr.\t_\tPROPN\t_\t_\t2\tcompound\t_\t_\n2\tLee\t_\tPROPN\t_\t_\t3\tnsubj\t_\t_\n3\tsaid\t_\tVERB\t_\t_\t0\troot\t_\t_\n"
    "4\tno\t_\tINTJ\t_\t_\t3\tobj\t_\tSpaceAfter=No\n5\t.\t_\tPUNCT\t_\t_\t3\tpunct\t_\t_\n\n"
    "# newpar\n# sent_id = 3\n# text = We can't, sadly\n"
    "1\tWe\t_\tPRON\t_\t_\t3\tnsubj\t_\t_\n2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n2\tca\t_\tAUX\t_\t_\t4\taux\t_\t_\n"
    "3\tn't\t_\tPART\t_\t_\t4\tadvmod\t_\t_\n4\t,\t_\tPUNCT\t_\t_\t5\tpunct\t_\t_\n5\tsadly\t_\tADV\t_\t_\t0\troot\t_\t_\n\n"
    "# newdoc id = d2\n# sent_id = 4\n# text = Go home!\n"
    "1\tGo\t_\tVERB\t_\t_\t0\troot\t_\t_\n2\thome\t_\tADV\t_\t_\t1\tadvmod\t_\tSpaceAfter=No\n3\t!\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n"
    "# sent_id = 5\n# text = Now.\n"
    "1\tNow\t_\tADV\t_\t_\t0\troot\t_\tSpaceAfter=No\n2\t.\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n";

Document tiny_document() {
  std::istringstream in(kTinyTreebank);
  return read_conllu_text(in, "tiny");
}

TokenizerTrainOptions tiny_options() {
  TokenizerTrainOptions o;
  o.model.net.char_dim = 8;
  o.model.net.channels = 16;
  o.model.net.dilations = {1, 2, 4};
  o.model.min_char_count = 1;
  o.epochs = 150;
  o.patience = 150;
  o.piece_chars = 64;
  o.batch_chars = 256;
  o.lr = 1e-2;
  o.lr_decay = 1;  // 150 short epochs: a per-epoch decay would stop it early
  o.warmup = 1;
  o.char_dropout = 0;
  return o;
}

// Trained once for the tests that need a model (about a second).
const TokenizerModel& tiny_model() {
  static const TokenizerModel model = [] {
    const Document doc = tiny_document();
    return TokenizerTrainer::train(doc, doc, tiny_options());
  }();
  return model;
}

// Every token's and word's span slices the text to what the document says.
void check_spans(const Document& doc) {
  for (const Sentence& s : doc.sentences) {
    REQUIRE(!s.tokens.empty());
    for (const Token& t : s.tokens) {
      const auto& b = t.span.bytes;
      REQUIRE(b.begin >= 0);
      REQUIRE(b.end <= static_cast<int>(doc.text.size()));
      CHECK(doc.text.substr(static_cast<std::size_t>(b.begin), static_cast<std::size_t>(b.end - b.begin)) == t.form);
      CHECK(count_code_points(doc.text.substr(0, static_cast<std::size_t>(b.begin))) ==
            static_cast<std::size_t>(t.span.code_points.begin));
      int at = b.begin;
      for (int w = 0; w < t.word_count; ++w) {
        const Word& word = s.words[static_cast<std::size_t>(t.first_word + w)];
        CHECK(word.span.bytes.begin == at);
        at = word.span.bytes.end;
      }
      CHECK(at == b.end);
    }
  }
}

// The written CoNLL-U describes the text exactly.
void check_round_trip(const Document& doc) {
  std::istringstream in(to_conllu_text(doc));
  const Document back = read_conllu_text(in, "written");
  CHECK(back.text == doc.text.substr(0, back.text.size()));
  // The reader ends the text after the last token's whitespace, which is the
  // writer's: the text after the last token is kept too.
  CHECK(back.text == doc.text);
}

}  // namespace

TEST_CASE("TokenizerTrainer: a tiny treebank is learnt to 100% tokens, words and sentences on its own text",
          "[text][slow]") {
  const Document gold = tiny_document();
  const Conll18Scores s = evaluate_conll18(gold, tiny_model().tokenize(gold.text));
  CHECK(s.tokens.f1() == 1.0);
  CHECK(s.words.f1() == 1.0);
  CHECK(s.sentences.f1() == 1.0);
  CHECK(tiny_model().multiword().expand("can't") == std::vector<std::string>{"ca", "n't"});
}

TEST_CASE("TokenizerModel: save and load keep every weight, option and rule bit for bit", "[text][io]") {
  synattn_test::TempDir dir;
  const std::string path = dir.file("tok.safetensors");
  const TokenizerModel& model = tiny_model();
  model.save(path);
  const TokenizerModel back = TokenizerModel::load(path);
  const auto& a = model.net().parameter_store();
  const auto& b = back.net().parameter_store();
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.values().data(), b.values().data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0);
  CHECK(back.metadata() == model.metadata());
  const std::string text = "I don't know. Dr. Lee can't go home!";
  CHECK(to_conllu_text(back.tokenize(text)) == to_conllu_text(model.tokenize(text)));
}

TEST_CASE("TokenizerModel: the same sentences at any thread count", "[text]") {
#if defined(_OPENMP)
  const TokenizerModel model = TokenizerModel::load(synattn_test::data_path("models/en_ewt.tokenizer.safetensors"));
  const Document gold = read_conllu_text_file(synattn_test::ewt("dev"));
  const int saved = omp_get_max_threads();
  std::vector<std::string> out;
  for (const int threads : {1, 2, 7}) {
    omp_set_num_threads(threads);
    out.push_back(to_conllu_text(model.tokenize(gold.text)));
  }
  omp_set_num_threads(saved);
  CHECK(out[0] == out[1]);
  CHECK(out[0] == out[2]);
#else
  SUCCEED("built without OpenMP: one thread only");
#endif
}

TEST_CASE("TokenizerModel: concurrent calls on one model give the serial result", "[text]") {
  const TokenizerModel model = TokenizerModel::load(synattn_test::data_path("models/en_ewt.tokenizer.safetensors"));
  const std::string text = read_conllu_text_file(synattn_test::data_path("examples/data/en_ewt-dev-sample.conllu")).text;
  const std::string serial = to_conllu_text(model.tokenize(text));
  std::vector<std::string> out(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < out.size(); ++t)
    threads.emplace_back([&, t] { out[t] = to_conllu_text(model.tokenize(text)); });
  for (auto& t : threads) t.join();
  for (const auto& o : out) CHECK(o == serial);
}

TEST_CASE("TokenizerModel: spans and the written CoNLL-U reproduce the text byte for byte", "[text]") {
  const TokenizerModel model = TokenizerModel::load(synattn_test::data_path("models/en_ewt.tokenizer.safetensors"));
  SECTION("EWT test, GSD test") {
    for (const std::string& path : {synattn_test::ewt("test"), synattn_test::gsd("test")}) {
      INFO(path);
      const Document doc = model.tokenize(read_conllu_text_file(path).text);
      check_spans(doc);
      check_round_trip(doc);
    }
  }
  SECTION("adversarial text") {
    const std::vector<std::string> texts{
        "  Leading and trailing spaces.  \n",
        "Tabs\tinside\t\tthe text.\r\nCRLF line ends.\r\n\r\nA second paragraph.",
        "No\u00a0break\u3000spaces\u2003and\u2029a paragraph separator.",
        "Emoji \xF0\x9F\x98\x80 and combining e\xCC\x81 marks, \xE4\xB8\xAD\xE6\x96\x87 text.",
        "\n\n\nBlank lines first.\n\n\n\nand between.\n\n",
        "x",
        "Don't stop.Now!!!...(maybe) \"quoted\" 'single' --- a-b-c 3.14 $5 e-mail@x.org http://x.org/a?b=c",
    };
    for (const std::string& t : texts) {
      INFO(t);
      const Document doc = model.tokenize(t);
      REQUIRE(!doc.sentences.empty());
      check_spans(doc);
      check_round_trip(doc);
    }
  }
}

TEST_CASE("TokenizerModel: a long text without sentence punctuation gives bounded sentences", "[text]") {
  const TokenizerModel model = TokenizerModel::load(synattn_test::data_path("models/en_ewt.tokenizer.safetensors"));
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "word ";
  const Document doc = model.tokenize(text);
  std::size_t tokens = 0;
  for (const Sentence& s : doc.sentences) {
    CHECK(static_cast<int>(s.tokens.size()) <= model.options().max_sentence_tokens);
    tokens += s.tokens.size();
  }
  CHECK(tokens == 20000);
  CHECK(doc.sentences.size() >= 20000 / static_cast<std::size_t>(model.options().max_sentence_tokens));
}

TEST_CASE("TokenizerModel: invalid UTF-8 is refused with its byte offset", "[text]") {
  CHECK_THROWS_WITH(tiny_model().tokenize("ok \xC3\x28 bad", "input.txt"),
                    Catch::Contains("input.txt") && Catch::Contains("byte offset 3"));
}

TEST_CASE("TokenizerModel::load: options are checked against the tensors before anything is built", "[text][io]") {
  synattn_test::TempDir dir;
  const std::string path = dir.file("tok.safetensors");
  tiny_model().save(path);
  SafetensorsFile file = load_safetensors(path);
  const auto rewrite = [&](const std::string& key, const std::string& from, const std::string& to) {
    SafetensorsFile edited = file;
    std::string& v = edited.metadata.at(key);
    const std::size_t at = v.find(from);
    REQUIRE(at != std::string::npos);
    v.replace(at, from.size(), to);
    const std::string out = dir.file("edited.safetensors");
    save_safetensors(out, edited);
    return out;
  };
  CHECK_THROWS_WITH(TokenizerModel::load(rewrite("tokenizer.options", "\"channels\":16", "\"channels\":1000000")),
                    Catch::Contains("edited.safetensors") && Catch::Contains("channels <= 4096"));
  CHECK_THROWS_WITH(TokenizerModel::load(rewrite("tokenizer.options", "\"channels\":16", "\"channels\":17")),
                    Catch::Contains("edited.safetensors") && Catch::Contains("conv0.weight"));
  CHECK_THROWS_WITH(TokenizerModel::load(rewrite("tokenizer.options", "\"dilations\":[1,2,4]", "\"dilations\":[1,2,4,8]")),
                    Catch::Contains("conv3.weight"));
  CHECK_THROWS_WITH(TokenizerModel::load(rewrite("tokenizer.options", "\"max_sentence_tokens\":250",
                                                 "\"max_sentence_tokens\":2147483647")),
                    Catch::Contains("max_sentence_tokens"));
  CHECK_THROWS_WITH(TokenizerModel::load(rewrite("tokenizer.format", "v1", "v9")), Catch::Contains("tokenizer.format"));
  SafetensorsFile no_meta = file;
  no_meta.metadata.erase("tokenizer.multiword");
  save_safetensors(dir.file("bare.safetensors"), no_meta);
  CHECK_THROWS_WITH(TokenizerModel::load(dir.file("bare.safetensors")), Catch::Contains("tokenizer.multiword"));
}

TEST_CASE("TokenizerModel::load: a multiword rule's count is a whole number in range, read by name", "[text][io]") {
  synattn_test::TempDir dir;
  const std::string path = dir.file("tok.safetensors");
  tiny_model().save(path);
  const SafetensorsFile file = load_safetensors(path);
  const std::string& rules = file.metadata.at("tokenizer.multiword");
  const std::size_t at = rules.find("\"count\":");
  REQUIRE(at != std::string::npos);  // the tiny treebank's don't / can't give rules
  const std::size_t digits = at + std::strlen("\"count\":");
  const std::size_t end = rules.find_first_not_of("0123456789", digits);
  REQUIRE(end > digits);
  const auto with_count = [&](const std::string& count) {
    SafetensorsFile edited = file;
    edited.metadata.at("tokenizer.multiword").replace(digits, end - digits, count);
    const std::string out = dir.file("edited.safetensors");
    save_safetensors(out, edited);
    return out;
  };
  // get<long long>() read 2.7 as 2 and 1e300 with undefined behaviour.
  for (const char* bad : {"2.7", "2.0", "-3", "0", "1e300", "99999999999999999999", "true", "\"5\""})
    CHECK_THROWS_WITH(TokenizerModel::load(with_count(bad)),
                      Catch::Contains("edited.safetensors") && Catch::Contains("multiword rules: rules[") &&
                          Catch::Contains("].count is"));
  CHECK_NOTHROW(TokenizerModel::load(with_count("7")));
}

TEST_CASE("TokenizerModel: scores that overflow are refused by name, never segmented in silence", "[text]") {
  // Finite but huge weights: the segmenter's logits overflow to inf, the
  // softmax made them NaN, and every boundary test on NaN was false.
  synattn_test::TempDir dir;
  const std::string path = dir.file("tok.safetensors");
  tiny_model().save(path);
  SafetensorsFile file = load_safetensors(path);
  for (auto& [name, t] : file.tensors) {
    if (t.dtype != SafetensorsDType::F32) continue;
    const float huge = 3e38f;
    for (std::size_t i = 0; i + sizeof(float) <= t.bytes.size(); i += sizeof(float))
      std::memcpy(t.bytes.data() + i, &huge, sizeof(float));
  }
  save_safetensors(dir.file("huge.safetensors"), file);
  const TokenizerModel model = TokenizerModel::load(dir.file("huge.safetensors"));  // every weight is finite
  CHECK_THROWS_WITH(model.tokenize("I don't know. Dr. Lee can't go home!"),
                    Catch::Contains("TokenizerModel") && Catch::Contains("segmenter class score") &&
                        Catch::Contains("code point 0 of the text") && Catch::Contains("not finite"));
}
