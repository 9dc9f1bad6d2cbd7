// synattn — what a parser knows of its treebank: word forms, characters,
// UPOS tags and dependency relations, each mapped to dense ids.
//
// Words are lower-cased (ASCII letters only: case is left to the character
// features, which see the form as written) and kept when they occur at least
// `min_count` times in the training data; everything else reads as the
// unknown word. Characters are Unicode code points (a Chinese form is a few
// characters, not a dozen bytes), all of those seen in training. Relations
// are the full DEPREL values ("nmod:poss"); evaluation compares their
// universal part.
//
// Reserved ids. Words: 0 padding, 1 unknown, 2 the artificial root.
// Characters: 0 padding, 1 unknown, 2 begin of word, 3 end of word, 4 the
// root's only character. UPOS: the tags seen, plus none reserved (the root
// and padding are not scored).
//
// The vocabulary travels with a model as JSON (to_json / from_json), so a
// saved parser reads new text exactly as it read its training data.
#ifndef SYNATTN_PARSE_PARSER_VOCABULARY_HPP
#define SYNATTN_PARSE_PARSER_VOCABULARY_HPP

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "../error.hpp"
#include "../io/conllu.hpp"
#include "../io/json_fields.hpp"
#include "../util/ascii.hpp"
#include "../util/metadata_number.hpp"

namespace synattn {
namespace parse {

constexpr std::int32_t kWordPadding = 0, kWordUnknown = 1, kWordRoot = 2;
constexpr std::int32_t kCharPadding = 0, kCharUnknown = 1, kCharBegin = 2, kCharEnd = 3, kCharRoot = 4;
constexpr int kReservedWords = 3, kReservedChars = 5;

// Decodes UTF-8 into code points; an invalid byte becomes U+FFFD, so any
// byte string has a character sequence (the readers reject bad UTF-8 where
// it matters, with the file and line).
inline void utf8_code_points(const std::string& s, std::vector<std::uint32_t>& out) {
  out.clear();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    std::uint32_t cp = extra == 0 ? c : extra == 1 ? (c & 0x1Fu) : extra == 2 ? (c & 0x0Fu) : (c & 0x07u);
    bool ok = extra >= 0 && i + static_cast<std::size_t>(extra) < n;
    for (int k = 1; ok && k <= extra; ++k) {
      const unsigned char cc = p[i + static_cast<std::size_t>(k)];
      if ((cc >> 6) != 0x2) ok = false;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    if (!ok) {
      out.push_back(0xFFFDu);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(extra) + 1;
  }
}

class ParserVocabulary {
 public:
  ParserVocabulary() = default;

  // From training sentences: words seen >= min_count times (lower-cased),
  // every character, UPOS tag and relation.
  static ParserVocabulary build(const std::vector<ConlluSentence>& train, int min_count = 2) {
    if (min_count < 1) throw Error("ParserVocabulary::build: min_count must be >= 1, got " + std::to_string(min_count));
    ParserVocabulary v;
    std::map<std::string, long long> words;
    std::map<std::uint32_t, long long> chars;
    std::map<std::string, long long> upos, labels;
    std::vector<std::uint32_t> cps;
    for (const ConlluSentence& s : train)
      for (const ConlluWord& w : s.words) {
        ++words[ascii_lower(w.form)];
        utf8_code_points(w.form, cps);
        for (std::uint32_t cp : cps) ++chars[cp];
        if (w.upos != "_") ++upos[w.upos];
        if (w.deprel != "_") ++labels[w.deprel];
      }
    v.words_ = {"<pad>", "<unk>", "<root>"};
    v.word_counts_ = {0, 0, 0};
    for (const auto& kv : words)
      if (kv.second >= min_count) {
        v.words_.push_back(kv.first);
        v.word_counts_.push_back(kv.second);
      }
    for (const auto& kv : chars) v.chars_.push_back(kv.first);
    for (const auto& kv : upos) v.upos_.push_back(kv.first);
    for (const auto& kv : labels) v.labels_.push_back(kv.first);
    if (v.labels_.empty()) throw Error("ParserVocabulary::build: the training sentences have no DEPREL values");
    v.index();
    return v;
  }

  int num_words() const noexcept { return static_cast<int>(words_.size()); }
  int num_chars() const noexcept { return static_cast<int>(chars_.size()) + kReservedChars; }
  int num_upos() const noexcept { return static_cast<int>(upos_.size()); }
  int num_labels() const noexcept { return static_cast<int>(labels_.size()); }

  std::int32_t word_id(const std::string& form) const {
    const auto it = word_index_.find(ascii_lower(form));
    return it == word_index_.end() ? kWordUnknown : it->second;
  }
  // Training count of word id w (0 for the reserved ids).
  long long word_count(std::int32_t w) const { return word_counts_.at(static_cast<std::size_t>(w)); }
  std::int32_t char_id(std::uint32_t code_point) const {
    const auto it = char_index_.find(code_point);
    return it == char_index_.end() ? kCharUnknown : it->second;
  }
  // -1 for a tag or relation the training data did not have.
  std::int32_t upos_id(const std::string& tag) const {
    const auto it = upos_index_.find(tag);
    return it == upos_index_.end() ? -1 : it->second;
  }
  std::int32_t label_id(const std::string& deprel) const {
    const auto it = label_index_.find(deprel);
    return it == label_index_.end() ? -1 : it->second;
  }
  const std::string& upos(int id) const { return upos_.at(static_cast<std::size_t>(id)); }
  const std::string& label(int id) const { return labels_.at(static_cast<std::size_t>(id)); }
  const std::vector<std::string>& labels() const noexcept { return labels_; }

  std::string to_json() const {
    nlohmann::json j;
    j["words"] = words_;
    j["word_counts"] = word_counts_;
    j["chars"] = chars_;
    j["upos"] = upos_;
    j["labels"] = labels_;
    return j.dump();
  }
  // Throws Error naming what is wrong (the caller adds the file).
  static ParserVocabulary from_json(const std::string& text) {
    ParserVocabulary v;
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      v.words_ = j.at("words").get<std::vector<std::string>>();
      v.word_counts_ = synattn::detail::checked_integers<long long>(j.at("word_counts"), "parser vocabulary: word_counts");
      v.chars_ = synattn::detail::checked_integers<std::uint32_t>(j.at("chars"), "parser vocabulary: chars");
      v.upos_ = j.at("upos").get<std::vector<std::string>>();
      v.labels_ = j.at("labels").get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("parser vocabulary: ") + e.what());
    }
    if (v.words_.size() < static_cast<std::size_t>(kReservedWords) || v.words_.size() != v.word_counts_.size() ||
        v.labels_.empty())
      throw Error("ParserVocabulary: expected at least 3 words with one count each and at least one label, got " +
                  std::to_string(v.words_.size()) + " words, " + std::to_string(v.word_counts_.size()) + " counts, " +
                  std::to_string(v.labels_.size()) + " labels");
    v.index();
    return v;
  }

