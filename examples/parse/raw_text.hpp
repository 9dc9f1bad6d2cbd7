// parse --format text, parse eval --raw and parse train-tokenizer: the
// raw-text pipeline's commands (include/synattn/parse/pipeline.hpp).
//
// parse --format text: UTF-8 text in (a blank line ends a paragraph, a line
// break inside one is a space); CoNLL-U out with # newdoc, # newpar,
// # sent_id, # text, multiword-token lines and, in MISC, SpaceAfter=No,
// SpacesAfter (any other whitespace, escaped) and TokenRange=start:end (code
// points), so the text the output describes is the input, byte for byte
// (io/conllu_writer.hpp). A leading byte-order mark is dropped first and
// the offsets count from after it.
//
// Refused before anything is written, naming the byte offset: invalid UTF-8
// (or, with --replace-invalid-utf8, each bad sequence becomes U+FFFD), a NUL
// byte or another control character than tab, line feed and carriage
// return (none can go into a CoNLL-U field), and an input with no text.
#ifndef SYNATTN_EXAMPLES_PARSE_RAW_TEXT_HPP
#define SYNATTN_EXAMPLES_PARSE_RAW_TEXT_HPP

#include <synattn/io/atomic_file.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/pipeline.hpp>
#include <synattn/text/conll18_eval.hpp>
#include <synattn/io/conllu_text.hpp>
#include <synattn/io/conllu_writer.hpp>
#include <synattn/text/tokenizer_model.hpp>
#include <synattn/text/tokenizer_training.hpp>
#include <synattn/text/utf8.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "options.hpp"
#include "run.hpp"

namespace parse_cli {

inline std::string tokenizer_path_or_default(const std::string& path) {
  return path.empty() ? synattn::text::default_tokenizer_path() : path;
}

inline synattn::text::TokenizerModel load_tokenizer(const std::string& given) {
  const std::string path = tokenizer_path_or_default(given);
  std::error_code ec;
  if (given.empty() && !std::filesystem::exists(path, ec))
    throw synattn::Error("the shipped tokenizer " + path +
                         " is missing (set SYNATTN_TOKENIZER_MODEL or pass --tokenizer FILE)");
  return synattn::text::TokenizerModel::load(path);
}

// The checks of the top of this file; returns the text the pipeline reads.
inline std::string checked_raw_text(std::string input, const std::string& name, bool replace_invalid) {
  if (input.compare(0, 3, "\xEF\xBB\xBF") == 0) input.erase(0, 3);
  if (replace_invalid) input = synattn::text::replace_invalid_utf8(input);
  synattn::text::require_utf8(input, name);
  std::size_t line = 1;
  bool any = false;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const auto c = static_cast<unsigned char>(input[i]);
    if (c == '\n') ++line;
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      throw synattn::FormatError(name, line,
                                std::string(c == 0 ? "a NUL byte" : "control character ") + (c == 0 ? "" : hex) +
                                    " at byte offset " + std::to_string(i) +
                                    " (text may hold tabs and line breaks, no other control characters)");
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') any = true;
  }
  if (!any) throw synattn::FormatError(name, 0, "the input holds no text (it is empty or only whitespace)");
  return input;
}

inline int run_parse_text(const ParseConfig& cfg, std::string input, std::ostream& stdout_stream, std::ostream& log) {
  const std::string name = cfg.input_path == "-" ? std::string("<stdin>") : cfg.input_path;
  const std::string text = checked_raw_text(std::move(input), name, cfg.replace_invalid_utf8);
  const auto t0 = std::chrono::steady_clock::now();
  const synattn::parse::Pipeline pipeline(load_tokenizer(cfg.tokenizer_path), load_model(cfg.model_path));
  synattn::text::Document doc = pipeline.tokenizer().tokenize(text, name);
  if (doc.sentences.empty()) throw synattn::FormatError(name, 0, "the input holds no text");
  pipeline.parse_sentences(doc, name);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long long words = 0;
  for (const auto& s : doc.sentences) words += static_cast<long long>(s.words.size());
  write_output(cfg.output_path, synattn::text::to_conllu_text(doc), stdout_stream);
  char line[200];
  std::snprintf(line, sizeof line, "parsed %zu sentences, %lld words from raw text in %.2f s (%.0f words/s)\n",
                doc.sentences.size(), words, seconds, seconds > 0 ? static_cast<double>(words) / seconds : 0.0);
  log << line;
  return 0;
}

