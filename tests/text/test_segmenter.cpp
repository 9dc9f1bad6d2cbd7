// The tokenizer's network, its inputs and the multiword expander: gradients by
// central differences in double, pieces that give the whole paragraph's
// scores, thread-count independence, the classes, and the learned splits.
#include <synattn/text/multiword.hpp>
#include <synattn/text/segmenter_labels.hpp>
#include <synattn/text/segmenter_net.hpp>
#include <synattn/text/tokenizer_training.hpp>
#include <synattn/util/parallel.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "support/gradcheck.hpp"

using namespace synattn;
using namespace synattn::text;

namespace {

SegmenterNetOptions small_options() {
  SegmenterNetOptions o;
  o.num_chars = 12;
  o.char_dim = 3;
  o.channels = 4;
  o.dilations = {1, 2, 3};
  o.classes = kSegmenterClasses;
  return o;
}

// Two pieces of 7 and 5 characters with gaps of max_dilation() around them.
CharIds two_pieces(int gap) {
  CharIds ids(static_cast<std::size_t>(gap), 0);
  for (int id : {3, 5, 11, 2, 2, 7, 9}) ids.push_back(id);
  ids.insert(ids.end(), static_cast<std::size_t>(gap), 0);
  for (int id : {4, 6, 1, 8, 10}) ids.push_back(id);
  ids.insert(ids.end(), static_cast<std::size_t>(gap), 0);
  return ids;
}

}  // namespace

TEST_CASE("SegmenterNet: every parameter's gradient matches central differences (double)") {
  const SegmenterNetOptions o = small_options();
  SegmenterNet<double> net(o, RandomStream(7));
  const CharIds ids = two_pieces(o.max_dilation());
  const auto N = static_cast<Index>(ids.size());
  std::vector<std::int8_t> labels(ids.size());
  std::vector<char> counted(ids.size());
  for (std::size_t p = 0; p < ids.size(); ++p) {
    labels[p] = static_cast<std::int8_t>((p * 7) % kSegmenterClasses);
    counted[p] = ids[p] != 0 && p % 5 != 0;  // some characters are margin
  }
  RowMajorMatrix<double> logits(N, o.classes), dlogits;
  SegmenterCache<double> cache;
  const auto loss = [&]() {
    RowMajorMatrix<double> l(N, o.classes), d;
    SegmenterCache<double> c;
    net.forward(ids, c, l);
    return segmenter_loss(l, labels, counted, d);
  };
  net.forward(ids, cache, logits);
  segmenter_loss(logits, labels, counted, dlogits);
  net.zero_grad();
  net.backward(cache, dlogits);
  auto& store = net.parameter_store();
  for (int p = 0; p < store.count(); ++p) {
    const synattn_test::MatrixD analytic = store.gradient(p);
    auto value = store.value(p);
    const auto r = synattn_test::check_gradient(store.info(p).name, value, analytic, loss);
    INFO(r.describe());
    CHECK(r.passes(1e-6, 1e-9));
    CHECK(r.norm > 0);  // the check compares something
  }
}

TEST_CASE("SegmenterNet: the loss gradient with respect to the logits matches central differences") {
  RowMajorMatrix<double> logits(4, kSegmenterClasses);
  for (Index i = 0; i < logits.size(); ++i) logits.data()[i] = std::sin(1.7 * static_cast<double>(i));
  const std::vector<std::int8_t> labels{0, 3, 2, 4};
  const std::vector<char> counted{1, 0, 1, 1};
  RowMajorMatrix<double> d;
  segmenter_loss(logits, labels, counted, d);
  const synattn_test::MatrixD analytic = d;
  const auto r = synattn_test::check_gradient(
      "logits", logits, analytic, [&]() {
        RowMajorMatrix<double> unused;
        return segmenter_loss(logits, labels, counted, unused);
      });
  INFO(r.describe());
  CHECK(r.passes(1e-7, 1e-10));
  CHECK(d.row(1).isZero());  // an uncounted row gets no gradient
}

