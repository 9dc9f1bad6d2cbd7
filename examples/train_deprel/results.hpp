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
// bucket_labels, processes, reduce_wait_seconds; and the trees (SPEC §6):
// trees (the condition's name, "gold" by default), train_trees and dev_trees
// ("gold" or the tree file), tree_noise, tree_noise_seed, train_tree_noise,
// train_tree_uas and dev_tree_uas (percent, against gold; under
// train_tree_noise the mean over epochs), and dev_trees_label_accuracy (the
// dev tree file's own base DEPREL on the task, percent; absent without one);
// with tree fusion (the fusion variant) views, view_trees (the files of
// views 1..), dev_view_uas (percent, view 0 first) and view_weights (per
// layer, the learned softmax weights, (rows, views) row-major); packing
// ("sentences", or "documents w=W[, root links]": --pack-documents), subset
// ("sentences", or "documents": whole documents) and peak_resident_mb (the
// process's peak resident memory during the run).
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
  std::vector<double> dev_history;               // percent, one per epoch
  std::vector<std::vector<double>> learned_bias;  // per layer, (bias_rows, buckets) row-major
  int bias_rows = 1;
  std::vector<std::string> bucket_labels;
  int processes = 1;                // MPI ranks that trained it (mpirun -np P)
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
};

// How a run's table row names its batching beyond the recipe's: "" for
// random sentences batched sentence by sentence.
inline std::string batching_suffix(const RunResult& r) {
  if (r.packing != "sentences") return ", packed " + r.packing;
  if (r.subset != "sentences") return ", " + r.subset + " subset";
  return "";
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
    if (!j.contains(key)) throw synattn::Error(std::string("run result: key '") + key + "' is missing");
    try {
      j.at(key).get_to(out);
    } catch (const nlohmann::json::exception& e) {
      throw synattn::Error(std::string("run result: key '") + key + "' has the wrong type (" + e.what() + ")");
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
  double mean = NAN, std = NAN;
  int count = 0;
};

inline MeanStd mean_std(const std::vector<double>& v) {
  MeanStd m;
  m.count = static_cast<int>(v.size());
  if (v.empty()) return m;
  double s = 0.0;
  for (double x : v) s += x;
  m.mean = s / static_cast<double>(v.size());
  double q = 0.0;
  for (double x : v) q += (x - m.mean) * (x - m.mean);
  m.std = v.size() > 1 ? std::sqrt(q / static_cast<double>(v.size() - 1)) : 0.0;
  return m;
}

// Rows: variant (with " (bias lr x10)" when the multiplier is not 1, and its
// batching_suffix), in first-appearance order; columns: train size N ascending; cells: mean ±
// std of best dev accuracy over seeds (n = seeds); the last column: the
// gain of the mean over `none` at each N ("+1.23 / -0.40 / ...", "—" where
// `none` is missing).
inline std::string markdown_results_table(const std::vector<RunResult>& runs) {
  using Key = std::pair<std::string, double>;
  std::vector<Key> rows;
  std::set<int> sizes;
  std::map<std::tuple<std::string, double, int>, std::vector<double>> cells;
  for (const RunResult& r : runs) {
    const std::string name = r.variant + batching_suffix(r);
    const Key k{name, r.bias_lr_mult};
    if (std::find(rows.begin(), rows.end(), k) == rows.end()) rows.push_back(k);
    sizes.insert(r.train_size);
    cells[{name, r.bias_lr_mult, r.train_size}].push_back(r.best_dev_accuracy);
  }
  const auto fmt = [](const char* f, double a, double b = 0.0, int c = 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, a, b, c);
    return std::string(buf);
  };
  const auto mult_text = [&](double m) {
    return m == 1.0 ? std::string() : " (bias lr x" + fmt("%g", m) + ")";
  };
  std::string out = "| variant |";
  std::string rule = "|---|";
  for (int n : sizes) {
    out += " N = " + std::to_string(n) + " |";
    rule += "---|";
  }
  out += " gain over none |\n" + rule + "---|\n";
  for (const Key& k : rows) {
    const std::string::size_type cut = k.first.find(", ");  // the multiplier goes after the variant
    out += "| " + k.first.substr(0, cut) + mult_text(k.second) + (cut == std::string::npos ? "" : k.first.substr(cut)) +
           " |";
    std::string gain;
    for (int n : sizes) {
      const auto it = cells.find({k.first, k.second, n});
      const auto none = cells.find({"none", 1.0, n});
      if (it == cells.end()) {
        out += " — |";
      } else {
        const MeanStd m = mean_std(it->second);
        out += fmt(" %.2f ± %.2f (n=%d) |", m.mean, m.std, m.count);
      }
      if (!gain.empty()) gain += " / ";
      if (k.first == "none" || it == cells.end() || none == cells.end())
        gain += "—";
      else
        gain += fmt("%+.2f", mean_std(it->second).mean - mean_std(none->second).mean);
    }
    out += " " + gain + " |\n";
  }
  return out;
}

