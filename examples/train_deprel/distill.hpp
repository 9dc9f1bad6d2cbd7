// train_deprel — distillation: a teacher written by --save-best, read back
// by --distill-from, and the soft targets it gives a student.
//
// A teacher file is a safetensors checkpoint of the best epoch's parameters
// whose metadata says what model they belong to: the variant, the training
// size N and data seed (which fix the training subset and so the
// vocabulary), the vocabulary and label counts, the trees it was trained on
// and its dev accuracy. A student run checks all of it before it reads a
// tensor: ids mean the same words only for the same subset.
//
// The teacher runs once per student run, in eval mode (infer()), over the
// student's training sentences: the labelled subset (reading the trees the
// run trains on) and the transfer sentences (reading --transfer-trees).
// Its softened distributions are kept per sentence; the steps copy them
// into each batch's layout.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_DISTILL_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_DISTILL_HPP

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include <synattn/data/batching.hpp>
#include <synattn/data/token_batch.hpp>
#include <synattn/data/vocabulary.hpp>
#include <synattn/io/safetensors.hpp>
#include <synattn/nn/distillation.hpp>
#include <synattn/nn/tagger.hpp>
#include <synattn/train/checkpoint.hpp>
#include <synattn/util/metadata_number.hpp>

#include "cli.hpp"

namespace train_deprel {

// What a teacher file says of its model (its __metadata__).
struct TeacherInfo {
  std::string path;
  std::string variant;
  int train_size = 0;
  std::uint64_t data_seed = 0;
  int vocabulary = 0, labels = 0, seed = 0;
  std::string trees;
  double best_dev_accuracy = 0;
};

// The metadata a --save-best file carries beside the parameters.
inline std::map<std::string, std::string> teacher_metadata(const std::string& variant, int train_size,
                                                           std::uint64_t data_seed, int vocabulary, int labels,
                                                           int seed, const std::string& trees, double best_dev,
                                                           int best_epoch) {
  return {{"kind", "train_deprel.best"},
          {"variant", variant},
          {"train_size", std::to_string(train_size)},
          {"data_seed", std::to_string(data_seed)},
          {"vocabulary", std::to_string(vocabulary)},
          {"labels", std::to_string(labels)},
          {"seed", std::to_string(seed)},
          {"trees", trees},
          {"best_dev_accuracy", synattn::detail::real_text(best_dev)},
          {"best_epoch", std::to_string(best_epoch)}};
}

// Reads and checks a teacher file's metadata (errors name the file and key).
inline TeacherInfo read_teacher_info(const std::string& path, const synattn::SafetensorsFile& file) {
  const auto text = [&](const char* key) -> const std::string& {
    const auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw synattn::Error(path + ": not a train_deprel teacher (--save-best's file): its metadata has no '" + key +
                           "'");
    return it->second;
  };
  if (text("kind") != "train_deprel.best")
    throw synattn::Error(path + ": metadata 'kind' is '" + text("kind") + "', expected 'train_deprel.best'");
  TeacherInfo t;
  t.path = path;
  t.variant = text("variant");
  (void)variant_by_name(t.variant);  // refuses an unknown name
  if (t.variant == "fusion") throw synattn::Error(path + ": a fusion teacher reads several tree views; not supported");
  const auto integer = [&](const char* key, long long lo, long long hi) {
    return synattn::metadata_integer(path, key, text(key), lo, hi);
  };
  t.train_size = static_cast<int>(integer("train_size", 1, 1000000000));
  t.data_seed = static_cast<std::uint64_t>(integer("data_seed", 0, 9007199254740992LL));
  t.vocabulary = static_cast<int>(integer("vocabulary", 1, 100000000));
  t.labels = static_cast<int>(integer("labels", 1, 100000));
  t.seed = static_cast<int>(integer("seed", 0, 2147483647));
  t.trees = text("trees");
  t.best_dev_accuracy = synattn::metadata_real(path, "best_dev_accuracy", text("best_dev_accuracy"), 0.0, 100.0);
  return t;
}

// The student's run must have drawn the teacher's subset: same N, same data
// seed, hence the same vocabulary and labels.
inline void check_teacher_fits(const TeacherInfo& t, int train_size, std::uint64_t data_seed, int vocabulary,
                               int labels) {
  const auto refuse = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
    throw CliError("--distill-from " + t.path + ": the teacher was trained with " + what + " " + theirs +
                   ", this run has " + ours + " (the teacher's word ids are its training subset's)");
  };
  if (t.train_size != train_size) refuse("--train-size", std::to_string(t.train_size), std::to_string(train_size));
  if (t.data_seed != data_seed) refuse("data seed", std::to_string(t.data_seed), std::to_string(data_seed));
  if (t.vocabulary != vocabulary)
    refuse("a vocabulary of", std::to_string(t.vocabulary), std::to_string(vocabulary) + " (another --train file?)");
  if (t.labels != labels) refuse("relations:", std::to_string(t.labels), std::to_string(labels));
}

