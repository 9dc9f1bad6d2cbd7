// train_deprel — which trees the attention bias reads: the gold
// trees of --train / --dev, a tree file's (--train-trees, --dev-trees),
// corrupted once (--tree-noise) and, for training, afresh every epoch
// (--train-tree-noise); and how far those trees are from gold.
//
// Noise streams, all from --tree-noise-seed S: the fixed corruption of
// sentence k of the training file is RandomStream(S).derive(kFixedNoise)
// .derive(0).derive(k), of dev sentence k .derive(1).derive(k); the
// per-epoch corruption of training sentence k in epoch e is
// RandomStream(S).derive(kEpochNoise).derive(e).derive(k). A sentence's trees
// are therefore the same in every run, subset and process that uses it.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_TREES_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_TREES_HPP

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <synattn/data/tagging_corpus.hpp>
#include <synattn/data/tree_source.hpp>
#include <synattn/data/vocabulary.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/tree/corruption.hpp>
#include <synattn/util/random.hpp>

#include "cli.hpp"

namespace train_deprel {

constexpr std::uint64_t kFixedNoise = 201;
constexpr std::uint64_t kEpochNoise = 202;

// The base-DEPREL accuracy (percent) of a tree file's own DEPREL column
// against the corpus's labels, over the words whose gold label is in
// `labels` (the words the tagger is scored on): what the parser that drew
// the trees scores on the tagger's task. Negative when the file has no
// relation for some word ('_').
inline double tree_file_label_accuracy(const std::vector<synattn::ConlluSentence>& trees,
                                       const std::vector<synattn::TaggedSentence>& corpus,
                                       const synattn::LabelSet& labels) {
  std::unordered_map<std::string, const synattn::ConlluSentence*> by_id;
  for (const auto& t : trees) by_id.emplace(t.sent_id, &t);
  long long scored = 0, correct = 0;
  for (const auto& s : corpus) {
    const auto it = by_id.find(s.id);
    if (it == by_id.end()) return -1;
    for (std::size_t j = 0; j < s.labels.size() && j < it->second->words.size(); ++j) {
      const std::string& deprel = it->second->words[j].deprel;
      if (deprel.empty() || deprel == "_" || deprel.front() == ':') return -1;
      if (labels.id(s.labels[j]) == synattn::LabelSet::kIgnore) continue;
      ++scored;
      correct += synattn::base_deprel(deprel) == s.labels[j] ? 1 : 0;
    }
  }
  return scored ? 100.0 * static_cast<double>(correct) / static_cast<double>(scored) : -1;
}

// The trees of one corpus as the run uses them, and the gold ones beside.
struct TreeSources {
  std::vector<synattn::TaggedSentence> train_gold, dev_gold;  // empty when the trees are gold
  double dev_uas = 100.0;                // of the dev trees used, against gold
  double dev_trees_label_accuracy = -1;  // --dev-trees' own DEPREL on the task (negative: none)
  // Tree fusion (--train-view-trees): both corpora again with every view,
  // for the fusion variant (the others read the one-view corpora), and the
  // UAS of each view's dev trees against gold (view 0 first).
  std::vector<synattn::TaggedSentence> train_views, dev_views;
  std::vector<double> dev_view_uas;
};

// Puts the configured trees under `train` and `dev` (gold as read): tree
// files first, then the fixed noise. Errors name the files and sentences.
inline TreeSources apply_tree_sources(const Config& c, std::vector<synattn::TaggedSentence>& train,
                                      std::vector<synattn::TaggedSentence>& dev, const synattn::LabelSet& labels) {
  TreeSources t;
  if (c.gold_trees()) return t;
  t.train_gold = train;
  t.dev_gold = dev;
  if (!c.train_trees_path.empty())
    synattn::replace_trees(train, synattn::read_conllu(c.train_trees_path), c.train_path, c.train_trees_path);
  if (!c.dev_trees_path.empty()) {
    const auto trees = synattn::read_conllu(c.dev_trees_path);
    synattn::replace_trees(dev, trees, c.dev_path, c.dev_trees_path);
    t.dev_trees_label_accuracy = tree_file_label_accuracy(trees, dev, labels);
  }
  if (c.tree_noise > 0) {
    const synattn::RandomStream noise = synattn::RandomStream(c.tree_noise_seed).derive(kFixedNoise);
    synattn::corrupt_trees(train, c.tree_noise, noise.derive(0));
    synattn::corrupt_trees(dev, c.tree_noise, noise.derive(1));
  }
  t.dev_uas = synattn::tree_agreement(t.dev_gold, dev);
  return t;
}

// With --train-view-trees: copies of `train` and `dev` (their trees as
// apply_tree_sources left them, view 0) with each view file's trees added
// as views 1.., into `t`, and the dev views' UAS. Errors name the files and
// sentences, like --train-trees'.
inline void apply_view_trees(const Config& c, const std::vector<synattn::TaggedSentence>& train,
                             const std::vector<synattn::TaggedSentence>& dev, TreeSources& t) {
  if (c.train_view_trees.empty()) return;
  t.train_views = train;
  t.dev_views = dev;
  for (std::size_t v = 0; v < c.train_view_trees.size(); ++v) {
    synattn::add_tree_view(t.train_views, synattn::read_conllu(c.train_view_trees[v]), c.train_path,
                           c.train_view_trees[v]);
    synattn::add_tree_view(t.dev_views, synattn::read_conllu(c.dev_view_trees[v]), c.dev_path, c.dev_view_trees[v]);
  }
  const std::vector<synattn::TaggedSentence>& gold = t.dev_gold.empty() ? dev : t.dev_gold;
  for (int v = 0; v < c.tree_views(); ++v) t.dev_view_uas.push_back(synattn::tree_agreement(gold, t.dev_views, v));
}

// UAS (percent) of `used` against the gold trees of the training sentences
// `index` (into the training file); 100 when the trees are gold.
inline double subset_uas(const TreeSources& t, const std::vector<std::size_t>& index,
                         const std::vector<synattn::TaggedSentence>& used) {
  if (t.train_gold.empty()) return 100.0;
  std::vector<synattn::TaggedSentence> gold;
  gold.reserve(index.size());
  for (std::size_t i : index) gold.push_back(t.train_gold[i]);
  return synattn::tree_agreement(gold, used);
}

// The training subset with the trees of epoch `epoch` under --train-tree-noise
// (sentence k of the subset is training-file sentence index[k]).
inline std::vector<synattn::TaggedSentence> epoch_trees(const Config& c, const std::vector<std::size_t>& index,
                                                        const std::vector<synattn::TaggedSentence>& subset,
                                                        int epoch) {
  std::vector<synattn::TaggedSentence> out = subset;
  synattn::corrupt_trees(out, c.train_tree_noise,
                         synattn::RandomStream(c.tree_noise_seed).derive(kEpochNoise).derive(static_cast<std::uint64_t>(epoch)),
                         index);
  return out;
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_TREES_HPP
