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
#include <synattn/parse/conllu_document.hpp>
#include <synattn/parse/metrics.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/token_text.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
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

inline int run_parse(const ParseConfig& cfg, std::istream& stdin_stream, std::ostream& stdout_stream, std::ostream& log) {
  using namespace synattn::parse;
  if (cfg.output_path != "-") check_writable(cfg.output_path, "--output");
  const synattn::parse::ParserModel model = load_model(cfg.model_path);
  const bool from_stdin = cfg.input_path == "-";
  const std::string name = from_stdin ? std::string("<stdin>") : cfg.input_path;
  ConlluDocument doc;
  if (cfg.format == "tokens") {
    doc = from_stdin ? read_token_text(stdin_stream, name) : read_token_text_file(cfg.input_path);
  } else {
    doc = from_stdin ? ConlluDocument::read(stdin_stream, name) : ConlluDocument::read_file(cfg.input_path);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<ParsedSentence> parsed = model.parse(document_forms(doc));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long long words = 0;
  for (std::size_t s = 0; s < doc.size(); ++s) {
    doc.set_heads(s, parsed[s].heads, parsed[s].deprels);
    words += static_cast<long long>(parsed[s].heads.size());
  }
  const std::string text = doc.to_string();
  if (cfg.output_path == "-") {
    stdout_stream << text;
    stdout_stream.flush();
    if (!stdout_stream) throw synattn::RuntimeError("writing the output failed");
  } else {
    synattn::write_file_atomically(cfg.output_path, text, "parse");
  }
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
  if (gold.empty()) throw synattn::ParseError(cfg.gold_path, 0, "the gold file holds no sentences");
  std::vector<std::vector<std::string>> forms;
  forms.reserve(gold.size());
  for (const auto& s : gold) {
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
