// parse — the command line: three commands and their options.
//
//   parse train --train FILE --dev FILE --model OUT [options]
//   parse [--model M] [--input FILE|-] [--format conllu|tokens] [--output FILE|-] [--threads T]
//   parse eval [--model M] --gold FILE [--threads T]
#ifndef SYNATTN_EXAMPLES_PARSE_OPTIONS_HPP
#define SYNATTN_EXAMPLES_PARSE_OPTIONS_HPP

#include <synattn/error.hpp>
#include <synattn/parse/parser.hpp>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace parse_cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TrainConfig {
  std::string train_path, dev_path, model_path, checkpoint_path, resume_path;
  int epochs = 60, patience = 10, threads = 0, seed = 1, min_count = 2;
  long long batch_tokens = 2000;
  long long progress_every = 0;  // a step line every N steps (0: epochs only)
  double lr = 2e-3, beta2 = 0.98, clip = 5.0, word_dropout_alpha = 0.25;
  long long warmup = 400;
  double decay_steps = 5000;
  bool tagger = true;
  bool half = false;  // the best model saved with F16 weights (ParserModel::save_half)
  synattn::parse::ParserOptions model;  // sizes; vocabulary sizes filled from the data
};

struct ParseConfig {
  std::string model_path, input_path = "-", output_path = "-", format = "conllu";
  int threads = 0;
};

struct ExportConfig {
  std::string model_path, output_path;
};

struct EvalConfig {
  std::string model_path, gold_path;
  int threads = 0;
};

enum class Command { Train, Parse, Eval, Export, Help };

struct Config {
  Command command = Command::Parse;
  TrainConfig train;
  ParseConfig parse;
  EvalConfig eval;
  ExportConfig export_;
};

inline const char* kUsage =
    "usage:\n"
    "  parse train --train FILE --dev FILE --model OUT [--epochs E] [--patience P] [--threads T] [--seed S]\n"
    "              [--checkpoint FILE] [--resume FILE] [--batch-tokens N] [--lr X] [--warmup N] [--clip X]\n"
    "              [--d-model D] [--layers L] [--heads H] [--d-ff F] [--word-dim D] [--char-filters F]\n"
    "              [--arc-dim D] [--label-dim D] [--no-chars] [--no-relative-bias] [--no-tagger] [--min-count N]\n"
    "              [--half] [--progress-every N]\n"
    "  parse [--model M] [--input FILE|-] [--format conllu|tokens] [--output FILE|-] [--threads T]\n"
    "  parse eval [--model M] --gold FILE [--threads T]\n"
    "  parse export --model M --output FILE          (the model's weights rounded to F16: half the size)\n"
    "Without --model, the shipped English (UD EWT) model is used.\n";

inline long long parse_integer(const std::string& flag, const std::string& text, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    throw UsageError(flag + " takes a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" +
                     text + "'");
  return v;
}

inline double parse_real(const std::string& flag, const std::string& text, double lo, double hi) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !(v >= lo && v <= hi))
    throw UsageError(flag + " takes a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + text +
                     "'");
  return v;
}

// Refuses, before any work, an output path that cannot be written: a
// directory, or one whose folder does not exist.
inline void check_writable(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw UsageError(flag + " needs a file name");
  if (fs::is_directory(path, ec)) throw UsageError(flag + " " + path + ": is a directory");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw UsageError(flag + " " + path + ": folder " + parent.string() + " does not exist");
}

