// train_deprel — one run's result, its JSON form, and the Markdown table of
// a grid of runs.
//
// JSON: one object per run, written as JSON lines (one object per line,
// appended as each run finishes, so a long grid that stops half-way keeps
// what it finished and a file can collect several invocations). Keys:
// variant, train_size (the N asked for), train_sentences (kept after the
// length cut), seed, bias_lr_mult, table_init, best_dev_accuracy (percent),
// best_epoch, epochs_run, train_seconds, train_tokens_per_second,
// dev_history (percent per epoch), learned_bias (per layer: s * T, row-major
// (rows, buckets), rows = heads for per-head tables else 1), bias_rows,
// bucket_labels, processes, reduce_wait_seconds; and the trees (docs/experiment.md,
// "Trees a parser drew"):
// trees (the condition's name, "gold" by default), train_trees and dev_trees
// ("gold" or the tree file), tree_noise, tree_noise_seed, train_tree_noise,
// train_tree_uas and dev_tree_uas (percent, against gold; under
// train_tree_noise the mean over epochs), and dev_trees_label_accuracy (the
// dev tree file's own base DEPREL on the task, percent; absent without one);
// with tree fusion (the fusion variant) views, view_trees (the files of
// views 1..), dev_view_uas (percent, view 0 first) and view_weights (per
// layer, the learned softmax weights, (rows, views) row-major); packing
// ("sentences", or "documents w=W[, root links]": --pack-documents), subset
// ("sentences", or "documents": whole documents), peak_resident_mb (the
// process's peak resident memory during the run) and dev_tokens_per_second
// (the best model's inference speed on dev); with distillation
// (--distill-from) teacher (its file), teacher_variant, teacher_trees,
// teacher_seed, teacher_dev_accuracy and teacher_dev_tokens_per_second (the
// teacher on this run's dev), distill_temperature, distill_weight,
// transfer_size (M asked for), transfer_sentences (kept after the length
// cut) and transfer_trees.
// Keys added later are optional when read, so older files still report.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_RESULTS_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_RESULTS_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include <synattn/error.hpp>
#include <synattn/io/output_path.hpp>
#include <synattn/io/json_fields.hpp>

