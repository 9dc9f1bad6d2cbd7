// io/conllu_text.hpp and io/conllu_writer.hpp: raw text rebuilt from
// CoNLL-U (checked against every "# text" of the bundled treebanks), spans,
// the write -> read round trip, and the errors of both.
#include <catch2/catch.hpp>

#include <cctype>
#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <synattn/io/conllu.hpp>
#include <synattn/io/conllu_text.hpp>
#include <synattn/io/conllu_writer.hpp>
#include <synattn/text/utf8.hpp>
#include <synattn/text/word_spans.hpp>

#include "support/test_data.hpp"

using synattn::FormatError;
using synattn::text::Document;
using synattn::text::read_conllu_text;
using synattn::text::read_conllu_text_file;
using synattn::text::Sentence;
using synattn::text::to_conllu_text;
using synattn::text::Token;
using synattn::text::Word;

namespace {

Document parse(const std::string& conllu) {
  std::istringstream in(conllu);
  return read_conllu_text(in, "mem.conllu");
}

Document round_trip(const Document& doc) { return parse(to_conllu_text(doc)); }

std::string slice(const std::string& text, synattn::CharSpan b) {
  return text.substr(static_cast<std::size_t>(b.begin), static_cast<std::size_t>(b.end - b.begin));
}

// A ten-column word line; MISC last.
std::string line(const std::string& id, const std::string& form, const std::string& head = "_",
                 const std::string& misc = "_") {
  return id + "\t" + form + "\t_\tX\t_\t_\t" + head + "\t" + (head == "_" ? "_" : head == "0" ? "root" : "dep") +
         "\t_\t" + misc + "\n";
}

// Every span of `doc` is what the library promises: tokens slice the text to
// their form in bytes and in code points, increasing and disjoint; words tile
// their token.
void check_spans(const Document& doc) {
  const auto decoded = synattn::text::decode_utf8(doc.text, "doc");
  int end = 0;
  for (const Sentence& s : doc.sentences) {
    REQUIRE_FALSE(s.tokens.empty());
    int next_word = 0;
    for (const Token& t : s.tokens) {
      INFO("sentence " << s.sent_id << " token " << t.form);
      REQUIRE(t.span.bytes.begin >= end);
      REQUIRE(slice(doc.text, t.span.bytes) == t.form);
      REQUIRE(decoded.byte_offset[static_cast<std::size_t>(t.span.code_points.begin)] == t.span.bytes.begin);
      REQUIRE(decoded.byte_offset[static_cast<std::size_t>(t.span.code_points.end)] == t.span.bytes.end);
      REQUIRE(t.first_word == next_word);
      int at = t.span.bytes.begin, at_cp = t.span.code_points.begin;
      for (int k = t.first_word; k < t.first_word + t.word_count; ++k) {
        const Word& w = s.words[static_cast<std::size_t>(k)];
        REQUIRE(w.span.bytes.begin == at);
        REQUIRE(w.span.code_points.begin == at_cp);
        REQUIRE(w.span.bytes.end >= w.span.bytes.begin);
        REQUIRE(w.span.bytes.end <= t.span.bytes.end);
        REQUIRE(decoded.byte_offset[static_cast<std::size_t>(w.span.code_points.end)] == w.span.bytes.end);
        at = w.span.bytes.end;
        at_cp = w.span.code_points.end;
      }
      REQUIRE(at == t.span.bytes.end);
      if (!t.multiword()) REQUIRE(s.words[static_cast<std::size_t>(t.first_word)].form == t.form);
      next_word += t.word_count;
      end = t.span.bytes.end;
    }
    REQUIRE(static_cast<std::size_t>(next_word) == s.words.size());
  }
}

// Two documents are the same: text, sentences, tokens, words, spans, heads.
void check_same(const Document& a, const Document& b, bool same_ids = true) {
  REQUIRE(a.text == b.text);
  REQUIRE(a.sentences.size() == b.sentences.size());
  for (std::size_t s = 0; s < a.sentences.size(); ++s) {
    const Sentence &x = a.sentences[s], &y = b.sentences[s];
    INFO("sentence " << s + 1);
    if (same_ids) CHECK(x.sent_id == y.sent_id);
    CHECK(x.new_document == y.new_document);
    CHECK(x.new_paragraph == y.new_paragraph);
    CHECK(x.document_id == y.document_id);
    CHECK(x.paragraph_id == y.paragraph_id);
    REQUIRE(x.tokens.size() == y.tokens.size());
    for (std::size_t t = 0; t < x.tokens.size(); ++t) {
      CHECK(x.tokens[t].form == y.tokens[t].form);
      CHECK(x.tokens[t].first_word == y.tokens[t].first_word);
      CHECK(x.tokens[t].word_count == y.tokens[t].word_count);
      CHECK(x.tokens[t].span.bytes.begin == y.tokens[t].span.bytes.begin);
      CHECK(x.tokens[t].span.bytes.end == y.tokens[t].span.bytes.end);
      CHECK(x.tokens[t].span.code_points.begin == y.tokens[t].span.code_points.begin);
      CHECK(x.tokens[t].span.code_points.end == y.tokens[t].span.code_points.end);
    }
    REQUIRE(x.words.size() == y.words.size());
    for (std::size_t w = 0; w < x.words.size(); ++w) {
      CHECK(x.words[w].form == y.words[w].form);
      CHECK(x.words[w].upos == y.words[w].upos);
      CHECK(x.words[w].head == y.words[w].head);
      CHECK(x.words[w].deprel == y.words[w].deprel);
      CHECK(x.words[w].span.bytes.begin == y.words[w].span.bytes.begin);
      CHECK(x.words[w].span.bytes.end == y.words[w].span.bytes.end);
      CHECK(x.words[w].span.code_points.begin == y.words[w].span.code_points.begin);
      CHECK(x.words[w].span.code_points.end == y.words[w].span.code_points.end);
    }
  }
}

// Builds a Document piece by piece, as a tokenizer would: whitespace, then
// tokens (of one word, or several), sentences and paragraphs.
struct Builder {
  Document doc;
  int code_points = 0;

