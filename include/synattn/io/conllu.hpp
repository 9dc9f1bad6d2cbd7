// synattn — CoNLL-U input: a streaming reader of dependency trees (docs/math.md §1).
//
// Reads the columns a syntax bias needs (ID, FORM, UPOS, HEAD, DEPREL) and the
// `# sent_id` / `# text` / `# newdoc [id = ...]` comments (a newdoc marks the
// first sentence of a document, as UD writes it). Multiword-token lines (`3-4`) and empty
// nodes (`5.1`) are checked for shape and skipped: only integer IDs are words,
// and HEAD refers to them. Every sentence returned is a valid tree. IDs and
// HEADs are integers in canonical form: `01`, `-0`, `1.0` and ranges that
// are empty or reversed (`1-1`, `3-2`) are errors, not silently read.
//
// Format accepted: sentences are blocks of lines ended by an empty line (a
// line of only spaces/tabs counts as empty, so does the end of the input);
// `\r\n` line ends and a UTF-8 byte-order mark at the start are accepted
// (CR-only line ends are not, and the error says so); a block of comments
// alone is not a sentence. Malformed input is a FormatError
// "FILE:LINE: reason" naming the offending line (for tree-shape problems, the
// line of a word on the problem). In Lenient mode a bad sentence is skipped
// and reported instead, and reading goes on with the next one.
#ifndef SYNATTN_IO_CONLLU_HPP
#define SYNATTN_IO_CONLLU_HPP

#include <climits>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <istream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../tree/dependency_tree.hpp"
#include "../tree/heads.hpp"
#include "input_file.hpp"

namespace synattn {

struct ConlluWord {
  int id = 0;  // 1-based CoNLL-U ID
  std::string form, upos, deprel;
  int head = 0;  // as in the file: 1-based, 0 = root
};

struct ConlluSentence {
  std::string sent_id;  // from "# sent_id = ..." (empty if absent)
  std::string text;     // from "# text = ..." (empty if absent)
  bool new_document = false;  // "# newdoc" or "# newdoc id = ...": the first sentence of a document
  std::string document_id;    // that comment's id (empty if absent, or no newdoc comment)
  std::size_t line = 0;   // 1-based line number of the sentence's first line
  std::size_t index = 0;  // 0-based position among the sentences its reader returned
  std::vector<ConlluWord> words;  // integer-ID lines only, in ID order

  std::size_t size() const noexcept { return words.size(); }
  bool empty() const noexcept { return words.empty(); }

  // Canonical heads (0-based, root = -1). Throws TreeError if a HEAD is out
  // of range (only possible for a sentence not built by ConlluReader).
  std::vector<int> heads() const {
    std::vector<int> file_heads(words.size());
    for (std::size_t i = 0; i < words.size(); ++i) file_heads[i] = words[i].head;
    for (int h : file_heads)
      if (h < 0 || static_cast<std::size_t>(h) > words.size())
        return to_canonical_heads(file_heads, HeadConvention::OneBasedRootZero, label());
    for (int& h : file_heads) --h;
    return file_heads;
  }

  // The validated tree; a TreeError names this sentence by label().
  DependencyTree tree() const { return DependencyTree(heads(), Structure::Tree, label()); }

  // A name for messages: the sent_id, or "#K (line L)" without one.
  std::string label() const {
    if (!sent_id.empty()) return sent_id;
    return "#" + std::to_string(index + 1) + " (line " + std::to_string(line) + ")";
  }
};

enum class ConlluMode { Strict, Lenient };

// One sentence skipped in Lenient mode: where and why.
struct ConlluIssue {
  std::string file;
  std::size_t line = 0;
  std::string reason;

  // "FILE:LINE: reason", the same shape as FormatError::what().
  std::string to_string() const {
    return (file.empty() ? std::string("<input>") : file) + ":" + std::to_string(line) + ": " +
           reason;
  }
};

namespace detail {

enum class IntParse { Ok, NotInteger, TooLarge, LeadingZero, MinusZero };

// A decimal integer with an optional leading '-', nothing else (no '+', no
// spaces), in canonical form: no leading zeros ("01", "00") and no "-0",
// which UD never writes and which would otherwise read as another number's
// twin (HEAD "-0" as the root). std::from_chars would accept those.
inline IntParse parse_conllu_int(std::string_view s, int& out) noexcept {
  std::size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) i = 1;
  if (i == s.size()) return IntParse::NotInteger;
  if (s[i] == '0' && s.size() > i + 1 && s[i + 1] >= '0' && s[i + 1] <= '9') {
    for (std::size_t k = i; k < s.size(); ++k)
      if (s[k] < '0' || s[k] > '9') return IntParse::NotInteger;
    return IntParse::LeadingZero;
  }
  if (negative && s.size() == 2 && s[1] == '0') return IntParse::MinusZero;
  long long value = 0;
  bool too_large = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return IntParse::NotInteger;
    if (!too_large) {
      value = value * 10 + (c - '0');
      too_large = value > INT_MAX;
    }
  }
  if (too_large) return IntParse::TooLarge;
  out = static_cast<int>(negative ? -value : value);
  return IntParse::Ok;
}

