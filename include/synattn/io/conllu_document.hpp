// synattn — a CoNLL-U document kept verbatim, for the parser's input and output.
//
// A dependency parser reads CoNLL-U, predicts HEAD and DEPREL, and must hand
// back everything else exactly as it came: comments, multiword-token lines
// ("3-4"), empty nodes ("5.1"), all ten columns, the blank lines between
// sentences. io/conllu.hpp keeps only the columns a syntax bias needs, so it
// cannot write a file back; ConlluDocument keeps every line of the input as
// read (CRLF line ends, a byte-order mark and a missing final newline
// included) and knows, per sentence, the line of each integer-ID word.
// set_heads() rewrites columns 7 and 8 of those lines and nothing else, so
// write() of an unchanged document gives the input back byte for byte.
//
// Validation is the strict reader's own (ConlluReader, run on each sentence),
// so both accept and refuse the same files with the same messages, with one
// difference: text still to be parsed has no tree, so a sentence may have
// HEAD '_' on every word; its DEPREL is then kept as read, whatever it is.
// A sentence has a HEAD on every word or on none; when it has them they must
// form a tree, exactly as for read_conllu. Malformed input is a FormatError
// "FILE:LINE: reason", LINE counted in the whole file.
#ifndef SYNATTN_IO_CONLLU_DOCUMENT_HPP
#define SYNATTN_IO_CONLLU_DOCUMENT_HPP

#include <cstddef>
#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "conllu.hpp"

namespace synattn::parse {

class ConlluDocument {
 public:
  static constexpr std::size_t kHeadColumn = 6;    // 0-based: column 7, HEAD
  static constexpr std::size_t kDeprelColumn = 7;  // 0-based: column 8, DEPREL

  ConlluDocument() = default;
  // An empty document whose messages name `file_name` (see append_sentence).
  explicit ConlluDocument(std::string file_name) : file_(std::move(file_name)) {}

  // Every line of `in`. Throws FormatError(file_name, line, reason) on a
  // malformed sentence or a stream read error.
  static ConlluDocument read(std::istream& in, const std::string& file_name) {
    ConlluDocument doc(file_name);
    std::string buf;
    while (std::getline(in, buf)) {
      // getline sets eofbit only when the line ran into the end of the input
      // instead of a '\n': the last line had no newline.
      doc.final_newline_ = !in.eof();
      doc.lines_.push_back(buf);
    }
    // The reader's own messages for the same failure.
    if (in.bad())
      throw FormatError(file_name, doc.lines_.size(),
                       doc.lines_.empty()
                           ? "read error before the first line (the input stream failed; is it a "
                             "directory?)"
                           : "read error after this line (the input stream failed)");
    doc.index_sentences();
    return doc;
  }

  // The file at `path`, opened by open_conllu_file (a directory or a file
  // that cannot be opened is a FormatError(path, 0, ...)).
  static ConlluDocument read_file(const std::string& path) {
    std::ifstream in = open_conllu_file(path);
    return read(in, path);
  }

  std::size_t size() const noexcept { return sentences_.size(); }
  bool empty() const noexcept { return sentences_.empty(); }
  const std::string& file_name() const noexcept { return file_; }

  // Sentence s's words (integer IDs, in order).
  std::size_t word_count(std::size_t s) const { return at(s).input.words.size(); }
  std::vector<std::string> forms(std::size_t s) const {
    const ConlluSentence& in = at(s).input;
    std::vector<std::string> out;
    out.reserve(in.words.size());
    for (const ConlluWord& w : in.words) out.push_back(w.form);
    return out;
  }
  const std::string& sent_id(std::size_t s) const { return at(s).input.sent_id; }  // "" if none
  const std::string& text(std::size_t s) const { return at(s).input.text; }        // "" if none
  // 1-based line of the sentence's first line in its source file.
  std::size_t line(std::size_t s) const { return at(s).input.line; }
  // The sent_id, or "#K (line L)": ConlluSentence::label().
  std::string label(std::size_t s) const { return at(s).input.label(); }

