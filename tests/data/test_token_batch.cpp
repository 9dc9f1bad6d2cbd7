// Token batches over the real EWT dev set: ids, labels, buckets, dropout.
#include <catch2/catch.hpp>

#include <cstdint>
#include <numeric>
#include <string>

#include <synattn/bias/bucket_batch.hpp>
#include <synattn/data/documents.hpp>
#include <synattn/data/packed_batch.hpp>
#include <synattn/data/token_batch.hpp>
#include <synattn/data/tree_source.hpp>
#include <synattn/tree/distance.hpp>

using namespace synattn;

namespace {
struct Ewt {
  std::vector<TaggedSentence> train, dev;
  Vocabulary vocab;
  LabelSet labels;
  std::vector<std::size_t> subset;
};

const Ewt& ewt() {
  static const Ewt data = [] {
    const std::string dir = std::string(SYNATTN_SOURCE_DIR) + "/data/ud/UD_English-EWT/";
    Ewt e;
    e.train = load_tagging_corpus(dir + "en_ewt-ud-train.conllu");
    e.dev = load_tagging_corpus(dir + "en_ewt-ud-dev.conllu");
    e.subset = select_training_subset(e.train, 2000);
    e.vocab = Vocabulary::build(e.train, &e.subset);
    e.labels = LabelSet::build(e.train);
    return e;
  }();
  return data;
}

// The training subset's sentences (what the experiment batches).
std::vector<TaggedSentence> subset_sentences(const Ewt& e) {
  std::vector<TaggedSentence> train;
  for (std::size_t i : e.subset) train.push_back(e.train[i]);
  return train;
}

// `sentences` with their trees corrupted at rate p, keyed by index: other trees of the same words.
std::vector<TaggedSentence> noisy(const std::vector<TaggedSentence>& sentences, double p, std::uint64_t seed) {
  std::vector<TaggedSentence> out = sentences;
  corrupt_trees(out, p, RandomStream(seed));
  return out;
}

// Three tree views of the same sentences: gold, then two noisy ones (trees that differ from view 0 and from each
// other), as tree fusion would get them from three parsers.
struct Views {
  std::vector<std::vector<TaggedSentence>> single;  // single[v]: the sentences with view v's tree as their only one
  std::vector<TaggedSentence> fused;                // the sentences with all three views
};

Views three_views(const std::vector<TaggedSentence>& sentences) {
  Views out;
  out.single = {sentences, noisy(sentences, 0.3, 1), noisy(sentences, 0.6, 2)};
  out.fused = sentences;
  for (std::size_t k = 0; k < sentences.size(); ++k)
    for (std::size_t v = 1; v < out.single.size(); ++v) out.fused[k].view_trees.push_back(out.single[v][k].tree);
  return out;
}

void require_same_batch(const TokenBatch& a, const TokenBatch& b) {
  REQUIRE(a.ids == b.ids);
  REQUIRE(a.labels == b.labels);
  REQUIRE(a.buckets == b.buckets);
  REQUIRE(a.lengths == b.lengths);
  REQUIRE(a.tokens == b.tokens);
  REQUIRE(a.dropped == b.dropped);
  REQUIRE(a.views() == b.views());
}
}  // namespace

TEST_CASE("every EWT dev sentence: ids in range, labels counted, padding ignored", "[token_batch][ewt]") {
  const Ewt& e = ewt();
  TokenBatch tb;
  std::size_t tokens = 0, words = 0;
  for (const auto& batch : eval_batches(sentence_lengths(e.dev))) {
    make_token_batch(e.dev, batch, e.vocab, e.labels, nullptr, WordDropout::none(), tb);
    REQUIRE(tb.batch() == static_cast<int>(batch.size()));
    CHECK(tb.buckets.size() == 0);
    CHECK(tb.dropped == 0);
    for (int b = 0; b < tb.batch(); ++b) {
      const TaggedSentence& s = e.dev[batch[static_cast<std::size_t>(b)]];
      REQUIRE(tb.lengths[static_cast<std::size_t>(b)] == s.size());
      words += static_cast<std::size_t>(s.size());
      for (int j = 0; j < tb.n(); ++j) {
        if (j < s.size()) {
          REQUIRE(tb.ids(b, j) >= 1);
          REQUIRE(tb.ids(b, j) < e.vocab.size());
          REQUIRE(tb.ids(b, j) == e.vocab.id(s.forms[static_cast<std::size_t>(j)]));
          REQUIRE(tb.labels(b, j) == e.labels.id(s.labels[static_cast<std::size_t>(j)]));
        } else {
          REQUIRE(tb.ids(b, j) == Vocabulary::kPad);
          REQUIRE(tb.labels(b, j) == LabelSet::kIgnore);
        }
      }
    }
    tokens += tb.tokens;
  }
  CHECK(words == 25147);
  CHECK(tokens == words - e.labels.count_ignored(e.dev));
}