// ---- Tree conditions (SPEC §6) ----------------------------------------------

// One cell of the tree table: a tree condition, variant and multiplier.
struct TreeRowKey {
  std::string trees, variant;
  double bias_lr_mult = 1.0;
  bool operator<(const TreeRowKey& o) const {
    return std::tie(trees, variant, bias_lr_mult) < std::tie(o.trees, o.variant, o.bias_lr_mult);
  }
  bool operator==(const TreeRowKey& o) const {
    return trees == o.trees && variant == o.variant && bias_lr_mult == o.bias_lr_mult;
  }
};

// The runs of a grid over tree conditions, grouped for the table and the plot.
struct TreeGrid {
  std::vector<std::string> conditions;  // first-appearance order, "gold" first when present
  std::vector<TreeRowKey> rows;         // biased rows, by condition then first appearance
  std::set<int> sizes;
  std::map<std::pair<TreeRowKey, int>, std::vector<double>> cells;  // best dev accuracy per seed
  std::map<int, std::vector<double>> none;                          // per N, one per seed (trees play no part)
  std::map<std::string, MeanStd> train_uas, dev_uas;                // per condition, over its biased runs
  // A condition whose train and dev trees are of one kind (both gold or both
  // from files, no per-epoch noise): the points of the gain-vs-UAS plot.
  std::map<std::string, bool> matched;
  std::map<std::string, bool> from_files;  // a condition whose trees (train or dev) come from a tree file
  std::map<std::string, double> label_accuracy;  // dev tree file -> its own DEPREL accuracy

  explicit TreeGrid(const std::vector<RunResult>& runs) {
    std::set<std::pair<int, int>> none_seen;
    std::map<std::string, std::vector<double>> tu, du;
    for (const RunResult& r : runs) {
      sizes.insert(r.train_size);
      if (r.dev_trees_label_accuracy >= 0) label_accuracy[r.dev_trees] = r.dev_trees_label_accuracy;
      if (r.variant == "none") {
        if (none_seen.insert({r.train_size, r.seed}).second) none[r.train_size].push_back(r.best_dev_accuracy);
        continue;
      }
      if (std::find(conditions.begin(), conditions.end(), r.trees) == conditions.end()) {
        if (r.trees == "gold")
          conditions.insert(conditions.begin(), r.trees);
        else
          conditions.push_back(r.trees);
      }
      const TreeRowKey k{r.trees, r.variant, r.bias_lr_mult};
      if (std::find(rows.begin(), rows.end(), k) == rows.end()) rows.push_back(k);
      cells[{k, r.train_size}].push_back(r.best_dev_accuracy);
      tu[r.trees].push_back(r.train_tree_uas);
      du[r.trees].push_back(r.dev_tree_uas);
      const bool one_kind = (r.train_trees == "gold") == (r.dev_trees == "gold") && r.train_tree_noise == 0.0;
      const auto it = matched.find(r.trees);
      matched[r.trees] = (it == matched.end() || it->second) && one_kind;
      from_files[r.trees] = from_files[r.trees] || r.train_trees != "gold" || r.dev_trees != "gold";
    }
    std::stable_sort(rows.begin(), rows.end(), [&](const TreeRowKey& a, const TreeRowKey& b) {
      return position(a.trees) < position(b.trees);
    });
    for (const auto& [c, v] : tu) train_uas[c] = mean_std(v);
    for (const auto& [c, v] : du) dev_uas[c] = mean_std(v);
  }

