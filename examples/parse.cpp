// parse — a dependency parser trained with synattn, and the shipped English
// model: gives trees to text that has none.
//
//   parse train --train en_ewt-ud-train.conllu --dev en_ewt-ud-dev.conllu --model en.parser.safetensors
//   parse < paragraphs.txt > parsed.conllu                     (raw text: the shipped tokenizer and parser)
//   parse --format tokens < sentences.txt > parsed.conllu      (pre-tokenised, one sentence per line)
//   parse --input text.conllu --output parsed.conllu           (HEAD and DEPREL replaced, all else kept)
//   parse eval --gold en_ewt-ud-test.conllu                    (UAS / LAS, words/s, by sentence length)
//
// See `parse --help`; the model is synattn::parse::BiaffineParser
// (include/synattn/parse/parser.hpp).
#include <synattn/build_info.hpp>
#include <synattn/util/memory.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <iostream>
#include <string>
#include <vector>

#include "parse/options.hpp"
#include "parse/raw_text.hpp"
#include "parse/run.hpp"
#include "parse/train.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  parse_cli::Config config;
  try {
    config = parse_cli::parse_command_line(args);
  } catch (const parse_cli::UsageError& e) {
    std::cerr << "parse: " << e.what() << "\n" << parse_cli::kUsage;
    return 2;
  }
  if (config.command == parse_cli::Command::Help) {
    std::cout << parse_cli::kUsage;
    return 0;
  }
  const int threads = config.command == parse_cli::Command::Train            ? config.train.threads
                      : config.command == parse_cli::Command::TrainTokenizer ? config.train_tokenizer.threads
                      : config.command == parse_cli::Command::Eval           ? config.eval.threads
                                                                             : config.parse.threads;
#if defined(_OPENMP)
  if (threads > 0) omp_set_num_threads(threads);
#else
  (void)threads;
#endif
  // Batches of varying length resize every cache (util/memory.hpp).
  synattn::retain_freed_memory();
  try {
    switch (config.command) {
      case parse_cli::Command::Train: return parse_cli::run_train(config.train, std::cerr);
      case parse_cli::Command::TrainTokenizer: return parse_cli::run_train_tokenizer(config.train_tokenizer, std::cerr);
      case parse_cli::Command::Eval:
        return config.eval.raw ? parse_cli::run_eval_raw(config.eval, std::cout, std::cerr)
                               : parse_cli::run_eval(config.eval, std::cout, std::cerr);
      case parse_cli::Command::Export: return parse_cli::run_export(config.export_, std::cerr);
      default: return parse_cli::run_parse(config.parse, std::cin, std::cout, std::cerr);
    }
  } catch (const parse_cli::UsageError& e) {
    std::cerr << "parse: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "parse: " << e.what() << "\n";
    return 1;
  }
}
