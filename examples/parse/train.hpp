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

inline int run_train(const TrainConfig& cfg, std::ostream& log) {
  using namespace synattn::parse;
  const auto t0 = Clock::now();
  // Everything that can be refused is refused before the first step.
  check_writable(cfg.model_path, "--model");
  if (!cfg.checkpoint_path.empty()) check_writable(cfg.checkpoint_path, "--checkpoint");
  if (!cfg.log_path.empty()) check_writable(cfg.log_path, "--log");
  const std::vector<synattn::ConlluSentence> train = read_treebank(cfg.train_path, "training");
  const std::vector<synattn::ConlluSentence> dev = read_treebank(cfg.dev_path, "dev");
  const std::string data = data_signature(cfg);

  std::optional<ParserModel> model;
  synattn::AdamOptions adam_options;
  adam_options.lr = cfg.lr;
  adam_options.beta1 = 0.9;
  adam_options.beta2 = cfg.beta2;
  synattn::Adam<float> adam(adam_options);
  int first_epoch = 0, best_epoch = 0, since_best = 0;
  bool model_written = false;  // by this run
  double best_las = -1;
  long long step = 0;
  if (!cfg.resume_path.empty()) {
    synattn::CheckpointInfo info;
    model.emplace(ParserModel::load(cfg.resume_path, &adam, &info));
    step = info.step;
    const auto get = [&](const char* key) -> std::string {
      const auto it = info.metadata.find(key);
      if (it == info.metadata.end())
        throw synattn::FormatError(cfg.resume_path, 0, std::string("not a training checkpoint: no '") + key + "' in its metadata");
      return it->second;
    };
    // The command line must describe the run being continued.
    synattn::parse::ParserOptions asked = cfg.model;
    asked.num_upos = cfg.tagger ? 1 : 0;
    const std::string want = get(kSignatureKey), have = run_signature(cfg, asked, data);
    if (want != have) {
      // Compared by name: a line only one side has is named too.
      const auto lines = [](const std::string& text) {
        std::map<std::string, std::string> m;
        std::istringstream in(text);
        for (std::string x; std::getline(in, x);) m[x.substr(0, x.find('='))] = x.find('=') == std::string::npos ? "" : x.substr(x.find('=') + 1);
        return m;
      };
      const auto was = lines(want), now = lines(have);
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
    // Whole numbers in range, named with the file (util/metadata_number.hpp):
    // std::stoi read "-5x" as -5 and said only "stoi" for "abc", and a best
    // LAS of "nan" trained on without ever saving the model.
    first_epoch = static_cast<int>(synattn::metadata_integer(cfg.resume_path, kEpochKey, get(kEpochKey), 0, kMaxEpochs));
    best_las = synattn::metadata_real(cfg.resume_path, kBestKey, get(kBestKey), -1, 100);
    best_epoch = static_cast<int>(synattn::metadata_integer(cfg.resume_path, kBestEpochKey, get(kBestEpochKey), 0, first_epoch));
    since_best = static_cast<int>(synattn::metadata_integer(cfg.resume_path, kSinceBestKey, get(kSinceBestKey), 0, first_epoch));
    // A finished run has nothing left to train: going on would exit 0 naming
    // a --model file that this run never wrote.
    if (first_epoch >= cfg.epochs)
      throw UsageError("--resume " + cfg.resume_path + ": the checkpoint's run already trained " +
                       std::to_string(first_epoch) + " epochs (--epochs " + std::to_string(cfg.epochs) +
                       "): nothing to train; pass a larger --epochs to extend it");
    if (since_best >= cfg.patience)
      throw UsageError("--resume " + cfg.resume_path + ": the checkpoint's run stopped early (no better dev LAS for " +
                       std::to_string(since_best) + " epochs, --patience " + std::to_string(cfg.patience) +
                       "): nothing to train; pass a larger --patience to extend it");
    log << "resumed from " << cfg.resume_path << " after epoch " << first_epoch << " (step " << step << ", best dev LAS "
        << best_las << " at epoch " << best_epoch << ")\n";
  } else {
    ParserVocabulary vocab = ParserVocabulary::build(train, cfg.min_count);
    ParserOptions o = cfg.model;
    o.num_words = vocab.num_words();
    o.num_chars = vocab.num_chars();
    o.num_labels = vocab.num_labels();
    o.num_upos = cfg.tagger ? vocab.num_upos() : 0;
    o.seed = static_cast<std::uint64_t>(cfg.seed);
    model.emplace(o, std::move(vocab));
  }
  // The records so far: a resumed run continues the log of the run it resumes.
  std::string records;
  if (!cfg.log_path.empty() && !cfg.resume_path.empty() && first_epoch > 0) {
    std::error_code ec;
    if (std::filesystem::exists(cfg.log_path, ec)) records = resumed_log_records(cfg.log_path, first_epoch);
  }
  const ParserVocabulary& vocab = model->vocabulary();
  std::vector<EncodedSentence> train_corpus, dev_corpus;
  std::vector<long long> first_word;
  long long train_words = 0;
  for (const auto& s : train) {
    first_word.push_back(train_words);
    train_words += static_cast<long long>(s.words.size());
    train_corpus.push_back(encode_sentence(s, vocab));
  }
  for (const auto& s : dev) dev_corpus.push_back(encode_sentence(s, vocab));
  auto& parser = model->parser();
  log << synattn::build_info() << "\n";
  log << "train " << cfg.train_path << ": " << train.size() << " sentences, " << train_words << " words; dev "
      << cfg.dev_path << ": " << dev.size() << " sentences\n";
  log << "model: " << vocab.num_words() << " words, " << vocab.num_chars() << " characters, " << vocab.num_labels()
      << " relations, " << vocab.num_upos() << " tags; d_model " << parser.options().d_model << ", "
      << parser.options().layers << " layers, " << parser.options().heads << " heads, relative bias "
      << (parser.options().relative_bias ? "on" : "off") << ", chars " << (parser.options().use_chars ? "on" : "off")
      << "; " << parser.parameter_count() << " parameters\n";

  ParserBatch batch;
  ParserCache<float> cache;
  const synattn::RandomStream root(static_cast<std::uint64_t>(cfg.seed));
  const auto train_start = Clock::now();
  long long trained_words = 0;
  double step_seconds = 0;
  for (int epoch = first_epoch; epoch < cfg.epochs; ++epoch) {
    const synattn::RandomStream shuffle = root.derive(1).derive(static_cast<std::uint64_t>(epoch));
    const auto batches = token_budget_batches(train_corpus, cfg.batch_tokens, &shuffle);
    WordDropoutRule wd;
    wd.alpha = cfg.word_dropout_alpha;
    wd.stream = root.derive(2).derive(static_cast<std::uint64_t>(epoch));
    double loss_sum = 0;
    long long epoch_words = 0;
    for (const auto& indices : batches) {
      make_parser_batch(train_corpus, indices, vocab, wd, &first_word, batch);
      const auto s0 = Clock::now();
      const synattn::RandomStream drop = root.derive(3).derive(static_cast<std::uint64_t>(step));
      parser.zero_grad();
      const ParserLoss l = parser.loss_and_backward(batch, cache, &drop);
      if (cfg.clip > 0) synattn::clip_grad_norm(parser.parameter_store(), cfg.clip);
      ++step;
      const double decay = cfg.decay_steps > 0 ? std::pow(0.75, static_cast<double>(step) / cfg.decay_steps) : 1.0;
      adam.set_lr(cfg.lr * synattn::warmup_constant(step, cfg.warmup) * decay);
      adam.step(parser.parameter_store());
      step_seconds += seconds_since(s0);
      loss_sum += l.loss * static_cast<double>(batch.words_count);
      epoch_words += batch.words_count;
      trained_words += batch.words_count;
      if (cfg.progress_every > 0 && step % cfg.progress_every == 0) {
        char line[200];
        std::snprintf(line, sizeof line, "  step %lld loss %.4f %.0f words/s lr %.2e", step,
                      loss_sum / static_cast<double>(std::max<long long>(1, epoch_words)),
                      static_cast<double>(trained_words) / std::max(1e-9, step_seconds), adam.lr());
        log << line << std::endl;
      }
    }
    const DevScores d = score_corpus(*model, dev_corpus, 4096);
    const bool improved = d.las > best_las;
    if (improved) {
      best_las = d.las;
      best_epoch = epoch + 1;
      since_best = 0;
      // The model names the command and the code that made it.
      const std::map<std::string, std::string> note = {{"train.dev_uas", std::to_string(d.uas)},
                                                        {"train.dev_las", std::to_string(d.las)},
                                                        {"train.epochs", std::to_string(epoch + 1)},
                                                        {"train.command", cfg.command_line},
                                                        {"train.source_commit", SYNATTN_SOURCE_COMMIT}};
      if (cfg.half)
        model->save_half(cfg.model_path, note);
      else
        model->save(cfg.model_path, nullptr, step, note);
      model_written = true;
    } else {
      ++since_best;
    }
    const double elapsed = seconds_since(train_start);
    const double eta = elapsed / static_cast<double>(epoch + 1 - first_epoch) * static_cast<double>(cfg.epochs - epoch - 1);
    char line[320];
    std::snprintf(line, sizeof line,
                  "epoch %d/%d loss %.4f dev UAS %.2f LAS %.2f%s train %.0f words/s parse %.0f words/s elapsed %s ETA %s",
                  epoch + 1, cfg.epochs, loss_sum / static_cast<double>(std::max<long long>(1, epoch_words)), d.uas, d.las,
                  improved ? " (best, saved)" : "", static_cast<double>(trained_words) / std::max(1e-9, step_seconds),
                  d.words_per_second, train_deprel::format_duration(elapsed).c_str(), train_deprel::format_duration(eta).c_str());
    log << line << std::endl;
    if (!cfg.log_path.empty()) {
      EpochRecord r;
      r.epoch = epoch + 1;
      r.loss = loss_sum / static_cast<double>(std::max<long long>(1, epoch_words));
      r.dev = d;
      r.train_words_per_second = static_cast<double>(trained_words) / std::max(1e-9, step_seconds);
      r.seconds = elapsed;
      r.best = improved;
      records += epoch_record_line(r);
      // The whole log again, atomically, every epoch: a run stopped at any
      // point leaves the record of every epoch it finished.
      synattn::write_file_atomically(cfg.log_path, records, "parse train");
    }
    if (!cfg.checkpoint_path.empty())
      model->save(cfg.checkpoint_path, &adam, step,
                  {{kEpochKey, std::to_string(epoch + 1)}, {kBestKey, exact_text(best_las)},
                   {kBestEpochKey, std::to_string(best_epoch)}, {kSinceBestKey, std::to_string(since_best)},
                   {kSignatureKey, run_signature(cfg, parser.options(), data)}});
    if (since_best >= cfg.patience) {
      log << "no better dev LAS for " << cfg.patience << " epochs: stopping\n";
      break;
    }
  }
  // Only a file this run wrote is named as its model.
  if (!model_written && cfg.resume_path.empty())
    throw synattn::RuntimeError("parse train: no epoch gave a dev LAS to save (best " + exact_text(best_las) +
                                "): --model " + cfg.model_path + " was not written");
  char done[400];
  if (model_written)
    std::snprintf(done, sizeof done, "best dev LAS %.2f at epoch %d; model %s; %s in all\n", best_las, best_epoch,
                  cfg.model_path.c_str(), train_deprel::format_duration(seconds_since(t0)).c_str());
  else
    std::snprintf(done, sizeof done,
                  "best dev LAS %.2f at epoch %d, saved by the run resumed; this run did not beat it and did not write "
                  "--model %s; %s in all\n",
                  best_las, best_epoch, cfg.model_path.c_str(), train_deprel::format_duration(seconds_since(t0)).c_str());
  log << done;
  return 0;
}

}  // namespace parse_cli

#endif  // SYNATTN_EXAMPLES_PARSE_TRAIN_HPP