TEST_CASE("SegmenterNet: pieces never see each other, and infer() equals forward()") {
  // Equal up to rounding only: the product kernel is chosen by the shape
  // (kernels/product.hpp), and the shapes differ with the batch.
  const SegmenterNetOptions o = small_options();
  SegmenterNet<float> net(o, RandomStream(3));
  const int gap = o.max_dilation();
  const CharIds both = two_pieces(gap);
  // The first piece alone, with its own gaps.
  CharIds first(static_cast<std::size_t>(gap), 0);
  for (int id : {3, 5, 11, 2, 2, 7, 9}) first.push_back(id);
  first.insert(first.end(), static_cast<std::size_t>(gap), 0);
  RowMajorMatrix<float> a(static_cast<Index>(both.size()), o.classes), b(static_cast<Index>(first.size()), o.classes),
      c(static_cast<Index>(both.size()), o.classes);
  SegmenterCache<float> cache;
  SegmenterWorkspace<float> ws;
  net.forward(both, cache, a);
  net.infer(first, ws, b);
  net.infer(both, ws, c);
  CHECK(a.middleRows(gap, 7).isApprox(b.middleRows(gap, 7), 1e-5f));
  CHECK(a == c);
}

TEST_CASE("SegmenterNet: refuses ids out of range, characters in the end gaps and a foreign cache") {
  const SegmenterNetOptions o = small_options();
  SegmenterNet<float> net(o, RandomStream(3)), other(o, RandomStream(4));
  CharIds ids = two_pieces(o.max_dilation());
  RowMajorMatrix<float> logits(static_cast<Index>(ids.size()), o.classes);
  SegmenterCache<float> cache;
  CharIds bad = ids;
  bad[5] = 12;
  CHECK_THROWS_WITH(net.forward(bad, cache, logits), Catch::Contains("outside [0, 12)"));
  bad = ids;
  bad[0] = 2;
  CHECK_THROWS_WITH(net.forward(bad, cache, logits), Catch::Contains("must be gaps"));
  net.forward(ids, cache, logits);
  CHECK_THROWS_WITH(other.backward(cache, logits), Catch::Contains("not filled by this network"));
}

TEST_CASE("split_paragraphs: blank lines end paragraphs, single line breaks do not") {
  const std::u32string s = U"  One two.\nThree.\r\n\r\nFour\n \t\nfive \u2029six\n";
  const std::vector<char32_t> cps(s.begin(), s.end());
  const std::vector<Paragraph> p = split_paragraphs(cps);
  REQUIRE(p.size() == 4);
  const auto text = [&](const Paragraph& q) { return std::u32string(s.begin() + q.begin, s.begin() + q.end); };
  CHECK(text(p[0]) == U"One two.\nThree.");
  CHECK(text(p[1]) == U"Four");
  CHECK(text(p[2]) == U"five");
  CHECK(text(p[3]) == U"six");
  CHECK(split_paragraphs({}).empty());
  const std::u32string blank = U" \n\n\t ";
  CHECK(split_paragraphs(std::vector<char32_t>(blank.begin(), blank.end())).empty());
}

TEST_CASE("paragraph_pieces: cores tile the paragraph, margins stay inside it") {
  const Paragraph para{10, 35};
  const auto pieces = paragraph_pieces(para, 8, 3);
  REQUIRE(pieces.size() == 4);
  int next = 10;
  for (const Piece& p : pieces) {
    CHECK(p.core_begin == next);
    CHECK(p.begin == std::max(10, p.core_begin - 3));
    CHECK(p.end == std::min(35, p.core_end + 3));
    next = p.core_end;
  }
  CHECK(next == 35);
}

TEST_CASE("CharVocabulary: seen characters get ids, the rest their class; JSON round trip") {
  const std::u32string s = U"aab\u00e9\u00e9 \u4e2d";
  const std::vector<char32_t> cps(s.begin(), s.end());
  const CharVocabulary v = CharVocabulary::build({&cps}, 2);
  CHECK(v.size() == CharVocabulary::kFirstChar + 2);  // 'a' and U+00E9
  CHECK(v.id(U'a') >= CharVocabulary::kFirstChar);
  CHECK(v.id(U'b') == 1 + static_cast<int>(CharClass::Lower));
  CHECK(v.id(U'Q') == 1 + static_cast<int>(CharClass::Upper));
  CHECK(v.id(U'\u00a0') == 1);
  CHECK(v.id(U'\u4e2d') == 1 + static_cast<int>(CharClass::Cjk));
  const CharVocabulary back = CharVocabulary::from_json(v.to_json());
  CHECK(back.size() == v.size());
  CHECK(back.id(U'\u00e9') == v.id(U'\u00e9'));
  CHECK_THROWS_WITH(CharVocabulary::from_json("[97, 97]"), Catch::Contains("twice"));
  CHECK_THROWS_WITH(CharVocabulary::from_json("[1114112]"), Catch::Contains("not a code point"));
  CHECK_THROWS(CharVocabulary::from_json("{"));
}

