// Tagging corpus from CoNLL-U: lower-casing, the label column (base DEPREL
// by default, UPOS, DEPREL as written, a user's function), a user's own
// sentences, trees, errors.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>

#include <synattn/data/tagging_corpus.hpp>

using namespace synattn;

namespace {
const std::string kEwt = std::string(SYNATTN_SOURCE_DIR) + "/data/ud/UD_English-EWT/";
}

TEST_CASE("ascii_lower lowers A-Z only and keeps every other byte", "[tagging_corpus]") {
  CHECK(ascii_lower("The CAT's 42 Ways") == "the cat's 42 ways");
  CHECK(ascii_lower("\xC3\x89" "cole NA\xC3\x8FVE") == "\xC3\x89" "cole na\xC3\x8Fve");  // École, NAÏVE
  CHECK(ascii_lower("") == "");
  CHECK(ascii_lower("@[`{") == "@[`{");  // the bytes around A-Z and a-z
}

TEST_CASE("base_deprel keeps the part before ':'", "[tagging_corpus]") {
  CHECK(base_deprel("nmod:poss") == "nmod");
  CHECK(base_deprel("acl:relcl") == "acl");
  CHECK(base_deprel("root") == "root");
  CHECK_THROWS_WITH(base_deprel(":x"), Catch::Contains("base_deprel: DEPREL ':x'"));
  CHECK_THROWS_AS(base_deprel(""), Error);
}

TEST_CASE("a small CoNLL-U file becomes tagged sentences", "[tagging_corpus]") {
  std::istringstream in(
      "# sent_id = s1\n"
      "1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n"
      "2\tCat\tcat\tNOUN\t_\t_\t3\tnsubj:pass\t_\t_\n"
      "3-4\tsat's\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "3\tSAT\tsit\tVERB\t_\t_\t0\troot\t_\t_\n"
      "4\t's\t's\tPART\t_\t_\t3\tnmod:poss\t_\t_\n\n");
  const auto c = read_tagging_corpus(in, "mini.conllu");
  REQUIRE(c.size() == 1);
  CHECK(c[0].id == "s1");
  CHECK(c[0].forms == std::vector<std::string>{"the", "cat", "sat", "'s"});
  CHECK(c[0].heads == std::vector<int>{1, 2, -1, 2});
  CHECK(c[0].labels == std::vector<std::string>{"det", "nsubj", "root", "nmod"});
  CHECK(c[0].tree.size() == 4);
  CHECK(c[0].line == 1);
  CHECK(sentence_lengths(c) == std::vector<int>{4});
}

namespace {
const char* const kMini =
    "# sent_id = s1\n"
    "1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n"
    "2\tCat\tcat\tNOUN\t_\t_\t3\tnsubj:pass\t_\t_\n"
    "3\tSAT\tsit\tVERB\t_\t_\t0\troot\t_\t_\n\n";
}  // namespace

TEST_CASE("TaggingOptions: labels from UPOS or DEPREL as written, forms as written", "[tagging_corpus]") {
  TaggingOptions upos;
  upos.labels = LabelColumn::Upos;
  upos.forms = FormCase::AsWritten;
  std::istringstream in(kMini);
  const auto c = read_tagging_corpus(in, "mini.conllu", upos);
  REQUIRE(c.size() == 1);
  CHECK(c[0].forms == std::vector<std::string>{"The", "Cat", "SAT"});
  CHECK(c[0].labels == std::vector<std::string>{"DET", "NOUN", "VERB"});
  CHECK(c[0].heads == std::vector<int>{1, 2, -1});

  TaggingOptions deprel;
  deprel.labels = LabelColumn::Deprel;
  std::istringstream again(kMini);
  CHECK(read_tagging_corpus(again, "mini.conllu", deprel)[0].labels ==
        std::vector<std::string>{"det", "nsubj:pass", "root"});
}

