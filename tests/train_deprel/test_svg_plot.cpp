// train_deprel's SVG figures: well-formed XML, escaped text, every series
// present, no NaN coordinates, single points and constant series handled.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../examples/train_deprel/svg_plot.hpp"

using namespace train_deprel;

namespace {

// A small well-formedness check: tags balance and nest, attribute values are
// quoted, and text has no raw '<' or unescaped '&'. (check_svg.py parses the
// same figures with Python's xml.etree as a second opinion.)
std::string xml_problem(const std::string& s) {
  std::vector<std::string> open;
  std::size_t i = 0;
  if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
  while (i < s.size()) {
    if (s[i] == '&') {
      const std::size_t semi = s.find(';', i);
      const std::string ent = s.substr(i, semi == std::string::npos ? 8 : semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
        return "bad entity at " + std::to_string(i) + ": " + ent;
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      ++i;
      continue;
    }
    const std::size_t end = s.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, end - i - 1);
    // Quotes inside the tag must pair up, and no '<' may appear inside.
    if (tag.find('<') != std::string::npos) return "'<' inside tag at " + std::to_string(i);
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return "unbalanced quotes at " + std::to_string(i);
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "closing </" + name + "> does not match";
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return {};
}

bool has_nan(const std::string& s) {
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos;
}

LineChart curves() {
  LineChart c;
  c.title = "Dev accuracy <per> epoch & variant";
  c.x_label = "epoch";
  c.y_label = "dev accuracy (%)";
  c.series.push_back({"none", {1, 2, 3, 4}, {40, 55, 61, 63.5}});
  c.series.push_back({"shared \"x10\"", {1, 2, 3, 4}, {42, 57, NAN, 66}});
  c.series.push_back({"directed", {1, 2, 3}, {41, 58, 65}});
  return c;
}

void maybe_write(const std::string& name, const std::string& svg) {
  if (const char* dir = std::getenv("SYNATTN_SVG_DIR")) write_text_file(std::string(dir) + "/" + name, svg);
}

}  // namespace

TEST_CASE("xml_escape escapes markup and drops control bytes", "[svg]") {
  CHECK(xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;");
  CHECK(xml_escape(std::string("x\x01y", 3)) == "x y");
  CHECK(xml_problem(xml_escape("<&>\"'")).empty());
}

TEST_CASE("the well-formedness check catches broken XML", "[svg]") {
  CHECK_FALSE(xml_problem("<svg><g></svg>").empty());
  CHECK_FALSE(xml_problem("<svg>a & b</svg>").empty());
  CHECK_FALSE(xml_problem("<svg x=\"1></svg>").empty());
  CHECK(xml_problem("<svg><g a=\"1\"/><text>&lt;</text></svg>").empty());
}

TEST_CASE("a line chart is well-formed, escaped, has every series and legend, no NaN", "[svg][svg-files]") {
  const std::string svg = render_line_chart(curves());
  maybe_write("curves.svg", svg);
  CHECK(xml_problem(svg).empty());
  CHECK_FALSE(has_nan(svg));
  CHECK(svg.find("Dev accuracy &lt;per&gt; epoch &amp; variant") != std::string::npos);
  CHECK(svg.find("data-name=\"none\"") != std::string::npos);
  CHECK(svg.find("data-name=\"shared &quot;x10&quot;\"") != std::string::npos);
  CHECK(svg.find(">directed</text>") != std::string::npos);  // legend
  CHECK(svg.find(">dev accuracy (%)</text>") != std::string::npos);
  // The NaN splits "shared" into two polylines: 2 + 1 + 1.
  std::size_t lines = 0;
  for (std::size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  CHECK(lines == 4);
  CHECK_THROWS_WITH(render_line_chart(LineChart{"t", "x", "y", {{"bad", {1, 2}, {1}}}, {}, 720, 440}),
                    Catch::Contains("series 0 ('bad') has 2 x values and 1 y values"));
}

TEST_CASE("a single point, a constant series and an empty chart give finite coordinates", "[svg][svg-files]") {
  LineChart one{"one point", "x", "y", {{"p", {3}, {7}}}, {}, 720, 440};
  LineChart flat{"flat", "bucket", "s*T", {{"layer 1", {0, 1, 2}, {0, 0, 0}}, {"layer 2", {0, 1, 2}, {-2, -2, -2}}},
                 {"0", "1", "2+"}, 720, 440};
  LineChart empty{"empty", "x", "y", {}, {}, 720, 440};
  LineChart all_nan{"all missing", "x", "y", {{"n", {NAN, 1}, {2, NAN}}}, {}, 720, 440};
  for (const LineChart* c : {&one, &flat, &empty, &all_nan}) {
    const std::string svg = render_line_chart(*c);
    INFO(c->title);
    CHECK(xml_problem(svg).empty());
    CHECK_FALSE(has_nan(svg));
  }
  const std::string f = render_line_chart(flat);
  maybe_write("flat.svg", f);
  CHECK(f.find(">2+</text>") != std::string::npos);  // categorical tick labels
  CHECK(render_line_chart(one).find("<circle") != std::string::npos);
}

TEST_CASE("a heat map has a cell label per cell and a colour scale", "[svg][svg-files]") {
  HeatMap h;
  h.title = "directed s*T, layer 1";
  h.x_label = "down";
  h.y_label = "up";
  h.row_labels = {"0", "1", "2+"};
  h.col_labels = {"0", "1", "2+"};
  h.values = {{0.5, -1.25, 0}, {2, NAN, -0.1}, {0, 0, 0}};
  const std::string svg = render_heat_map(h);
  maybe_write("heat.svg", svg);
  CHECK(xml_problem(svg).empty());
  CHECK(svg.find(">-1.25</text>") != std::string::npos);
  CHECK(svg.find(">n/a</text>") != std::string::npos);
  CHECK(svg.find(">+2.00</text>") != std::string::npos);  // colour bar ends
  CHECK(svg.find(">-2.00</text>") != std::string::npos);
  CHECK(heat_colour(0, 2) == "#ffffff");
  CHECK(heat_colour(2, 2) != heat_colour(-2, 2));
  HeatMap zero = h;
  zero.values = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  CHECK_FALSE(has_nan(render_heat_map(zero)));
  zero.row_labels.pop_back();
  CHECK_THROWS_WITH(render_heat_map(zero), Catch::Contains("expected one per row and column"));
}
