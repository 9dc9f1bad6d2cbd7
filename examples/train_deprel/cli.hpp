// train_deprel — the command line of the DEPREL training experiment and the
// description of each attention-bias variant it compares.
//
//   train_deprel --train FILE --dev FILE --train-size N --variants LIST
//                --seeds LIST [--epochs E] [--patience P] [--bias-lr-mult X]
//                [--threads T] [--json FILE] [--out DIR] [--full]
//                [--save-checkpoint FILE] [--no-overlap] [--mpi-timeout S]
//                [--train-trees FILE] [--dev-trees FILE] [--tree-noise P] [--tree-noise-seed S]
//                [--train-tree-noise Q] [--trees-name NAME]
//                [--pack-documents [--sentence-window W] [--root-links]] [--document-subset]
//                [--save-best FILE] [--distill-from FILE [--distill-temperature T] [--distill-weight A]
//                 [--transfer-size M] [--transfer-trees FILE]] [--help]
//
// Distillation (docs/experiment.md, "Distillation"): --save-best writes the
// best epoch's parameters, a teacher; --distill-from trains the listed
// variants (usually none) on the teacher's softened distribution mixed with
// the gold labels, and with --transfer-size on M further training sentences
// whose labels it never sees, labelled by the teacher alone.
//
// Packed documents: --pack-documents trains and evaluates on whole
// documents (the "# newdoc" groups of the CoNLL-U files, cut into chunks of
// at most 4,096 words), each chunk one packed sequence whose sentences see
// the sentences within --sentence-window of their own. The training subset
// is then whole documents (--document-subset alone draws the same subset and
// trains sentence by sentence: the control).
//
// Tree sources (docs/experiment.md, "Trees a parser drew"): the bias reads gold trees unless --train-trees /
// --dev-trees give CoNLL-U files whose HEAD columns replace them (matched by
// sent_id and forms: data/tree_source.hpp); --tree-noise corrupts the train
// and dev trees once (tree/corruption.hpp), --train-tree-noise corrupts the
// training trees afresh every epoch, dev trees staying as given.
//
// Under mpirun (-np P) the same flags train one model on P processes
// (data-parallel, synattn::mpi); --no-overlap then reduces the gradients
// only after the backward pass instead of during it, and --mpi-timeout ends
// the job when a rank waits longer than S seconds for the others.
//
// --train/--dev default to the repository's UD English EWT files (baked in
// as SYNATTN_EWT_DIR by examples/CMakeLists.txt). --full replaces
// --train-size/--variants/--seeds/--bias-lr-mult by the whole grid.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_CLI_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_CLI_HPP

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <synattn/bias/bias_table.hpp>
#include <synattn/bias/bucketing.hpp>
#include <synattn/data/batching.hpp>
#include <synattn/error.hpp>

#ifndef SYNATTN_EWT_DIR
#define SYNATTN_EWT_DIR "data/ud/UD_English-EWT"
#endif

namespace train_deprel {

// A bad command line: what() names the flag and what was expected.
class CliError : public synattn::Error {
 public:
  explicit CliError(const std::string& what) : synattn::Error(what) {}
};

enum class TableInit { Zero, Decay };  // T[b] = 0, or T[b] = -b

inline const char* table_init_name(TableInit init) { return init == TableInit::Zero ? "zero" : "decay"; }

// One variant of the attention bias, as the model glue needs it.
struct Variant {
  std::string name;
  bool has_bias = false;                      // false: plain attention ("none")
  std::optional<synattn::Bucketing> bucketing;  // set iff has_bias
  bool per_head = false;                      // one table per head, else one per layer
  TableInit table_init = TableInit::Zero;
  bool table_learnable = true;                // "fixed": the table is frozen, s still learns
  bool fusion = false;  // "fusion": one table per tree view (--train-view-trees), w = softmax(logits) per layer

  int num_buckets() const { return bucketing ? bucketing->num_buckets() : 0; }