  // The sentence as read (for an appended one: as appended), unchanged by
  // set_heads: words with ID, FORM, UPOS, HEAD and DEPREL. Without a tree in
  // the input (has_input_tree false) every head is -1 (so heads() and tree()
  // throw a TreeError naming the sentence) and DEPREL is the column as read.
  const ConlluSentence& input(std::size_t s) const { return at(s).input; }
  bool has_input_tree(std::size_t s) const { return at(s).input_tree; }

  // Every sentence as read, for evaluation against a parser's output. Throws
  // FormatError(file, line, ...) at the first sentence that had no tree.
  std::vector<ConlluSentence> gold_sentences() const {
    std::vector<ConlluSentence> out;
    out.reserve(sentences_.size());
    for (const Sentence& s : sentences_) {
      if (!s.input_tree)
        throw FormatError(file_, s.input.line,
                         "sentence " + s.input.label() +
                             " has no tree (HEAD is '_'): gold sentences need a HEAD and DEPREL "
                             "on every word");
      out.push_back(s.input);
    }
    return out;
  }

  // Whether sentence s has heads now: from the input or from set_heads.
  bool has_tree(std::size_t s) const { return at(s).tree; }

  // Sentence s as it is now: input(s) with the heads and relations of the
  // last set_heads (head -1 for none yet). set_heads checks heads only for
  // range, so tree() of the result throws if the parser gave no tree.
  ConlluSentence sentence(std::size_t s) const {
    const Sentence& sent = at(s);
    ConlluSentence out = sent.input;
    for (std::size_t i = 0; i < out.words.size(); ++i) {
      out.words[i].head = sent.heads[i];
      out.words[i].deprel = sent.deprels[i];
    }
    return out;
  }

  // Every sentence as it is now, for evaluation of a parser's output.
  // Throws FormatError(file, line, ...) at the first sentence with no heads.
  std::vector<ConlluSentence> sentences() const {
    std::vector<ConlluSentence> out;
    out.reserve(sentences_.size());
    for (std::size_t s = 0; s < sentences_.size(); ++s) {
      if (!sentences_[s].tree)
        throw FormatError(file_, sentences_[s].input.line,
                         "sentence " + label(s) +
                             " has no tree yet (HEAD is '_' and set_heads was not called for it)");
      out.push_back(sentence(s));
    }
    return out;
  }

  // Replaces HEAD and DEPREL (columns 7 and 8) of sentence s's word lines;
  // every other byte of the document stays as it is. `heads` are 1-based
  // with 0 for the root, as written in CoNLL-U, one per word and each in
  // [0, n]; they are not checked to form a tree (that is the decoder's job;
  // the strict reader refuses a file whose heads do not). `deprels`, one per
  // word, must be non-empty and hold no tab, space, line break or other
  // control character, which would break the line's columns. Throws
  // synattn::Error naming the sentence and the word, before changing anything.
  void set_heads(std::size_t s, const std::vector<int>& heads,
                 const std::vector<std::string>& deprels) {
    Sentence& sent = at(s);
    const std::size_t n = sent.input.words.size();
    const std::string where = "set_heads: sentence " + sent.input.label() + ": ";
    if (heads.size() != n)
      throw Error(where + std::to_string(heads.size()) + " heads for " + std::to_string(n) +
                  " words");
    if (deprels.size() != n)
      throw Error(where + std::to_string(deprels.size()) + " relations for " +
                  std::to_string(n) + " words");
    // Built only for a message.
    const auto word = [&](std::size_t i) {
      return where + "word " + std::to_string(i + 1) + " (" +
             synattn::detail::quote_field(sent.input.words[i].form) + "): ";
    };
    for (std::size_t i = 0; i < n; ++i) {
      if (heads[i] < 0 || static_cast<std::size_t>(heads[i]) > n)
        throw Error(word(i) + "HEAD " + std::to_string(heads[i]) + " out of range [0, " +
                    std::to_string(n) + "]");
      const std::string& rel = deprels[i];
      if (rel.empty()) throw Error(word(i) + "DEPREL is empty (CoNLL-U writes '_' for none)");
      for (const char ch : rel) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == ' ' || c < 0x20 || c == 0x7F)
          throw Error(word(i) + "DEPREL " + synattn::detail::quote_field(rel) + " holds " +
                      (c == ' '    ? "a space"
                       : c == '\t' ? "a tab"
                       : c == '\n' || c == '\r' ? "a line break"
                                                : "a control character") +
                      " (a relation is one field of one line)");
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      replace_head_columns(sent.word_lines[i], std::to_string(heads[i]), deprels[i]);
      sent.heads[i] = heads[i];
      sent.deprels[i] = deprels[i];
    }
    sent.tree = true;
  }

