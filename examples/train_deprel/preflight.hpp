// train_deprel — what is checked before any model trains, so that a run
// that cannot finish fails in a second instead of after its first model:
//
// * output paths (--json, --save-checkpoint, --out): one helper,
//   check_output_path(), refuses a folder that does not exist, is not a
//   folder or cannot be written (tested by creating and removing a scratch
//   file in it: that also catches read-only mounts, which permission bits do
//   not show). The final files are neither created nor truncated here;
// * the corpora: a training or dev file with no sentences (an empty dev set
//   scored "best dev 0.00 %" and exited 0; an empty training set failed deep
//   inside the model), and a --train-size larger than the training file
//   (which trained on every sentence while its label said N);
// * corpus_checksum(): what ranks compare under mpirun, so that ranks with
//   different files of the same size are refused (counts alone pass them).
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_PREFLIGHT_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_PREFLIGHT_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <synattn/data/tagging_corpus.hpp>
#include <synattn/error.hpp>
#include <synattn/io/output_path.hpp>
#include <synattn/mpi/checksum.hpp>  // no MPI needed

#include "cli.hpp"

namespace train_deprel {

enum class OutputKind {
  AppendedFile,  // --json: appended to, so an existing file must be writable too
  ReplacedFile,  // --save-checkpoint: written beside and renamed over (train/checkpoint.hpp)
  Folder,        // --out: created (with its parents) if missing
};

namespace detail {

// Whether a file can be created in `folder`: creates a scratch file under a
// name no one else uses ("x": fails rather than open an existing file) and
// removes it.
inline bool folder_is_writable(const std::filesystem::path& folder) {
  static std::atomic<unsigned> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::filesystem::path probe = folder / (".train_deprel-write-check-" + std::to_string(ticks) + "-" +
                                                std::to_string(counter++));
  std::FILE* f = std::fopen(probe.string().c_str(), "wx");
  if (!f) return false;
  std::fclose(f);
  std::error_code ec;
  std::filesystem::remove(probe, ec);
  return true;
}

}  // namespace detail

// Throws CliError ("--json r/x.jsonl: folder r does not exist") unless the
// output `path` of `flag` can be written. Nothing is written at `path` itself.
inline void check_output_path(const std::string& flag, const std::string& path, OutputKind kind) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty()) throw CliError(flag + ": empty path");
  const fs::path p(path);
  // The folder that must exist and take new files.
  fs::path folder;
  if (kind == OutputKind::Folder) {
    if (fs::exists(p, ec)) {
      if (!fs::is_directory(p, ec)) throw CliError(flag + " " + path + ": is not a folder");
      folder = p;
    } else {  // created later with its parents: the nearest existing ancestor must take them
      folder = p.parent_path();
      while (!folder.empty() && !fs::exists(folder, ec)) folder = folder.parent_path();
      if (folder.empty()) folder = ".";
      if (!fs::is_directory(folder, ec))
        throw CliError(flag + " " + path + ": " + folder.string() + " is not a folder");
    }
  } else {
    if (fs::is_directory(p, ec)) throw CliError(flag + " " + path + ": is a folder, expected a file name");
    folder = p.parent_path();
    if (folder.empty()) folder = ".";
    if (!fs::exists(folder, ec)) throw CliError(flag + " " + path + ": folder " + folder.string() + " does not exist");
    if (!fs::is_directory(folder, ec))
      throw CliError(flag + " " + path + ": " + folder.string() + " is not a folder");
    // The library's output-path policy (io/output_path.hpp): a FIFO, a
    // device or standard output is written where it is; a symlink leads to
    // the file (and folder) that is written; the rest is refused.
    synattn::OutputTarget target;
    try {
      target = synattn::resolve_output_path(path, flag);
    } catch (const synattn::RuntimeError& e) {
      throw CliError(e.what());
    }
    if (target.kind == synattn::OutputKind::Stream || target.kind == synattn::OutputKind::StandardOutput) return;
    folder = fs::path(target.path).parent_path();
    if (folder.empty()) folder = ".";
    if (kind == OutputKind::AppendedFile && fs::exists(p, ec)) {
      // Opened for appending and closed at once: the file is left as it was.
      std::FILE* f = std::fopen(path.c_str(), "a");
      if (!f) throw CliError(flag + " " + path + ": the file exists and cannot be appended to");
      std::fclose(f);
      return;
    }
  }
  if (!detail::folder_is_writable(folder))
    throw CliError(flag + " " + path + ": cannot create files in " + folder.string());
}

// Every output path of the command line (--report checks only --out).
inline void check_output_paths(const Config& c) {
  if (!c.json_path.empty() && c.report_path.empty()) check_output_path("--json", c.json_path, OutputKind::AppendedFile);
  if (!c.checkpoint_path.empty() && c.report_path.empty())
    check_output_path("--save-checkpoint", c.checkpoint_path, OutputKind::ReplacedFile);
  if (!c.best_model_path.empty() && c.report_path.empty())
    check_output_path("--save-best", c.best_model_path, OutputKind::ReplacedFile);
  if (!c.out_dir.empty()) check_output_path("--out", c.out_dir, OutputKind::Folder);
}

// Throws unless both files hold sentences (synattn::Error, "FILE: the dev
// file holds no sentences") and every --train-size fits the training file
// (CliError: the run's label would claim N sentences it never had).
inline void check_corpora(const Config& c, const std::vector<synattn::TaggedSentence>& train,
                          const std::vector<synattn::TaggedSentence>& dev) {
  if (train.empty()) throw synattn::Error(c.train_path + ": the training file holds no sentences");
  if (dev.empty()) throw synattn::Error(c.dev_path + ": the dev file holds no sentences");
  for (int n : c.train_sizes)
    if (static_cast<std::size_t>(n) > train.size())
      throw CliError("--train-size " + std::to_string(n) + ": " + c.train_path + " holds only " +
                     std::to_string(train.size()) + " sentences");
}

// A checksum of what training sees of `sentences`, in order: each word's
// lower-cased form, head and base relation, and the heads of further tree
// views (not sentence ids, comments or
// line numbers, which change nothing that is trained).
inline synattn::mpi::Checksum corpus_checksum(const std::vector<synattn::TaggedSentence>& sentences) {
  synattn::mpi::Checksum sum;
  sum.add(sentences.size());
  for (const synattn::TaggedSentence& s : sentences) {
    sum.add(s.forms.size());
    for (std::size_t i = 0; i < s.forms.size(); ++i) sum.add(s.forms[i]).add(s.heads[i]).add(s.labels[i]);
    sum.add(s.view_trees.size());  // tree fusion: the further views' heads
    for (const synattn::DependencyTree& view : s.view_trees)
      for (int h : view.heads()) sum.add(h);
  }
  return sum;
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_PREFLIGHT_HPP