  // "0".."9", "10+" (linear, clamp 10); "u0d0".."u4+d4+" (directed, clamp 4).
  std::vector<std::string> bucket_labels() const {
    std::vector<std::string> out;
    if (!bucketing) return out;
    const int m = bucketing->max_distance();
    const auto part = [m](int v) { return std::to_string(v) + (v == m ? "+" : ""); };
    if (bucketing->kind() == synattn::BucketKind::Directed) {
      for (int u = 0; u <= m; ++u)
        for (int d = 0; d <= m; ++d) out.push_back("u" + part(u) + "d" + part(d));
    } else {
      for (int b = 0; b < bucketing->num_buckets(); ++b) out.push_back(part(b));
    }
    return out;
  }

  // The table's initial values (num_buckets() of them; per row when per-head).
  std::vector<double> initial_table() const {
    std::vector<double> t(static_cast<std::size_t>(num_buckets()), 0.0);
    if (table_init == TableInit::Decay)
      for (std::size_t b = 0; b < t.size(); ++b) t[b] = -static_cast<double>(b);
    return t;
  }
};

inline const std::vector<std::string>& variant_names() {
  static const std::vector<std::string> names{"none",     "fixed",        "shared", "per-head",
                                              "directed", "shared-decay", "fusion"};
  return names;
}

// The variant called `name`; CliError for an unknown name.
inline Variant variant_by_name(const std::string& name) {
  Variant v;
  v.name = name;
  if (name == "none") return v;
  v.has_bias = true;
  v.bucketing = synattn::Bucketing::linear(10);
  if (name == "fixed") {
    v.table_init = TableInit::Decay;
    v.table_learnable = false;
  } else if (name == "shared") {
  } else if (name == "per-head") {
    v.per_head = true;
  } else if (name == "directed") {
    v.bucketing = synattn::Bucketing::directed(4);
  } else if (name == "shared-decay") {
    v.table_init = TableInit::Decay;
  } else if (name == "fusion") {
    v.fusion = true;  // "shared" per view: linear clamp 10, one row per layer and view
  } else {
    std::string known;
    for (const auto& n : variant_names()) known += (known.empty() ? "" : ", ") + n;
    throw CliError("--variants: unknown variant '" + name + "', expected one of " + known);
  }
  return v;
}

struct Schedule {
  int epochs = 0;
  int patience = 0;
};

// 60/10 at N <= 500, 20/6 at N <= 2000, 6/3 above.
inline Schedule default_schedule(int train_size) {
  if (train_size <= 500) return {60, 10};
  if (train_size <= 2000) return {20, 6};
  return {6, 3};
}

// One training run of the grid.
struct RunSpec {
  Variant variant;
  int train_size = 0;
  int seed = 0;
  double bias_lr_mult = 1.0;
  Schedule schedule;
};

struct Config {
  std::string train_path = SYNATTN_EWT_DIR "/en_ewt-ud-train.conllu";
  std::string dev_path = SYNATTN_EWT_DIR "/en_ewt-ud-dev.conllu";
  // Without flags: the quick-start run (N = 500, none / fixed / shared, seed 1).
  std::vector<int> train_sizes{500};
  std::vector<std::string> variants{"none", "fixed", "shared"};
  std::vector<int> seeds{1};
  // Learned tables move about one learning rate per Adam step from zero, so
  // at the model's rate they learn too slowly on small data: 10x by default.
  std::vector<double> bias_lr_mults{10.0};
  int epochs = 0;    // 0: by train size
  int patience = 0;  // 0: by train size
  int threads = 0;   // 0: OpenMP's default
  std::string json_path;
  std::string out_dir;
  std::string report_path;  // --report: tabulate and plot these results instead of training
  std::string checkpoint_path;  // --save-checkpoint: final parameters (and optimiser state) per run
  bool overlap = true;          // --no-overlap: MPI reductions after backward, not during it
  // --mpi-timeout: the longest a rank waits for the others before ending the
  // job (a hung rank would otherwise stall every other rank forever). Long
  // enough for rank 0 to write figures and checkpoints while the rest wait.
  double mpi_timeout_seconds = 600.0;
  bool full = false;
  bool help = false;
  // Tree sources (empty: the gold trees of --train / --dev).
  std::string train_trees_path, dev_trees_path;
  double tree_noise = 0.0;            // --tree-noise: train and dev trees corrupted once
  std::uint64_t tree_noise_seed = 1;  // --tree-noise-seed: the corruption's seed (both kinds)
  double train_tree_noise = 0.0;      // --train-tree-noise: training trees corrupted afresh each epoch
  std::string trees_name;             // --trees-name; empty: trees_label()
  // Tree fusion: the trees of views 1.. (view 0: the trees above), one file
  // each for train and dev, read by the fusion variant only.
  std::vector<std::string> train_view_trees, dev_view_trees;
  // Packed documents (see the top): one chunk of a document per step.
  bool pack_documents = false;
  int sentence_window = 1;       // --sentence-window: sentences apart that see each other
  bool root_links = false;       // --root-links: every sentence's root also sees every other root
  bool document_subset = false;  // --document-subset (implied by --pack-documents): whole documents
  // --save-best: each run's best-epoch parameters (a teacher for --distill-from).
  std::string best_model_path;
  // Distillation (see the top); empty distill_from: none.
  std::string distill_from;
  double distill_temperature = 2.0;  // T: the teacher's and student's logits are divided by it
  double distill_weight = 0.5;       // A: weight of the soft term on labelled words (1 - A: the gold term)
  int transfer_size = 0;             // M: further sentences drawn after the subset, labelled by the teacher
  std::string transfer_trees_path;   // the trees the teacher reads on them (default: the training trees)

