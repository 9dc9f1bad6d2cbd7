// train_deprel's figures from run results.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "../../examples/train_deprel/figures.hpp"

using namespace train_deprel;

namespace {
RunResult result(const std::string& variant, int rows, int buckets) {
  RunResult r;
  r.variant = variant;
  r.train_size = 500;
  r.seed = 2;
  r.bias_rows = rows;
  for (int b = 0; b < buckets; ++b) r.bucket_labels.push_back("b" + std::to_string(b));
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<double> v;
    for (int k = 0; k < rows * buckets; ++k) v.push_back(-0.5 * k + layer);
    r.learned_bias.push_back(v);
  }
  r.dev_history = {40, 50, 55};
  return r;
}
}  // namespace

TEST_CASE("learned bias: one series per layer, or per layer and head", "[figures]") {
  const LineChart shared = learned_bias_chart(result("shared", 1, 11));
  REQUIRE(shared.series.size() == 2);
  CHECK(shared.series[1].name == "layer 2");
  CHECK(shared.series[1].y[3] == -0.5 * 3 + 1);
  CHECK(shared.x_tick_labels.size() == 11);
  CHECK(shared.title.find("shared N=500 seed 2") != std::string::npos);
  const LineChart heads = learned_bias_chart(result("per-head", 4, 11));
  REQUIRE(heads.series.size() == 8);
  CHECK(heads.series[5].name == "layer 2 head 2");
  CHECK(heads.series[5].y[0] == -0.5 * 11 + 1);  // row 1 starts at value 11
  RunResult bad = result("shared", 1, 11);
  bad.learned_bias[1].pop_back();
  CHECK_THROWS_WITH(learned_bias_chart(bad), Catch::Contains("layer 1 has 10 values, expected bias_rows * buckets = 1 * 11"));
}

TEST_CASE("learning curves: one series per run, epochs from 1", "[figures]") {
  RunResult a = result("none", 1, 0), b = result("shared", 1, 11);
  b.bias_lr_mult = 10;
  const LineChart c = learning_curves_chart({a, b}, "curves");
  REQUIRE(c.series.size() == 2);
  CHECK(c.series[1].name == "shared x10 N=500 seed 2");
  CHECK(c.series[0].x == std::vector<double>{1, 2, 3});
  CHECK(c.series[0].y == std::vector<double>{40, 50, 55});
  CHECK(render_line_chart(c).find("data-name=\"shared x10 N=500 seed 2\"") != std::string::npos);
}

TEST_CASE("series past the palette's colours are dashed with hollow points", "[figures]") {
  std::vector<RunResult> runs;
  for (int k = 0; k < 12; ++k) {
    runs.push_back(result("shared", 1, 11));
    runs.back().seed = k;
  }
  const std::string svg = render_line_chart(learning_curves_chart(runs, "curves"));
  // One <g> per series; the first ten solid, the next two dashed and hollow.
  const auto group = [&](int k) {
    const std::size_t at = svg.find("data-name=\"shared N=500 seed " + std::to_string(k) + "\"");
    REQUIRE(at != std::string::npos);
    return svg.substr(at, svg.find("</g>", at) - at);
  };
  CHECK(group(0).find("stroke-dasharray") == std::string::npos);
  CHECK(group(9).find("fill=\"white\"") == std::string::npos);
  CHECK(group(10).find("stroke-dasharray=\"6 3\"") != std::string::npos);
  CHECK(group(11).find("fill=\"white\" stroke=") != std::string::npos);
}

TEST_CASE("directed heat map: bucket u*(M+1)+d at row u, column d", "[figures]") {
  const HeatMap h = directed_heat_map(result("directed", 1, 25), 1);
  REQUIRE(h.values.size() == 5);
  CHECK(h.values[2][3] == -0.5 * 13 + 1);
  CHECK(h.row_labels.back() == "4+");
  CHECK(render_heat_map(h).find("</svg>") != std::string::npos);
  CHECK_THROWS_WITH(directed_heat_map(result("directed", 1, 25), 2), Catch::Contains("layer 2 out of range [0, 2)"));
  CHECK_THROWS_WITH(directed_heat_map(result("shared", 1, 11), 0), Catch::Contains("expected one row of (M+1)^2"));
}

TEST_CASE("gain against tree UAS: one series per variant and N over the matched conditions, in UAS order",
          "[figures][trees]") {
  std::vector<RunResult> runs;
  const auto add = [&](const std::string& trees, const std::string& variant, int n, double acc, double uas,
                       double train_noise = 0) {
    RunResult r = result(variant, 1, 11);
    r.trees = trees;
    r.train_size = n;
    r.bias_lr_mult = variant == "none" ? 1.0 : 10.0;
    r.best_dev_accuracy = acc;
    r.dev_tree_uas = uas;
    r.train_trees = r.dev_trees = trees == "gold" ? "gold" : "t.conllu";
    r.train_tree_noise = train_noise;
    runs.push_back(r);
  };
  for (int n : {500, 2000}) {
    add("gold", "none", n, 60, 100);
    add("noise 0.2", "shared", n, 65, 80);
    add("gold", "shared", n, 70, 100);
    add("predicted", "shared", n, 68, 85);
    add("predicted + epoch noise", "shared", n, 69, 85, 0.1);  // not matched: no point
  }
  for (RunResult& r : runs)
    if (r.trees == "noise 0.2") r.train_trees = r.dev_trees = "gold";  // noise on gold trees: no tree file
  const LineChart c = gain_vs_uas_chart(runs);
  REQUIRE(c.series.size() == 2);
  CHECK(c.series[0].name == "shared N=500");
  CHECK(c.series[1].name == "shared N=2000");
  // The noise curve in UAS order, then a break, then the parser's trees as a lone dot.
  REQUIRE(c.series[0].x.size() == 4);
  CHECK(c.series[0].x[0] == 80);
  CHECK(c.series[0].x[1] == 100);
  CHECK(std::isnan(c.series[0].x[2]));
  CHECK(c.series[0].x[3] == 85);
  CHECK(c.series[0].y[0] == 5);
  CHECK(c.series[0].y[1] == 10);
  CHECK(c.series[0].y[3] == 8);

  // Packed runs are a series of their own, named so, against the packed none.
  for (RunResult r : std::vector<RunResult>(runs)) {
    if (r.train_size != 500 || r.trees == "predicted + epoch noise") continue;
    r.packing = "documents w=1";
    r.subset = "documents";
    r.best_dev_accuracy -= r.variant == "none" ? 10 : 12;
    runs.push_back(r);
  }
  const LineChart p = gain_vs_uas_chart(runs);
  REQUIRE(p.series.size() == 3);
  CHECK(p.series[0].name == "shared N=500");
  CHECK(p.series[0].y[1] == 10);
  CHECK(p.series[2].name == "shared, packed documents w=1 N=500");
  REQUIRE(p.series[2].y.size() == 4);
  CHECK(p.series[2].y[0] == 3);
  CHECK(p.series[2].y[1] == 8);
  CHECK(p.series[2].y[3] == 6);
}
