// Tests of the parser's text I/O and evaluation: ConlluDocument (verbatim
// CoNLL-U with replaceable HEAD/DEPREL), token text input, and attachment
// scores by the CoNLL 2018 conventions.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <synattn/io/conllu.hpp>
#include <synattn/io/conllu_document.hpp>
#include <synattn/parse/metrics.hpp>
#include <synattn/parse/token_text.hpp>

#include "support/temp_dir.hpp"
#include "support/test_data.hpp"
#include "support/conllu_rows.hpp"

using synattn::ConlluSentence;
using synattn::FormatError;
using synattn::read_conllu;
using synattn::parse::AttachmentScores;
using synattn::parse::ConlluDocument;
using synattn::parse::LengthBreakdown;

namespace {

using synattn_test::row;  // support/conllu_rows.hpp

// n words in a chain (word 1 the root, word k attached to k-1).
std::string chain(int n, const std::string& sent_id) {
  std::string out = "# sent_id = " + sent_id + "\n";
  for (int k = 1; k <= n; ++k)
    out += row(k, "w" + std::to_string(k), k - 1, k == 1 ? "root" : "dep");
  return out + "\n";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ConlluDocument document(const std::string& text, const std::string& name = "mem.conllu") {
  std::istringstream in(text);
  return ConlluDocument::read(in, name);
}

ConlluDocument tokens(const std::string& text,
                      std::size_t max_tokens = synattn::parse::kMaxTokensPerLine) {
  std::istringstream in(text);
  return synattn::parse::read_token_text(in, "mem.txt", max_tokens);
}

std::vector<ConlluSentence> strict(const std::string& text) {
  std::istringstream in(text);
  return read_conllu(in, "mem.conllu");
}

// Lines of `text` split at '\n' ('\r' kept); a last line without '\n' counts.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(text.substr(start, nl - start));
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

std::vector<std::string> columns(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
    out.push_back(line.substr(start, tab - start));
  out.push_back(line.substr(start));
  return out;
}

// An integer-ID word line: not a comment, not blank, ID without '-' or '.'.
bool is_word_line(const std::string& line) {
  if (line.empty() || line[0] == '#' || line.find('\t') == std::string::npos) return false;
  const std::string id = line.substr(0, line.find('\t'));
  return id.find('-') == std::string::npos && id.find('.') == std::string::npos;
}

std::vector<int> file_heads(const ConlluSentence& s) {
  std::vector<int> out;
  for (const auto& w : s.words) out.push_back(w.head);
  return out;
}

struct Malformed {
  std::string what, input;
  std::size_t line;
  std::string reason;
};

template <class F>
void check_parse_error(F&& f, const std::string& file, std::size_t line,
                       const std::string& reason) {
  try {
    f();
    FAIL("no FormatError");
  } catch (const FormatError& e) {
    CHECK(e.file() == file);
    CHECK(e.line() == line);
    CHECK(e.reason() == reason);
    // Line 0 (the file as a whole) is left out of what().
    const std::string at = line > 0 ? file + ":" + std::to_string(line) : file;
    CHECK_THAT(e.what(), Catch::Contains(at + ": " + reason));
  }
}

}  // namespace

TEST_CASE("an unchanged document is written back byte for byte", "[parse]") {
  for (const std::string& path :
       {synattn_test::ewt("dev"), synattn_test::gsd("dev"), synattn_test::gsd("test")}) {
    INFO(path);
    const std::string raw = slurp(path);
    const ConlluDocument doc = ConlluDocument::read_file(path);
    CHECK(doc.file_name() == path);
    CHECK(doc.to_string() == raw);

    // The same sentences and words as the strict reader's.
    const std::vector<ConlluSentence> gold = read_conllu(path);
    REQUIRE(doc.size() == gold.size());
    for (std::size_t s = 0; s < gold.size(); ++s) {
      std::vector<std::string> forms;
      for (const auto& w : gold[s].words) forms.push_back(w.form);
      CHECK(doc.forms(s) == forms);
      CHECK(doc.word_count(s) == forms.size());
      CHECK(doc.sent_id(s) == gold[s].sent_id);
      CHECK(doc.text(s) == gold[s].text);
      CHECK(doc.line(s) == gold[s].line);
      CHECK(doc.label(s) == gold[s].label());
      CHECK(doc.has_input_tree(s));
      CHECK(doc.has_tree(s));
      CHECK(file_heads(doc.input(s)) == file_heads(gold[s]));
    }

    // Through a file as well.
    synattn_test::TempDir dir("synattn_parse_io");
    const std::string copy = dir.file("copy.conllu");
    {
      std::ofstream out(copy, std::ios::binary);
      doc.write(out);
    }
    CHECK(slurp(copy) == raw);
  }

  // The round trip is only a test if EWT dev has the lines a smaller writer
  // would lose: multiword tokens and empty nodes.
  std::size_t multiword = 0, empty_nodes = 0;
  for (const std::string& line : lines_of(slurp(synattn_test::ewt("dev")))) {
    if (line.empty() || line[0] == '#') continue;
    const std::string id = line.substr(0, line.find('\t'));
    multiword += id.find('-') != std::string::npos;
    empty_nodes += id.find('.') != std::string::npos;
  }
  CHECK(multiword > 100);
  CHECK(empty_nodes > 0);
}

TEST_CASE("line ends, byte-order marks, comment-only blocks and blank lines survive a round trip",
          "[parse]") {
  const std::string s1 = "# sent_id = s1\n" + row(1, "a", 0, "root") + row(2, "b", 1);
  const std::string s2 = row(1, "c", 0, "root");
  const std::vector<std::string> inputs = {
      "",
      "\n\n",
      s1 + "\n",
      s1 + "\n" + s2,  // no blank line and no newline at the end
      s1,              // no blank line at the end
      "# newdoc id = d1\n# global.columns = ID FORM\n\n" + s1 + "\n\n\n \t\n" + s2 + "\n",
      "# sent_id = crlf\r\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\r\n\r\n",
      "\xEF\xBB\xBF" + s2 + "\n",
      "\xEF\xBB\xBF\n" + s1 + "\n",
  };
  for (const std::string& text : inputs) {
    INFO(text);
    const ConlluDocument doc = document(text);
    CHECK(doc.to_string() == text);
  }
  CHECK(document("").size() == 0);
  CHECK(document("# only a comment\n\n").size() == 0);
  CHECK(document("# only a comment\n\n").to_string() == "# only a comment\n\n");

  const ConlluDocument doc = document(inputs[5]);
  REQUIRE(doc.size() == 2);
  CHECK(doc.line(0) == 4);
  CHECK(doc.line(1) == 11);
  CHECK(doc.label(1) == "#2 (line 11)");

  // set_heads keeps a line's '\r' and the file's byte-order mark.
  ConlluDocument crlf = document(inputs[6]);
  crlf.set_heads(0, {0}, {"dep"});
  CHECK(crlf.to_string() == "# sent_id = crlf\r\n1\ta\ta\tX\t_\t_\t0\tdep\t_\t_\r\n\r\n");
  ConlluDocument bom = document("\xEF\xBB\xBF" + row("1", "c", "_", "_") + "\n");
  bom.set_heads(0, {0}, {"root"});
  CHECK(bom.to_string() == "\xEF\xBB\xBF" + row(1, "c", 0, "root") + "\n");
}

TEST_CASE("set_heads replaces exactly columns 7 and 8 of the word lines and nothing else",
          "[parse]") {
  const std::string path = synattn_test::ewt("dev");
  const std::string raw = slurp(path);
  ConlluDocument doc = ConlluDocument::read_file(path);
  const std::vector<ConlluSentence> gold = read_conllu(path);

  // A chain for every sentence (a valid tree, unlike the gold ones) and
  // relations that say which word they belong to.
  std::size_t words = 0;
  for (std::size_t s = 0; s < doc.size(); ++s) {
    std::vector<int> heads;
    std::vector<std::string> deprels;
    for (std::size_t k = 1; k <= doc.word_count(s); ++k) {
      heads.push_back(static_cast<int>(k) - 1);
      deprels.push_back(k == 1 ? "root" : "dep:w" + std::to_string(k));
    }
    words += heads.size();
    doc.set_heads(s, heads, deprels);
  }

  const std::vector<std::string> before = lines_of(raw), after = lines_of(doc.to_string());
  REQUIRE(after.size() == before.size());
  std::size_t changed = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    INFO("line " << i + 1 << ": " << before[i]);
    if (!is_word_line(before[i])) {
      CHECK(after[i] == before[i]);
      continue;
    }
    const std::vector<std::string> b = columns(before[i]), a = columns(after[i]);
    REQUIRE(b.size() == 10);
    REQUIRE(a.size() == 10);
    const int id = std::stoi(b[0]);
    for (std::size_t c = 0; c < 10; ++c) {
      if (c == 6)
        CHECK(a[c] == std::to_string(id - 1));
      else if (c == 7)
        CHECK(a[c] == (id == 1 ? std::string("root") : "dep:w" + std::to_string(id)));
      else
        CHECK(a[c] == b[c]);
    }
    ++changed;
  }
  CHECK(changed == words);

