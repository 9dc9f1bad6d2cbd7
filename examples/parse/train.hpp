// parse train — trains a BiaffineParser on a CoNLL-U treebank: Adam with
// linear warm-up and a slow exponential decay, gradient clipping, batches of
// similar-length sentences under a token budget, dev UAS/LAS after every
// epoch, early stopping on dev LAS, the best model saved (atomically) after
// each improvement, and a resumable checkpoint of the latest epoch.
#ifndef SYNATTN_EXAMPLES_PARSE_TRAIN_HPP
#define SYNATTN_EXAMPLES_PARSE_TRAIN_HPP

#include <synattn/build_info.hpp>
#include <synattn/io/atomic_file.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/io/input_file.hpp>
#include <synattn/parse/metrics.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/train/clipping.hpp>
#include <synattn/train/optimizer.hpp>
#include <synattn/train/schedules.hpp>
#include <synattn/util/metadata_number.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../train_deprel/progress.hpp"  // format_duration
#include "options.hpp"
#include "source_commit.hpp"  // SYNATTN_SOURCE_COMMIT (generated: cmake/source_commit.cmake)

namespace parse_cli {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


struct DevScores {
  double uas = 0, las = 0, words_per_second = 0;
  long long words = 0;
};

// UAS / LAS (every word, punctuation included; LAS on the universal part of
// the relation) of `model` on an encoded corpus with gold heads and labels.
inline DevScores score_corpus(const synattn::parse::ParserModel& model, const std::vector<synattn::parse::EncodedSentence>& corpus,
                              long long batch_tokens) {
  using namespace synattn::parse;
  const auto& v = model.vocabulary();
  std::vector<std::string_view> universal;  // metrics.hpp's rule: the part before ':'
  for (const std::string& l : v.labels()) universal.push_back(synattn::parse::universal_relation(l));
  long long words = 0, heads_ok = 0, labels_ok = 0;
  ParserBatch batch;
  synattn::parse::ParserCache<float> cache;
  ParseWorkspace ws;
  ParsedBatch parsed;
  const auto t0 = Clock::now();
  for (const auto& indices : token_budget_batches(corpus, batch_tokens, nullptr)) {
    make_parser_batch(corpus, indices, v, WordDropoutRule{}, nullptr, batch);
    model.parser().parse(batch, cache, ws, parsed);
    for (synattn::Index r = 0; r < batch.words.size(); ++r) {
      if (parsed.heads[r] < 0) continue;
      ++words;
      if (parsed.heads[r] != batch.heads[r]) continue;
      ++heads_ok;
      const std::int32_t gold = batch.labels[r];
      if (gold >= 0 && universal[static_cast<std::size_t>(gold)] == universal[static_cast<std::size_t>(parsed.labels[r])])
        ++labels_ok;
    }
  }
  DevScores s;
  s.words = words;
  s.words_per_second = static_cast<double>(words) / std::max(1e-9, seconds_since(t0));
  s.uas = words ? 100.0 * static_cast<double>(heads_ok) / static_cast<double>(words) : 0.0;
  s.las = words ? 100.0 * static_cast<double>(labels_ok) / static_cast<double>(words) : 0.0;
  return s;
}

inline std::vector<synattn::ConlluSentence> read_treebank(const std::string& path, const char* what) {
  std::vector<synattn::ConlluSentence> s = synattn::read_conllu(path);
  if (s.empty()) throw synattn::FormatError(path, 0, std::string("the ") + what + " file holds no sentences");
  return s;
}


// A double as text that reads back to the same value (std::to_string keeps
// six decimals: a resumed run then saw a tie with the best score as a gain).
inline std::string exact_text(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// A file's size and a checksum of its bytes (64-bit FNV-1a), as
// "N bytes, checksum HEX": what a resumed run must have trained on.
inline std::string file_fingerprint(const std::string& path) {
  std::ifstream in = synattn::open_input_file(path);
  std::uint64_t hash = 14695981039346656037ULL;
  unsigned long long size = 0;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const std::streamsize n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) hash = (hash ^ static_cast<unsigned char>(buf[i])) * 1099511628211ULL;
    size += static_cast<unsigned long long>(n);
  }
  if (in.bad()) throw synattn::FormatError(path, 0, "reading the file failed");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return std::to_string(size) + " bytes, checksum " + hex;
}