// parse eval --raw: the gold file's text rebuilt, the whole pipeline run on
// it, the CoNLL 2018 shared task's metrics.
inline int run_eval_raw(const EvalConfig& cfg, std::ostream& out, std::ostream& log) {
  const synattn::text::Document gold = synattn::text::read_conllu_text_file(cfg.gold_path);
  if (gold.sentences.empty()) throw synattn::FormatError(cfg.gold_path, 0, "the gold file holds no sentences");
  const synattn::parse::Pipeline pipeline(load_tokenizer(cfg.tokenizer_path), load_model(cfg.model_path));
  const auto t0 = std::chrono::steady_clock::now();
  synattn::text::Document system = pipeline.tokenizer().tokenize(gold.text, cfg.gold_path);
  const auto t1 = std::chrono::steady_clock::now();
  if (!cfg.tokenize_only) pipeline.parse_sentences(system, cfg.gold_path);
  const auto t2 = std::chrono::steady_clock::now();
  const synattn::text::Conll18Scores scores = synattn::text::evaluate_conll18(gold, system);
  const double tok = std::chrono::duration<double>(t1 - t0).count(), par = std::chrono::duration<double>(t2 - t1).count();
  long long words = 0;
  for (const auto& s : system.sentences) words += static_cast<long long>(s.words.size());
  out << synattn::text::format_conll18(scores);
  char line[300];
  std::snprintf(line, sizeof line,
                "\n%s: %lld words, %zu sentences from raw text; tokenizer %.2f s, parser %.2f s: %.0f words/s\n",
                cfg.gold_path.c_str(), words, system.sentences.size(), tok, par,
                tok + par > 0 ? static_cast<double>(words) / (tok + par) : 0.0);
  out << line;
  log << "tokenizer " << tokenizer_path_or_default(cfg.tokenizer_path) << "\nmodel " << model_path_or_default(cfg.model_path)
      << "\n";
  return 0;
}

inline int run_train_tokenizer(const TokenizerTrainConfig& cfg, std::ostream& log) {
  check_writable(cfg.model_path, "--model");
  if (!cfg.log_path.empty()) check_writable(cfg.log_path, "--log");
  const auto t0 = std::chrono::steady_clock::now();
  const synattn::text::Document train = synattn::text::read_conllu_text_file(cfg.train_path);
  const synattn::text::Document dev = synattn::text::read_conllu_text_file(cfg.dev_path);
  if (train.sentences.empty()) throw synattn::FormatError(cfg.train_path, 0, "the training file holds no sentences");
  if (dev.sentences.empty()) throw synattn::FormatError(cfg.dev_path, 0, "the dev file holds no sentences");
  std::string records;
  const auto on_epoch = [&](const synattn::text::TokenizerEpoch& e) {
    char line[400];
    std::snprintf(line, sizeof line,
                  "{\"epoch\": %d, \"loss\": %.6f, \"dev_tokens_f1\": %.4f, \"dev_sentences_f1\": %.4f, "
                  "\"dev_words_f1\": %.4f, \"seconds\": %.2f, \"best\": %s}\n",
                  e.epoch, e.loss, 100 * e.dev.tokens.f1(), 100 * e.dev.sentences.f1(), 100 * e.dev.words.f1(),
                  e.seconds, e.best ? "true" : "false");
    records += line;
  };
  const synattn::text::TokenizerModel model =
      synattn::text::TokenizerTrainer::train(train, dev, cfg.options, &log, on_epoch);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  model.save(cfg.model_path, nullptr, 0, {{"tokenizer.command", cfg.command_line}});
  if (!cfg.log_path.empty()) synattn::write_file_atomically(cfg.log_path, records, "parse train-tokenizer");
  char line[200];
  std::snprintf(line, sizeof line, "wrote %s (%lld parameters) after %.0f s\n", cfg.model_path.c_str(),
                static_cast<long long>(model.net().parameter_store().size()), seconds);
  log << line;
  return 0;
}

}  // namespace parse_cli

#endif  // SYNATTN_EXAMPLES_PARSE_RAW_TEXT_HPP
