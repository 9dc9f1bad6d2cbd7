// libFuzzer target for the CoNLL-U -> training batch path (data/, tree/batch.hpp).
// Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_batch && tools/make_fuzz_seeds.sh build/fuzz/seeds && build/fuzz/fuzz/fuzz_batch -max_total_time=60 -timeout=10 build/fuzz/seeds
//
// The input is read as CoNLL-U (lenient: the good sentences), each sentence
// made a TaggedSentence (those without a usable DEPREL are skipped, as
// read_tagging_corpus refuses them), and then batched as train_deprel does:
// the training subset (at most 60 words), its vocabulary, the label set,
// an EncodedCorpus per bucketing (none, linear, log, directed) and one
// epoch's length_batches with word dropout, plus eval_batches. Only
// synattn::Error may come out of the library; promises checked (a broken
// one aborts, a finding):
// - the batches cover every position exactly once; eval batches are sorted
//   by length;
// - a TokenBatch has ids and labels (batch, n) with n the longest sentence,
//   the right lengths, kPad / kIgnore on padding, ids that are the word's
//   (or kUnk for a dropped singleton), labels that are the word's class or
//   kIgnore, and `tokens` / `dropped` counting them;
// - its buckets are (batch * n, n), -1 on every pair with a padding
//   position, and in each sentence's corner the bucket of the distance
//   LcaIndex computes (an independent algorithm), so symmetric when
//   undirected and transposed (up <-> down) when directed, 0 on the diagonal;
// - EncodedCorpus and the TaggedSentence overload of make_token_batch give
//   the same batch;
// - tree/batch.hpp's padded distance blocks agree with the same distances
//   (saturating at int8's 127), with up + down = dist, and -1 on padding.
#include <synattn/bias/bucketing.hpp>
#include <synattn/data/batching.hpp>
#include <synattn/data/tagging_corpus.hpp>
#include <synattn/data/token_batch.hpp>
#include <synattn/data/vocabulary.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/tree/batch.hpp>
#include <synattn/tree/lca.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

using synattn::Index;

void expect(bool ok, const char* promise) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_batch: broken promise: %s\n", promise);
    std::abort();
  }
}

int saturated(int d) { return d > 127 ? 127 : d; }

// The bucket LcaIndex's distances give for pair (i, j).
int expected_bucket(const synattn::Bucketing& bucketing, const synattn::LcaIndex& lca,
                    const std::vector<int>& depth, int i, int j) {
  const int a = lca.lca(i, j);
  expect(a >= 0, "a sentence is one tree");
  if (bucketing.kind() == synattn::BucketKind::Directed) {
    const int up = saturated(depth[static_cast<std::size_t>(i)] - depth[static_cast<std::size_t>(a)]);
    const int down = saturated(depth[static_cast<std::size_t>(j)] - depth[static_cast<std::size_t>(a)]);
    return bucketing.bucket(up, down);
  }
  return bucketing.bucket(saturated(lca.distance(i, j)));
}

struct Corpus {
  std::vector<synattn::TaggedSentence> sentences;
  std::vector<synattn::LcaIndex> lca;  // one per sentence
};

