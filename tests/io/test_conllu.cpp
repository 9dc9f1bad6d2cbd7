#include <catch2/catch.hpp>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <synattn/io/conllu.hpp>

#include "support/test_data.hpp"
#include "support/conllu_rows.hpp"

using synattn::ConlluIssue;
using synattn::ConlluMode;
using synattn::ConlluReader;
using synattn::ConlluSentence;
using synattn::ConlluWord;
using synattn::HeadConvention;
using synattn::FormatError;
using synattn::read_conllu;

namespace {

using synattn_test::row;  // support/conllu_rows.hpp

// A sentence of n words in a chain: word 1 is the root, word k's head is k-1.
std::string chain(int n, const std::string& sent_id = "") {
  std::string out = sent_id.empty() ? "" : "# sent_id = " + sent_id + "\n";
  for (int k = 1; k <= n; ++k) out += row(k, "w" + std::to_string(k), k - 1, k == 1 ? "root" : "dep");
  return out + "\n";
}

std::vector<ConlluSentence> parse(const std::string& text, ConlluMode mode = ConlluMode::Strict,
                                  std::vector<ConlluIssue>* issues = nullptr) {
  std::istringstream in(text);
  return read_conllu(in, "mem.conllu", mode, issues);
}

std::vector<int> file_heads(const ConlluSentence& s) {
  std::vector<int> out;
  for (const ConlluWord& w : s.words) out.push_back(w.head);
  return out;
}

std::vector<std::string> forms(const ConlluSentence& s) {
  std::vector<std::string> out;
  for (const ConlluWord& w : s.words) out.push_back(w.form);
  return out;
}

bool same_words(const ConlluSentence& a, const ConlluSentence& b) {
  if (a.words.size() != b.words.size()) return false;
  for (std::size_t i = 0; i < a.words.size(); ++i) {
    const ConlluWord &x = a.words[i], &y = b.words[i];
    if (x.id != y.id || x.form != y.form || x.upos != y.upos || x.deprel != y.deprel ||
        x.head != y.head)
      return false;
  }
  return true;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string sample_path() { return synattn_test::source_path("examples/data/en_ewt-dev-sample.conllu"); }

}  // namespace

TEST_CASE("a well-formed sentence is read with its comments, columns and line", "[conllu]") {
  const std::string text =
      "# newdoc id = doc1\n"
      "# sent_id = s1\n"
      "# text = The cat sat.\n" +
      row(1, "The", 2, "det") + row(2, "cat", 3, "nsubj") + row(3, "sat", 0, "root") +
      row(4, ".", 3, "punct") + "\n";
  const auto sentences = parse(text);
  REQUIRE(sentences.size() == 1);
  const ConlluSentence& s = sentences[0];
  CHECK(s.sent_id == "s1");
  CHECK(s.text == "The cat sat.");
  CHECK(s.line == 1);
  CHECK(s.index == 0);
  CHECK(s.label() == "s1");
  REQUIRE(s.size() == 4);
  CHECK(forms(s) == std::vector<std::string>{"The", "cat", "sat", "."});
  CHECK(s.words[2].upos == "X");
  CHECK(s.words[2].deprel == "root");
  CHECK(s.words[3].id == 4);
  CHECK(file_heads(s) == std::vector<int>{2, 3, 0, 3});
}

TEST_CASE("newdoc comments mark a document's first sentence, with or without an id", "[conllu][documents]") {
  const auto sentences = parse("# newdoc id = d1\n" + chain(2, "a") + chain(1, "b") + "# newdoc\n" + chain(1, "c") +
                               "#  newdoc id =  d3 \n" + chain(2, "d") + "# newdocs = x\n" + chain(1, "e"));
  REQUIRE(sentences.size() == 5);
  CHECK(sentences[0].new_document);
  CHECK(sentences[0].document_id == "d1");
  CHECK_FALSE(sentences[1].new_document);  // a sentence's own comments only: the next one continues the document
  CHECK(sentences[1].document_id.empty());
  CHECK(sentences[2].new_document);
  CHECK(sentences[2].document_id.empty());
  CHECK(sentences[3].new_document);
  CHECK(sentences[3].document_id == "d3");
  CHECK_FALSE(sentences[4].new_document);  // another key that starts with "newdoc"
  // The real files: EWT's dev sample begins a document at its first sentence.
  const auto sample = read_conllu(sample_path());
  REQUIRE(!sample.empty());
  CHECK(sample[0].new_document);
  CHECK(sample[0].document_id == "weblog-blogspot.com_nominations_20041117172713_ENG_20041117_172713");
}

TEST_CASE("heads round-trip between CoNLL-U and canonical form", "[conllu][heads]") {
  const auto sentences = parse(row(1, "a", 3) + row(2, "b", 3) + row(3, "c", 0) + row(4, "d", 3) +
                               row(5, "e", 4) + "\n");
  REQUIRE(sentences.size() == 1);
  const ConlluSentence& s = sentences[0];
  CHECK(s.heads() == std::vector<int>{2, 2, -1, 2, 3});
  CHECK(synattn::from_canonical_heads(s.heads(), HeadConvention::OneBasedRootZero) == file_heads(s));
  CHECK(synattn::to_canonical_heads(file_heads(s), HeadConvention::OneBasedRootZero) == s.heads());

  const synattn::DependencyTree tree = s.tree();
  CHECK(tree.heads() == s.heads());
  CHECK(tree.roots() == std::vector<int>{2});
  CHECK(tree.depth() == std::vector<int>{1, 1, 0, 1, 2});
  CHECK(tree.sentence() == "#1 (line 1)");
}

TEST_CASE("a hand-built sentence with a bad HEAD fails in heads() with its label", "[conllu]") {
  ConlluSentence s;
  s.sent_id = "hand-1";
  s.words = {ConlluWord{1, "a", "X", "root", 0}, ConlluWord{2, "b", "X", "dep", 7}};
  CHECK_THROWS_AS(s.heads(), synattn::TreeError);
  CHECK_THROWS_WITH(s.heads(), Catch::Contains("sentence hand-1") && Catch::Contains("word 1"));
  s.words[1].head = 2;  // in range, but a self-loop: tree() validates
  CHECK(s.heads() == std::vector<int>{-1, 1});
  CHECK_THROWS_WITH(s.tree(), Catch::Contains("sentence hand-1") && Catch::Contains("own head"));
}

TEST_CASE("multiword tokens and empty nodes are skipped", "[conllu]") {
  const std::string text = "# sent_id = mwt\n" + row("1-2", "Don't", "_") + row(1, "Do", 3, "aux") +
                           row(2, "n't", 3, "advmod") + row(3, "go", 0, "root") +
                           row("3.1", "went", "_") + row(4, "!", 3, "punct") + "\n";
  const auto sentences = parse(text);
  REQUIRE(sentences.size() == 1);
  CHECK(forms(sentences[0]) == std::vector<std::string>{"Do", "n't", "go", "!"});
  CHECK(file_heads(sentences[0]) == std::vector<int>{3, 3, 0, 3});
  CHECK(sentences[0].words[3].id == 4);
}

TEST_CASE("line ends, blank lines and the end of input are tolerated", "[conllu]") {
  const std::string lf = "# sent_id = a\n" + row(1, "x", 0, "root") + row(2, "y", 1) + "\n" +
                         "# sent_id = b\n" + row(1, "z", 0, "root") + "\n";
  const auto want = parse(lf);
  REQUIRE(want.size() == 2);

  SECTION("CRLF line ends") {
    std::string crlf;
    for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    const auto got = parse(crlf);
    REQUIRE(got.size() == 2);
    CHECK(got[0].sent_id == "a");
    CHECK(got[1].sent_id == "b");
    CHECK(same_words(got[0], want[0]));
    CHECK(same_words(got[1], want[1]));
  }
  SECTION("no final blank line") {
    const auto got = parse(lf.substr(0, lf.size() - 1));
    REQUIRE(got.size() == 2);
    CHECK(same_words(got[1], want[1]));
  }
  SECTION("no final newline at all") {
    std::string text = lf.substr(0, lf.size() - 2);  // ends in "...root\t_\t_"
    CHECK(text.back() == '_');
    const auto got = parse(text);
    REQUIRE(got.size() == 2);
    CHECK(same_words(got[1], want[1]));
  }
  SECTION("extra and whitespace-only blank lines, and a byte-order mark") {
    const std::string text = "\xEF\xBB\xBF\n\n# sent_id = a\n" + row(1, "x", 0, "root") +
                             row(2, "y", 1) + " \t \n\n\n# sent_id = b\n" + row(1, "z", 0, "root") +
                             "\n\n";
    const auto got = parse(text);
    REQUIRE(got.size() == 2);
    CHECK(got[0].line == 3);
    CHECK(got[1].line == 9);
    CHECK(same_words(got[0], want[0]));
    CHECK(same_words(got[1], want[1]));
  }
  SECTION("empty input") { CHECK(parse("").empty()); }
}

TEST_CASE("comments: sent_id and text are taken, others ignored, comment-only blocks are not sentences",
          "[conllu]") {
  const std::string text =
      "# newdoc id = d\n\n"  // a block of comments alone
      "#sent_id=tight\n"
      "# text_en = not the text\n"
      "#   text   =  a = b  \n" +
      row(1, "a", 0, "root") + "\n" + row(1, "no", 0, "root") + "\n";
  const auto sentences = parse(text);
  REQUIRE(sentences.size() == 2);
  CHECK(sentences[0].sent_id == "tight");
  CHECK(sentences[0].text == "a = b");
  CHECK(sentences[0].line == 3);
  CHECK(sentences[1].sent_id.empty());
  CHECK(sentences[1].text.empty());
  CHECK(sentences[1].index == 1);
  CHECK(sentences[1].line == 8);
  CHECK(sentences[1].label() == "#2 (line 8)");
}

TEST_CASE("the reader streams sentences and counts them", "[conllu]") {
  std::istringstream in(chain(2, "a") + chain(3, "b") + chain(1, "c"));
  ConlluReader reader(in, "x.conllu");
  ConlluSentence s;
  std::vector<std::string> ids;
  CHECK(reader.sentences_read() == 0);
  while (reader.next(s)) {
    CHECK(s.index == ids.size());
    ids.push_back(s.sent_id);
    CHECK(reader.sentences_read() == ids.size());
  }
  CHECK(ids == std::vector<std::string>{"a", "b", "c"});
  CHECK(reader.issues().empty());
  CHECK(reader.lines_read() == 4 + 5 + 3);
  CHECK_FALSE(reader.next(s));  // stays at the end
}

namespace {
struct Malformed {
  const char* what;
  std::string input;
  std::size_t line;
  std::string reason;
};
}  // namespace

TEST_CASE("malformed input is rejected with the offending line and a concrete reason",
          "[conllu][errors]") {
  const std::string ok1 = "# sent_id = ok\n" + row(1, "a", 0, "root") + row(2, "b", 1) + "\n";  // lines 1-4
  const std::string nine = row(1, "w1", 0, "root") + row(2, "w2", 1) + row(3, "w3", 1) +
                           row(4, "w4", 1) + row(5, "w5", 1) + row(6, "w6", 1) + row(7, "w7", 1) +
                           row(8, "w8", 1);  // eight rows; the ninth varies

  const std::vector<Malformed> table = {
      {"seven columns", "# c\n" + row(1, "a", 0) + "2\tb\tb\tX\t_\t1\tdep\n\n", 3,
       "expected 10 tab-separated columns, found 7"},
      {"eleven columns", row(1, "a", 0) + "2\tb\tb\tX\t_\t_\t1\tdep\t_\t_\textra\n\n", 2,
       "expected 10 tab-separated columns, found 11"},
      {"space-separated", "1 a a X _ _ 0 root _ _\n\n", 1,
       "expected 10 tab-separated columns, found 1"},
      {"ID not an integer", row(1, "a", 0) + row(2, "b", 1) + row("x3", "c", "1") + "\n", 3,
       "ID 'x3' is not an integer"},
      {"ID with a sign", row("+1", "a", "0") + "\n", 1, "ID '+1' is not an integer"},
      {"bad multiword range", row(1, "a", 0) + row("2-x", "bc", "_") + "\n", 2,
       "ID '2-x' is not an integer"},
      {"bad empty node", row(1, "a", 0) + row("1.", "e", "_") + "\n", 2,
       "ID '1.' is not an integer"},
      {"ID too large", row("99999999999", "a", "0") + "\n", 1, "ID '99999999999' is too large"},
      {"HEAD not an integer", row(1, "a", 0) + row("2", "b", "1a") + "\n", 2,
       "HEAD '1a' is not an integer"},
      {"HEAD '_' on a word", row(1, "a", 0) + row("2", "b", "_") + "\n", 2,
       "HEAD '_' is not an integer"},
      {"HEAD with a NUL byte", row("1", "a", std::string("0\0", 2)) + "\n", 1,
       "HEAD '0\\x00' is not an integer"},
      {"long garbage ID", row(std::string(100, 'z'), "a", "0") + "\n", 1,
       "ID '" + std::string(40, 'z') + "' (100 bytes, cut) is not an integer"},
      {"HEAD too large", row("1", "a", "4294967296") + "\n", 1, "HEAD '4294967296' is too large"},
      {"IDs skip one", row(1, "a", 0) + row(2, "b", 1) + row(3, "c", 1) + row(5, "d", 1) + "\n", 4,
       "word IDs not consecutive: expected 4, found 5"},
      {"IDs start at 0", row(0, "a", 0) + "\n", 1, "word IDs not consecutive: expected 1, found 0"},
      {"ID repeated", row(1, "a", 0) + row(1, "b", 1) + "\n", 2,
       "word IDs not consecutive: expected 2, found 1"},
      {"HEAD out of range", nine + row(9, "w9", 12) + "\n", 9, "HEAD 12 out of range [0, 9]"},
      {"HEAD negative", row(1, "a", 0) + row(2, "b", -1) + row(3, "c", 1) + "\n", 2,
       "HEAD -1 out of range [0, 3]"},
      {"self-loop", row(1, "a", 0) + row(2, "b", 2) + "\n", 2,
       "a word is its own head: word 2 has HEAD 2"},
      {"cycle", "# sent_id = cyc\n" + row(1, "a", 0) + row(2, "b", 1) + row(3, "c", 5) +
                    row(4, "d", 1) + row(5, "e", 3) + "\n",
       4, "cycle through words 3 -> 5 -> 3"},
      {"several roots", row(1, "a", 2) + row(2, "b", 0) + row(3, "c", 2) + row(4, "d", 2) +
                            row(5, "e", 2) + row(6, "f", 2) + row(7, "g", 0) + "\n",
       7, "several roots: words 2 and 7 have HEAD 0"},
      {"three roots", row(1, "a", 0) + row(2, "b", 0) + row(3, "c", 0) + "\n", 2,
       "several roots: words 1, 2 and 3 have HEAD 0"},
      {"no root", "# x\n" + row(1, "a", 2) + row(2, "b", 1) + "\n", 2,
       "no root: no word has HEAD 0"},
      {"empty FORM", row(1, "", 0) + "\n", 1, "FORM is empty (CoNLL-U writes '_' for none)"},
      {"empty DEPREL", row("1", "a", "0", "") + "\n", 1,
       "DEPREL is empty (CoNLL-U writes '_' for none)"},
      {"only a multiword token", "# sent_id = m\n" + row("1-2", "ab", "_") + "\n", 1,
       "sentence has no words, only multiword-token or empty-node lines"},
      {"error in a later sentence, CRLF", "# sent_id = ok\r\n" + row(1, "a", 0) + "\r\n" +
                                              row(1, "a", 0) + row(2, "b", 9) + "\r\n",
       5, "HEAD 9 out of range [0, 2]"},
      {"error on a last line without newline", ok1 + row(1, "a", 0) + "2\tb", 6,
       "expected 10 tab-separated columns, found 2"},
      // Integers in canonical form only: no leading zeros, no minus zero,
      // no decimal word IDs, no empty or reversed ranges.
      {"ID with a leading zero", row(1, "a", 0) + row("02", "b", "1") + "\n", 2,
       "ID '02' has a leading zero"},
      {"ID 01 first", row("01", "a", "0") + "\n", 1, "ID '01' has a leading zero"},
      {"decimal ID 1.0", row(1, "a", 0) + row("1.0", "e", "_") + "\n", 2,
       "empty-node ID '1.0': the part after '.' must be 1 or more"},
      {"empty node with a leading zero", row(1, "a", 0) + row("01.1", "e", "_") + "\n", 2,
       "empty-node ID '01.1' has a leading zero"},
      {"empty node minor with a leading zero", row(1, "a", 0) + row("1.01", "e", "_") + "\n", 2,
       "empty-node ID '1.01' has a leading zero"},
      {"reversed range", row("3-2", "ab", "_") + row(1, "a", 0) + "\n", 1,
       "multiword-token range '3-2' is reversed or empty (expected START-END with START < END)"},
      {"one-word range", row("1-1", "a", "_") + row(1, "a", 0) + "\n", 1,
       "multiword-token range '1-1' is reversed or empty (expected START-END with START < END)"},
      {"range from 0", row("0-1", "a", "_") + row(1, "a", 0) + "\n", 1,
       "multiword-token range '0-1' starts at 0 (word IDs start at 1)"},
      {"range with a leading zero", row("1-02", "ab", "_") + row(1, "a", 0) + row(2, "b", 1) + "\n", 1,
       "multiword-token range '1-02' has a leading zero"},
      {"HEAD minus zero", row(1, "a", 0) + row("2", "b", "-0") + "\n", 2,
       "HEAD '-0' is minus zero (the root's HEAD is 0)"},
      {"HEAD with a leading zero", row(1, "a", 0) + row("2", "b", "01") + "\n", 2,
       "HEAD '01' has a leading zero"},
      {"HEAD 00", row("1", "a", "00") + "\n", 1, "HEAD '00' has a leading zero"},
      {"CR-only line ends", row(1, "a", 0).substr(0, row(1, "a", 0).size() - 1) + "\r" +
                                row(2, "b", 1).substr(0, row(2, "b", 1).size() - 1) + "\r\r",
       1,
       "expected 10 tab-separated columns, found 19 (the line holds carriage returns: are the "
       "line ends CR-only? convert them to \\n or \\r\\n)"},
      {"CR-only line ends after a comment",
       "# sent_id = mac\r" + row(1, "a", 0).substr(0, row(1, "a", 0).size() - 1) + "\r\r", 1,
       "a comment line holds a carriage return: are the line ends CR-only? convert them to \\n "
       "or \\r\\n"},
  };
  REQUIRE(table.size() >= 12);

  for (const Malformed& m : table) {
    INFO(m.what);
    std::istringstream in(m.input);
    ConlluReader reader(in, "bad.conllu");
    ConlluSentence s;
    bool thrown = false;
    try {
      while (reader.next(s)) {
      }
    } catch (const FormatError& e) {
      thrown = true;
      CHECK(e.file() == "bad.conllu");
      CHECK(e.line() == m.line);
      CHECK(e.reason() == m.reason);
      CHECK(std::string(e.what()) == "bad.conllu:" + std::to_string(m.line) + ": " + m.reason);
    }
    CHECK(thrown);
  }
}

TEST_CASE("a long cycle is named in a message of bounded length", "[conllu][errors]") {
  std::string text = row(1, "r", 0, "root");
  const int n = 500;
  for (int k = 2; k <= n; ++k) text += row(k, "w", k == 2 ? n : k - 1);
  std::istringstream in(text);
  try {
    read_conllu(in, "long.conllu");
    FAIL("no error");
  } catch (const FormatError& e) {
    CHECK(e.line() == 2);
    CHECK_THAT(e.reason(), Catch::StartsWith("cycle through words 2 -> 500 -> 499 -> ") &&
                               Catch::EndsWith("... -> 2 (499 words)"));
    CHECK(e.reason().size() < 200);
  }
}

TEST_CASE("lenient mode skips bad sentences, reports each, and loses nothing else",
          "[conllu][lenient]") {
  const std::string text = chain(2, "good-1") +                                // lines 1-4
                           "# sent_id = bad-columns\n" + row(1, "a", 0) +      // lines 5-6
                           "2\tb\n" + row(3, "c", 1) + "\n" +                  // lines 7-9
                           chain(3, "good-2") +                                // lines 10-14
                           "# sent_id = bad-cycle\n" + row(1, "a", 0) +        // 15-16
                           row(2, "b", 3) + row(3, "c", 2) + "\n" +            // 17-19
                           "# only a comment\n\n" +                            // 20-21
                           "# sent_id = bad-head\n" + row("1", "a", "x") +     // 22-23
                           "\n" + chain(1, "good-3").substr(0, chain(1, "good-3").size() - 1);

  std::vector<ConlluIssue> issues;
  const auto sentences = parse(text, ConlluMode::Lenient, &issues);
  std::vector<std::string> ids;
  for (const auto& s : sentences) ids.push_back(s.sent_id);
  CHECK(ids == std::vector<std::string>{"good-1", "good-2", "good-3"});
  CHECK(sentences[1].size() == 3);
  CHECK(sentences[1].line == 10);
  CHECK(sentences[2].line == 25);
  CHECK(sentences[2].index == 2);  // index counts good sentences only

  REQUIRE(issues.size() == 3);
  CHECK(issues[0].to_string() == "mem.conllu:7: expected 10 tab-separated columns, found 2");
  CHECK(issues[1].to_string() == "mem.conllu:17: cycle through words 2 -> 3 -> 2");
  CHECK(issues[2].to_string() == "mem.conllu:23: HEAD 'x' is not an integer");
  CHECK(issues[2].file == "mem.conllu");
  CHECK(issues[2].line == 23);

  SECTION("strict mode throws the same errors one at a time and can go on after each") {
    std::istringstream in(text);
    ConlluReader reader(in, "mem.conllu");
    ConlluSentence s;
    std::vector<std::string> good, errors;
    for (;;) {
      try {
        if (!reader.next(s)) break;
        good.push_back(s.sent_id);
      } catch (const FormatError& e) {
        errors.push_back(e.what());
      }
    }
    CHECK(good == ids);
    REQUIRE(errors.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) CHECK(errors[i] == issues[i].to_string());
    CHECK(reader.issues().empty());
  }
}

TEST_CASE("valid UD IDs stay accepted next to the refused ones", "[conllu]") {
  // Ranges of two and more words, empty nodes before the first word (0.1)
  // and with multi-digit parts, HEAD 10 and a negative HEAD's own message.
  std::string text = row("1-3", "abc", "_") + row("0.1", "e", "_");
  for (int k = 1; k <= 11; ++k) text += row(k, "w", k == 1 ? 0 : k == 11 ? 10 : 1);
  text += row("10.12", "e", "_") + "\n";
  const auto sentences = parse(text);
  REQUIRE(sentences.size() == 1);
  CHECK(sentences[0].size() == 11);
  CHECK(sentences[0].words[10].head == 10);
  CHECK_THROWS_WITH(parse(row(1, "a", 0) + row("2", "b", "-1") + "\n"),
                    Catch::Contains("HEAD -1 out of range [0, 2]"));
}

TEST_CASE("a directory is named as such, whether opened by path or read as a stream",
          "[conllu][errors]") {
  const std::string dir = synattn_test::source_path("examples/data");
  CHECK_THROWS_WITH(read_conllu(dir), dir + ": cannot open file (it is a directory)");
  CHECK_THROWS_WITH(synattn::open_conllu_file(dir), dir + ": cannot open file (it is a directory)");
  std::ifstream in(dir, std::ios::binary);  // opening succeeds on Linux; reading fails
  ConlluReader reader(in, dir);
  ConlluSentence s;
  CHECK_THROWS_WITH(reader.next(s), dir + ": read error before the first line (the input stream "
                                          "failed; is it a directory?)");
  std::ifstream sample = synattn::open_conllu_file(sample_path());
  CHECK(read_conllu(sample, "sample").size() == 50);
}

TEST_CASE("a file that cannot be opened is a FormatError at line 0", "[conllu][errors]") {
  const std::string missing = "/nonexistent/dir/none.conllu";
  try {
    read_conllu(missing);
    FAIL("no error");
  } catch (const FormatError& e) {
    CHECK(e.file() == missing);
    CHECK(e.line() == 0);
    CHECK(e.reason() == "cannot open file");
    CHECK(std::string(e.what()) == missing + ": cannot open file");
  }
  CHECK_THROWS_WITH(read_conllu(synattn_test::source_path("examples/data")),
                    Catch::Contains("cannot open file"));
}

TEST_CASE("the bundled sample is the first 50 sentences of EWT dev, verbatim", "[conllu][data]") {
  const std::string sample_bytes = slurp(sample_path());
  const std::string dev_bytes = slurp(synattn_test::ewt("dev"));
  REQUIRE(sample_bytes.size() > 0);
  CHECK(dev_bytes.compare(0, sample_bytes.size(), sample_bytes) == 0);
  CHECK(sample_bytes.substr(sample_bytes.size() - 2) == "\n\n");

  const auto sample = read_conllu(sample_path());
  const auto dev = read_conllu(synattn_test::ewt("dev"));
  REQUIRE(sample.size() == 50);
  for (std::size_t i = 0; i < sample.size(); ++i) {
    INFO(sample[i].sent_id);
    CHECK(sample[i].sent_id == dev[i].sent_id);
    CHECK(sample[i].text == dev[i].text);
    CHECK(sample[i].line == dev[i].line);
    CHECK(same_words(sample[i], dev[i]));
  }

  const ConlluSentence& first = sample[0];
  CHECK(first.sent_id == "weblog-blogspot.com_nominations_20041117172713_ENG_20041117_172713-0001");
  CHECK(first.text == "From the AP comes this story :");
  CHECK(first.line == 1);
  CHECK(forms(first) == std::vector<std::string>{"From", "the", "AP", "comes", "this", "story", ":"});
  CHECK(first.words[3].upos == "VERB");
  CHECK(first.words[3].deprel == "root");
  CHECK(file_heads(first) == std::vector<int>{3, 3, 4, 0, 6, 4, 4});
  CHECK(first.heads() == std::vector<int>{2, 2, 3, -1, 5, 3, 3});
}

TEST_CASE("lenient mode on a real file loses only the corrupted sentence", "[conllu][lenient][data]") {
  const auto clean = read_conllu(sample_path());
  REQUIRE(clean.size() == 50);
  // Corrupt the HEAD column of the third word of sentence 10 (0-based 9).
  std::istringstream in(slurp(sample_path()));
  std::string line, corrupted;
  std::size_t line_no = 0, bad_line = 0;
  const std::size_t target = clean[9].line;
  std::size_t words_seen = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no > target && bad_line == 0 && !line.empty() && line[0] != '#' &&
        line.find('-') > line.find('\t') && ++words_seen == 3) {
      // columns: ID FORM LEMMA UPOS XPOS FEATS HEAD ...; replace HEAD.
      std::size_t pos = 0;
      for (int c = 0; c < 6; ++c) pos = line.find('\t', pos) + 1;
      line.replace(pos, line.find('\t', pos) - pos, "3x");
      bad_line = line_no;
    }
    corrupted += line + "\n";
  }
  REQUIRE(bad_line > target);

  std::istringstream bad(corrupted);
  std::vector<ConlluIssue> issues;
  const auto got = read_conllu(bad, "sample", ConlluMode::Lenient, &issues);
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].line == bad_line);
  CHECK(issues[0].reason == "HEAD '3x' is not an integer");
  REQUIRE(got.size() == 49);
  for (std::size_t i = 0, j = 0; i < clean.size(); ++i) {
    if (i == 9) continue;
    CHECK(got[j].sent_id == clean[i].sent_id);
    CHECK(same_words(got[j], clean[i]));
    ++j;
  }
  std::istringstream bad_again(corrupted);
  CHECK_THROWS_AS(read_conllu(bad_again, "sample"), FormatError);
}