  // The input stays as read; the sentences now carry the new trees, and the
  // written file is one the strict reader accepts with those trees.
  const std::vector<ConlluSentence> input = doc.gold_sentences();
  REQUIRE(input.size() == gold.size());
  for (std::size_t s = 0; s < gold.size(); ++s) CHECK(file_heads(input[s]) == file_heads(gold[s]));
  const std::vector<ConlluSentence> now = doc.sentences();
  const std::vector<ConlluSentence> reread = strict(doc.to_string());
  REQUIRE(reread.size() == gold.size());
  for (std::size_t s = 0; s < gold.size(); ++s) {
    std::vector<int> chain_heads;
    for (std::size_t k = 0; k < gold[s].size(); ++k) chain_heads.push_back(static_cast<int>(k));
    CHECK(file_heads(now[s]) == chain_heads);
    CHECK(file_heads(reread[s]) == chain_heads);
    CHECK(reread[s].words.back().deprel == now[s].words.back().deprel);
    CHECK(reread[s].sent_id == gold[s].sent_id);
  }
}

TEST_CASE("sentences with HEAD '_' are accepted, kept as read, and get a tree from set_heads",
          "[parse]") {
  const std::string text =
      "# sent_id = raw\n# text = a bc\n" + row("1", "a", "_", "_") + row("2-3", "bc", "_", "_") +
      row("2", "b", "_", "nsubj") + row("3", "c", "_", "_") + row("3.1", "e", "_", "_") + "\n" +
      "# sent_id = gold\n" + row(1, "x", 0, "root") + row(2, "y", 1, "obj") + "\n";
  ConlluDocument doc = document(text);
  CHECK(doc.to_string() == text);
  REQUIRE(doc.size() == 2);
  CHECK(doc.forms(0) == std::vector<std::string>{"a", "b", "c"});
  CHECK(doc.sent_id(0) == "raw");
  CHECK(doc.text(0) == "a bc");
  CHECK_FALSE(doc.has_input_tree(0));
  CHECK_FALSE(doc.has_tree(0));
  CHECK(doc.has_input_tree(1));
  CHECK(file_heads(doc.input(0)) == std::vector<int>{-1, -1, -1});
  CHECK(doc.input(0).words[1].deprel == "nsubj");  // DEPREL kept as read
  CHECK(doc.input(0).words[1].upos == "X");
  CHECK_THROWS_AS(doc.input(0).heads(), synattn::TreeError);
  CHECK_THROWS_WITH(doc.gold_sentences(),
                    Catch::Contains("mem.conllu:1: sentence raw has no tree (HEAD is '_')"));
  CHECK_THROWS_WITH(doc.sentences(), Catch::Contains("mem.conllu:1: sentence raw has no tree yet"));

  doc.set_heads(0, {2, 0, 2}, {"nsubj", "root", "obj"});
  const std::string parsed = "# sent_id = raw\n# text = a bc\n" + row("1", "a", "2", "nsubj") +
                             row("2-3", "bc", "_", "_") + row("2", "b", "0", "root") +
                             row("3", "c", "2", "obj") + row("3.1", "e", "_", "_") + "\n" +
                             "# sent_id = gold\n" + row(1, "x", 0, "root") + row(2, "y", 1, "obj") +
                             "\n";
  CHECK(doc.to_string() == parsed);
  CHECK(doc.has_tree(0));
  CHECK_FALSE(doc.has_input_tree(0));
  CHECK(file_heads(doc.input(0)) == std::vector<int>{-1, -1, -1});
  CHECK(file_heads(doc.sentence(0)) == std::vector<int>{2, 0, 2});
  CHECK(doc.sentence(0).words[2].deprel == "obj");
  REQUIRE(doc.sentences().size() == 2);
  CHECK(doc.sentences()[0].tree().heads() == std::vector<int>{1, -1, 1});
  CHECK(file_heads(strict(doc.to_string())[0]) == std::vector<int>{2, 0, 2});

  // A second set_heads replaces the first.
  doc.set_heads(1, {2, 0}, {"det", "root"});
  CHECK(lines_of(doc.to_string())[9] == "1\tx\tx\tX\t_\t_\t2\tdet\t_\t_");
  CHECK(file_heads(doc.input(1)) == std::vector<int>{0, 1});
}