inline bool all_digits(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Digits without a leading zero ("0" itself is fine).
inline bool has_leading_zero(std::string_view digits) noexcept {
  return digits.size() > 1 && digits[0] == '0';
}

// Value of a string of at most 9 digits, or -1 when longer (too large to be
// a sentence position anyway; then only the shape checks apply).
inline long small_value(std::string_view digits) noexcept {
  if (digits.size() > 9) return -1;
  long v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

inline bool is_blank_line(std::string_view s) noexcept {
  for (char c : s)
    if (c != ' ' && c != '\t') return false;
  return true;
}

inline std::string_view trim_spaces(std::string_view s) noexcept {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A field quoted for an error message: control bytes (NUL, CR, ...) are
// escaped so what() is neither cut short nor garbled, and a long field is
// cut (at a UTF-8 character boundary) so one bad line cannot flood a log.
inline std::string quote_field(std::string_view field) {
  constexpr std::size_t kShown = 40;
  std::size_t cut = field.size();
  if (cut > kShown) {
    cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(field[cut]) & 0xC0) == 0x80) --cut;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < cut; ++i) {
    const auto c = static_cast<unsigned char>(field[i]);
    if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  if (cut < field.size()) out += " (" + std::to_string(field.size()) + " bytes, cut)";
  return out;
}

// For a comment body "key = value" (the text after '#'): whether its key is
// `key`, and then its value.
inline bool comment_value(std::string_view body, std::string_view key, std::string_view& value) {
  body = trim_spaces(body);
  if (body.substr(0, key.size()) != key) return false;
  body.remove_prefix(key.size());
  body = trim_spaces(body);
  if (body.empty() || body.front() != '=') return false;
  value = trim_spaces(body.substr(1));
  return true;
}

}  // namespace detail

class ConlluReader {
 public:
  static constexpr std::size_t kColumns = 10;
  // Appended to a column-count error on a line that still holds a '\r'
  // (the '\r' of a "\r\n" line end is already gone).
  static constexpr const char* kCrHint =
      " (the line holds carriage returns: are the line ends CR-only? convert them to \\n or "
      "\\r\\n)";

  ConlluReader(std::istream& in, std::string file_name = "<stream>",
               ConlluMode mode = ConlluMode::Strict)
      : in_(in), file_(std::move(file_name)), mode_(mode) {}

  // Reads the next good sentence into `out` (its buffers are reused) and
  // returns true, or returns false at the end of the input. Strict mode
  // throws FormatError(file, line, reason) on a malformed sentence; the reader
  // has then consumed that sentence and may be called again to go on. Lenient
  // mode records the problem in issues() and goes on by itself. A stream read
  // error (badbit) is a FormatError in both modes.
  bool next(ConlluSentence& out) {
    for (;;) {
      const Block block = read_block();
      if (block == Block::End) return false;
      if (block == Block::Good) {
        cur_.index = returned_++;
        std::swap(out, cur_);
        return true;
      }
      if (mode_ == ConlluMode::Strict) throw FormatError(file_, error_line_, error_reason_);
      issues_.push_back(ConlluIssue{file_, error_line_, error_reason_});
    }
  }

  // Lenient mode: one entry per skipped sentence, in file order.
  const std::vector<ConlluIssue>& issues() const noexcept { return issues_; }
  // Good sentences returned so far (the 0-based index of the next one).
  std::size_t sentences_read() const noexcept { return returned_; }
  // Lines consumed so far.
  std::size_t lines_read() const noexcept { return line_; }
  const std::string& file_name() const noexcept { return file_; }
  ConlluMode mode() const noexcept { return mode_; }

 private:
  enum class Block { Good, Bad, End };

  // Reads one block into cur_: Good (a valid sentence), Bad (error_line_ and
  // error_reason_ set, the rest of the block consumed) or End.
  Block read_block() {
    for (;;) {
      cur_.sent_id.clear();
      cur_.text.clear();
      cur_.new_document = false;
      cur_.document_id.clear();
      cur_.words.clear();
      word_lines_.clear();
      bool in_block = false;
      bool had_tokens = false;  // multiword-token or empty-node lines
      while (read_line()) {
        const std::string_view line(buf_);
        if (detail::is_blank_line(line)) {
          if (in_block) break;
          continue;
        }
        if (!in_block) {
          in_block = true;
          cur_.line = line_;
        }
        if (line.front() == '#') {
          // With CR-only line ends the whole file is one "line"; if it starts
          // with a comment, it would all be skipped as that comment.
          if (line.find('\r') != line.npos) {
            fail(line_, "a comment line holds a carriage return: are the line ends CR-only? "
                        "convert them to \\n or \\r\\n");
            skip_rest_of_block();
            return Block::Bad;
          }
          read_comment(line.substr(1));
          continue;
        }
        if (!read_word_line(line, had_tokens)) {
          skip_rest_of_block();
          return Block::Bad;
        }
      }
      if (in_.bad())
        throw FormatError(file_, line_,
                         line_ == 0 ? "read error before the first line (the input stream failed; "
                                      "is it a directory?)"
                                    : "read error after this line (the input stream failed)");
      if (!in_block) return Block::End;
      if (cur_.words.empty()) {
        if (!had_tokens) continue;  // comments alone: not a sentence
        return fail(cur_.line,
                    "sentence has no words, only multiword-token or empty-node lines");
      }
      return check_tree() ? Block::Good : Block::Bad;
    }
  }

  // Next line into buf_ without its '\n' / "\r\n"; false at the end.
  bool read_line() {
    if (!std::getline(in_, buf_)) return false;
    ++line_;
    if (!buf_.empty() && buf_.back() == '\r') buf_.pop_back();
    if (line_ == 1 && buf_.compare(0, 3, "\xEF\xBB\xBF") == 0) buf_.erase(0, 3);
    return true;
  }

  void skip_rest_of_block() {
    while (read_line())
      if (detail::is_blank_line(buf_)) return;
  }

  Block fail(std::size_t line, std::string reason) {
    error_line_ = line;
    error_reason_ = std::move(reason);
    return Block::Bad;
  }

  void read_comment(std::string_view body) {
    std::string_view value;
    if (detail::comment_value(body, "sent_id", value))
      cur_.sent_id.assign(value);
    else if (detail::comment_value(body, "text", value))
      cur_.text.assign(value);
    else if (detail::comment_value(body, "newdoc id", value)) {
      cur_.new_document = true;
      cur_.document_id.assign(value);
    } else if (detail::trim_spaces(body) == "newdoc") {
      cur_.new_document = true;
    }
  }

  // Parses one non-comment line of the current block; false (error set) if
  // it is malformed.
  bool read_word_line(std::string_view line, bool& had_tokens) {
    std::string_view field[kColumns];
    std::size_t count = 0;
    for (std::size_t pos = 0;;) {
      const std::size_t tab = line.find('\t', pos);
      if (count < kColumns) field[count] = line.substr(pos, tab == line.npos ? line.npos : tab - pos);
      ++count;
      if (tab == line.npos) break;
      pos = tab + 1;
    }
    if (count != kColumns)
      return fail_bool(line_, "expected " + std::to_string(kColumns) +
                                  " tab-separated columns, found " + std::to_string(count) +
                                  (line.find('\r') != line.npos ? kCrHint : ""));

    const std::string_view id = field[0];
    // "3-4" (multiword token) and "5.1" (empty node) are not words. The
    // search for '-' starts at 1 so that "-1" reads as a (bad) integer ID.
    const std::size_t dash = id.find('-', 1);
    const std::size_t dot = id.find('.');
    if (dash != id.npos || dot != id.npos) {
      const std::size_t sep = dash != id.npos ? dash : dot;
      if (dash != id.npos && dot != id.npos) return fail_bool(line_, bad_id(id));
      const std::string_view first = id.substr(0, sep), second = id.substr(sep + 1);
      if (!detail::all_digits(first) || !detail::all_digits(second))
        return fail_bool(line_, bad_id(id));
      if (!check_token_id(id, first, second, dash != id.npos)) return false;
      had_tokens = true;
      return true;
    }

    int id_value = 0;
    switch (detail::parse_conllu_int(id, id_value)) {
      case detail::IntParse::Ok: break;
      case detail::IntParse::NotInteger:
      case detail::IntParse::MinusZero: return fail_bool(line_, bad_id(id));
      case detail::IntParse::LeadingZero:
        return fail_bool(line_, "ID " + detail::quote_field(id) + " has a leading zero");
      case detail::IntParse::TooLarge:
        return fail_bool(line_, "ID " + detail::quote_field(id) + " is too large");
    }
    const std::size_t expected = cur_.words.size() + 1;
    if (id_value < 0 || static_cast<std::size_t>(id_value) != expected)
      return fail_bool(line_, "word IDs not consecutive: expected " + std::to_string(expected) +
                                  ", found " + std::to_string(id_value));

    int head = 0;
    switch (detail::parse_conllu_int(field[6], head)) {
      case detail::IntParse::Ok: break;
      case detail::IntParse::NotInteger:
        return fail_bool(line_, "HEAD " + detail::quote_field(field[6]) + " is not an integer");
      case detail::IntParse::TooLarge:
        return fail_bool(line_, "HEAD " + detail::quote_field(field[6]) + " is too large");
      case detail::IntParse::LeadingZero:
        return fail_bool(line_, "HEAD " + detail::quote_field(field[6]) + " has a leading zero");
      case detail::IntParse::MinusZero:
        return fail_bool(line_, "HEAD " + detail::quote_field(field[6]) +
                                    " is minus zero (the root's HEAD is 0)");
    }
    static constexpr const char* kNames[kColumns] = {"ID",   "FORM", "LEMMA",  "UPOS", "XPOS",
                                                     "FEATS", "HEAD", "DEPREL", "DEPS", "MISC"};
    for (std::size_t c : {std::size_t{1}, std::size_t{3}, std::size_t{7}})
      if (field[c].empty())
        return fail_bool(line_, std::string(kNames[c]) + " is empty (CoNLL-U writes '_' for none)");

    cur_.words.emplace_back();
    ConlluWord& w = cur_.words.back();
    w.id = id_value;
    w.form.assign(field[1]);
    w.upos.assign(field[3]);
    w.deprel.assign(field[7]);
    w.head = head;
    word_lines_.push_back(line_);
    return true;
  }

  // Shape of a multiword-token range "START-END" (1 <= START < END) or an
  // empty-node ID "MAJOR.MINOR" (MINOR >= 1; MAJOR may be 0, before the first
  // word), both in digits without leading zeros. "1-1", "3-2" and "1.0"
  // are not valid UD and are refused rather than skipped.
  bool check_token_id(std::string_view id, std::string_view first, std::string_view second,
                      bool range) {
    const std::string kind = range ? "multiword-token range " : "empty-node ID ";
    if (detail::has_leading_zero(first) || detail::has_leading_zero(second))
      return fail_bool(line_, kind + detail::quote_field(id) + " has a leading zero");
    const long a = detail::small_value(first), b = detail::small_value(second);
    if (range) {
      if (a == 0)
        return fail_bool(line_, kind + detail::quote_field(id) + " starts at 0 (word IDs start at 1)");
      // A longer digit string is the larger number (no leading zeros).
      const bool ordered = first.size() != second.size() ? first.size() < second.size() : first < second;
      if (!ordered)
        return fail_bool(line_, kind + detail::quote_field(id) +
                                    " is reversed or empty (expected START-END with START < END)");
    } else if (b == 0) {
      return fail_bool(line_, kind + detail::quote_field(id) + ": the part after '.' must be 1 or more");
    }
    return true;
  }

  static std::string bad_id(std::string_view id) {
    return "ID " + detail::quote_field(id) + " is not an integer";
  }

  bool fail_bool(std::size_t line, std::string reason) {
    fail(line, std::move(reason));
    return false;
  }

  // Tree shape in the file's own numbering (1-based IDs, HEAD 0 = root), so
  // messages match what the user sees in the file; validate_heads would name
  // 0-based words. Order: per-word problems first (in word order), then the
  // root count, then cycles.
  bool check_tree() {
    const std::vector<ConlluWord>& words = cur_.words;
    const std::size_t n = words.size();
    const long n_long = static_cast<long>(n);
    std::size_t roots = 0, second_root = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const long h = words[i].head;
      if (h < 0 || h > n_long)
        return fail_bool(word_lines_[i], "HEAD " + std::to_string(h) + " out of range [0, " +
                                             std::to_string(n) + "]");
      if (h == words[i].id)
        return fail_bool(word_lines_[i], "a word is its own head: word " +
                                             std::to_string(words[i].id) + " has HEAD " +
                                             std::to_string(h));
      if (h == 0) {
        if (roots == 1) second_root = i;
        ++roots;
      }
    }
    if (roots == 0) return fail_bool(word_lines_[0], "no root: no word has HEAD 0");
    if (roots > 1) {
      std::vector<int> ids;
      for (std::size_t i = 0; i < n; ++i)
        if (words[i].head == 0) ids.push_back(words[i].id);
      return fail_bool(word_lines_[second_root], "several roots: words " + list_ids(ids) +
                                                     " have HEAD 0");
    }

    // Follow heads from each unvisited word; meeting a word on the current
    // walk closes a cycle. O(n): every word is walked over once.
    enum : unsigned char { kUnseen = 0, kOnPath = 1, kDone = 2 };
    state_.assign(n + 1, kUnseen);  // indexed by ID; ID 0 is the root's head
    state_[0] = kDone;
    for (std::size_t start = 1; start <= n; ++start) {
      std::size_t w = start;
      while (state_[w] == kUnseen) {
        state_[w] = kOnPath;
        w = static_cast<std::size_t>(words[w - 1].head);
      }
      if (state_[w] == kOnPath) {
        std::size_t smallest = w;
        for (std::size_t c = head_of(w); c != w; c = head_of(c)) smallest = c < smallest ? c : smallest;
        std::vector<int> path{static_cast<int>(smallest)};
        for (std::size_t c = head_of(smallest); c != smallest; c = head_of(c))
          path.push_back(static_cast<int>(c));
        return fail_bool(word_lines_[smallest - 1],
                         "cycle through words " + detail::cycle_text(path));
      }
      for (std::size_t c = start; state_[c] == kOnPath; c = head_of(c)) state_[c] = kDone;
    }
    return true;
  }

  std::size_t head_of(std::size_t id) const {
    return static_cast<std::size_t>(cur_.words[id - 1].head);
  }

  // "2 and 7", "2, 5 and 7"; long lists are cut so a message stays readable.
  static std::string list_ids(const std::vector<int>& ids) {
    constexpr std::size_t kShown = 8;
    std::string out;
    if (ids.size() > kShown + 1) {
      for (std::size_t i = 0; i < kShown; ++i) out += std::to_string(ids[i]) + ", ";
      return out + "... and " + std::to_string(ids.size() - kShown) + " more";
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) out += i + 1 == ids.size() ? " and " : ", ";
      out += std::to_string(ids[i]);
    }
    return out;
  }

  std::istream& in_;
  std::string file_;
  ConlluMode mode_;
  std::size_t line_ = 0;
  std::size_t returned_ = 0;
  std::vector<ConlluIssue> issues_;
  std::size_t error_line_ = 0;
  std::string error_reason_;
  // Reused from sentence to sentence so steady-state reading allocates only
  // for the sentences handed out (and words longer than the SSO buffer).
  std::string buf_;
  ConlluSentence cur_;
  std::vector<std::size_t> word_lines_;
  std::vector<unsigned char> state_;
};