namespace {

// A sentence of tokens, each given as its form and, for a multiword token, its words.
struct TokenSpec {
  std::string form;
  std::vector<std::string> words;
};
Sentence sentence_of(const std::vector<TokenSpec>& specs) {
  Sentence s;
  for (const auto& t : specs) {
    Token tok;
    tok.form = t.form;
    tok.first_word = static_cast<int>(s.words.size());
    const std::vector<std::string> forms = t.words.empty() ? std::vector<std::string>{t.form} : t.words;
    tok.word_count = static_cast<int>(forms.size());
    for (const auto& f : forms) {
      Word w;
      w.form = f;
      s.words.push_back(w);
    }
    s.tokens.push_back(tok);
  }
  return s;
}

}  // namespace

TEST_CASE("MultiwordExpander: seen splits, learned tails for unseen tokens, case, and no rule") {
  Document doc;
  doc.sentences.push_back(sentence_of({{"don't", {"do", "n't"}}, {"cannot", {"can", "not"}}, {"del", {"de", "el"}},
                                       {"didn't", {"did", "n't"}}, {"don't", {"do", "n't"}}, {"al", {"a", "el"}},
                                       {"gonna", {"gon", "na"}}}));
  const MultiwordExpander e = MultiwordExpander::learn({&doc});
  CHECK(e.expand("don't") == std::vector<std::string>{"do", "n't"});
  CHECK(e.expand("DON'T") == std::vector<std::string>{"DO", "N'T"});
  CHECK(e.expand("shouldn't") == std::vector<std::string>{"should", "n't"});  // unseen: the "n't" tail
  CHECK(e.expand("del") == std::vector<std::string>{"de", "el"});
  CHECK(e.expand("DEL") == std::vector<std::string>{"DE", "EL"});
  CHECK(e.expand("cannot") == std::vector<std::string>{"can", "not"});
  CHECK(e.expand("wanna") == std::vector<std::string>{"wan", "na"});  // unseen: the "na" tail of "gonna"
  CHECK(e.expand("xyz").empty());  // no rule ends in a tail of "xyz"
  CHECK(e.always_split("DON'T"));   // split both times it was seen
  CHECK(!e.always_split("didn't")); // seen once only
  CHECK(!e.always_split("xyz"));
  CHECK(e.expand("x").empty());
  const MultiwordExpander back = MultiwordExpander::from_json(e.to_json());
  CHECK(back.expand("shouldn't") == e.expand("shouldn't"));
  CHECK(back.expand("del") == e.expand("del"));
  CHECK(back.dictionary_size() == e.dictionary_size());
  CHECK(back.always_split("don't"));
  CHECK_THROWS_WITH(MultiwordExpander::from_json(R"({"dictionary": [], "always": [], "rules": [{"tail": "a", "replacement": "", "words": ["b"], "count": 0}]})"),
                    Catch::Contains("count"));
}

TEST_CASE("gold_classes: token, sentence and multiword ends") {
  Document doc;
  doc.text = "I don't. Go";
  Sentence a = sentence_of({{"I", {}}, {"don't", {"do", "n't"}}, {".", {}}});
  a.tokens[0].span.code_points = {0, 1};
  a.tokens[1].span.code_points = {2, 7};
  a.tokens[2].span.code_points = {7, 8};
  Sentence b = sentence_of({{"Go", {}}});
  b.tokens[0].span.code_points = {9, 11};
  doc.sentences = {a, b};
  const auto cls = gold_classes(doc, 11);
  const std::vector<std::int8_t> want{1, 0, 0, 0, 0, 0, 3, 2, 0, 0, 2};
  CHECK(cls == want);
}
