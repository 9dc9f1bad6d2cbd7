// The benchmarks' real trees, in one place: UD English EWT train sentences
// (vendored under data/ud) read once, packed in file order into forests of
// exactly n tokens, or a single sentence of n words. bench_attention and
// bench_tree use it, so both time the same trees.
#ifndef SYNATTN_BENCH_BENCH_CORPUS_HPP
#define SYNATTN_BENCH_BENCH_CORPUS_HPP

#include <synattn/io/conllu.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace synattn_bench {

struct Corpus {
  std::string path;
  std::vector<std::vector<int>> sentences;  // canonical heads (-1: root)
};

// The EWT training treebank (SYNATTN_SOURCE_DIR is the checkout, set by
// bench/CMakeLists.txt), read on first use; throws synattn::Error if missing.
inline const Corpus& ewt_train() {
  static const Corpus c = [] {
    Corpus out;
    out.path = std::string(SYNATTN_SOURCE_DIR) + "/data/ud/UD_English-EWT/en_ewt-ud-train.conllu";
    for (const auto& s : synattn::read_conllu(out.path)) out.sentences.push_back(s.heads());
    return out;
  }();
  return c;
}

// Sentences [next, ...) packed into exactly n tokens: the last sentence is cut
// at n and a word whose head was cut off becomes a root, so no position is
// padding. `next` moves past the sentences used (a cut one counts as used),
// wrapping around the corpus.
inline std::vector<int> pack_forest(int n, std::size_t& next) {
  const auto& sentences = ewt_train().sentences;
  std::vector<int> heads;
  heads.reserve(static_cast<std::size_t>(n));
  while (static_cast<int>(heads.size()) < n) {
    const int offset = static_cast<int>(heads.size());
    for (int h : sentences[next]) {
      if (static_cast<int>(heads.size()) == n) break;
      heads.push_back(h < 0 || h + offset >= n ? -1 : h + offset);
    }
    next = (next + 1) % sentences.size();
  }
  return heads;
}

// The first sentences packed into n tokens.
inline std::vector<int> pack_forest(int n) {
  std::size_t next = 0;
  return pack_forest(n, next);
}

// The first sentence of exactly n words (or, if there is none, a forest of
// the first sentences); `source` says which.
inline std::vector<int> single_sentence(int n, std::string& source) {
  const auto& sentences = ewt_train().sentences;
  for (std::size_t k = 0; k < sentences.size(); ++k)
    if (static_cast<int>(sentences[k].size()) == n) {
      source = "sentence " + std::to_string(k);
      return sentences[k];
    }
  source = "forest of sentences from 0";
  return pack_forest(n);
}

}  // namespace synattn_bench

#endif  // SYNATTN_BENCH_BENCH_CORPUS_HPP
