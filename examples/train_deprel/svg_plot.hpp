// train_deprel — SVG figures written by the example itself (no Python):
// a line chart (several series, axes, ticks, axis labels, legend, title) and
// a heat map (cells coloured on a diverging scale, cell labels, colour bar).
//
// Used for the learned s * T per distance bucket of each layer, the seed
// design's figure, the learning curves (dev accuracy per epoch per variant)
// and the directed up x down grid of s * T.
//
// Robustness: every text is XML-escaped; non-finite values are skipped (a
// NaN breaks a line into segments, it never reaches a coordinate); a
// constant series or a single point gets a range widened around it, so no
// division by a zero span can produce NaN coordinates.
#ifndef SYNATTN_EXAMPLES_TRAIN_DEPREL_SVG_PLOT_HPP
#define SYNATTN_EXAMPLES_TRAIN_DEPREL_SVG_PLOT_HPP

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <synattn/error.hpp>
#include <synattn/io/atomic_file.hpp>

namespace train_deprel {

inline std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control bytes other than tab/newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out += c;
    }
  }
  return out;
}

namespace svg_detail {

inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

inline std::string tick_text(double v, double step) {
  char buf[32];
  const int decimals = step >= 1.0 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return buf;
}

struct Range {
  double lo, hi;
};

// Finite [lo, hi] of `values`, widened when empty or constant.
inline Range finite_range(const std::vector<double>& values) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values)
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (!(lo <= hi)) return {0.0, 1.0};
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(lo))) {
    const double pad = std::max(0.5, std::fabs(lo) * 0.05);
    return {lo - pad, hi + pad};
  }
  return {lo, hi};
}

