// synattn — a word-tagging corpus from CoNLL-U: lower-cased forms, gold
// trees and base dependency relations, for the DEPREL-prediction experiment.
//
// Lower-casing is ASCII only: bytes 'A'..'Z' become 'a'..'z' and every other
// byte is kept, so non-ASCII letters (all of multi-byte UTF-8) keep their
// case ("École" -> "École", "NAÏVE" -> "naÏve"). Why: it needs no locale and
// no Unicode tables, is identical in C++ and in the Python twin
// (bench/pytorch_train_reference.py: str.translate over A-Z), and EWT is
// almost entirely ASCII.
//
// The label of a word is its base DEPREL, the part before the first ':'
// ("nmod:poss" -> "nmod", "acl:relcl" -> "acl", "root" -> "root").
#ifndef SYNATTN_DATA_TAGGING_CORPUS_HPP
#define SYNATTN_DATA_TAGGING_CORPUS_HPP

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../io/conllu.hpp"
#include "../tree/dependency_tree.hpp"

namespace synattn {

struct TaggedSentence {
  std::string id;                   // "# sent_id", or "#K (line L)" without one
  std::vector<std::string> forms;   // lower-cased FORM of each word
  std::vector<int> heads;           // 0-based, root = -1
  std::vector<std::string> labels;  // base DEPREL of each word
  DependencyTree tree;              // built once from heads (distances come from it)
  std::size_t line = 0;             // 1-based line of the sentence in its file

  int size() const noexcept { return static_cast<int>(forms.size()); }
};

// ASCII lower-casing (see the file comment for non-ASCII bytes).
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// "nmod:poss" -> "nmod". Throws if the relation is empty or starts with ':'.
inline std::string base_deprel(std::string_view deprel) {
  const std::size_t colon = deprel.find(':');
  if (deprel.empty() || colon == 0)
    throw Error("base_deprel: DEPREL '" + std::string(deprel) +
                "' has no base relation (expected e.g. 'nmod' or 'nmod:poss')");
  return std::string(deprel.substr(0, colon));
}

// One CoNLL-U sentence as a tagged sentence. `file` only names the source in
// messages. Throws ParseError "FILE:LINE: sentence ID: word K ('form') has
// DEPREL '_', expected ..." for a word without a usable DEPREL, LINE being
// the sentence's first line.
inline TaggedSentence to_tagged_sentence(const ConlluSentence& s, const std::string& file = {}) {
  TaggedSentence t;
  t.id = s.label();
  t.line = s.line;
  t.heads = s.heads();
  t.forms.reserve(s.size());
  t.labels.reserve(s.size());
  for (const ConlluWord& w : s.words) {
    if (w.deprel == "_" || w.deprel.empty() || w.deprel.front() == ':')
      throw ParseError(file, s.line,
                       "sentence " + t.id + ": word " + std::to_string(w.id) + " ('" + w.form +
                           "') has DEPREL '" + w.deprel + "', expected a relation such as 'nsubj'");
    t.forms.push_back(ascii_lower(w.form));
    t.labels.push_back(base_deprel(w.deprel));
  }
  t.tree = DependencyTree(t.heads, Structure::Tree, t.id);
  return t;
}

// Every sentence of a CoNLL-U stream / file, strictly parsed: malformed input
// is a ParseError "FILE:LINE: reason" (read_conllu's).
inline std::vector<TaggedSentence> read_tagging_corpus(std::istream& in, const std::string& file) {
  const std::vector<ConlluSentence> raw = read_conllu(in, file);
  std::vector<TaggedSentence> out;
  out.reserve(raw.size());
  for (const ConlluSentence& s : raw) out.push_back(to_tagged_sentence(s, file));
  return out;
}

inline std::vector<TaggedSentence> load_tagging_corpus(const std::string& path) {
  const std::vector<ConlluSentence> raw = read_conllu(path);
  std::vector<TaggedSentence> out;
  out.reserve(raw.size());
  for (const ConlluSentence& s : raw) out.push_back(to_tagged_sentence(s, path));
  return out;
}

// Word counts per sentence (what the batchers sort by).
inline std::vector<int> sentence_lengths(const std::vector<TaggedSentence>& sentences) {
  std::vector<int> lengths;
  lengths.reserve(sentences.size());
  for (const TaggedSentence& s : sentences) lengths.push_back(s.size());
  return lengths;
}

}  // namespace synattn

#endif  // SYNATTN_DATA_TAGGING_CORPUS_HPP