// Every good sentence of `in`. Lenient-mode issues are appended to `*issues`
// when given.
inline std::vector<ConlluSentence> read_conllu(std::istream& in, const std::string& file_name,
                                               ConlluMode mode = ConlluMode::Strict,
                                               std::vector<ConlluIssue>* issues = nullptr) {
  ConlluReader reader(in, file_name, mode);
  std::vector<ConlluSentence> out;
  ConlluSentence sentence;
  while (reader.next(sentence)) out.push_back(std::move(sentence));
  if (issues) issues->insert(issues->end(), reader.issues().begin(), reader.issues().end());
  return out;
}

// Opens `path` for a ConlluReader; FormatError(path, 0, "cannot open file")
// if it cannot be opened, "cannot open file (it is a directory)" for a
// directory (which an ifstream opens without complaint and then fails to read).
inline std::ifstream open_conllu_file(const std::string& path) { return open_input_file(path); }

// The file at `path`, opened by open_conllu_file.
inline std::vector<ConlluSentence> read_conllu(const std::string& path,
                                               ConlluMode mode = ConlluMode::Strict,
                                               std::vector<ConlluIssue>* issues = nullptr) {
  std::ifstream in = open_conllu_file(path);
  return read_conllu(in, path, mode, issues);
}

}  // namespace synattn

#endif  // SYNATTN_IO_CONLLU_HPP