  void text(const std::string& s) {
    doc.text += s;
    code_points += static_cast<int>(synattn::text::count_code_points(s));
  }
  void sentence(bool new_paragraph = false, bool new_document = false) {
    doc.sentences.emplace_back();
    doc.sentences.back().new_paragraph = new_paragraph || new_document || doc.sentences.size() == 1;
    doc.sentences.back().new_document = new_document;
  }
  void token(const std::string& form, const std::vector<std::string>& words = {}) {
    Sentence& s = doc.sentences.back();
    Token t;
    t.form = form;
    t.first_word = static_cast<int>(s.words.size());
    t.word_count = words.empty() ? 1 : static_cast<int>(words.size());
    t.span.bytes.begin = static_cast<int>(doc.text.size());
    t.span.code_points.begin = code_points;
    text(form);
    t.span.bytes.end = static_cast<int>(doc.text.size());
    t.span.code_points.end = code_points;
    for (const std::string& w : words.empty() ? std::vector<std::string>{form} : words) {
      Word word;
      word.form = w;
      s.words.push_back(word);
    }
    synattn::text::assign_word_spans(t, s.words);
    s.tokens.push_back(t);
  }
  // Gives every sentence a chain tree: word 1 the root, word k's head k-1.
  void chain_trees() {
    for (Sentence& s : doc.sentences)
      for (std::size_t w = 0; w < s.words.size(); ++w) {
        s.words[w].head = static_cast<int>(w);
        s.words[w].deprel = w == 0 ? "root" : "dep";
        s.words[w].upos = "X";
      }
  }
};

// The first line of FormatError e is "mem.conllu:LINE: ...".
void check_parse_error(const std::string& conllu, std::size_t line, const std::string& part) {
  INFO(conllu);
  try {
    (void)parse(conllu);
    FAIL("accepted");
  } catch (const FormatError& e) {
    CHECK(e.file() == "mem.conllu");
    CHECK(e.line() == line);
    CHECK_THAT(std::string(e.what()), Catch::Contains(part));
  }
}

const std::vector<std::string>& treebanks() {
  static const std::vector<std::string> files = {synattn_test::ewt("train"), synattn_test::ewt("dev"),
                                                 synattn_test::ewt("test"), synattn_test::gsd("dev"),
                                                 synattn_test::gsd("test")};
  return files;
}

}  // namespace