  bool whole_documents() const { return pack_documents || document_subset; }
  // What the tables call the batching: "sentences", or "documents w=1[, root links]".
  std::string packing_label() const {
    if (!pack_documents) return "sentences";
    return "documents w=" + std::to_string(sentence_window) + (root_links ? ", root links" : "");
  }

  int tree_views() const { return 1 + static_cast<int>(train_view_trees.size()); }

  bool gold_trees() const { return train_trees_path.empty() && dev_trees_path.empty() && tree_noise == 0.0 &&
                                   train_tree_noise == 0.0; }
  // What the tables call this tree condition: --trees-name, else "gold", else
  // the sources and noise settings ("train=FILE, dev=gold, noise=0.1", "noise=0.1").
  std::string trees_label() const {
    if (!trees_name.empty()) return trees_name;
    if (gold_trees()) return "gold";
    const auto source = [](const std::string& path) {
      return path.empty() ? std::string("gold") : std::filesystem::path(path).filename().string();
    };
    std::string s;
    if (!train_trees_path.empty() || !dev_trees_path.empty())
      s = "train=" + source(train_trees_path) + ", dev=" + source(dev_trees_path);
    char buf[64];
    if (tree_noise > 0) {
      std::snprintf(buf, sizeof buf, "%snoise=%g", s.empty() ? "" : ", ", tree_noise);
      s += buf;
    }
    if (train_tree_noise > 0) {
      std::snprintf(buf, sizeof buf, "%strain-noise=%g", s.empty() ? "" : ", ", train_tree_noise);
      s += buf;
    }
    return s;
  }
  // The recipe's fixed data seed (docs/experiment.md): every run trains on
  // the same subset; bench/pytorch_train_reference.py draws with the same one.
  std::uint64_t data_seed = 20240601;

  Schedule schedule_for(int train_size) const {
    Schedule s = default_schedule(train_size);
    if (epochs > 0) s.epochs = epochs;
    if (patience > 0) s.patience = patience;
    return s;
  }

