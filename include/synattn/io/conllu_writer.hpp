// synattn — a Document written as CoNLL-U that reads back to the same text.
//
// read_conllu_text(write_conllu_text(doc)).text == doc.text, byte for byte,
// whatever whitespace lies between, before and after the tokens: each
// token's MISC spells out what follows it unless that is one space where the
// reader's default is one space (its defaults: one space; "\n\n" before a
// paragraph, "\n" after the last token; nothing with SpaceAfter=No):
//
//   nothing follows        SpaceAfter=No   (+ an empty SpacesAfter= where the
//                                           default is a line break)
//   exactly one space      nothing         (SpacesAfter=\s where the default
//                                           is a line break)
//   anything else          SpacesAfter=ESCAPED (so "\n\n" between paragraphs
//                                           is spelt out, as UDPipe does)
//
// plus SpacesBefore= on the first token when the text starts with whitespace
// and TokenRange=BEGIN:END, the token's span in code points. The MISC goes on
// the multiword-token line of a multiword token, on the word line otherwise.
// Per sentence: "# newdoc [id = ...]", "# newpar [id = ...]" (left out when
// implied: a document's first sentence, without an id), "# sent_id = ..."
// (the sentence's number in the document when it has none), "# text = ..."
// (its span with whitespace folded). Words: ID FORM _ UPOS _ _ HEAD DEPREL _
// MISC, HEAD -1 as '_', an empty UPOS or DEPREL as '_'.
//
// What CoNLL-U cannot hold is refused with a synattn::Error naming the
// sentence and token, before anything is written: a form with a tab or a
// line break, an empty form, text between tokens that is not whitespace
// (CoNLL-U keeps only whitespace there), spans that do not slice the text to
// the token's form or are out of order, tokens whose words do not tile the
// sentence, a HEAD outside [-1, n] or on some words only, a line break in a
// comment's value. (Trees are not checked: that is the parser's job, and
// the reader refuses a file whose heads are not one.)
#ifndef SYNATTN_IO_CONLLU_WRITER_HPP
#define SYNATTN_IO_CONLLU_WRITER_HPP

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "conllu.hpp"
#include "conllu_text.hpp"
#include "../text/document.hpp"
#include "../text/utf8.hpp"

