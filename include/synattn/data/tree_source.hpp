// synattn — trees from elsewhere for a tagging corpus: the trees a
// parser drew, or trees corrupted on purpose, in place of the gold ones the
// corpus was read with, or beside them as further tree views (tree fusion).
// Words and labels stay the corpus's own; only the trees the attention bias
// reads change.
//
//   auto train = load_tagging_corpus("train.conllu");
//   replace_trees(train, read_conllu("train.predicted.conllu"), "train.conllu", "train.predicted.conllu");
//   corrupt_trees(train, 0.1, RandomStream(seed));   // or: controlled noise
//   add_tree_view(train, read_conllu("train.other.conllu"), "train.conllu", "train.other.conllu");  // view 1
//
// Sentences are matched by sent_id, then checked word by word: the same
// number of words and the same forms (compared after the corpus's own
// casing). Every mismatch is an error that names both files, the sentence
// and the word; a tree file may hold more sentences than the corpus (a file
// for all of train serves any subset of it). replace_trees and add_tree_view
// share these rules (detail::match_trees), and both change nothing when they
// refuse.
//
// Views: replace_trees replaces view 0 (`tree` and `heads`) and keeps the
// others; add_tree_view appends one to `view_trees`. corrupt_trees works on
// view 0 only (`heads`, which only view 0 has): to corrupt another view's
// trees, give a copy of the corpus that view's file with replace_trees.
// tree_agreement scores any view against another corpus's view 0.
#ifndef SYNATTN_DATA_TREE_SOURCE_HPP
#define SYNATTN_DATA_TREE_SOURCE_HPP

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "../error.hpp"
#include "../io/conllu.hpp"
#include "../tree/corruption.hpp"
#include "../util/random.hpp"
#include "tagging_corpus.hpp"