TEST_CASE("malformed documents are refused with the file, the line and the reason", "[parse]") {
  const std::string ok =
      "# sent_id = ok\n" + row(1, "a", 0, "root") + row(2, "b", 1) + "\n";  // lines 1-4
  const std::vector<Malformed> table = {
      {"seven columns", ok + row("1", "a", "_") + "2\tb\tb\tX\t_\t_\tdep\n\n", 6,
       "expected 10 tab-separated columns, found 7"},
      {"seven columns, with heads", ok + row(1, "a", 0) + "2\tb\tb\tX\t_\t1\tdep\n\n", 6,
       "expected 10 tab-separated columns, found 7"},
      {"eleven columns", row("1", "a", "_") + "2\tb\tb\tX\t_\t_\t_\t_\t_\t_\textra\n", 2,
       "expected 10 tab-separated columns, found 11"},
      {"IDs skip one, no tree", row("1", "a", "_") + row("3", "b", "_") + "\n", 2,
       "word IDs not consecutive: expected 2, found 3"},
      {"ID repeated, with heads", ok + row(1, "a", 0) + row(1, "b", 1) + "\n", 6,
       "word IDs not consecutive: expected 2, found 1"},
      {"ID not an integer, no tree", row("1", "a", "_") + row("x2", "b", "_") + "\n", 2,
       "ID 'x2' is not an integer"},
      {"reversed multiword range, no tree", row("1", "a", "_") + row("3-2", "bc", "_") + "\n", 2,
       "multiword-token range '3-2' is reversed or empty (expected START-END with START < END)"},
      {"bad empty node, no tree", row("1", "a", "_") + row("1.0", "e", "_") + "\n", 2,
       "empty-node ID '1.0': the part after '.' must be 1 or more"},
      {"empty FORM, no tree", row("1", "", "_") + "\n", 1,
       "FORM is empty (CoNLL-U writes '_' for none)"},
      {"empty DEPREL, no tree", row("1", "a", "_", "") + "\n", 1,
       "DEPREL is empty (CoNLL-U writes '_' for none)"},
      {"only a multiword token", ok + row("1-2", "ab", "_") + "\n", 5,
       "sentence has no words, only multiword-token or empty-node lines"},
      {"HEAD not an integer", row("1", "a", "x") + "\n", 1, "HEAD 'x' is not an integer"},
      {"cycle in a later sentence",
       ok + "# sent_id = cyc\n" + row(1, "a", 0, "root") + row(2, "b", 3) + row(3, "c", 2) + "\n",
       7, "cycle through words 2 -> 3 -> 2"},
      {"HEAD out of range after CRLF lines",
       "# sent_id = ok\r\n" + row(1, "a", 0) + "\r\n" + row(1, "a", 0) + row(2, "b", 9) + "\r\n", 5,
       "HEAD 9 out of range [0, 2]"},
      {"HEAD '_' after a HEAD", ok + row(1, "a", 0, "root") + row("2", "b", "_") + "\n", 6,
       "HEAD '_' but word 1 (line 5) has HEAD '0': a sentence has a HEAD on every word, or '_' on "
       "every word (not parsed yet)"},
      {"a HEAD after HEAD '_'",
       row("1", "a", "_") + row("2", "b", "_") + row("3", "c", "1") + "\n", 3,
       "HEAD '1' but word 1 (line 1) has HEAD '_': a sentence has a HEAD on every word, or '_' on "
       "every word (not parsed yet)"},
      {"mixed heads after a bad line", row("1", "a", "_") + row("2", "b", "1") + "3\tc\n", 3,
       "expected 10 tab-separated columns, found 2"},
  };
  for (const Malformed& m : table) {
    INFO(m.what);
    check_parse_error([&] { document(m.input, "bad.conllu"); }, "bad.conllu", m.line, m.reason);
  }
}

