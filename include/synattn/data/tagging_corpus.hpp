// synattn — a token-classification corpus: per sentence its word forms, one
// label per word and the gold tree (which the syntax bias reads), from
// CoNLL-U or from a user's own arrays; for tree fusion, further trees of the
// same words (TaggedSentence::view_trees).
//
// From CoNLL-U, TaggingOptions says which column labels a word (UPOS, DEPREL,
// DEPREL's base before the first ':', or a user's function of the word) and
// whether forms are lower-cased. io/conllu.hpp keeps ID, FORM, UPOS, HEAD and
// DEPREL, so those are the columns there are. The defaults (ASCII-lower-cased
// forms, base DEPREL) are train_deprel's, kept so that code written before
// the options reads the same corpus; that example states its choice itself.
//
// Lower-casing is ASCII only: bytes 'A'..'Z' become 'a'..'z' and every other
// byte is kept, so non-ASCII letters (all of multi-byte UTF-8) keep their
// case ("École" -> "École", "NAÏVE" -> "naÏve"). Why: it needs no locale and
// no Unicode tables, and is identical in C++ and in the Python twin
// (bench/pytorch_train_reference.py: str.translate over A-Z).
#ifndef SYNATTN_DATA_TAGGING_CORPUS_HPP
#define SYNATTN_DATA_TAGGING_CORPUS_HPP

#include <cstddef>
#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../io/conllu.hpp"
#include "../tree/dependency_tree.hpp"
#include "../util/ascii.hpp"  // ascii_lower (see the file comment for non-ASCII bytes)

namespace synattn {

struct TaggedSentence {
  std::string id;                   // "# sent_id", or "#K (line L)" without one
  bool has_sent_id = false;         // id is a real sent_id (or a caller's own), not "#K (line L)": only
                                    // a real one is matched to a tree file's sentence (data/tree_source.hpp)
  std::vector<std::string> forms;   // FORM of each word (lower-cased by default)
  std::vector<int> heads;           // 0-based, root = -1
  std::vector<std::string> labels;  // each word's label (TaggingOptions::labels)
  DependencyTree tree;              // built once from heads (distances come from it)
  std::size_t line = 0;             // 1-based line of the sentence in its file
  // CoNLL-U "# newdoc [id = ...]": the first sentence of a document, and its
  // id (data/documents.hpp groups a corpus into documents by it).
  bool new_document = false;
  std::string document_id;
  // Tree fusion: the trees of views 1, 2, ... of the same words (e.g. what
  // other parsers drew; data/tree_source.hpp's add_tree_view), view 0 being
  // `tree`. Empty: one view, as before views existed. A view's heads are its
  // tree's heads().
  std::vector<DependencyTree> view_trees;