// "Nice" ticks (1, 2, 5 x 10^k) covering [lo, hi], about `target` of them;
// the range is extended to the outer ticks.
inline std::vector<double> nice_ticks(Range& r, int target = 6) {
  const double raw = (r.hi - r.lo) / std::max(1, target - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  r.lo = std::floor(r.lo / step + 1e-9) * step;
  r.hi = std::ceil(r.hi / step - 1e-9) * step;
  std::vector<double> t;
  for (double v = r.lo; v <= r.hi + step * 1e-6; v += step) t.push_back(v);
  return t;
}

constexpr std::size_t kPaletteSize = 10;
inline const char* palette(std::size_t i) {
  static const char* const colours[kPaletteSize] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return colours[i % kPaletteSize];
}
// Series past the palette reuse its colours, so they are drawn another way:
// dashed lines and hollow points (round r: r = 0 solid, 1 dashed, ...).
inline std::string stroke_style(std::size_t series) {
  return series / kPaletteSize % 2 ? " stroke-dasharray=\"6 3\"" : "";
}
inline std::string point_style(std::size_t series, const std::string& colour) {
  return series / kPaletteSize % 2 ? "fill=\"white\" stroke=\"" + colour + "\" stroke-width=\"1.5\""
                                   : "fill=\"" + colour + "\"";
}

inline std::string header(int width, int height, const std::string& title) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         std::to_string(width) + "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
         std::to_string(width) + " " + std::to_string(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
         "<text x=\"" + std::to_string(width / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
         xml_escape(title) + "</text>\n";
}

}  // namespace svg_detail

struct Series {
  std::string name;
  std::vector<double> x, y;  // equal lengths
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  // When not empty: categorical x axis, tick k (at x = k) labelled x_tick_labels[k].
  std::vector<std::string> x_tick_labels;
  int width = 720, height = 440;
};

inline std::string render_line_chart(const LineChart& chart) {
  using namespace svg_detail;
  std::vector<double> xs, ys;
  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    const Series& se = chart.series[s];
    if (se.x.size() != se.y.size())
      throw synattn::Error("render_line_chart: series " + std::to_string(s) + " ('" + se.name + "') has " +
                           std::to_string(se.x.size()) + " x values and " + std::to_string(se.y.size()) +
                           " y values; expected equal counts");
    for (std::size_t i = 0; i < se.x.size(); ++i)
      if (std::isfinite(se.x[i]) && std::isfinite(se.y[i])) {
        xs.push_back(se.x[i]);
        ys.push_back(se.y[i]);
      }
  }
  // The legend sits right of the plot; widen the picture rather than clip a
  // long series name (about 7 px per character at font-size 12).
  std::size_t longest = 0;
  for (const Series& se : chart.series) longest = std::max(longest, se.name.size());
  const double left = 70, top = 40, bottom = 60;
  const double right = std::max(170.0, 45.0 + 7.0 * static_cast<double>(longest));
  const double pw = chart.width - left - 170.0, ph = chart.height - top - bottom;
  const int width = static_cast<int>(left + pw + right);
  Range rx = finite_range(xs), ry = finite_range(ys);
  std::vector<double> xt;
  if (chart.x_tick_labels.empty()) {
    xt = nice_ticks(rx, 8);
  } else {
    rx = {-0.5, static_cast<double>(chart.x_tick_labels.size()) - 0.5};
    for (std::size_t k = 0; k < chart.x_tick_labels.size(); ++k) xt.push_back(static_cast<double>(k));
  }
  const std::vector<double> yt = nice_ticks(ry, 6);
  const auto px = [&](double x) { return left + (x - rx.lo) / (rx.hi - rx.lo) * pw; };
  const auto py = [&](double y) { return top + ph - (y - ry.lo) / (ry.hi - ry.lo) * ph; };

  std::string out = header(width, chart.height, chart.title);
  out += "<g stroke=\"#ccc\" stroke-width=\"1\">\n";
  for (double y : yt)
    out += "<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) + "\" y1=\"" + num(py(y)) + "\" y2=\"" + num(py(y)) +
           "\"/>\n";
  out += "</g>\n<g stroke=\"black\" stroke-width=\"1\">\n<line x1=\"" + num(left) + "\" x2=\"" + num(left + pw) +
         "\" y1=\"" + num(top + ph) + "\" y2=\"" + num(top + ph) + "\"/>\n<line x1=\"" + num(left) + "\" x2=\"" +
         num(left) + "\" y1=\"" + num(top) + "\" y2=\"" + num(top + ph) + "\"/>\n</g>\n";
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1.0, ystep = yt.size() > 1 ? yt[1] - yt[0] : 1.0;
  for (std::size_t k = 0; k < xt.size(); ++k) {
    const std::string label = chart.x_tick_labels.empty() ? tick_text(xt[k], xstep) : chart.x_tick_labels[k];
    out += "<text x=\"" + num(px(xt[k])) + "\" y=\"" + num(top + ph + 16) + "\" text-anchor=\"middle\">" +
           xml_escape(label) + "</text>\n";
  }
  for (double y : yt)
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(py(y) + 4) + "\" text-anchor=\"end\">" +
           xml_escape(tick_text(y, ystep)) + "</text>\n";
  out += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(chart.height - 14.0) +
         "\" text-anchor=\"middle\">" + xml_escape(chart.x_label) + "</text>\n";
  out += "<text transform=\"translate(18 " + num(top + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         xml_escape(chart.y_label) + "</text>\n";

  for (std::size_t s = 0; s < chart.series.size(); ++s) {
    const Series& se = chart.series[s];
    const std::string colour = palette(s);
    out += "<g class=\"series\" data-name=\"" + xml_escape(se.name) + "\">\n";
    std::string points;
    const auto flush = [&] {
      if (!points.empty())
        out += "<polyline fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"2\"" + stroke_style(s) + " points=\"" +
               points + "\"/>\n";
      points.clear();
    };
    for (std::size_t i = 0; i < se.x.size(); ++i) {
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) {
        flush();
        continue;
      }
      points += (points.empty() ? "" : " ") + num(px(se.x[i])) + "," + num(py(se.y[i]));
      out += "<circle cx=\"" + num(px(se.x[i])) + "\" cy=\"" + num(py(se.y[i])) + "\" r=\"3\" " +
             point_style(s, colour) + "/>\n";
    }
    flush();
    out += "</g>\n";
    const double ly = top + 10 + 18.0 * static_cast<double>(s);
    out += "<line x1=\"" + num(left + pw + 14) + "\" x2=\"" + num(left + pw + 34) + "\" y1=\"" + num(ly) + "\" y2=\"" +
           num(ly) + "\" stroke=\"" + colour + "\" stroke-width=\"2\"" + stroke_style(s) + "/>\n<circle cx=\"" +
           num(left + pw + 24) + "\" cy=\"" + num(ly) + "\" r=\"3\" " + point_style(s, colour) + "/>\n<text x=\"" +
           num(left + pw + 40) + "\" y=\"" + num(ly + 4) + "\">" + xml_escape(se.name) + "</text>\n";
  }
  return out + "</svg>\n";
}

struct HeatMap {
  std::string title, x_label, y_label;
  std::vector<std::string> row_labels, col_labels;
  std::vector<std::vector<double>> values;  // values[row][col]
  int cell = 56;
};

// Diverging blue (negative) - white (0) - red (positive), symmetric around 0.
inline std::string heat_colour(double v, double max_abs) {
  if (!std::isfinite(v)) return "#dddddd";
  const double t = max_abs > 0 ? std::max(-1.0, std::min(1.0, v / max_abs)) : 0.0;
  const auto c = [](double a) { return static_cast<int>(std::lround(255.0 * a)); };
  int r = 255, g = 255, b = 255;
  if (t < 0) {
    r = c(1 + 0.85 * t);
    g = c(1 + 0.55 * t);
  } else {
    g = c(1 - 0.75 * t);
    b = c(1 - 0.85 * t);
  }
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r & 255, g & 255, b & 255);
  return buf;
}