// The data files' part of a run's signature (run_signature's `data`).
inline std::string data_signature(const TrainConfig& c) {
  return "--train=" + file_fingerprint(c.train_path) + "\n--dev=" + file_fingerprint(c.dev_path) + "\n";
}

// The options a resumed run must share with the run it continues, as
// "name=value" lines: the data order, dropout masks and schedule are
// functions of them, so a resume with other values would silently be another
// run. (--epochs and --patience may change: extending a run is resuming it.)
// `data` (data_signature) covers the training and dev files' contents: the
// same options on other data would be another run too.
inline std::string run_signature(const TrainConfig& c, const synattn::parse::ParserOptions& o, const std::string& data) {
  std::string s = data;
  const auto add = [&](const char* name, const std::string& value) { s += std::string(name) + "=" + value + "\n"; };
  add("--seed", std::to_string(c.seed));
  add("--batch-tokens", std::to_string(c.batch_tokens));
  add("--lr", exact_text(c.lr));
  add("--warmup", std::to_string(c.warmup));
  add("--decay-steps", exact_text(c.decay_steps));
  add("--clip", exact_text(c.clip));
  add("--min-count", std::to_string(c.min_count));
  add("--half", c.half ? "on" : "off");
  add("--d-model", std::to_string(o.d_model));
  add("--layers", std::to_string(o.layers));
  add("--heads", std::to_string(o.heads));
  add("--d-ff", std::to_string(o.d_ff));
  add("--word-dim", std::to_string(o.word_dim));
  add("--char-filters", std::to_string(o.use_chars ? o.char_filters : 0));
  add("--arc-dim", std::to_string(o.arc_dim));
  add("--label-dim", std::to_string(o.label_dim));
  add("--no-chars", o.use_chars ? "off" : "on");
  add("--no-relative-bias", o.relative_bias ? "off" : "on");
  add("--no-tagger", o.num_upos > 0 ? "off" : "on");
  add("--dropout", exact_text(o.encoder_dropout));
  add("--mlp-dropout", exact_text(o.mlp_dropout));
  add("--embedding-dropout", exact_text(o.embedding_dropout));
  return s;
}

// Metadata keys of the training state in a checkpoint.
constexpr const char* kEpochKey = "train.epoch";
constexpr const char* kBestKey = "train.best_las";
constexpr const char* kBestEpochKey = "train.best_epoch";
constexpr const char* kSinceBestKey = "train.since_best";
constexpr const char* kSignatureKey = "train.options";
constexpr long long kMaxEpochs = 100000;  // --epochs' own bound (options.hpp)

// One epoch of a training run, as a line of --log's JSON lines: the record
// docs/results/ keeps of a shipped model's training.
struct EpochRecord {
  int epoch = 0;
  double loss = 0;
  DevScores dev;
  double train_words_per_second = 0;
  double seconds = 0;  // wall time since the run (or the resumed run) started
  bool best = false;
};

inline std::string epoch_record_line(const EpochRecord& r) {
  char line[400];
  std::snprintf(line, sizeof line,
                "{\"epoch\": %d, \"loss\": %.6f, \"dev_uas\": %.4f, \"dev_las\": %.4f, \"train_words_per_s\": %.0f, "
                "\"dev_words_per_s\": %.0f, \"seconds\": %.1f, \"best\": %s}\n",
                r.epoch, r.loss, r.dev.uas, r.dev.las, r.train_words_per_second, r.dev.words_per_second, r.seconds,
                r.best ? "true" : "false");
  return line;
}