  // Every run, in order: train size, then variant, then multiplier, then
  // seed. --full: every variant at multiplier 10, plus "shared" at 1 (the
  // untuned setting).
  std::vector<RunSpec> runs() const {
    std::vector<RunSpec> out;
    for (int n : train_sizes)
      for (const std::string& name : variants)
        for (double mult : bias_lr_mults) {
          const Variant v = variant_by_name(name);
          if (full && mult != 10.0 && name != "shared") continue;
          // Without a bias there is nothing to multiply: such a run is
          // recorded at 1 (so the table puts it under plain "none").
          const double m = v.has_bias ? mult : 1.0;
          for (int seed : seeds) out.push_back(RunSpec{v, n, seed, m, schedule_for(n)});
        }
    return out;
  }
};

inline const char* usage() {
  return "usage: train_deprel [--train FILE] [--dev FILE] [--train-size N] [--variants LIST] [--seeds LIST]\n"
         "                    [--epochs E] [--patience P] [--bias-lr-mult X] [--threads T]\n"
         "                    [--json FILE] [--out DIR] [--full] [--report FILE]\n"
         "                    [--save-checkpoint FILE] [--no-overlap] [--mpi-timeout S]\n"
         "                    [--train-trees FILE] [--dev-trees FILE] [--tree-noise P] [--tree-noise-seed S]\n"
         "                    [--train-tree-noise Q] [--trees-name NAME]\n"
         "                    [--train-view-trees LIST --dev-view-trees LIST]\n"
         "                    [--pack-documents [--sentence-window W] [--root-links]] [--document-subset]\n"
         "                    [--save-best FILE] [--distill-from FILE [--distill-temperature T]\n"
         "                     [--distill-weight A] [--transfer-size M] [--transfer-trees FILE]] [--help]\n"
         "\n"
         "Trains a 2-layer syntax-biased Transformer to predict each word's universal\n"
         "dependency relation (base DEPREL) of UD English EWT from its lower-cased form.\n"
         "\n"
         "  --train FILE        training CoNLL-U (default: the repository's EWT train)\n"
         "  --dev FILE          development CoNLL-U (default: the repository's EWT dev)\n"
         "  --train-size N      sentences drawn from the training file (comma list allowed; default 500)\n"
         "  --variants LIST     comma list of none, fixed, shared, per-head, directed, shared-decay,\n"
         "                      fusion (needs --train-view-trees)\n"
         "                      (default none,fixed,shared)\n"
         "  --seeds LIST        comma list of model seeds, e.g. 1,2,3 (default 1)\n"
         "  --epochs E          most epochs (default by N: 60 at N<=500, 20 at N<=2000, else 6)\n"
         "  --patience P        early stopping patience (default by N: 10, 6, 3)\n"
         "  --bias-lr-mult X    learning-rate multiplier of the bias table and scale (default 10;\n"
         "                      1 is the untuned setting)\n"
         "  --threads T         OpenMP threads (default: OpenMP's default)\n"
         "  --json FILE         append one JSON object per run (JSON lines)\n"
         "  --out DIR           write figures (SVG) and the results table there\n"
         "  --full              the whole grid: every variant at N = 500, 2000, 8000, shared also\n"
         "                      at bias-lr-mult 1, seeds 1,2,3\n"
         "  --report FILE       train nothing: print the table of the runs in FILE (JSON lines, as\n"
         "                      written by --json, e.g. several processes' files concatenated) and\n"
         "                      write their figures to --out\n"
         "  --save-checkpoint FILE  write each run's final parameters and optimiser state there\n"
         "                      (safetensors; with several runs, FILE's stem gets -<variant>-x<mult>-N<n>-seed<s>)\n"
         "  --no-overlap        under mpirun: reduce gradients after the backward pass, not during it\n"
         "  --mpi-timeout S     under mpirun: end the job when a process waits more than S seconds\n"
         "                      for the others (a hung process; default 600)\n"
         "  --train-trees FILE  CoNLL-U whose HEAD column gives the training trees of the bias (words and\n"
         "                      labels still from --train; sentences matched by sent_id and forms)\n"
         "  --dev-trees FILE    the same for --dev\n"
         "  --tree-noise P      re-attach each non-root word of the train and dev trees with probability P\n"
         "                      to a random word outside its subtree (once, before training)\n"
         "  --tree-noise-seed S the seed of both kinds of tree noise (default 1)\n"
         "  --train-tree-noise Q  corrupt the training trees afresh every epoch with probability Q\n"
         "                      (a regulariser); dev trees stay as given\n"
         "  --trees-name NAME   this tree condition's name in tables and JSON (default: gold, or the\n"
         "                      sources and noise settings)\n"
         "  --train-view-trees LIST  comma list of CoNLL-U files, one per further tree view of the\n"
         "                      training sentences (matched like --train-trees), read by the fusion\n"
         "                      variant: its bias fuses these trees with the first ones\n"
         "  --dev-view-trees LIST  the same for --dev, as many files, in the same order\n"
         "  --pack-documents    train and evaluate on whole documents (# newdoc groups, chunks of at most\n"
         "                      4096 words), each chunk one packed sequence; the training subset is\n"
         "                      whole documents (needs a biased variant; not under mpirun)\n"
         "  --sentence-window W with --pack-documents: sentences at most W apart see each other (default 1;\n"
         "                      0 keeps attention within each sentence)\n"
         "  --root-links        with --pack-documents: every sentence's root also sees every other root\n"
         "  --document-subset   draw the training subset as whole documents, as --pack-documents does,\n"
         "                      but train sentence by sentence (its control)\n"
         "  --save-best FILE    write each run's best-epoch parameters there (safetensors, with the\n"
         "                      run's variant, size and vocabulary; several runs: named as for\n"
         "                      --save-checkpoint): a teacher for --distill-from\n"
         "  --distill-from FILE train the variants (e.g. none) as students of this teacher (--save-best's\n"
         "                      file, trained at the same --train-size): each labelled word's loss is\n"
         "                      (1 - A) x cross-entropy + A x T^2 x KL(teacher || student) at temperature T\n"
         "  --distill-temperature T  (default 2)\n"
         "  --distill-weight A  the soft term's weight on labelled words (default 0.5)\n"
         "  --transfer-size M   also train on M further sentences of --train (drawn after the subset)\n"
         "                      whose labels are never read: the teacher's distribution is the target\n"
         "  --transfer-trees FILE  the trees the teacher reads on those sentences (CoNLL-U matched like\n"
         "                      --train-trees; default: the training trees)\n"
         "  --help              this text\n"
         "\n"
         "Under mpirun -np P (built with MPI) the same command trains each model on P processes:\n"
         "every global batch of 32 sentences is split across them, the gradients are summed.\n";
}

namespace detail {

inline long long parse_integer(const std::string& flag, const std::string& text, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || text[0] == ' ' || text[0] == '+')
    throw CliError(flag + ": '" + text + "' is not an integer");
  if (v < lo || v > hi)
    throw CliError(flag + ": " + text + " is out of range, expected " + std::to_string(lo) + " to " +
                   std::to_string(hi));
  return v;
}

inline double parse_positive(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || text[0] == ' ')
    throw CliError(flag + ": '" + text + "' is not a number");
  if (!(v > 0.0) || !std::isfinite(v)) throw CliError(flag + ": " + text + " must be a positive number");
  return v;
}

