// train_deprel — trains a syntax-aware Transformer with synattn and measures
// what the tree buys.
//
// Task: predict each word's universal dependency relation (base DEPREL,
// `nmod:poss` -> `nmod`) in UD English EWT from the lower-cased word forms
// alone. The gold tree enters the model only through the attention bias
// s * T[bucket(dist(i, j))], so any gain over the plain Transformer ("none")
// is what the tree buys.
//
// The recipe (fixed, so runs compare with bench/pytorch_train_reference.py):
// training subset of N sentences (<= 60 words) drawn with a fixed data seed;
// vocabulary from the subset, singletons -> UNK with probability 0.5 while
// training; embedding + sinusoidal positions, dropout 0.1 on embeddings,
// attention probabilities, attention output, FFN hidden and FFN output;
// 2 pre-norm layers, d_model 128, 4 heads, FFN 256 (ReLU), final LayerNorm,
// linear classifier; each layer its own table and scale (s = 1 at start);
// Adam lr 1e-3 with 50 linear warm-up steps, bias table and scale (and the
// fusion variant's view weights) at --bias-lr-mult times that (10 by
// default); batches of 32 sentences of similar length; dev accuracy after
// every epoch, early stopping.
//
//   train_deprel --help
//   train_deprel --train-size 500 --variants none,fixed,shared --seeds 1 --epochs 30
//   train_deprel --full --json results.jsonl --out results/
//   mpirun -np 2 train_deprel --threads 1 ...   (data-parallel, built with MPI)
//   train_deprel --train-trees predicted-train.conllu --dev-trees predicted-dev.conllu ...
//   train_deprel --tree-noise 0.1 ...            (trees a parser drew, or corrupted: trees.hpp)
//   train_deprel --pack-documents --sentence-window 1 --variants shared --train-size 2000
//                                                (whole documents, each chunk one packed sequence)
//   train_deprel --variants shared --save-best teacher.safetensors ...
//   train_deprel --variants none --distill-from teacher.safetensors [--transfer-size 2000 ...]
//                                                (distillation: distill.hpp)
//
// Under mpirun every rank reads the same files and builds the same model;
// rank 0's parameters are broadcast and the ranks' fingerprints (run, data
// counts and checksums of the data's content, parameter layout) compared
// before training. A rank that waits more than --mpi-timeout seconds for the
// others ends the job (a hung rank would stall them all). Each global batch
// of 32 sentences is split across the ranks, the gradients summed (synattn::mpi,
// overlapped with the backward pass unless --no-overlap), the dev set is
// evaluated in shards and the counts summed. Only rank 0 prints and writes
// JSON, figures and checkpoints. Dropout masks are drawn per rank, so runs
// with P ranks agree with one process in distribution, not in bits.
#include <synattn/build_info.hpp>
#include <synattn/data/batching.hpp>
#include <synattn/data/documents.hpp>
#include <synattn/data/packed_batch.hpp>
#include <synattn/data/tagging_corpus.hpp>
#include <synattn/data/token_batch.hpp>
#include <synattn/data/vocabulary.hpp>
#include <synattn/nn/tagger.hpp>
#include <synattn/train/checkpoint.hpp>
#include <synattn/train/optimizer.hpp>
#include <synattn/train/parameter_groups.hpp>
#include <synattn/train/schedules.hpp>
#include <synattn/util/memory.hpp>
#include <synattn/util/resident_memory.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "train_deprel/cli.hpp"
#include "train_deprel/distill.hpp"
#include "train_deprel/preflight.hpp"
#include "train_deprel/progress.hpp"
#include "train_deprel/report.hpp"
#include "train_deprel/results.hpp"
#include "train_deprel/team.hpp"
#include "train_deprel/trees.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Model = synattn::nn::SyntaxTransformerTagger<float>;
using synattn::nn::IdVector;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Stream ids below the run seed: the data recipe's sites (batching.hpp) use
// 1..3, model dropout takes its own.
constexpr std::uint64_t kModelDropoutSite = 101;

constexpr double kLearningRate = 1e-3;
constexpr long kWarmupSteps = 50;

// `views`: the tree views of the data (fusion variant: one table per view).
synattn::nn::TaggerOptions model_options(const train_deprel::Variant& v, int vocab, int classes, int seed, int views) {
  synattn::nn::TaggerOptions o;
  o.vocab_size = vocab;
  o.num_classes = classes;
  o.d_model = 128;
  o.heads = 4;
  o.d_ff = 256;
  o.layers = 2;
  o.activation = synattn::nn::Activation::ReLU;
  o.pre_norm = true;
  o.final_norm = true;
  o.dropout = 0.1;
  o.attention_dropout = 0.1;
  o.seed = static_cast<std::uint64_t>(seed);
  if (!v.has_bias) {
    o.bias_layers = synattn::nn::BiasLayers::None;
    return o;
  }
  o.bias_layers = synattn::nn::BiasLayers::All;
  o.share_table = false;  // each layer its own table and scale
  o.bias.bucketing = *v.bucketing;
  o.bias.per_head = v.per_head;
  o.bias.init = v.table_init == train_deprel::TableInit::Decay ? synattn::TableInit::LinearDecay
                                                              : synattn::TableInit::Zero;
  o.bias.decay = 1.0;  // T[b] = -b
  o.bias.table_learnable = v.table_learnable;
  o.bias.scale = 1.0;
  o.bias.scale_learnable = true;
  o.bias.fusion.views = v.fusion ? views : 1;  // a table per view, one weight vector per layer
  return o;
}

// The longest packed sequence: a document longer than this is cut into
// chunks of whole sentences (data/documents.hpp).
constexpr int kMaxChunkTokens = 4096;
// Packed chunks evaluated together (padded to the longest of them).
constexpr std::size_t kEvalChunks = 8;