namespace train_deprel {

struct RunResult {
  std::string variant;
  int train_size = 0;
  int train_sentences = 0;
  int seed = 0;
  double bias_lr_mult = 1.0;
  std::string table_init = "zero";
  double best_dev_accuracy = 0.0;  // percent
  int best_epoch = 0;              // 1-based
  int epochs_run = 0;
  double train_seconds = 0.0;
  double train_tokens_per_second = 0.0;
  std::vector<double> dev_history;                // percent, one per epoch
  std::vector<std::vector<double>> learned_bias;  // per layer, (bias_rows, buckets) row-major
  int bias_rows = 1;
  std::vector<std::string> bucket_labels;
  int processes = 1;                 // MPI ranks that trained it (mpirun -np P)
  double reduce_wait_seconds = 0.0;  // time blocked waiting for gradient reductions (rank 0)
  std::string trees = "gold";
  std::string train_trees = "gold", dev_trees = "gold";
  double tree_noise = 0.0;
  std::uint64_t tree_noise_seed = 1;
  double train_tree_noise = 0.0;
  double train_tree_uas = 100.0, dev_tree_uas = 100.0;
  double dev_trees_label_accuracy = -1;  // negative: no dev tree file with relations
  // Tree fusion (the fusion variant): the views, the files of views 1.., each
  // view's dev UAS (view 0 first) and the learned weights per layer.
  int views = 1;
  std::vector<std::string> view_trees;
  std::vector<double> dev_view_uas;
  std::vector<std::vector<double>> view_weights;
  // Batching (--pack-documents, --document-subset) and memory.
  std::string packing = "sentences";
  std::string subset = "sentences";
  double peak_resident_mb = 0.0;
  double dev_tokens_per_second = 0.0;  // inference on dev (infer(), one pass), best epoch's model
  // Distillation (--distill-from); teacher empty: none.
  std::string teacher;  // the teacher's file
  std::string teacher_variant, teacher_trees;
  int teacher_seed = 0;
  double teacher_dev_accuracy = -1;  // the teacher on dev, measured by this run (its dev trees)
  double teacher_dev_tokens_per_second = 0.0;
  double distill_temperature = 0.0, distill_weight = 0.0;
  int transfer_size = 0, transfer_sentences = 0;
  std::string transfer_trees;
};

// A path's file name: tables name tree files without their folder (the
// same file moved is the same trees).
inline std::string file_name(const std::string& path) {
  const std::string::size_type slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// How a run was distilled, as the tables name it: "" when it was not, else
// "teacher shared (gold) T=2 A=0.5", plus " + M transfer (trees FILE)".
inline std::string distill_label(const RunResult& r) {
  if (r.teacher.empty()) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, " T=%g A=%g", r.distill_temperature, r.distill_weight);
  std::string s = "teacher " + r.teacher_variant + " (" + r.teacher_trees + ")" + buf;
  if (r.transfer_size > 0)
    s += " + " + std::to_string(r.transfer_size) + " transfer (trees " + file_name(r.transfer_trees) + ")";
  return s;
}

// ---- The row of every table ------------------------------------------------

// Every setting a run's JSON line records that tells its recipe from another
// run's: the row key of every table (markdown_results_table, the tree table,
// the gain-vs-UAS plot), so no table pools runs that differ. The seed is the
// spread a cell's mean is taken over and N the column; neither is here, nor
// are the measurements, nor `processes` (P ranks train the same global
// batches, differing only in the order of floating-point sums:
// docs/distributed.md). Tree files are named without their folder (the same
// file moved is the same trees), and the noise seed counts only with noise.
struct RunKey {
  std::string variant;
  double bias_lr_mult = 1.0;
  std::string table_init = "zero";
  // The trees: the condition's name and the settings behind it.
  std::string trees = "gold";
  std::string train_trees = "gold", dev_trees = "gold";
  double tree_noise = 0.0, train_tree_noise = 0.0;
  std::uint64_t tree_noise_seed = 1;
  std::vector<std::string> view_trees;
  // The batching: "sentences" or "documents w=W[, root links]"; "sentences"
  // or "documents".
  std::string packing = "sentences", subset = "sentences";
  // Distillation: distill_label(), "" for a run trained on gold labels alone.
  std::string distill;

  auto tied() const {
    return std::tie(variant, bias_lr_mult, table_init, trees, train_trees, dev_trees, tree_noise, train_tree_noise,
                    tree_noise_seed, view_trees, packing, subset, distill);
  }
  bool operator<(const RunKey& o) const { return tied() < o.tied(); }
  bool operator==(const RunKey& o) const { return tied() == o.tied(); }
  bool operator!=(const RunKey& o) const { return !(*this == o); }

