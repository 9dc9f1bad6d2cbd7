// train_deprel's command line and variant descriptions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "../../examples/train_deprel/cli.hpp"

using namespace train_deprel;

namespace {
Config parse(std::vector<const char*> args) {
  args.insert(args.begin(), "train_deprel");
  return parse_cli(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST_CASE("the contract's flags fill the config", "[cli]") {
  const Config c = parse({"--train", "t.conllu", "--dev", "d.conllu", "--train-size", "2000", "--variants",
                          "none,shared,directed", "--seeds", "1,2", "--epochs", "7", "--patience", "2",
                          "--bias-lr-mult", "10", "--threads", "2", "--json", "r.jsonl", "--out", "figs"});
  CHECK(c.train_path == "t.conllu");
  CHECK(c.dev_path == "d.conllu");
  CHECK(c.train_sizes == std::vector<int>{2000});
  CHECK(c.variants == std::vector<std::string>{"none", "shared", "directed"});
  CHECK(c.seeds == std::vector<int>{1, 2});
  CHECK(c.epochs == 7);
  CHECK(c.patience == 2);
  CHECK(c.bias_lr_mults == std::vector<double>{10.0});
  CHECK(c.threads == 2);
  CHECK(c.json_path == "r.jsonl");
  CHECK(c.out_dir == "figs");
  CHECK_FALSE(c.full);
  const auto runs = c.runs();
  REQUIRE(runs.size() == 6);
  CHECK(runs[0].variant.name == "none");
  CHECK(runs[0].bias_lr_mult == 1.0);  // "none" has no bias to multiply
  CHECK(runs[2].bias_lr_mult == 10.0);
  CHECK(runs[1].seed == 2);
  CHECK(runs[5].variant.name == "directed");
  CHECK(runs[5].schedule.epochs == 7);
  CHECK(runs[5].schedule.patience == 2);
}

TEST_CASE("defaults: the repository's EWT files and the schedule by N", "[cli]") {
  const Config c = parse({"--train-size", "500", "--variants", "shared", "--seeds", "3"});
  CHECK(c.train_path.find("UD_English-EWT/en_ewt-ud-train.conllu") != std::string::npos);
  CHECK(c.dev_path.find("UD_English-EWT/en_ewt-ud-dev.conllu") != std::string::npos);
  CHECK(c.threads == 0);
  CHECK(c.runs().at(0).schedule.epochs == 60);
  CHECK(c.runs().at(0).schedule.patience == 10);
  CHECK(default_schedule(500).epochs == 60);
  CHECK(default_schedule(501).epochs == 20);
  CHECK(default_schedule(2000).patience == 6);
  CHECK(default_schedule(2001).epochs == 6);
  CHECK(default_schedule(8000).patience == 3);
  // No flags at all: the quick-start run, learned tables at 10x the model's rate.
  const Config q = parse({});
  CHECK(q.train_sizes == std::vector<int>{500});
  CHECK(q.variants == std::vector<std::string>{"none", "fixed", "shared"});
  CHECK(q.seeds == std::vector<int>{1});
  CHECK(q.bias_lr_mults == std::vector<double>{10.0});
  CHECK(q.runs().size() == 3);
  CHECK(q.report_path.empty());
  CHECK(parse({"--report", "runs.jsonl", "--out", "figs"}).report_path == "runs.jsonl");
  CHECK(q.checkpoint_path.empty());
  CHECK(q.overlap);
  const Config m = parse({"--save-checkpoint", "final.safetensors", "--no-overlap"});
  CHECK(m.checkpoint_path == "final.safetensors");
  CHECK_FALSE(m.overlap);
  CHECK_THROWS_WITH(parse({"--save-checkpoint"}), Catch::Contains("--save-checkpoint: missing value"));
}

TEST_CASE("the --full flag runs the whole grid", "[cli]") {
  const Config c = parse({"--full", "--threads", "2"});
  CHECK(c.train_sizes == std::vector<int>{500, 2000, 8000});
  CHECK(c.seeds == std::vector<int>{1, 2, 3});
  const auto runs = c.runs();
  // 3 sizes x (6 variants at x10 + shared at x1) x 3 seeds
  CHECK(runs.size() == 3 * 7 * 3);
  int shared10 = 0;
  for (const auto& r : runs) {
    if (r.bias_lr_mult != 10.0 && r.variant.has_bias) {
      CHECK(r.variant.name == "shared");
      CHECK(r.bias_lr_mult == 1.0);
      ++shared10;
    }
  }
  CHECK(shared10 == 9);
}

TEST_CASE("variants describe bucketing, tables and learnability", "[cli]") {
  const Variant none = variant_by_name("none");
  CHECK_FALSE(none.has_bias);
  CHECK(none.num_buckets() == 0);
  CHECK(none.bucket_labels().empty());
  const Variant fixed = variant_by_name("fixed");
  CHECK(fixed.has_bias);
  CHECK_FALSE(fixed.table_learnable);
  CHECK(fixed.initial_table() == std::vector<double>{0, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10});
  const Variant shared = variant_by_name("shared");
  CHECK(shared.num_buckets() == 11);
  CHECK_FALSE(shared.per_head);
  CHECK(shared.table_learnable);
  CHECK(shared.initial_table() == std::vector<double>(11, 0.0));
  CHECK(shared.bucket_labels().front() == "0");
  CHECK(shared.bucket_labels().back() == "10+");
  CHECK(variant_by_name("per-head").per_head);
  const Variant directed = variant_by_name("directed");
  CHECK(directed.num_buckets() == 25);
  CHECK(directed.bucketing->kind() == synattn::BucketKind::Directed);
  CHECK(directed.bucket_labels()[6] == "u1d1");
  CHECK(directed.bucket_labels()[24] == "u4+d4+");
  const Variant decay = variant_by_name("shared-decay");
  CHECK(decay.table_learnable);
  CHECK(decay.initial_table()[3] == -3.0);
  CHECK(std::string(table_init_name(decay.table_init)) == "decay");
}

TEST_CASE("bad command lines are clear errors with exit code 2 and the usage", "[cli]") {
  using Catch::Contains;
  CHECK_THROWS_WITH(parse({"--train-size", "5x", "--variants", "shared", "--seeds", "1"}),
                    Contains("--train-size: '5x' is not an integer"));
  CHECK_THROWS_WITH(parse({"--train-size", "0", "--variants", "shared", "--seeds", "1"}),
                    Contains("--train-size: 0 is out of range"));
  CHECK_THROWS_WITH(parse({"--train-size", "5", "--variants", "shared,bogus", "--seeds", "1"}),
                    Contains("unknown variant 'bogus', expected one of none, fixed"));
  CHECK_THROWS_WITH(parse({"--train-size", "5", "--variants", "shared", "--seeds", "1,,2"}),
                    Contains("--seeds: empty item"));
  CHECK_THROWS_WITH(parse({"--train-size", "5", "--variants", "shared,shared", "--seeds", "1"}),
                    Contains("'shared' is listed twice"));
  CHECK_THROWS_WITH(parse({"--train-size", "5", "--variants", "shared", "--seeds", "1", "--bias-lr-mult", "-1"}),
                    Contains("must be a positive number"));
  CHECK_THROWS_WITH(parse({"--train-size", "5", "--variants", "shared", "--seeds", "1", "--epochs"}),
                    Contains("--epochs: missing value"));
  CHECK_THROWS_WITH(parse({"--frobnicate"}), Contains("unknown argument '--frobnicate'"));
  CHECK_THROWS_WITH(parse({"--full", "--seeds", "1"}), Contains("--full sets"));

  const char* bad[] = {"train_deprel", "--threads", "zero"};
  std::ostringstream out, err;
  int code = -1;
  CHECK_FALSE(parse_cli_or_exit_code(3, bad, out, err, code).has_value());
  CHECK(code == 2);
  CHECK(err.str().rfind("train_deprel: --threads: 'zero' is not an integer", 0) == 0);
  CHECK(err.str().find("usage: train_deprel") != std::string::npos);
  CHECK(out.str().empty());

  const char* help[] = {"train_deprel", "--help"};
  std::ostringstream out2, err2;
  CHECK_FALSE(parse_cli_or_exit_code(2, help, out2, err2, code).has_value());
  CHECK(code == 0);
  CHECK(out2.str().rfind("usage: train_deprel", 0) == 0);
}

TEST_CASE("the MPI timeout flag sets how long a process waits for the others, 600 s by default", "[cli][mpi]") {
  using Catch::Contains;
  CHECK(parse({}).mpi_timeout_seconds == 600.0);
  CHECK(parse({"--mpi-timeout", "2.5"}).mpi_timeout_seconds == 2.5);
  CHECK_THROWS_WITH(parse({"--mpi-timeout", "0"}), Contains("--mpi-timeout: 0 must be a positive number"));
  CHECK_THROWS_WITH(parse({"--mpi-timeout", "soon"}), Contains("--mpi-timeout: 'soon' is not a number"));
  CHECK(std::string(usage()).find("--mpi-timeout S") != std::string::npos);
}

TEST_CASE("tree sources: files, fixed and per-epoch noise, the seed and the condition's name", "[cli][trees]") {
  const Config gold = parse({});
  CHECK(gold.gold_trees());
  CHECK(gold.trees_label() == "gold");
  CHECK(gold.tree_noise == 0.0);
  CHECK(gold.tree_noise_seed == 1);
  const Config c = parse({"--train-trees", "p/train.conllu", "--dev-trees", "p/dev.conllu", "--tree-noise", "0.25",
                          "--tree-noise-seed", "7", "--train-tree-noise", "0.1"});
  CHECK_FALSE(c.gold_trees());
  CHECK(c.train_trees_path == "p/train.conllu");
  CHECK(c.dev_trees_path == "p/dev.conllu");
  CHECK(c.tree_noise == 0.25);
  CHECK(c.tree_noise_seed == 7);
  CHECK(c.train_tree_noise == 0.1);
  CHECK(c.trees_label() == "train=train.conllu, dev=dev.conllu, noise=0.25, train-noise=0.1");
  CHECK(parse({"--tree-noise", "0.1"}).trees_label() == "noise=0.1");
  CHECK(parse({"--dev-trees", "d.conllu"}).trees_label() == "train=gold, dev=d.conllu");
  CHECK(parse({"--tree-noise", "0.1", "--trees-name", "UAS 90"}).trees_label() == "UAS 90");
  CHECK(parse({"--tree-noise", "0"}).gold_trees());
  CHECK(parse({"--tree-noise", "1"}).tree_noise == 1.0);
  CHECK_THROWS_WITH(parse({"--tree-noise", "1.5"}), "--tree-noise: 1.5 must be a probability in [0, 1]");
  CHECK_THROWS_WITH(parse({"--train-tree-noise", "-0.1"}), "--train-tree-noise: -0.1 must be a probability in [0, 1]");
  CHECK_THROWS_WITH(parse({"--tree-noise", "x"}), "--tree-noise: 'x' is not a number");
  CHECK_THROWS_WITH(parse({"--tree-noise-seed", "-1"}), Catch::Contains("--tree-noise-seed: -1 is out of range"));
  CHECK_THROWS_WITH(parse({"--trees-name", ""}), "--trees-name: the name is empty");
  CHECK_THROWS_WITH(parse({"--dev-trees"}), "--dev-trees: missing value");
}

TEST_CASE("tree views: the fusion variant and the view-tree flags", "[cli][trees][fusion]") {
  using Catch::Contains;
  const Config gold = parse({});
  CHECK(gold.train_view_trees.empty());
  CHECK(gold.dev_view_trees.empty());
  CHECK(gold.tree_views() == 1);
  const Config c =
      parse({"--variants", "shared,fusion", "--train-trees", "p/train.conllu", "--dev-trees", "p/dev.conllu",
             "--train-view-trees", "a/train.conllu,b/train.conllu", "--dev-view-trees", "a/dev.conllu,b/dev.conllu"});
  CHECK(c.train_view_trees == std::vector<std::string>{"a/train.conllu", "b/train.conllu"});
  CHECK(c.dev_view_trees == std::vector<std::string>{"a/dev.conllu", "b/dev.conllu"});
  CHECK(c.tree_views() == 3);
  CHECK(c.train_trees_path == "p/train.conllu");  // view 0 stays --train-trees
  const auto runs = c.runs();
  REQUIRE(runs.size() == 2);
  CHECK_FALSE(runs[0].variant.fusion);
  CHECK(runs[1].variant.fusion);
  CHECK(runs[1].bias_lr_mult == 10.0);  // a learned bias like shared's
  // Fusion alone, with one further view; a view may be gold (the corpus itself).
  const Config one = parse({"--variants", "fusion", "--train-view-trees", "t.conllu", "--dev-view-trees", "d.conllu"});
  CHECK(one.tree_views() == 2);
  CHECK(one.gold_trees());

  // Each refusal says what to do instead.
  CHECK_THROWS_AS(
      parse({"--variants", "fusion", "--train-view-trees", "a.conllu,b.conllu", "--dev-view-trees", "a.conllu"}),
      CliError);
  CHECK_THROWS_WITH(
      parse({"--variants", "fusion", "--train-view-trees", "a.conllu,b.conllu", "--dev-view-trees", "a.conllu"}),
      "--train-view-trees has 2 files but --dev-view-trees 1; give one train and one dev file per tree view");
  CHECK_THROWS_WITH(parse({"--variants", "fusion", "--dev-view-trees", "a.conllu"}),
                    Contains("--train-view-trees has 0 files but --dev-view-trees 1"));
  CHECK_THROWS_WITH(parse({"--variants", "shared", "--train-view-trees", "t.conllu", "--dev-view-trees", "d.conllu"}),
                    "--train-view-trees and --dev-view-trees are read by the fusion variant only; add fusion to "
                    "--variants (--full runs every variant but fusion)");
  // The default variants (none, fixed, shared) have no fusion either.
  CHECK_THROWS_WITH(parse({"--train-view-trees", "t.conllu", "--dev-view-trees", "d.conllu"}),
                    Contains("add fusion to --variants"));
  CHECK_THROWS_WITH(parse({"--variants", "none,fusion"}),
                    "--variants fusion fuses several trees per sentence: give the further views with "
                    "--train-view-trees and --dev-view-trees");
  CHECK_THROWS_AS(parse({"--variants", "fusion"}), CliError);
  for (const char* noise : {"--tree-noise", "--train-tree-noise"}) {
    INFO(noise);
    CHECK_THROWS_WITH(
        parse({"--variants", "fusion", "--train-view-trees", "t.conllu", "--dev-view-trees", "d.conllu", noise, "0.1"}),
        "--tree-noise and --train-tree-noise corrupt one tree per sentence; the fusion variant reads 2 (run it "
        "without tree noise)");
  }
  // Noise of 0 is no noise: accepted.
  CHECK(parse({"--variants", "fusion", "--train-view-trees", "t", "--dev-view-trees", "d", "--tree-noise", "0"})
            .tree_views() == 2);
  // The layer fuses at most kMaxTreeViews views: 7 further ones pass, 8 do not.
  const std::string seven = "1,2,3,4,5,6,7", eight = seven + ",8";
  CHECK(parse({"--variants", "fusion", "--train-view-trees", seven.c_str(), "--dev-view-trees", seven.c_str()})
            .tree_views() == synattn::kMaxTreeViews);
  CHECK_THROWS_WITH(
      parse({"--variants", "fusion", "--train-view-trees", eight.c_str(), "--dev-view-trees", eight.c_str()}),
      "--train-view-trees: at most 7 further views, got 8");
  // The lists are parsed like the others.
  CHECK_THROWS_WITH(parse({"--variants", "fusion", "--train-view-trees", "a,,b", "--dev-view-trees", "a,b"}),
                    Contains("--train-view-trees: empty item"));
  CHECK_THROWS_WITH(parse({"--dev-view-trees"}), "--dev-view-trees: missing value");
  CHECK(std::string(usage()).find("--train-view-trees LIST --dev-view-trees LIST") != std::string::npos);

  // --full leaves fusion out: it cannot run without view files.
  const Config full = parse({"--full"});
  CHECK(std::find(full.variants.begin(), full.variants.end(), "fusion") == full.variants.end());
  CHECK(full.variants.size() == variant_names().size() - 1);
  for (const auto& r : full.runs()) CHECK_FALSE(r.variant.fusion);
  CHECK(std::find(variant_names().begin(), variant_names().end(), "fusion") != variant_names().end());

  // The fusion variant is shared's bucketing and table, once per view.
  const Variant fusion = variant_by_name("fusion");
  const Variant shared = variant_by_name("shared");
  CHECK(fusion.fusion);
  CHECK_FALSE(shared.fusion);
  CHECK(fusion.has_bias);
  CHECK_FALSE(fusion.per_head);
  CHECK(fusion.table_learnable);
  REQUIRE(fusion.bucketing.has_value());
  CHECK(fusion.bucketing->kind() == shared.bucketing->kind());
  CHECK(fusion.bucketing->max_distance() == shared.bucketing->max_distance());
  CHECK(fusion.num_buckets() == 11);
  CHECK(fusion.bucket_labels() == shared.bucket_labels());
  CHECK(fusion.initial_table() == shared.initial_table());
  for (const char* other : {"none", "fixed", "per-head", "directed", "shared-decay"})
    CHECK_FALSE(variant_by_name(other).fusion);
}

TEST_CASE("packed documents: the flags, their label and their refusals", "[cli][packed]") {
  const Config plain = parse({});
  CHECK_FALSE(plain.pack_documents);
  CHECK_FALSE(plain.whole_documents());
  CHECK(plain.packing_label() == "sentences");
  const Config c = parse({"--variants", "shared", "--pack-documents", "--sentence-window", "0", "--root-links"});
  CHECK(c.pack_documents);
  CHECK(c.whole_documents());
  CHECK(c.sentence_window == 0);
  CHECK(c.packing_label() == "documents w=0, root links");
  CHECK(parse({"--variants", "shared", "--pack-documents"}).packing_label() == "documents w=1");
  const Config control = parse({"--document-subset"});
  CHECK(control.whole_documents());
  CHECK(control.packing_label() == "sentences");
  CHECK_THROWS_WITH(parse({"--sentence-window", "1"}), "--sentence-window is read with --pack-documents only");
  CHECK_THROWS_WITH(parse({"--root-links"}), "--root-links is read with --pack-documents only");
  CHECK_THROWS_WITH(parse({"--pack-documents"}), Catch::Contains("the none variant cannot be packed"));
  CHECK_THROWS_WITH(parse({"--pack-documents", "--full"}), Catch::Contains("the none variant cannot be packed"));
  CHECK_THROWS_WITH(parse({"--variants", "shared", "--pack-documents", "--sentence-window", "-1"}),
                    Catch::Contains("out of range"));
}

TEST_CASE("distillation: the teacher, its temperature and weight, the transfer set, and their refusals",
          "[cli][distill]") {
  const Config d = parse({"--variants", "none"});
  CHECK(d.distill_from.empty());
  CHECK(d.distill_temperature == 2.0);
  CHECK(d.distill_weight == 0.5);
  CHECK(d.transfer_size == 0);
  CHECK(d.best_model_path.empty());

  const Config c = parse({"--variants", "none", "--train-size", "2000", "--distill-from", "t.safetensors",
                          "--distill-temperature", "4", "--distill-weight", "0.9", "--transfer-size", "8000",
                          "--transfer-trees", "p.conllu", "--save-best", "b.safetensors"});
  CHECK(c.distill_from == "t.safetensors");
  CHECK(c.distill_temperature == 4.0);
  CHECK(c.distill_weight == 0.9);
  CHECK(c.transfer_size == 8000);
  CHECK(c.transfer_trees_path == "p.conllu");
  CHECK(c.best_model_path == "b.safetensors");
  CHECK(parse({"--save-best", "b.safetensors", "--full"}).best_model_path == "b.safetensors");

  for (const char* flag : {"--distill-temperature", "--distill-weight", "--transfer-size", "--transfer-trees"})
    CHECK_THROWS_WITH(parse({flag, "1"}), Catch::Contains(std::string(flag) + " is read with --distill-from only"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--full"}), Catch::Contains("does not go with --full"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--train-size", "500,2000"}),
                    Catch::Contains("give one --train-size"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--variants", "shared", "--pack-documents"}),
                    Catch::Contains("trains sentence by sentence"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--document-subset"}), Catch::Contains("trains sentence by sentence"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--variants", "none,fusion", "--train-view-trees", "a",
                           "--dev-view-trees", "b"}),
                    Catch::Contains("the fusion variant cannot be a student"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--transfer-trees", "p.conllu"}),
                    Catch::Contains("give --transfer-size too"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--distill-temperature", "0"}),
                    Catch::Contains("must be a positive number"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--distill-weight", "1.5"}),
                    Catch::Contains("must be a probability in [0, 1]"));
  CHECK_THROWS_WITH(parse({"--distill-from", "t", "--transfer-size", "-3"}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(parse({"--distill-from"}), Catch::Contains("--distill-from: missing value"));
}