TEST_CASE("set_heads refuses wrong sizes, bad heads and bad relations, and changes nothing",
          "[parse]") {
  const std::string text = "# sent_id = s1\n" + row("1", "a", "_") + row("2", "b", "_") +
                           row("3", "c", "_") + "\n" + row("1", "d", "_") + "\n";
  ConlluDocument doc = document(text);
  const std::vector<std::string> rels = {"dep", "root", "dep"};
  struct Bad {
    std::vector<int> heads;
    std::vector<std::string> deprels;
    std::string message;
  };
  const std::vector<Bad> table = {
      {{2, 0}, rels, "set_heads: sentence s1: 2 heads for 3 words"},
      {{2, 0, 2, 2}, rels, "set_heads: sentence s1: 4 heads for 3 words"},
      {{2, 0, 2}, {"dep", "root"}, "set_heads: sentence s1: 2 relations for 3 words"},
      {{2, 4, 2}, rels, "set_heads: sentence s1: word 2 ('b'): HEAD 4 out of range [0, 3]"},
      {{-1, 0, 2}, rels, "set_heads: sentence s1: word 1 ('a'): HEAD -1 out of range [0, 3]"},
      {{2, 0, 2}, {"dep", "root", ""}, "set_heads: sentence s1: word 3 ('c'): DEPREL is empty"},
      {{2, 0, 2}, {"dep", "root", "a b"}, "word 3 ('c'): DEPREL 'a b' holds a space"},
      {{2, 0, 2}, {"a\tb", "root", "dep"}, "word 1 ('a'): DEPREL 'a\\x09b' holds a tab"},
      {{2, 0, 2}, {"dep", "a\nb", "dep"}, "word 2 ('b'): DEPREL 'a\\x0ab' holds a line break"},
      {{2, 0, 2}, {"dep", "a\rb", "dep"}, "DEPREL 'a\\x0db' holds a line break"},
      {{2, 0, 2}, {"dep", "a\x01", "dep"}, "DEPREL 'a\\x01' holds a control character"},
  };
  for (const Bad& b : table) {
    INFO(b.message);
    CHECK_THROWS_AS(doc.set_heads(0, b.heads, b.deprels), synattn::Error);
    CHECK_THROWS_WITH(doc.set_heads(0, b.heads, b.deprels), Catch::Contains(b.message));
    CHECK(doc.to_string() == text);
    CHECK_FALSE(doc.has_tree(0));
  }
  // A sentence without sent_id is named by its number and line.
  CHECK_THROWS_WITH(doc.set_heads(1, {2}, {"root"}),
                    Catch::Contains("set_heads: sentence #2 (line 6): word 1 ('d'): HEAD 2 out of "
                                    "range [0, 1]"));
  CHECK_THROWS_WITH(doc.set_heads(2, {0}, {"root"}),
                    Catch::Contains("sentence index 2 out of range (mem.conllu has 2 sentences)"));
  CHECK_THROWS_WITH(doc.forms(7), Catch::Contains("sentence index 7 out of range"));
  CHECK(doc.to_string() == text);
}

