// Trees from elsewhere: the noise model's properties over every
// sentence of EWT dev and train (always one tree with one root, the realised
// UAS, determinism by seed, uniform choice among the candidates), and tree
// files matched to a corpus by sent_id and forms, with every mismatch refused
// by name and nothing changed.
#include <catch2/catch.hpp>

#include <synattn/data/token_batch.hpp>
#include <synattn/data/tree_source.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_data.hpp"

using namespace synattn;

namespace {

// In-subtree test by walking up from `j` (the reference for the candidate rule).
bool in_subtree_of(const std::vector<int>& heads, int j, int i) {
  for (int k = j; k >= 0; k = heads[static_cast<std::size_t>(k)])
    if (k == i) return true;
  return false;
}

std::vector<ConlluSentence> conllu(const std::string& text) {
  std::istringstream in(text);
  return read_conllu(in, "trees.conllu");
}

std::vector<TaggedSentence> corpus(const std::string& text) {
  std::istringstream in(text);
  return read_tagging_corpus(in, "corpus.conllu");
}

const char* const kCorpus =
    "# sent_id = a\n"
    "1\tThe\t_\tDET\t_\t_\t2\tdet\t_\t_\n"
    "2\tCat\t_\tNOUN\t_\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\t_\tVERB\t_\t_\t0\troot\t_\t_\n\n"
    "# sent_id = b\n"
    "1\tGo\t_\tVERB\t_\t_\t0\troot\t_\t_\n"
    "2\t!\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n";

// Every sentence's heads, those of its tree, and the heads of each further view: all a tree source may change.
std::vector<std::vector<int>> all_heads(const std::vector<TaggedSentence>& c) {
  std::vector<std::vector<int>> out;
  for (const TaggedSentence& s : c) {
    out.push_back(s.heads);
    for (int v = 0; v < s.views(); ++v) out.push_back(s.view_tree(v).heads());
  }
  return out;
}

// A tree file for kCorpus in another order, with another casing and a sentence the corpus lacks.
const char* const kOtherTrees =
    "# sent_id = extra\n1\tx\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    "# sent_id = b\n1\tGO\t_\t_\t_\t_\t2\tdep\t_\t_\n2\t!\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    "# sent_id = a\n1\tthe\t_\t_\t_\t_\t3\tx\t_\t_\n2\tcat\t_\t_\t_\t_\t3\tx\t_\t_\n"
    "3\tsat\t_\t_\t_\t_\t0\troot\t_\t_\n\n";

// Tree files that do not fit the corpus kCorpus (sentences a, then b), for
// every function that aligns a tree file (replace_trees, add_tree_view), and
// what the refusal says.
const std::string kSentenceB = "# sent_id = b\n1\tGo\t_\t_\t_\t_\t0\troot\t_\t_\n2\t!\t_\t_\t_\t_\t1\tpunct\t_\t_\n\n";
struct AlignmentRefusal {
  const char* what;
  std::string trees, message;
};
std::vector<AlignmentRefusal> alignment_refusals() {
  const std::string& b = kSentenceB;
  return {
      {"a sentence missing", b, "corpus.conllu:1: sentence a has no tree in trees.conllu"},
      {"another word count", b + "# sent_id = a\n1\tthe\t_\t_\t_\t_\t0\troot\t_\t_\n2\tcat\t_\t_\t_\t_\t1\tx\t_\t_\n\n",
       "trees.conllu:5: sentence a has 2 words but 3 in corpus.conllu (line 1)"},
      {"another form",
       b + "# sent_id = a\n1\tthe\t_\t_\t_\t_\t2\tx\t_\t_\n2\tdog\t_\t_\t_\t_\t3\tx\t_\t_\n"
           "3\tsat\t_\t_\t_\t_\t0\troot\t_\t_\n\n",
       "trees.conllu:5: sentence a: word 2 is 'dog' but 'cat' in corpus.conllu (line 1)"},
      {"a sentence twice", b + b, "trees.conllu:5: sentence b appears twice (first at line 1)"},
      {"no sent_id", "1\tGo\t_\t_\t_\t_\t0\troot\t_\t_\n\n", "trees.conllu:1: sentence #1 (line 1) has no sent_id"},
  };
}

}  // namespace