TEST_CASE("buckets equal bucketize of the sentence's distances, padding masked", "[token_batch][ewt]") {
  const Ewt& e = ewt();
  const std::vector<std::size_t> batch{5, 17, 1000, 3};  // different lengths: padding in all but one
  const Bucketing linear = Bucketing::linear(10);
  const Bucketing directed = Bucketing::directed(4);
  TokenBatch tb;
  for (const Bucketing* bucketing : {&linear, &directed}) {
    make_token_batch(e.dev, batch, e.vocab, e.labels, bucketing, WordDropout::none(), tb);
    const int n = tb.n();
    REQUIRE(tb.buckets.rows() == tb.batch() * n);
    REQUIRE(tb.buckets.cols() == n);
    for (int b = 0; b < tb.batch(); ++b) {
      const TaggedSentence& s = e.dev[batch[static_cast<std::size_t>(b)]];
      const int len = s.size();
      RowMajorMatrix<std::int8_t> want(len, len);
      if (bucketing->kind() == BucketKind::Directed) {
        RowMajorMatrix<std::int8_t> up(len, len), down(len, len);
        directed_distances<std::int8_t>(s.tree, up, down);
        bucketize_directed<std::int8_t, std::int8_t>(*bucketing, up, down, want);
        CHECK(want.maxCoeff() <= 24);
      } else {
        RowMajorMatrix<std::int8_t> d(len, len);
        pairwise_distances<std::int8_t>(s.tree, d);
        bucketize<std::int8_t, std::int8_t>(*bucketing, d, want);
        CHECK(want.maxCoeff() <= 10);
      }
      CHECK(tb.buckets.block(b * n, 0, len, len) == want);
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c)
          if (r >= len || c >= len) REQUIRE(tb.buckets(b * n + r, c) == kPaddingBucket);
    }
  }
}

TEST_CASE("word dropout replaces only singletons, at about half of them, reproducibly", "[token_batch][ewt]") {
  const Ewt& e = ewt();
  TokenBatch plain, dropped, again;
  std::size_t singletons = 0, replaced = 0;
  // Training batches of the subset, as the experiment makes them.
  std::vector<TaggedSentence> train;
  for (std::size_t i : e.subset) train.push_back(e.train[i]);
  for (const auto& batch : length_batches(sentence_lengths(train), 1, 3)) {
    make_token_batch(train, batch, e.vocab, e.labels, nullptr, WordDropout::none(), plain);
    make_token_batch(train, batch, e.vocab, e.labels, nullptr, WordDropout::for_epoch(1, 3), dropped);
    make_token_batch(train, batch, e.vocab, e.labels, nullptr, WordDropout::for_epoch(1, 3), again);
    REQUIRE(dropped.ids == again.ids);
    std::size_t here = 0;
    for (Eigen::Index k = 0; k < plain.ids.size(); ++k) {
      const int id = plain.ids.data()[k];
      const int got = dropped.ids.data()[k];
      if (id >= 2 && e.vocab.is_singleton(id)) {
        ++singletons;
        if (got == Vocabulary::kUnk) ++here;
        else REQUIRE(got == id);
      } else {
        REQUIRE(got == id);  // non-singletons, pad and UNK never change
      }
    }
    CHECK(dropped.dropped == here);
    replaced += here;
    CHECK(dropped.labels == plain.labels);
  }
  REQUIRE(singletons > 1000);
  const double rate = static_cast<double>(replaced) / static_cast<double>(singletons);
  CHECK(rate > 0.45);
  CHECK(rate < 0.55);
  // Another epoch redraws.
  const auto batch = length_batches(sentence_lengths(train), 1, 3).front();
  make_token_batch(train, batch, e.vocab, e.labels, nullptr, WordDropout::for_epoch(1, 4), again);
  make_token_batch(train, batch, e.vocab, e.labels, nullptr, WordDropout::for_epoch(1, 3), dropped);
  CHECK(again.ids != dropped.ids);
}