// --pack-documents: how a run packs, and its chunks (corpus sentence
// indices, one packed sequence each) with their words.
struct Packing {
  synattn::PackingOptions options;
  std::vector<std::vector<std::size_t>> train_chunks, dev_chunks;
  std::vector<int> train_chunk_words, dev_chunk_words;
};

std::vector<int> chunk_words(const std::vector<std::vector<std::size_t>>& chunks, const std::vector<int>& lengths) {
  std::vector<int> out;
  for (const auto& c : chunks) {
    int words = 0;
    for (std::size_t i : c) words += lengths[i];
    out.push_back(words);
  }
  return out;
}

// The chunks of batch `indices` (into `chunks`).
std::vector<std::vector<std::size_t>> select_chunks(const std::vector<std::vector<std::size_t>>& chunks,
                                                    const std::vector<std::size_t>& indices) {
  std::vector<std::vector<std::size_t>> out;
  out.reserve(indices.size());
  for (std::size_t k : indices) out.push_back(chunks[k]);
  return out;
}

// Accuracy (percent) of the model on every dev chunk, packed, dropout off.
double evaluate_packed(const Model& model, const synattn::EncodedCorpus& corpus, const Packing& packing,
                       synattn::PackedTokenBatch& batch, Model::Cache& cache) {
  long long correct = 0, counted = 0;
  for (const auto& indices : synattn::eval_batches(packing.dev_chunk_words, kEvalChunks)) {
    synattn::make_packed_token_batch(corpus, select_chunks(packing.dev_chunks, indices), packing.options,
                                     synattn::WordDropout::none(), batch);
    const Eigen::Map<const IdVector> ids(batch.ids.data(), batch.ids.size());
    const Eigen::Map<const IdVector> labels(batch.labels.data(), batch.labels.size());
    const IdVector predicted = model.predict({ids, batch.buckets}, cache);
    correct += synattn::nn::count_correct(predicted, labels, batch.lengths());
    counted += static_cast<long long>(batch.tokens);
  }
  return counted > 0 ? 100.0 * static_cast<double>(correct) / static_cast<double>(counted) : 0.0;
}

double total_words(const std::vector<int>& lengths) {
  double words = 0;
  for (int n : lengths) words += n;
  return words;
}

// Accuracy (percent) of the model on every sentence of `corpus`, dropout off.
// A team evaluates in shards (batch k on rank k mod P) and sums the counts:
// the same batches and the same counts as one process.
double evaluate(const Model& model, const synattn::EncodedCorpus& corpus, const std::vector<int>& lengths,
                synattn::TokenBatch& batch, Model::Cache& cache, const train_deprel::Team& team) {
  long long correct = 0, counted = 0;
  const auto batches = synattn::eval_batches(lengths);
  for (std::size_t k = static_cast<std::size_t>(team.rank()); k < batches.size();
       k += static_cast<std::size_t>(team.size())) {
    const auto& indices = batches[k];
    synattn::make_token_batch(corpus, indices, synattn::WordDropout::none(), batch);
    const Eigen::Map<const IdVector> ids(batch.ids.data(), batch.ids.size());
    const Eigen::Map<const IdVector> labels(batch.labels.data(), batch.labels.size());
    const IdVector predicted = model.predict({ids, batch.lengths, batch.buckets}, cache);
    correct += synattn::nn::count_correct(predicted, labels, batch.lengths);
    counted += static_cast<long long>(batch.tokens);
  }
  correct = team.sum(correct);
  counted = team.sum(counted);
  return counted > 0 ? 100.0 * static_cast<double>(correct) / static_cast<double>(counted) : 0.0;
}

// The learned s * T of every biased layer, (rows, buckets) row-major.
std::vector<std::vector<double>> learned_bias(Model& model) {
  std::vector<std::vector<double>> out;
  for (int l = 0; l < model.options().layers; ++l) {
    auto& attention = model.attention(l);
    if (!attention.has_syntax_bias()) continue;
    const double s = static_cast<double>(attention.scale());
    const auto table = attention.table();
    std::vector<double> v;
    for (Eigen::Index r = 0; r < table.rows(); ++r)
      for (Eigen::Index b = 0; b < table.cols(); ++b) v.push_back(s * static_cast<double>(table(r, b)));
    out.push_back(std::move(v));
  }
  return out;
}

// Tree fusion: the learned view weights w = softmax(logits) of every fused
// layer, (weight rows, views) row-major; empty without fusion.
std::vector<std::vector<double>> learned_view_weights(Model& model) {
  std::vector<std::vector<double>> out;
  for (int l = 0; l < model.options().layers; ++l) {
    auto& attention = model.attention(l);
    if (!attention.has_syntax_bias() || attention.options().bias.fusion.views == 1) continue;
    const auto w = attention.view_weights();
    out.emplace_back(w.data(), w.data() + w.size());
  }
  return out;
}

struct Corpora {
  std::vector<synattn::TaggedSentence> train, dev;  // with the trees the bias reads (trees.hpp)
  synattn::LabelSet labels;
  train_deprel::TreeSources trees;  // the gold trees beside, when others are used
  // What the ranks compare under mpirun (hex), computed once: content, not counts.
  std::string train_checksum, dev_checksum;
};

// --save-checkpoint FILE: FILE itself for a single run, else FILE's stem
// plus the run's ("runs/m.safetensors" -> "runs/m-shared-x10-N500-seed1.safetensors").
std::string checkpoint_path(const std::string& path, const train_deprel::RunResult& r, bool several) {
  if (!several) return path;
  const std::filesystem::path p(path);
  const std::string name = p.stem().string() + "-" + train_deprel::file_stem(r) + p.extension().string();
  return (p.parent_path() / name).string();
}