inline double parse_probability(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || text[0] == ' ')
    throw CliError(flag + ": '" + text + "' is not a number");
  if (!(v >= 0.0 && v <= 1.0)) throw CliError(flag + ": " + text + " must be a probability in [0, 1]");
  return v;
}

inline std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw CliError(flag + ": empty item in list '" + text + "'");
    for (const std::string& seen : out)
      if (seen == item) throw CliError(flag + ": '" + item + "' is listed twice");
    out.push_back(item);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// The view-tree flags come as a pair of equal-length lists, and go with the
// fusion variant: views without it would be read by nothing, fusion without
// views has nothing to fuse. The tree noise corrupts one tree per sentence,
// which is not defined for several.
inline void check_tree_views(const Config& c) {
  if (c.train_view_trees.size() != c.dev_view_trees.size())
    throw CliError("--train-view-trees has " + std::to_string(c.train_view_trees.size()) +
                   " files but --dev-view-trees " + std::to_string(c.dev_view_trees.size()) +
                   "; give one train and one dev file per tree view");
  const bool fusion = std::find(c.variants.begin(), c.variants.end(), "fusion") != c.variants.end();
  if (fusion && c.train_view_trees.empty())
    throw CliError(
        "--variants fusion fuses several trees per sentence: give the further views with "
        "--train-view-trees and --dev-view-trees");
  if (!fusion && !c.train_view_trees.empty())
    throw CliError(
        "--train-view-trees and --dev-view-trees are read by the fusion variant only; add fusion to "
        "--variants (--full runs every variant but fusion)");
  if (c.tree_views() > synattn::kMaxTreeViews)
    throw CliError("--train-view-trees: at most " + std::to_string(synattn::kMaxTreeViews - 1) +
                   " further views, got " + std::to_string(c.train_view_trees.size()));
  if (fusion && (c.tree_noise > 0 || c.train_tree_noise > 0))
    throw CliError("--tree-noise and --train-tree-noise corrupt one tree per sentence; the fusion variant reads " +
                   std::to_string(c.tree_views()) + " (run it without tree noise)");
}