  // The same recipe without its trees (gold, no noise, one view): what none
  // is compared at (trees play no part in it) and what the gold gain is.
  RunKey without_trees() const {
    RunKey k = *this;
    k.trees = "gold";
    k.train_trees = k.dev_trees = "gold";
    k.tree_noise = k.train_tree_noise = 0.0;
    k.tree_noise_seed = 1;
    k.view_trees.clear();
    return k;
  }
  // The `none` run this recipe's gain is measured against: no bias, the same
  // batching.
  RunKey baseline() const {
    RunKey k = without_trees();
    k.distill.clear();
    k.variant = "none";
    k.bias_lr_mult = 1.0;
    k.table_init = "zero";
    return k;
  }
  // The trees alone (and the batching, which picks the sentences they are
  // scored on): what a tree UAS is the mean over. Fusion's further views
  // are not in it: the UAS is view 0's.
  RunKey tree_part() const {
    RunKey k = *this;
    k.view_trees.clear();
    k.variant.clear();
    k.bias_lr_mult = 1.0;
    k.table_init = "zero";
    return k;
  }
};

inline RunKey run_key(const RunResult& r) {
  RunKey k;
  k.variant = r.variant;
  k.bias_lr_mult = r.bias_lr_mult;
  k.table_init = r.table_init;
  k.trees = r.trees;
  k.train_trees = file_name(r.train_trees);
  k.dev_trees = file_name(r.dev_trees);
  k.tree_noise = r.tree_noise;
  k.train_tree_noise = r.train_tree_noise;
  k.tree_noise_seed = r.tree_noise > 0 || r.train_tree_noise > 0 ? r.tree_noise_seed : 1;
  for (const std::string& v : r.view_trees) k.view_trees.push_back(file_name(v));
  k.packing = r.packing;
  k.subset = r.subset;
  k.distill = distill_label(r);
  return k;
}

// How a row names its batching beyond the recipe's: "" for random sentences
// batched sentence by sentence; and a student's teacher (", student of
// teacher ...").
inline std::string batching_suffix(const RunKey& k) {
  const std::string student = k.distill.empty() ? "" : ", student of " + k.distill;
  if (k.packing != "sentences") return ", packed " + k.packing + student;
  if (k.subset != "sentences") return ", " + k.subset + " subset" + student;
  return student;
}

// Each setting of a key by name, as text (for rows the table's columns
// would otherwise show alike).
inline std::vector<std::pair<std::string, std::string>> key_settings(const RunKey& k) {
  const auto number = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return std::string(buf);
  };
  std::string views;
  for (const std::string& v : k.view_trees) views += (views.empty() ? "" : ",") + v;
  return {{"variant", k.variant},
          {"bias_lr_mult", number(k.bias_lr_mult)},
          {"table_init", k.table_init},
          {"trees", k.trees},
          {"train_trees", k.train_trees},
          {"dev_trees", k.dev_trees},
          {"tree_noise", number(k.tree_noise)},
          {"train_tree_noise", number(k.train_tree_noise)},
          {"tree_noise_seed", std::to_string(k.tree_noise_seed)},
          {"view_trees", views},
          {"packing", k.packing},
          {"subset", k.subset},
          {"distill", k.distill}};
}

// What tells rows apart that `label` does not: for each row, "" when no
// other row has its label, else " [setting=value, ...]" with the settings in
// which it differs from the rows of the same label, so no two rows of a
// table read alike.
inline std::vector<std::string> label_disambiguators(const std::vector<RunKey>& rows,
                                                     const std::function<std::string(const RunKey&)>& label) {
  std::vector<std::string> labels;
  std::vector<std::vector<std::pair<std::string, std::string>>> settings;
  for (const RunKey& k : rows) {
    labels.push_back(label(k));
    settings.push_back(key_settings(k));
  }
  std::vector<std::string> out(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t s = 0; s < settings[i].size(); ++s) {
      bool differs = false;
      for (std::size_t j = 0; j < rows.size() && !differs; ++j)
        differs = j != i && labels[j] == labels[i] && settings[j][s].second != settings[i][s].second;
      if (differs) out[i] += (out[i].empty() ? " [" : ", ") + settings[i][s].first + "=" + settings[i][s].second;
    }
    if (!out[i].empty()) out[i] += "]";
  }
  return out;
}