TEST_CASE("a directory or a missing file is refused with its path", "[parse]") {
  synattn_test::TempDir dir("synattn_parse_io");
  const std::string directory = dir.path().string();
  const std::string missing = dir.file("missing.conllu");
  check_parse_error([&] { ConlluDocument::read_file(directory); }, directory, 0,
                    "cannot open file (it is a directory)");
  check_parse_error([&] { ConlluDocument::read_file(missing); }, missing, 0, "cannot open file");
  check_parse_error([&] { synattn::parse::read_token_text_file(directory); }, directory, 0,
                    "cannot open file (it is a directory)");
  check_parse_error([&] { synattn::parse::read_token_text_file(missing); }, missing, 0,
                    "cannot open file");
  CHECK_THROWS_WITH(ConlluDocument::read_file(missing),
                    Catch::Contains(missing + ": cannot open file"));
}

TEST_CASE("token text becomes the documented CoNLL-U", "[parse]") {
  const std::string input =
      "  The cat\t sat  .  \n"
      "\n"
      " \t \r\n"
      "A  b\r\n"
      "\xE6\x88\x91 \xE7\x88\xB1\t\xF0\x9F\x98\x80 x\xC2\xA0y\n"  // CJK, an emoji, U+00A0 inside a
                                                                  // token
      "_ #hash";                                                  // no final newline
  const std::string expected =
      "# sent_id = 1\n"
      "# text = The cat sat .\n"
      "1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "2\tcat\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "3\tsat\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "4\t.\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "\n"
      "# sent_id = 2\n"
      "# text = A b\n"
      "1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "2\tb\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "\n"
      "# sent_id = 3\n"
      "# text = \xE6\x88\x91 \xE7\x88\xB1 \xF0\x9F\x98\x80 x\xC2\xA0y\n"
      "1\t\xE6\x88\x91\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "2\t\xE7\x88\xB1\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "3\t\xF0\x9F\x98\x80\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "4\tx\xC2\xA0y\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "\n"
      "# sent_id = 4\n"
      "# text = _ #hash\n"
      "1\t_\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "2\t#hash\t_\t_\t_\t_\t_\t_\t_\t_\n"
      "\n";
  ConlluDocument doc = tokens(input);
  CHECK(doc.to_string() == expected);
  CHECK(doc.file_name() == "mem.txt");
  REQUIRE(doc.size() == 4);
  CHECK(doc.forms(0) == std::vector<std::string>{"The", "cat", "sat", "."});
  CHECK(doc.sent_id(1) == "2");
  CHECK(doc.text(1) == "A b");
  CHECK(doc.line(0) == 1);  // lines of the token text
  CHECK(doc.line(1) == 4);
  CHECK(doc.line(3) == 6);
  for (std::size_t s = 0; s < doc.size(); ++s) {
    CHECK_FALSE(doc.has_input_tree(s));
    CHECK(doc.input(s).words[0].upos == "_");
  }

  // The output is a CoNLL-U document like any other: it reads back to the
  // same text, and set_heads works on it as on a read one.
  const ConlluDocument reread = document(expected);
  CHECK(reread.to_string() == expected);
  REQUIRE(reread.size() == 4);
  for (std::size_t s = 0; s < 4; ++s) {
    CHECK(reread.forms(s) == doc.forms(s));
    CHECK(reread.sent_id(s) == doc.sent_id(s));
    CHECK(reread.text(s) == doc.text(s));
    CHECK_FALSE(reread.has_input_tree(s));
  }
  doc.set_heads(1, {0, 1}, {"root", "obj"});
  CHECK(lines_of(doc.to_string())[9] == "1\tA\t_\t_\t_\t_\t0\troot\t_\t_");
  CHECK(lines_of(doc.to_string())[10] == "2\tb\t_\t_\t_\t_\t1\tobj\t_\t_");

  // Through a file, with a byte-order mark; an empty or blank input is an
  // empty document.
  synattn_test::TempDir dir("synattn_parse_io");
  const std::string path = dir.file("in.txt");
  {
    std::ofstream out(path, std::ios::binary);
    out << "\xEF\xBB\xBF" << input;
  }
  CHECK(synattn::parse::read_token_text_file(path).to_string() == expected);
  CHECK(tokens("").size() == 0);
  CHECK(tokens(" \n\t\n").to_string().empty());

  // Appending to a read document: a blank line first where it has none.
  ConlluDocument appended = document(row("1", "a", "_"));
  appended.append_sentence("x", {"b"});
  CHECK(appended.to_string() ==
        row("1", "a", "_") + "\n# sent_id = x\n# text = b\n" + "1\tb\t_\t_\t_\t_\t_\t_\t_\t_\n\n");
  CHECK_THROWS_WITH(appended.append_sentence("y", {}), Catch::Contains("at least one word"));
  CHECK_THROWS_WITH(
      appended.append_sentence("y", {"a", "b\tc"}),
      Catch::Contains("sentence y: word 2: FORM 'b\\x09c' holds a tab or a line break"));
}

