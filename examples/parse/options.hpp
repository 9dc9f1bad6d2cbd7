// parse — the command line: its commands and their options.
//
//   parse train --train FILE --dev FILE --model OUT [options]
//   parse train-tokenizer --train FILE --dev FILE --model OUT [options]
//   parse [--model M] [--tokenizer M] [--input FILE|-] [--format auto|text|conllu|tokens] [--output FILE|-]
//   parse eval [--model M] --gold FILE [--threads T]
#ifndef SYNATTN_EXAMPLES_PARSE_OPTIONS_HPP
#define SYNATTN_EXAMPLES_PARSE_OPTIONS_HPP

#include <synattn/error.hpp>
#include <synattn/io/output_path.hpp>
#include <synattn/parse/parser.hpp>
#include <synattn/parse/sentence_length.hpp>
#include <synattn/text/tokenizer_training.hpp>

#include <algorithm>
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
  std::string log_path;      // --log: one JSON line per epoch
  std::string command_line;  // recorded in the model file
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
  std::string model_path, tokenizer_path, input_path = "-", output_path = "-", format = "auto";
  int threads = 0;
  bool replace_invalid_utf8 = false;  // text: each bad UTF-8 sequence becomes U+FFFD instead of an error
};

// parse train-tokenizer: the raw-text tokenizer (text/tokenizer_training.hpp).
struct TokenizerTrainConfig {
  std::string train_path, dev_path, model_path, log_path;
  std::string command_line;  // recorded in the model file
  int threads = 0;
  synattn::text::TokenizerTrainOptions options;
};

struct ExportConfig {
  std::string model_path, output_path;
};

struct EvalConfig {
  std::string model_path, tokenizer_path, gold_path;
  int threads = 0;
  bool raw = false;            // the whole pipeline from the gold file's rebuilt text
  bool tokenize_only = false;  // with raw: tokens, words and sentences only
};

enum class Command { Train, TrainTokenizer, Parse, Eval, Export, Help };

struct Config {
  Command command = Command::Parse;
  TrainConfig train;
  TokenizerTrainConfig train_tokenizer;
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
    "              [--half] [--progress-every N] [--log FILE.jsonl]\n"
    "  parse train-tokenizer --train FILE --dev FILE --model OUT [--epochs E] [--patience P] [--channels C]\n"
    "              [--dilations D,D,...] [--char-dim D] [--lr X] [--lr-decay X] [--char-dropout P] [--seed S]\n"
    "              [--batch-chars N] [--threads T] [--log FILE.jsonl]\n"
    "  parse [--model M] [--tokenizer M] [--input FILE|-] [--format auto|text|conllu|tokens] [--output FILE|-]\n"
    "        [--threads T] [--replace-invalid-utf8]\n"
    "  parse eval [--model M] --gold FILE [--threads T]\n"
    "  parse eval --raw [--tokenize-only] [--model M] [--tokenizer M] --gold FILE [--threads T]\n"
    "  parse export --model M --output FILE          (the model's weights rounded to F16: half the size)\n"
    "Without --model (--tokenizer), the shipped English (UD EWT) parser (tokenizer) is used.\n"
    "--format auto (the default) reads CoNLL-U when the input starts like it (a '#' comment or a word line),\n"
    "else raw text: a blank line ends a paragraph, and sentences and words are found by the tokenizer.\n"
    "--format tokens: one pre-tokenised sentence per line, tokens separated by spaces.\n"
    "A sentence may have at most 1000 words (time and memory grow with the square of its length): a longer\n"
    "CoNLL-U sentence or token line is refused by line; raw text's sentences are cut at 250 tokens.\n";
static_assert(synattn::parse::kMaxSentenceWords == 1000, "kUsage states the sentence limit");

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
// directory, one whose folder does not exist, or what the output-path policy
// refuses (a symlink to nothing, a block device, a socket).
inline void check_writable(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw UsageError(flag + " needs a file name");
  if (fs::is_directory(path, ec)) throw UsageError(flag + " " + path + ": is a directory");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw UsageError(flag + " " + path + ": folder " + parent.string() + " does not exist");
  // The library's output-path policy (io/output_path.hpp): a symlink to
  // nothing, a block device or a socket is refused here too, before any work.
  try {
    (void)synattn::resolve_output_path(path, flag);
  } catch (const synattn::RuntimeError& e) {
    throw UsageError(e.what());
  }
}

// The command line read left to right: the current argument and the value
// that follows a flag.
struct ArgumentCursor {
  const std::vector<std::string>& args;
  std::size_t i = 0;

