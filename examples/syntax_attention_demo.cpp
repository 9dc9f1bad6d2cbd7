// syntax_attention_demo — the whole pipeline on real sentences: CoNLL-U ->
// dependency trees -> batched distances -> buckets -> syntax-biased attention,
// forward and backward.
//
//   syntax_attention_demo [FILE.conllu] [--sentences K] [--heads H] [--d-model D]
//
// With random features, plain attention spreads its weight evenly over tree
// distances; a fixed linear-decay table (T[b] = -b, the "fixed decay"
// baseline) pulls it towards syntactic neighbours. The demo prints the mean
// attention weight a word gives to words at each tree distance, for both,
// then one backward pass and the table's gradient.
#include <synattn/attention/syntax_attention.hpp>
#include <synattn/build_info.hpp>
#include <synattn/bias/bucketing.hpp>
#include <synattn/tree/batch.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/util/metadata_number.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

const char* kUsage =
    "usage: syntax_attention_demo [FILE.conllu] [--sentences K] [--heads H] [--d-model D]\n"
    "\n"
    "Runs syntax-biased attention over the first K sentences of FILE (default: the\n"
    "bundled sample examples/data/en_ewt-dev-sample.conllu, K = 16, H = 4, D = 64)\n"
    "and prints the mean attention weight per tree distance with a zero table\n"
    "(plain attention) and with a fixed linear-decay table, then one backward pass.\n";

using Layer = synattn::SyntaxBiasedAttention<float>;

}  // namespace

int main(int argc, char** argv) {
  std::string file = std::string(SYNATTN_DEMO_DATA);
  int sentences = 16, heads = 4, d_model = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // Read whole and range-checked (the library's whole_number): std::atoi
    // read "8x" as 8 and wrapped 99999999999 to whatever int it became.
    auto number = [&](int& out, long long hi) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "syntax_attention_demo: %s needs a positive integer\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      const std::string text = argv[++i];
      long long v = 0;
      if (!synattn::whole_number(text, 1, hi, v)) {
        std::fprintf(stderr, "syntax_attention_demo: %s\n%s", synattn::integer_refusal(a, text, 1, hi).c_str(), kUsage);
        std::exit(2);
      }
      out = static_cast<int>(v);
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--sentences") {
      number(sentences, 1000000);
    } else if (a == "--heads") {
      number(heads, 4096);
    } else if (a == "--d-model") {
      number(d_model, 65536);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "syntax_attention_demo: unknown option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    } else {
      file = a;
    }
  }
  // How this binary was built (instruction sets, kernels, threads): the first
  // thing to compare when two machines print different timings or digits.
  std::printf("%s\n", synattn::build_info().c_str());
  try {
    // 1. Trees from CoNLL-U.
    std::vector<synattn::DependencyTree> trees;
    for (const auto& s : synattn::read_conllu(file)) {
      if (static_cast<int>(trees.size()) == sentences) break;
      trees.push_back(s.tree());
    }
    if (trees.empty()) {
      std::printf("%s: no sentences\n", file.c_str());
      return 0;
    }
    // 2. Distances for the batch, (batch * n, n) with -1 on padding pairs.
    const synattn::DistanceBatch<std::int8_t> batch = synattn::make_distance_batch<std::int8_t>(trees);
    const int n = batch.n_max, count = static_cast<int>(trees.size());
    // 3. Buckets: linear clamp at 10 (11 buckets).
    synattn::AttentionOptions options(d_model, heads);
    options.bias.bucketing = synattn::Bucketing::linear(10);
    synattn::RowMajorMatrix<std::int8_t> buckets(batch.distances.rows(), batch.distances.cols());
    synattn::bucketize<std::int8_t, std::int8_t>(options.bias.bucketing, batch.distances, buckets);
    std::printf("%d sentences from %s, %d..%d words (padded to %d), d_model %d, %d heads, %s\n", count,
                file.c_str(), *std::min_element(batch.lengths.begin(), batch.lengths.end()), n, n,
                d_model, heads, options.bias.bucketing.describe().c_str());

    // 4. Random token features, one row per token.
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.f, 1.f);
    Layer::Matrix x(static_cast<Eigen::Index>(count) * n, d_model);
    for (Eigen::Index r = 0; r < x.rows(); ++r)
      for (Eigen::Index c = 0; c < x.cols(); ++c) x(r, c) = normal(rng);

    // 5. Plain attention (zero table) vs the fixed linear-decay table.
    const int max_d = 8;
    std::vector<std::vector<double>> rows;
    for (int variant = 0; variant < 2; ++variant) {
      synattn::AttentionOptions o = options;
      o.bias.init = variant == 0 ? synattn::TableInit::Zero : synattn::TableInit::LinearDecay;
      Layer layer(o);
      Layer::Cache cache;
      Layer::Matrix out(x.rows(), d_model);
      layer.forward({x, batch.lengths, buckets}, cache, out);
      // p[b, a, i, j] from the cache: mean over heads and query words per distance.
      std::vector<double> sum(max_d + 1, 0.0), pairs(max_d + 1, 0.0);
      for (int b = 0; b < count; ++b)
        for (int a = 0; a < heads; ++a) {
          const auto p = cache.probabilities(b, a);
          for (int i = 0; i < batch.lengths[static_cast<std::size_t>(b)]; ++i)
            for (int j = 0; j < batch.lengths[static_cast<std::size_t>(b)]; ++j) {
              const int d = std::min<int>(batch.distances(static_cast<Eigen::Index>(b) * n + i, j), max_d);
              sum[static_cast<std::size_t>(d)] += p(i, j);
              pairs[static_cast<std::size_t>(d)] += 1.0;
            }
        }
      std::vector<double> mean(max_d + 1, 0.0);
      for (int d = 0; d <= max_d; ++d)
        mean[static_cast<std::size_t>(d)] = pairs[static_cast<std::size_t>(d)] > 0 ? sum[static_cast<std::size_t>(d)] / pairs[static_cast<std::size_t>(d)] : 0.0;
      rows.push_back(mean);

      if (variant == 1) {
        // 6. One backward pass with dL/dout = 1 on real tokens: the table's
        // gradient says how the loss would pull each distance's bias.
        Layer::Matrix dout = Layer::Matrix::Zero(x.rows(), d_model);
        for (int b = 0; b < count; ++b)
          dout.middleRows(static_cast<Eigen::Index>(b) * n, batch.lengths[static_cast<std::size_t>(b)]).setOnes();
        Layer::Matrix dx(x.rows(), d_model);
        layer.backward(cache, dout, {dx});
        std::printf("\nbackward: |dL/dx| = %.4f, dL/ds = %.5f, dL/dT =", static_cast<double>(dx.norm()),
                    static_cast<double>(layer.gradient("scale")(0, 0)));
        const auto dt = layer.gradient("table");
        for (Eigen::Index k = 0; k < dt.cols(); ++k) std::printf(" %.4f", static_cast<double>(dt(0, k)));
        std::printf("\n");
      }
    }
    std::printf("\nmean attention weight by tree distance (%d+ pooled)\n", max_d);
    std::printf("distance      ");
    for (int d = 0; d <= max_d; ++d) std::printf("%8d", d);
    std::printf("\nzero table    ");
    for (double v : rows[0]) std::printf("%8.4f", v);
    std::printf("\nlinear decay  ");
    for (double v : rows[1]) std::printf("%8.4f", v);
    std::printf("\n");
  } catch (const synattn::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const synattn::RuntimeError& e) {  // the file: cannot be read, or malformed
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