TEST_CASE("a repeated batch shape reuses the buffers", "[token_batch]") {
  const Ewt& e = ewt();
  const Bucketing linear = Bucketing::linear(10);
  TokenBatch tb;
  make_token_batch(e.dev, {0, 1, 2}, e.vocab, e.labels, &linear, WordDropout::none(), tb);
  const auto* ids = tb.ids.data();
  const auto* buckets = tb.buckets.data();
  const auto* labels = tb.labels.data();
  make_token_batch(e.dev, {2, 0, 1}, e.vocab, e.labels, &linear, WordDropout::none(), tb);
  CHECK(tb.ids.data() == ids);
  CHECK(tb.buckets.data() == buckets);
  CHECK(tb.labels.data() == labels);
}

TEST_CASE("clear_token_batch leaves a batch of no sentences, whatever it held", "[token_batch]") {
  const Ewt& e = ewt();
  const Bucketing linear = Bucketing::linear(10);
  TokenBatch tb;
  make_token_batch(e.dev, {0, 1}, e.vocab, e.labels, &linear, WordDropout::for_epoch(3, 0, 1.0), tb);
  REQUIRE(tb.tokens > 0);
  clear_token_batch(tb);
  CHECK(tb.batch() == 0);
  CHECK(tb.n() == 0);
  CHECK(tb.lengths.empty());
  CHECK(tb.buckets.size() == 0);  // not the last batch's block, which no length would match
  CHECK(tb.labels.size() == 0);
  CHECK(tb.tokens == 0);
  CHECK(tb.dropped == 0);
}

TEST_CASE("bad inputs are errors that name the argument", "[token_batch]") {
  const Ewt& e = ewt();
  TokenBatch tb;
  CHECK_THROWS_WITH(make_token_batch(e.dev, {}, e.vocab, e.labels, nullptr, WordDropout::none(), tb),
                    Catch::Contains("'indices' is empty"));
  CHECK_THROWS_WITH(make_token_batch(e.dev, {0, 5000}, e.vocab, e.labels, nullptr, WordDropout::none(), tb),
                    Catch::Contains("indices[1] = 5000, expected < 2001"));
  std::vector<TaggedSentence> broken{e.dev[0]};
  broken[0].labels.pop_back();
  CHECK_THROWS_WITH(make_token_batch(broken, {0}, e.vocab, e.labels, nullptr, WordDropout::none(), tb),
                    Catch::Contains("expected equal counts"));
  CHECK_THROWS_WITH(WordDropout::for_epoch(1, 0, 1.5), Catch::Contains("p must be in [0, 1]"));
}

