// train_deprel — the experiment's figures, built from run results:
// learned s * T per distance bucket (one series per layer, or per layer and
// head), learning curves (dev accuracy per epoch, one series per run), and
// the directed up x down grid of s * T as a heat map.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_FIGURES_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_FIGURES_HPP

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <synattn/error.hpp>

#include "results.hpp"
#include "svg_plot.hpp"

namespace train_deprel {

inline std::string run_name(const RunResult& r) {
  std::string s = r.variant;
  if (r.bias_lr_mult != 1.0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " x%g", r.bias_lr_mult);
    s += buf;
  }
  return s + " N=" + std::to_string(r.train_size) + " seed " + std::to_string(r.seed);
}

// s * T against the bucket, one series per layer (per layer and head when
// bias_rows > 1). Throws if a layer's values are not bias_rows * buckets.
inline LineChart learned_bias_chart(const RunResult& r) {
  LineChart c;
  c.title = "Learned s*T per distance bucket: " + run_name(r);
  c.x_label = "distance bucket";
  c.y_label = "s * T[bucket]";
  c.x_tick_labels = r.bucket_labels;
  const std::size_t buckets = r.bucket_labels.size();
  for (std::size_t layer = 0; layer < r.learned_bias.size(); ++layer) {
    const std::vector<double>& v = r.learned_bias[layer];
    if (r.bias_rows < 1 || v.size() != buckets * static_cast<std::size_t>(r.bias_rows))
      throw synattn::Error("learned_bias_chart: layer " + std::to_string(layer) + " has " +
                           std::to_string(v.size()) + " values, expected bias_rows * buckets = " +
                           std::to_string(r.bias_rows) + " * " + std::to_string(buckets));
    for (int row = 0; row < r.bias_rows; ++row) {
      Series s;
      s.name = "layer " + std::to_string(layer + 1) + (r.bias_rows > 1 ? " head " + std::to_string(row + 1) : "");
      for (std::size_t b = 0; b < buckets; ++b) {
        s.x.push_back(static_cast<double>(b));
        s.y.push_back(v[static_cast<std::size_t>(row) * buckets + b]);
      }
      c.series.push_back(std::move(s));
    }
  }
  return c;
}

// Dev accuracy per epoch, one series per run.
inline LineChart learning_curves_chart(const std::vector<RunResult>& runs, const std::string& title) {
  LineChart c;
  c.title = title;
  c.x_label = "epoch";
  c.y_label = "dev accuracy (%)";
  for (const RunResult& r : runs) {
    Series s;
    s.name = run_name(r);
    for (std::size_t e = 0; e < r.dev_history.size(); ++e) {
      s.x.push_back(static_cast<double>(e + 1));
      s.y.push_back(r.dev_history[e]);
    }
    c.series.push_back(std::move(s));
  }
  return c;
}

// The directed table of one layer as an up x down grid: bucket u*(M+1)+d
// goes to row u, column d, with M + 1 = sqrt(buckets). Throws unless the
// bucket count is a square and the layer has one row.
inline HeatMap directed_heat_map(const RunResult& r, std::size_t layer) {
  if (layer >= r.learned_bias.size())
    throw synattn::Error("directed_heat_map: layer " + std::to_string(layer) + " out of range [0, " +
                         std::to_string(r.learned_bias.size()) + ")");
  const std::vector<double>& v = r.learned_bias[layer];
  const std::size_t side = static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(v.size()))));
  if (side * side != v.size() || r.bias_rows != 1 || side < 1)
    throw synattn::Error("directed_heat_map: layer " + std::to_string(layer) + " has " + std::to_string(v.size()) +
                         " values in " + std::to_string(r.bias_rows) +
                         " rows, expected one row of (M+1)^2 directed buckets");
  HeatMap h;
  h.title = "Learned s*T (directed), layer " + std::to_string(layer + 1) + ": " + run_name(r);
  h.x_label = "steps down from the common ancestor";
  h.y_label = "steps up to the common ancestor";
  for (std::size_t k = 0; k < side; ++k) {
    const std::string label = std::to_string(k) + (k + 1 == side ? "+" : "");
    h.row_labels.push_back(label);
    h.col_labels.push_back(label);
    h.values.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(k * side),
                          v.begin() + static_cast<std::ptrdiff_t>((k + 1) * side));
  }
  return h;
}

// The gain over none against the dev trees' UAS, one series per variant
// and N, over the tree conditions whose train and dev trees are of one kind
// (TreeGrid::matched): a line through the gold trees and their corrupted
// copies (no tree file: --tree-noise only), in UAS order, then, after a
// break (NaN), an unconnected dot for each condition read from tree files
// (a parser's trees): random corruption and a parser's errors are two kinds
// of wrong tree, not points of one curve.
inline LineChart gain_vs_uas_chart(const std::vector<RunResult>& runs) {
  const TreeGrid grid(runs);
  LineChart c;
  c.title = "What the tree buys against the trees' accuracy (lines: random noise; dots: parser trees)";
  c.x_label = "UAS of the trees the bias reads (dev, %)";
  c.y_label = "dev accuracy gain over none (points)";
  // One series per recipe without its trees (variant, multiplier, batching)
  // and N, in first-appearance order; its points are its rows' conditions.
  std::vector<RunKey> recipes;
  for (const RunKey& k : grid.rows)
    if (std::find(recipes.begin(), recipes.end(), k.without_trees()) == recipes.end())
      recipes.push_back(k.without_trees());
  for (const RunKey& recipe : recipes)
    for (int n : grid.sizes) {
      std::vector<std::pair<double, double>> curve, parsed;
      for (const RunKey& k : grid.rows) {  // by condition
        if (k.without_trees() != recipe || !grid.matched.at(k.tree_part())) continue;
        const double g = grid.gain(k, n);
        if (std::isnan(g)) continue;
        (grid.from_files.at(k.tree_part()) ? parsed : curve).emplace_back(grid.dev_uas.at(k.tree_part()).mean, g);
      }
      if (curve.empty() && parsed.empty()) continue;
      std::sort(curve.begin(), curve.end());
      for (const auto& point : parsed) {
        curve.emplace_back(NAN, NAN);  // a break: each parser point stands alone
        curve.push_back(point);
      }
      const auto& points = curve;
      Series s;
      char buf[96];
      if (recipe.bias_lr_mult == 10.0)
        std::snprintf(buf, sizeof buf, " N=%d", n);
      else
        std::snprintf(buf, sizeof buf, " x%g N=%d", recipe.bias_lr_mult, n);
      s.name = recipe.variant + batching_suffix(recipe) + buf;
      for (const auto& [x, y] : points) {
        s.x.push_back(x);
        s.y.push_back(y);
      }
      c.series.push_back(std::move(s));
    }
  return c;
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_FIGURES_HPP