// A resumed run's log starts with the records of the epochs it continues
// from: the lines of the existing --log file for epochs 1..first_epoch, in
// order, each checked to be the record of its epoch (a log of another run,
// or one that stops short, is refused by line rather than mixed in).
inline std::string resumed_log_records(const std::string& path, int first_epoch) {
  std::string kept;
  if (first_epoch == 0) return kept;
  std::ifstream in = synattn::open_input_file(path);
  std::string line;
  int expected = 1, line_number = 0;
  while (expected <= first_epoch && std::getline(in, line)) {
    ++line_number;
    const std::string key = "{\"epoch\": ";
    const std::size_t end = line.find(',');
    if (line.compare(0, key.size(), key) != 0 || end == std::string::npos)
      throw synattn::FormatError(path, line_number, "not a parse train --log record");
    const long long epoch = synattn::metadata_integer(path, "epoch", line.substr(key.size(), end - key.size()), 1, kMaxEpochs);
    if (epoch != expected)
      throw synattn::FormatError(path, line_number, "the record of epoch " + std::to_string(epoch) + ", expected epoch " +
                                                       std::to_string(expected) + " (the log of the run being resumed)");
    kept += line + "\n";
    ++expected;
  }
  if (expected <= first_epoch)
    throw synattn::FormatError(path, line_number, "the log stops before epoch " + std::to_string(expected) +
                                                     " of the " + std::to_string(first_epoch) + " the run resumed has");
  return kept;
}

// Everything a training run carries from step to step and epoch to epoch:
// its data, the model and optimizer, where it stands (what a checkpoint
// keeps), and the throughput counters of its progress lines.
struct TrainRun {
  const TrainConfig& cfg;
  std::ostream& log;
  Clock::time_point t0 = Clock::now();
  std::vector<synattn::ConlluSentence> train, dev;
  std::string data;  // data_signature(cfg)
  synattn::Adam<float> adam;
  std::optional<synattn::parse::ParserModel> model;
  // Where the run stands: after epoch first_epoch at the start (0, or the
  // checkpoint's when resumed), then after each epoch trained.
  int first_epoch = 0, best_epoch = 0, since_best = 0;
  double best_las = -1;
  long long step = 0;
  bool model_written = false;  // by this run
  std::string records;         // --log's lines so far
  std::vector<synattn::parse::EncodedSentence> train_corpus, dev_corpus;
  std::vector<long long> first_word;  // each training sentence's first word, counting from the file's start
  long long train_words = 0;
  synattn::parse::ParserBatch batch;
  synattn::parse::ParserCache<float> cache;
  synattn::RandomStream root;
  Clock::time_point train_start;
  long long trained_words = 0;
  double step_seconds = 0;

  TrainRun(const TrainConfig& c, std::ostream& l)
      : cfg(c), log(l), adam(adam_options(c)), root(static_cast<std::uint64_t>(c.seed)) {}

  static synattn::AdamOptions adam_options(const TrainConfig& c) {
    synattn::AdamOptions o;
    o.lr = c.lr;
    o.beta1 = 0.9;
    o.beta2 = c.beta2;
    return o;
  }
  double train_words_per_second() const { return static_cast<double>(trained_words) / std::max(1e-9, step_seconds); }
};

// Everything that can be refused is refused before the first step: the
// output paths, then empty data files.
inline void check_outputs_and_read_data(TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  check_writable(cfg.model_path, "--model");
  if (!cfg.checkpoint_path.empty()) check_writable(cfg.checkpoint_path, "--checkpoint");
  if (!cfg.log_path.empty()) check_writable(cfg.log_path, "--log");
  run.train = read_treebank(cfg.train_path, "training");
  run.dev = read_treebank(cfg.dev_path, "dev");
  run.data = data_signature(cfg);
}