// The values were printed by the Python twin's functions
// (bench/pytorch_train_reference.py: read_conllu, select_training_subset,
// build_vocabulary, build_labels, epoch_batches, word_dropout_stream) on the
// same files with the default data seed, N = 500, seed 1, epoch 0.
TEST_CASE("the N = 500 recipe on EWT makes the same choices as the Python twin", "[token_batch][ewt][pins]") {
  const Ewt& e = ewt();
  const auto subset = select_training_subset(e.train, 500);
  REQUIRE(subset.size() == 492);
  CHECK(std::vector<std::size_t>(subset.begin(), subset.begin() + 8) ==
        std::vector<std::size_t>{2308, 2958, 8647, 362, 11221, 8278, 7849, 3675});
  std::vector<TaggedSentence> train;
  for (std::size_t i : subset) train.push_back(e.train[i]);
  const auto lengths = sentence_lengths(train);
  CHECK(std::accumulate(lengths.begin(), lengths.end(), 0) == 7682);

  const Vocabulary v = Vocabulary::build(train);
  REQUIRE(v.size() == 2416);
  CHECK(std::vector<std::string>(v.words().begin() + 2, v.words().begin() + 12) ==
        std::vector<std::string>{"the", ".", ",", "to", "and", "a", "of", "in", "i", "you"});
  CHECK(std::vector<std::string>(v.words().end() - 3, v.words().end()) ==
        std::vector<std::string>{"release", "tenn", "iroq"});  // singletons, by first appearance
  int singletons = 0;
  for (int id = 0; id < v.size(); ++id) singletons += v.is_singleton(id) ? 1 : 0;
  CHECK(singletons == 1706);

  REQUIRE(e.labels.size() == 36);
  CHECK(e.labels.names().front() == "acl");
  CHECK(e.labels.name(24) == "nmod");
  CHECK(e.labels.names().back() == "xcomp");

  const auto batches = length_batches(lengths, 1, 0);
  REQUIRE(batches.size() == 16);
  CHECK(batches.front() == std::vector<std::size_t>{352, 441, 58,  143, 244, 480, 62,  344, 107, 49,  294,
                                                    21,  169, 291, 8,   221, 477, 160, 444, 278, 44,  366,
                                                    280, 4,   153, 10,  74,  300, 474, 401, 252, 332});
  CHECK(batches.back().back() == 110);
  TokenBatch tb;
  make_token_batch(train, batches.front(), v, e.labels, nullptr, WordDropout::for_epoch(1, 0), tb);
  CHECK(tb.dropped == 33);
}

TEST_CASE("an encoded corpus batches exactly like the sentences it was made from", "[token_batch][ewt]") {
  const Ewt& e = ewt();
  const std::vector<TaggedSentence> one_view = subset_sentences(e);
  const Bucketing linear = Bucketing::linear(10);
  const Bucketing directed = Bucketing::directed(4);
  for (const std::vector<TaggedSentence>& train : {one_view, three_views(one_view).fused}) {
    for (const Bucketing* bucketing : {static_cast<const Bucketing*>(nullptr), &linear, &directed}) {
      INFO(train.front().views() << " tree views, " << (bucketing ? bucketing->describe() : "no buckets"));
      const EncodedCorpus corpus(train, e.vocab, e.labels, bucketing);
      REQUIRE(corpus.size() == train.size());
      CHECK(corpus.views() == train.front().views());
      CHECK(corpus.lengths() == sentence_lengths(train));
      CHECK(corpus.ignored() == e.labels.count_ignored(train));
      CHECK((corpus.bucketing() == nullptr) == (bucketing == nullptr));
      TokenBatch direct, encoded;
      for (std::uint64_t epoch : {0u, 1u}) {
        for (const auto& batch : length_batches(corpus.lengths(), 5, epoch)) {
          const WordDropout d = WordDropout::for_epoch(5, epoch);
          make_token_batch(train, batch, e.vocab, e.labels, bucketing, d, direct);
          make_token_batch(corpus, batch, d, encoded);
          require_same_batch(encoded, direct);
        }
      }
      CHECK_THROWS_WITH(make_token_batch(corpus, {0, train.size()}, WordDropout::none(), encoded),
                        Catch::Contains("indices[1] = " + std::to_string(train.size()) + ", expected <"));
      CHECK_THROWS_WITH(make_token_batch(corpus, {}, WordDropout::none(), encoded),
                        Catch::Contains("'indices' is empty"));
    }
  }
}