  bool done() const { return i >= args.size(); }
  const std::string& current() const { return args[i]; }
  // The value after `flag`, which the cursor then stands on.
  const std::string& value(const std::string& flag) {
    if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
    return args[++i];
  }
};

// The command named by the first argument (none: parsing), and how many
// arguments that name took.
inline std::size_t read_command(const std::vector<std::string>& args, Command& command) {
  if (args.empty()) return 0;
  if (args[0] == "train") command = Command::Train;
  else if (args[0] == "train-tokenizer") command = Command::TrainTokenizer;
  else if (args[0] == "eval") command = Command::Eval;
  else if (args[0] == "export") command = Command::Export;
  else return 0;
  return 1;
}

// The options every command shares (--threads, --model, and --tokenizer
// where it names a model to read); false when `a` is not one of them.
inline bool read_shared_option(const std::string& a, ArgumentCursor& in, Config& c) {
  if (a == "--threads") {
    const int v = static_cast<int>(parse_integer(a, in.value(a), 1, 1024));
    c.train.threads = c.parse.threads = c.eval.threads = c.train_tokenizer.threads = v;
    return true;
  }
  if (a == "--model") {
    const std::string& v = in.value(a);
    c.train.model_path = c.parse.model_path = c.eval.model_path = c.export_.model_path = c.train_tokenizer.model_path = v;
    return true;
  }
  if (a == "--tokenizer" && c.command != Command::TrainTokenizer) {
    c.parse.tokenizer_path = c.eval.tokenizer_path = in.value(a);
    return true;
  }
  return false;
}

// --dilations D,D,...: each a whole number, at most 64 of them.
inline std::vector<int> read_dilations(const std::string& flag, const std::string& v) {
  std::vector<int> dilations;
  for (std::size_t p = 0; p <= v.size();) {
    const std::size_t q = std::min(v.find(',', p), v.size());
    dilations.push_back(static_cast<int>(parse_integer(flag, v.substr(p, q - p), 1, 4096)));
    p = q + 1;
  }
  if (dilations.size() > 64) throw UsageError("--dilations takes at most 64 layers");
  return dilations;
}

inline void read_train_tokenizer_option(const std::string& a, ArgumentCursor& in, TokenizerTrainConfig& k) {
  auto& o = k.options;
  if (a == "--train") k.train_path = in.value(a);
  else if (a == "--dev") k.dev_path = in.value(a);
  else if (a == "--log") k.log_path = in.value(a);
  else if (a == "--epochs") o.epochs = static_cast<int>(parse_integer(a, in.value(a), 1, 100000));
  else if (a == "--patience") o.patience = static_cast<int>(parse_integer(a, in.value(a), 1, 100000));
  else if (a == "--channels") o.model.net.channels = static_cast<int>(parse_integer(a, in.value(a), 1, 4096));
  else if (a == "--char-dim") o.model.net.char_dim = static_cast<int>(parse_integer(a, in.value(a), 1, 4096));
  else if (a == "--seed") o.seed = static_cast<std::uint64_t>(parse_integer(a, in.value(a), 0, 1 << 30));
  else if (a == "--lr") o.lr = parse_real(a, in.value(a), 1e-8, 10);
  else if (a == "--lr-decay") o.lr_decay = parse_real(a, in.value(a), 1e-6, 1);
  else if (a == "--batch-chars") o.batch_chars = parse_integer(a, in.value(a), 16, 1 << 24);
  else if (a == "--char-dropout") o.char_dropout = parse_real(a, in.value(a), 0, 0.95);
  else if (a == "--dilations") o.model.net.dilations = read_dilations(a, in.value(a));
  else throw UsageError("unknown option for 'parse train-tokenizer': " + a);
}

// parse train's model sizes and dropout rates; false when `a` is not one.
inline bool read_model_option(const std::string& a, ArgumentCursor& in, synattn::parse::ParserOptions& m) {
  if (a == "--d-model") m.d_model = static_cast<int>(parse_integer(a, in.value(a), 1, 8192));
  else if (a == "--layers") m.layers = static_cast<int>(parse_integer(a, in.value(a), 1, 64));
  else if (a == "--heads") m.heads = static_cast<int>(parse_integer(a, in.value(a), 1, 64));
  else if (a == "--d-ff") m.d_ff = static_cast<int>(parse_integer(a, in.value(a), 1, 65536));
  else if (a == "--word-dim") m.word_dim = static_cast<int>(parse_integer(a, in.value(a), 1, 4096));
  else if (a == "--char-filters") m.char_filters = static_cast<int>(parse_integer(a, in.value(a), 1, 4096));
  else if (a == "--arc-dim") m.arc_dim = static_cast<int>(parse_integer(a, in.value(a), 1, 8192));
  else if (a == "--label-dim") m.label_dim = static_cast<int>(parse_integer(a, in.value(a), 1, 4096));
  else if (a == "--dropout") m.encoder_dropout = m.attention_dropout = parse_real(a, in.value(a), 0, 0.95);
  else if (a == "--mlp-dropout") m.mlp_dropout = parse_real(a, in.value(a), 0, 0.95);
  else if (a == "--embedding-dropout") m.embedding_dropout = parse_real(a, in.value(a), 0, 0.95);
  else if (a == "--no-chars") m.use_chars = false;
  else if (a == "--no-relative-bias") m.relative_bias = false;
  else return false;
  return true;
}

inline void read_train_option(const std::string& a, ArgumentCursor& in, TrainConfig& t) {
  if (a == "--train") t.train_path = in.value(a);
  else if (a == "--dev") t.dev_path = in.value(a);
  else if (a == "--checkpoint") t.checkpoint_path = in.value(a);
  else if (a == "--resume") t.resume_path = in.value(a);
  else if (a == "--log") t.log_path = in.value(a);
  else if (a == "--epochs") t.epochs = static_cast<int>(parse_integer(a, in.value(a), 1, 100000));
  else if (a == "--patience") t.patience = static_cast<int>(parse_integer(a, in.value(a), 1, 100000));
  else if (a == "--seed") t.seed = static_cast<int>(parse_integer(a, in.value(a), 0, 1 << 30));
  else if (a == "--min-count") t.min_count = static_cast<int>(parse_integer(a, in.value(a), 1, 1 << 30));
  else if (a == "--batch-tokens") t.batch_tokens = parse_integer(a, in.value(a), 16, 1 << 24);
  else if (a == "--progress-every") t.progress_every = parse_integer(a, in.value(a), 0, 1LL << 40);
  else if (a == "--warmup") t.warmup = parse_integer(a, in.value(a), 0, 1LL << 40);
  else if (a == "--lr") t.lr = parse_real(a, in.value(a), 1e-8, 10);
  else if (a == "--clip") t.clip = parse_real(a, in.value(a), 0, 1e6);
  else if (a == "--decay-steps") t.decay_steps = parse_real(a, in.value(a), 0, 1e12);
  else if (read_model_option(a, in, t.model)) return;
  else if (a == "--no-tagger") t.tagger = false;
  else if (a == "--half") t.half = true;
  else throw UsageError("unknown option for 'parse train': " + a);
}

inline void read_export_option(const std::string& a, ArgumentCursor& in, ExportConfig& e) {
  if (a == "--output") e.output_path = in.value(a);
  else throw UsageError("unknown option for 'parse export': " + a);
}

inline void read_eval_option(const std::string& a, ArgumentCursor& in, EvalConfig& e) {
  if (a == "--gold") e.gold_path = in.value(a);
  else if (a == "--raw") e.raw = true;
  else if (a == "--tokenize-only") e.tokenize_only = true;
  else throw UsageError("unknown option for 'parse eval': " + a);
}

inline void read_parse_option(const std::string& a, ArgumentCursor& in, ParseConfig& p) {
  if (a == "--input") p.input_path = in.value(a);
  else if (a == "--output") p.output_path = in.value(a);
  else if (a == "--replace-invalid-utf8") p.replace_invalid_utf8 = true;
  else if (a == "--format") {
    p.format = in.value(a);
    if (p.format != "auto" && p.format != "text" && p.format != "conllu" && p.format != "tokens")
      throw UsageError("--format takes auto, text, conllu or tokens, got '" + p.format + "'");
  } else throw UsageError("unknown option: " + a + (a.rfind("--", 0) == 0 ? "" : " (commands: train, train-tokenizer, eval, export)"));
}

// An option of the command being read, after the shared ones.
inline void read_command_option(const std::string& a, ArgumentCursor& in, Config& c) {
  switch (c.command) {
    case Command::TrainTokenizer: return read_train_tokenizer_option(a, in, c.train_tokenizer);
    case Command::Train: return read_train_option(a, in, c.train);
    case Command::Export: return read_export_option(a, in, c.export_);
    case Command::Eval: return read_eval_option(a, in, c.eval);
    case Command::Parse:
    case Command::Help: return read_parse_option(a, in, c.parse);
  }
}

// What each command cannot run without, checked once every option is read.
inline void check_required_options(const Config& c) {
  if (c.command == Command::Train) {
    const TrainConfig& t = c.train;
    if (t.train_path.empty() || t.dev_path.empty() || t.model_path.empty())
      throw UsageError("parse train needs --train, --dev and --model");
  }
  if (c.command == Command::TrainTokenizer) {
    const TokenizerTrainConfig& k = c.train_tokenizer;
    if (k.train_path.empty() || k.dev_path.empty() || k.model_path.empty())
      throw UsageError("parse train-tokenizer needs --train, --dev and --model");
  }
  if (c.command == Command::Eval && c.eval.gold_path.empty()) throw UsageError("parse eval needs --gold FILE");
  if (c.command == Command::Eval && c.eval.tokenize_only && !c.eval.raw)
    throw UsageError("--tokenize-only goes with parse eval --raw");
  if (c.command == Command::Export && (c.export_.model_path.empty() || c.export_.output_path.empty()))
    throw UsageError("parse export needs --model FILE and --output FILE");
}

inline Config parse_command_line(const std::vector<std::string>& args) {
  Config c;
  ArgumentCursor in{args, read_command(args, c.command)};
  // What a trained model records of the command that made it.
  std::string command_line = "parse";
  for (const auto& a : args) command_line += " " + a;
  c.train.command_line = c.train_tokenizer.command_line = command_line;
  for (; !in.done(); ++in.i) {
    const std::string& a = in.current();
    if (a == "--help" || a == "-h") {
      c.command = Command::Help;
      return c;
    }
    if (!read_shared_option(a, in, c)) read_command_option(a, in, c);
  }
  check_required_options(c);
  return c;
}

}  // namespace parse_cli

#endif  // SYNATTN_EXAMPLES_PARSE_OPTIONS_HPP