struct RunContext {
  const train_deprel::Config* config = nullptr;
  const train_deprel::Team* team = nullptr;
  bool several_runs = false;
};

// The task: each word's base DEPREL ("nmod:poss" -> "nmod") from its
// ASCII-lower-cased form (the library's defaults too, stated here so the
// recipe does not move if they do).
synattn::TaggingOptions deprel_task() {
  synattn::TaggingOptions o;
  o.labels = synattn::LabelColumn::BaseDeprel;
  o.forms = synattn::FormCase::AsciiLower;
  return o;
}

// The example's data recipe (docs/experiment.md): sentences of at most 60
// words, drawn with one fixed data seed (cli.hpp's Config::data_seed), so
// every run of every variant trains on the same subset.
constexpr int kMaxWords = 60;

// One run's data: the training subset in its drawn order, its vocabulary,
// and both corpora encoded once for that vocabulary and the variant's
// bucketing (batching an epoch is then copies only).
struct RunData {
  std::vector<std::size_t> subset_index;  // into Corpora::train
  std::size_t subset_size = 0;
  std::vector<synattn::TaggedSentence> subset;  // kept for --train-tree-noise's per-epoch trees
  synattn::Vocabulary vocab;
  synattn::EncodedCorpus train, dev;
  std::vector<int> train_lengths, dev_lengths;
  std::optional<Packing> packing;  // --pack-documents
  // Distillation (--distill-from): `train` holds the subset's sentences,
  // then the transfer sentences (labels hidden); the first `labelled` have
  // gold labels. The teacher's targets for all of them.
  std::size_t labelled = 0;
  std::size_t transfer_sentences = 0;
  std::optional<train_deprel::SoftTargets> targets;
  train_deprel::RunResult teacher;  // what the result records of the teacher
};

// The training subset's corpus indices: whole documents (--pack-documents,
// --document-subset), or the recipe's random sentences of at most kMaxWords.
std::vector<std::size_t> training_subset(const train_deprel::RunSpec& run, const Corpora& data,
                                         const train_deprel::Config& config) {
  const auto n = static_cast<std::size_t>(run.train_size);
  if (!config.whole_documents()) return synattn::select_training_subset(data.train, n, kMaxWords, config.data_seed);
  return synattn::document_sentences(
      synattn::select_document_subset(synattn::corpus_documents(data.train), n, config.data_seed));
}

// Packing's chunks: the subset's documents (consecutive in its order, so its
// positions are the training corpus's indices) and the dev file's.
Packing make_packing(const std::vector<std::size_t>& subset_index, const Corpora& data, const RunData& d,
                     const train_deprel::Config& config) {
  Packing p;
  p.options.window = config.sentence_window;
  p.options.root_links = config.root_links ? synattn::RootLinks::all_roots : synattn::RootLinks::none;
  std::vector<synattn::Document> train_docs;
  for (std::size_t k = 0; k < subset_index.size(); ++k) {
    if (k == 0 || data.train[subset_index[k]].new_document || subset_index[k] != subset_index[k - 1] + 1)
      train_docs.push_back(synattn::Document{data.train[subset_index[k]].document_id, {}});
    train_docs.back().sentences.push_back(k);
  }
  p.train_chunks = synattn::document_chunks(train_docs, d.train_lengths, kMaxChunkTokens);
  p.dev_chunks = synattn::document_chunks(synattn::corpus_documents(data.dev), d.dev_lengths, kMaxChunkTokens);
  p.train_chunk_words = chunk_words(p.train_chunks, d.train_lengths);
  p.dev_chunk_words = chunk_words(p.dev_chunks, d.dev_lengths);
  return p;
}

// --distill-from: the teacher checked against this run and loaded, then
// run once over the subset (the trees this run trains on) and the transfer
// sentences (--transfer-trees', else the same); also scored on dev (this
// run's dev trees) and timed, for the result. Needs d's subset and vocabulary.
train_deprel::SoftTargets teacher_targets(const train_deprel::RunSpec& run, const Corpora& data, RunData& d,
                                          const std::vector<std::size_t>& transfer,
                                          const train_deprel::Config& config) {
  const std::string& path = config.distill_from;
  const synattn::SafetensorsFile file = synattn::load_safetensors(path);
  const train_deprel::TeacherInfo info = train_deprel::read_teacher_info(path, file);
  train_deprel::check_teacher_fits(info, run.train_size, config.data_seed, d.vocab.size(), data.labels.size());
  const train_deprel::Variant variant = train_deprel::variant_by_name(info.variant);
  Model teacher(model_options(variant, d.vocab.size(), data.labels.size(), info.seed, 1));
  synattn::load_checkpoint<float>(file, path, teacher.parameter_store(), nullptr);

  std::vector<synattn::TaggedSentence> read;  // what the teacher reads: the run's trees on the subset
  for (std::size_t i : d.subset_index) read.push_back(data.train[i]);
  std::vector<synattn::TaggedSentence> transferred;
  for (std::size_t i : transfer) transferred.push_back(train_deprel::without_labels(data.train[i]));
  if (!config.transfer_trees_path.empty() && !transferred.empty())
    synattn::replace_trees(transferred, synattn::read_conllu(config.transfer_trees_path), config.train_path,
                           config.transfer_trees_path);
  read.insert(read.end(), transferred.begin(), transferred.end());
  const synattn::Bucketing* bucketing = variant.bucketing ? &*variant.bucketing : nullptr;
  const train_deprel::SoftTargets targets = train_deprel::teacher_soft_targets(
      teacher, synattn::EncodedCorpus(read, d.vocab, data.labels, bucketing), config.distill_temperature);

  // The teacher on dev, as its own run scored it (this run's dev trees).
  const synattn::EncodedCorpus dev(data.dev, d.vocab, data.labels, bucketing);
  const std::vector<int> dev_lengths = dev.lengths();
  synattn::TokenBatch batch;
  Model::Cache cache;
  const auto t0 = Clock::now();
  train_deprel::RunResult& t = d.teacher;
  t.best_dev_accuracy = evaluate(teacher, dev, dev_lengths, batch, cache, train_deprel::Team());
  t.dev_tokens_per_second = total_words(dev_lengths) / seconds_since(t0);
  t.variant = info.variant;
  t.trees = info.trees;
  t.seed = info.seed;
  return targets;
}