inline nlohmann::json to_json(const RunResult& r) {
  nlohmann::json j{{"variant", r.variant},
                   {"train_size", r.train_size},
                   {"train_sentences", r.train_sentences},
                   {"seed", r.seed},
                   {"bias_lr_mult", r.bias_lr_mult},
                   {"table_init", r.table_init},
                   {"best_dev_accuracy", r.best_dev_accuracy},
                   {"best_epoch", r.best_epoch},
                   {"epochs_run", r.epochs_run},
                   {"train_seconds", r.train_seconds},
                   {"train_tokens_per_second", r.train_tokens_per_second},
                   {"dev_history", r.dev_history},
                   {"learned_bias", r.learned_bias},
                   {"bias_rows", r.bias_rows},
                   {"bucket_labels", r.bucket_labels},
                   {"processes", r.processes},
                   {"reduce_wait_seconds", r.reduce_wait_seconds},
                   {"trees", r.trees},
                   {"train_trees", r.train_trees},
                   {"dev_trees", r.dev_trees},
                   {"tree_noise", r.tree_noise},
                   {"tree_noise_seed", r.tree_noise_seed},
                   {"train_tree_noise", r.train_tree_noise},
                   {"train_tree_uas", r.train_tree_uas},
                   {"dev_tree_uas", r.dev_tree_uas},
                   {"packing", r.packing},
                   {"subset", r.subset},
                   {"peak_resident_mb", r.peak_resident_mb}};
  if (r.dev_trees_label_accuracy >= 0) j["dev_trees_label_accuracy"] = r.dev_trees_label_accuracy;
  if (r.dev_tokens_per_second > 0) j["dev_tokens_per_second"] = r.dev_tokens_per_second;
  if (!r.teacher.empty()) {
    j["teacher"] = r.teacher;
    j["teacher_variant"] = r.teacher_variant;
    j["teacher_trees"] = r.teacher_trees;
    j["teacher_seed"] = r.teacher_seed;
    j["teacher_dev_accuracy"] = r.teacher_dev_accuracy;
    j["teacher_dev_tokens_per_second"] = r.teacher_dev_tokens_per_second;
    j["distill_temperature"] = r.distill_temperature;
    j["distill_weight"] = r.distill_weight;
    j["transfer_size"] = r.transfer_size;
    j["transfer_sentences"] = r.transfer_sentences;
    j["transfer_trees"] = r.transfer_trees;
  }
  if (r.views > 1) {
    j["views"] = r.views;
    j["view_trees"] = r.view_trees;
    j["dev_view_uas"] = r.dev_view_uas;
    j["view_weights"] = r.view_weights;
  }
  return j;
}

// Throws synattn::Error naming the missing or mistyped key.
inline RunResult run_result_from_json(const nlohmann::json& j) {
  RunResult r;
  const auto get = [&j](const char* key, auto& out) {
    using T = std::decay_t<decltype(out)>;
    const std::string what = std::string("run result: key '") + key + "'";
    if (!j.contains(key)) throw synattn::Error(what + " is missing");
    // An integer through the model files' one integer reader: get_to cut
    // 2.7 to 2 and cast 1e300 to int with undefined behaviour.
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!j.at(key).is_number())
        throw synattn::Error(what + " has the wrong type (a " + j.at(key).type_name() + ", expected an integer)");
      out = synattn::detail::checked_integer<T>(j.at(key), what);
    } else {
      try {
        j.at(key).get_to(out);
      } catch (const nlohmann::json::exception& e) {
        throw synattn::Error(what + " has the wrong type (" + e.what() + ")");
      }
      if constexpr (std::is_floating_point_v<T>)
        if (!std::isfinite(out)) throw synattn::Error(what + " is " + j.at(key).dump() + ", not a finite number");
    }
  };
  get("variant", r.variant);
  get("train_size", r.train_size);
  get("train_sentences", r.train_sentences);
  get("seed", r.seed);
  get("bias_lr_mult", r.bias_lr_mult);
  get("table_init", r.table_init);
  get("best_dev_accuracy", r.best_dev_accuracy);
  get("best_epoch", r.best_epoch);
  get("epochs_run", r.epochs_run);
  get("train_seconds", r.train_seconds);
  get("train_tokens_per_second", r.train_tokens_per_second);
  get("dev_history", r.dev_history);
  get("learned_bias", r.learned_bias);
  get("bias_rows", r.bias_rows);
  get("bucket_labels", r.bucket_labels);
  if (j.contains("processes")) get("processes", r.processes);  // absent in files of earlier versions
  if (j.contains("reduce_wait_seconds")) get("reduce_wait_seconds", r.reduce_wait_seconds);
  // The trees (absent before tree sources existed: gold).
  const auto optional = [&](const char* key, auto& out) {
    if (j.contains(key)) get(key, out);
  };
  optional("trees", r.trees);
  optional("train_trees", r.train_trees);
  optional("dev_trees", r.dev_trees);
  optional("tree_noise", r.tree_noise);
  optional("tree_noise_seed", r.tree_noise_seed);
  optional("train_tree_noise", r.train_tree_noise);
  optional("train_tree_uas", r.train_tree_uas);
  optional("dev_tree_uas", r.dev_tree_uas);
  optional("dev_trees_label_accuracy", r.dev_trees_label_accuracy);
  optional("views", r.views);
  optional("view_trees", r.view_trees);
  optional("dev_view_uas", r.dev_view_uas);
  optional("view_weights", r.view_weights);
  optional("packing", r.packing);
  optional("subset", r.subset);
  optional("peak_resident_mb", r.peak_resident_mb);
  // Inference speed and distillation (absent before distillation existed).
  optional("dev_tokens_per_second", r.dev_tokens_per_second);
  optional("teacher", r.teacher);
  optional("teacher_variant", r.teacher_variant);
  optional("teacher_trees", r.teacher_trees);
  optional("teacher_seed", r.teacher_seed);
  optional("teacher_dev_accuracy", r.teacher_dev_accuracy);
  optional("teacher_dev_tokens_per_second", r.teacher_dev_tokens_per_second);
  optional("distill_temperature", r.distill_temperature);
  optional("distill_weight", r.distill_weight);
  optional("transfer_size", r.transfer_size);
  optional("transfer_sentences", r.transfer_sentences);
  optional("transfer_trees", r.transfer_trees);
  return r;
}

