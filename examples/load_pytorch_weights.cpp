// Loads a PyTorch SyntaxBiasedAttention exported to .npy files (see
// docs/pytorch_export.md) into synattn::SyntaxBiasedAttention<float> and runs
// a forward pass. If the directory also holds x.npy, lengths.npy,
// buckets.npy and out.npy (a golden-vector case has them), the forward is
// run on those and compared with out.npy.
//
//   load_pytorch_weights DIR --heads H [--batch B] [--length N] [--seed S]
#include <synattn/attention/syntax_attention.hpp>
#include <synattn/build_info.hpp>
#include <synattn/bias/bucketing.hpp>
#include <synattn/io/npy.hpp>
#include <synattn/util/metadata_number.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {

void usage(std::ostream& out) {
  out << "usage: load_pytorch_weights DIR --heads H [--batch B] [--length N] [--seed S]\n"
         "\n"
         "Loads Wq bq Wk bk Wv bv Wo bo table (and scale, if present) from DIR/*.npy,\n"
         "exported from PyTorch as in docs/pytorch_export.md, into a float\n"
         "SyntaxBiasedAttention with linear buckets (max_distance = table size - 1),\n"
         "and runs a forward pass on random input (B sequences of N tokens, the\n"
         "last one a token shorter, a chain tree: distance |i - j|).\n"
         "If DIR also has x.npy, lengths.npy, buckets.npy and out.npy, runs on those\n"
         "instead and compares with out.npy (exit status 1 if they differ by more\n"
         "than 1e-4 relative).\n"
         "\n"
         "  --heads H    number of heads (n_head of the PyTorch module; required)\n"
         "  --batch B    sequences in the random batch (default 2)\n"
         "  --length N   tokens per sequence (default 6)\n"
         "  --seed S     seed of the random input (default 1)\n"
         "  --help       this text\n";
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int heads = 0, batch = 2, length = 6;
  unsigned seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    // A number is read whole and range-checked (the library's
    // whole_number): std::atoi read "4x" as 4 and "x" as 0, and wrapped
    // 99999999999 to whatever int it became.
    auto value = [&](long long lo, long long hi) -> long long {
      if (i + 1 >= argc) {
        std::cerr << "load_pytorch_weights: " << arg << " needs a value\n";
        std::exit(2);
      }
      const std::string text = argv[++i];
      long long v = 0;
      if (!synattn::whole_number(text, lo, hi, v)) {
        std::cerr << "load_pytorch_weights: " << synattn::integer_refusal(arg, text, lo, hi) << "\n";
        std::exit(2);
      }
      return v;
    };
    if (arg == "--help" || arg == "-h") {
      usage(std::cout);
      return 0;
    } else if (arg == "--heads") {
      heads = static_cast<int>(value(1, 4096));
    } else if (arg == "--batch") {
      batch = static_cast<int>(value(1, 65536));
    } else if (arg == "--length") {
      length = static_cast<int>(value(1, 65536));
    } else if (arg == "--seed") {
      seed = static_cast<unsigned>(value(0, 4294967295LL));
    } else if (!arg.empty() && arg[0] == '-') {
      std::cerr << "load_pytorch_weights: unknown option " << arg << "\n";
      usage(std::cerr);
      return 2;
    } else {
      dir = arg;
    }
  }
  if (dir.empty() || heads < 1 || batch < 1 || length < 1) {
    usage(std::cerr);
    return 2;
  }

  std::cout << synattn::build_info() << "\n";  // how this binary was built: kernels, threads, BLAS
  try {
    // --- The lines docs/pytorch_export.md shows ---------------------------
    auto load = [&](const std::string& name) { return synattn::read_npy(dir + "/" + name + ".npy"); };
    const auto wq = load("Wq").to_matrix<float>();                          // (d_model, d_model)
    const auto table = load("table").to_matrix<float>();                    // (1, max_distance + 1)
    synattn::AttentionOptions options(static_cast<int>(wq.cols()), heads);  // dk = dv = d_model / heads
    options.bias.bucketing = synattn::Bucketing::linear(static_cast<int>(table.cols()) - 1);
    synattn::SyntaxBiasedAttention<float> layer(options);
    for (const char* name : {"Wq", "bq", "Wk", "bk", "Wv", "bv", "Wo", "bo", "table"})
      layer.set_parameter(name, load(name).to_matrix<float>());  // checks shapes, names the parameter
    if (exists(dir + "/scale.npy")) layer.set_parameter("scale", load("scale").to_matrix<float>());
    // -----------------------------------------------------------------------

    const int d = layer.d_model();
    std::cout << "loaded " << layer.parameter_count() << " parameters: d_model " << d << ", heads " << heads
              << ", key size " << layer.key_size() << ", " << options.bias.bucketing.describe() << "\n";

    synattn::RowMajorMatrix<float> x;
    std::vector<int> lengths;
    synattn::RowMajorMatrix<std::int8_t> buckets;
    const bool golden = exists(dir + "/x.npy") && exists(dir + "/lengths.npy") && exists(dir + "/buckets.npy") &&
                        exists(dir + "/out.npy");
    if (golden) {
      x = load("x").to_matrix<float>();
      lengths = load("lengths").to_vector<int>();
      buckets = load("buckets").to_matrix<std::int8_t>();
    } else {
      std::mt19937 rng(seed);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      x.resize(batch * length, d);
      for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
      lengths.assign(static_cast<std::size_t>(batch), length);
      lengths.back() = length - 1;
      // A chain tree (word i's head is i - 1): dist(i, j) = |i - j|; -1 on padding.
      synattn::RowMajorMatrix<std::int16_t> dist(batch * length, length);
      for (int b = 0; b < batch; ++b)
        for (int i = 0; i < length; ++i)
          for (int j = 0; j < length; ++j)
            dist(b * length + i, j) = static_cast<std::int16_t>(
                i < lengths[static_cast<std::size_t>(b)] && j < lengths[static_cast<std::size_t>(b)] ? std::abs(i - j)
                                                                                                     : -1);
      buckets.resize(dist.rows(), dist.cols());
      synattn::bucketize<std::int16_t, std::int8_t>(options.bias.bucketing, dist, buckets);
    }

    synattn::SyntaxBiasedAttention<float>::Cache cache;
    synattn::RowMajorMatrix<float> out(x.rows(), layer.d_model());
    layer.forward({x, lengths, buckets}, cache, out);
    std::cout << "forward: " << lengths.size() << " sequences of " << out.rows() / static_cast<long>(lengths.size())
              << " tokens -> out " << out.rows() << "x" << out.cols() << ", sum " << out.sum() << "\n"
              << "out row 0: " << out.row(0) << "\n";
    if (golden) {
      const auto want = load("out").to_matrix<double>();
      if (want.rows() != out.rows() || want.cols() != out.cols()) {
        std::cerr << "out.npy is " << want.rows() << "x" << want.cols() << ", the forward gave " << out.rows() << "x"
                  << out.cols() << "\n";
        return 1;
      }
      const double err = (out.cast<double>() - want).cwiseAbs().maxCoeff() / want.cwiseAbs().maxCoeff();
      std::cout << "against out.npy: max |got - want| / max |want| = " << err << "\n";
      return err <= 1e-4 ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "load_pytorch_weights: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