RunData prepare_run_data(const train_deprel::RunSpec& run, const Corpora& data, const train_deprel::Config& config) {
  RunData d;
  d.subset_index = training_subset(run, data, config);
  // The fusion variant reads every tree view; the others the first alone.
  const bool views = run.variant.fusion;
  const std::vector<synattn::TaggedSentence>& train = views ? data.trees.train_views : data.train;
  const std::vector<synattn::TaggedSentence>& dev = views ? data.trees.dev_views : data.dev;
  std::vector<synattn::TaggedSentence> subset;
  subset.reserve(d.subset_index.size());
  for (std::size_t i : d.subset_index) subset.push_back(train[i]);
  if (subset.empty())
    throw synattn::Error(config.train_path + ": none of the " + std::to_string(run.train_size) +
                         " sentences drawn has at most " + std::to_string(kMaxWords) + " words");
  d.subset_size = subset.size();
  d.labelled = subset.size();
  d.vocab = synattn::Vocabulary::build(subset, nullptr);
  const synattn::Bucketing* bucketing = run.variant.bucketing ? &*run.variant.bucketing : nullptr;
  std::vector<synattn::TaggedSentence> trained = subset;  // the subset, then the transfer sentences
  if (!config.distill_from.empty()) {
    const std::vector<std::size_t> transfer =
        train_deprel::transfer_subset(data.train, d.subset_index, config.transfer_size, kMaxWords, config.data_seed);
    d.transfer_sentences = transfer.size();
    for (std::size_t i : transfer) trained.push_back(train_deprel::without_labels(train[i]));
    d.targets = teacher_targets(run, data, d, transfer, config);
  }
  d.train = synattn::EncodedCorpus(trained, d.vocab, data.labels, bucketing);
  d.dev = synattn::EncodedCorpus(dev, d.vocab, data.labels, bucketing);
  d.train_lengths = synattn::sentence_lengths(trained);
  d.dev_lengths = synattn::sentence_lengths(dev);
  if (config.pack_documents) d.packing = make_packing(d.subset_index, data, d, config);
  if (config.train_tree_noise > 0) d.subset = std::move(subset);
  return d;
}

// How each step's gradients are made: by this process alone, or summed over
// the MPI team. The team's handshake happens once, in join_team(), before
// the first step; a step only reduces.
class StepGradients {
 public:
  // Leaves model.gradients() holding this step's gradients (the team's sum,
  // normalised by the global batch's tokens); returns the loss (summed over
  // the team) and sets `tokens` to the global batch's count.
  double compute(Model& model, const synattn::TokenBatch& batch, Model::Cache& cache,
                 const synattn::RandomStream& dropout, const train_deprel::Team& team, long long& tokens) {
    const Eigen::Map<const IdVector> ids(batch.ids.data(), batch.ids.size());
    const Eigen::Map<const IdVector> labels(batch.labels.data(), batch.labels.size());
    tokens = static_cast<long long>(batch.tokens);
#if defined(SYNATTN_EXAMPLE_MPI)
    if (dp_) {
      tokens = dp_->global_count(tokens);  // the normaliser: the whole global batch's tokens
      const auto loss = synattn::mpi::data_parallel_gradient(model, *dp_, ids, batch.lengths, batch.buckets, labels,
                                                             cache, &dropout, tokens);
      return team.sum(loss.loss);
    }
#endif
    (void)team;
    model.zero_grad();
    return model.loss_and_backward({ids, batch.lengths, batch.buckets}, labels, cache, &dropout).loss;
  }

  double reduce_wait_seconds() const {
#if defined(SYNATTN_EXAMPLE_MPI)
    if (dp_) return dp_->wait_seconds();
#endif
    return 0.0;
  }

#if defined(SYNATTN_EXAMPLE_MPI)
  std::optional<synattn::mpi::DataParallel<float>> dp_;
#endif
};

#if defined(SYNATTN_EXAMPLE_MPI)
// What the ranks must agree on before training: the run, the data (counts
// and content, and which sentences are trained in which order: the shard
// plan) and the model's parameter layout.
synattn::mpi::Fingerprint run_fingerprint(const train_deprel::RunSpec& run, const Corpora& data, const RunData& d,
                                          const Model& model, const train_deprel::Config& config) {
  const std::uint64_t data_seed = config.data_seed;
  synattn::mpi::Fingerprint f;
  f.add("variant", run.variant.name).add("train_size", run.train_size).add("seed", run.seed);
  f.add("bias_lr_mult", run.bias_lr_mult).add("epochs", run.schedule.epochs).add("patience", run.schedule.patience);
  f.add("data_seed", data_seed).add("train_file_sentences", data.train.size()).add("subset", d.subset_size);
  f.add("dev_sentences", data.dev.size());
  // Same counts are not the same data: the files' content too.
  f.add("train_data", data.train_checksum).add("dev_data", data.dev_checksum);
  synattn::mpi::Checksum plan;
  for (std::size_t i : d.subset_index) plan.add(i);
  f.add_checksum("training_subset", plan);
  f.add("labels", data.labels.size()).add("vocabulary", d.vocab.size());
  // The trees: their content is in the data checksums; the per-epoch noise is not.
  f.add("train_tree_noise", config.train_tree_noise).add("tree_noise_seed", config.tree_noise_seed);
  f.add_parameters(model.parameter_infos());
  return f;
}
#endif

