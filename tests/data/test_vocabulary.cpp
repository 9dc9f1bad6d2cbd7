// Vocabulary (ids by count, ties by first appearance) and label set.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include <synattn/data/vocabulary.hpp>

using namespace synattn;

namespace {
TaggedSentence sentence(std::vector<std::string> forms, std::vector<std::string> labels) {
  TaggedSentence s;
  s.forms = std::move(forms);
  s.labels = std::move(labels);
  return s;
}
}  // namespace

TEST_CASE("vocabulary ids: pad, unk, then by descending count, ties by first appearance", "[vocabulary]") {
  const std::vector<TaggedSentence> c{sentence({"b", "a", "c", "a"}, {}), sentence({"d", "c", "a", "e"}, {})};
  const Vocabulary v = Vocabulary::build(c);
  // counts: a 3, c 2, b 1, d 1, e 1 (b before d before e by first appearance)
  CHECK(v.words() == std::vector<std::string>{"<pad>", "<unk>", "a", "c", "b", "d", "e"});
  CHECK(v.size() == 7);
  CHECK(v.id("a") == 2);
  CHECK(v.id("zzz") == Vocabulary::kUnk);
  CHECK(v.count(v.id("a")) == 3);
  CHECK(v.count(Vocabulary::kPad) == 0);
  CHECK(v.is_singleton(v.id("e")));
  CHECK_FALSE(v.is_singleton(v.id("c")));
  CHECK_FALSE(v.is_singleton(Vocabulary::kUnk));
  CHECK(v.word(3) == "c");
  CHECK_THROWS_WITH(v.count(7), Catch::Contains("Vocabulary::count: id 7 out of range [0, 7)"));
  CHECK_THROWS_WITH(v.is_singleton(-1), Catch::Contains("id -1 out of range"));
}

TEST_CASE("a vocabulary built from a subset sees only those sentences, in the subset's order",
          "[vocabulary]") {
  const std::vector<TaggedSentence> c{sentence({"x", "y"}, {}), sentence({"y", "z"}, {}),
                                      sentence({"w"}, {})};
  const std::vector<std::size_t> subset{2, 1};
  const Vocabulary v = Vocabulary::build(c, &subset);
  CHECK(v.words() == std::vector<std::string>{"<pad>", "<unk>", "w", "y", "z"});
  CHECK_FALSE(v.contains("x"));
  const std::vector<std::size_t> bad{0, 3};
  CHECK_THROWS_WITH(Vocabulary::build(c, &bad), Catch::Contains("indices[1] = 3, expected < 3"));
}

TEST_CASE("label set: sorted names, unknown labels are ignored and counted", "[vocabulary]") {
  const std::vector<TaggedSentence> train{sentence({"a", "b"}, {"nsubj", "root"}),
                                          sentence({"c"}, {"det"})};
  const LabelSet l = LabelSet::build(train);
  CHECK(l.names() == std::vector<std::string>{"det", "nsubj", "root"});
  CHECK(l.id("nsubj") == 1);
  CHECK(l.id("reparandum") == LabelSet::kIgnore);
  CHECK(LabelSet::kIgnore == -100);
  CHECK(l.name(2) == "root");
  CHECK_THROWS_WITH(l.name(3), Catch::Contains("LabelSet::name: id 3 out of range [0, 3)"));
  const std::vector<TaggedSentence> dev{sentence({"a", "b", "c"}, {"det", "dep", "vocative"})};
  CHECK(l.count_ignored(dev) == 2);
}

TEST_CASE("the EWT train file gives the base relations and a deterministic vocabulary", "[vocabulary][ewt]") {
  const std::string ewt = std::string(SYNATTN_SOURCE_DIR) + "/data/ud/UD_English-EWT/";
  const auto train = load_tagging_corpus(ewt + "en_ewt-ud-train.conllu");
  const LabelSet labels = LabelSet::build(train);
  CHECK(labels.size() >= 30);
  CHECK(labels.size() <= 40);
  for (const std::string& n : labels.names()) CHECK(n.find(':') == std::string::npos);
  const auto dev = load_tagging_corpus(ewt + "en_ewt-ud-dev.conllu");
  CHECK(labels.count_ignored(dev) < 10);
  const Vocabulary v = Vocabulary::build(train);
  CHECK(v.word(2) == "the");  // the commonest lower-cased FORM (9075; awk + sort + uniq -c)
  CHECK(v.count(2) == 9075);
  for (int id = 3; id < v.size(); ++id) REQUIRE(v.count(id) <= v.count(id - 1));
}
