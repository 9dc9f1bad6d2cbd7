#include <catch2/catch.hpp>

#include <synattn/text/conll18_eval.hpp>

#include <string>
#include <vector>

using namespace synattn;
using namespace synattn::text;

namespace {

// Documents by hand. A sentence is a list of token specs, found in `text` in
// order (each after the previous one's end):
//   "form"                   a one-word token
//   "form/UPOS/head/deprel"  the same, annotated (a head of "_" is -1)
//   "surface=w1 w2 ..."      a multiword token, each word spec as above
// A part left out is X; head 0 with deprel root for a sentence's first word,
// head 1 with deprel dep for the others (the official script's unit tests
// use the same fake tree). Multiword tokens' words get the token's span:
// the scorer never reads a word's own span.
std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == by)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

int code_points(const std::string& s, std::size_t bytes) {
  int n = 0;
  for (std::size_t i = 0; i < bytes; ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

Word make_word(const std::string& spec, int index_in_sentence, const TextSpan& span) {
  const std::vector<std::string> f = split(spec, '/');
  Word w;
  w.form = f[0];
  w.upos = f.size() > 1 ? f[1] : "X";
  w.head = f.size() > 2 ? (f[2] == "_" ? -1 : std::stoi(f[2])) : (index_in_sentence == 0 ? 0 : 1);
  w.deprel = f.size() > 3 ? f[3] : (w.head == 0 ? "root" : "dep");
  w.span = span;
  return w;
}

Document make_doc(const std::string& text, const std::vector<std::vector<std::string>>& sentences) {
  Document doc;
  doc.text = text;
  std::size_t cursor = 0;
  for (const auto& token_specs : sentences) {
    Sentence sentence;
    for (const std::string& spec : token_specs) {
      const std::size_t eq = spec.find('=');
      const std::string surface = eq == std::string::npos ? split(spec, '/')[0] : spec.substr(0, eq);
      const std::size_t at = text.find(surface, cursor);
      REQUIRE(at != std::string::npos);
      cursor = at + surface.size();
      Token token;
      token.form = surface;
      token.span.bytes = {static_cast<int>(at), static_cast<int>(cursor)};
      token.span.code_points = {code_points(text, at), code_points(text, cursor)};
      token.first_word = static_cast<int>(sentence.words.size());
      const std::vector<std::string> words =
          eq == std::string::npos ? std::vector<std::string>{spec} : split(spec.substr(eq + 1), ' ');
      token.word_count = static_cast<int>(words.size());
      for (const std::string& w : words)
        sentence.words.push_back(make_word(w, static_cast<int>(sentence.words.size()), token.span));
      sentence.tokens.push_back(token);
    }
    doc.sentences.push_back(sentence);
  }
  return doc;
}

void check(const Score& s, long long gold, long long system, long long correct, long long aligned = -1) {
  CHECK(s.gold == gold);
  CHECK(s.system == system);
  CHECK(s.correct == correct);
  CHECK(s.aligned == aligned);
}

void check_all_perfect(const Conll18Scores& s) {
  for (const Score* score : {&s.tokens, &s.sentences, &s.words, &s.upos, &s.uas, &s.las, &s.clas}) {
    CHECK(score->gold > 0);
    CHECK(score->precision() == 1.0);
    CHECK(score->recall() == 1.0);
    CHECK(score->f1() == 1.0);
  }
}

const char* const kText = "The cat sat. It's here.";
const std::vector<std::vector<std::string>> kSentences = {
    {"The/DET/2/det", "cat/NOUN/3/nsubj", "sat/VERB/0/root", "./PUNCT/3/punct"},
    {"It's=It/PRON/3/nsubj 's/AUX/3/cop", "here/ADV/0/root", "./PUNCT/3/punct"}};

}  // namespace

TEST_CASE("conll18: identical documents score 100 everywhere", "[conll18]") {
  const Document doc = make_doc(kText, kSentences);
  const Conll18Scores s = evaluate_conll18(doc, doc);
  check_all_perfect(s);
  check(s.tokens, 7, 7, 7);
  check(s.sentences, 2, 2, 2);
  check(s.words, 8, 8, 8);
  check(s.las, 8, 8, 8, 8);
  // CLAS: det, cop and punct are not content relations.
  check(s.clas, 4, 4, 4, 4);
  CHECK(format_conll18(s) ==
        "Metric     | Precision |    Recall |  F1 Score | AligndAcc\n"
        "-----------+-----------+-----------+-----------+-----------\n"
        "Tokens     |    100.00 |    100.00 |    100.00 |\n"
        "Sentences  |    100.00 |    100.00 |    100.00 |\n"
        "Words      |    100.00 |    100.00 |    100.00 |\n"
        "UPOS       |    100.00 |    100.00 |    100.00 |    100.00\n"
        "UAS        |    100.00 |    100.00 |    100.00 |    100.00\n"
        "LAS        |    100.00 |    100.00 |    100.00 |    100.00\n"
        "CLAS       |    100.00 |    100.00 |    100.00 |    100.00\n");
}

TEST_CASE("conll18: whitespace between tokens does not matter", "[conll18]") {
  const Document gold = make_doc("a b", {{"a", "b"}});
  // Extra spaces, a tab, a newline, U+3000 and U+00A0 between the tokens.
  const Document system = make_doc("a  \t\n\xE3\x80\x80\xC2\xA0" "b", {{"a", "b"}});
  const Conll18Scores s = evaluate_conll18(gold, system);
  check_all_perfect(s);
  check(s.tokens, 2, 2, 2);

  // Inside a token only category Zs goes (as the script strips it from
  // FORMs): "10<U+00A0>000" as one token has the characters of "10" "000".
  const Document one = make_doc("10\xC2\xA0" "000 a", {{"10\xC2\xA0" "000", "a"}});
  const Document two = make_doc("10 000 a", {{"10", "000", "a"}});
  const Conll18Scores t = evaluate_conll18(one, two);
  check(t.tokens, 2, 3, 1);
  check(t.sentences, 1, 1, 1);
}

TEST_CASE("conll18: a system that splits a token, and one that merges two", "[conll18]") {
  const Document gold = make_doc("I cannot go", {{"I/PRON/3/nsubj", "cannot/AUX/3/aux", "go/VERB/0/root"}});
  const Document split_sys = make_doc(
      "I can not go", {{"I/PRON/4/nsubj", "can/AUX/4/aux", "not/PART/4/advmod", "go/VERB/0/root"}});

  const Conll18Scores s = evaluate_conll18(gold, split_sys);
  check(s.tokens, 3, 4, 2);
  CHECK(s.tokens.precision() == Approx(0.5));
  CHECK(s.tokens.recall() == Approx(2.0 / 3));
  CHECK(s.tokens.f1() == Approx(4.0 / 7));
  check(s.sentences, 1, 1, 1);
  check(s.words, 3, 4, 2);
  check(s.upos, 3, 4, 2, 2);
  // I -> go and go -> root on both sides, and go is aligned.
  check(s.uas, 3, 4, 2, 2);
  check(s.las, 3, 4, 2, 2);
  // Content words: gold I, go (aux is functional); system I, not, go.
  check(s.clas, 2, 3, 2, 2);
  // The script's -v table for the same files, its rows for our metrics.
  CHECK(format_conll18(s) ==
        "Metric     | Precision |    Recall |  F1 Score | AligndAcc\n"
        "-----------+-----------+-----------+-----------+-----------\n"
        "Tokens     |     50.00 |     66.67 |     57.14 |\n"
        "Sentences  |    100.00 |    100.00 |    100.00 |\n"
        "Words      |     50.00 |     66.67 |     57.14 |\n"
        "UPOS       |     50.00 |     66.67 |     57.14 |    100.00\n"
        "UAS        |     50.00 |     66.67 |     57.14 |    100.00\n"
        "LAS        |     50.00 |     66.67 |     57.14 |    100.00\n"
        "CLAS       |     66.67 |    100.00 |     80.00 |    100.00\n");

  const Conll18Scores m = evaluate_conll18(split_sys, gold);  // the other way: a merge
  check(m.tokens, 4, 3, 2);
  check(m.words, 4, 3, 2);
  check(m.las, 4, 3, 2, 2);
  check(m.clas, 3, 2, 2, 2);
}

TEST_CASE("conll18: a system that merges two sentences, and one that splits one", "[conll18]") {
  const std::string text = "A b. C d. E f.";
  const Document gold = make_doc(text, {{"A", "b", "."}, {"C", "d", "."}, {"E", "f", "."}});
  // The last two as one sentence: heads renumbered, so the trees are the same
  // but for f, which now hangs from C.
  const Document merged = make_doc(text, {{"A", "b", "."}, {"C", "d", ".", "E/X/1/dep", "f", "."}});
  const Conll18Scores m = evaluate_conll18(gold, merged);
  check(m.sentences, 3, 2, 1);
  check(m.tokens, 9, 9, 9);
  check(m.words, 9, 9, 9);
  // E: gold root, system dep of C. f and the last '.': gold dep of E, system of C.
  check(m.uas, 9, 9, 6, 9);
  check(m.las, 9, 9, 6, 9);

  const Document split = make_doc(text, {{"A", "b"}, {"."}, {"C", "d", "."}, {"E", "f", "."}});
  const Conll18Scores s = evaluate_conll18(gold, split);
  check(s.sentences, 3, 4, 2);
  CHECK(s.sentences.precision() == Approx(0.5));
  CHECK(s.sentences.recall() == Approx(2.0 / 3));
  // The '.' is its sentence's root instead of a dep of A.
  check(s.uas, 9, 9, 8, 9);
}

TEST_CASE("conll18: a multiword token against plain tokens of the same words", "[conll18]") {
  const std::string annotated_words = "do/AUX/4/aux n't/PART/4/advmod";
  const Document mwt = make_doc("I don't know", {{"I/PRON/4/nsubj", "don't=" + annotated_words, "know/VERB/0/root"}});
  const Document plain = make_doc(
      "I do n't know", {{"I/PRON/4/nsubj", "do/AUX/4/aux", "n't/PART/4/advmod", "know/VERB/0/root"}});

  // Gold has the multiword token: its words align with the system's plain
  // ones by form, so every word and every attachment is right, though the
  // tokens "do" and "n't" are not gold's token "don't".
  const Conll18Scores s = evaluate_conll18(mwt, plain);
  check(s.tokens, 3, 4, 2);
  check(s.words, 4, 4, 4);
  check(s.upos, 4, 4, 4, 4);
  check(s.las, 4, 4, 4, 4);

  const Conll18Scores v = evaluate_conll18(plain, mwt);  // and vice versa
  check(v.tokens, 4, 3, 2);
  check(v.words, 4, 4, 4);
  check(v.las, 4, 4, 4, 4);
}

TEST_CASE("conll18: a system multiword token whose words differ", "[conll18]") {
  const Document gold = make_doc("I don't know", {{"I/PRON/4/nsubj", "don't=do/AUX/4/aux n't/PART/4/advmod", "know/VERB/0/root"}});
  // Same token, other words: only the forms in common align.
  const Document other = make_doc("I don't know", {{"I/PRON/4/nsubj", "don't=does/AUX/4/aux not/PART/4/advmod", "know/VERB/0/root"}});
  const Conll18Scores s = evaluate_conll18(gold, other);
  check(s.tokens, 3, 3, 3);
  check(s.words, 4, 4, 2);
  check(s.upos, 4, 4, 2, 2);

  const Document half = make_doc("I don't know", {{"I/PRON/4/nsubj", "don't=does/AUX/4/aux n't/PART/4/advmod", "know/VERB/0/root"}});
  check(evaluate_conll18(gold, half).words, 4, 4, 3);

  // Forms compare case-insensitively (the script lowercases both).
  const Document upper = make_doc("I don't know", {{"I/PRON/4/nsubj", "don't=DO/AUX/4/aux N'T/PART/4/advmod", "know/VERB/0/root"}});
  check(evaluate_conll18(gold, upper).words, 4, 4, 4);
  const Document greek_gold = make_doc("ΑΒ", {{"ΑΒ=Α Β"}});
  const Document greek_sys = make_doc("ΑΒ", {{"ΑΒ=α β"}});
  check(evaluate_conll18(greek_gold, greek_sys).words, 2, 2, 2);
}

TEST_CASE("conll18: wrong heads and labels on aligned words", "[conll18]") {
  const std::string text = "the dog barks loudly";
  const Document gold = make_doc(
      text, {{"the/DET/2/det", "dog/NOUN/3/nsubj", "barks/VERB/0/root", "loudly/ADV/3/advmod"}});
  // dog's label wrong (head right), loudly's head wrong, the's UPOS wrong.
  const Document sys = make_doc(
      text, {{"the/PRON/2/det", "dog/NOUN/3/obj", "barks/VERB/0/root", "loudly/ADV/2/advmod"}});
  const Conll18Scores s = evaluate_conll18(gold, sys);
  check(s.words, 4, 4, 4);
  check(s.upos, 4, 4, 3, 4);
  check(s.uas, 4, 4, 3, 4);
  check(s.las, 4, 4, 2, 4);
  // Content: dog, barks, loudly on both sides (obj is one too).
  check(s.clas, 3, 3, 1, 3);
  CHECK(s.las.aligned_accuracy() == Approx(0.5));

  // A head of -1 (unparsed) is wrong, on either side, even against -1.
  const Document unparsed = make_doc(text, {{"the/DET/_/det", "dog/NOUN/3/nsubj", "barks/VERB/0/root", "loudly"}});
  const Conll18Scores u = evaluate_conll18(gold, unparsed);
  check(u.uas, 4, 4, 2, 4);  // the: unparsed; loudly: head 1 (fake tree)
  check(evaluate_conll18(unparsed, unparsed).uas, 4, 4, 3, 4);
}

TEST_CASE("conll18: relation subtypes are ignored", "[conll18]") {
  const std::string text = "it was eaten yesterday";
  const Document gold = make_doc(
      text, {{"it/PRON/3/nsubj:pass", "was/AUX/3/aux:pass", "eaten/VERB/0/root", "yesterday/NOUN/3/obl:tmod"}});
  const Document sys = make_doc(
      text, {{"it/PRON/3/nsubj", "was/AUX/3/aux", "eaten/VERB/0/root", "yesterday/NOUN/3/nmod:tmod"}});
  const Conll18Scores s = evaluate_conll18(gold, sys);
  check(s.uas, 4, 4, 4, 4);
  // nsubj:pass = nsubj and aux:pass = aux; obl:tmod is not nmod:tmod.
  check(s.las, 4, 4, 3, 4);
  // aux:pass is functional (its universal part is), the others content.
  check(s.clas, 3, 3, 2, 3);
}

TEST_CASE("conll18: texts that differ are an error that says where", "[conll18]") {
  const Document gold = make_doc("I  saw it", {{"I", "saw", "it"}});
  const Document sys = make_doc("I sow it", {{"I", "sow", "it"}});
  try {
    evaluate_conll18(gold, sys);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("at character 2 (gold text byte 4, system text byte 3)") != std::string::npos);
    CHECK(what.find("after \"Is\"") != std::string::npos);
    CHECK(what.find("gold has \"awit\", system has \"owit\"") != std::string::npos);
  }
  // One a prefix of the other.
  const Document shorter = make_doc("I saw", {{"I", "saw"}});
  CHECK_THROWS_WITH(evaluate_conll18(gold, shorter),
                    Catch::Contains("at character 4 (gold text byte 7, system text its end)") &&
                        Catch::Contains("gold has \"it\", system has (end of text)"));
}