// The MPI handshake of one run, once, before its first step: the ranks must
// be running the same thing (checked before anything else is exchanged),
// then they start from rank 0's weights. Alone (or built without MPI)
// `gradients` is left as it is: the steps compute their own. (In place: the
// MPI link holds requests in flight and cannot move.)
void join_team(const train_deprel::RunSpec& run, const Corpora& data, const RunData& d, Model& model,
               const train_deprel::Config& config, const train_deprel::Team& team, StepGradients& gradients) {
#if defined(SYNATTN_EXAMPLE_MPI)
  if (team.communicator() && team.size() > 1) {
    synattn::mpi::verify_agreement(*team.communicator(), run_fingerprint(run, data, d, model, config).text());
    synattn::mpi::DataParallelOptions dpo;
    dpo.overlap = config.overlap;
    gradients.dp_.emplace(*team.communicator(), model.parameter_infos(), dpo);
    gradients.dp_->broadcast_parameters(model.parameters());
  }
#else
  (void)run, (void)data, (void)d, (void)model, (void)config, (void)team, (void)gradients;
#endif
}

// The result's description of the run (the scores are filled as it trains).
train_deprel::RunResult describe_run(const train_deprel::RunSpec& run, const RunData& d, const Model& model,
                                     const train_deprel::Team& team) {
  const auto& v = run.variant;
  train_deprel::RunResult result;
  result.variant = v.name;
  result.train_size = run.train_size;
  result.train_sentences = static_cast<int>(d.subset_size);
  result.seed = run.seed;
  result.bias_lr_mult = run.bias_lr_mult;
  result.table_init = train_deprel::table_init_name(v.table_init);
  result.bias_rows = (v.per_head ? model.options().heads : 1) * (v.fusion ? d.train.views() : 1);  // table rows
  result.bucket_labels = v.bucket_labels();
  result.processes = team.size();
  return result;
}

// This process's share of a global batch (all of it when alone). With fewer
// sentences than ranks a share may be empty: the rank then only joins the
// reduction, with an empty batch.
void load_share(const std::vector<std::size_t>& global, const synattn::EncodedCorpus& corpus,
                const synattn::WordDropout& word_dropout, const train_deprel::Team& team, synattn::TokenBatch& batch) {
  std::vector<std::size_t> mine;
  if (team.size() > 1) mine = team.share(global);
  const std::vector<std::size_t>& indices = team.size() > 1 ? mine : global;
  if (indices.empty())
    synattn::clear_token_batch(batch);
  else
    synattn::make_token_batch(corpus, indices, word_dropout, batch);
}

// Everything a run's steps change, from the first step to the last.
struct Trainer {
  Trainer(const synattn::nn::TaggerOptions& options, double bias_lr_mult, int seed)
      : model(options),
        adam(synattn::AdamOptions{}, synattn::syntax_bias_groups(bias_lr_mult)),
        dropout_root(synattn::RandomStream(static_cast<std::uint64_t>(seed)).derive(kModelDropoutSite)) {}

  Model model;
  synattn::Adam<float> adam;
  synattn::RandomStream dropout_root;
  StepGradients gradients;
  synattn::TokenBatch batch;
  synattn::PackedTokenBatch packed;  // --pack-documents
  Model::Cache cache;
  long step = 0;
  double step_seconds = 0;  // in training steps only (not batching, not evaluation)
  long long trained_tokens = 0;
  Eigen::VectorXf best_parameters;  // --save-best: the best epoch's
  double distill_weight = 0.5, distill_temperature = 2.0;  // --distill-weight, --distill-temperature
  // Distillation: the batch's logits, their gradient, targets and weights.
  Model::Matrix logits, dlogits, targets;
  synattn::nn::DistillationWeights weights;
};

// A student's gradients (--distill-from; one process): the distillation
// loss of the batch against the teacher's targets (distill.hpp), its
// labelled words also against their gold labels. Returns the loss and sets
// `tokens` to the words it counted.
double distillation_step(Trainer& t, const std::vector<std::size_t>& indices, const RunData& d,
                         const synattn::RandomStream& dropout, long long& tokens) {
  const synattn::TokenBatch& b = t.batch;
  const Eigen::Map<const IdVector> ids(b.ids.data(), b.ids.size());
  const Eigen::Map<const IdVector> labels(b.labels.data(), b.labels.size());
  train_deprel::batch_targets(*d.targets, indices, b.lengths, b.n(), d.labelled, t.distill_weight, t.targets,
                              t.weights);
  t.logits.resize(b.ids.size(), t.model.options().num_classes);
  t.model.zero_grad();
  t.model.forward({ids, b.lengths, b.buckets}, t.cache, t.logits, &dropout);
  const synattn::nn::LossResult r = synattn::nn::distillation_loss<float>(
      t.logits, labels, t.targets, t.weights, b.lengths, t.distill_temperature, 0, &t.dlogits);
  t.model.backward(t.cache, t.dlogits);
  tokens = static_cast<long long>(r.count);
  return r.loss;
}