TEST_CASE("token text errors name the line: too many tokens, bad UTF-8, control characters",
          "[parse]") {
  std::string many;
  for (int k = 0; k < 1001; ++k) many += "t ";
  const std::vector<Malformed> table = {
      {"1001 tokens", "a b\n\n" + many + "\n", 3,
       "1001 tokens, more than the limit of 1000 a line (one sentence a line: is this a paragraph, "
       "or a file without line breaks?)"},
      {"lone continuation byte", std::string("ok\na \x80") + "b\n", 2,
       "invalid UTF-8 at byte 3: byte 0x80 is a continuation byte without a lead byte"},
      {"overlong C0", "\xC0\xAF\n", 1,
       "invalid UTF-8 at byte 1: byte 0xc0 starts an overlong encoding (never valid UTF-8)"},
      {"overlong E0", "x \xE0\x80\x80\n", 1,
       "invalid UTF-8 at byte 3: bytes 0xe0 0x80 start an overlong encoding"},
      {"overlong F0", "\xF0\x80\x80\x80\n", 1,
       "invalid UTF-8 at byte 1: bytes 0xf0 0x80 start an overlong encoding"},
      {"surrogate", "\xED\xA0\x80\n", 1,
       "invalid UTF-8 at byte 1: bytes 0xed 0xa0 encode a UTF-16 surrogate (U+D800-U+DFFF)"},
      {"above U+10FFFF", "\xF4\x90\x80\x80\n", 1,
       "invalid UTF-8 at byte 1: bytes 0xf4 0x90 encode a code point above U+10FFFF"},
      {"byte F5", "a\xF5\n", 1, "invalid UTF-8 at byte 2: byte 0xf5 never appears in UTF-8"},
      {"byte FF after a BOM", "\xEF\xBB\xBF\xFF\n", 1,
       "invalid UTF-8 at byte 4: byte 0xff never appears in UTF-8"},
      {"cut short by the line end", "ab \xE2\x82\r\n", 1,
       "invalid UTF-8 at byte 4: a 3-byte sequence starting with 0xe2 is cut short by the end of "
       "the line"},
      {"cut short by ASCII", "\xC3(\n", 1,
       "invalid UTF-8 at byte 1: a 2-byte sequence starting with 0xc3 is cut short (0x28 is not a "
       "continuation byte)"},
      {"cut short in a 4-byte sequence", "\xF0\x9F\x98 x\n", 1,
       "invalid UTF-8 at byte 1: a 4-byte sequence starting with 0xf0 is cut short (0x20 is not a "
       "continuation byte)"},
      {"form feed", std::string("a\x0c") + "b\n", 1,
       "control character 0x0c at byte 2 (only spaces and tabs separate tokens; other control "
       "characters cannot be written to CoNLL-U)"},
      {"NUL", std::string("\n\nab\0c\n", 7), 3, "control character 0x00 at byte 3"},
      {"DEL", "a \x7f\n", 1, "control character 0x7f at byte 3"},
      {"CR-only line ends", "a b\rc d\r", 1,
       "carriage return at byte 4: are the line ends CR-only? convert them to \\n or \\r\\n"},
  };
  for (const Malformed& m : table) {
    INFO(m.what);
    try {
      std::istringstream in(m.input);
      synattn::parse::read_token_text(in, "bad.txt");
      FAIL("no FormatError");
    } catch (const FormatError& e) {
      CHECK(e.line() == m.line);
      CHECK_THAT(e.what(), Catch::Contains("bad.txt:" + std::to_string(m.line) + ": " + m.reason));
    }
  }

  std::string thousand;
  for (int k = 0; k < 1000; ++k) thousand += "t ";
  CHECK(tokens(thousand).word_count(0) == 1000);
  CHECK_THROWS_WITH(tokens("a b\nc d e\n", 2),
                    Catch::Contains("mem.txt:2: 3 tokens, more than the limit of 2"));
  CHECK(tokens("a b\n", 2).size() == 1);
  CHECK_THROWS_WITH(tokens("a\n", 0), Catch::Contains("max_tokens must be at least 1"));
}