// A run signature's "name=value" lines by name (a line without '=' has an
// empty value).
inline std::map<std::string, std::string> signature_lines(const std::string& text) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  for (std::string x; std::getline(in, x);) m[x.substr(0, x.find('='))] = x.find('=') == std::string::npos ? "" : x.substr(x.find('=') + 1);
  return m;
}

// The command line must describe the run being continued: `want` is the
// checkpoint's signature, `have` this command line's. Compared by name, a
// line only one side has named too; other data files are named first.
inline void check_resume_signature(const TrainConfig& cfg, const std::string& want, const std::string& have) {
  if (want == have) return;
  const auto was = signature_lines(want), now = signature_lines(have);
  for (const char* flag : {"--train", "--dev"}) {
    const auto a = was.find(flag), b = now.find(flag);
    if (a == was.end() || a->second != b->second)
      throw UsageError("--resume " + cfg.resume_path + ": " + flag + " " +
                       (std::string(flag) == "--train" ? cfg.train_path : cfg.dev_path) +
                       " is not the file the checkpoint's run trained on (it had " +
                       (a == was.end() ? std::string("no record of its data") : a->second) + "; this file has " +
                       b->second + "); resume with the data that started it");
  }
  std::string differ;
  for (const auto& kv : now) {
    const auto a = was.find(kv.first);
    if (a == was.end() || a->second != kv.second)
      differ += (differ.empty() ? "" : ", ") + kv.first + " was " + (a == was.end() ? std::string("unset") : a->second) +
                ", now " + kv.second;
  }
  throw UsageError("--resume " + cfg.resume_path + ": the checkpoint's run had other options (" + differ +
                   "); resume with the command line that started it");
}

// A finished run has nothing left to train: going on would exit 0 naming a
// --model file that this run never wrote.
inline void check_resume_has_epochs_left(const TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  if (run.first_epoch >= cfg.epochs)
    throw UsageError("--resume " + cfg.resume_path + ": the checkpoint's run already trained " +
                     std::to_string(run.first_epoch) + " epochs (--epochs " + std::to_string(cfg.epochs) +
                     "): nothing to train; pass a larger --epochs to extend it");
  if (run.since_best >= cfg.patience)
    throw UsageError("--resume " + cfg.resume_path + ": the checkpoint's run stopped early (no better dev LAS for " +
                     std::to_string(run.since_best) + " epochs, --patience " + std::to_string(cfg.patience) +
                     "): nothing to train; pass a larger --patience to extend it");
}

// --resume: the model, the optimizer's state and where the run stood, from
// the checkpoint, once it is known to continue this very run.
inline void resume_from_checkpoint(TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  synattn::CheckpointInfo info;
  run.model.emplace(synattn::parse::ParserModel::load(cfg.resume_path, &run.adam, &info));
  run.step = info.step;
  const auto get = [&](const char* key) -> std::string {
    const auto it = info.metadata.find(key);
    if (it == info.metadata.end())
      throw synattn::FormatError(cfg.resume_path, 0, std::string("not a training checkpoint: no '") + key + "' in its metadata");
    return it->second;
  };
  synattn::parse::ParserOptions asked = cfg.model;
  asked.num_upos = cfg.tagger ? 1 : 0;
  const std::string want = get(kSignatureKey), have = run_signature(cfg, asked, run.data);
  check_resume_signature(cfg, want, have);
  // Whole numbers in range, named with the file (util/metadata_number.hpp):
  // std::stoi read "-5x" as -5 and said only "stoi" for "abc", and a best
  // LAS of "nan" trained on without ever saving the model.
  run.first_epoch = static_cast<int>(synattn::metadata_integer(cfg.resume_path, kEpochKey, get(kEpochKey), 0, kMaxEpochs));
  run.best_las = synattn::metadata_real(cfg.resume_path, kBestKey, get(kBestKey), -1, 100);
  run.best_epoch =
      static_cast<int>(synattn::metadata_integer(cfg.resume_path, kBestEpochKey, get(kBestEpochKey), 0, run.first_epoch));
  run.since_best =
      static_cast<int>(synattn::metadata_integer(cfg.resume_path, kSinceBestKey, get(kSinceBestKey), 0, run.first_epoch));
  check_resume_has_epochs_left(run);
  run.log << "resumed from " << cfg.resume_path << " after epoch " << run.first_epoch << " (step " << run.step
          << ", best dev LAS " << run.best_las << " at epoch " << run.best_epoch << ")\n";
}