// Appends one line to `path` (created if absent).
inline void append_json_line(const std::string& path, const RunResult& r) {
  // The output-path policy (io/output_path.hpp): '-' is standard output; a
  // symlink is followed; a directory, socket or link to nothing is refused.
  const synattn::OutputTarget target = synattn::resolve_output_path(path, "append_json_line");
  if (target.kind == synattn::OutputKind::StandardOutput) {
    std::cout << to_json(r).dump() << '\n' << std::flush;
    if (!std::cout) throw synattn::RuntimeError("append_json_line: writing to standard output failed");
    return;
  }
  std::ofstream out(target.path, std::ios::app);
  if (!out) throw synattn::RuntimeError("append_json_line: cannot open '" + path + "' for appending");
  out << to_json(r).dump() << '\n';
  if (!out) throw synattn::Error("append_json_line: writing '" + path + "' failed");
}

// Every run of a JSON-lines file; blank lines are skipped. Errors name the
// file and line.
inline std::vector<RunResult> read_json_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw synattn::RuntimeError("read_json_lines: cannot open '" + path + "'");
  std::vector<RunResult> out;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(run_result_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception& e) {
      throw synattn::Error(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return out;
}

// Mean and sample standard deviation (0 for a single value).
struct MeanStd {
  double mean = NAN, std = NAN, median = NAN;
  int count = 0;
};

inline MeanStd mean_std(const std::vector<double>& v) {
  MeanStd m;
  m.count = static_cast<int>(v.size());
  if (v.empty()) return m;
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t h = sorted.size() / 2;
  m.median = sorted.size() % 2 ? sorted[h] : 0.5 * (sorted[h - 1] + sorted[h]);
  double s = 0.0;
  for (double x : v) s += x;
  m.mean = s / static_cast<double>(v.size());
  double q = 0.0;
  for (double x : v) q += (x - m.mean) * (x - m.mean);
  m.std = v.size() > 1 ? std::sqrt(q / static_cast<double>(v.size() - 1)) : 0.0;
  return m;
}

inline std::string format_number(const char* f, double a, double b = 0.0, int c = 0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return std::string(buf);
}

// A table cell over seeds: "mean ± std (n=K)", and from four seeds on the
// median beside it (", median M"): one outlying seed moves a mean of few.
inline std::string seeds_cell(const MeanStd& m) {
  std::string s = format_number("%.2f ± %.2f (n=%d", m.mean, m.std, m.count);
  if (m.count >= 4) s += format_number(", median %.2f", m.median);
  return s + ")";
}

// Rows: one per RunKey, in first-appearance order, named by the variant
// (with " (bias lr x10)" when the multiplier is not 1) and its
// batching_suffix (and by label_disambiguators where that is not enough);
// columns: train size N ascending; cells: mean ± std of best dev accuracy
// over seeds (n = seeds); the last column: the gain of the mean over the
// `none` run of the same batching at each N ("+1.23 / -0.40 / ...", "—"
// where that `none` is missing).
inline std::string markdown_results_table(const std::vector<RunResult>& runs) {
  std::vector<RunKey> rows;
  std::set<int> sizes;
  std::map<std::pair<RunKey, int>, std::vector<double>> cells;
  for (const RunResult& r : runs) {
    const RunKey k = run_key(r);
    if (std::find(rows.begin(), rows.end(), k) == rows.end()) rows.push_back(k);
    sizes.insert(r.train_size);
    cells[{k, r.train_size}].push_back(r.best_dev_accuracy);
  }
  const auto mult_text = [&](double m) {
    return m == 1.0 ? std::string() : " (bias lr x" + format_number("%g", m) + ")";
  };
  const auto label = [&](const RunKey& k) { return k.variant + mult_text(k.bias_lr_mult) + batching_suffix(k); };
  const std::vector<std::string> extra = label_disambiguators(rows, label);
  std::string out = "| variant |";
  std::string rule = "|---|";
  for (int n : sizes) {
    out += " N = " + std::to_string(n) + " |";
    rule += "---|";
  }
  out += " gain over none |\n" + rule + "---|\n";
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const RunKey& k = rows[row];
    out += "| " + label(k) + extra[row] + " |";
    std::string gain;
    for (int n : sizes) {
      const auto it = cells.find({k, n});
      const auto none = cells.find({k.baseline(), n});
      if (it == cells.end()) {
        out += " — |";
      } else {
        out += " " + seeds_cell(mean_std(it->second)) + " |";
      }
      if (!gain.empty()) gain += " / ";
      if ((k.variant == "none" && k.distill.empty()) || it == cells.end() || none == cells.end())
        gain += "—";
      else
        gain += format_number("%+.2f", mean_std(it->second).mean - mean_std(none->second).mean);
    }
    out += " " + gain + " |\n";
  }
  return out;
}