// How the script delimits a multiword region (align_words there): it opens at
// a multiword token, takes words in order of start while either side's next
// word is not past the region's end, a multiword token widening the end, a
// plain word that sticks out closing it. Cases from the script's own unit
// tests (as token specs: "abc=a b c" is its "abc a b c"), each with the
// number of words it aligns.
TEST_CASE("conll18: multiword regions as the official script delimits them", "[conll18]") {
  struct Case {
    std::vector<std::string> gold, system;
    long long correct;
  };
  const std::vector<Case> cases = {
      {{"abc=a b c"}, {"a", "b", "c"}, 3},
      {{"a", "bc=b c", "d"}, {"a", "b", "c", "d"}, 4},
      {{"abcd=a b c d"}, {"ab=a b", "cd=c d"}, 4},
      // Regions chain: "abc" and "bcd" overlap, then "bcd" and "de".
      {{"abc=a b c", "de=d e"}, {"a", "bcd=b c d", "e"}, 5},
      {{"abcd"}, {"a", "b", "c", "d"}, 0},
      {{"abc", "d"}, {"a", "b", "c", "d"}, 1},
      {{"a", "bc", "d"}, {"a", "b", "c", "d"}, 2},
      // The plain "cd" sticks out of gold's "bc" region: it closes the region
      // (so "c" finds nothing) and cannot align by span either.
      {{"a", "bc=b c", "d"}, {"a", "b", "cd"}, 2},
      {{"abc=a BX c", "def=d EX f"}, {"ab=a b", "cd=c d", "ef=e f"}, 4},
      {{"ab=a b", "cd=bc d"}, {"a", "bc", "d"}, 2},
      {{"a", "bc=b c", "d"}, {"ab=AX BX", "cd=CX a"}, 1},
  };
  for (const Case& c : cases) {
    std::string text;
    for (const std::string& t : c.gold) text += t.substr(0, t.find('='));
    std::string sys_text;
    for (const std::string& t : c.system) sys_text += t.substr(0, t.find('=')) + " ";
    INFO(text << " vs " << sys_text);
    const Conll18Scores s = evaluate_conll18(make_doc(text, {c.gold}), make_doc(sys_text, {c.system}));
    CHECK(s.words.correct == c.correct);
  }
  // A plain word that sticks out is left out of the region even when its form
  // is in it: gold "bc" as "b" "cd" opens a region [0, 2); the system's "cd"
  // [1, 3) ends after it, so only "b" aligns there, and "cd" meets gold's "d"
  // [2, 3) by span, which differs. The script counts 1 word, not 2.
  check(evaluate_conll18(make_doc("bcd", {{"bc=b cd", "d"}}), make_doc("b cd", {{"b", "cd"}})).words, 3, 2, 1);
}