namespace synattn {
namespace text {

namespace detail {

inline std::string field_or_none(const std::string& s) { return s.empty() ? std::string("_") : s; }

// Error unless `value` can be one tab-separated field of one line.
inline void check_field(const std::string& where, const char* what, const std::string& value, bool allow_tab) {
  for (const char c : value)
    if (c == '\n' || c == '\r' || (!allow_tab && c == '\t'))
      throw Error(where + what + " " + synattn::detail::quote_field(value) + " holds " +
                  (c == '\t' ? "a tab" : "a line break") + " (CoNLL-U cannot hold it in one field)");
}

}  // namespace detail

// `doc` as CoNLL-U text; Error (naming the sentence and token) for what
// CoNLL-U cannot hold.
inline std::string to_conllu_text(const Document& doc) {
  namespace d = text::detail;
  namespace w = text::detail;
  const std::string& text = doc.text;
  {
    std::size_t at = 0;
    std::string why;
    if (!check_utf8(text, at, why, "the end of the text"))
      throw Error("write_conllu_text: Document::text is not UTF-8 at byte offset " + std::to_string(at) + ": " + why);
  }

  // Code point offsets of every byte boundary we need, by one pass.
  std::vector<int> cp_at(text.size() + 1, -1);
  {
    int cp = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
      if (i == text.size() || (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) cp_at[i] = cp;
      if (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++cp;
    }
  }

  // Validation of every token, and where each one's whitespace ends.
  struct Place {
    std::size_t sentence, token;
  };
  std::vector<Place> order;
  std::size_t end_of_previous = 0;
  for (std::size_t s = 0; s < doc.sentences.size(); ++s) {
    const Sentence& sent = doc.sentences[s];
    const std::string label = sent.sent_id.empty() ? "#" + std::to_string(s + 1) : sent.sent_id;
    const std::string where = "write_conllu_text: sentence " + label + ": ";
    if (sent.tokens.empty()) throw Error(where + "has no tokens (a CoNLL-U sentence needs a word)");
    w::check_field(where, "sent_id", sent.sent_id, true);
    w::check_field(where, "document id", sent.document_id, true);
    w::check_field(where, "paragraph id", sent.paragraph_id, true);
    const int n = static_cast<int>(sent.words.size());
    int next_word = 0;
    for (std::size_t t = 0; t < sent.tokens.size(); ++t) {
      const Token& token = sent.tokens[t];
      const std::string at = where + "token " + std::to_string(t + 1) + " (" +
                             synattn::detail::quote_field(token.form) + "): ";
      if (token.form.empty()) throw Error(at + "the form is empty");
      w::check_field(at, "the form", token.form, false);
      const CharSpan b = token.span.bytes;
      if (b.begin < 0 || b.end < b.begin || static_cast<std::size_t>(b.end) > text.size())
        throw Error(at + "byte span " + synattn::detail::span_text(b) + " is not inside the text of " +
                    std::to_string(text.size()) + " bytes");
      if (static_cast<std::size_t>(b.begin) < end_of_previous)
        throw Error(at + "byte span " + synattn::detail::span_text(b) +
                    " starts before the previous token ends (byte " + std::to_string(end_of_previous) + ")");
      const std::string_view slice = std::string_view(text).substr(static_cast<std::size_t>(b.begin),
                                                                   static_cast<std::size_t>(b.end - b.begin));
      if (slice != token.form)
        throw Error(at + "its byte span " + synattn::detail::span_text(b) + " holds " +
                    synattn::detail::quote_field(slice) + ", not the form");
      const CharSpan expected{cp_at[static_cast<std::size_t>(b.begin)], cp_at[static_cast<std::size_t>(b.end)]};
      if (token.span.code_points.begin != expected.begin || token.span.code_points.end != expected.end)
        throw Error(at + "code point span " + synattn::detail::span_text(token.span.code_points) +
                    " disagrees with its byte span, which is code points " + synattn::detail::span_text(expected));
      const std::string_view gap =
          std::string_view(text).substr(end_of_previous, static_cast<std::size_t>(b.begin) - end_of_previous);
      if (!d::all_space(gap))
        throw Error(at + "the text before it, " + synattn::detail::quote_field(gap) +
                    ", is not all whitespace (CoNLL-U keeps only whitespace between tokens)");
      if (token.first_word != next_word || token.word_count < 1 || token.first_word + token.word_count > n)
        throw Error(at + "covers words [" + std::to_string(token.first_word) + ", " +
                    std::to_string(token.first_word + token.word_count) + "); expected words from " +
                    std::to_string(next_word) + " of the sentence's " + std::to_string(n));
      next_word += token.word_count;
      for (int k = token.first_word; k < next_word; ++k) {
        const Word& word = sent.words[static_cast<std::size_t>(k)];
        const std::string wat = where + "word " + std::to_string(k + 1) + ": ";
        if (word.form.empty()) throw Error(wat + "the form is empty");
        w::check_field(wat, "the form", word.form, false);
        w::check_field(wat, "UPOS", word.upos, false);
        w::check_field(wat, "DEPREL", word.deprel, false);
        if (word.head < -1 || word.head > n)
          throw Error(wat + "HEAD " + std::to_string(word.head) + " out of range [-1, " + std::to_string(n) + "]");
      }
      end_of_previous = static_cast<std::size_t>(b.end);
      order.push_back({s, t});
    }
    if (next_word != n)
      throw Error(where + "its tokens cover " + std::to_string(next_word) + " of its " + std::to_string(n) + " words");
    // The reader takes a HEAD on every word or '_' on all (text not parsed yet).
    for (int k = 1; k < n; ++k)
      if ((sent.words[static_cast<std::size_t>(k)].head < 0) != (sent.words[0].head < 0))
        throw Error(where + "word " + std::to_string(k + 1) + ": HEAD " +
                    (sent.words[static_cast<std::size_t>(k)].head < 0
                         ? std::string("'_'")
                         : std::to_string(sent.words[static_cast<std::size_t>(k)].head)) +
                    " but word 1 has HEAD " +
                    (sent.words[0].head < 0 ? std::string("'_'") : std::to_string(sent.words[0].head)) +
                    ": a sentence has a HEAD on every word or on none");
  }
  {
    const std::string_view tail = std::string_view(text).substr(end_of_previous);
    if (!d::all_space(tail))
      throw Error("write_conllu_text: the text after the last token, " + synattn::detail::quote_field(tail) +
                  ", is not all whitespace (CoNLL-U keeps only whitespace between tokens)");
  }

  // Where the reader starts a paragraph: "# newpar", "# newdoc", the first sentence.
  const auto starts_paragraph = [&](std::size_t s) {
    const Sentence& sent = doc.sentences[s];
    return s == 0 || sent.new_paragraph || sent.new_document;
  };

  // MISC of token k of `order`.
  const auto misc_of = [&](std::size_t k) {
    const Sentence& sent = doc.sentences[order[k].sentence];
    const Token& token = sent.tokens[order[k].token];
    const std::size_t end = static_cast<std::size_t>(token.span.bytes.end);
    const bool last = k + 1 == order.size();
    const bool before_paragraph = !last && order[k + 1].token == 0 && starts_paragraph(order[k + 1].sentence);
    const std::size_t next = last ? text.size()
                                  : static_cast<std::size_t>(doc.sentences[order[k + 1].sentence]
                                                                 .tokens[order[k + 1].token]
                                                                 .span.bytes.begin);
    const std::string_view ws = std::string_view(text).substr(end, next - end);
    std::string misc;
    const auto add = [&](const std::string& item) { misc += (misc.empty() ? "" : "|") + item; };
    if (ws.empty()) {
      add("SpaceAfter=No");
      if (!d::default_spaces_after(false, last, before_paragraph).empty()) add("SpacesAfter=");
    } else if (ws != " " || d::default_spaces_after(true, last, before_paragraph) != " ") {
      add("SpacesAfter=" + d::escape_spaces(ws));
    }
    if (k == 0 && token.span.bytes.begin > 0)
      add("SpacesBefore=" + d::escape_spaces(std::string_view(text).substr(0, static_cast<std::size_t>(token.span.bytes.begin))));
    add("TokenRange=" + std::to_string(token.span.code_points.begin) + ":" + std::to_string(token.span.code_points.end));
    return misc;
  };

  std::string out;
  std::size_t k = 0;
  for (std::size_t s = 0; s < doc.sentences.size(); ++s) {
    const Sentence& sent = doc.sentences[s];
    if (sent.new_document) out += sent.document_id.empty() ? "# newdoc\n" : "# newdoc id = " + sent.document_id + "\n";
    const bool implied = s == 0 || sent.new_document;
    if ((sent.new_paragraph && !implied) || !sent.paragraph_id.empty())
      out += sent.paragraph_id.empty() ? "# newpar\n" : "# newpar id = " + sent.paragraph_id + "\n";
    out += "# sent_id = " + (sent.sent_id.empty() ? std::to_string(s + 1) : sent.sent_id) + "\n";
    const TextSpan span = sent.span();
    out += "# text = " +
           d::fold_whitespace(std::string_view(text).substr(static_cast<std::size_t>(span.bytes.begin),
                                                             static_cast<std::size_t>(span.bytes.end - span.bytes.begin))) +
           "\n";
    for (const Token& token : sent.tokens) {
      const std::string misc = misc_of(k++);
      if (token.multiword())
        out += std::to_string(token.first_word + 1) + "-" + std::to_string(token.first_word + token.word_count) + "\t" +
               token.form + "\t_\t_\t_\t_\t_\t_\t_\t" + misc + "\n";
      for (int i = token.first_word; i < token.first_word + token.word_count; ++i) {
        const Word& word = sent.words[static_cast<std::size_t>(i)];
        out += std::to_string(i + 1) + "\t" + word.form + "\t_\t" + w::field_or_none(word.upos) + "\t_\t_\t" +
               (word.head < 0 ? std::string("_") : std::to_string(word.head)) + "\t" + w::field_or_none(word.deprel) +
               "\t_\t" + (token.multiword() ? std::string("_") : misc) + "\n";
      }
    }
    out += "\n";
  }
  return out;
}

// Writes to_conllu_text(doc) to `out` (nothing at all when it throws).
inline void write_conllu_text(const Document& doc, std::ostream& out) {
  const std::string s = to_conllu_text(doc);
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_IO_CONLLU_WRITER_HPP