namespace {
struct Treebank {
  std::string path;
  std::size_t sentences;
  std::size_t skipped_lines;  // multiword-token + empty-node lines (data/ud/*/README.md)
};
}  // namespace

TEST_CASE("every sentence of the bundled treebanks is read and its tree validates",
          "[conllu][data][ud]") {
  const Treebank tb = GENERATE(values<Treebank>({
      {synattn_test::ewt("dev"), 2001, 359 + 4},
      {synattn_test::ewt("test"), 2077, 354 + 2},
      {synattn_test::ewt("train"), 12544, 2614 + 37},
      {synattn_test::gsd("dev"), 500, 0},
      {synattn_test::gsd("test"), 500, 0},
  }));
  INFO(tb.path);

  std::vector<ConlluIssue> issues;
  const auto sentences = read_conllu(tb.path, ConlluMode::Lenient, &issues);
  CHECK(issues.empty());
  REQUIRE(sentences.size() == tb.sentences);

  // An independent count of the lines that hold words or skipped tokens.
  std::size_t token_lines = 0;
  {
    std::ifstream in(tb.path);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') ++token_lines;
  }

  std::size_t words = 0, failures = 0;
  std::set<std::string> ids;
  for (const ConlluSentence& s : sentences) {
    words += s.size();
    ids.insert(s.sent_id);
    bool ok = !s.sent_id.empty() && !s.text.empty() && !s.empty();
    for (std::size_t i = 0; i < s.size() && ok; ++i) ok = s.words[i].id == static_cast<int>(i) + 1;
    try {
      const synattn::DependencyTree tree = s.tree();
      ok = ok && tree.size() == static_cast<int>(s.size()) && tree.num_trees() == 1;
      ok = ok && synattn::from_canonical_heads(tree.heads(), HeadConvention::OneBasedRootZero) ==
                     file_heads(s);
      ok = ok && s.words[static_cast<std::size_t>(tree.roots()[0])].head == 0;
    } catch (const synattn::Error& e) {
      UNSCOPED_INFO(e.what());
      ok = false;
    }
    if (!ok && ++failures <= 3) UNSCOPED_INFO("bad sentence " << s.label());
  }
  CHECK(failures == 0);
  CHECK(ids.size() == sentences.size());  // sent_ids are unique
  CHECK(words + tb.skipped_lines == token_lines);

  // Strict mode reads the same, through the stream overload too.
  std::ifstream in(tb.path, std::ios::binary);
  ConlluReader reader(in, tb.path);
  ConlluSentence s;
  std::size_t k = 0;
  bool same = true;
  while (reader.next(s)) same = same && k < sentences.size() && s.sent_id == sentences[k++].sent_id;
  CHECK(same);
  CHECK(reader.sentences_read() == tb.sentences);
}

// ParseError, the exception's old name, stays for one release as a
// deprecated alias: code that catches it still catches a malformed file.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
TEST_CASE("the deprecated ParseError alias still catches a malformed file", "[conllu][errors]") {
  STATIC_REQUIRE(std::is_same<synattn::ParseError, synattn::FormatError>::value);
  std::istringstream in("1\tword\n");
  try {
    synattn::read_conllu(in, "old_name.conllu");
    FAIL("a line with two columns was accepted");
  } catch (const synattn::ParseError& e) {
    CHECK(e.file() == "old_name.conllu");
    CHECK(e.line() == 1);
  }
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