TEST_CASE("corrupt_heads over every EWT dev and train sentence: one tree, one root, wrong heads only, the UAS",
          "[tree_source][noise][treebank]") {
  for (const std::string split : {"dev", "train"}) {
    const std::vector<ConlluSentence> sentences = read_conllu(synattn_test::ewt(split));
    for (const double p : {0.0, 0.05, 0.1, 0.16, 0.32, 0.6, 1.0}) {
      INFO(split << ", p = " << p);
      const RandomStream stream = RandomStream(7).derive(static_cast<std::uint64_t>(p * 1000));
      std::size_t words = 0, non_root = 0, same = 0;
      for (std::size_t k = 0; k < sentences.size(); ++k) {
        const std::vector<int> gold = sentences[k].heads();
        const std::vector<int> got = corrupt_heads(gold, p, stream.derive(k), sentences[k].label());
        REQUIRE_NOTHROW(validate_heads(got, Structure::Tree, sentences[k].label()));
        for (std::size_t i = 0; i < gold.size(); ++i) {
          if (gold[i] < 0) {
            REQUIRE(got[i] < 0);  // the root stays the root
            continue;
          }
          ++non_root;
        }
        same += correct_heads(gold, got);
        words += gold.size();
      }
      const double uas = static_cast<double>(same) / static_cast<double>(words);
      // The expected UAS: about 1 - p * (share of non-root words). Words with no candidate keep their head
      // whatever p is: the one dependent of a two-word sentence's root, and the root's only child once
      // the words before it have moved under it, which only many moves make common (p = 1: 2.7 points
      // above the formula on train, 4.1 on dev).
      const double expected = 1.0 - p * static_cast<double>(non_root) / static_cast<double>(words);
      if (p <= 0.6)
        CHECK(std::abs(uas - expected) <= 0.01);
      else
        CHECK((uas >= expected && uas - expected <= 0.05));
      if (p == 0.0) CHECK(same == words);
    }
  }
}

TEST_CASE("corrupt_heads is a function of its stream, re-attaches outside the word's subtree, uniformly",
          "[tree_source][noise]") {
  // 0 <- 1 <- 2, 1 <- 3, 0 <- 4 <- 5 (word 0 the root).
  const std::vector<int> heads{-1, 0, 1, 1, 0, 4};
  const RandomStream s(42);
  CHECK(corrupt_heads(heads, 0.5, s) == corrupt_heads(heads, 0.5, s));
  int differ = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed)
    differ += corrupt_heads(heads, 0.5, RandomStream(seed)) != corrupt_heads(heads, 0.5, RandomStream(seed + 100));
  CHECK(differ >= 15);
  CHECK(corrupt_heads(heads, 0.0, s) == heads);

  // With p = 1 word 1 (visited first, heads still gold) may go to 4 or 5 only:
  // 0 is its head, 1, 2 and 3 its subtree. Each of the two about half the time.
  std::map<int, int> chosen;
  const int draws = 4000;
  for (int d = 0; d < draws; ++d) {
    const std::vector<int> got = corrupt_heads(heads, 1.0, RandomStream(static_cast<std::uint64_t>(d)));
    ++chosen[got[1]];
    REQUIRE(got[1] != heads[1]);  // p = 1: the first word visited always has a candidate and moves
    for (std::size_t i = 1; i < heads.size(); ++i) REQUIRE(got[i] >= 0);
  }
  REQUIRE(chosen.size() == 2);
  CHECK(chosen.count(4) == 1);
  CHECK(chosen.count(5) == 1);
  CHECK(std::abs(chosen[4] - draws / 2) < 4 * 32);  // 4 standard deviations of a fair coin (sqrt(4000) / 2)

  // The rule itself on random streams: the new head is never the old one nor inside the moved word's subtree
  // as it stood at its visit (checked by replaying the visits).
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    std::vector<int> current = heads;
    const std::vector<int> got = corrupt_heads(heads, 0.7, RandomStream(seed));
    for (std::size_t i = 0; i < heads.size(); ++i) {
      if (got[i] == current[i]) continue;
      REQUIRE(!in_subtree_of(current, got[i], static_cast<int>(i)));
      current[i] = got[i];
    }
    REQUIRE(current == got);
  }

  CHECK_THROWS_WITH(corrupt_heads(heads, 1.5, s), Catch::Contains("corrupt_heads: p must be in [0, 1]"));
  CHECK_THROWS_AS(corrupt_heads({-1, -1}, 0.5, s, "two roots"), TreeError);
  CHECK(corrupt_heads({}, 0.5, s).empty());
  CHECK(corrupt_heads({-1}, 1.0, s) == std::vector<int>{-1});
  CHECK(corrupt_heads({-1, 0}, 1.0, s) == std::vector<int>{-1, 0});  // no candidate: keeps its head
}