  std::size_t position(const std::string& condition) const {
    return static_cast<std::size_t>(std::find(conditions.begin(), conditions.end(), condition) - conditions.begin());
  }
  // Mean best dev accuracy of a cell (NaN when absent).
  double mean(const TreeRowKey& k, int n) const {
    const auto it = cells.find({k, n});
    return it == cells.end() ? NAN : mean_std(it->second).mean;
  }
  // Gain of a cell's mean over none's at N (NaN when either is absent).
  double gain(const TreeRowKey& k, int n) const {
    const auto it = none.find(n);
    return it == none.end() ? NAN : mean(k, n) - mean_std(it->second).mean;
  }
  // The share of the gold-tree gain a cell keeps: gain / gain with gold trees
  // (NaN without a gold cell, or when the gold gain is not positive).
  // The fusion variant's reference is shared: fusing gold trees with
  // themselves is shared's bias with the table split over the views.
  double retained(const TreeRowKey& k, int n) const {
    const double g = gain({"gold", k.variant == "fusion" ? "shared" : k.variant, k.bias_lr_mult}, n);
    return g > 0 ? gain(k, n) / g : NAN;
  }
};

// Below the tree table, per condition with fused runs: its views' dev UAS
// and the learned view weights, averaged over the runs, per layer (a
// fusion cell's "gold gain kept" is against shared's gold gain).
inline std::string fusion_notes(const std::vector<RunResult>& runs) {
  std::map<std::string, std::vector<const RunResult*>> fused;
  for (const RunResult& r : runs)
    if (r.views > 1) fused[r.trees].push_back(&r);
  std::string out;
  for (const auto& [condition, list] : fused) {
    const RunResult& first = *list.front();
    char buf[64];
    out += "\nfusion in " + condition + ": " + std::to_string(first.views) + " tree views, dev UAS";
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

// Rows: none, then each tree condition's variants; columns: tree UAS (train
// / dev, against gold), N ascending (mean ± std over seeds), the gain over
// none and the share of the gold gain kept at each N. Below: the dev tree
// files' own DEPREL accuracy (a labelled parser predicts the relation
// itself: the reference the tagger's accuracy is to be read against).
inline std::string markdown_tree_table(const std::vector<RunResult>& runs) {
  const TreeGrid grid(runs);
  const auto fmt = [](const char* f, double a, double b = 0.0, int c = 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, a, b, c);
    return std::string(buf);
  };
  const auto joined = [&](const std::function<std::string(int)>& cell) {
    std::string s;
    for (int n : grid.sizes) s += (s.empty() ? "" : " / ") + cell(n);
    return s;
  };
  std::string out = "| trees | tree UAS train / dev | variant |";
  std::string rule = "|---|---|---|";
  for (int n : grid.sizes) {
    out += " N = " + std::to_string(n) + " |";
    rule += "---|";
  }
  out += " gain over none | gold gain kept |\n" + rule + "---|---|\n";
  if (!grid.none.empty()) out += "| any | — | none |";
  for (int n : grid.sizes) {
    if (grid.none.empty()) break;
    const auto it = grid.none.find(n);
    if (it == grid.none.end()) {
      out += " — |";
      continue;
    }
    const MeanStd m = mean_std(it->second);
    out += fmt(" %.2f ± %.2f (n=%d) |", m.mean, m.std, m.count);
  }
  if (!grid.none.empty()) out += " — | — |\n";
  for (const TreeRowKey& k : grid.rows) {
    const MeanStd tu = grid.train_uas.at(k.trees), du = grid.dev_uas.at(k.trees);
    out += "| " + k.trees + " | " + fmt("%.1f / %.1f", tu.mean, du.mean) + " | " + k.variant +
           (k.bias_lr_mult == 10.0 ? std::string() : fmt(" (bias lr x%g)", k.bias_lr_mult)) + " |";
    for (int n : grid.sizes) {
      const auto it = grid.cells.find({k, n});
      if (it == grid.cells.end()) {
        out += " — |";
        continue;
      }
      const MeanStd m = mean_std(it->second);
      out += fmt(" %.2f ± %.2f (n=%d) |", m.mean, m.std, m.count);
    }
    out += " " + joined([&](int n) {
      const double g = grid.gain(k, n);
      return std::isnan(g) ? std::string("—") : fmt("%+.2f", g);
    });
    out += " | " + joined([&](int n) {
      const double f = grid.retained(k, n);
      return std::isnan(f) ? std::string("—") : fmt("%.2f", f);
    });
    out += " |\n";
  }
  for (const auto& [file, accuracy] : grid.label_accuracy)
    out += "\nThe relations of " + file + " itself (the parser's own DEPREL, base part, scored as the tagger): " +
           fmt("%.2f %%", accuracy) + "\n";
  out += fusion_notes(runs);
  return out;
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_RESULTS_HPP