TEST_CASE("attachment scores count punctuation and compare universal relations only", "[parse]") {
  // Sentence 1: the punctuation mark's head is wrong, and counts; "nsubj" vs
  // "nsubj:pass" agrees. Sentence 2: "obj" vs "iobj" is a labeling error,
  // "Nmod" vs "nmod" too (case counts), "nmod:poss" vs "nmod:tmod" agrees.
  const auto gold =
      strict("# sent_id = s1\n" + row(1, "The", 2, "det") + row(2, "cat", 3, "nsubj") +
             row(3, "sat", 0, "root") + row(4, ".", 3, "punct") + "\n" + "# sent_id = s2\n" +
             row(1, "give", 0, "root") + row(2, "him", 1, "obj") + row(3, "his", 4, "nmod:poss") +
             row(4, "book", 1, "nmod") + "\n");
  const auto system =
      strict("# sent_id = s1\n" + row(1, "The", 2, "det") + row(2, "cat", 3, "nsubj:pass") +
             row(3, "sat", 0, "root") + row(4, ".", 2, "punct") + "\n" + "# sent_id = s2\n" +
             row(1, "give", 0, "root") + row(2, "him", 1, "iobj") + row(3, "his", 4, "nmod:tmod") +
             row(4, "book", 1, "Nmod") + "\n");
  const AttachmentScores s1 = synattn::parse::score_sentence(gold[0], system[0]);
  CHECK(s1.words == 4);
  CHECK(s1.head_correct == 3);
  CHECK(s1.labeled_correct == 3);
  const AttachmentScores s2 = synattn::parse::score_sentence(gold[1], system[1]);
  CHECK(s2.words == 4);
  CHECK(s2.head_correct == 4);
  CHECK(s2.labeled_correct == 2);

  const AttachmentScores all = synattn::parse::evaluate(gold, system);
  CHECK(all.words == 8);
  CHECK(all.head_correct == 7);
  CHECK(all.labeled_correct == 5);
  CHECK(all.uas() == Approx(87.5));
  CHECK(all.las() == Approx(62.5));
  CHECK(synattn::parse::format_scores(all) == "UAS 87.50, LAS 62.50 (8 words)");

  CHECK(synattn::parse::universal_relation("nmod:poss") == "nmod");
  CHECK(synattn::parse::universal_relation("nmod") == "nmod");
  CHECK(synattn::parse::universal_relation("acl:relcl:x") == "acl");
  CHECK(synattn::parse::universal_relation(":x").empty());

  AttachmentScores none;
  CHECK(none.uas() == 0.0);
  CHECK(none.las() == 0.0);
  none.add(true, false);  // head right, relation wrong
  none.add(false, true);  // a right relation without the head does not count
  none.add(s1);
  CHECK(none.words == 6);
  CHECK(none.head_correct == 4);
  CHECK(none.labeled_correct == 3);
}

TEST_CASE("evaluation refuses a system output with other words, naming the sentence and the word",
          "[parse]") {
  const auto gold =
      strict("# sent_id = g1\n" + row(1, "a", 0, "root") + row(2, "b", 1) + row(3, "c", 1) + "\n");
  const auto other_form =
      strict("# sent_id = g1\n" + row(1, "a", 0, "root") + row(2, "B", 1) + row(3, "c", 1) + "\n");
  const auto fewer = strict(row(1, "a", 0, "root") + row(2, "b", 1) + "\n");
  CHECK_THROWS_WITH(
      synattn::parse::evaluate(gold, other_form),
      Catch::Contains("evaluate: sentence g1 (gold line 1, system line 1): word 2: gold FORM "
                      "'b', system FORM 'B' (the system output must keep the gold tokenisation)"));
  CHECK_THROWS_WITH(
      synattn::parse::evaluate(gold, fewer),
      Catch::Contains("evaluate: sentence g1 (gold line 1, system line 1): gold has 3 words, "
                      "system 2"));
  CHECK_THROWS_WITH(synattn::parse::evaluate(gold, {}),
                    Catch::Contains("evaluate: gold has 1 sentences, system 0"));
  CHECK_THROWS_AS(synattn::parse::evaluate(gold, other_form), synattn::Error);

  // A document sentence that was never parsed has HEAD -1.
  const ConlluDocument unparsed = document("# sent_id = g1\n" + row("1", "a", "_") +
                                           row("2", "b", "_") + row("3", "c", "_") + "\n");
  CHECK_THROWS_WITH(
      synattn::parse::evaluate(gold, {unparsed.sentence(0)}),
      Catch::Contains("word 1: system HEAD -1 out of range [0, 3] (was the sentence parsed?)"));
  CHECK_THROWS_WITH(synattn::parse::evaluate({unparsed.input(0)}, gold),
                    Catch::Contains("word 1: gold HEAD -1 out of range [0, 3]"));
}