void check_batch(const synattn::TokenBatch& out, const Corpus& corpus, const std::vector<std::size_t>& indices,
                 const synattn::Vocabulary& vocab, const synattn::LabelSet& labels,
                 const synattn::Bucketing* bucketing, const synattn::WordDropout& dropout) {
  int n = 0;
  for (std::size_t i : indices) n = std::max(n, corpus.sentences[i].size());
  expect(out.batch() == static_cast<int>(indices.size()) && out.n() == n, "ids are (batch, longest)");
  expect(out.labels.rows() == out.ids.rows() && out.labels.cols() == out.ids.cols(), "labels are shaped as ids");
  expect(out.lengths.size() == indices.size(), "one length per sentence");
  if (bucketing)
    expect(out.buckets.rows() == static_cast<Index>(indices.size()) * n && out.buckets.cols() == n,
           "buckets are (batch * n, n)");
  else
    expect(out.buckets.size() == 0, "no bucketing, no buckets");
  std::size_t tokens = 0, dropped = 0;
  for (std::size_t b = 0; b < indices.size(); ++b) {
    const synattn::TaggedSentence& s = corpus.sentences[indices[b]];
    const int len = s.size();
    const Index row = static_cast<Index>(b);
    expect(out.lengths[b] == len, "lengths are the sentences' word counts");
    for (int j = 0; j < n; ++j) {
      const int id = out.ids(row, j), label = out.labels(row, j);
      if (j >= len) {
        expect(id == synattn::Vocabulary::kPad, "padding ids are kPad");
        expect(label == synattn::LabelSet::kIgnore, "padding labels are ignored");
        continue;
      }
      const std::size_t w = static_cast<std::size_t>(j);
      const int want = vocab.id(s.forms[w]);
      expect(id == want || (dropout.enabled && id == synattn::Vocabulary::kUnk && vocab.is_singleton(want)),
             "a word's id is its vocabulary id, or kUnk for a dropped singleton");
      dropped += id != want ? 1 : 0;
      expect(id >= 1 && id < vocab.size(), "word ids are in [1, vocabulary size)");
      expect(label == labels.id(s.labels[w]), "a word's label is its class");
      expect(label == synattn::LabelSet::kIgnore || (label >= 0 && label < labels.size()), "labels are in range");
      tokens += label == synattn::LabelSet::kIgnore ? 0 : 1;
    }
    if (!bucketing) continue;
    const synattn::LcaIndex& lca = corpus.lca[indices[b]];
    const std::vector<int>& depth = s.tree.depth();
    const int top_bucket = bucketing->distance_buckets();
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const int got = out.buckets(row * n + i, j);
        if (i >= len || j >= len) {
          expect(got == synattn::kPaddingBucket, "pairs with padding are masked");
          continue;
        }
        expect(got >= 0 && got < top_bucket, "word pairs have a distance bucket");
        expect(got == expected_bucket(*bucketing, lca, depth, i, j), "buckets are the tree distances' buckets");
        if (i == j) expect(got == 0, "a word is at distance 0 from itself");
        const int mirror = out.buckets(row * n + j, i);
        if (bucketing->kind() != synattn::BucketKind::Directed) {
          expect(got == mirror, "undirected buckets are symmetric");
        } else {
          const int m = bucketing->max_distance() + 1;
          expect(mirror == (got % m) * m + got / m, "directed buckets of (j, i) swap up and down");
        }
      }
  }
  expect(out.tokens == tokens, "tokens counts the labels that count");
  expect(out.dropped == dropped, "dropped counts the words replaced by kUnk");
}

bool same_batch(const synattn::TokenBatch& a, const synattn::TokenBatch& b) {
  return a.ids == b.ids && a.labels == b.labels && a.buckets == b.buckets && a.lengths == b.lengths &&
         a.tokens == b.tokens && a.dropped == b.dropped;
}

void check_cover(const std::vector<std::vector<std::size_t>>& batches, std::size_t count, std::size_t batch) {
  std::vector<int> seen(count, 0);
  for (const auto& b : batches) {
    expect(!b.empty() && b.size() <= batch, "a batch holds 1..batch sentences");
    for (std::size_t i : b) {
      expect(i < count, "batch positions are in range");
      ++seen[i];
    }
  }
  for (int k : seen) expect(k == 1, "every position is in exactly one batch");
}

// tree/batch.hpp: the padded distance blocks of sentences `indices`.
void check_distance_blocks(const Corpus& corpus, const std::vector<std::size_t>& indices) {
  std::vector<synattn::DependencyTree> trees;
  for (std::size_t i : indices) trees.push_back(corpus.sentences[i].tree);
  const auto undirected = synattn::make_distance_batch<std::int8_t>(trees);
  const auto directed = synattn::make_directed_distance_batch<std::int8_t>(trees);
  const int n = undirected.n_max;
  expect(n == synattn::longest(trees) && directed.n_max == n, "n_max is the longest sentence");
  expect(undirected.lengths == synattn::batch_lengths(trees), "the blocks' lengths are the sentences'");
  for (std::size_t b = 0; b < trees.size(); ++b) {
    const int len = trees[b].size();
    const synattn::LcaIndex& lca = corpus.lca[indices[b]];
    const std::vector<int>& depth = trees[b].depth();
    const Index top = static_cast<Index>(b) * n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const int d = undirected.distances(top + i, j), up = directed.up(top + i, j), down = directed.down(top + i, j);
        if (i >= len || j >= len) {
          expect(d == -1 && up == -1 && down == -1, "padding distances are -1");
          continue;
        }
        const int a = lca.lca(i, j);
        const int want_up = depth[static_cast<std::size_t>(i)] - depth[static_cast<std::size_t>(a)];
        const int want_down = depth[static_cast<std::size_t>(j)] - depth[static_cast<std::size_t>(a)];
        expect(d == saturated(want_up + want_down), "distances are the tree's (saturating at 127)");
        expect(up == saturated(want_up) && down == saturated(want_down), "up and down are the tree's");
        expect(d == undirected.distances(top + j, i), "distances are symmetric");
        expect(up == directed.down(top + j, i), "up(i, j) is down(j, i)");
        expect(d <= len - 1, "a distance is below the sentence length");
      }
  }
}