// The packing flags go together: a window or root links without packing
// would be read by nothing. A packing's windows are buckets, so every variant
// needs the bias, and one tree view.
inline void check_packing(const Config& c, bool have_window) {
  if (!c.pack_documents && (have_window || c.root_links))
    throw CliError(std::string(have_window ? "--sentence-window" : "--root-links") +
                   " is read with --pack-documents only");
  if (!c.pack_documents) return;
  const std::vector<std::string> variants = c.full ? variant_names() : c.variants;
  for (const std::string& name : variants)
    if (name == "none" || name == "fusion")
      throw CliError("--pack-documents: the " + name + " variant cannot be packed (" +
                     (name == "none" ? std::string("a packing's sentence windows are buckets, and it has no bias")
                                     : std::string("a packing holds one tree view")) +
                     "); run it sentence by sentence, with --document-subset for the same sentences");
}
}  // namespace detail

// Which of the flags that --full replaces (and --sentence-window, which
// needs --pack-documents) the command line gave.
struct GivenFlags {
  bool sizes = false, variants = false, seeds = false, mult = false, window = false;
};

namespace detail {

// A flag without a value: what it sets.
struct Switch {
  const char* flag;
  bool Config::*field;
};
inline const Switch* find_switch(const std::string& flag) {
  static const Switch kSwitches[] = {{"--full", &Config::full},
                                     {"--pack-documents", &Config::pack_documents},
                                     {"--root-links", &Config::root_links},
                                     {"--document-subset", &Config::document_subset}};
  for (const Switch& s : kSwitches)
    if (flag == s.flag) return &s;
  return nullptr;
}

// A flag with a value: how the value is read into the config.
struct ValuedFlag {
  const char* flag;
  void (*set)(Config&, GivenFlags&, const std::string& flag, const std::string& value);
};

inline std::vector<int> integer_list(const std::string& flag, const std::string& value, long long lo) {
  std::vector<int> out;
  for (const auto& item : split_list(flag, value))
    out.push_back(static_cast<int>(parse_integer(flag, item, lo, lo == 0 ? 2147483647 : 1000000000)));
  return out;
}

inline const ValuedFlag* find_valued_flag(const std::string& flag) {
  using G = GivenFlags;
  using S = const std::string&;
  static const ValuedFlag kFlags[] = {
      {"--train", [](Config& c, G&, S, S v) { c.train_path = v; }},
      {"--dev", [](Config& c, G&, S, S v) { c.dev_path = v; }},
      {"--train-size", [](Config& c, G& g, S f, S v) { c.train_sizes = integer_list(f, v, 1), g.sizes = true; }},
      {"--variants",
       [](Config& c, G& g, S f, S v) {
         c.variants = split_list(f, v);
         for (const auto& name : c.variants) (void)variant_by_name(name);
         g.variants = true;
       }},
      {"--seeds", [](Config& c, G& g, S f, S v) { c.seeds = integer_list(f, v, 0), g.seeds = true; }},
      {"--epochs", [](Config& c, G&, S f, S v) { c.epochs = static_cast<int>(parse_integer(f, v, 1, 100000)); }},
      {"--patience", [](Config& c, G&, S f, S v) { c.patience = static_cast<int>(parse_integer(f, v, 1, 100000)); }},
      {"--bias-lr-mult", [](Config& c, G& g, S f, S v) { c.bias_lr_mults = {parse_positive(f, v)}, g.mult = true; }},
      {"--threads", [](Config& c, G&, S f, S v) { c.threads = static_cast<int>(parse_integer(f, v, 1, 1024)); }},
      {"--json", [](Config& c, G&, S, S v) { c.json_path = v; }},
      {"--out", [](Config& c, G&, S, S v) { c.out_dir = v; }},
      {"--report", [](Config& c, G&, S, S v) { c.report_path = v; }},
      {"--save-checkpoint", [](Config& c, G&, S, S v) { c.checkpoint_path = v; }},
      {"--save-best", [](Config& c, G&, S, S v) { c.best_model_path = v; }},
      {"--mpi-timeout", [](Config& c, G&, S f, S v) { c.mpi_timeout_seconds = parse_positive(f, v); }},
      {"--train-trees", [](Config& c, G&, S, S v) { c.train_trees_path = v; }},
      {"--dev-trees", [](Config& c, G&, S, S v) { c.dev_trees_path = v; }},
      {"--tree-noise", [](Config& c, G&, S f, S v) { c.tree_noise = parse_probability(f, v); }},
      {"--tree-noise-seed",
       [](Config& c, G&, S f, S v) {
         c.tree_noise_seed = static_cast<std::uint64_t>(parse_integer(f, v, 0, 9007199254740992LL));
       }},
      {"--train-tree-noise", [](Config& c, G&, S f, S v) { c.train_tree_noise = parse_probability(f, v); }},
      {"--trees-name",
       [](Config& c, G&, S f, S v) {
         if (v.empty()) throw CliError(f + ": the name is empty");
         c.trees_name = v;
       }},
      {"--train-view-trees", [](Config& c, G&, S f, S v) { c.train_view_trees = split_list(f, v); }},
      {"--dev-view-trees", [](Config& c, G&, S f, S v) { c.dev_view_trees = split_list(f, v); }},
      {"--sentence-window",
       [](Config& c, G& g, S f, S v) {
         c.sentence_window = static_cast<int>(parse_integer(f, v, 0, 1000000));
         g.window = true;
       }},
      {"--distill-from", [](Config& c, G&, S, S v) { c.distill_from = v; }},
      {"--distill-temperature", [](Config& c, G&, S f, S v) { c.distill_temperature = parse_positive(f, v); }},
      {"--distill-weight", [](Config& c, G&, S f, S v) { c.distill_weight = parse_probability(f, v); }},
      {"--transfer-size",
       [](Config& c, G&, S f, S v) { c.transfer_size = static_cast<int>(parse_integer(f, v, 0, 1000000000)); }},
      {"--transfer-trees", [](Config& c, G&, S, S v) { c.transfer_trees_path = v; }},
  };
  for (const ValuedFlag& f : kFlags)
    if (flag == f.flag) return &f;
  return nullptr;
}

// Distillation's flags go with --distill-from, which trains from one
// teacher: the teacher's vocabulary is its subset's, so one training size,
// sentence by sentence, one process (checked when training starts), and
// the variants read at most one tree view.
inline void check_distillation(const Config& c, const std::vector<std::string>& given) {
  const auto gave = [&](const char* flag) { return std::find(given.begin(), given.end(), flag) != given.end(); };
  if (c.distill_from.empty()) {
    for (const char* flag : {"--distill-temperature", "--distill-weight", "--transfer-size", "--transfer-trees"})
      if (gave(flag)) throw CliError(std::string(flag) + " is read with --distill-from only");
    return;
  }
  if (c.full) throw CliError("--distill-from trains students of one teacher; it does not go with --full");
  if (c.train_sizes.size() != 1)
    throw CliError("--distill-from: the teacher knows the vocabulary of one training size; give one --train-size");
  if (c.pack_documents || c.document_subset)
    throw CliError("--distill-from trains sentence by sentence; it does not go with --pack-documents or "
                   "--document-subset");
  if (std::find(c.variants.begin(), c.variants.end(), "fusion") != c.variants.end())
    throw CliError("--distill-from: the fusion variant cannot be a student (it reads several tree views)");
  if (gave("--transfer-trees") && c.transfer_size == 0)
    throw CliError("--transfer-trees gives the trees of the transfer sentences: give --transfer-size too");
}

// After every flag: the flags that go together, then --full's grid.
inline void finish_config(Config& c, const GivenFlags& g, const std::vector<std::string>& given) {
  check_tree_views(c);
  check_packing(c, g.window);
  check_distillation(c, given);
  if (!c.full) return;
  if (g.sizes || g.variants || g.seeds || g.mult)
    throw CliError("--full sets --train-size, --variants, --seeds and --bias-lr-mult; do not give them too");
  c.train_sizes = {500, 2000, 8000};
  c.variants = variant_names();
  c.variants.pop_back();  // not fusion, which needs view trees
  c.seeds = {1, 2, 3};
  c.bias_lr_mults = {10.0, 1.0};
}

}  // namespace detail