TEST_CASE("tree views: view v's block is the one-view batch of the view-v trees, from both paths",
          "[token_batch][views][ewt]") {
  const Ewt& e = ewt();
  const Views views = three_views(subset_sentences(e));
  REQUIRE(views.fused.front().views() == 3);
  const Bucketing linear = Bucketing::linear(10);
  const Bucketing directed = Bucketing::directed(4);
  for (const Bucketing* bucketing : {static_cast<const Bucketing*>(nullptr), &linear, &directed}) {
    const EncodedCorpus corpus(views.fused, e.vocab, e.labels, bucketing);
    CHECK(corpus.views() == 3);
    TokenBatch direct, encoded, one;
    std::size_t differing_blocks = 0;
    for (const auto& batch : length_batches(corpus.lengths(), 5, 1)) {
      const WordDropout d = WordDropout::for_epoch(5, 1);
      make_token_batch(views.fused, batch, e.vocab, e.labels, bucketing, d, direct);
      make_token_batch(corpus, batch, d, encoded);
      require_same_batch(encoded, direct);
      const Index rows = static_cast<Index>(direct.batch()) * direct.n();
      REQUIRE(direct.views() == (bucketing ? 3 : 1));  // no buckets, no block of views
      REQUIRE(direct.buckets.rows() == (bucketing ? 3 * rows : 0));
      for (int v = 0; v < 3; ++v) {
        make_token_batch(views.single[static_cast<std::size_t>(v)], batch, e.vocab, e.labels, bucketing, d, one);
        REQUIRE(one.views() == 1);
        REQUIRE(one.ids == direct.ids);
        if (!bucketing) continue;
        REQUIRE(direct.buckets.middleRows(v * rows, rows) == one.buckets);  // its corners and padding -1
        differing_blocks += direct.buckets.middleRows(v * rows, rows) != direct.buckets.topRows(rows) ? 1 : 0;
      }
    }
    if (bucketing) CHECK(differing_blocks > 0);  // the views really are other trees
  }
}

TEST_CASE("tree views: a batch's sentences must have as many views, every view a tree of its words",
          "[token_batch][views]") {
  const Ewt& e = ewt();
  const Bucketing linear = Bucketing::linear(10);
  std::vector<TaggedSentence> mixed(e.dev.begin(), e.dev.begin() + 3);
  mixed[2].view_trees.push_back(mixed[2].tree);
  TokenBatch tb;
  const std::string expected = "sentence " + mixed[2].id + " (indices[2]) has 2 tree views, expected 1 as sentence " +
                               mixed[0].id + " (indices[0]) has";
  for (const Bucketing* bucketing : {static_cast<const Bucketing*>(nullptr), &linear}) {
    CHECK_THROWS_WITH(make_token_batch(mixed, {0, 1, 2}, e.vocab, e.labels, bucketing, WordDropout::none(), tb),
                      Catch::Contains("make_token_batch: " + expected));
    CHECK_THROWS_WITH(EncodedCorpus(mixed, e.vocab, e.labels, bucketing),
                      Catch::Contains("EncodedCorpus: sentence " + mixed[2].id +
                                      " (sentences[2]) has 2 tree views, expected 1 as sentence " + mixed[0].id +
                                      " (sentences[0]) has"));
  }
  CHECK_NOTHROW(make_token_batch(mixed, {2}, e.vocab, e.labels, &linear, WordDropout::none(), tb));
  CHECK(tb.views() == 2);

  std::vector<TaggedSentence> wrong{e.dev[0]};
  wrong[0].view_trees.push_back(e.dev[1].tree);  // another sentence's tree
  REQUIRE(e.dev[0].size() != e.dev[1].size());
  CHECK_THROWS_WITH(make_token_batch(wrong, {0}, e.vocab, e.labels, &linear, WordDropout::none(), tb),
                    Catch::Contains("sentence " + wrong[0].id + " (indices[0]) has " + std::to_string(e.dev[0].size()) +
                                    " words but its tree of view 1 has " + std::to_string(e.dev[1].size())));
  CHECK_THROWS_WITH(EncodedCorpus(wrong, e.vocab, e.labels, &linear), Catch::Contains("its tree of view 1 has"));
  CHECK_THROWS_WITH(wrong[0].view_tree(2), Catch::Contains("sentence " + wrong[0].id + " has 2 tree views"));
  CHECK(&wrong[0].view_tree(0) == &wrong[0].tree);
}