TEST_CASE("corrupt_trees keys each sentence by its index; tree_agreement is the UAS", "[tree_source][noise]") {
  const std::vector<TaggedSentence> gold = load_tagging_corpus(synattn_test::ewt("dev"));
  std::vector<TaggedSentence> all = gold;
  corrupt_trees(all, 0.2, RandomStream(3));
  // The second half alone, keyed from its first index, gets the same trees.
  std::vector<TaggedSentence> half(gold.begin() + 1000, gold.end());
  corrupt_trees(half, 0.2, RandomStream(3), 1000);
  for (std::size_t k = 0; k < half.size(); ++k) {
    REQUIRE(half[k].heads == all[k + 1000].heads);
    REQUIRE(half[k].tree.heads() == half[k].heads);
  }
  // Any subset in any order, keyed by file index.
  const std::vector<std::size_t> keys{1500, 3, 700};
  std::vector<TaggedSentence> picked{gold[1500], gold[3], gold[700]};
  corrupt_trees(picked, 0.2, RandomStream(3), keys);
  for (std::size_t k = 0; k < keys.size(); ++k) CHECK(picked[k].heads == all[keys[k]].heads);
  CHECK_THROWS_WITH(corrupt_trees(picked, 0.2, RandomStream(3), std::vector<std::size_t>{1}),
                    Catch::Contains("corrupt_trees: 1 keys for 3 sentences"));
  const double uas = tree_agreement(gold, all);
  CHECK(uas > 79.0);
  CHECK(uas < 84.0);
  CHECK(tree_agreement(gold, gold) == 100.0);
  // Another view: the corrupted trees as view 1 of the gold corpus score as they do as view 0.
  std::vector<TaggedSentence> viewed = gold;
  for (std::size_t k = 0; k < viewed.size(); ++k) viewed[k].view_trees.push_back(all[k].tree);
  CHECK(tree_agreement(gold, viewed, 1) == uas);
  CHECK(tree_agreement(gold, viewed, 0) == 100.0);
  CHECK_THROWS_WITH(tree_agreement(gold, viewed, 2), Catch::Contains("has 2 tree views, asked for view 2"));
  CHECK_THROWS_WITH(tree_agreement(gold, half), Catch::Contains("2001 gold sentences but 1001"));
}