// Parses argv (argv[0] is the program). Throws CliError on a bad command
// line; sets help and returns early on --help.
inline Config parse_cli(int argc, const char* const* argv) {
  Config c;
  GivenFlags given;
  std::vector<std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      c.help = true;
      return c;
    }
    flags.push_back(flag);
    if (flag == "--no-overlap") {
      c.overlap = false;
    } else if (const detail::Switch* s = detail::find_switch(flag)) {
      c.*(s->field) = true;
    } else if (const detail::ValuedFlag* f = detail::find_valued_flag(flag)) {
      if (i + 1 >= argc) throw CliError(flag + ": missing value");
      f->set(c, given, flag, argv[++i]);
    } else {
      throw CliError("unknown argument '" + flag + "'");
    }
  }
  detail::finish_config(c, given, flags);
  return c;
}

// What main() does with a command line: the config, or an exit code after
// printing the usage (0 for --help on `out`; 2 and "train_deprel: reason"
// plus the usage on `err` for a bad command line).
inline std::optional<Config> parse_cli_or_exit_code(int argc, const char* const* argv, std::ostream& out,
                                                     std::ostream& err, int& exit_code) {
  try {
    Config c = parse_cli(argc, argv);
    if (c.help) {
      out << usage();
      exit_code = 0;
      return std::nullopt;
    }
    return c;
  } catch (const CliError& e) {
    err << "train_deprel: " << e.what() << "\n\n" << usage();
    exit_code = 2;
    return std::nullopt;
  }
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_CLI_HPP