inline Config parse_command_line(const std::vector<std::string>& args) {
  Config c;
  std::size_t i = 0;
  if (!args.empty() && args[0] == "train") {
    c.command = Command::Train;
    i = 1;
  } else if (!args.empty() && args[0] == "eval") {
    c.command = Command::Eval;
    i = 1;
  } else if (!args.empty() && args[0] == "export") {
    c.command = Command::Export;
    i = 1;
  }
  const auto value = [&](const std::string& flag) -> const std::string& {
    if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
    return args[++i];
  };
  TrainConfig& t = c.train;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      c.command = Command::Help;
      return c;
    }
    if (a == "--threads") {
      const int v = static_cast<int>(parse_integer(a, value(a), 1, 1024));
      t.threads = c.parse.threads = c.eval.threads = v;
      continue;
    }
    if (a == "--model") {
      const std::string& v = value(a);
      t.model_path = c.parse.model_path = c.eval.model_path = c.export_.model_path = v;
      continue;
    }
    if (c.command == Command::Train) {
      if (a == "--train") t.train_path = value(a);
      else if (a == "--dev") t.dev_path = value(a);
      else if (a == "--checkpoint") t.checkpoint_path = value(a);
      else if (a == "--resume") t.resume_path = value(a);
      else if (a == "--epochs") t.epochs = static_cast<int>(parse_integer(a, value(a), 1, 100000));
      else if (a == "--patience") t.patience = static_cast<int>(parse_integer(a, value(a), 1, 100000));
      else if (a == "--seed") t.seed = static_cast<int>(parse_integer(a, value(a), 0, 1 << 30));
      else if (a == "--min-count") t.min_count = static_cast<int>(parse_integer(a, value(a), 1, 1 << 30));
      else if (a == "--batch-tokens") t.batch_tokens = parse_integer(a, value(a), 16, 1 << 24);
      else if (a == "--progress-every") t.progress_every = parse_integer(a, value(a), 0, 1LL << 40);
      else if (a == "--warmup") t.warmup = parse_integer(a, value(a), 0, 1LL << 40);
      else if (a == "--lr") t.lr = parse_real(a, value(a), 1e-8, 10);
      else if (a == "--clip") t.clip = parse_real(a, value(a), 0, 1e6);
      else if (a == "--decay-steps") t.decay_steps = parse_real(a, value(a), 0, 1e12);
      else if (a == "--d-model") t.model.d_model = static_cast<int>(parse_integer(a, value(a), 1, 8192));
      else if (a == "--layers") t.model.layers = static_cast<int>(parse_integer(a, value(a), 1, 64));
      else if (a == "--heads") t.model.heads = static_cast<int>(parse_integer(a, value(a), 1, 64));
      else if (a == "--d-ff") t.model.d_ff = static_cast<int>(parse_integer(a, value(a), 1, 65536));
      else if (a == "--word-dim") t.model.word_dim = static_cast<int>(parse_integer(a, value(a), 1, 4096));
      else if (a == "--char-filters") t.model.char_filters = static_cast<int>(parse_integer(a, value(a), 1, 4096));
      else if (a == "--arc-dim") t.model.arc_dim = static_cast<int>(parse_integer(a, value(a), 1, 8192));
      else if (a == "--label-dim") t.model.label_dim = static_cast<int>(parse_integer(a, value(a), 1, 4096));
      else if (a == "--dropout") t.model.encoder_dropout = t.model.attention_dropout = parse_real(a, value(a), 0, 0.95);
      else if (a == "--mlp-dropout") t.model.mlp_dropout = parse_real(a, value(a), 0, 0.95);
      else if (a == "--embedding-dropout") t.model.embedding_dropout = parse_real(a, value(a), 0, 0.95);
      else if (a == "--no-chars") t.model.use_chars = false;
      else if (a == "--no-relative-bias") t.model.relative_bias = false;
      else if (a == "--no-tagger") t.tagger = false;
      else if (a == "--half") t.half = true;
      else throw UsageError("unknown option for 'parse train': " + a);
      continue;
    }
    if (c.command == Command::Export) {
      if (a == "--output") c.export_.output_path = value(a);
      else throw UsageError("unknown option for 'parse export': " + a);
      continue;
    }
    if (c.command == Command::Eval) {
      if (a == "--gold") c.eval.gold_path = value(a);
      else throw UsageError("unknown option for 'parse eval': " + a);
      continue;
    }
    if (a == "--input") c.parse.input_path = value(a);
    else if (a == "--output") c.parse.output_path = value(a);
    else if (a == "--format") {
      c.parse.format = value(a);
      if (c.parse.format != "conllu" && c.parse.format != "tokens")
        throw UsageError("--format takes conllu or tokens, got '" + c.parse.format + "'");
    } else throw UsageError("unknown option: " + a + (a.rfind("--", 0) == 0 ? "" : " (commands: train, eval)"));
  }
  if (c.command == Command::Train) {
    if (t.train_path.empty() || t.dev_path.empty() || t.model_path.empty())
      throw UsageError("parse train needs --train, --dev and --model");
  }
  if (c.command == Command::Eval && c.eval.gold_path.empty()) throw UsageError("parse eval needs --gold FILE");
  if (c.command == Command::Export && (c.export_.model_path.empty() || c.export_.output_path.empty()))
    throw UsageError("parse export needs --model FILE and --output FILE");
  return c;
}

}  // namespace parse_cli

#endif  // SYNATTN_EXAMPLES_PARSE_OPTIONS_HPP