  // Appends a sentence with no tree, as token text becomes one:
  //   # sent_id = SENT_ID        (left out when sent_id is empty)
  //   # text = FORMS JOINED BY ONE SPACE
  //   ID FORM _ _ _ _ _ _ _ _    (one line per form)
  // and a blank line (and one before it when the document does not end in
  // one). `source_line` is where the sentence came from, for messages. Forms
  // must be non-empty, without tabs or line breaks; sent_id without line
  // breaks; else synattn::Error.
  void append_sentence(const std::string& sent_id, const std::vector<std::string>& forms,
                       std::size_t source_line = 0) {
    // Messages are built only when needed: this runs once per input line.
    const auto where = [&] {
      return "append_sentence: sentence " +
             (sent_id.empty() ? "#" + std::to_string(size() + 1) : sent_id) + ": ";
    };
    if (forms.empty()) throw Error(where() + "a sentence needs at least one word");
    if (sent_id.find_first_of("\r\n") != std::string::npos)
      throw Error(where() + "the sent_id holds a line break");
    for (std::size_t i = 0; i < forms.size(); ++i) {
      const auto word = [&] { return where() + "word " + std::to_string(i + 1) + ": "; };
      if (forms[i].empty()) throw Error(word() + "FORM is empty");
      if (forms[i].find_first_of("\t\r\n") != std::string::npos)
        throw Error(word() + "FORM " + synattn::detail::quote_field(forms[i]) +
                    " holds a tab or a line break (a form is one field of one line)");
    }

    Sentence sent;
    ConlluSentence& in = sent.input;
    in.sent_id = sent_id;
    for (std::size_t i = 0; i < forms.size(); ++i) in.text += (i ? " " : "") + forms[i];
    in.line = source_line;
    in.index = sentences_.size();

    // A blank line must end the block before; the old last line gets its
    // newline now that it is no longer the last.
    if (!lines_.empty() && !synattn::detail::is_blank_line(content(lines_.size() - 1)))
      lines_.emplace_back();
    final_newline_ = true;
    if (!sent_id.empty()) lines_.push_back("# sent_id = " + sent_id);
    lines_.push_back("# text = " + in.text);
    for (std::size_t i = 0; i < forms.size(); ++i) {
      const int id = static_cast<int>(i + 1);
      sent.word_lines.push_back(lines_.size());
      lines_.push_back(std::to_string(id) + "\t" + forms[i] + "\t_\t_\t_\t_\t_\t_\t_\t_");
      in.words.push_back(ConlluWord{id, forms[i], "_", "_", -1});
    }
    lines_.emplace_back();
    sent.heads.assign(forms.size(), -1);
    sent.deprels.assign(forms.size(), "_");
    sentences_.push_back(std::move(sent));
  }

