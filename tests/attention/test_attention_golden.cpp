// SyntaxBiasedAttention against the golden vectors of docs/math.md §5: every case
// bundled under tests/golden/mha/ and, when SYNATTN_GOLDEN_DIR is set, every case
// under it. double agrees to 1e-10 and float to 1e-4, per array, as
// max|got - want| <= tol * max|want| (dbk: max|got| <= tol * max|dWk|).
// A tree-fusion case (config.json "views" > 1) has V bucket blocks and
// view_logits; a case without the fusion keys has one tree.
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/io/npy.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/attention_calls.hpp"
#include "support/json_file.hpp"
#include "support/temp_dir.hpp"
#include "support/test_data.hpp"

namespace fs = std::filesystem;
using synattn::AttentionOptions;
using synattn::Bucketing;
using synattn::RowMajorMatrix;
using synattn::SyntaxBiasedAttention;
using MatrixD = RowMajorMatrix<double>;
using BucketBlock = RowMajorMatrix<std::int8_t>;

namespace {

const std::vector<std::string> kParams = {"Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo", "table", "scale"};

struct GoldenCase {
  std::string name;
  AttentionOptions options;
  std::vector<std::string> params;  // kParams, then view_logits with fusion
  std::vector<int> lengths;
  BucketBlock buckets;                    // (views * batch * n, n): view v's block, then view v + 1's
  std::map<std::string, MatrixD> arrays;  // every real array, as (prod leading, last)
  std::vector<std::string> expected;      // arrays to compare
  int batch = 0, n = 0;
};

// Loads and checks one case directory. Every problem (missing or malformed
// file, missing key, wrong shape) throws with the case's name.
GoldenCase load_case(const fs::path& dir) {
  GoldenCase gc;
  gc.name = dir.filename().string();
  try {
    const nlohmann::json cfg = synattn_test::read_json_file((dir / "config.json").string());
    const auto integer = [&](const char* key) { return synattn_test::json_int(cfg.at(key), key); };
    gc.batch = integer("batch");
    gc.n = integer("length");
    const int d = integer("d_model"), h = integer("heads");
    AttentionOptions& o = gc.options;
    o = AttentionOptions(d, h);
    o.key_size = integer("key_size");
    o.value_size = integer("value_size");
    const std::string kind = cfg.at("bucketing").get<std::string>();
    const int m = integer("max_distance");
    const int nb = integer("num_buckets");
    if (kind == "linear") {
      o.bias.bucketing = Bucketing::linear(m);
    } else if (kind == "log") {
      o.bias.bucketing = Bucketing::log(nb, m, cfg.at("exact").is_null() ? -1 : integer("exact"));
    } else if (kind == "directed") {
      o.bias.bucketing = Bucketing::directed(m);
    } else {
      throw std::runtime_error("config.json: unknown bucketing \"" + kind + "\"");
    }
    if (o.bias.bucketing.num_buckets() != nb)
      throw std::runtime_error("config.json: num_buckets " + std::to_string(nb) + " but " +
                               o.bias.bucketing.describe() + " has " + std::to_string(o.bias.bucketing.num_buckets()));
    o.bias.per_head = cfg.at("per_head").get<bool>();
    o.causal = cfg.at("causal").get<bool>();
    o.bias.scale_learnable = cfg.at("scale_learnable").get<bool>();
    o.bias.table_learnable = cfg.contains("table_learnable") ? cfg.at("table_learnable").get<bool>() : true;
    // Tree fusion; a case without the keys (made before fusion) has one tree.
    const auto flag = [&](const char* key) { return cfg.contains(key) && cfg.at(key).get<bool>(); };
    o.bias.fusion.views = cfg.contains("views") ? integer("views") : 1;
    o.bias.fusion.shared_table = flag("shared_table");
    o.bias.fusion.per_head_weights = flag("per_head_weights");
    const int views = o.bias.fusion.views;
    if (views < 1) throw std::runtime_error("config.json: views " + std::to_string(views) + " is not >= 1");
    gc.params = kParams;
    if (views > 1) gc.params.push_back("view_logits");

    auto load = [&](const std::string& array, Eigen::Index rows, Eigen::Index cols) {
      const fs::path file = dir / (array + ".npy");
      if (!fs::exists(file)) throw std::runtime_error("missing array " + file.filename().string());
      MatrixD a = synattn::read_npy(file.string()).to_matrix<double>();
      if (a.rows() != rows || a.cols() != cols)
        throw std::runtime_error(array + ".npy has shape " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) +
                                 " (as a matrix), expected " + std::to_string(rows) + "x" + std::to_string(cols));
      gc.arrays[array] = a;
    };
    const Eigen::Index B = gc.batch, n = gc.n, hk = Eigen::Index(h) * o.key_size, hv = Eigen::Index(h) * o.value_size;
    // The (V?, h?, nb) table and (h?, V) view logits as the layer's matrices: C order flattened.
    const Eigen::Index trows = Eigen::Index(o.bias.fusion.table_views()) * (o.bias.per_head ? h : 1);
    std::map<std::string, std::pair<Eigen::Index, Eigen::Index>> shapes = {
        {"x", {B * n, d}}, {"G", {B * n, d}}, {"out", {B * n, d}}, {"dx", {B * n, d}},     {"probs", {B * h * n, n}},
        {"Wq", {hk, d}},   {"Wk", {hk, d}},   {"Wv", {hv, d}},     {"Wo", {d, hv}},        {"bq", {1, hk}},
        {"bk", {1, hk}},   {"bv", {1, hv}},   {"bo", {1, d}},      {"table", {trows, nb}}, {"scale", {1, 1}}};
    shapes["view_logits"] = {o.bias.fusion.per_head_weights ? h : 1, views};  // read only with fusion
    gc.expected = {"out", "probs", "dx", "dWq", "dbq", "dWk", "dbk", "dWv", "dbv", "dWo", "dbo"};
    if (o.bias.table_learnable) gc.expected.push_back("dtable");
    if (o.bias.scale_learnable) gc.expected.push_back("dscale");
    if (views > 1) gc.expected.push_back("dview_logits");
    for (const auto& a : {"x", "G"}) load(a, shapes.at(a).first, shapes.at(a).second);
    for (const auto& p : gc.params) load(p, shapes.at(p).first, shapes.at(p).second);
    for (const auto& e : gc.expected) {
      const std::string base = e == "out" || e == "probs" ? e : e.substr(1);
      load(e, shapes.at(base).first, shapes.at(base).second);
    }

    const fs::path lengths_file = dir / "lengths.npy";
    if (!fs::exists(lengths_file)) throw std::runtime_error("missing array lengths.npy");
    const auto lengths = synattn::read_npy(lengths_file.string()).to_vector<int>();
    if (static_cast<int>(lengths.size()) != gc.batch)
      throw std::runtime_error("lengths.npy has " + std::to_string(lengths.size()) + " entries, expected " +
                               std::to_string(gc.batch));
    gc.lengths = lengths;
    const fs::path buckets_file = dir / "buckets.npy";
    if (!fs::exists(buckets_file)) throw std::runtime_error("missing array buckets.npy");
    gc.buckets = synattn::read_npy(buckets_file.string()).to_matrix<std::int8_t>();
    if (gc.buckets.rows() != views * B * n || gc.buckets.cols() != n)
      throw std::runtime_error("buckets.npy has the wrong shape " + std::to_string(gc.buckets.rows()) + "x" +
                               std::to_string(gc.buckets.cols()) + " (as a matrix), expected " +
                               std::to_string(views * B * n) + "x" + std::to_string(n) + " for " +
                               std::to_string(views) + " view(s)");
  } catch (const std::exception& e) {
    throw std::runtime_error("golden case '" + gc.name + "' (" + dir.string() + "): " + e.what());
  }
  return gc;
}