// A new run: the vocabulary from the training data, the sizes from the
// command line.
inline void create_model(TrainRun& run) {
  using namespace synattn::parse;
  const TrainConfig& cfg = run.cfg;
  ParserVocabulary vocab = ParserVocabulary::build(run.train, cfg.min_count);
  ParserOptions o = cfg.model;
  o.num_words = vocab.num_words();
  o.num_chars = vocab.num_chars();
  o.num_labels = vocab.num_labels();
  o.num_upos = cfg.tagger ? vocab.num_upos() : 0;
  o.seed = static_cast<std::uint64_t>(cfg.seed);
  run.model.emplace(o, std::move(vocab));
}

// The records so far: a resumed run continues the log of the run it resumes.
inline void read_resumed_records(TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  if (cfg.log_path.empty() || cfg.resume_path.empty() || run.first_epoch == 0) return;
  std::error_code ec;
  if (std::filesystem::exists(cfg.log_path, ec)) run.records = resumed_log_records(cfg.log_path, run.first_epoch);
}

// Both treebanks in the model's vocabulary; the training sentences' first
// words counted for word dropout.
inline void encode_corpora(TrainRun& run) {
  const synattn::parse::ParserVocabulary& vocab = run.model->vocabulary();
  for (const auto& s : run.train) {
    run.first_word.push_back(run.train_words);
    run.train_words += static_cast<long long>(s.words.size());
    run.train_corpus.push_back(synattn::parse::encode_sentence(s, vocab));
  }
  for (const auto& s : run.dev) run.dev_corpus.push_back(synattn::parse::encode_sentence(s, vocab));
}

inline void log_run_summary(const TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  const synattn::parse::ParserVocabulary& vocab = run.model->vocabulary();
  const auto& parser = run.model->parser();
  run.log << synattn::build_info() << "\n";
  run.log << "train " << cfg.train_path << ": " << run.train.size() << " sentences, " << run.train_words
          << " words; dev " << cfg.dev_path << ": " << run.dev.size() << " sentences\n";
  run.log << "model: " << vocab.num_words() << " words, " << vocab.num_chars() << " characters, " << vocab.num_labels()
          << " relations, " << vocab.num_upos() << " tags; d_model " << parser.options().d_model << ", "
          << parser.options().layers << " layers, " << parser.options().heads << " heads, relative bias "
          << (parser.options().relative_bias ? "on" : "off") << ", chars "
          << (parser.options().use_chars ? "on" : "off") << "; " << parser.parameter_count() << " parameters\n";
}

// An epoch's training loss: the words' mean, summed batch by batch.
struct EpochLoss {
  double sum = 0;
  long long words = 0;
  double mean() const { return sum / static_cast<double>(std::max<long long>(1, words)); }
};

// One optimizer step on run.batch: gradients, clipping, the learning rate
// of this step (warm-up, then decay), Adam. Returns the batch's mean loss.
inline double train_step(TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  auto& parser = run.model->parser();
  const auto s0 = Clock::now();
  const synattn::RandomStream drop = run.root.derive(3).derive(static_cast<std::uint64_t>(run.step));
  parser.zero_grad();
  const synattn::parse::ParserLoss l = parser.loss_and_backward(run.batch, run.cache, &drop);
  if (cfg.clip > 0) synattn::clip_grad_norm(parser.parameter_store(), cfg.clip);
  ++run.step;
  const double decay = cfg.decay_steps > 0 ? std::pow(0.75, static_cast<double>(run.step) / cfg.decay_steps) : 1.0;
  run.adam.set_lr(cfg.lr * synattn::warmup_constant(run.step, cfg.warmup) * decay);
  run.adam.step(parser.parameter_store());
  run.step_seconds += seconds_since(s0);
  return l.loss;
}