TEST_CASE("the length breakdown puts each sentence in its bucket and prints a markdown table",
          "[parse]") {
  const std::vector<int> lengths = {3, 10, 11, 20, 25, 45};
  std::string text;
  for (std::size_t k = 0; k < lengths.size(); ++k)
    text += chain(lengths[k], "c" + std::to_string(k));
  const auto gold = strict(text);
  auto system = gold;
  system[0].words[2].head = 1;         // 3 words: one head wrong
  system[4].words[4].deprel = "nmod";  // 25 words: one label wrong

  const LengthBreakdown by_length = synattn::parse::evaluate_by_length(gold, system);
  REQUIRE(by_length.buckets.size() == 5);
  CHECK(by_length.buckets[0].label() == "1-10");
  CHECK(by_length.buckets[4].label() == "41+");
  CHECK(by_length.buckets[0].sentences == 2);
  CHECK(by_length.buckets[0].scores.words == 13);
  CHECK(by_length.buckets[0].scores.head_correct == 12);
  CHECK(by_length.buckets[1].sentences == 2);
  CHECK(by_length.buckets[1].scores.words == 31);
  CHECK(by_length.buckets[2].scores.labeled_correct == 24);
  CHECK(by_length.buckets[3].sentences == 0);
  CHECK(by_length.buckets[4].scores.words == 45);
  CHECK(by_length.sentences() == 6);
  CHECK(by_length.total().words == 114);
  CHECK(by_length.total().head_correct == synattn::parse::evaluate(gold, system).head_correct);

  CHECK(synattn::parse::format_breakdown_markdown(by_length) ==
        "| sentence length | sentences | words | UAS | LAS |\n"
        "|:--|--:|--:|--:|--:|\n"
        "| 1-10 | 2 | 13 | 92.31 | 92.31 |\n"
        "| 11-20 | 2 | 31 | 100.00 | 100.00 |\n"
        "| 21-30 | 1 | 25 | 100.00 | 96.00 |\n"
        "| 31-40 | 0 | 0 | - | - |\n"
        "| 41+ | 1 | 45 | 100.00 | 100.00 |\n"
        "| all | 6 | 114 | 99.12 | 98.25 |\n");

  const LengthBreakdown custom = synattn::parse::evaluate_by_length(
      gold, system, LengthBreakdown(std::vector<std::size_t>{10}));
  REQUIRE(custom.buckets.size() == 2);
  CHECK(custom.buckets[1].label() == "11+");
  CHECK(custom.buckets[1].sentences == 4);
  CHECK_THROWS_WITH(LengthBreakdown(std::vector<std::size_t>{10, 10}),
                    Catch::Contains("upper bounds must increase from 1; 10 follows 10"));
  CHECK_THROWS_WITH(LengthBreakdown(std::vector<std::size_t>{0}),
                    Catch::Contains("upper bounds must increase from 1; 0 follows 0"));
}

TEST_CASE("gold against itself on EWT dev scores 100/100, through the document too", "[parse]") {
  const std::string path = synattn_test::ewt("dev");
  const std::vector<ConlluSentence> gold = read_conllu(path);
  const ConlluDocument doc = ConlluDocument::read_file(path);
  long long words = 0;
  for (const ConlluSentence& s : gold) words += static_cast<long long>(s.size());
  REQUIRE(words > 20000);

  const AttachmentScores self = synattn::parse::evaluate(gold, gold);
  CHECK(self.words == words);
  CHECK(self.uas() == 100.0);
  CHECK(self.las() == 100.0);

  const LengthBreakdown by_length = synattn::parse::evaluate_by_length(gold, doc.sentences());
  CHECK(by_length.total().words == words);
  CHECK(by_length.total().head_correct == words);
  CHECK(by_length.total().labeled_correct == words);
  CHECK(by_length.sentences() == static_cast<long long>(gold.size()));
  for (const auto& bucket : by_length.buckets) CHECK(bucket.sentences > 0);
  CHECK_THAT(synattn::parse::format_breakdown_markdown(by_length),
             Catch::EndsWith("| all | " + std::to_string(gold.size()) + " | " +
                             std::to_string(words) + " | 100.00 | 100.00 |\n"));
  CHECK(synattn::parse::evaluate(doc.gold_sentences(), gold).labeled_correct == words);
}

// Issue 44 §5: a last bound of SIZE_MAX wrapped the longer sentences' bucket
// to "0+", which then held every sentence of no other bucket.
TEST_CASE("LengthBreakdown refuses a bound that leaves no room for the last bucket", "[parse][metrics][errors]") {
  CHECK_THROWS_WITH(LengthBreakdown(std::vector<std::size_t>{SIZE_MAX}),
                    Catch::Contains("LengthBreakdown: upper bound") && Catch::Contains("no room"));
  CHECK_THROWS_AS(LengthBreakdown(std::vector<std::size_t>{10, SIZE_MAX}), synattn::Error);
  const LengthBreakdown ok(std::vector<std::size_t>{SIZE_MAX - 1});
  CHECK(ok.buckets.back().min_words == SIZE_MAX);
}