TEST_CASE("tree views: one TokenBatch serves batches of any view count, and clears to no views",
          "[token_batch][views]") {
  const Ewt& e = ewt();
  const std::vector<TaggedSentence> dev(e.dev.begin(), e.dev.begin() + 4);
  const Views views = three_views(dev);
  const Bucketing linear = Bucketing::linear(10);
  TokenBatch tb, fresh;
  make_token_batch(views.fused, {0, 1, 2}, e.vocab, e.labels, &linear, WordDropout::none(), tb);
  REQUIRE(tb.views() == 3);
  make_token_batch(dev, {0, 1, 2}, e.vocab, e.labels, &linear, WordDropout::none(), tb);  // fewer views: all rewritten
  make_token_batch(dev, {0, 1, 2}, e.vocab, e.labels, &linear, WordDropout::none(), fresh);
  require_same_batch(tb, fresh);
  CHECK(tb.views() == 1);
  make_token_batch(views.fused, {3, 1}, e.vocab, e.labels, &linear, WordDropout::none(), tb);
  make_token_batch(views.fused, {3, 1}, e.vocab, e.labels, &linear, WordDropout::none(), fresh);
  require_same_batch(tb, fresh);
  clear_token_batch(tb);
  CHECK(tb.views() == 1);
  CHECK(tb.buckets.size() == 0);
  CHECK(EncodedCorpus(std::vector<TaggedSentence>{}, e.vocab, e.labels, &linear).views() == 1);
}

TEST_CASE("EWT's documents: newdoc groups, a subset of whole documents, chunks within a token budget",
          "[token_batch][ewt][documents]") {
  const Ewt& e = ewt();
  const auto docs = corpus_documents(e.train);
  // Every sentence once, in file order; each document begins at a newdoc.
  std::size_t next = 0;
  for (const Document& d : docs) {
    REQUIRE(!d.sentences.empty());
    CHECK(e.train[d.sentences.front()].new_document);
    CHECK(e.train[d.sentences.front()].document_id == d.id);
    for (std::size_t i : d.sentences) CHECK(i == next++);
  }
  CHECK(next == e.train.size());
  CHECK(docs.size() == 540);  // the train file's "# newdoc id" lines

  const auto subset = select_document_subset(docs, 2000, 7);
  const std::vector<std::size_t> sentences = document_sentences(subset);
  CHECK(sentences.size() == 2000);
  for (std::size_t k = 0; k < subset.size(); ++k) {  // whole documents, the last one possibly cut
    const auto whole = std::find_if(docs.begin(), docs.end(), [&](const Document& d) { return d.id == subset[k].id; });
    REQUIRE(whole != docs.end());
    if (k + 1 < subset.size()) CHECK(whole->sentences == subset[k].sentences);
    CHECK(std::equal(subset[k].sentences.begin(), subset[k].sentences.end(), whole->sentences.begin()));
  }
  CHECK(document_sentences(select_document_subset(docs, 2000, 7)) == sentences);  // a pure function of the seed
  CHECK(document_sentences(select_document_subset(docs, 2000, 8)) != sentences);
  CHECK(document_sentences(select_document_subset(docs, 1u << 30, 7)).size() == e.train.size());

  const std::vector<int> lengths = sentence_lengths(e.train);
  for (int budget : {1, 60, 4096}) {
    const auto chunks = document_chunks(subset, lengths, budget);
    std::vector<std::size_t> flat;
    for (const auto& c : chunks) {
      REQUIRE(!c.empty());
      long long words = 0;
      for (std::size_t i : c) words += lengths[i];
      CHECK((words <= budget || c.size() == 1));  // only a sentence longer than the budget stands alone above it
      flat.insert(flat.end(), c.begin(), c.end());
    }
    CHECK(flat == sentences);  // in order, every sentence once, never across documents:
    std::size_t d = 0, in_doc = 0;
    for (const auto& c : chunks) {
      if (in_doc == subset[d].sentences.size()) ++d, in_doc = 0;
      for (std::size_t i : c) CHECK(i == subset[d].sentences[in_doc++]);
    }
  }
  CHECK_THROWS_WITH(document_chunks(subset, lengths, 0), Catch::Contains("max_tokens must be >= 1, got 0"));
  CHECK_THROWS_WITH(document_chunks(docs, {3, 4}, 10), Catch::Contains("expected < 2 (the lengths given)"));
}