// --progress-every N: a line every N steps.
inline void log_step_progress(const TrainRun& run, const EpochLoss& loss) {
  if (run.cfg.progress_every <= 0 || run.step % run.cfg.progress_every != 0) return;
  char line[200];
  std::snprintf(line, sizeof line, "  step %lld loss %.4f %.0f words/s lr %.2e", run.step, loss.mean(),
                run.train_words_per_second(), run.adam.lr());
  run.log << line << std::endl;
}

// One pass over the training data, shuffled into token-budget batches and
// with word dropout drawn for this epoch.
inline EpochLoss train_epoch(TrainRun& run, int epoch) {
  using namespace synattn::parse;
  const TrainConfig& cfg = run.cfg;
  const synattn::RandomStream shuffle = run.root.derive(1).derive(static_cast<std::uint64_t>(epoch));
  const auto batches = token_budget_batches(run.train_corpus, cfg.batch_tokens, &shuffle);
  WordDropoutRule wd;
  wd.alpha = cfg.word_dropout_alpha;
  wd.stream = run.root.derive(2).derive(static_cast<std::uint64_t>(epoch));
  EpochLoss loss;
  for (const auto& indices : batches) {
    make_parser_batch(run.train_corpus, indices, run.model->vocabulary(), wd, &run.first_word, run.batch);
    const double batch_loss = train_step(run);
    loss.sum += batch_loss * static_cast<double>(run.batch.words_count);
    loss.words += run.batch.words_count;
    run.trained_words += run.batch.words_count;
    log_step_progress(run, loss);
  }
  return loss;
}

// A better dev LAS: the model saved (F16 with --half), naming the command
// and the code that made it. Otherwise one more epoch without a gain.
inline bool keep_if_best(TrainRun& run, int epoch, const DevScores& d) {
  if (!(d.las > run.best_las)) {
    ++run.since_best;
    return false;
  }
  const TrainConfig& cfg = run.cfg;
  run.best_las = d.las;
  run.best_epoch = epoch + 1;
  run.since_best = 0;
  const std::map<std::string, std::string> note = {{"train.dev_uas", std::to_string(d.uas)},
                                                    {"train.dev_las", std::to_string(d.las)},
                                                    {"train.epochs", std::to_string(epoch + 1)},
                                                    {"train.command", cfg.command_line},
                                                    {"train.source_commit", SYNATTN_SOURCE_COMMIT}};
  if (cfg.half)
    run.model->save_half(cfg.model_path, note);
  else
    run.model->save(cfg.model_path, nullptr, run.step, note);
  run.model_written = true;
  return true;
}

inline void log_epoch_line(const TrainRun& run, int epoch, const EpochLoss& loss, const DevScores& d, bool improved,
                           double elapsed) {
  const TrainConfig& cfg = run.cfg;
  const double eta = elapsed / static_cast<double>(epoch + 1 - run.first_epoch) * static_cast<double>(cfg.epochs - epoch - 1);
  char line[320];
  std::snprintf(line, sizeof line,
                "epoch %d/%d loss %.4f dev UAS %.2f LAS %.2f%s train %.0f words/s parse %.0f words/s elapsed %s ETA %s",
                epoch + 1, cfg.epochs, loss.mean(), d.uas, d.las, improved ? " (best, saved)" : "",
                run.train_words_per_second(), d.words_per_second, train_deprel::format_duration(elapsed).c_str(),
                train_deprel::format_duration(eta).c_str());
  run.log << line << std::endl;
}