std::vector<fs::path> case_dirs(const fs::path& root) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && fs::exists(entry.path() / "config.json")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// max|got - want| / max|want| (or / max|partner| for arrays zero in exact arithmetic).
double golden_error(const MatrixD& got, const MatrixD& want, double scale) {
  if (got.rows() != want.rows() || got.cols() != want.cols()) return INFINITY;
  const double diff = got.size() ? (got - want).cwiseAbs().maxCoeff() : 0.0;
  return scale > 0 ? diff / scale : diff;
}

template <class Scalar>
void check_case(const GoldenCase& gc, double tol) {
  using Matrix = RowMajorMatrix<Scalar>;
  SyntaxBiasedAttention<Scalar> layer(gc.options);
  for (const auto& p : gc.params) layer.set_parameter(p, gc.arrays.at(p).cast<Scalar>());
  typename SyntaxBiasedAttention<Scalar>::Cache cache;
  const Matrix x = gc.arrays.at("x").cast<Scalar>();
  const Matrix out = synattn_test::forward_value(layer, {x, gc.lengths, gc.buckets}, cache);
  const Matrix dx = synattn_test::backward_value(layer, cache, gc.arrays.at("G").cast<Scalar>());

  std::map<std::string, MatrixD> got;
  got["out"] = out.template cast<double>();
  // The fused path keeps no probabilities (SYNATTN_ATTENTION_PATH=fused
  // reruns this program): its P is the materialized path's bit for bit
  // (test_attention_paths), and every other array is checked here.
  const bool have_probs = !cache.fused_path();
  const char* forced = std::getenv("SYNATTN_ATTENTION_PATH");
  if (forced && std::string(forced) == "fused" && !gc.options.talking_heads_pre && !gc.options.talking_heads_post) {
    INFO("case " << gc.name << ": SYNATTN_ATTENTION_PATH=fused must take the fused path");
    CHECK(cache.fused_path());
  }
  if (have_probs) got["probs"] = cache.probabilities().template cast<double>();
  got["dx"] = dx.template cast<double>();
  for (const auto& p : gc.params) got["d" + p] = layer.gradient(p).template cast<double>();

  for (const auto& name : gc.expected) {
    if (name == "probs" && !have_probs) continue;
    const MatrixD& want = gc.arrays.at(name);
    double err;
    if (name == "dbk") {  // zero in exact arithmetic: measured against dWk
      err = golden_error(got[name], MatrixD::Zero(want.rows(), want.cols()), gc.arrays.at("dWk").cwiseAbs().maxCoeff());
    } else {
      err = golden_error(got[name], want, want.size() ? want.cwiseAbs().maxCoeff() : 0.0);
    }
    INFO("case " << gc.name << ", " << (sizeof(Scalar) == 8 ? "double" : "float") << ", array " << name << ": error "
                 << err << " (tolerance " << tol << ")");
    CHECK(err <= tol);
  }
  // A frozen table or scale takes no gradient at all.
  if (!gc.options.bias.table_learnable) CHECK(layer.gradient("table").isZero(0));
  if (!gc.options.bias.scale_learnable) CHECK(layer.gradient("scale")(0, 0) == Scalar(0));
  // probs: rows sum to 1 or are all zero (no visible key).
  const auto& P = cache.probabilities();
  for (Eigen::Index r = 0; r < P.rows(); ++r) {
    const double s = P.row(r).template cast<double>().sum();
    INFO("case " << gc.name << ", probability row " << r << " sums to " << s);
    CHECK((s == 0.0 || std::abs(s - 1.0) < 1e-5));
  }
}