// A subtle case of the script's rule: when a multiword token opens a region,
// the other side's current word is passed over if it is plain and starts
// earlier, but only that one word. A second earlier plain word falls into the
// region and can align by form with a word of the multiword token.
TEST_CASE("conll18: only one earlier plain word is kept out of a region", "[conll18]") {
  // Gold: plain "ab", then "cd" as the words "b" "d". System: a b c d.
  // Span alignment passes gold "ab" (its start ties with "a"), and the region
  // at "cd" passes system "a" only: system "b" is in it and aligns with gold
  // "b", then "d" with "d".
  const Document gold = make_doc("abcd", {{"ab", "cd=b d"}});
  const Document sys = make_doc("a b c d", {{"a", "b", "c", "d"}});
  check(evaluate_conll18(gold, sys).words, 3, 4, 2);
  // The word passed over cannot align by form: gold "cd" as "a" "d" aligns
  // only "d" (the system's "a" was passed over; "b" and "c" match nothing).
  check(evaluate_conll18(make_doc("abcd", {{"ab", "cd=a d"}}), sys).words, 3, 4, 1);
  // Two earlier plain words, "b" and "c": "b" is passed over, "c" is in.
  check(evaluate_conll18(make_doc("abcde", {{"abc", "de=b c"}}), make_doc("a b c d e", {{"a", "b", "c", "d", "e"}}))
            .words,
        3, 5, 2);
}

