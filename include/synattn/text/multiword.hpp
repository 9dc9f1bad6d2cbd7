// synattn — the words of a multiword token, learned from a treebank's own
// multiword tokens: "don't" -> "do" "n't", "cannot" -> "can" "not", Spanish
// "del" -> "de" "el", "al" -> "a" "el".
//
// Every training multiword token t with words w_1 .. w_m becomes a rule
// (X, Y, W): with k the longest common prefix of t and w_1 (ignoring case),
// X = t[k:] (the token's tail), Y = w_1[k:] (what replaces it in w_1) and
// W = w_2 .. w_m. "don't" = "do"|"n't": X = "n't", Y = "", W = ("n't");
// "del" = "de"|"l": X = "l", Y = "", W = ("el"); "al": k = 1, X = "l", ...
// The same rule thus splits every token ending in its X, and that is how an
// unseen token is split: by the most frequent rule of the longest tail X it
// ends in (leaving at least one character in front). A token seen in
// training is split as it was most often (a dictionary of seen splits), so
// irregular forms keep their own words.
//
// Case: when a rule's words spell the token's own tail (Y + W = X, as for
// every English contraction), the words are cut from the token as written,
// so "DON'T" gives "DO" "N'T"; otherwise the rule's words are used, upper-
// cased when the token's tail is all upper case.
//
// Whether a token is a multiword token at all is the segmenter network's
// call (text/segmenter_labels.hpp's classes 3 and 4), with one exception: a
// form the treebank wrote as a multiword token more often than not (and at
// least twice: "dont", "ive", "gotta") is always split, as the treebank
// would. On EWT dev that forces 254 tokens the treebank splits and 3 it
// does not (at 95 % instead of a majority: 248 and 3). expand() says what the words are, or returns no words
// when no rule fits (the token then stays one word).
#ifndef SYNATTN_TEXT_MULTIWORD_HPP
#define SYNATTN_TEXT_MULTIWORD_HPP

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "../error.hpp"
#include "../io/json_fields.hpp"
#include "document.hpp"
#include "utf8.hpp"

namespace synattn {
namespace text {

namespace detail {

inline std::u32string decode(const std::string& s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) out.push_back(next_code_point(s, i));
  return out;
}
inline std::string encode(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) encode_utf8(c, out);
  return out;
}
// Upper case for the scripts whose case is a fixed offset (ASCII, Latin-1,
// Greek, Cyrillic); other characters are their own upper case. (Lower case
// is text/utf8.hpp's lowercase, the scorer's.)
inline char32_t upper(char32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7) || (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) ||
      (c >= 0x430 && c <= 0x44F))
    return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}
inline std::u32string lowered(const std::u32string& s) { return lowercase(s); }
inline bool equal_lowercase(char32_t a, char32_t b) {
  return a == b || lowercase(std::u32string_view(&a, 1)) == lowercase(std::u32string_view(&b, 1));
}
inline bool all_upper(const std::u32string& s) {
  bool cased = false;
  for (char32_t c : s) {
    if (lowercase(std::u32string_view(&c, 1)) != std::u32string_view(&c, 1)) cased = true;
    if (upper(c) != c) return false;
  }
  return cased;
}

}  // namespace detail

class MultiwordExpander {
 public:
  struct Rule {
    std::u32string tail;                 // X: lower case
    std::u32string replacement;          // Y
    std::vector<std::u32string> others;  // W: the words after the first
    bool operator<(const Rule& o) const {
      return std::tie(tail, replacement, others) < std::tie(o.tail, o.replacement, o.others);
    }
  };