// --log: the epoch's record added, and the whole log written again,
// atomically, every epoch: a run stopped at any point leaves the record of
// every epoch it finished.
inline void write_epoch_record(TrainRun& run, int epoch, const EpochLoss& loss, const DevScores& d, bool improved,
                               double elapsed) {
  if (run.cfg.log_path.empty()) return;
  EpochRecord r;
  r.epoch = epoch + 1;
  r.loss = loss.mean();
  r.dev = d;
  r.train_words_per_second = run.train_words_per_second();
  r.seconds = elapsed;
  r.best = improved;
  run.records += epoch_record_line(r);
  synattn::write_file_atomically(run.cfg.log_path, run.records, "parse train");
}

// --checkpoint: the model, Adam's state and where the run stands after `epoch`.
inline void save_checkpoint(TrainRun& run, int epoch) {
  const TrainConfig& cfg = run.cfg;
  if (cfg.checkpoint_path.empty()) return;
  run.model->save(cfg.checkpoint_path, &run.adam, run.step,
                  {{kEpochKey, std::to_string(epoch + 1)}, {kBestKey, exact_text(run.best_las)},
                   {kBestEpochKey, std::to_string(run.best_epoch)}, {kSinceBestKey, std::to_string(run.since_best)},
                   {kSignatureKey, run_signature(cfg, run.model->parser().options(), run.data)}});
}

// Trains from first_epoch up to --epochs, stopping early after --patience
// epochs without a better dev LAS.
inline void train_epochs(TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  run.train_start = Clock::now();
  for (int epoch = run.first_epoch; epoch < cfg.epochs; ++epoch) {
    const EpochLoss loss = train_epoch(run, epoch);
    const DevScores d = score_corpus(*run.model, run.dev_corpus, 4096);
    const bool improved = keep_if_best(run, epoch, d);
    const double elapsed = seconds_since(run.train_start);
    log_epoch_line(run, epoch, loss, d, improved, elapsed);
    write_epoch_record(run, epoch, loss, d, improved, elapsed);
    save_checkpoint(run, epoch);
    if (run.since_best >= cfg.patience) {
      run.log << "no better dev LAS for " << cfg.patience << " epochs: stopping\n";
      break;
    }
  }
}

// The run's last line. Only a file this run wrote is named as its model.
inline void log_run_result(const TrainRun& run) {
  const TrainConfig& cfg = run.cfg;
  if (!run.model_written && cfg.resume_path.empty())
    throw synattn::RuntimeError("parse train: no epoch gave a dev LAS to save (best " + exact_text(run.best_las) +
                                "): --model " + cfg.model_path + " was not written");
  char done[400];
  if (run.model_written)
    std::snprintf(done, sizeof done, "best dev LAS %.2f at epoch %d; model %s; %s in all\n", run.best_las,
                  run.best_epoch, cfg.model_path.c_str(), train_deprel::format_duration(seconds_since(run.t0)).c_str());
  else
    std::snprintf(done, sizeof done,
                  "best dev LAS %.2f at epoch %d, saved by the run resumed; this run did not beat it and did not write "
                  "--model %s; %s in all\n",
                  run.best_las, run.best_epoch, cfg.model_path.c_str(),
                  train_deprel::format_duration(seconds_since(run.t0)).c_str());
  run.log << done;
}

inline int run_train(const TrainConfig& cfg, std::ostream& log) {
  TrainRun run(cfg, log);
  check_outputs_and_read_data(run);
  if (!cfg.resume_path.empty())
    resume_from_checkpoint(run);
  else
    create_model(run);
  read_resumed_records(run);
  encode_corpora(run);
  log_run_summary(run);
  train_epochs(run);
  log_run_result(run);
  return 0;
}

}  // namespace parse_cli

#endif  // SYNATTN_EXAMPLES_PARSE_TRAIN_HPP