  int size() const noexcept { return static_cast<int>(forms.size()); }
  int views() const noexcept { return 1 + static_cast<int>(view_trees.size()); }
  // View v's tree; throws Error naming the sentence unless 0 <= v < views().
  const DependencyTree& view_tree(int v) const {
    if (v < 0 || v >= views())
      throw Error("TaggedSentence::view_tree: sentence " + id + " has " + std::to_string(views()) +
                  " tree views, asked for view " + std::to_string(v));
    return v == 0 ? tree : view_trees[static_cast<std::size_t>(v - 1)];
  }
};


// "nmod:poss" -> "nmod". Throws if the relation is empty or starts with ':'.
inline std::string base_deprel(std::string_view deprel) {
  const std::size_t colon = deprel.find(':');
  if (deprel.empty() || colon == 0)
    throw Error("base_deprel: DEPREL '" + std::string(deprel) +
                "' has no base relation (expected e.g. 'nmod' or 'nmod:poss')");
  return std::string(deprel.substr(0, colon));
}

// Which CoNLL-U column labels a word.
enum class LabelColumn {
  Upos,        // UPOS as written ("NOUN")
  Deprel,      // DEPREL as written ("nmod:poss")
  BaseDeprel,  // DEPREL before the first ':' ("nmod:poss" -> "nmod")
};

enum class FormCase {
  AsWritten,   // FORM as in the file
  AsciiLower,  // ascii_lower(FORM)
};

struct TaggingOptions {
  LabelColumn labels = LabelColumn::BaseDeprel;
  FormCase forms = FormCase::AsciiLower;
  // A user's own label for word `w` of sentence `s`; when set it is used
  // instead of `labels`. An empty label is refused (a LabelSet cannot name it).
  std::function<std::string(const ConlluSentence& s, const ConlluWord& w)> label_of;
};

namespace detail {
inline const char* label_column_name(LabelColumn c) {
  return c == LabelColumn::Upos ? "UPOS" : "DEPREL";
}

// The label of `w`, or empty when the column holds none ('_', or a DEPREL
// with no base before its ':').
inline std::string conllu_label(const ConlluWord& w, LabelColumn c) {
  switch (c) {
    case LabelColumn::Upos: return w.upos == "_" ? std::string() : w.upos;
    case LabelColumn::Deprel: return w.deprel == "_" ? std::string() : w.deprel;
    case LabelColumn::BaseDeprel:
      return w.deprel == "_" || w.deprel.empty() || w.deprel.front() == ':' ? std::string() : base_deprel(w.deprel);
  }
  return {};
}
}  // namespace detail

// A user's own sentence: forms, 0-based heads (root = -1) and one label per
// word. Throws Error naming `id` when the counts differ or a label is empty,
// TreeError (naming `id`) when the heads are not a tree.
inline TaggedSentence tagged_sentence(std::string id, std::vector<std::string> forms, std::vector<int> heads,
                                      std::vector<std::string> labels) {
  if (heads.size() != forms.size() || labels.size() != forms.size())
    throw Error("tagged_sentence: sentence " + id + " has " + std::to_string(forms.size()) + " forms, " +
                std::to_string(heads.size()) + " heads and " + std::to_string(labels.size()) +
                " labels; expected one of each per word");
  for (std::size_t j = 0; j < labels.size(); ++j)
    if (labels[j].empty())
      throw Error("tagged_sentence: sentence " + id + ": word " + std::to_string(j + 1) + " ('" + forms[j] +
                  "') has an empty label");
  TaggedSentence t;
  t.tree = DependencyTree(heads, Structure::Tree, id);
  t.has_sent_id = !id.empty();
  t.id = std::move(id);
  t.forms = std::move(forms);
  t.heads = std::move(heads);
  t.labels = std::move(labels);
  return t;
}

// One CoNLL-U sentence as a tagged sentence. `file` only names the source in
// messages. A word without a label is a FormatError "FILE:LINE: sentence ID:
// word K ('form') has DEPREL '_', expected ..." (UPOS for that column; for
// label_of "... label_of gave an empty label"), LINE being the sentence's
// first line.
inline TaggedSentence to_tagged_sentence(const ConlluSentence& s, const std::string& file = {},
                                         const TaggingOptions& options = {}) {
  TaggedSentence t;
  t.id = s.label();
  t.has_sent_id = !s.sent_id.empty();
  t.line = s.line;
  t.new_document = s.new_document;
  t.document_id = s.document_id;
  t.heads = s.heads();
  t.forms.reserve(s.size());
  t.labels.reserve(s.size());
  for (const ConlluWord& w : s.words) {
    std::string label = options.label_of ? options.label_of(s, w) : detail::conllu_label(w, options.labels);
    if (label.empty()) {
      const std::string word = "sentence " + t.id + ": word " + std::to_string(w.id) + " ('" + w.form + "')";
      if (options.label_of) throw FormatError(file, s.line, word + ": label_of gave an empty label");
      const bool upos = options.labels == LabelColumn::Upos;
      throw FormatError(file, s.line,
                       word + " has " + detail::label_column_name(options.labels) + " '" +
                           (upos ? w.upos : w.deprel) + "', expected " +
                           (upos ? "a tag such as 'NOUN'" : "a relation such as 'nsubj'"));
    }
    t.forms.push_back(options.forms == FormCase::AsciiLower ? ascii_lower(w.form) : w.form);
    t.labels.push_back(std::move(label));
  }
  t.tree = DependencyTree(t.heads, Structure::Tree, t.id);
  return t;
}

// Every sentence of a CoNLL-U stream / file, strictly parsed: malformed input
// is a FormatError "FILE:LINE: reason" (read_conllu's).
inline std::vector<TaggedSentence> read_tagging_corpus(std::istream& in, const std::string& file,
                                                       const TaggingOptions& options = {}) {
  const std::vector<ConlluSentence> raw = read_conllu(in, file);
  std::vector<TaggedSentence> out;
  out.reserve(raw.size());
  for (const ConlluSentence& s : raw) out.push_back(to_tagged_sentence(s, file, options));
  return out;
}

inline std::vector<TaggedSentence> load_tagging_corpus(const std::string& path, const TaggingOptions& options = {}) {
  const std::vector<ConlluSentence> raw = read_conllu(path);
  std::vector<TaggedSentence> out;
  out.reserve(raw.size());
  for (const ConlluSentence& s : raw) out.push_back(to_tagged_sentence(s, path, options));
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
