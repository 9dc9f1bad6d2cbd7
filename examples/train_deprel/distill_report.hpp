// train_deprel — the distillation table: what a student trained from a
// tree-biased teacher keeps of the teacher's gain over `none`, reading no
// tree (docs/experiment.md, "Distillation").
//
// One row per training size and distillation setting (RunKey: the teacher's
// variant and trees, T, A, the transfer set). Columns: the plain `none`
// runs of the same recipe, the teacher (scored on dev inside each student's
// run, so paired with it seed by seed), the student (mean ± std, median), the
// share of the teacher's gain it keeps, (student - none) / (teacher - none)
// ("—" for a teacher with no gain over none: the self-training control),
// and the student's inference speed on dev over the teacher's (medians of
// the runs; the teacher's needs the trees too, which a parser makes).
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_DISTILL_REPORT_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_DISTILL_REPORT_HPP

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "results.hpp"

namespace train_deprel {

inline bool has_distillation(const std::vector<RunResult>& runs) {
  return std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return !r.teacher.empty(); });
}


inline std::string markdown_distillation_table(const std::vector<RunResult>& runs) {
  struct Cells {
    std::vector<double> student, teacher, student_speed, teacher_speed;
    const RunResult* first = nullptr;
  };
  std::vector<std::pair<int, RunKey>> rows;
  std::map<std::pair<int, RunKey>, Cells> cells;
  std::map<std::pair<int, RunKey>, std::vector<double>> plain;  // every run without a teacher
  for (const RunResult& r : runs) {
    const std::pair<int, RunKey> key{r.train_size, run_key(r)};
    if (r.teacher.empty()) {
      plain[key].push_back(r.best_dev_accuracy);
      continue;
    }
    if (!cells.count(key)) rows.push_back(key);
    Cells& c = cells[key];
    if (!c.first) c.first = &r;
    c.student.push_back(r.best_dev_accuracy);
    c.teacher.push_back(r.teacher_dev_accuracy);
    c.student_speed.push_back(r.dev_tokens_per_second);
    c.teacher_speed.push_back(r.teacher_dev_tokens_per_second);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });  // by N, then appearance
  std::string out =
      "| N | teacher | student (trained on) | none | teacher | student | student median | teacher's gain kept | "
      "inference speed, student / teacher |\n|---:|---|---|---|---|---|---:|---:|---:|\n";
  const auto cell = [](const std::vector<double>& v) {
    return v.empty() ? std::string("—") : seeds_cell(mean_std(v));
  };
  for (const auto& key : rows) {
    const Cells& c = cells[key];
    const RunResult& r = *c.first;
    const auto none = plain.find({key.first, key.second.baseline()});
    const std::vector<double> none_runs = none == plain.end() ? std::vector<double>{} : none->second;
    std::string trained = r.variant == "none" ? "" : r.variant + ", ";
    trained += format_number("T=%g A=%g, labelled", r.distill_temperature, r.distill_weight);
    if (r.transfer_size > 0) trained += " + " + std::to_string(r.transfer_size) + " transfer";
    std::string kept = "—";
    if (!none_runs.empty()) {
      const double n = mean_std(none_runs).mean, t = mean_std(c.teacher).mean, s = mean_std(c.student).mean;
      // A teacher without a gain over none (the self-training control, a
      // none teacher) has no gain to keep.
      if (r.teacher_variant != "none" && t > n) kept = format_number("%.2f", (s - n) / (t - n));
    }
    const double speed = mean_std(c.student_speed).median / mean_std(c.teacher_speed).median;
    out += "| " + std::to_string(key.first) + " | " + r.teacher_variant + " (" + r.teacher_trees + ") | " + trained +
           " | " + cell(none_runs) + " | " + cell(c.teacher) + " | " + cell(c.student) + " | " +
           format_number("%.2f", mean_std(c.student).median) + " | " + kept + " | " + format_number("%.2fx", speed) +
           " |\n";
  }
  return out;
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_DISTILL_REPORT_HPP