TEST_CASE("every sentence of the bundled treebanks rebuilds to its # text, with exact spans", "[conllu_text][data]") {
  using synattn::text::detail::fold_whitespace;
  for (const std::string& path : treebanks()) {
    INFO(path);
    const Document doc = read_conllu_text_file(path);
    // The strict reader's own view of the same file, parsed independently.
    const std::vector<synattn::ConlluSentence> gold = synattn::read_conllu(path);
    REQUIRE(doc.sentences.size() == gold.size());
    std::size_t multiword = 0, matched = 0;
    for (std::size_t s = 0; s < gold.size(); ++s) {
      const Sentence& sent = doc.sentences[s];
      INFO("sentence " << gold[s].label());
      REQUIRE(!gold[s].text.empty());
      REQUIRE(fold_whitespace(slice(doc.text, sent.span().bytes)) == fold_whitespace(gold[s].text));
      REQUIRE(sent.sent_id == gold[s].sent_id);
      REQUIRE(sent.words.size() == gold[s].words.size());
      for (std::size_t w = 0; w < sent.words.size(); ++w) {
        REQUIRE(sent.words[w].form == gold[s].words[w].form);
        REQUIRE(sent.words[w].head == gold[s].words[w].head);
        REQUIRE(sent.words[w].deprel == gold[s].words[w].deprel);
      }
      for (const Token& t : sent.tokens) {
        if (!t.multiword()) continue;
        ++multiword;
        // In EWT nearly every multiword token is its words' forms run
        // together ("don't" = "do" + "n't"): then each word's span is its form.
        bool all = true;
        for (int k = t.first_word; k < t.first_word + t.word_count; ++k) {
          const Word& w = sent.words[static_cast<std::size_t>(k)];
          std::string piece = slice(doc.text, w.span.bytes), form = w.form;
          for (char& c : piece) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          for (char& c : form) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          all = all && piece == form;
        }
        matched += all;
      }
    }
    check_spans(doc);
    REQUIRE(doc.text.back() == '\n');
    if (path.find("EWT") != std::string::npos) {
      CHECK(multiword > 300);
      CHECK(matched * 100 >= multiword * 95);
      CHECK(doc.sentences.front().new_document);
      CHECK(doc.text.find("\n\n") != std::string::npos);  // paragraphs
    } else {
      CHECK(doc.text.find('\n') == doc.text.size() - 1);  // GSD: one paragraph, no spaces
    }
  }
}

TEST_CASE("the bundled treebanks survive write -> read unchanged", "[conllu_text][data]") {
  for (const std::string& path : treebanks()) {
    INFO(path);
    const Document doc = read_conllu_text_file(path);
    const std::string written = to_conllu_text(doc);
    const Document back = parse(written);
    check_same(doc, back);
    // Written again, the file is the same: the writer is a fixed point.
    CHECK(to_conllu_text(back) == written);
  }
}