// ---- Tree conditions (docs/experiment.md, "Trees a parser drew") ------------

// The runs of a grid over tree conditions, grouped for the table and the
// plot by RunKey (the condition is its `trees`).
struct TreeGrid {
  std::vector<std::string> conditions;  // first-appearance order, "gold" first when present
  std::vector<RunKey> rows;             // biased rows, by condition then first appearance
  std::vector<RunKey> none_rows;        // none, once per batching (trees play no part in it)
  std::set<int> sizes;
  std::map<std::pair<RunKey, int>, std::vector<double>> cells;  // best dev accuracy per seed, none's included
  // Per RunKey::tree_part (the trees and the batching), over its biased runs.
  std::map<RunKey, MeanStd> train_uas, dev_uas;
  // Trees whose train and dev trees are of one kind (both gold or both
  // from files, no per-epoch noise): the points of the gain-vs-UAS plot.
  std::map<RunKey, bool> matched;
  std::map<RunKey, bool> from_files;             // trees (train or dev) read from a tree file
  std::map<std::string, double> label_accuracy;  // dev tree file -> its own DEPREL accuracy

  explicit TreeGrid(const std::vector<RunResult>& runs) {
    std::set<std::tuple<RunKey, int, int>> none_seen;
    std::map<RunKey, std::vector<double>> tu, du;
    for (const RunResult& r : runs) {
      sizes.insert(r.train_size);
      if (r.dev_trees_label_accuracy >= 0) label_accuracy[r.dev_trees] = r.dev_trees_label_accuracy;
      const RunKey key = run_key(r);
      if (r.variant == "none") {
        // The same none under every condition of a grid: counted once.
        const RunKey k = key.baseline();
        if (std::find(none_rows.begin(), none_rows.end(), k) == none_rows.end()) none_rows.push_back(k);
        if (none_seen.insert({k, r.train_size, r.seed}).second) cells[{k, r.train_size}].push_back(r.best_dev_accuracy);
        continue;
      }
      if (std::find(conditions.begin(), conditions.end(), r.trees) == conditions.end()) {
        if (r.trees == "gold")
          conditions.insert(conditions.begin(), r.trees);
        else
          conditions.push_back(r.trees);
      }
      if (std::find(rows.begin(), rows.end(), key) == rows.end()) rows.push_back(key);
      cells[{key, r.train_size}].push_back(r.best_dev_accuracy);
      const RunKey trees = key.tree_part();
      tu[trees].push_back(r.train_tree_uas);
      du[trees].push_back(r.dev_tree_uas);
      const bool one_kind = (r.train_trees == "gold") == (r.dev_trees == "gold") && r.train_tree_noise == 0.0;
      const auto it = matched.find(trees);
      matched[trees] = (it == matched.end() || it->second) && one_kind;
      from_files[trees] = from_files[trees] || r.train_trees != "gold" || r.dev_trees != "gold";
    }
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const RunKey& a, const RunKey& b) { return position(a.trees) < position(b.trees); });
    for (const auto& [c, v] : tu) train_uas[c] = mean_std(v);
    for (const auto& [c, v] : du) dev_uas[c] = mean_std(v);
  }

  std::size_t position(const std::string& condition) const {
    return static_cast<std::size_t>(std::find(conditions.begin(), conditions.end(), condition) - conditions.begin());
  }
  // Mean best dev accuracy of a cell (NaN when absent).
  double mean(const RunKey& k, int n) const {
    const auto it = cells.find({k, n});
    return it == cells.end() ? NAN : mean_std(it->second).mean;
  }
  // Gain of a cell's mean over its baseline's (none, the same batching) at N
  // (NaN when either is absent).
  double gain(const RunKey& k, int n) const { return mean(k, n) - mean(k.baseline(), n); }
  // The share of the gold-tree gain a cell keeps: gain / gain with gold trees
  // (NaN without a gold cell, or when the gold gain is not positive).
  // The fusion variant's reference is shared: fusing gold trees with
  // themselves is shared's bias with the table split over the views.
  double retained(const RunKey& k, int n) const {
    RunKey gold = k.without_trees();
    if (gold.variant == "fusion") gold.variant = "shared";
    const double g = gain(gold, n);
    return g > 0 ? gain(k, n) / g : NAN;
  }
};