// The transfer sentences: the next M of the recipe's draw after the
// subset's N (the same shuffle, data/batching.hpp: its first N are the
// subset), with the same length cut. Indices into the training file.
inline std::vector<std::size_t> transfer_subset(const std::vector<synattn::TaggedSentence>& train,
                                                const std::vector<std::size_t>& subset, int transfer_size,
                                                int max_words, std::uint64_t data_seed) {
  if (transfer_size <= 0) return {};
  const std::size_t n = subset.size() + static_cast<std::size_t>(transfer_size);
  const std::unordered_set<std::size_t> taken(subset.begin(), subset.end());
  std::vector<std::size_t> out;
  for (std::size_t i : synattn::select_training_subset(train, n, max_words, data_seed))
    if (!taken.count(i)) out.push_back(i);
  return out;
}

// A sentence with its labels hidden: nothing downstream can read them.
inline synattn::TaggedSentence without_labels(synattn::TaggedSentence s) {
  std::fill(s.labels.begin(), s.labels.end(), std::string());
  return s;
}

// The teacher's softened distribution of every word of `corpus`, per
// sentence (length x classes, row-major), and how fast the teacher read it.
struct SoftTargets {
  int classes = 0;
  std::vector<std::vector<float>> rows;  // per sentence
  double tokens_per_second = 0;
};

template <class Model>
SoftTargets teacher_soft_targets(const Model& teacher, const synattn::EncodedCorpus& corpus, double temperature) {
  using Matrix = typename Model::Matrix;
  SoftTargets out;
  out.classes = teacher.options().num_classes;
  out.rows.resize(corpus.size());
  const std::vector<int> lengths = corpus.lengths();
  synattn::TokenBatch batch;
  typename Model::Cache workspace;
  Matrix logits;
  double seconds = 0;
  long long tokens = 0;
  for (const auto& indices : synattn::eval_batches(lengths)) {
    synattn::make_token_batch(corpus, indices, synattn::WordDropout::none(), batch);
    const Eigen::Map<const synattn::nn::IdVector> ids(batch.ids.data(), batch.ids.size());
    logits.resize(batch.ids.size(), out.classes);
    const auto t0 = std::chrono::steady_clock::now();
    teacher.infer({ids, batch.lengths, batch.buckets}, workspace, logits);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Matrix q = synattn::nn::soft_targets<typename Model::Matrix::Scalar>(logits, batch.lengths, temperature);
    for (std::size_t b = 0; b < indices.size(); ++b) {
      const int len = batch.lengths[b];
      tokens += len;
      std::vector<float>& r = out.rows[indices[b]];
      r.resize(static_cast<std::size_t>(len) * static_cast<std::size_t>(out.classes));
      for (int j = 0; j < len; ++j)
        for (int c = 0; c < out.classes; ++c)
          r[static_cast<std::size_t>(j * out.classes + c)] =
              static_cast<float>(q(static_cast<Eigen::Index>(b) * batch.n() + j, c));
    }
  }
  out.tokens_per_second = seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  return out;
}

// A batch's targets and weights in its (batch * n) layout: sentence
// indices[b]'s rows at b * n; labelled sentences (index < labelled) weigh
// the gold term 1 - A and the soft term A, transfer sentences the soft term
// alone (1); padding rows 0.
template <class Matrix>
void batch_targets(const SoftTargets& targets, const std::vector<std::size_t>& indices, const std::vector<int>& lengths,
                   int n, std::size_t labelled, double weight, Matrix& q, synattn::nn::DistillationWeights& w) {
  const auto rows = static_cast<Eigen::Index>(indices.size()) * n;
  q.setZero(rows, targets.classes);
  w.gold.setZero(rows);
  w.soft.setZero(rows);
  for (std::size_t b = 0; b < indices.size(); ++b) {
    const std::vector<float>& r = targets.rows[indices[b]];
    const bool has_gold = indices[b] < labelled;
    for (int j = 0; j < lengths[b]; ++j) {
      const Eigen::Index row = static_cast<Eigen::Index>(b) * n + j;
      for (int c = 0; c < targets.classes; ++c)
        q(row, c) = static_cast<typename Matrix::Scalar>(r[static_cast<std::size_t>(j * targets.classes + c)]);
      w.gold[row] = has_gold ? 1.0 - weight : 0.0;
      w.soft[row] = has_gold ? weight : 1.0;
    }
  }
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_DISTILL_HPP
