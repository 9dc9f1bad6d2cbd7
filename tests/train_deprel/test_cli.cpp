// train_deprel's command line and variant descriptions.
#include <catch2/catch.hpp>

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