// Below the tree table, per condition with fused runs: its views' dev UAS
// and the learned view weights, averaged over the runs, per layer (a
// fusion cell's "gold gain kept" is against shared's gold gain).
inline std::string fusion_notes(const std::vector<RunResult>& runs) {
  std::vector<RunKey> keys;  // first-appearance order
  std::map<RunKey, std::vector<const RunResult*>> fused;
  for (const RunResult& r : runs) {
    if (r.views <= 1) continue;
    const RunKey k = run_key(r);
    if (fused.find(k) == fused.end()) keys.push_back(k);
    fused[k].push_back(&r);
  }
  std::stable_sort(keys.begin(), keys.end(), [](const RunKey& a, const RunKey& b) { return a.trees < b.trees; });
  const std::vector<std::string> extra =
      label_disambiguators(keys, [](const RunKey& k) { return k.trees + batching_suffix(k); });
  std::string out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::vector<const RunResult*>& list = fused.at(keys[i]);
    const RunResult& first = *list.front();
    char buf[64];
    out += "\n" + keys[i].variant + " in " + keys[i].trees + batching_suffix(keys[i]) + extra[i] + ": " +
           std::to_string(first.views) + " tree views, dev UAS";
    for (double u : first.dev_view_uas) {
      std::snprintf(buf, sizeof buf, " %.2f", u);
      out += buf;
    }
    out += "; learned weights (mean of " + std::to_string(list.size()) + " runs)";
    for (std::size_t l = 0; l < first.view_weights.size(); ++l) {
      out += (l ? ", layer " : " layer ") + std::to_string(l + 1) + ":";
      for (std::size_t v = 0; v < first.view_weights[l].size(); ++v) {
        double sum = 0;
        int count = 0;
        for (const RunResult* r : list)
          if (l < r->view_weights.size() && v < r->view_weights[l].size()) {
            sum += r->view_weights[l][v];
            ++count;
          }
        std::snprintf(buf, sizeof buf, " %.2f", count ? sum / count : NAN);
        out += buf;
      }
    }
    out += " (its gold gain kept is against shared's)\n";
  }
  return out;
}