  // The document: every line as read or as set_heads left it, each ended by
  // '\n' except a last line that had none in the input.
  void write(std::ostream& out) const {
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      out.write(lines_[i].data(), static_cast<std::streamsize>(lines_[i].size()));
      if (i + 1 < lines_.size() || final_newline_) out.put('\n');
    }
  }

  std::string to_string() const {
    std::ostringstream out;
    write(out);
    return out.str();
  }

 private:
  struct Sentence {
    ConlluSentence input;                 // as read; heads -1 without a tree
    std::vector<std::size_t> word_lines;  // index in lines_ of word i's line
    std::vector<int> heads;               // now: 1-based, root 0, -1 = none yet
    std::vector<std::string> deprels;     // now
    bool input_tree = false;
    bool tree = false;
  };

  const Sentence& at(std::size_t s) const {
    if (s >= sentences_.size())
      throw Error("ConlluDocument: sentence index " + std::to_string(s) + " out of range (" +
                  (file_.empty() ? std::string("the document") : file_) + " has " +
                  std::to_string(sentences_.size()) + " sentences)");
    return sentences_[s];
  }
  Sentence& at(std::size_t s) { return const_cast<Sentence&>(std::as_const(*this).at(s)); }

  static constexpr std::string_view kBom = "\xEF\xBB\xBF";

  // Line i as the reader sees it: without the '\r' of a "\r\n" line end and,
  // on the first line, without a byte-order mark. (The raw line keeps both,
  // for write().)
  std::string_view content(std::size_t i) const {
    std::string_view v(lines_[i]);
    if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
    if (i == 0 && v.substr(0, kBom.size()) == kBom) v.remove_prefix(kBom.size());
    return v;
  }

  // Splits `line` at tabs into `field` (at most ConlluReader::kColumns kept);
  // returns the number of columns.
  static std::size_t split_columns(std::string_view line,
                                   std::string_view (&field)[ConlluReader::kColumns]) {
    std::size_t count = 0;
    for (std::size_t pos = 0;;) {
      const std::size_t tab = line.find('\t', pos);
      if (count < ConlluReader::kColumns)
        field[count] = line.substr(pos, tab == line.npos ? line.npos : tab - pos);
      ++count;
      if (tab == line.npos) return count;
      pos = tab + 1;
    }
  }

  // Sentences are blocks of non-blank lines, found as ConlluReader finds them.
  void index_sentences() {
    const std::size_t n = lines_.size();
    for (std::size_t i = 0; i < n;) {
      if (synattn::detail::is_blank_line(content(i))) {
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < n && !synattn::detail::is_blank_line(content(end))) ++end;
      read_block(i, end);
      i = end;
    }
  }

  // Reads the block lines_[begin, end): checks it with a strict ConlluReader
  // and, unless it holds only comments, adds it as a sentence.
  //
  // A sentence with HEAD '_' on every word goes to the reader with a
  // placeholder tree in its HEAD column (word 1 the root, every other word
  // attached to it): what the reader then checks (columns, IDs, multiword
  // tokens, empty nodes, FORM, UPOS, DEPREL) and its messages are those of
  // read_conllu, without a second parser of CoNLL-U here to drift from it.
  void read_block(std::size_t begin, std::size_t end) {
    // Integer-ID word lines (as the reader tells them: '-' after the first
    // byte or '.' makes a multiword token or an empty node) and their HEADs.
    std::vector<std::size_t> word_lines;
    std::vector<std::string_view> heads;
    std::size_t blank_heads = 0;
    std::string_view field[ConlluReader::kColumns];
    for (std::size_t k = begin; k < end; ++k) {
      const std::string_view line = content(k);
      if (line.front() == '#') continue;  // not empty: the block has no blank line
      if (split_columns(line, field) != ConlluReader::kColumns) continue;  // the reader says why
      if (field[0].find('-', 1) != field[0].npos || field[0].find('.') != field[0].npos) continue;
      word_lines.push_back(k);
      heads.push_back(field[kHeadColumn]);
      if (field[kHeadColumn] == "_") ++blank_heads;
    }
    // With a '_' HEAD on any word, every word gets a placeholder (a mixed
    // sentence is refused below, after the reader's checks of the rest).
    const bool placeholders = blank_heads > 0;

    // The reader drops a byte-order mark from its own first line only; a
    // block after the file's first line gets a blank line before it, so a
    // BOM there is refused as read_conllu refuses it (and the reader's line
    // numbers are one more than the block's).
    const std::size_t shift = begin > 0 ? 1 : 0;
    std::string text(shift, '\n');
    for (std::size_t k = begin, w = 0; k < end; ++k) {
      if (placeholders && w < word_lines.size() && word_lines[w] == k) {
        split_columns(content(k), field);
        field[kHeadColumn] = w == 0 ? "0" : "1";
        for (std::size_t c = 0; c < ConlluReader::kColumns; ++c) {
          if (c > 0) text += '\t';
          text += field[c];
        }
        ++w;
      } else {
        text += lines_[k];  // the reader drops a '\r' and a BOM as it does in a file
      }
      text += '\n';
    }

    std::istringstream in(text);
    ConlluReader reader(in, file_, ConlluMode::Strict);
    ConlluSentence s;
    bool found = false;
    try {
      found = reader.next(s);
    } catch (const FormatError& e) {
      // The reader's line 1 + shift is the block's first line: file line begin + 1.
      throw FormatError(file_, begin + e.line() - shift, e.reason());
    }
    if (!found) return;  // comments alone: not a sentence, kept as lines only
    if (s.words.size() != word_lines.size())  // cannot happen: the reader checked the IDs
      throw FormatError(file_, begin + 1, "internal error: word lines miscounted");

    if (placeholders && blank_heads != word_lines.size()) {
      const bool first_blank = heads[0] == "_";
      std::size_t k = 1;
      while ((heads[k] == "_") == first_blank) ++k;
      throw FormatError(file_, word_lines[k] + 1,
                       "HEAD " + synattn::detail::quote_field(heads[k]) + " but word 1 (line " +
                           std::to_string(word_lines[0] + 1) + ") has HEAD " +
                           synattn::detail::quote_field(heads[0]) +
                           ": a sentence has a HEAD on every word, or '_' on every word (not "
                           "parsed yet)");
    }

    Sentence sent;
    sent.input = std::move(s);
    sent.input.line = begin + 1;
    sent.input.index = sentences_.size();
    sent.input_tree = sent.tree = !placeholders;
    if (placeholders)
      for (ConlluWord& w : sent.input.words) w.head = -1;
    sent.word_lines = std::move(word_lines);
    for (const ConlluWord& w : sent.input.words) {
      sent.heads.push_back(w.head);
      sent.deprels.push_back(w.deprel);
    }
    sentences_.push_back(std::move(sent));
  }

  // Puts `head` and `deprel` into columns 7 and 8 of line i, keeping its
  // other columns, its '\r' and (line 0) its byte-order mark as they are.
  void replace_head_columns(std::size_t i, const std::string& head, const std::string& deprel) {
    std::string& raw = lines_[i];
    const std::string_view v = content(i);
    const std::size_t offset = static_cast<std::size_t>(v.data() - raw.data());
    // The tabs before column 7 and after column 8 (the line has ten columns).
    std::size_t before = 0, after = 0;
    for (std::size_t pos = 0, tabs = 0; pos < v.size(); ++pos) {
      if (v[pos] != '\t') continue;
      ++tabs;
      if (tabs == kHeadColumn) before = pos;
      if (tabs == kDeprelColumn + 1) {
        after = pos;
        break;
      }
    }
    raw.replace(offset + before + 1, after - before - 1, head + "\t" + deprel);
  }

  std::string file_;
  std::vector<std::string> lines_;  // every line, without its '\n'
  bool final_newline_ = true;       // whether the last line ended with '\n'
  std::vector<Sentence> sentences_;
};

}  // namespace synattn::parse

#endif  // SYNATTN_IO_CONLLU_DOCUMENT_HPP