inline std::string render_heat_map(const HeatMap& map) {
  using namespace svg_detail;
  const std::size_t rows = map.values.size();
  const std::size_t cols = rows ? map.values[0].size() : 0;
  for (std::size_t r = 0; r < rows; ++r)
    if (map.values[r].size() != cols)
      throw synattn::Error("render_heat_map: row " + std::to_string(r) + " has " +
                           std::to_string(map.values[r].size()) + " values, expected " + std::to_string(cols));
  if (map.row_labels.size() != rows || map.col_labels.size() != cols)
    throw synattn::Error("render_heat_map: " + std::to_string(map.row_labels.size()) + " row and " +
                         std::to_string(map.col_labels.size()) + " column labels for a " +
                         synattn::shape_text(rows, cols) + " grid; expected one per row and column");
  double max_abs = 0.0;
  for (const auto& row : map.values)
    for (double v : row)
      if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(v));
  const double left = 90, top = 50, cs = map.cell;
  const int width = static_cast<int>(left + cs * static_cast<double>(cols) + 110);
  const int height = static_cast<int>(top + cs * static_cast<double>(rows) + 60);
  std::string out = header(width, height, map.title);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = map.values[r][c];
      const double x = left + cs * static_cast<double>(c), y = top + cs * static_cast<double>(r);
      out += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(cs) + "\" height=\"" + num(cs) +
             "\" fill=\"" + heat_colour(v, max_abs) + "\" stroke=\"white\"/>\n";
      char label[32];
      if (std::isfinite(v)) std::snprintf(label, sizeof label, "%.2f", v);
      else std::snprintf(label, sizeof label, "n/a");
      out += "<text x=\"" + num(x + cs / 2) + "\" y=\"" + num(y + cs / 2 + 4) +
             "\" text-anchor=\"middle\" font-size=\"11\">" + label + "</text>\n";
    }
    out += "<text x=\"" + num(left - 6) + "\" y=\"" + num(top + cs * (static_cast<double>(r) + 0.5) + 4) +
           "\" text-anchor=\"end\">" + xml_escape(map.row_labels[r]) + "</text>\n";
  }
  for (std::size_t c = 0; c < cols; ++c)
    out += "<text x=\"" + num(left + cs * (static_cast<double>(c) + 0.5)) + "\" y=\"" +
           num(top + cs * static_cast<double>(rows) + 16) + "\" text-anchor=\"middle\">" +
           xml_escape(map.col_labels[c]) + "</text>\n";
  out += "<text x=\"" + num(left + cs * static_cast<double>(cols) / 2) + "\" y=\"" + num(height - 12.0) +
         "\" text-anchor=\"middle\">" + xml_escape(map.x_label) + "</text>\n";
  out += "<text transform=\"translate(16 " + num(top + cs * static_cast<double>(rows) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + xml_escape(map.y_label) + "</text>\n";
  // Colour bar: -max .. +max in 11 steps.
  const double bx = left + cs * static_cast<double>(cols) + 30, bh = std::max(cs * static_cast<double>(rows), 110.0);
  for (int k = 0; k < 11; ++k) {
    const double v = max_abs * (1.0 - 2.0 * k / 10.0);
    out += "<rect x=\"" + num(bx) + "\" y=\"" + num(top + bh * k / 11.0) + "\" width=\"16\" height=\"" +
           num(bh / 11.0 + 0.5) + "\" fill=\"" + heat_colour(v, max_abs) + "\"/>\n";
  }
  char lo[32], hi[32];
  std::snprintf(hi, sizeof hi, "%+.2f", max_abs);
  std::snprintf(lo, sizeof lo, "%+.2f", -max_abs);
  out += "<text x=\"" + num(bx + 20) + "\" y=\"" + num(top + 10) + "\">" + hi + "</text>\n<text x=\"" +
         num(bx + 20) + "\" y=\"" + num(top + bh) + "\">" + lo + "</text>\n";
  return out + "</svg>\n";
}

// Through io/atomic_file.hpp, as every file the library writes: a full disk
// leaves the previous figure or table, not a truncated one.
inline void write_text_file(const std::string& path, const std::string& text) {
  synattn::write_file_atomically(path, text, "write_text_file");
}

}  // namespace train_deprel

#endif  // SYNATTN_EXAMPLES_TRAIN_DEPREL_SVG_PLOT_HPP