// Rows: none (once per batching), then each tree condition's RunKeys, the
// variant named with its multiplier when not 10 and its batching_suffix (and
// by label_disambiguators where that is not enough); columns: tree UAS (train /
// dev, against gold), N ascending (mean ± std over seeds), the gain over the
// none of the same batching and the share of the gold gain kept at each N.
// Below: the dev tree files' own DEPREL accuracy (a labelled parser predicts
// the relation itself: the reference the tagger's accuracy is to be read
// against).
inline std::string markdown_tree_table(const std::vector<RunResult>& runs) {
  const TreeGrid grid(runs);
  const auto joined = [&](const std::function<std::string(int)>& cell) {
    std::string s;
    for (int n : grid.sizes) s += (s.empty() ? "" : " / ") + cell(n);
    return s;
  };
  std::vector<RunKey> rows = grid.none_rows;
  rows.insert(rows.end(), grid.rows.begin(), grid.rows.end());
  // The condition and the variant cell together name a row.
  const auto variant_cell = [](const RunKey& k) {
    return k.variant +
           (k.variant == "none" || k.bias_lr_mult == 10.0 ? std::string()
                                                          : format_number(" (bias lr x%g)", k.bias_lr_mult)) +
           batching_suffix(k);
  };
  const std::vector<std::string> extra = label_disambiguators(rows, [&](const RunKey& k) {
    return (k.variant == "none" ? std::string("any") : k.trees) + " | " + variant_cell(k);
  });
  std::string out = "| trees | tree UAS train / dev | variant |";
  std::string rule = "|---|---|---|";
  for (int n : grid.sizes) {
    out += " N = " + std::to_string(n) + " |";
    rule += "---|";
  }
  out += " gain over none | gold gain kept |\n" + rule + "---|---|\n";
  for (std::size_t row = 0; row < rows.size(); ++row) {
    const RunKey& k = rows[row];
    const bool none = k.variant == "none";
    if (none) {
      out += "| any | — | " + variant_cell(k) + extra[row] + " |";
    } else {
      const MeanStd tu = grid.train_uas.at(k.tree_part()), du = grid.dev_uas.at(k.tree_part());
      out += "| " + k.trees + " | " + format_number("%.1f / %.1f", tu.mean, du.mean) + " | " + variant_cell(k) +
             extra[row] + " |";
    }
    for (int n : grid.sizes) {
      const auto it = grid.cells.find({k, n});
      if (it == grid.cells.end()) {
        out += " — |";
        continue;
      }
      out += " " + seeds_cell(mean_std(it->second)) + " |";
    }
    if (none) {
      out += " — | — |\n";
      continue;
    }
    out += " " + joined([&](int n) {
             const double g = grid.gain(k, n);
             return std::isnan(g) ? std::string("—") : format_number("%+.2f", g);
           });
    out += " | " + joined([&](int n) {
             const double f = grid.retained(k, n);
             return std::isnan(f) ? std::string("—") : format_number("%.2f", f);
           });
    out += " |\n";
  }
  for (const auto& [file, accuracy] : grid.label_accuracy)
    out += "\nThe relations of " + file +
           " itself (the parser's own DEPREL, base part, scored as the tagger): " + format_number("%.2f %%", accuracy) +
           "\n";
  out += fusion_notes(runs);
  return out;
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_RESULTS_HPP