namespace synattn {

namespace detail {
// The tree file's sentences by sent_id. Throws FormatError for a sentence
// without a sent_id or one that appears twice.
inline std::unordered_map<std::string, const ConlluSentence*> trees_by_sent_id(const std::vector<ConlluSentence>& trees,
                                                                               const std::string& trees_file) {
  std::unordered_map<std::string, const ConlluSentence*> by_id;
  by_id.reserve(trees.size());
  for (const ConlluSentence& t : trees) {
    if (t.sent_id.empty())
      throw FormatError(trees_file, t.line,
                       "sentence " + t.label() + " has no sent_id; tree files are matched to the corpus by sent_id");
    const auto [it, fresh] = by_id.emplace(t.sent_id, &t);
    if (!fresh)
      throw FormatError(
          trees_file, t.line,
          "sentence " + t.sent_id + " appears twice (first at line " + std::to_string(it->second->line) + ")");
  }
  return by_id;
}

// Throws FormatError unless the tree file's sentence `t` has the words of the
// corpus's `s`: as many, with the same forms after the corpus's casing.
inline void check_same_words(const TaggedSentence& s, const ConlluSentence& t, const std::string& corpus_file,
                             const std::string& trees_file, FormCase forms) {
  if (t.size() != static_cast<std::size_t>(s.size()))
    throw FormatError(trees_file, t.line,
                     "sentence " + t.sent_id + " has " + std::to_string(t.size()) + " words but " +
                         std::to_string(s.size()) + " in " + corpus_file + " (line " + std::to_string(s.line) + ")");
  for (std::size_t j = 0; j < t.size(); ++j) {
    const std::string form = forms == FormCase::AsciiLower ? ascii_lower(t.words[j].form) : t.words[j].form;
    if (form != s.forms[j])
      throw FormatError(trees_file, t.line,
                       "sentence " + t.sent_id + ": word " + std::to_string(j + 1) + " is '" + t.words[j].form +
                           "' but '" + s.forms[j] + "' in " + corpus_file + " (line " + std::to_string(s.line) + ")");
  }
}

// The tree in `trees` of every sentence of `corpus`, in corpus order, under
// the rules of the file comment; `fn` names the caller in messages. Throws
// as replace_trees; changes nothing (the callers commit only what it returns).
inline std::vector<DependencyTree> match_trees(const char* fn, const std::vector<TaggedSentence>& corpus,
                                               const std::vector<ConlluSentence>& trees, const std::string& corpus_file,
                                               const std::string& trees_file, FormCase forms) {
  const auto by_id = trees_by_sent_id(trees, trees_file);
  std::vector<DependencyTree> matched(corpus.size());
  for (std::size_t k = 0; k < corpus.size(); ++k) {
    const TaggedSentence& s = corpus[k];
    // A made-up name ("#K (line L)") is never matched: a tree file whose
    // sent_id happened to be that string was given the sentence's tree.
    if (!s.has_sent_id)
      throw Error(std::string(fn) + ": " + corpus_file + ":" + std::to_string(s.line) + ": sentence " + s.id +
                  " has no tree in " + trees_file + " (it has no sent_id to match by)");
    const auto it = by_id.find(s.id);
    if (it == by_id.end())
      throw Error(std::string(fn) + ": " + corpus_file + ":" + std::to_string(s.line) + ": sentence " + s.id +
                  " has no tree in " + trees_file);
    const ConlluSentence& t = *it->second;
    check_same_words(s, t, corpus_file, trees_file, forms);
    matched[k] = DependencyTree(t.heads(), Structure::Tree, trees_file + ": sentence " + t.sent_id);
  }
  return matched;
}
}  // namespace detail

// Replaces the heads and tree of every sentence of `corpus` (view 0) by those
// of the sentence with its sent_id in `trees`; further views (view_trees)
// are kept. `corpus_file` and `trees_file` name the sources in messages;
// `forms` is how the corpus cased its forms. Throws FormatError
// "TREES_FILE:LINE: ..." (the tree file's sentence) or Error naming the
// corpus's sentence; on a throw `corpus` is unchanged.
inline void replace_trees(std::vector<TaggedSentence>& corpus, const std::vector<ConlluSentence>& trees,
                          const std::string& corpus_file, const std::string& trees_file,
                          FormCase forms = FormCase::AsciiLower) {
  // Every check first, then every replacement: a refused file changes nothing.
  std::vector<DependencyTree> matched =
      detail::match_trees("replace_trees", corpus, trees, corpus_file, trees_file, forms);
  std::vector<std::vector<int>> heads(corpus.size());
  for (std::size_t k = 0; k < corpus.size(); ++k) heads[k] = matched[k].heads();
  for (std::size_t k = 0; k < corpus.size(); ++k) {
    corpus[k].heads = std::move(heads[k]);
    corpus[k].tree = std::move(matched[k]);
  }
}

// Appends to every sentence of `corpus` a tree view (view views() - 1 after
// the call, in view_trees) whose heads are those of the sentence with its
// sent_id in `trees`, matched and refused exactly as by replace_trees (the
// messages name add_tree_view); on a throw `corpus` is unchanged.
inline void add_tree_view(std::vector<TaggedSentence>& corpus, const std::vector<ConlluSentence>& trees,
                          const std::string& corpus_file, const std::string& trees_file,
                          FormCase forms = FormCase::AsciiLower) {
  std::vector<DependencyTree> matched =
      detail::match_trees("add_tree_view", corpus, trees, corpus_file, trees_file, forms);
  // Room first (a failed reserve changes no element), so the appends below cannot throw part way.
  for (TaggedSentence& s : corpus) s.view_trees.reserve(s.view_trees.size() + 1);
  for (std::size_t k = 0; k < corpus.size(); ++k) corpus[k].view_trees.push_back(std::move(matched[k]));
}

// Corrupts every sentence's tree (view 0; further views are kept) in place
// by corrupt_heads (tree/corruption.hpp) with probability p, sentence k
// drawing from stream.derive(keys[k]): key a sentence by its index in its
// file and it gets the same tree in any subset or order. Throws Error when
// keys and corpus differ in size; all or nothing, as replace_trees.
inline void corrupt_trees(std::vector<TaggedSentence>& corpus, double p, const RandomStream& stream,
                          const std::vector<std::size_t>& keys) {
  if (keys.size() != corpus.size())
    throw Error("corrupt_trees: " + std::to_string(keys.size()) + " keys for " + std::to_string(corpus.size()) +
                " sentences");
  std::vector<std::vector<int>> heads(corpus.size());
  std::vector<DependencyTree> trees(corpus.size());
  for (std::size_t k = 0; k < corpus.size(); ++k) {
    heads[k] = corrupt_heads(corpus[k].heads, p, stream.derive(keys[k]), corpus[k].id);
    trees[k] = DependencyTree(heads[k], Structure::Tree, corpus[k].id);
  }
  for (std::size_t k = 0; k < corpus.size(); ++k) {
    corpus[k].heads = std::move(heads[k]);
    corpus[k].tree = std::move(trees[k]);
  }
}

// The same with sentence k keyed first_index + k (a whole file: 0).
inline void corrupt_trees(std::vector<TaggedSentence>& corpus, double p, const RandomStream& stream,
                          std::size_t first_index = 0) {
  std::vector<std::size_t> keys(corpus.size());
  for (std::size_t k = 0; k < keys.size(); ++k) keys[k] = first_index + k;
  corrupt_trees(corpus, p, stream, keys);
}

// Attachment agreement of two corpora's trees, word by word (UAS of `used`
// against `gold` when `gold` holds the gold trees): the share, in percent,
// of words whose heads agree, `gold`'s view 0 against `used`'s view `view`;
// throws Error when the corpora differ in sentences or words, or a sentence
// of `used` has no such view.
inline double tree_agreement(const std::vector<TaggedSentence>& gold, const std::vector<TaggedSentence>& used,
                             int view = 0) {
  if (gold.size() != used.size())
    throw Error("tree_agreement: " + std::to_string(gold.size()) + " gold sentences but " +
                std::to_string(used.size()) + " others");
  std::size_t words = 0, same = 0;
  for (std::size_t k = 0; k < gold.size(); ++k) {
    const std::vector<int>& heads = view == 0 ? used[k].heads : used[k].view_tree(view).heads();
    if (gold[k].heads.size() != heads.size())
      throw Error("tree_agreement: sentence " + gold[k].id + " has " + std::to_string(gold[k].heads.size()) +
                  " words but " + std::to_string(heads.size()) + " in the other corpus");
    same += correct_heads(gold[k].heads, heads);
    words += gold[k].heads.size();
  }
  return words ? 100.0 * static_cast<double>(same) / static_cast<double>(words) : 100.0;
}

}  // namespace synattn

#endif  // SYNATTN_DATA_TREE_SOURCE_HPP
