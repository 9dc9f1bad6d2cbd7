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
// bucket_labels.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_RESULTS_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_RESULTS_HPP

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include <synattn/error.hpp>

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
};

inline nlohmann::json to_json(const RunResult& r) {
  return nlohmann::json{{"variant", r.variant},
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
                        {"reduce_wait_seconds", r.reduce_wait_seconds}};
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
  return r;
}

// Appends one line to `path` (created if absent).
inline void append_json_line(const std::string& path, const RunResult& r) {
  std::ofstream out(path, std::ios::app);
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

// Rows: variant (with " (bias lr x10)" when the multiplier is not 1), in
// first-appearance order; columns: train size N ascending; cells: mean ±
// std of best dev accuracy over seeds (n = seeds); the last column: the
// gain of the mean over `none` at each N ("+1.23 / -0.40 / ...", "—" where
// `none` is missing).
inline std::string markdown_results_table(const std::vector<RunResult>& runs) {
  using Key = std::pair<std::string, double>;
  std::vector<Key> rows;
  std::set<int> sizes;
  std::map<std::tuple<std::string, double, int>, std::vector<double>> cells;
  for (const RunResult& r : runs) {
    const Key k{r.variant, r.bias_lr_mult};
    if (std::find(rows.begin(), rows.end(), k) == rows.end()) rows.push_back(k);
    sizes.insert(r.train_size);
    cells[{r.variant, r.bias_lr_mult, r.train_size}].push_back(r.best_dev_accuracy);
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
    out += "| " + k.first + mult_text(k.second) + " |";
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

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_RESULTS_HPP
