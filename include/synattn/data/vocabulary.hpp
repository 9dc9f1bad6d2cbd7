// synattn — word vocabulary and label set of a tagging corpus.
//
// Vocabulary ids: 0 = padding (kPad), 1 = unknown (kUnk), then the words of
// the sentences it was built from by descending count, ties by first
// appearance (sentence order, then word order). First appearance rather than
// lexicographic order because it needs no string comparison of UTF-8 and is
// what the Python twin reproduces with a stable sort.
//
// Label ids: the distinct labels sorted by their bytes (std::string's <, the
// same as Python's sorted(key=str.encode)). A label outside the set maps to
// kIgnore = -100, the cross-entropy's ignore label.
#ifndef SYNATTN_DATA_VOCABULARY_HPP
#define SYNATTN_DATA_VOCABULARY_HPP

#include <algorithm>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "../error.hpp"
#include "tagging_corpus.hpp"

namespace synattn {

class Vocabulary {
 public:
  static constexpr int kPad = 0;
  static constexpr int kUnk = 1;

  // From `sentences[indices[k]]` in that order (all sentences when indices
  // is null). Throws if an index is out of range.
  static Vocabulary build(const std::vector<TaggedSentence>& sentences,
                          const std::vector<std::size_t>* indices = nullptr) {
    std::unordered_map<std::string, std::size_t> slot;  // word -> order of first appearance
    std::vector<std::string> words;
    std::vector<long> counts;
    const auto add = [&](const TaggedSentence& s) {
      for (const std::string& w : s.forms) {
        const auto it = slot.emplace(w, words.size());
        if (it.second) {
          words.push_back(w);
          counts.push_back(0);
        }
        ++counts[it.first->second];
      }
    };
    if (indices) {
      for (std::size_t k = 0; k < indices->size(); ++k) {
        if ((*indices)[k] >= sentences.size())
          throw Error("Vocabulary::build: indices[" + std::to_string(k) + "] = " +
                      std::to_string((*indices)[k]) + ", expected < " +
                      std::to_string(sentences.size()) + " (the number of sentences)");
        add(sentences[(*indices)[k]]);
      }
    } else {
      for (const TaggedSentence& s : sentences) add(s);
    }
    std::vector<std::size_t> order(words.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    // Stable on first-appearance order: ties keep it.
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return counts[a] > counts[b]; });
    Vocabulary v;
    v.words_ = {"<pad>", "<unk>"};
    v.counts_ = {0, 0};
    for (std::size_t i : order) {
      v.index_.emplace(words[i], static_cast<int>(v.words_.size()));
      v.words_.push_back(words[i]);
      v.counts_.push_back(counts[i]);
    }
    return v;
  }

  int size() const noexcept { return static_cast<int>(words_.size()); }
  // The id of `word`, or kUnk when absent.
  int id(const std::string& word) const {
    const auto it = index_.find(word);
    return it == index_.end() ? kUnk : it->second;
  }
  bool contains(const std::string& word) const { return index_.count(word) != 0; }
  const std::string& word(int id) const { return words_.at(checked(id, "word")); }
  // Occurrences in the sentences built from (0 for kPad and kUnk).
  long count(int id) const { return counts_[checked(id, "count")]; }
  // Seen exactly once: the words word dropout may replace by kUnk.
  bool is_singleton(int id) const { return counts_[checked(id, "is_singleton")] == 1; }
  const std::vector<std::string>& words() const noexcept { return words_; }

 private:
  std::size_t checked(int id, const char* fn) const {
    if (id < 0 || id >= size())
      throw Error(std::string("Vocabulary::") + fn + ": id " + std::to_string(id) +
                  " out of range [0, " + std::to_string(size()) + ")");
    return static_cast<std::size_t>(id);
  }

  std::vector<std::string> words_;
  std::vector<long> counts_;
  std::unordered_map<std::string, int> index_;
};

class LabelSet {
 public:
  static constexpr int kIgnore = -100;

  // Every label of `sentences`, sorted.
  static LabelSet build(const std::vector<TaggedSentence>& sentences) {
    std::vector<std::string> names;
    for (const TaggedSentence& s : sentences) names.insert(names.end(), s.labels.begin(), s.labels.end());
    return from_names(std::move(names));
  }
  // Any list of names (sorted, duplicates removed).
  static LabelSet from_names(std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    LabelSet l;
    for (std::size_t i = 0; i < names.size(); ++i) l.index_.emplace(names[i], static_cast<int>(i));
    l.names_ = std::move(names);
    return l;
  }

  int size() const noexcept { return static_cast<int>(names_.size()); }
  // The class of `label`, or kIgnore when it is not in the set.
  int id(const std::string& label) const {
    const auto it = index_.find(label);
    return it == index_.end() ? kIgnore : it->second;
  }
  const std::string& name(int id) const {
    if (id < 0 || id >= size())
      throw Error("LabelSet::name: id " + std::to_string(id) + " out of range [0, " +
                  std::to_string(size()) + ")");
    return names_[static_cast<std::size_t>(id)];
  }
  const std::vector<std::string>& names() const noexcept { return names_; }

  // Words of `sentences` whose label is outside the set (they are ignored).
  std::size_t count_ignored(const std::vector<TaggedSentence>& sentences) const {
    std::size_t n = 0;
    for (const TaggedSentence& s : sentences)
      for (const std::string& l : s.labels) n += id(l) == kIgnore ? 1 : 0;
    return n;
  }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int> index_;
};

}  // namespace synattn

#endif  // SYNATTN_DATA_VOCABULARY_HPP