TEST_CASE("the text is rebuilt from SpaceAfter, paragraphs, documents and SpacesAfter", "[conllu_text]") {
  SECTION("SpaceAfter=No, sentences of a paragraph joined by a space, newpar and newdoc") {
    const Document doc = parse("# newdoc id = d1\n# sent_id = a\n# text = Hi, you.\n" + line("1", "Hi", "0", "SpaceAfter=No") +
                               line("2", ",", "1") + line("3", "you", "1", "SpaceAfter=No") + line("4", ".", "1") +
                               "\n# sent_id = b\n" + line("1", "Yes", "0") + "\n# newpar\n# sent_id = c\n" +
                               line("1", "New", "0") + "\n# newdoc\n" + line("1", "Doc", "0", "SpaceAfter=No") +
                               line("2", "!", "1", "SpaceAfter=No") + "\n");
    CHECK(doc.text == "Hi, you. Yes\n\nNew\n\nDoc!\n");
    REQUIRE(doc.sentences.size() == 4);
    CHECK(doc.sentences[0].new_document);
    CHECK(doc.sentences[0].document_id == "d1");
    CHECK(doc.sentences[0].new_paragraph);
    CHECK_FALSE(doc.sentences[1].new_paragraph);
    CHECK(doc.sentences[2].new_paragraph);
    CHECK_FALSE(doc.sentences[2].new_document);
    CHECK(doc.sentences[3].new_document);
    CHECK(doc.sentences[3].new_paragraph);
    CHECK(doc.sentences[3].document_id.empty());
    CHECK(doc.sentences[0].words[1].head == 1);
    CHECK(doc.sentences[0].words[0].head == 0);
    check_spans(doc);
  }
  SECTION("a paragraph break and the end of the text separate even after SpaceAfter=No") {
    const Document doc = parse(line("1", "a", "_", "SpaceAfter=No") + "\n# newpar id = p2\n" +
                               line("1", "b", "_", "SpaceAfter=No") + "\n");
    CHECK(doc.text == "a\n\nb\n");
    CHECK(doc.sentences[1].paragraph_id == "p2");
    CHECK(doc.sentences[0].words[0].head == -1);
  }
  SECTION("SpacesAfter and SpacesBefore, with every escape, win over the defaults") {
    const Document doc = parse(line("1", "a", "_", "SpacesBefore=\\s\\n|SpacesAfter=\\t\\s\\s") +
                               line("2", "b", "_", "SpaceAfter=No|SpacesAfter=\\r\\n") +
                               line("3", "c", "_", "SpacesAfter=\\u00A0\\u3000") + "\n# newpar\n" +
                               line("1", "d", "_", "SpacesAfter=\\s") + "\n" +
                               line("1", "e", "_", "SpacesAfter=") + "\n");
    CHECK(doc.text == " \na\t  b\r\nc\xC2\xA0\xE3\x80\x80" "d e");
    check_spans(doc);
    CHECK(doc.sentences[0].tokens[0].span.bytes.begin == 2);
    CHECK(doc.sentences[0].tokens[2].span.code_points.begin == 9);
    CHECK(doc.sentences[1].tokens[0].span.code_points.begin == 12);
    CHECK(doc.sentences[1].tokens[0].span.bytes.begin == 15);
  }
  SECTION("a file with no newpar or newdoc is one paragraph; the last token is followed by a newline") {
    const Document doc = parse(line("1", "一", "_", "SpaceAfter=No") + line("2", "。", "_", "SpaceAfter=No") + "\n" +
                               line("1", "二", "_", "SpaceAfter=No") + "\n");
    CHECK(doc.text == "一。二\n");
    CHECK(doc.sentences[1].tokens[0].span.code_points.begin == 2);
    CHECK(doc.sentences[1].tokens[0].span.bytes.begin == 6);
    check_spans(doc);
  }
  SECTION("empty nodes are skipped, other MISC items ignored, CRLF line ends and a BOM accepted") {
    const Document doc = parse("\xEF\xBB\xBF# text = x y\r\n" + line("1", "x", "0", "Foo=Bar|SpaceAfter=Yes") +
                               "1.1\ty\t_\tX\t_\t_\t_\t_\t0:root\t_\r\n" + line("2", "y", "1", "Translit=y") + "\r\n");
    CHECK(doc.text == "x y\n");
    CHECK(doc.sentences[0].words.size() == 2);
  }
  SECTION("no sentences: no text") { CHECK(parse("# comment only\n\n").text.empty()); }
}

TEST_CASE("multiword tokens: the token's form from its line, its words' spans pieces of it", "[conllu_text]") {
  const Document doc = parse("# text = Don't vámonos del\n" + line("1-2", "Don't") + line("1", "do") + line("2", "n't") +
                             line("3-4", "vámonos") + line("3", "vamos") + line("4", "nos") + line("5-6", "del") +
                             line("5", "de") + line("6", "el") + "\n");
  CHECK(doc.text == "Don't vámonos del\n");
  const Sentence& s = doc.sentences[0];
  REQUIRE(s.tokens.size() == 3);
  CHECK(s.tokens[0].form == "Don't");
  CHECK(s.tokens[0].first_word == 0);
  CHECK(s.tokens[0].word_count == 2);
  CHECK(s.tokens[1].first_word == 2);
  const auto piece = [&](std::size_t w) { return slice(doc.text, s.words[w].span.bytes); };
  CHECK(piece(0) == "Do");   // ASCII case does not matter
  CHECK(piece(1) == "n't");
  CHECK(piece(2) == "v");    // "vá" against "va": the longest common prefix, a whole code point
  CHECK(piece(3) == "ámonos");
  CHECK(s.words[3].span.code_points.begin == 7);
  CHECK(s.words[3].span.code_points.end == 13);
  CHECK(piece(4) == "de");
  CHECK(piece(5) == "l");  // the last word takes the rest
  check_spans(doc);

  // A match that ends inside a character (e-grave against e-acute: one byte in
  // common) is cut back to the last whole one.
  const Document d3 = parse(line("1-2", "\xC3\xA9" "a") + line("1", "\xC3\xA8") + line("2", "a") + "\n");
  CHECK(slice(d3.text, d3.sentences[0].words[0].span.bytes).empty());
  CHECK(slice(d3.text, d3.sentences[0].words[1].span.bytes) == "\xC3\xA9" "a");
  CHECK(d3.sentences[0].words[1].span.code_points.end == 2);

  // A word whose form runs past the token leaves the next ones empty at its end.
  const Document d2 = parse(line("1-3", "ab") + line("1", "abc") + line("2", "x") + line("3", "y") + "\n");
  CHECK(slice(d2.text, d2.sentences[0].words[0].span.bytes) == "ab");
  CHECK(d2.sentences[0].words[1].span.bytes.begin == 2);
  CHECK(d2.sentences[0].words[1].span.bytes.end == 2);
  CHECK(d2.sentences[0].words[2].span.bytes.end == 2);
}