TEST_CASE("replace_trees takes heads by sent_id and forms, and refuses every mismatch by name",
          "[tree_source][align]") {
  const std::vector<TaggedSentence> original = corpus(kCorpus);
  SECTION("a superset in another order, other casing: the heads are replaced, words and labels kept") {
    std::vector<TaggedSentence> c = original;
    replace_trees(c,
                  conllu("# sent_id = extra\n1\tx\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
                         "# sent_id = b\n1\tGO\t_\t_\t_\t_\t2\tdep\t_\t_\n2\t!\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
                         "# sent_id = a\n1\tthe\t_\t_\t_\t_\t3\tx\t_\t_\n2\tcat\t_\t_\t_\t_\t3\tx\t_\t_\n"
                         "3\tsat\t_\t_\t_\t_\t0\troot\t_\t_\n\n"),
                  "corpus.conllu", "trees.conllu");
    CHECK(c[0].heads == std::vector<int>{2, 2, -1});
    CHECK(c[0].tree.heads() == c[0].heads);
    CHECK(c[1].heads == std::vector<int>{1, -1});
    CHECK(c[0].labels == original[0].labels);
    CHECK(c[0].forms == original[0].forms);
  }
  const auto refused = [&](const std::string& trees, const std::string& message) {
    std::vector<TaggedSentence> c = original;
    CHECK_THROWS_WITH(replace_trees(c, conllu(trees), "corpus.conllu", "trees.conllu"), Catch::Contains(message));
    for (std::size_t k = 0; k < c.size(); ++k) CHECK(c[k].heads == original[k].heads);  // unchanged
  };
  for (const AlignmentRefusal& r : alignment_refusals()) {
    INFO(r.what);
    refused(r.trees, r.message);
  }
  const std::string b = kSentenceB;
  SECTION("a corpus sentence without a sent_id") {
    std::vector<TaggedSentence> c = corpus("1\tGo\t_\tVERB\t_\t_\t0\troot\t_\t_\n\n");
    CHECK_THROWS_WITH(replace_trees(c, conllu(b), "corpus.conllu", "trees.conllu"),
                      Catch::Contains("has no tree in trees.conllu (it has no sent_id to match by)"));
  }
  // Issue 44 §5: the made-up name "#1 (line 1)" of a sentence without a
  // sent_id was matched by a tree file whose sent_id is that string.
  SECTION("a tree file whose sent_id is a made-up name is not matched to a sentence without one") {
    std::vector<TaggedSentence> c = corpus("1\tGo\t_\tVERB\t_\t_\t0\troot\t_\t_\n\n");
    REQUIRE(c[0].id == "#1 (line 1)");
    CHECK_THROWS_WITH(replace_trees(c, conllu("# sent_id = #1 (line 1)\n1\tGo\t_\t_\t_\t_\t0\tdep\t_\t_\n\n"),
                                    "corpus.conllu", "trees.conllu"),
                      Catch::Contains("it has no sent_id to match by"));
  }
}

TEST_CASE("replace_trees with a real treebank's own trees changes nothing", "[tree_source][align][treebank]") {
  const std::string path = synattn_test::ewt("dev");
  std::vector<TaggedSentence> c = load_tagging_corpus(path);
  const std::vector<TaggedSentence> before = c;
  replace_trees(c, read_conllu(path), path, path);
  REQUIRE(c.size() == before.size());
  for (std::size_t k = 0; k < c.size(); ++k) REQUIRE(c[k].heads == before[k].heads);
}

TEST_CASE("add_tree_view appends a view matched as replace_trees matches; replace_trees keeps the views",
          "[tree_source][align][views]") {
  const std::vector<TaggedSentence> original = corpus(kCorpus);
  std::vector<TaggedSentence> c = original;
  add_tree_view(c, conllu(kOtherTrees), "corpus.conllu", "trees.conllu");
  REQUIRE(c[0].views() == 2);
  REQUIRE(c[1].views() == 2);
  CHECK(c[0].view_tree(1).heads() == std::vector<int>{2, 2, -1});
  CHECK(c[1].view_tree(1).heads() == std::vector<int>{1, -1});
  for (std::size_t k = 0; k < c.size(); ++k) {  // view 0, words and labels are the corpus's own
    CHECK(c[k].heads == original[k].heads);
    CHECK(c[k].tree.heads() == original[k].heads);
    CHECK(c[k].forms == original[k].forms);
    CHECK(c[k].labels == original[k].labels);
  }
  add_tree_view(c, conllu(kCorpus), "corpus.conllu", "corpus.conllu");  // view 2: the gold trees again
  REQUIRE(c[0].views() == 3);
  CHECK(c[0].view_tree(2).heads() == original[0].heads);

  // replace_trees swaps view 0 only.
  replace_trees(c, conllu(kOtherTrees), "corpus.conllu", "trees.conllu");
  CHECK(c[0].heads == std::vector<int>{2, 2, -1});
  REQUIRE(c[0].views() == 3);
  CHECK(c[0].view_tree(1).heads() == std::vector<int>{2, 2, -1});
  CHECK(c[0].view_tree(2).heads() == original[0].heads);
}

