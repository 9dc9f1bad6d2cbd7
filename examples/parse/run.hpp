// parse (the default command) and parse eval.
//
// parse: CoNLL-U in keeps every line and column and gets HEAD and DEPREL
// replaced; tokens in (one sentence per line) comes out as CoNLL-U. The
// whole output is built first and written atomically (io/atomic_file.hpp),
// so a failure writes nothing to the output path.
//
// parse eval: parses the gold file's words and scores the result by the
// CoNLL 2018 shared task's conventions (parse/metrics.hpp): UAS and LAS over
// every word, punctuation included, LAS on the universal relation; parsing
// speed in words/s (parsing only: reading and scoring excluded); and a
// breakdown by sentence length.
#ifndef SYNATTN_EXAMPLES_PARSE_RUN_HPP
#define SYNATTN_EXAMPLES_PARSE_RUN_HPP

#include <synattn/io/atomic_file.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/io/conllu_document.hpp>
#include <synattn/parse/metrics.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/sentence_length.hpp>
#include <synattn/parse/token_text.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "options.hpp"

namespace parse_cli {

inline std::string model_path_or_default(const std::string& path) {
  return path.empty() ? synattn::parse::default_model_path() : path;
}

// The model, or an error that says how to get one.
inline synattn::parse::ParserModel load_model(const std::string& given) {
  const std::string path = model_path_or_default(given);
  std::error_code ec;
  if (given.empty() && !std::filesystem::exists(path, ec))
    throw synattn::Error("the shipped model " + path +
                         " is missing (set SYNATTN_PARSER_MODEL or pass --model FILE)");
  return synattn::parse::ParserModel::load(path);
}

inline std::vector<std::vector<std::string>> document_forms(const synattn::parse::ConlluDocument& doc) {
  std::vector<std::vector<std::string>> out;
  out.reserve(doc.size());
  for (std::size_t s = 0; s < doc.size(); ++s) out.push_back(doc.forms(s));
  return out;
}

// The whole output at once: to standard output for "-", else atomically to
// the path (a failure writes nothing there).
inline void write_output(const std::string& path, const std::string& text, std::ostream& stdout_stream) {
  if (path == "-") {
    stdout_stream << text;
    stdout_stream.flush();
    if (!stdout_stream) throw synattn::RuntimeError("writing the output failed");
  } else {
    synattn::write_file_atomically(path, text, "parse");
  }
}

// The input, whole: the file at `path`, or standard input for "-".
inline std::string read_input(const std::string& path, std::istream& stdin_stream) {
  std::ostringstream buf;
  if (path == "-") {
    buf << stdin_stream.rdbuf();
    if (stdin_stream.bad()) throw synattn::FormatError("<stdin>", 0, "reading standard input failed");
  } else {
    std::ifstream in = synattn::open_input_file(path);
    buf << in.rdbuf();
    if (in.bad()) throw synattn::FormatError(path, 0, "reading the file failed");
  }
  return buf.str();
}

// --format auto: CoNLL-U when the first line that is not blank is a comment
// ("#") or a word line (an ID, "N", "N-M" or "N.M", then a tab); anything
// else is raw text. A paragraph of prose never looks like either.
inline std::string detect_format(const std::string& input) {
  std::size_t i = 0;
  if (input.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;
  while (i < input.size()) {
    const std::size_t end = std::min(input.find('\n', i), input.size());
    std::string_view line(input.data() + i, end - i);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) {
      if (line[0] == '#') return "conllu";
      std::size_t k = 0;
      while (k < line.size() && ((line[k] >= '0' && line[k] <= '9') || line[k] == '-' || line[k] == '.')) ++k;
      return k > 0 && k < line.size() && line[k] == '\t' && line[0] >= '0' && line[0] <= '9' ? "conllu" : "text";
    }
    i = end + 1;
  }
  return "text";
}

inline int run_parse_text(const ParseConfig& cfg, std::string input, std::ostream& stdout_stream, std::ostream& log);

inline int run_parse(const ParseConfig& cfg, std::istream& stdin_stream, std::ostream& stdout_stream, std::ostream& log) {
  using namespace synattn::parse;
  if (cfg.output_path != "-") check_writable(cfg.output_path, "--output");
  const bool from_stdin = cfg.input_path == "-";
  const std::string name = from_stdin ? std::string("<stdin>") : cfg.input_path;
  std::string input = read_input(cfg.input_path, stdin_stream);
  const std::string format = cfg.format == "auto" ? detect_format(input) : cfg.format;
  if (format == "text") return run_parse_text(cfg, std::move(input), stdout_stream, log);
  const synattn::parse::ParserModel model = load_model(cfg.model_path);
  ConlluDocument doc;
  std::istringstream in(std::move(input));
  if (format == "tokens") {
    doc = read_token_text(in, name);
  } else {
    doc = ConlluDocument::read(in, name);
  }
  for (std::size_t s = 0; s < doc.size(); ++s) {  // the library's limit, named by file and line
    const std::string too_long = sentence_length_problem(doc.word_count(s));
    if (!too_long.empty()) throw synattn::FormatError(name, doc.line(s), "sentence " + doc.label(s) + " has " + too_long);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ParsedSentence> parsed = model.parse(document_forms(doc));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long long words = 0;
  for (std::size_t s = 0; s < doc.size(); ++s) {
    doc.set_heads(s, parsed[s].heads, parsed[s].deprels);
    words += static_cast<long long>(parsed[s].heads.size());
  }
  write_output(cfg.output_path, doc.to_string(), stdout_stream);
  char line[160];
  std::snprintf(line, sizeof line, "parsed %zu sentences, %lld words in %.2f s (%.0f words/s)\n", doc.size(), words,
                seconds, seconds > 0 ? static_cast<double>(words) / seconds : 0.0);
  log << line;
  return 0;
}

inline int run_eval(const EvalConfig& cfg, std::ostream& out, std::ostream& log) {
  using namespace synattn::parse;
  const synattn::parse::ParserModel model = load_model(cfg.model_path);
  const std::vector<synattn::ConlluSentence> gold = synattn::read_conllu(cfg.gold_path);
  if (gold.empty()) throw synattn::FormatError(cfg.gold_path, 0, "the gold file holds no sentences");
  std::vector<std::vector<std::string>> forms;
  forms.reserve(gold.size());
  for (const auto& s : gold) {
    const std::string too_long = sentence_length_problem(s.words.size());
    if (!too_long.empty()) throw synattn::FormatError(cfg.gold_path, s.line, "sentence " + s.label() + " has " + too_long);
    std::vector<std::string> f;
    for (const auto& w : s.words) f.push_back(w.form);
    forms.push_back(std::move(f));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ParsedSentence> parsed = model.parse(forms);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<synattn::ConlluSentence> system = gold;
  for (std::size_t s = 0; s < gold.size(); ++s)
    for (std::size_t i = 0; i < gold[s].words.size(); ++i) {
      system[s].words[i].head = parsed[s].heads[i];
      system[s].words[i].deprel = parsed[s].deprels[i];
    }
  const LengthBreakdown breakdown = evaluate_by_length(gold, system);
  const AttachmentScores total = breakdown.total();
  char line[240];
  std::snprintf(line, sizeof line, "%s: UAS %.2f LAS %.2f (%lld words, %zu sentences); %.0f words/s\n",
                cfg.gold_path.c_str(), total.uas(), total.las(), total.words, gold.size(),
                seconds > 0 ? static_cast<double>(total.words) / seconds : 0.0);
  out << line << "\n" << format_breakdown_markdown(breakdown);
  log << "model " << model_path_or_default(cfg.model_path) << "\n";
  return 0;
}

// The model's weights rounded to F16, options and vocabulary unchanged.
inline int run_export(const ExportConfig& cfg, std::ostream& log) {
  check_writable(cfg.output_path, "--output");
  const synattn::parse::ParserModel model = synattn::parse::ParserModel::load(cfg.model_path);
  model.save_half(cfg.output_path);
  log << "wrote " << cfg.output_path << " (" << model.parser().parameter_count() << " parameters, F16)\n";
  return 0;
}

}  // namespace parse_cli

#endif  // SYNATTN_EXAMPLES_PARSE_RUN_HPP