TEST_CASE("hand-made documents with awkward whitespace survive write -> read byte for byte", "[conllu_text]") {
  const std::string nbsp = "\xC2\xA0", ideographic = "\xE3\x80\x80", nel = "\xC2\x85", line_sep = "\xE2\x80\xA8";
  std::vector<Builder> docs(6);
  {  // tabs, runs of spaces, CRLF, leading and trailing whitespace, several blank lines
    Builder& b = docs[0];
    b.text(" \t ");
    b.sentence();
    b.token("Hello");
    b.text("\t\t");
    b.token(",", {","});
    b.text("   ");
    b.token("world");
    b.token("!");
    b.text("\r\n");
    b.sentence();
    b.token("Next");
    b.text("\r\n\r\n\r\n\n");
    b.sentence(true);
    b.token("Para");
    b.text(" ");
    b.sentence(false, true);
    b.token("Doc");
    b.text("\n\n \n");
  }
  {  // Unicode spaces between tokens, emoji, combining marks, a multiword token
    Builder& b = docs[1];
    b.sentence();
    b.token("caf\x65\xCC\x81");  // e + combining acute
    b.text(nbsp);
    b.token("\xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD");  // emoji, skin tone modifier
    b.text(ideographic + nel + line_sep);
    b.token("don't", {"do", "n't"});
    b.text("\xE2\x80\x83\x0B\x0C");  // em space, vertical tab, form feed
    b.token("\xE4\xB8\xAD\xE6\x96\x87");
    b.chain_trees();
  }
  {  // no whitespace at all, not even at the end; a paragraph break without one
    Builder& b = docs[2];
    b.sentence();
    b.token("a");
    b.token("b");
    b.sentence(true);
    b.token("c");
    b.sentence();
    b.token("d");
  }
  {  // a single space where the reader expects a line break (paragraph, end)
    Builder& b = docs[3];
    b.sentence();
    b.token("x");
    b.text(" ");
    b.sentence(true);
    b.token("y");
    b.text(" ");
  }
  {  // backslashes and bars in forms; ids
    Builder& b = docs[4];
    b.sentence(false, true);
    b.doc.sentences.back().document_id = "doc-1";
    b.doc.sentences.back().paragraph_id = "p-1";
    b.doc.sentences.back().sent_id = "s 1";
    b.token("a\\b|c");
    b.text("\n");
    b.token("\\s");
    b.chain_trees();
  }
  {  // just the defaults: one space, "\n\n", "\n"
    Builder& b = docs[5];
    b.sentence();
    b.token("One");
    b.text(" ");
    b.token("two");
    b.text(" ");
    b.sentence();
    b.token("Three");
    b.text("\n\n");
    b.sentence(true);
    b.token("Four");
    b.text("\n");
  }
  for (std::size_t i = 0; i < docs.size(); ++i) {
    INFO("document " << i);
    const Document& doc = docs[i].doc;
    check_spans(doc);
    const std::string written = to_conllu_text(doc);
    INFO(written);
    const Document back = parse(written);
    check_same(doc, back, false);
    for (std::size_t s = 0; s < doc.sentences.size(); ++s)
      CHECK(back.sentences[s].sent_id ==
            (doc.sentences[s].sent_id.empty() ? std::to_string(s + 1) : doc.sentences[s].sent_id));
    // Every token's TokenRange is its code point span.
    std::size_t ranges = 0;
    for (const Sentence& s : doc.sentences)
      for (const Token& t : s.tokens) {
        const std::string range = "TokenRange=" + std::to_string(t.span.code_points.begin) + ":" +
                                  std::to_string(t.span.code_points.end);
        ranges += written.find(range) != std::string::npos;
      }
    CHECK(ranges == [&] {
      std::size_t n = 0;
      for (const Sentence& s : doc.sentences) n += s.tokens.size();
      return n;
    }());
  }
  // One space needs no SpacesAfter; line breaks are spelt out even where they
  // are the reader's default; the multiword token's MISC is on its line.
  {
    const std::string five = to_conllu_text(docs[5].doc);
    CHECK(five.find("SpacesAfter=\\n\\n|") != std::string::npos);
    CHECK(five.find("SpacesAfter=\\n|") != std::string::npos);
    std::size_t count = 0;
    for (std::size_t i = five.find("SpacesAfter"); i != std::string::npos; i = five.find("SpacesAfter", i + 1)) ++count;
    CHECK(count == 2);
  }
  CHECK(to_conllu_text(docs[1].doc).find("3-4\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpacesAfter=") != std::string::npos);
  CHECK(to_conllu_text(docs[0].doc).find("# text = Hello , world!\n") != std::string::npos);
  CHECK(to_conllu_text(docs[0].doc).find("SpacesBefore=\\s\\t\\s|") != std::string::npos);
}