TEST_CASE("add_tree_view refuses every mismatch replace_trees refuses, by name, and changes nothing",
          "[tree_source][align][views]") {
  std::vector<TaggedSentence> with_view = corpus(kCorpus);
  add_tree_view(with_view, conllu(kOtherTrees), "corpus.conllu", "trees.conllu");  // refusals keep this view too
  const std::vector<std::vector<TaggedSentence>> originals{corpus(kCorpus), with_view};
  const auto refused = [&](const std::string& trees, const std::string& message) {
    for (const std::vector<TaggedSentence>& original : originals) {
      std::vector<TaggedSentence> c = original;
      CHECK_THROWS_WITH(add_tree_view(c, conllu(trees), "corpus.conllu", "trees.conllu"), Catch::Contains(message));
      for (std::size_t k = 0; k < c.size(); ++k) CHECK(c[k].views() == original[k].views());
      CHECK(all_heads(c) == all_heads(original));
    }
  };
  for (const AlignmentRefusal& r : alignment_refusals()) {
    INFO(r.what);
    refused(r.trees, r.message);
  }
  refused(kSentenceB, "add_tree_view: corpus.conllu:1: sentence a has no tree in trees.conllu");  // its own name
  const std::string b = kSentenceB;
  SECTION("a corpus sentence without a sent_id") {
    std::vector<TaggedSentence> c = corpus("1\tGo\t_\tVERB\t_\t_\t0\troot\t_\t_\n\n");
    CHECK_THROWS_WITH(add_tree_view(c, conllu(b), "corpus.conllu", "trees.conllu"),
                      Catch::Contains("has no tree in trees.conllu (it has no sent_id to match by)"));
    CHECK(c[0].views() == 1);
  }
}

TEST_CASE("add_tree_view with a real treebank's own trees gives views identical to view 0",
          "[tree_source][align][views][treebank]") {
  const std::string path = synattn_test::ewt("dev");
  std::vector<TaggedSentence> c = load_tagging_corpus(path);
  const std::vector<TaggedSentence> before = c;
  add_tree_view(c, read_conllu(path), path, path);
  REQUIRE(c.size() == before.size());
  for (std::size_t k = 0; k < c.size(); ++k) {
    REQUIRE(c[k].views() == 2);
    REQUIRE(c[k].heads == before[k].heads);
    REQUIRE(c[k].view_tree(1).heads() == c[k].heads);
  }
  // And so the bucket blocks of the two views are one block twice.
  const Vocabulary vocab = Vocabulary::build(c);
  const LabelSet labels = LabelSet::build(c);
  const Bucketing directed = Bucketing::directed(4);
  const EncodedCorpus encoded(c, vocab, labels, &directed);
  TokenBatch tb;
  for (const auto& batch : eval_batches(sentence_lengths(c))) {
    make_token_batch(encoded, batch, WordDropout::none(), tb);
    REQUIRE(tb.views() == 2);
    const Index rows = static_cast<Index>(tb.batch()) * tb.n();
    REQUIRE(tb.buckets.topRows(rows) == tb.buckets.bottomRows(rows));
  }
}