// One optimiser step on global batch `global`; returns its loss.
double train_step(Trainer& t, const std::vector<std::size_t>& global, const RunData& d,
                  const synattn::WordDropout& word_dropout, const train_deprel::Team& team) {
  load_share(global, d.train, word_dropout, team, t.batch);
  const auto s0 = Clock::now();
  // Masks keyed by global sentence: this process's share starts at sentence
  // share_begin() of the global batch, so P processes draw the one-process masks.
  const synattn::RandomStream dropout =
      t.dropout_root.derive(static_cast<std::uint64_t>(t.step)).sequences_from(team.share_begin(global.size()));
  long long tokens = 0;
  const double loss = d.targets ? distillation_step(t, global, d, dropout, tokens)
                                : t.gradients.compute(t.model, t.batch, t.cache, dropout, team, tokens);
  t.adam.set_lr(kLearningRate * synattn::warmup_constant(t.step + 1, kWarmupSteps));
  t.adam.step(t.model.parameter_store());
  t.step_seconds += seconds_since(s0);
  ++t.step;
  t.trained_tokens += tokens;
  return loss;
}

// One optimiser step on one packed chunk (--pack-documents; one process);
// returns its loss.
double train_packed_step(Trainer& t, std::size_t chunk, const RunData& d, const synattn::WordDropout& word_dropout) {
  const Packing& p = *d.packing;
  synattn::make_packed_token_batch(d.train, {p.train_chunks[chunk]}, p.options, word_dropout, t.packed);
  const auto s0 = Clock::now();
  const synattn::RandomStream dropout = t.dropout_root.derive(static_cast<std::uint64_t>(t.step));
  const Eigen::Map<const IdVector> ids(t.packed.ids.data(), t.packed.ids.size());
  const Eigen::Map<const IdVector> labels(t.packed.labels.data(), t.packed.labels.size());
  t.model.zero_grad();
  const double loss = t.model.loss_and_backward({ids, t.packed.buckets}, labels, t.cache, &dropout).loss;
  t.adam.set_lr(kLearningRate * synattn::warmup_constant(t.step + 1, kWarmupSteps));
  t.adam.step(t.model.parameter_store());
  t.step_seconds += seconds_since(s0);
  ++t.step;
  t.trained_tokens += static_cast<long long>(t.packed.tokens);
  return loss;
}

// One pass over the training subset in this epoch's batch order, the
// progress line updated after every step.
void train_epoch(Trainer& t, int epoch, const train_deprel::RunSpec& run, const RunData& d,
                 const train_deprel::Team& team, Clock::time_point t0, train_deprel::ProgressState& state,
                 train_deprel::Progress& progress) {
  const auto seed = static_cast<std::uint64_t>(run.seed);
  // Packed: one chunk per step, in an order shuffled per epoch (batches of one).
  const auto batches =
      d.packing ? synattn::length_batches(d.packing->train_chunk_words, seed, static_cast<std::uint64_t>(epoch), 1)
                : synattn::length_batches(d.train_lengths, seed, static_cast<std::uint64_t>(epoch));
  const synattn::WordDropout word_dropout = synattn::WordDropout::for_epoch(seed, static_cast<std::uint64_t>(epoch));
  double loss_sum = 0;
  state.epoch = epoch + 1;
  state.steps = static_cast<long>(batches.size());
  for (std::size_t k = 0; k < batches.size(); ++k) {
    loss_sum += d.packing ? train_packed_step(t, batches[k].front(), d, word_dropout)
                          : train_step(t, batches[k], d, word_dropout, team);
    state.step = static_cast<long>(k + 1);
    state.loss = loss_sum / static_cast<double>(k + 1);
    state.tokens_per_second = static_cast<double>(t.trained_tokens) / t.step_seconds;
    const double done = static_cast<double>(epoch) + static_cast<double>(k + 1) / static_cast<double>(batches.size());
    state.eta_seconds = train_deprel::eta_seconds(seconds_since(t0), done, run.schedule.epochs);
    progress.update(state);
  }
}

// Records an epoch's dev accuracy (the learned bias with the best one);
// true when early stopping ends the run: `patience` epochs without a gain.
bool record_dev_accuracy(train_deprel::RunResult& result, double accuracy, int epoch, int patience, Model& model,
                         int& since_best) {
  result.dev_history.push_back(accuracy);
  if (accuracy > result.best_dev_accuracy || epoch == 0) {
    result.best_dev_accuracy = accuracy;
    result.best_epoch = epoch + 1;
    result.learned_bias = learned_bias(model);
    result.view_weights = learned_view_weights(model);
    since_best = 0;
    return false;
  }
  return ++since_best >= patience;
}

// --save-checkpoint: the final parameters with the Adam state and step (rank 0 only).
void save_run_checkpoint(Trainer& t, const train_deprel::RunResult& result, const RunContext& ctx) {
  if (ctx.config->checkpoint_path.empty() || !ctx.team->root()) return;
  synattn::save_checkpoint<float>(checkpoint_path(ctx.config->checkpoint_path, result, ctx.several_runs),
                                  t.model.parameter_store(), &t.adam, t.step,
                                  {{"variant", result.variant}, {"seed", std::to_string(result.seed)},
                                   {"epochs_run", std::to_string(result.epochs_run)},
                                   {"processes", std::to_string(ctx.team->size())}});
}

// --save-best: the best epoch's parameters and what model they belong to,
// a teacher for --distill-from (distill.hpp); rank 0 only.
void save_best_model(const Trainer& t, const train_deprel::RunResult& result, const RunData& d, int labels,
                     const RunContext& ctx) {
  const train_deprel::Config& config = *ctx.config;
  if (config.best_model_path.empty() || !ctx.team->root()) return;
  const auto& store = t.model.parameter_store();
  synattn::save_checkpoint<float>(
      checkpoint_path(config.best_model_path, result, ctx.several_runs), store.infos(), t.best_parameters, nullptr,
      0,
      train_deprel::teacher_metadata(result.variant, result.train_size, config.data_seed, d.vocab.size(), labels,
                                     result.seed, result.trees, result.best_dev_accuracy, result.best_epoch));
}