  // Learns from every multiword token of `docs`.
  static MultiwordExpander learn(const std::vector<const Document*>& docs) {
    namespace d = text::detail;
    MultiwordExpander e;
    std::map<std::u32string, std::map<Rule, long long>> seen;  // lower-cased token -> its rules
    std::map<std::u32string, std::pair<long long, long long>> occurrences;  // lower-cased token -> (all, multiword)
    for (const Document* doc : docs)
      for (const Sentence& s : doc->sentences)
        for (const Token& t : s.tokens) {
          auto& occ = occurrences[d::lowered(d::decode(t.form))];
          ++occ.first;
          if (!t.multiword()) continue;
          ++occ.second;
          std::vector<std::string> words;
          for (int w = 0; w < t.word_count; ++w) words.push_back(s.words[static_cast<std::size_t>(t.first_word + w)].form);
          const Rule r = rule_of(d::decode(t.form), words);
          ++seen[d::lowered(d::decode(t.form))][r];
          ++e.rule_counts_[r];
        }
    for (const auto& kv : seen) {
      const auto best = std::max_element(kv.second.begin(), kv.second.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; });
      e.dictionary_[kv.first] = best->first;
      const auto& occ = occurrences[kv.first];
      if (occ.second >= kAlwaysMinCount && 2 * occ.second > occ.first) e.always_.insert(kv.first);
    }
    e.index_tails();
    return e;
  }

  static constexpr long long kAlwaysMinCount = 2;

  std::size_t dictionary_size() const noexcept { return dictionary_.size(); }

  // Whether the treebank (nearly) always split this form (see the top).
  bool always_split(const std::string& form) const {
    namespace d = text::detail;
    return always_.count(d::lowered(d::decode(form))) > 0;
  }
  std::size_t rule_count() const noexcept { return rule_counts_.size(); }

  // The words of token `form` (UTF-8), or none when no rule fits.
  std::vector<std::string> expand(const std::string& form) const {
    namespace d = text::detail;
    const std::u32string token = d::decode(form);
    const std::u32string key = d::lowered(token);
    const Rule* rule = nullptr;
    if (const auto it = dictionary_.find(key); it != dictionary_.end()) {
      rule = &it->second;
    } else {
      for (std::size_t k = 1; k < key.size() && !rule; ++k) {  // longest tail first, one character kept in front
        const auto it2 = best_by_tail_.find(key.substr(k));
        if (it2 != best_by_tail_.end()) rule = &it2->second;
      }
    }
    if (!rule || rule->tail.size() > token.size()) return {};
    return apply(*rule, token);
  }

  std::string to_json() const {
    namespace d = text::detail;
    const auto rule_json = [](const Rule& r) {
      nlohmann::json others = nlohmann::json::array();
      for (const auto& w : r.others) others.push_back(d::encode(w));
      return nlohmann::json{{"tail", d::encode(r.tail)}, {"replacement", d::encode(r.replacement)}, {"words", others}};
    };
    nlohmann::json j;
    j["dictionary"] = nlohmann::json::array();
    for (const auto& kv : dictionary_) {
      nlohmann::json e = rule_json(kv.second);
      e["token"] = d::encode(kv.first);
      j["dictionary"].push_back(e);
    }
    j["always"] = nlohmann::json::array();
    for (const auto& f : always_) j["always"].push_back(d::encode(f));
    j["rules"] = nlohmann::json::array();
    for (const auto& kv : rule_counts_) {
      nlohmann::json e = rule_json(kv.first);
      e["count"] = kv.second;
      j["rules"].push_back(e);
    }
    return j.dump();
  }

  static MultiwordExpander from_json(const std::string& text) {
    namespace d = text::detail;
    MultiwordExpander e;
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      const auto utf8_field = [](const nlohmann::json& o, const char* key) {
        const std::string s = o.at(key).get<std::string>();
        require_utf8(s, std::string("multiword rules: ") + key);
        return d::decode(s);
      };
      const auto rule_of_json = [&](const nlohmann::json& o) {
        Rule r;
        r.tail = d::lowered(utf8_field(o, "tail"));
        r.replacement = utf8_field(o, "replacement");
        for (const auto& w : o.at("words")) {
          const std::string s = w.get<std::string>();
          require_utf8(s, "multiword rules: words");
          r.others.push_back(d::decode(s));
        }
        if (r.others.empty()) throw Error("multiword rules: a rule without words after the first");
        return r;
      };
      for (const auto& o : j.at("dictionary")) e.dictionary_[d::lowered(utf8_field(o, "token"))] = rule_of_json(o);
      for (const auto& f : j.at("always")) {
        const std::string form = f.get<std::string>();
        require_utf8(form, "multiword rules: always");
        const std::u32string key = d::lowered(d::decode(form));
        if (!e.dictionary_.count(key)) throw Error("multiword rules: '" + form + "' is always split but has no split");
        e.always_.insert(key);
      }
      std::size_t index = 0;
      for (const auto& o : j.at("rules")) {
        // Through the model files' one integer reader: get<long long>() cut
        // 2.7 to 2 and cast 1e300 with undefined behaviour.
        const long long count = synattn::detail::checked_integer<long long>(
            o.at("count"), "multiword rules: rules[" + std::to_string(index++) + "].count", 1,
            std::numeric_limits<long long>::max());
        e.rule_counts_[rule_of_json(o)] = count;
      }
    } catch (const nlohmann::json::exception& ex) {
      throw Error(std::string("multiword rules: ") + ex.what());
    }
    e.index_tails();
    return e;
  }

 private:
  static Rule rule_of(const std::u32string& token, const std::vector<std::string>& words) {
    namespace d = text::detail;
    const std::u32string first = d::decode(words.front());
    std::size_t k = 0;
    while (k < token.size() && k < first.size() && d::equal_lowercase(token[k], first[k])) ++k;
    Rule r;
    r.tail = d::lowered(token.substr(k));
    r.replacement = first.substr(k);
    for (std::size_t w = 1; w < words.size(); ++w) r.others.push_back(d::decode(words[w]));
    return r;
  }

  // For each tail, its most frequent rule (ties: the smaller rule, so the
  // choice does not depend on the order of the training data).
  void index_tails() {
    std::map<std::u32string, std::pair<long long, const Rule*>> best;
    for (const auto& kv : rule_counts_) {
      auto& b = best[kv.first.tail];
      if (!b.second || kv.second > b.first) b = {kv.second, &kv.first};
    }
    best_by_tail_.clear();
    for (const auto& kv : best)
      if (!kv.first.empty()) best_by_tail_[kv.first] = *kv.second.second;
  }

  static std::vector<std::string> apply(const Rule& r, const std::u32string& token) {
    namespace d = text::detail;
    const std::size_t k = token.size() - r.tail.size();
    const std::u32string tail = token.substr(k);
    std::vector<std::u32string> words;
    std::u32string spelled = r.replacement;
    for (const auto& w : r.others) spelled += w;
    if (d::lowered(spelled) == d::lowered(tail)) {
      // The words spell the token's tail: cut them from the token as written.
      std::size_t at = k + r.replacement.size();
      words.push_back(token.substr(0, at));
      for (const auto& w : r.others) {
        words.push_back(token.substr(at, w.size()));
        at += w.size();
      }
    } else {
      const bool upper = d::all_upper(tail);
      const auto cased = [&](std::u32string w) {
        if (upper)
          for (char32_t& c : w) c = d::upper(c);
        return w;
      };
      words.push_back(token.substr(0, k) + cased(r.replacement));
      for (const auto& w : r.others) words.push_back(cased(w));
    }
    std::vector<std::string> out;
    for (const auto& w : words) {
      if (w.empty()) return {};  // a rule that leaves a word empty does not fit this token
      out.push_back(d::encode(w));
    }
    return out;
  }

  std::map<std::u32string, Rule> dictionary_;
  std::map<Rule, long long> rule_counts_;
  std::map<std::u32string, Rule> best_by_tail_;
  std::set<std::u32string> always_;
};

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_MULTIWORD_HPP