void run(const std::string& text) {
  std::istringstream in(text);
  std::vector<synattn::ConlluSentence> raw;
  try {
    raw = synattn::read_conllu(in, "fuzz", synattn::ConlluMode::Lenient);
  } catch (const synattn::Error&) {
    return;
  } catch (const synattn::FormatError&) {
    return;
  }
  Corpus corpus;
  for (const synattn::ConlluSentence& s : raw) {
    try {
      corpus.sentences.push_back(synattn::to_tagged_sentence(s, "fuzz"));
    } catch (const synattn::Error&) {
      // No usable DEPREL: read_tagging_corpus refuses the file, so skip it here.
    } catch (const synattn::FormatError&) {
      // The same refusal for a malformed DEPREL, which is the file's fault.
    }
  }
  if (corpus.sentences.empty()) return;
  for (const synattn::TaggedSentence& s : corpus.sentences) corpus.lca.emplace_back(s.tree);

  // The training run's data recipe (examples/train_deprel.cpp), on this corpus.
  const std::vector<int> lengths = synattn::sentence_lengths(corpus.sentences);
  const std::vector<std::size_t> subset = synattn::select_training_subset(corpus.sentences, corpus.sentences.size());
  for (std::size_t i : subset) expect(i < lengths.size() && lengths[i] <= synattn::kDefaultMaxWords,
                                      "the training subset holds sentences of at most 60 words");
  const synattn::Vocabulary vocab = synattn::Vocabulary::build(corpus.sentences, &subset);
  const synattn::LabelSet labels = synattn::LabelSet::build(corpus.sentences);
  // Small batches, so that one input gives several (the size follows the input).
  const std::size_t batch_size = 1 + text.size() % 3;
  const auto train = synattn::length_batches(lengths, 7, 1, batch_size);
  check_cover(train, lengths.size(), batch_size);
  const auto eval = synattn::eval_batches(lengths, batch_size);
  check_cover(eval, lengths.size(), batch_size);
  for (std::size_t k = 1; k < eval.size(); ++k)
    expect(lengths[eval[k - 1].back()] <= lengths[eval[k].front()], "eval batches are sorted by length");

  const synattn::Bucketing bucketings[] = {synattn::Bucketing::linear(10), synattn::Bucketing::log(8, 20),
                                           synattn::Bucketing::directed(4)};
  const synattn::WordDropout dropouts[] = {synattn::WordDropout::none(), synattn::WordDropout::for_epoch(7, 1)};
  synattn::TokenBatch encoded_batch, direct_batch;
  for (int k = -1; k < 3; ++k) {
    const synattn::Bucketing* bucketing = k < 0 ? nullptr : &bucketings[k];
    const synattn::EncodedCorpus encoded(corpus.sentences, vocab, labels, bucketing);
    expect(encoded.size() == corpus.sentences.size() && encoded.lengths() == lengths,
           "the corpus keeps every sentence");
    expect(encoded.ignored() == labels.count_ignored(corpus.sentences), "ignored counts the labels outside the set");
    for (const synattn::WordDropout& dropout : dropouts)
      for (const auto& indices : train) {
        synattn::make_token_batch(encoded, indices, dropout, encoded_batch);
        check_batch(encoded_batch, corpus, indices, vocab, labels, bucketing, dropout);
        synattn::make_token_batch(corpus.sentences, indices, vocab, labels, bucketing, dropout, direct_batch);
        expect(same_batch(encoded_batch, direct_batch), "EncodedCorpus batches as the sentences do");
      }
  }
  for (const auto& indices : eval) check_distance_blocks(corpus, indices);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    run(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const synattn::Error& e) {
    // Everything above was built from sentences the reader accepted: an
    // Error here is the library refusing its own output, a finding too.
    std::fprintf(stderr, "fuzz_batch: unexpected synattn::Error: %s\n", e.what());
    std::abort();
  } catch (const synattn::FormatError& e) {  // the same finding, as a runtime error
    std::fprintf(stderr, "fuzz_batch: unexpected synattn::FormatError: %s\n", e.what());
    std::abort();
  }
  return 0;
}