TEST_CASE("read_conllu_text refuses what it cannot rebuild, naming file, line and place", "[conllu_text][errors]") {
  // "# text" that the forms do not give: the sentence's first line, the first differing byte.
  check_parse_error(line("1", "x", "0") + "\n# sent_id = s2\n# text = Hello world\n" +
                        line("1", "Hello", "0", "SpaceAfter=No") + line("2", "world", "1") + "\n",
                    3, "sentence s2: the text rebuilt from its forms and SpaceAfter differs from its '# text' at byte 6");
  check_parse_error("# text = ab\n" + line("1", "a", "0") + line("2", "c", "1") + "\n", 1, "at byte 2");
  // Multiword tokens out of place, overlapping or past the last word.
  check_parse_error(line("1", "a") + line("1-2", "ab") + line("2", "b") + "\n", 2,
                    "multiword token 1-2 must come just before word 1, but follows word 1");
  check_parse_error(line("1-2", "ab") + line("1", "a") + line("2-3", "bc") + line("2", "b") + line("3", "c") + "\n", 3,
                    "multiword token 2-3 overlaps multiword token 1-2 (line 1)");
  check_parse_error(line("1", "a") + line("2-3", "bc") + line("2", "b") + "\n", 2,
                    "multiword token 2-3 covers words the sentence does not have (it has 2)");
  check_parse_error(line("1-99999999999", "ab") + line("1", "a") + "\n", 1, "covers words the sentence does not have");
  // The strict reader's own checks, with its messages and lines.
  check_parse_error("\n" + line("1", "a", "2") + line("2", "b", "1") + "\n", 2, "no root");
  check_parse_error(line("1", "a", "3") + "\n", 1, "HEAD 3 out of range [0, 1]");
  check_parse_error(line("1", "a", "0") + line("2", "b", "_") + "\n", 2, "a sentence has a HEAD on every word");
  check_parse_error(line("1-1", "a") + line("1", "a") + "\n", 1, "is reversed or empty");
  // Bad whitespace fields.
  check_parse_error(line("1", "a", "_", "SpacesAfter=\\x") + "\n", 1, "SpacesAfter '\\x' has the unknown escape '\\x'");
  check_parse_error(line("1", "a", "_", "SpacesAfter=\\") + "\n", 1, "ends in a lone backslash");
  check_parse_error(line("1", "a", "_", "SpacesAfter=\\u00G0") + "\n", 1, "without four hex digits");
  check_parse_error(line("1", "a", "_", "SpacesAfter=\\uD800") + "\n", 1, "surrogate");
  check_parse_error("\n" + line("1", "a", "_", "SpacesBefore=x") + "\n", 2, "SpacesBefore 'x' holds more than whitespace");
  // Invalid UTF-8, with the byte of the line.
  check_parse_error(line("1", "a") + line("2", "b\xC3(") + "\n", 2, "invalid UTF-8 at byte 4: a 2-byte sequence");
  // A stream that fails.
  std::istringstream bad("x");
  bad.setstate(std::ios::badbit);
  CHECK_THROWS_AS(read_conllu_text(bad, "bad"), FormatError);
  CHECK_THROWS_WITH(read_conllu_text_file(SYNATTN_SOURCE_DIR "/no/such/file.conllu"), Catch::Contains("cannot open file"));
}