TEST_CASE("a packed batch holds each sentence as make_token_batch does, and its trees' packed buckets",
          "[token_batch][ewt][packed]") {
  const Ewt& e = ewt();
  const auto docs = corpus_documents(e.dev);
  for (const Bucketing& bucketing : {Bucketing::linear(10), Bucketing::directed(4)}) {
    const EncodedCorpus corpus(e.dev, e.vocab, e.labels, &bucketing);
    const auto chunks = document_chunks({docs[0], docs[1], docs[2]}, corpus.lengths(), 300);
    REQUIRE(chunks.size() >= 3);
    const std::vector<std::vector<std::size_t>> sequences(chunks.begin(), chunks.begin() + 3);
    const WordDropout dropout = WordDropout::for_epoch(3, 1);
    for (const PackingOptions& options : {PackingOptions{0}, PackingOptions{1, -1, RootLinks::all_roots}}) {
      PackedTokenBatch packed;
      make_packed_token_batch(corpus, sequences, options, dropout, packed);
      REQUIRE(packed.batch() == 3);
      std::size_t tokens = 0, dropped = 0;
      std::vector<std::vector<DependencyTree>> trees;
      for (int b = 0; b < 3; ++b) {
        TokenBatch one;
        make_token_batch(corpus, sequences[static_cast<std::size_t>(b)], dropout, one);
        tokens += one.tokens;
        dropped += one.dropped;
        trees.emplace_back();
        Index at = 0;
        for (int k = 0; k < one.batch(); ++k) {
          const int len = one.lengths[static_cast<std::size_t>(k)];
          CHECK(packed.ids.row(b).segment(at, len) == one.ids.row(k).head(len));
          CHECK(packed.labels.row(b).segment(at, len) == one.labels.row(k).head(len));
          trees.back().push_back(e.dev[sequences[static_cast<std::size_t>(b)][static_cast<std::size_t>(k)]].tree);
          at += len;
        }
        CHECK(packed.lengths()[static_cast<std::size_t>(b)] == at);
        CHECK((packed.ids.row(b).tail(packed.n() - at).array() == Vocabulary::kPad).all());
        CHECK((packed.labels.row(b).tail(packed.n() - at).array() == LabelSet::kIgnore).all());
      }
      CHECK(packed.tokens == tokens);
      CHECK(packed.dropped == dropped);
      CHECK(dropped > 0);
      const PackedBuckets from_trees = make_packed_buckets(trees, bucketing, options);
      CHECK(packed.buckets.dense(packed.n()) == from_trees.dense(packed.n()));
      CHECK(packed.buckets.block_bytes() == from_trees.block_bytes());
    }
    PackedTokenBatch out;
    CHECK_THROWS_WITH(make_packed_token_batch(corpus, {}, {}, dropout, out), Catch::Contains("'sequences' is empty"));
    CHECK_THROWS_WITH(make_packed_token_batch(corpus, {{0}, {}}, {}, dropout, out),
                      Catch::Contains("sequences[1] holds no sentence"));
    CHECK_THROWS_WITH(make_packed_token_batch(corpus, {{0, corpus.size()}}, {}, dropout, out),
                      Catch::Contains("sequences[0][1] = "));
    CHECK_THROWS_WITH(make_packed_token_batch(corpus, {{0}}, {0, 3}, dropout, out),
                      Catch::Contains("use make_packed_buckets for a cutoff"));
  }
  const EncodedCorpus plain(e.dev, e.vocab, e.labels, nullptr);
  PackedTokenBatch out;
  CHECK_THROWS_WITH(make_packed_token_batch(plain, {{0}}, {}, WordDropout::none(), out),
                    Catch::Contains("the corpus has no bucketing"));
}