// The run's trees: their sources, noise settings and UAS against gold (the
// training subset's here; under --train-tree-noise the mean over epochs
// replaces it when the run ends).
void describe_trees(train_deprel::RunResult& result, const train_deprel::Config& config, const Corpora& data,
                    const RunData& d) {
  result.trees = config.trees_label();
  result.train_trees = config.train_trees_path.empty() ? "gold" : config.train_trees_path;
  result.dev_trees = config.dev_trees_path.empty() ? "gold" : config.dev_trees_path;
  result.tree_noise = config.tree_noise;
  result.tree_noise_seed = config.tree_noise_seed;
  result.train_tree_noise = config.train_tree_noise;
  std::vector<synattn::TaggedSentence> used;
  if (!data.trees.train_gold.empty()) {
    used.reserve(d.subset_index.size());
    for (std::size_t i : d.subset_index) used.push_back(data.train[i]);
  }
  result.train_tree_uas = train_deprel::subset_uas(data.trees, d.subset_index, used);
  result.dev_tree_uas = data.trees.dev_uas;
  result.dev_trees_label_accuracy = data.trees.dev_trees_label_accuracy;
  if (d.train.views() > 1) {
    result.views = d.train.views();
    result.view_trees = config.train_view_trees;
    result.dev_view_uas = data.trees.dev_view_uas;
  }
}

// What the result records of a student's teacher and distillation.
void describe_distillation(train_deprel::RunResult& result, const RunData& d, const train_deprel::Config& config) {
  result.teacher = config.distill_from;
  result.teacher_variant = d.teacher.variant;
  result.teacher_trees = d.teacher.trees;
  result.teacher_seed = d.teacher.seed;
  result.teacher_dev_accuracy = d.teacher.best_dev_accuracy;
  result.teacher_dev_tokens_per_second = d.teacher.dev_tokens_per_second;
  result.distill_temperature = config.distill_temperature;
  result.distill_weight = config.distill_weight;
  result.transfer_size = config.transfer_size;
  result.transfer_sentences = static_cast<int>(d.transfer_sentences);
  result.transfer_trees = config.transfer_trees_path.empty() ? result.train_trees : config.transfer_trees_path;
}

// One run: its data, its model, the team's handshake, then epochs of steps,
// each scored on dev, until the schedule or early stopping ends it.
train_deprel::RunResult train_one(const train_deprel::RunSpec& run, const Corpora& data, const RunContext& ctx,
                                  train_deprel::Progress& progress) {
  const train_deprel::Team& team = *ctx.team;
  const auto t0 = Clock::now();
  const train_deprel::Config& config = *ctx.config;
  synattn::reset_resident_peak();  // this run's peak (the corpora are resident already)
  RunData d = prepare_run_data(run, data, config);
  Trainer t(model_options(run.variant, d.vocab.size(), data.labels.size(), run.seed, d.train.views()), run.bias_lr_mult,
            run.seed);
  join_team(run, data, d, t.model, *ctx.config, team, t.gradients);
  t.distill_weight = config.distill_weight;
  t.distill_temperature = config.distill_temperature;
  train_deprel::RunResult result = describe_run(run, d, t.model, team);
  describe_trees(result, config, data, d);
  result.packing = config.packing_label();
  result.subset = config.whole_documents() ? "documents" : "sentences";

  char name[96];
  std::snprintf(name, sizeof name, "%s x%g N=%d seed %d", run.variant.name.c_str(), run.bias_lr_mult, run.train_size,
                run.seed);
  train_deprel::ProgressState state;
  state.run = name;
  state.epochs = run.schedule.epochs;
  int since_best = 0;
  double epoch_uas_sum = 0;
  for (int epoch = 0; epoch < run.schedule.epochs; ++epoch) {
    if (config.train_tree_noise > 0 && run.variant.bucketing) {  // this epoch's trees (trees.hpp)
      const auto trees = train_deprel::epoch_trees(config, d.subset_index, d.subset, epoch);
      epoch_uas_sum += train_deprel::subset_uas(data.trees, d.subset_index, trees);
      d.train = synattn::EncodedCorpus(trees, d.vocab, data.labels, &*run.variant.bucketing);
    }
    train_epoch(t, epoch, run, d, team, t0, state, progress);
    const auto e0 = Clock::now();
    const double accuracy = d.packing ? evaluate_packed(t.model, d.dev, *d.packing, t.packed, t.cache)
                                      : evaluate(t.model, d.dev, d.dev_lengths, t.batch, t.cache, team);
    const double dev_tokens_per_second = total_words(d.dev_lengths) / seconds_since(e0);
    state.dev_accuracy = accuracy;
    progress.end_epoch(state);
    const bool stop = record_dev_accuracy(result, accuracy, epoch, run.schedule.patience, t.model, since_best);
    if (result.best_epoch == epoch + 1) {  // a new best
      result.dev_tokens_per_second = dev_tokens_per_second;
      if (!config.best_model_path.empty()) t.best_parameters = t.model.parameters();
    }
    if (stop) break;
  }
  result.epochs_run = static_cast<int>(result.dev_history.size());
  if (epoch_uas_sum > 0) result.train_tree_uas = epoch_uas_sum / result.epochs_run;
  result.train_seconds = seconds_since(t0);
  result.train_tokens_per_second = t.step_seconds > 0 ? static_cast<double>(t.trained_tokens) / t.step_seconds : 0.0;
  result.reduce_wait_seconds = t.gradients.reduce_wait_seconds();
  result.peak_resident_mb = synattn::resident_peak_bytes() / (1024.0 * 1024.0);
  save_run_checkpoint(t, result, ctx);
  save_best_model(t, result, d, data.labels.size(), ctx);
  if (d.targets) describe_distillation(result, d, config);
  return result;
}

