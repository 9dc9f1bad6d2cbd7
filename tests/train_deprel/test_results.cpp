// train_deprel's run results: JSON lines round trip and the Markdown table.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "../../examples/train_deprel/report.hpp"
#include "../../examples/train_deprel/results.hpp"

using namespace train_deprel;

namespace {
RunResult run(const std::string& variant, int n, int seed, double acc, double mult = 1.0) {
  RunResult r;
  r.variant = variant;
  r.train_size = n;
  r.train_sentences = n - 8;
  r.seed = seed;
  r.bias_lr_mult = mult;
  r.best_dev_accuracy = acc;
  r.best_epoch = 3;
  r.epochs_run = 5;
  r.train_seconds = 12.5;
  r.train_tokens_per_second = 40000;
  r.dev_history = {50, 60, acc, acc - 1, acc - 2};
  r.learned_bias = {{0.5, -0.25}, {0.125, 0}};
  r.bucket_labels = {"0", "1+"};
  return r;
}
}  // namespace

TEST_CASE("a run result has exactly the contract's keys and round-trips through JSON lines", "[results]") {
  const RunResult r = run("shared", 500, 2, 70.5, 10);
  const nlohmann::json j = to_json(r);
  for (const char* key : {"variant",
                          "train_sentences",
                          "seed",
                          "bias_lr_mult",
                          "table_init",
                          "best_dev_accuracy",
                          "best_epoch",
                          "epochs_run",
                          "train_seconds",
                          "train_tokens_per_second",
                          "dev_history",
                          "learned_bias",
                          "bucket_labels",
                          "train_size",
                          "bias_rows",
                          "processes",
                          "reduce_wait_seconds",
                          "trees",
                          "train_trees",
                          "dev_trees",
                          "tree_noise",
                          "tree_noise_seed",
                          "train_tree_noise",
                          "train_tree_uas",
                          "dev_tree_uas",
                          "packing",
                          "subset",
                          "peak_resident_mb"})
    CHECK(j.contains(key));
  CHECK(j.size() == 28);  // dev_trees_label_accuracy only with a dev tree file
  CHECK_FALSE(j.contains("dev_trees_label_accuracy"));
  CHECK(j["learned_bias"][0][1] == -0.25);

  const std::string path = "test_results_runs.jsonl";
  std::remove(path.c_str());
  append_json_line(path, r);
  append_json_line(path, run("none", 500, 1, 65.0));
  const auto back = read_json_lines(path);
  REQUIRE(back.size() == 2);
  CHECK(to_json(back[0]) == j);
  CHECK(back[1].variant == "none");
  {
    // Lines written before the MPI fields existed still load (1 process).
    nlohmann::json old = j;
    old.erase("processes");
    old.erase("reduce_wait_seconds");
    const RunResult o = run_result_from_json(old);
    CHECK(o.processes == 1);
    CHECK(o.reduce_wait_seconds == 0.0);
    RunResult two = r;
    two.processes = 2;
    two.reduce_wait_seconds = 1.5;
    CHECK(run_result_from_json(to_json(two)).processes == 2);
    CHECK(run_result_from_json(to_json(two)).reduce_wait_seconds == 1.5);
    // ... and so do lines written before tree sources existed: gold trees.
    for (const char* key : {"trees", "train_trees", "dev_trees", "tree_noise", "tree_noise_seed", "train_tree_noise",
                            "train_tree_uas", "dev_tree_uas"})
      old.erase(key);
    const RunResult g = run_result_from_json(old);
    CHECK(g.trees == "gold");
    CHECK(g.train_trees == "gold");
    CHECK(g.dev_tree_uas == 100.0);
    CHECK(g.dev_trees_label_accuracy < 0);
    RunResult t = r;
    t.trees = "predicted";
    t.train_trees = "p-train.conllu";
    t.dev_trees = "p-dev.conllu";
    t.tree_noise = 0.1;
    t.tree_noise_seed = 9;
    t.train_tree_noise = 0.05;
    t.train_tree_uas = 83.5;
    t.dev_tree_uas = 84.25;
    t.dev_trees_label_accuracy = 80.5;
    CHECK(to_json(run_result_from_json(to_json(t))) == to_json(t));
    CHECK(to_json(t).size() == 29);
    // ... and before packed documents: sentence batches, no memory recorded.
    for (const char* key : {"packing", "subset", "peak_resident_mb"}) old.erase(key);
    const RunResult s = run_result_from_json(old);
    CHECK(s.packing == "sentences");
    CHECK(s.subset == "sentences");
    CHECK(s.peak_resident_mb == 0.0);
    RunResult p = r;
    p.packing = "documents w=1";
    p.subset = "documents";
    p.peak_resident_mb = 181.5;
    CHECK(to_json(run_result_from_json(to_json(p))) == to_json(p));
    // The table keeps the batchings apart, the multiplier after the variant.
    RunResult control = r;
    control.subset = "documents";
    const std::string table = markdown_results_table({r, p, control});
    CHECK_THAT(table, Catch::Contains("| shared (bias lr x10) | 70.50"));
    CHECK_THAT(table, Catch::Contains("| shared (bias lr x10), packed documents w=1 | 70.50"));
    CHECK_THAT(table, Catch::Contains("| shared (bias lr x10), documents subset | 70.50"));
  }
  {
    std::ofstream bad(path, std::ios::app);
    bad << "\n{\"variant\": \"x\"}\n";
  }
  CHECK_THROWS_WITH(read_json_lines(path), Catch::Contains("test_results_runs.jsonl:4: run result: key 'train_size' is missing"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(read_json_lines("/nonexistent/r.jsonl"), Catch::Contains("cannot open"));
}

TEST_CASE("tree fusion: views, view_trees, dev_view_uas and view_weights only with more than one view",
          "[results][trees][fusion]") {
  const RunResult one = run("shared", 500, 1, 70.5, 10);
  REQUIRE(one.views == 1);
  const nlohmann::json j1 = to_json(one);
  for (const char* key : {"views", "view_trees", "dev_view_uas", "view_weights"}) CHECK_FALSE(j1.contains(key));
  CHECK(j1.size() == 28);  // the single-view line is what it was before fusion

  RunResult f = run("fusion", 500, 1, 71.25, 10);
  f.bias_rows = 3;  // one table row per view
  f.views = 3;
  f.view_trees = {"gold-train.conllu", "other-train.conllu"};
  f.dev_view_uas = {84.25, 100.0, 91.5};
  f.view_weights = {{0.5, 0.25, 0.25}, {0.125, 0.375, 0.5}};  // exact in binary: compared with ==
  const nlohmann::json j = to_json(f);
  CHECK(j.size() == 32);
  CHECK(j["views"] == 3);
  CHECK(j["view_trees"] == nlohmann::json::array({"gold-train.conllu", "other-train.conllu"}));
  CHECK(j["dev_view_uas"][2] == 91.5);
  CHECK(j["view_weights"][1][2] == 0.5);

  // Through a JSON lines file, as --report reads it, next to an older line.
  const std::string path = "test_results_fusion.jsonl";
  std::remove(path.c_str());
  append_json_line(path, f);
  append_json_line(path, one);
  const auto back = read_json_lines(path);
  std::remove(path.c_str());
  REQUIRE(back.size() == 2);
  CHECK(to_json(back[0]) == j);
  CHECK(back[0].views == 3);
  CHECK(back[0].view_trees == f.view_trees);
  CHECK(back[0].dev_view_uas == f.dev_view_uas);
  CHECK(back[0].view_weights == f.view_weights);
  // A line written before fusion existed (no view keys) reads as one view.
  CHECK(back[1].views == 1);
  CHECK(back[1].view_trees.empty());
  CHECK(back[1].dev_view_uas.empty());
  CHECK(back[1].view_weights.empty());
  CHECK(to_json(back[1]) == j1);
  // A mistyped view key is named, like the others.
  nlohmann::json bad = j;
  bad["views"] = "three";
  CHECK_THROWS_WITH(run_result_from_json(bad), Catch::Contains("run result: key 'views' has the wrong type"));
}

TEST_CASE("mean and sample standard deviation", "[results]") {
  const MeanStd m = mean_std({1, 2, 3, 4});
  CHECK(m.mean == Approx(2.5).epsilon(1e-12));
  CHECK(m.std == Approx(std::sqrt(5.0 / 3.0)).epsilon(1e-12));
  CHECK(mean_std({7}).std == 0.0);
  CHECK(mean_std({}).count == 0);
}

TEST_CASE("the Markdown table: variants by N, mean ± std over seeds, gain over none", "[results]") {
  const std::vector<RunResult> runs{run("none", 500, 1, 60), run("none", 500, 2, 62), run("shared", 500, 1, 64),
                                    run("shared", 500, 2, 66), run("none", 2000, 1, 70), run("shared", 2000, 1, 71),
                                    run("shared", 500, 1, 67, 10)};
  const std::string t = markdown_results_table(runs);
  INFO(t);
  CHECK(t.find("| variant | N = 500 | N = 2000 | gain over none |\n|---|---|---|---|\n") == 0);
  CHECK(t.find("| none | 61.00 ± 1.41 (n=2) | 70.00 ± 0.00 (n=1) | — / — |") != std::string::npos);
  CHECK(t.find("| shared | 65.00 ± 1.41 (n=2) | 71.00 ± 0.00 (n=1) | +4.00 / +1.00 |") != std::string::npos);
  CHECK(t.find("| shared (bias lr x10) | 67.00 ± 0.00 (n=1) | — | +6.00 / — |") != std::string::npos);
}

namespace {
RunResult tree_run(const std::string& trees, const std::string& variant, int n, int seed, double acc, double uas) {
  RunResult r = run(variant, n, seed, acc, variant == "none" ? 1.0 : 10.0);
  r.trees = trees;
  r.train_trees = trees == "gold" ? "gold" : "t.conllu";
  r.dev_trees = r.train_trees;
  r.train_tree_uas = uas - 1;
  r.dev_tree_uas = uas;
  return r;
}
}  // namespace

TEST_CASE("the tree table: none once, each condition's variants, tree UAS, gain and the gold gain kept",
          "[results][trees]") {
  std::vector<RunResult> runs;
  for (int seed : {1, 2}) {
    runs.push_back(tree_run("gold", "none", 500, seed, 60.0 + seed, 100));
    runs.push_back(tree_run("predicted", "none", 500, seed, 60.0 + seed, 84));  // the same none: counted once
    runs.push_back(tree_run("predicted", "shared", 500, seed, 66.0 + seed, 84));
    runs.push_back(tree_run("gold", "shared", 500, seed, 70.0 + seed, 100));
  }
  runs.back().dev_trees_label_accuracy = -1;
  for (RunResult& r : runs)
    if (r.trees == "predicted") r.dev_trees = "p-dev.conllu";  // the dev trees of the condition
  runs[2].dev_trees_label_accuracy = 81.25;
  const std::string t = markdown_tree_table(runs);
  INFO(t);
  CHECK(t.find("| trees | tree UAS train / dev | variant | N = 500 | gain over none | gold gain kept |") == 0);
  CHECK(t.find("| any | — | none | 61.50 ± 0.71 (n=2) | — | — |") != std::string::npos);
  // gold first although it appeared second; predicted keeps (67.5 - 61.5) / (71.5 - 61.5) of the gold gain.
  const auto gold = t.find("| gold | 99.0 / 100.0 | shared | 71.50 ± 0.71 (n=2) | +10.00 | 1.00 |");
  const auto predicted = t.find("| predicted | 83.0 / 84.0 | shared | 67.50 ± 0.71 (n=2) | +6.00 | 0.60 |");
  CHECK(gold != std::string::npos);
  CHECK(predicted != std::string::npos);
  CHECK(gold < predicted);
  CHECK(t.find("The relations of p-dev.conllu itself (the parser's own DEPREL, base part, scored as the tagger): "
               "81.25 %") != std::string::npos);
  // Without gold rows nothing is kept to compare with.
  std::vector<RunResult> no_gold;
  for (const auto& r : runs)
    if (r.trees != "gold") no_gold.push_back(r);
  CHECK(markdown_tree_table(no_gold).find("| +6.00 | — |") != std::string::npos);

  // Fusion: kept against shared's gold gain, and a note with the views' UAS and the mean learned weights.
  for (int seed : {1, 2}) {
    RunResult r = tree_run("predicted", "fusion", 500, seed, 68.0 + seed, 84);
    r.views = 2;
    r.dev_view_uas = {84.0, 83.5};
    r.view_weights = {{0.5 + 0.1 * seed, 0.5 - 0.1 * seed}, {0.5, 0.5}};
    runs.push_back(r);
  }
  const std::string f = markdown_tree_table(runs);
  INFO(f);
  CHECK(f.find("| predicted | 83.0 / 84.0 | fusion | 69.50 ± 0.71 (n=2) | +8.00 | 0.80 |") != std::string::npos);
  CHECK(f.find("fusion in predicted: 2 tree views, dev UAS 84.00 83.50; learned weights (mean of 2 runs) layer 1: "
               "0.65 0.35, layer 2: 0.50 0.50 (its gold gain kept is against shared's)") != std::string::npos);
}

TEST_CASE("every table keys its rows by every setting of a run: packed runs are their own rows and say so",
          "[results][trees]") {
  // One recipe (shared, x10) under two tree conditions, batched three ways,
  // with the none of each batching; seeds 1 and 2.
  const auto batched = [](RunResult r, const std::string& packing, const std::string& subset) {
    r.packing = packing;
    r.subset = subset;
    return r;
  };
  std::vector<RunResult> runs;
  for (int seed : {1, 2}) {
    const double s = seed;
    runs.push_back(tree_run("gold", "none", 500, seed, 60 + s, 100));
    runs.push_back(batched(tree_run("gold", "none", 500, seed, 50 + s, 100), "documents w=1", "documents"));
    runs.push_back(tree_run("gold", "shared", 500, seed, 70 + s, 100));
    runs.push_back(batched(tree_run("gold", "shared", 500, seed, 56 + s, 100), "documents w=1", "documents"));
    runs.push_back(batched(tree_run("gold", "shared", 500, seed, 72 + s, 100), "sentences", "documents"));
    runs.push_back(tree_run("predicted", "shared", 500, seed, 66 + s, 84));
    runs.push_back(batched(tree_run("predicted", "shared", 500, seed, 54 + s, 84), "documents w=1", "documents"));
  }
  const std::string t = markdown_tree_table(runs);
  INFO(t);
  // Each batching its own row, named; gains against the none of the same batching.
  CHECK_THAT(t, Catch::Contains("| any | — | none | 61.50 ± 0.71 (n=2) | — | — |\n"));
  CHECK_THAT(t, Catch::Contains("| any | — | none, packed documents w=1 | 51.50 ± 0.71 (n=2) | — | — |\n"));
  CHECK_THAT(t, Catch::Contains("| gold | 99.0 / 100.0 | shared | 71.50 ± 0.71 (n=2) | +10.00 | 1.00 |\n"));
  CHECK_THAT(t, Catch::Contains(
                    "| gold | 99.0 / 100.0 | shared, packed documents w=1 | 57.50 ± 0.71 (n=2) | +6.00 | 1.00 |\n"));
  // No none ran on the document subset sentence by sentence: no gain to give.
  CHECK_THAT(t, Catch::Contains("| gold | 99.0 / 100.0 | shared, documents subset | 73.50 ± 0.71 (n=2) | — | — |\n"));
  CHECK_THAT(t, Catch::Contains("| predicted | 83.0 / 84.0 | shared | 67.50 ± 0.71 (n=2) | +6.00 | 0.60 |\n"));
  CHECK_THAT(t, Catch::Contains("| predicted | 83.0 / 84.0 | shared, packed documents w=1 | 55.50 ± 0.71 (n=2) | "
                                "+4.00 | 0.67 |\n"));
  CHECK_THAT(t, !Catch::Contains("(n=4)") && !Catch::Contains("(n=6)"));

  // Without tree conditions, the plain table keys its rows the same way.
  std::vector<RunResult> gold;
  for (const RunResult& r : runs)
    if (r.trees == "gold") gold.push_back(r);
  const std::string g = markdown_results_table(gold);
  INFO(g);
  CHECK_THAT(g, Catch::Contains("| none, packed documents w=1 | 51.50 ± 0.71 (n=2) | — |\n"));
  CHECK_THAT(g, Catch::Contains("| shared (bias lr x10), packed documents w=1 | 57.50 ± 0.71 (n=2) | +6.00 |\n"));
  CHECK_THAT(g, Catch::Contains("| shared (bias lr x10), documents subset | 73.50 ± 0.71 (n=2) | — |\n"));

  // Settings no column shows still part rows, and the rows say which.
  std::vector<RunResult> noisy;
  for (std::uint64_t noise_seed : {1, 7}) {
    RunResult r = tree_run("noise 0.1", "shared", 500, 1, 60.0 + static_cast<double>(noise_seed), 90);
    r.train_trees = r.dev_trees = "gold";
    r.tree_noise = 0.1;
    r.tree_noise_seed = noise_seed;
    noisy.push_back(r);
  }
  RunResult moved = noisy[0];  // the same tree noise from another folder's files: the same row
  moved.best_dev_accuracy = 63;
  noisy.push_back(moved);
  const std::string n = markdown_tree_table(noisy);
  INFO(n);
  CHECK_THAT(n, Catch::Contains("| shared [tree_noise_seed=1] | 62.00 ± 1.41 (n=2) |"));
  CHECK_THAT(n, Catch::Contains("| shared [tree_noise_seed=7] | 67.00 ± 0.00 (n=1) |"));
  RunResult file_a = tree_run("predicted", "shared", 500, 1, 66, 84), file_b = file_a;
  file_a.dev_trees = "/a/dev.conllu";
  file_b.dev_trees = "/b/dev.conllu";
  file_b.best_dev_accuracy = 68;
  CHECK_THAT(markdown_tree_table({file_a, file_b}), Catch::Contains("| shared | 67.00 ± 1.41 (n=2) |"));
  // Without noise the noise seed changes nothing: one row.
  RunResult quiet_a = tree_run("gold", "shared", 500, 1, 70, 100), quiet_b = quiet_a;
  quiet_b.tree_noise_seed = 5;
  quiet_b.best_dev_accuracy = 72;
  CHECK_THAT(markdown_results_table({quiet_a, quiet_b}),
             Catch::Contains("| shared (bias lr x10) | 71.00 ± 1.41 (n=2) |"));
  RunResult other_init = quiet_a;
  other_init.table_init = "decay";
  const std::string i = markdown_results_table({quiet_a, other_init});
  INFO(i);
  CHECK_THAT(i, Catch::Contains("| shared (bias lr x10) [table_init=zero] | 70.00 ± 0.00 (n=1) |"));
  CHECK_THAT(i, Catch::Contains("| shared (bias lr x10) [table_init=decay] | 70.00 ± 0.00 (n=1) |"));
}

TEST_CASE("distillation: a student's teacher and transfer set round-trip, key its rows, and fill their table",
          "[results][distill]") {
  const auto student = [](int seed, double acc, double teacher, int transfer) {
    RunResult r = run("none", 500, seed, acc);
    r.teacher = "runs/teacher-N500-seed" + std::to_string(seed) + ".safetensors";
    r.teacher_variant = "shared";
    r.teacher_trees = "gold";
    r.teacher_seed = seed;
    r.teacher_dev_accuracy = teacher;
    r.distill_temperature = 2;
    r.distill_weight = 0.5;
    r.transfer_size = transfer;
    r.transfer_sentences = transfer > 0 ? transfer - 3 : 0;
    r.transfer_trees = transfer > 0 ? "trees/en_ewt-train.seed1.conllu" : "gold";
    r.dev_tokens_per_second = 30000;
    r.teacher_dev_tokens_per_second = 20000;
    return r;
  };
  // JSON: the distillation keys only for a student, read back whole.
  const RunResult s = student(1, 66, 75, 1000);
  const nlohmann::json j = to_json(s);
  for (const char* key : {"teacher", "teacher_variant", "teacher_trees", "teacher_seed", "teacher_dev_accuracy",
                          "teacher_dev_tokens_per_second", "distill_temperature", "distill_weight", "transfer_size",
                          "transfer_sentences", "transfer_trees", "dev_tokens_per_second"})
    CHECK(j.contains(key));
  CHECK_FALSE(to_json(run("none", 500, 1, 60)).contains("teacher"));
  const RunResult back = run_result_from_json(j);
  CHECK(back.teacher == s.teacher);
  CHECK(back.teacher_dev_accuracy == 75);
  CHECK(back.transfer_sentences == 997);
  CHECK(back.transfer_trees == s.transfer_trees);
  CHECK(back.dev_tokens_per_second == 30000);
  CHECK(distill_label(back) == "teacher shared (gold) T=2 A=0.5 + 1000 transfer (trees en_ewt-train.seed1.conllu)");

  // A student is its own row, apart from plain none; its baseline is plain none.
  CHECK(run_key(s) != run_key(run("none", 500, 1, 60)));
  CHECK(run_key(s).baseline() == run_key(run("none", 500, 1, 60)));
  CHECK(run_key(s) != run_key(student(1, 66, 75, 0)));

  // The table: none 60 / 62 (mean 61), teacher 75 / 77 (76), students 66 / 70
  // (68): kept (68 - 61) / (76 - 61) = 0.47; inference 1.5x.
  std::vector<RunResult> runs{run("none", 500, 1, 60), run("none", 500, 2, 62), student(1, 66, 75, 1000),
                              student(2, 70, 77, 1000), student(1, 64, 75, 0)};
  const std::string t = markdown_distillation_table(runs);
  INFO(t);
  CHECK_THAT(t, Catch::Contains("| 500 | shared (gold) | T=2 A=0.5, labelled + 1000 transfer | 61.00 ± 1.41 (n=2) | "
                                "76.00 ± 1.41 (n=2) | 68.00 ± 2.83 (n=2) | 68.00 | 0.47 | 1.50x |\n"));
  CHECK_THAT(t, Catch::Contains("| 500 | shared (gold) | T=2 A=0.5, labelled | 61.00 ± 1.41 (n=2) | 75.00 ± 0.00 (n=1) | "
                                "64.00 ± 0.00 (n=1) | 64.00 | 0.21 | 1.50x |\n"));
  CHECK_THAT(results_table(runs), Catch::Contains("Distillation:"));
  CHECK_THAT(results_table({run("none", 500, 1, 60)}), !Catch::Contains("Distillation:"));
  // In the grid's table the student has a gain over none (plain none has none).
  CHECK_THAT(markdown_results_table(runs), Catch::Contains("| none | 61.00 ± 1.41 (n=2) | — |\n"));
  CHECK_THAT(markdown_results_table(runs), Catch::Contains("68.00 ± 2.83 (n=2) | +7.00 |"));
}

TEST_CASE("a cell over four or more seeds gives the median beside the mean", "[results]") {
  CHECK(seeds_cell(mean_std({1, 2, 3})) == "2.00 ± 1.00 (n=3)");
  CHECK(seeds_cell(mean_std({81, 81.5, 76.85, 81.2, 80.9})) == "80.29 ± 1.94 (n=5, median 81.00)");
  CHECK(mean_std({4, 1, 3, 2}).median == 2.5);
  CHECK(std::isnan(mean_std({}).median));
}

TEST_CASE("a run result's numbers are read whole: an integer key holding 2.7 or 1e300 is refused by name",
          "[results]") {
  RunResult r;
  r.variant = "shared";
  r.train_size = 500;
  const nlohmann::json j = to_json(r);
  REQUIRE(run_result_from_json(j).train_size == 500);
  // get_to read 2.7 as 2, and cast 1e300 to int with undefined behaviour.
  for (const char* key : {"train_size", "seed", "best_epoch", "epochs_run", "bias_rows", "processes"})
    for (const nlohmann::json& bad : {nlohmann::json(2.7), nlohmann::json(1e300),
                                      nlohmann::json(99999999999LL)}) {
      nlohmann::json edited = j;
      edited[key] = bad;
      CHECK_THROWS_WITH(run_result_from_json(edited),
                        Catch::Contains(std::string("run result: key '") + key + "' is '") &&
                            Catch::Contains("expected an integer in ["));
    }
  nlohmann::json text = j;
  text["seed"] = "5";
  CHECK_THROWS_WITH(run_result_from_json(text), Catch::Contains("run result: key 'seed' has the wrong type"));
  nlohmann::json seed = j;
  seed["tree_noise_seed"] = -1;
  CHECK_THROWS_WITH(run_result_from_json(seed), Catch::Contains("run result: key 'tree_noise_seed' is '-1'"));
  nlohmann::json huge = j;
  huge["best_dev_accuracy"] = 1e308;
  huge["best_dev_accuracy"] = huge["best_dev_accuracy"].get<double>() * 10;  // inf: no JSON text holds it
  CHECK_THROWS_WITH(run_result_from_json(huge), Catch::Contains("run result: key 'best_dev_accuracy' is"));
}