TEST_CASE("to_conllu_text refuses what CoNLL-U cannot hold, naming sentence and token", "[conllu_text][errors]") {
  const auto base = [] {
    Builder b;
    b.sentence();
    b.doc.sentences.back().sent_id = "s1";
    b.token("ab");
    b.text(" ");
    b.token("cd");
    b.text("\n");
    return b;
  };
  const auto refuses = [](const Document& doc, const std::string& part) {
    try {
      (void)to_conllu_text(doc);
      FAIL("accepted");
    } catch (const synattn::Error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(part));
    }
  };
  REQUIRE_NOTHROW(to_conllu_text(base().doc));
  {
    Builder b;
    b.sentence();
    b.token("a\tb");
    refuses(b.doc, "sentence #1: token 1 ('a\\x09b'): the form 'a\\x09b' holds a tab");
  }
  {
    Builder b;
    b.sentence();
    b.token("x");
    b.text(" ");
    b.token("a\nb");
    refuses(b.doc, "token 2 ('a\\x0ab'): the form 'a\\x0ab' holds a line break");
  }
  {
    Builder b = base();
    b.doc.sentences[0].words[1].form = "c\td";
    b.doc.sentences[0].tokens[1].word_count = 1;
    refuses(b.doc, "sentence s1: word 2: the form 'c\\x09d' holds a tab");
  }
  {
    Builder b = base();
    b.doc.text[2] = '-';  // text between tokens that is not whitespace
    refuses(b.doc, "sentence s1: token 2 ('cd'): the text before it, '-', is not all whitespace");
  }
  {
    Builder b = base();
    b.doc.text += "tail";
    refuses(b.doc, "the text after the last token");
  }
  {
    Builder b = base();
    b.doc.sentences[0].tokens[1].span.bytes.begin = 2;
    refuses(b.doc, "holds ' cd', not the form");
  }
  {
    Builder b = base();
    b.doc.sentences[0].tokens[1].span.code_points.end = 9;
    refuses(b.doc, "code point span [3, 9) disagrees with its byte span");
  }
  {
    Builder b = base();
    b.doc.sentences[0].tokens[1].span.bytes = {0, 2};
    b.doc.sentences[0].tokens[1].form = "ab";
    refuses(b.doc, "starts before the previous token ends");
  }
  {
    Builder b = base();
    b.doc.sentences[0].tokens[1].first_word = 0;
    refuses(b.doc, "covers words [0, 1); expected words from 1");
  }
  {
    Builder b = base();
    b.doc.sentences[0].words.emplace_back();
    b.doc.sentences[0].words.back().form = "x";
    refuses(b.doc, "its tokens cover 2 of its 3 words");
  }
  {
    Builder b = base();
    b.doc.sentences[0].words[0].head = 3;
    refuses(b.doc, "word 1: HEAD 3 out of range [-1, 2]");
  }
  {
    Builder b = base();
    b.doc.sentences[0].words[0].head = 0;
    refuses(b.doc, "word 2: HEAD '_' but word 1 has HEAD 0");
  }
  {
    Builder b = base();
    b.doc.sentences[0].sent_id = "a\nb";
    refuses(b.doc, "sent_id 'a\\x0ab' holds a line break");
  }
  {
    Builder b = base();
    b.doc.sentences.emplace_back();
    refuses(b.doc, "sentence #2: has no tokens");
  }
  {
    Builder b = base();
    b.doc.text[0] = '\xFF';
    b.doc.sentences[0].tokens[0].form[0] = '\xFF';
    refuses(b.doc, "Document::text is not UTF-8 at byte offset 0");
  }
  // The ostream form writes nothing when it refuses.
  Builder b = base();
  b.doc.text += "x";
  std::ostringstream out;
  CHECK_THROWS_AS(synattn::text::write_conllu_text(b.doc, out), synattn::Error);
  CHECK(out.str().empty());
  // A head of -1 is written as '_'; a whole tree reads back.
  Builder t = base();
  std::ostringstream good;
  synattn::text::write_conllu_text(t.doc, good);
  CHECK(good.str().find("1\tab\t_\t_\t_\t_\t_\t_\t_\t") != std::string::npos);
  t.chain_trees();
  CHECK(round_trip(t.doc).sentences[0].words[1].head == 1);
}