TEST_CASE("TaggingOptions::label_of gives a user's own labels", "[tagging_corpus]") {
  TaggingOptions o;
  // Which side of its head a word is on (a label no column holds).
  o.label_of = [](const ConlluSentence& s, const ConlluWord& w) {
    if (w.head == 0) return s.sent_id + ":ROOT";
    return std::string(w.id < w.head ? "L" : "R");
  };
  std::istringstream in(kMini);
  CHECK(read_tagging_corpus(in, "mini.conllu", o)[0].labels == std::vector<std::string>{"L", "L", "s1:ROOT"});
  o.label_of = [](const ConlluSentence&, const ConlluWord& w) { return w.id == 2 ? std::string() : w.upos; };
  std::istringstream empty(kMini);
  CHECK_THROWS_WITH(read_tagging_corpus(empty, "mini.conllu", o),
                    "mini.conllu:1: sentence s1: word 2 ('Cat'): label_of gave an empty label");
}

TEST_CASE("a missing UPOS is refused naming the column", "[tagging_corpus]") {
  TaggingOptions upos;
  upos.labels = LabelColumn::Upos;
  std::istringstream in("1\tHi\thi\t_\t_\t_\t0\troot\t_\t_\n\n");
  CHECK_THROWS_WITH(read_tagging_corpus(in, "u.conllu", upos),
                    Catch::StartsWith("u.conllu:1: sentence #1 (line 1): word 1 ('Hi') has UPOS '_', expected a tag"));
}

TEST_CASE("tagged_sentence: a user's own sentence, checked", "[tagging_corpus]") {
  const TaggedSentence t = tagged_sentence("mine-1", {"she", "reads"}, {1, -1}, {"PRON", "VERB"});
  CHECK(t.size() == 2);
  CHECK(t.tree.size() == 2);
  CHECK(t.labels == std::vector<std::string>{"PRON", "VERB"});
  CHECK_THROWS_WITH(tagged_sentence("mine-2", {"she", "reads"}, {1, -1}, {"PRON"}),
                    "tagged_sentence: sentence mine-2 has 2 forms, 2 heads and 1 labels; "
                    "expected one of each per word");
  CHECK_THROWS_WITH(tagged_sentence("mine-3", {"she", "reads"}, {1, -1}, {"PRON", ""}),
                    "tagged_sentence: sentence mine-3: word 2 ('reads') has an empty label");
  CHECK_THROWS_AS(tagged_sentence("mine-4", {"she", "reads"}, {1, 0}, {"PRON", "VERB"}), TreeError);
}

TEST_CASE("errors name the file, the line and the sentence", "[tagging_corpus]") {
  std::istringstream no_label(
      "\n# sent_id = bad-1\n"
      "1\tHi\thi\tINTJ\t_\t_\t0\t_\t_\t_\n\n");
  CHECK_THROWS_WITH(read_tagging_corpus(no_label, "x.conllu"),
                    Catch::StartsWith("x.conllu:2: sentence bad-1: word 1 ('Hi') has DEPREL '_'"));
  std::istringstream bad_head("1\tHi\thi\tINTJ\t_\t_\t5\troot\t_\t_\n\n");
  CHECK_THROWS_WITH(read_tagging_corpus(bad_head, "y.conllu"), Catch::StartsWith("y.conllu:1: HEAD 5"));
  CHECK_THROWS_WITH(load_tagging_corpus("/nonexistent/z.conllu"), Catch::Contains("cannot open file"));
}

TEST_CASE("every EWT dev sentence: one label per word, base labels, lower-case forms, valid tree",
          "[tagging_corpus][ewt]") {
  const auto dev = load_tagging_corpus(kEwt + "en_ewt-ud-dev.conllu");
  REQUIRE(dev.size() == 2001);
  std::set<std::string> labels;
  std::size_t words = 0;
  for (const TaggedSentence& s : dev) {
    REQUIRE(s.labels.size() == s.forms.size());
    REQUIRE(s.heads.size() == s.forms.size());
    REQUIRE(s.tree.size() == s.size());
    words += s.forms.size();
    int roots = 0;
    for (int h : s.heads) roots += h == -1 ? 1 : 0;
    CHECK(roots == 1);
    for (const std::string& l : s.labels) {
      CHECK(l.find(':') == std::string::npos);
      labels.insert(l);
    }
    for (const std::string& f : s.forms)
      for (char ch : f) REQUIRE_FALSE((ch >= 'A' && ch <= 'Z'));
  }
  CHECK(words == 25147);  // integer-ID lines of the file (awk -F"\t" "$1 ~ /^[0-9]+$/")
  CHECK(labels.count("nmod") == 1);
  CHECK(labels.count("root") == 1);
  CHECK(labels.size() < 40);
}