TEST_CASE("conll18: heads across a multiword region", "[conll18]") {
  // System words aligned by LCS keep their heads through the alignment: the
  // system's "n't" hangs from its "know", aligned to gold's "know".
  const Document gold = make_doc("I don't know", {{"I/PRON/4/nsubj", "don't=do/AUX/4/aux n't/PART/4/advmod", "know/VERB/0/root"}});
  const Document sys = make_doc("I don't know", {{"I/PRON/4/nsubj", "don't=does/AUX/4/aux n't/PART/4/advmod", "know/VERB/0/root"}});
  const Conll18Scores s = evaluate_conll18(gold, sys);
  check(s.uas, 4, 4, 3, 3);  // I, n't, know; "does" is not aligned
  // A system head that is not aligned is wrong: "I" now hangs from "does".
  const Document sys2 = make_doc("I don't know", {{"I/PRON/2/nsubj", "don't=does/AUX/4/aux n't/PART/4/advmod", "know/VERB/0/root"}});
  const Document gold2 = make_doc("I don't know", {{"I/PRON/2/nsubj", "don't=do/AUX/4/aux n't/PART/4/advmod", "know/VERB/0/root"}});
  check(evaluate_conll18(gold2, sys2).uas, 4, 4, 2, 3);
}

TEST_CASE("conll18: scores of nothing, and malformed documents", "[conll18]") {
  const Score empty;
  CHECK(empty.precision() == 0.0);
  CHECK(empty.recall() == 0.0);
  CHECK(empty.f1() == 0.0);
  CHECK_FALSE(empty.has_aligned_accuracy());

  const Document good = make_doc("a b", {{"a", "b"}});
  Document bad = good;
  bad.sentences[0].tokens[1].first_word = 0;  // words not covered in order
  CHECK_THROWS_AS(evaluate_conll18(good, bad), Error);
  const Document three = make_doc("a b c", {{"a", "b", "c"}});
  bad = three;
  bad.sentences[0].tokens[1].first_word = 2;  // word 1 skipped (the last two tokens both word 2)
  CHECK_THROWS_AS(evaluate_conll18(three, bad), Error);
  bad = good;
  bad.sentences[0].words[1].head = 3;  // outside the sentence
  CHECK_THROWS_AS(evaluate_conll18(bad, good), Error);
  bad = good;
  bad.sentences[0].tokens[1].span.bytes = {0, 1};  // before the previous token's end
  CHECK_THROWS_AS(evaluate_conll18(good, bad), Error);
}