// Trains every run of the command line; only the team's rank 0 prints and writes.
int run(const train_deprel::Config& config, const train_deprel::Team& team) {
  std::ostream null_stream(nullptr);  // the other ranks' output goes nowhere
  std::ostream& log = team.root() ? std::cerr : null_stream;
  // Before any work: a path that cannot be written fails now, not after the
  // first model (only rank 0 writes).
  if (team.root()) train_deprel::check_output_paths(config);
  if (!config.report_path.empty()) {
    train_deprel::report_json_lines(config.report_path, config.out_dir, std::cout);
    return 0;
  }
  log << synattn::build_info() << "\n";
  if (team.size() > 1) log << "data-parallel on " << team.size() << " processes (MPI)\n";
  if (team.size() > 1 && !config.distill_from.empty())
    throw train_deprel::CliError("--distill-from trains one process; run it without mpirun");
  if (team.size() > 1 && config.pack_documents)
    throw train_deprel::CliError("--pack-documents trains one document chunk per step, which is not split across " +
                                 std::to_string(team.size()) + " processes; run it without mpirun");
  Corpora data;
  data.train = synattn::load_tagging_corpus(config.train_path, deprel_task());
  data.dev = synattn::load_tagging_corpus(config.dev_path, deprel_task());
  train_deprel::check_corpora(config, data.train, data.dev);
  data.labels = synattn::LabelSet::build(data.train);
  data.trees = train_deprel::apply_tree_sources(config, data.train, data.dev, data.labels);
  train_deprel::apply_view_trees(config, data.train, data.dev, data.trees);
  if (team.size() > 1) {  // with tree views, the corpora that hold them all
    const bool views = !data.trees.train_views.empty();
    data.train_checksum = train_deprel::corpus_checksum(views ? data.trees.train_views : data.train).hex();
    data.dev_checksum = train_deprel::corpus_checksum(views ? data.trees.dev_views : data.dev).hex();
  }
  log << "train " << config.train_path << ": " << data.train.size() << " sentences, " << data.labels.size()
      << " relations; dev " << config.dev_path << ": " << data.dev.size() << " sentences ("
      << data.labels.count_ignored(data.dev) << " words with a relation unseen in train are not scored)\n";

  if (!config.gold_trees())
    log << "trees: " << config.trees_label() << "; dev trees UAS " << data.trees.dev_uas << "%\n";
  for (std::size_t v = 1; v < data.trees.dev_view_uas.size(); ++v)
    log << "tree view " << v << ": " << config.train_view_trees[v - 1] << " / " << config.dev_view_trees[v - 1]
        << "; dev UAS " << data.trees.dev_view_uas[v] << "%\n";
  train_deprel::Progress progress(log, team.root() && train_deprel::Progress().interactive());
  std::vector<train_deprel::RunResult> results;
  const auto runs = config.runs();
  const RunContext ctx{&config, &team, runs.size() > 1};
  for (const auto& spec : runs) {
    results.push_back(train_one(spec, data, ctx, progress));
    const auto& r = results.back();
    char line[320];
    std::snprintf(line, sizeof line,
                  "%-13s x%-3g N=%-5d seed %d: best dev %.2f%% at epoch %d of %d, %.1f s, %.0f tok/s, peak %.0f MB",
                  r.variant.c_str(), r.bias_lr_mult, r.train_size, r.seed, r.best_dev_accuracy, r.best_epoch,
                  r.epochs_run, r.train_seconds, r.train_tokens_per_second, r.peak_resident_mb);
    std::string text = line;
    if (r.processes > 1) {
      std::snprintf(line, sizeof line, " on %d processes, %.2f s waiting for gradient reductions", r.processes,
                    r.reduce_wait_seconds);
      text += line;
    }
    progress.note(text);
    if (team.root() && !config.json_path.empty()) train_deprel::append_json_line(config.json_path, r);
  }
  if (team.root()) train_deprel::report_results(results, config.out_dir, std::cout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  const auto config = train_deprel::parse_cli_or_exit_code(argc, argv, std::cout, std::cerr, exit_code);
  if (!config) return exit_code;
#if defined(_OPENMP)
  if (config->threads > 0) omp_set_num_threads(config->threads);
#endif
  // Batches of different lengths resize every cache at every step: keep the
  // freed memory for reuse instead of faulting it back in (util/memory.hpp;
  // a fifth of the N = 500 recipe's time with glibc's defaults).
  synattn::retain_freed_memory();
#if defined(SYNATTN_EXAMPLE_MPI)
  // Started by mpirun: one model trained by all ranks. A rank that fails
  // prints "rank r: message" and takes the whole job down (MPI_Abort), so
  // no rank is left waiting in a reduction.
  if (train_deprel::launched_by_mpi() && config->report_path.empty()) {
    synattn::mpi::Environment env(argc, argv);
    return synattn::mpi::run_or_abort([&] {
      const synattn::mpi::Communicator world(MPI_COMM_WORLD, config->mpi_timeout_seconds);
      return run(*config, train_deprel::Team(world));
    });
  }
#endif
  try {
    return run(*config, train_deprel::Team());
  } catch (const train_deprel::CliError& e) {  // an argument the files or folders refute: as a bad command line
    std::cerr << "train_deprel: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "train_deprel: " << e.what() << "\n";
    return 1;
  }
}
