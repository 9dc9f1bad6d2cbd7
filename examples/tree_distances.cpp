// tree_distances — print the tree distance matrix of every sentence of a
// CoNLL-U file, or the corpus statistics that pick a bucketing clamp.
//
//   tree_distances FILE.conllu [--sentence K] [--directed] [--stats]
//
// Output (a contract; scripts parse it):
//   default      for each sentence K (0-based, file order): a line
//                "# sent K n=N", N lines of N space-separated distances, a
//                blank line. Distances are exact (no saturation).
//   --directed   each cell is "up:down" (steps up to the LCA, then down).
//   --sentence K only sentence K.
//   --stats      the distance histogram and the suggested max_distance
//                (95 % and 99 % coverage) instead of matrices.
// A file with no sentences prints nothing and exits 0. A bad or unreadable
// file prints "FILE:LINE: reason" on stderr and exits 1; bad arguments print
// the usage on stderr and exit 2.
#include <synattn/build_info.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/tree/distance.hpp>
#include <synattn/tree/stats.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

namespace {

const char* kUsage =
    "usage: tree_distances FILE.conllu [--sentence K] [--directed] [--stats]\n"
    "\n"
    "Prints the dependency-tree distance matrix of each sentence of FILE:\n"
    "  # sent K n=N      (K is the 0-based sentence index in file order)\n"
    "  N lines of N space-separated distances, then a blank line.\n"
    "\n"
    "  --sentence K   print only sentence K\n"
    "  --directed     print each cell as up:down (steps up to the lowest common\n"
    "                 ancestor, then down from it)\n"
    "  --stats        print the distance histogram over all sentences and the\n"
    "                 smallest max_distance covering 95% and 99% of word pairs\n"
    "  --help         this text\n";

struct Args {
  std::string file;
  long long sentence = -1;
  bool directed = false;
  bool stats = false;
};

bool parse_args(int argc, char** argv, Args& args, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--directed") {
      args.directed = true;
    } else if (a == "--stats") {
      args.stats = true;
    } else if (a == "--sentence") {
      if (i + 1 >= argc) return error = "--sentence needs a number", false;
      const std::string v = argv[++i];
      char* end = nullptr;
      args.sentence = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || args.sentence < 0)
        return error = "--sentence needs a non-negative integer, got '" + v + "'", false;
    } else if (!a.empty() && a[0] == '-') {
      return error = "unknown option '" + a + "'", false;
    } else if (args.file.empty()) {
      args.file = a;
    } else {
      return error = "more than one file given ('" + args.file + "', '" + a + "')", false;
    }
  }
  if (args.file.empty()) return error = "no input file", false;
  if (args.stats && (args.directed || args.sentence >= 0))
    return error = "--stats prints corpus statistics; it takes no --sentence or --directed", false;
  return true;
}

// Appends the decimal digits of v (non-negative) without locale or streams:
// a 100-word sentence is 10,000 numbers.
void append_int(std::string& out, int v) {
  char buf[16];
  int len = 0;
  do {
    buf[len++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (len > 0) out.push_back(buf[--len]);
}

void print_sentence(std::size_t index, const synattn::DependencyTree& tree, bool directed,
                    synattn::RowMajorMatrix<std::int32_t>& a, synattn::RowMajorMatrix<std::int32_t>& b,
                    std::string& out) {
  const int n = tree.size();
  a.resize(n, n);
  if (directed) {
    b.resize(n, n);
    synattn::directed_distances<std::int32_t>(tree, a, b);
  } else {
    synattn::pairwise_distances<std::int32_t>(tree, a);
  }
  out.clear();
  out += "# sent " + std::to_string(index) + " n=" + std::to_string(n) + "\n";
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (j > 0) out.push_back(' ');
      append_int(out, a(i, j));
      if (directed) {
        out.push_back(':');
        append_int(out, b(i, j));
      }
    }
    out.push_back('\n');
  }
  out.push_back('\n');
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_stats(const synattn::DistanceHistogram& hist) {
  // Only here: the matrix modes' stdout starts with "# sent" (a contract).
  std::printf("# %s\n", synattn::build_info().c_str());
  if (hist.sentences() == 0) return;
  std::printf("# sentences %lld, words %lld, mean length %.2f, longest %d\n",
              static_cast<long long>(hist.sentences()), static_cast<long long>(hist.words()),
              hist.mean_length(), hist.longest_sentence());
  std::printf("# ordered word pairs %lld, mean distance %.3f\n", static_cast<long long>(hist.pairs()),
              hist.mean_distance());
  std::printf("distance\tpairs\tshare\tcumulative\n");
  const double total = static_cast<double>(hist.pairs());
  std::int64_t cumulative = 0;
  for (int d = 1; d <= hist.max_distance(); ++d) {
    cumulative += hist.count(d);
    std::printf("%d\t%lld\t%.6f\t%.6f\n", d, static_cast<long long>(hist.count(d)),
                static_cast<double>(hist.count(d)) / total, static_cast<double>(cumulative) / total);
  }
  if (hist.pairs() > 0)
    std::printf("# suggested max_distance: %d (covers 95%% of pairs), %d (covers 99%%)\n",
                synattn::suggest_max_distance(hist, 0.95), synattn::suggest_max_distance(hist, 0.99));
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  Args args;
  std::string arg_error;
  if (!parse_args(argc, argv, args, arg_error)) {
    std::fprintf(stderr, "tree_distances: %s\n%s", arg_error.c_str(), kUsage);
    return 2;
  }
  try {
    // Names a directory as such (an ifstream opens one and then fails to read).
    std::ifstream in = synattn::open_conllu_file(args.file);
    synattn::ConlluReader reader(in, args.file);
    synattn::ConlluSentence sentence;
    synattn::DistanceHistogram hist;
    synattn::RowMajorMatrix<std::int32_t> a, b;
    std::string out;
    std::size_t index = 0;
    for (; reader.next(sentence); ++index) {
      const synattn::DependencyTree tree = sentence.tree();
      if (args.stats) {
        hist.add(tree);
      } else if (args.sentence < 0 || static_cast<long long>(index) == args.sentence) {
        print_sentence(index, tree, args.directed, a, b, out);
        if (args.sentence >= 0) break;
      }
    }
    if (args.stats) print_stats(hist);
    if (args.sentence >= 0 && static_cast<long long>(index) != args.sentence) {
      std::fprintf(stderr, "%s: sentence %lld out of range (the file has %zu sentences)\n",
                   args.file.c_str(), args.sentence, index);
      return 1;
    }
  } catch (const synattn::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const synattn::RuntimeError& e) {  // the file: cannot be read, or malformed
    std::fflush(stdout);
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