  bool operator==(const ParserVocabulary& o) const {
    return words_ == o.words_ && word_counts_ == o.word_counts_ && chars_ == o.chars_ && upos_ == o.upos_ &&
           labels_ == o.labels_;
  }

 private:
  void index() {
    word_index_.clear();
    char_index_.clear();
    upos_index_.clear();
    label_index_.clear();
    for (std::size_t i = kReservedWords; i < words_.size(); ++i)
      if (!word_index_.emplace(words_[i], static_cast<std::int32_t>(i)).second)
        throw Error("ParserVocabulary: word '" + words_[i] + "' appears twice");
    for (std::size_t i = 0; i < chars_.size(); ++i)
      if (!char_index_.emplace(chars_[i], static_cast<std::int32_t>(i) + kReservedChars).second)
        throw Error("ParserVocabulary: character U+" + std::to_string(chars_[i]) + " appears twice");
    for (std::size_t i = 0; i < upos_.size(); ++i)
      if (!upos_index_.emplace(upos_[i], static_cast<std::int32_t>(i)).second)
        throw Error("ParserVocabulary: UPOS '" + upos_[i] + "' appears twice");
    for (std::size_t i = 0; i < labels_.size(); ++i)
      if (!label_index_.emplace(labels_[i], static_cast<std::int32_t>(i)).second)
        throw Error("ParserVocabulary: relation '" + labels_[i] + "' appears twice");
  }

  std::vector<std::string> words_;
  std::vector<long long> word_counts_;
  std::vector<std::uint32_t> chars_;
  std::vector<std::string> upos_, labels_;
  std::unordered_map<std::string, std::int32_t> word_index_;
  std::unordered_map<std::uint32_t, std::int32_t> char_index_;
  std::unordered_map<std::string, std::int32_t> upos_index_, label_index_;
};

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_PARSER_VOCABULARY_HPP