void run_golden_root(const fs::path& root) {
  const auto dirs = case_dirs(root);
  INFO("golden root " << root.string());
  REQUIRE(!dirs.empty());
  for (const auto& dir : dirs) {
    GoldenCase gc;
    try {
      gc = load_case(dir);
    } catch (const std::exception& e) {
      FAIL(e.what());
    }
    check_case<double>(gc, 1e-10);
    check_case<float>(gc, 1e-4);
  }
}

}  // namespace

TEST_CASE("attention matches every bundled golden case in double and float", "[attention][golden]") {
  const fs::path root = fs::path(synattn_test::golden_path("mha/tiny/config.json")).parent_path().parent_path();
  const auto dirs = case_dirs(root);
  std::vector<std::string> names;
  for (const auto& d : dirs) names.push_back(d.filename().string());
  // The public cases must all be there: a vanished case must not pass silently.
  for (const char* want : {"tiny", "padded", "perhead_log", "causal", "directed", "fused", "fused_perhead"}) {
    INFO("missing bundled golden case " << want);
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  run_golden_root(root);
}

TEST_CASE("attention matches every case under SYNATTN_GOLDEN_DIR when it is set", "[attention][golden]") {
  const char* env = std::getenv("SYNATTN_GOLDEN_DIR");
  if (env == nullptr || *env == '\0') {
    SUCCEED("SYNATTN_GOLDEN_DIR not set");
    return;
  }
  INFO("SYNATTN_GOLDEN_DIR=" << env);
  REQUIRE(fs::is_directory(env));
  run_golden_root(env);
}

TEST_CASE("a golden case with missing or malformed arrays fails with the case name", "[attention][golden]") {
  const fs::path tiny = fs::path(synattn_test::golden_path("mha/tiny/config.json")).parent_path();
  // Unique per process: three builds of this program run at once under ctest -j.
  const synattn_test::TempDir scratch("synattn_golden_broken_case");
  const fs::path tmp = scratch.path();
  for (const auto& entry : fs::directory_iterator(tiny)) fs::copy_file(entry.path(), tmp / entry.path().filename());
  REQUIRE_NOTHROW(load_case(tmp));
  const std::string name = tmp.filename().string();

  SECTION("missing input array") {
    fs::remove(tmp / "x.npy");
    CHECK_THROWS_WITH(load_case(tmp), Catch::Contains(name) && Catch::Contains("x.npy"));
  }
  SECTION("missing expected gradient") {
    fs::remove(tmp / "dWv.npy");
    CHECK_THROWS_WITH(load_case(tmp), Catch::Contains(name) && Catch::Contains("dWv.npy"));
  }
  SECTION("truncated array") {
    std::ofstream(tmp / "Wq.npy", std::ios::binary | std::ios::trunc) << "\x93NUMPY";
    CHECK_THROWS_WITH(load_case(tmp), Catch::Contains(name) && Catch::Contains("Wq.npy"));
  }
  SECTION("array of the wrong shape") {
    fs::copy_file(tmp / "bq.npy", tmp / "Wk.npy", fs::copy_options::overwrite_existing);
    CHECK_THROWS_WITH(load_case(tmp), Catch::Contains(name) && Catch::Contains("Wk.npy has shape"));
  }
  SECTION("config without a required key") {
    std::ofstream(tmp / "config.json", std::ios::trunc) << R"({"batch": 1, "length": 5})";
    CHECK_THROWS_WITH(load_case(tmp), Catch::Contains(name) && Catch::Contains("d_model"));
  }
}

TEST_CASE("a fused golden case without its views fails with the case name", "[attention][golden]") {
  const fs::path fused = fs::path(synattn_test::golden_path("mha/fused/config.json")).parent_path();
  const synattn_test::TempDir scratch("synattn_golden_broken_fused_case");
  const fs::path tmp = scratch.path();
  for (const auto& entry : fs::directory_iterator(fused)) fs::copy_file(entry.path(), tmp / entry.path().filename());
  const GoldenCase gc = load_case(tmp);
  CHECK(gc.options.bias.fusion.views == 3);
  CHECK(gc.buckets.rows() == 3 * gc.batch * gc.n);
  const std::string name = tmp.filename().string();

  SECTION("missing view logits") {
    fs::remove(tmp / "view_logits.npy");
    CHECK_THROWS_WITH(load_case(tmp), Catch::Contains(name) && Catch::Contains("view_logits.npy"));
  }
  SECTION("buckets of one view") {
    // dist.npy is (batch, n, n) int64: a bucket file of an unfused case.
    fs::copy_file(tmp / "dist.npy", tmp / "buckets.npy", fs::copy_options::overwrite_existing);
    CHECK_THROWS_WITH(load_case(tmp), Catch::Contains(name) && Catch::Contains("buckets.npy has the wrong shape"));
  }
}
