// synattn's Python binding — the parser, raw text (parse/pipeline.hpp) and
// subword alignment (text/subword_alignment.hpp). Its own translation unit:
// the parser and tokenizer headers are the slow ones to compile, and two
// units build in parallel on the CI's two cores.
#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/pipeline.hpp>
#include <synattn/text/document.hpp>
#include <synattn/text/subword_alignment.hpp>
#include <synattn/text/tokenizer_model.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"

namespace synattn_py {

namespace text = synattn::text;
namespace parse = synattn::parse;

namespace {

py::tuple span_tuple(const synattn::CharSpan& s) { return py::make_tuple(s.begin, s.end); }

}  // namespace

void register_text(py::module_& m) {
  py::class_<text::Word>(m, "Word")
      .def_readonly("form", &text::Word::form)
      .def_readonly("upos", &text::Word::upos)
      .def_readonly("head", &text::Word::head, "CoNLL-U HEAD: 1-based, 0 = the root, -1 = none")
      .def_readonly("deprel", &text::Word::deprel)
      .def_property_readonly("span", [](const text::Word& w) { return span_tuple(w.span.bytes); },
                             "[begin, end) in the document's UTF-8 bytes")
      .def_property_readonly("char_span", [](const text::Word& w) { return span_tuple(w.span.code_points); },
                             "[begin, end) in the document's code points (Python string indices)")
      .def("__repr__", [](const text::Word& w) { return "synattn.Word(" + w.form + ")"; });
  py::class_<text::Token>(m, "Token")
      .def_readonly("form", &text::Token::form)
      .def_readonly("first_word", &text::Token::first_word)
      .def_readonly("word_count", &text::Token::word_count)
      .def_property_readonly("span", [](const text::Token& t) { return span_tuple(t.span.bytes); })
      .def_property_readonly("char_span", [](const text::Token& t) { return span_tuple(t.span.code_points); });
  py::class_<text::Sentence>(m, "Sentence")
      .def_readonly("sent_id", &text::Sentence::sent_id)
      .def_readonly("tokens", &text::Sentence::tokens)
      .def_readonly("words", &text::Sentence::words)
      .def_property_readonly("forms",
                             [](const text::Sentence& s) {
                               std::vector<std::string> v;
                               for (const auto& w : s.words) v.push_back(w.form);
                               return v;
                             })
      .def_property_readonly("span", [](const text::Sentence& s) { return span_tuple(s.span().bytes); })
      .def_property_readonly("char_span", [](const text::Sentence& s) { return span_tuple(s.span().code_points); })
      .def("tree", &parse::sentence_tree, "The parsed tree (0-based, root -1); TreeError when unparsed")
      .def("__len__", [](const text::Sentence& s) { return s.words.size(); });
  py::class_<text::Document>(m, "Document")
      .def_readonly("text", &text::Document::text)
      .def_readonly("sentences", &text::Document::sentences)
      .def("__len__", [](const text::Document& d) { return d.sentences.size(); });

  py::class_<parse::ParsedSentence>(m, "ParsedSentence")
      .def_readonly("heads", &parse::ParsedSentence::heads, "CoNLL-U HEAD: 1-based, 0 = the root")
      .def_readonly("deprels", &parse::ParsedSentence::deprels)
      .def_readonly("upos", &parse::ParsedSentence::upos)
      .def("tree", &parse::ParsedSentence::tree, py::arg("name") = "");

  py::class_<parse::ParserModel, std::shared_ptr<parse::ParserModel>>(m, "Parser",
                                                                     "The biaffine dependency parser (a model file)")
      .def(py::init([](const std::string& path) {
             const std::string p = path.empty() ? parse::default_model_path() : path;
             py::gil_scoped_release free;
             return std::make_shared<parse::ParserModel>(parse::ParserModel::load(p));
           }),
           py::arg("path") = "")
      .def(
          "parse",
          [](const parse::ParserModel& model, const std::vector<std::vector<std::string>>& sentences) {
            py::gil_scoped_release free;
            return model.parse(sentences);
          },
          py::arg("sentences"), "Tokenised sentences (lists of word forms) -> heads, relations and tags");

  py::class_<parse::Pipeline, std::shared_ptr<parse::Pipeline>>(m, "Pipeline",
                                                               "Raw text -> sentences, tokens, words and trees")
      .def(py::init([](const std::string& tokenizer, const std::string& parser) {
             const std::string t = tokenizer.empty() ? text::default_tokenizer_path() : tokenizer;
             const std::string p = parser.empty() ? parse::default_model_path() : parser;
             py::gil_scoped_release free;
             return std::make_shared<parse::Pipeline>(parse::Pipeline::load(t, p));
           }),
           py::arg("tokenizer") = "", py::arg("parser") = "")
      .def(
          "parse_text",
          [](const parse::Pipeline& p, const std::string& raw, const std::string& name) {
            py::gil_scoped_release free;
            return p.parse_text(raw, name);
          },
          py::arg("text"), py::arg("name") = "<text>");

  m.def("default_parser_path", &parse::default_model_path);
  m.def("default_tokenizer_path", &text::default_tokenizer_path);
  m.def(
      "piece_to_word",
      [](const text::Document& doc, const text::Sentence& sentence, const std::vector<std::pair<int, int>>& pieces,
         const std::string& unit) {
        text::SpanUnit u;
        if (unit == "bytes")
          u = text::SpanUnit::Bytes;
        else if (unit == "code_points")
          u = text::SpanUnit::CodePoints;
        else
          throw py::value_error("piece_to_word: unit must be 'bytes' or 'code_points', got '" + unit + "'");
        std::vector<synattn::CharSpan> spans;
        for (const auto& p : pieces) spans.push_back({p.first, p.second});
        return text::piece_to_word(doc, sentence, spans, u);
      },
      py::arg("document"), py::arg("sentence"), py::arg("pieces"), py::arg("unit") = "bytes",
      "Each subword piece's word in `sentence` (-1: belongs to none); text/subword_alignment.hpp");
}

}  // namespace synattn_py
