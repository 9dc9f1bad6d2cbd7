// train_deprel — what a grid of runs leaves behind: the Markdown table on
// standard output and, with --out DIR, the figures and results.md. The same
// code serves a finished training grid and --report, which redraws both
// from JSON lines without training.
//
// Files in DIR, named by run (file_stem: "shared-x10-N500-seed1"):
//   bias-STEM.svg                s * T per bucket, one series per layer
//   directed-STEM-layerL.svg     the directed variant's up x down grid
//   curves-NSIZE.svg             dev accuracy per epoch, every run of that N
//   results.md                   the table
//   gain-vs-uas.svg              with tree conditions other than gold: the
//                                gain over none against the trees' UAS
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_REPORT_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_REPORT_HPP

#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "distill_report.hpp"
#include "figures.hpp"
#include "results.hpp"
#include "svg_plot.hpp"

namespace train_deprel {

// "shared-x10-N500-seed1": a run's part of a file name; with other trees
// than gold, their name follows, as letters, digits, '.' and '-'
// ("shared-x10-N500-seed1-noise-0.1").
inline std::string file_stem(const RunResult& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s-x%g-N%d-seed%d", r.variant.c_str(), r.bias_lr_mult, r.train_size, r.seed);
  std::string stem = buf;
  if (r.trees == "gold") return stem;
  stem += '-';
  for (char ch : r.trees) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.';
    if (keep)
      stem += ch;
    else if (stem.back() != '-')
      stem += '-';
  }
  while (stem.back() == '-') stem.pop_back();
  return stem;
}

// True when the runs read other trees than gold: their table is the tree
// table (markdown_tree_table) and their plot the gain against tree UAS.
inline bool has_tree_conditions(const std::vector<RunResult>& results) {
  for (const auto& r : results)
    if (r.trees != "gold") return true;
  return false;
}

// The grid's table, then the distillation table when students were trained.
inline std::string results_table(const std::vector<RunResult>& results) {
  std::string out = has_tree_conditions(results) ? markdown_tree_table(results) : markdown_results_table(results);
  if (has_distillation(results)) out += "\nDistillation:\n\n" + markdown_distillation_table(results);
  return out;
}

// The figures and results.md of `results` in `dir` (created if absent).
inline void write_outputs(const std::string& dir, const std::vector<RunResult>& results) {
  std::filesystem::create_directories(dir);
  std::map<int, std::vector<RunResult>> by_size;
  for (const auto& r : results) {
    by_size[r.train_size].push_back(r);
    if (r.learned_bias.empty()) continue;
    write_text_file(dir + "/bias-" + file_stem(r) + ".svg", render_line_chart(learned_bias_chart(r)));
    if (r.variant == "directed")
      for (std::size_t l = 0; l < r.learned_bias.size(); ++l)
        write_text_file(dir + "/directed-" + file_stem(r) + "-layer" + std::to_string(l + 1) + ".svg",
                        render_heat_map(directed_heat_map(r, l)));
  }
  for (const auto& [size, runs] : by_size)
    write_text_file(dir + "/curves-N" + std::to_string(size) + ".svg",
                    render_line_chart(learning_curves_chart(
                        runs, "Dev accuracy per epoch, N = " + std::to_string(size) + " training sentences")));
  if (has_tree_conditions(results))
    write_text_file(dir + "/gain-vs-uas.svg", render_line_chart(gain_vs_uas_chart(results)));
  write_text_file(dir + "/results.md", results_table(results));
}

// The table of `results` on `out`, and the files of write_outputs when
// `out_dir` is not empty.
inline void report_results(const std::vector<RunResult>& results, const std::string& out_dir, std::ostream& out) {
  out << results_table(results);
  if (!out_dir.empty()) write_outputs(out_dir, results);
}

// --report FILE: the same from the JSON lines of earlier runs (errors name
// the file and line, read_json_lines's).
inline void report_json_lines(const std::string& json_path, const std::string& out_dir, std::ostream& out) {
  report_results(read_json_lines(json_path), out_dir, out);
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_REPORT_HPP
