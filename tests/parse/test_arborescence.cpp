// The parser's decoder (parse/arborescence.hpp): the best tree with one word
// under the root, against exhaustive enumeration (n <= 7) and against a
// textbook recursive Chu-Liu/Edmonds run once per candidate root word
// (n <= 40); hand-made cases (the single-root constraint changing the tree,
// a non-projective optimum), errors, no allocation after warm-up, and
// 200-word sentences.
#include <catch2/catch.hpp>

#include <synattn/parse/arborescence.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "support/random_trees.hpp"

#include "support/count_allocations.hpp"  // g_allocations

using synattn::Index;
using synattn::parse::ArborescenceWorkspace;
using synattn::parse::max_spanning_tree;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::size_t at(Index ld, int d, int h) {
  return static_cast<std::size_t>(d) * static_cast<std::size_t>(ld) + static_cast<std::size_t>(h);
}

// Why `heads` is not a tree of n words with exactly one root child, or ""
// if it is one: checked on its own, without the decoder's machinery.
std::string tree_problem(const std::vector<int>& heads, int n) {
  if (heads.size() != static_cast<std::size_t>(n) + 1) return "size " + std::to_string(heads.size());
  if (heads[0] != -1) return "heads[0] = " + std::to_string(heads[0]);
  int root_children = 0;
  for (int d = 1; d <= n; ++d) {
    const int h = heads[static_cast<std::size_t>(d)];
    if (h < 0 || h > n || h == d) return "heads[" + std::to_string(d) + "] = " + std::to_string(h);
    root_children += h == 0 ? 1 : 0;
  }
  if (root_children != 1) return std::to_string(root_children) + " root children";
  for (int d = 1; d <= n; ++d) {  // every word reaches the root in < n + 1 steps
    int v = d, steps = 0;
    while (v != 0 && steps <= n) {
      v = heads[static_cast<std::size_t>(v)];
      ++steps;
    }
    if (v != 0) return "word " + std::to_string(d) + " is on or under a cycle";
  }
  return "";
}

template <class Scalar>
double tree_score(const std::vector<Scalar>& s, Index ld, const std::vector<int>& heads) {
  double total = 0.0;
  for (std::size_t d = 1; d < heads.size(); ++d)
    total += static_cast<double>(s[at(ld, static_cast<int>(d), heads[d])]);
  return total;
}

// Exhaustive search over head assignments with one root child and no cycle:
// heads are given word by word, and an assignment is abandoned as soon as it
// closes a cycle, gives the root a second child or takes a -inf arc (so every
// tree with a finite score is visited, and nothing else).
struct BruteForce {
  const std::vector<double>& s;
  Index ld;
  int n;
  std::vector<int> heads;
  int root_children = 0;
  bool found = false;
  double best = -kInf;
  std::vector<int> best_heads;

  BruteForce(const std::vector<double>& scores, int words, Index stride)
      : s(scores), ld(stride), n(words), heads(static_cast<std::size_t>(words) + 1, -1) {
    visit(1, 0.0);
  }

  void visit(int d, double sum) {
    if (d > n) {
      if (!found || sum > best) {
        found = true;
        best = sum;
        best_heads = heads;
      }
      return;
    }
    for (int h = 0; h <= n; ++h) {
      if (h == d) continue;
      const double x = s[at(ld, d, h)];
      if (x == -kInf || (h == 0 && root_children == 1)) continue;
      // Words < d have heads; the walk up from h stops at the root or at a
      // word without one yet, unless it comes back to d (a cycle).
      int v = h;
      while (v != 0 && v != d && v < d) v = heads[static_cast<std::size_t>(v)];
      if (v == d) continue;
      heads[static_cast<std::size_t>(d)] = h;
      root_children += h == 0 ? 1 : 0;
      visit(d + 1, sum + x);
      root_children -= h == 0 ? 1 : 0;
    }
    heads[static_cast<std::size_t>(d)] = -1;
  }
};

// Textbook recursive Chu-Liu/Edmonds (unconstrained: the root may have any
// number of children), on w[d][h] = score of h -> d with -inf = no arc.
// Returns the parents (parents[0] = -1), or nothing if no arborescence exists.
std::vector<int> textbook_cle(const std::vector<std::vector<double>>& w) {
  const int N = static_cast<int>(w.size());
  const auto W = [&](int d, int h) { return w[static_cast<std::size_t>(d)][static_cast<std::size_t>(h)]; };
  std::vector<int> par(static_cast<std::size_t>(N), -1);
  for (int d = 1; d < N; ++d) {
    for (int h = 0; h < N; ++h)
      if (h != d && W(d, h) > -kInf && (par[static_cast<std::size_t>(d)] < 0 || W(d, h) > W(d, par[static_cast<std::size_t>(d)])))
        par[static_cast<std::size_t>(d)] = h;
    if (par[static_cast<std::size_t>(d)] < 0) return {};
  }
  // Any cycle: walk up from every node.
  std::vector<int> on_cycle(static_cast<std::size_t>(N), 0);
  bool has_cycle = false;
  for (int start = 1; start < N && !has_cycle; ++start) {
    int v = start;
    for (int steps = 0; steps < N && v != 0; ++steps) v = par[static_cast<std::size_t>(v)];
    if (v == 0) continue;  // reached the root: no cycle above start
    // v is on a cycle (N steps without reaching the root).
    has_cycle = true;
    int u = v;
    do {
      on_cycle[static_cast<std::size_t>(u)] = 1;
      u = par[static_cast<std::size_t>(u)];
    } while (u != v);
  }
  if (!has_cycle) return par;
  // Contract: the nodes off the cycle keep their order, the cycle is last.
  std::vector<int> new_of(static_cast<std::size_t>(N), -1), old_of;
  for (int v = 0; v < N; ++v)
    if (!on_cycle[static_cast<std::size_t>(v)]) {
      new_of[static_cast<std::size_t>(v)] = static_cast<int>(old_of.size());
      old_of.push_back(v);
    }
  const int c = static_cast<int>(old_of.size());
  const int N2 = c + 1;
  std::vector<std::vector<double>> w2(static_cast<std::size_t>(N2), std::vector<double>(static_cast<std::size_t>(N2), -kInf));
  std::vector<int> enter(static_cast<std::size_t>(N), -1), leave(static_cast<std::size_t>(N), -1);
  for (int u = 0; u < N; ++u) {
    if (on_cycle[static_cast<std::size_t>(u)]) continue;
    const std::size_t nu = static_cast<std::size_t>(new_of[static_cast<std::size_t>(u)]);
    for (int v = 0; v < N; ++v) {
      if (on_cycle[static_cast<std::size_t>(v)]) {
        const double in = W(v, u) - W(v, par[static_cast<std::size_t>(v)]);
        if (W(v, u) > -kInf && (enter[static_cast<std::size_t>(u)] < 0 || in > w2[static_cast<std::size_t>(c)][nu])) {
          w2[static_cast<std::size_t>(c)][nu] = in;
          enter[static_cast<std::size_t>(u)] = v;
        }
        if (u != 0 && W(u, v) > -kInf && (leave[static_cast<std::size_t>(u)] < 0 || W(u, v) > w2[nu][static_cast<std::size_t>(c)])) {
          w2[nu][static_cast<std::size_t>(c)] = W(u, v);
          leave[static_cast<std::size_t>(u)] = v;
        }
      } else if (u != 0 && v != u) {
        w2[nu][static_cast<std::size_t>(new_of[static_cast<std::size_t>(v)])] = W(u, v);
      }
    }
  }
  const std::vector<int> sub = textbook_cle(w2);
  if (sub.empty()) return {};
  std::vector<int> out = par;  // cycle arcs kept, but one
  for (int u = 1; u < N; ++u) {
    if (on_cycle[static_cast<std::size_t>(u)]) continue;
    const int h2 = sub[static_cast<std::size_t>(new_of[static_cast<std::size_t>(u)])];
    out[static_cast<std::size_t>(u)] = h2 == c ? leave[static_cast<std::size_t>(u)] : old_of[static_cast<std::size_t>(h2)];
  }
  const int u = old_of[static_cast<std::size_t>(sub[static_cast<std::size_t>(c)])];
  out[static_cast<std::size_t>(enter[static_cast<std::size_t>(u)])] = u;
  return out;
}

// The single-root optimum by the well-known reduction: the best, over every
// root word c, of the unconstrained optimum with all root arcs but 0 -> c
// forbidden. Returns -inf when no such tree has a finite score.
double single_root_reference(const std::vector<double>& s, int n, Index ld) {
  double best = -kInf;
  for (int c = 1; c <= n; ++c) {
    std::vector<std::vector<double>> w(static_cast<std::size_t>(n) + 1, std::vector<double>(static_cast<std::size_t>(n) + 1, -kInf));
    for (int d = 1; d <= n; ++d)
      for (int h = 0; h <= n; ++h)
        if (h != d && (h != 0 || d == c)) w[static_cast<std::size_t>(d)][static_cast<std::size_t>(h)] = s[at(ld, d, h)];
    const std::vector<int> t = textbook_cle(w);
    if (t.empty()) continue;
    double score = 0.0;
    for (int d = 1; d <= n; ++d) score += s[at(ld, d, t[static_cast<std::size_t>(d)])];
    best = score > best ? score : best;
  }
  return best;
}

// Portable random numbers (mt19937_64 is specified; the std distributions are not).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

enum class Kind { Real, SmallInts, RealForbidden, IntsForbidden, count };

// A (n+1) x ld score matrix. Row 0, the diagonal and the padding past column
// n are NaN: the decoder must never read them.
std::vector<double> random_scores(int n, Index ld, Kind kind, std::mt19937_64& rng) {
  std::vector<double> s(static_cast<std::size_t>(n + 1) * static_cast<std::size_t>(ld), kNaN);
  for (int d = 1; d <= n; ++d)
    for (int h = 0; h <= n; ++h) {
      if (h == d) continue;
      double x = 0.0;
      switch (kind) {
        case Kind::Real: x = 4.0 * uniform01(rng) - 2.0; break;
        case Kind::SmallInts: x = static_cast<double>(rng() % 5) - 2.0; break;  // many ties
        case Kind::RealForbidden: x = uniform01(rng) < 0.3 ? -kInf : 4.0 * uniform01(rng) - 2.0; break;
        case Kind::IntsForbidden: x = uniform01(rng) < 0.5 ? -kInf : static_cast<double>(rng() % 3); break;
        case Kind::count: break;
      }
      s[at(ld, d, h)] = x;
    }
  return s;
}

// A parser's scores: a random (mostly non-projective) tree's arcs 2 above
// noise in [0, 1), root arcs 1 above; `root_words` words also score the
// root 2.5 above noise, so each word's best head is a tree only when
// root_words is 0.
std::vector<double> planted_scores(int n, int root_words, std::mt19937& tree_rng, std::mt19937_64& rng,
                                   std::vector<int>* gold_out = nullptr) {
  const std::vector<int> r = synattn_test::random_recursive_heads(n, tree_rng);
  std::vector<int> gold(static_cast<std::size_t>(n) + 1, -1);
  for (int w = 0; w < n; ++w) gold[static_cast<std::size_t>(w) + 1] = r[static_cast<std::size_t>(w)] + 1;
  std::vector<double> s(static_cast<std::size_t>(n + 1) * static_cast<std::size_t>(n + 1), kNaN);
  for (int d = 1; d <= n; ++d)
    for (int h = 0; h <= n; ++h)
      if (h != d)
        s[at(n + 1, d, h)] = uniform01(rng) + (gold[static_cast<std::size_t>(d)] == h ? 2.0 : h == 0 ? 1.0 : 0.0);
  for (int k = 0; k < root_words; ++k) s[at(n + 1, 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(n)), 0)] = 2.5 + uniform01(rng);
  if (gold_out) *gold_out = gold;
  return s;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Real: return "real";
    case Kind::SmallInts: return "small integers";
    case Kind::RealForbidden: return "real, 30% -inf";
    case Kind::IntsForbidden: return "integers, 50% -inf";
    case Kind::count: break;
  }
  return "?";
}

// Checks the decoder on one matrix against `best` (-inf: no finite tree,
// the decoder must throw).
template <class Scalar>
void check_against(const std::vector<Scalar>& s, int n, Index ld, double best, ArborescenceWorkspace& ws) {
  std::vector<int> heads;
  if (best == -kInf) {
    REQUIRE_THROWS_AS(max_spanning_tree(s.data(), n, ld, heads, ws), synattn::Error);
    return;
  }
  const double score = max_spanning_tree(s.data(), n, ld, heads, ws);
  INFO("heads: " << ::Catch::Detail::stringify(heads));
  REQUIRE(tree_problem(heads, n) == "");
  REQUIRE(score == Approx(best).margin(1e-9));
  REQUIRE(score == Approx(tree_score(s, ld, heads)).margin(1e-12));
}

// Matrices per sentence length for the exhaustive test: n^(n-1) trees at n.
int brute_force_matrices(int n) { return n <= 5 ? 500 : n == 6 ? 400 : 60; }

}  // namespace

TEST_CASE("the decoded tree is the best single-root tree of every small random matrix", "[parse]") {
  std::mt19937_64 rng(20240601);
  ArborescenceWorkspace ws;  // one for all sizes: reuse across lengths is part of the test
  int checked = 0, infeasible = 0;
  for (int n = 1; n <= 7; ++n)
    for (int i = 0; i < brute_force_matrices(n); ++i) {
      const Kind kind = static_cast<Kind>(i % static_cast<int>(Kind::count));
      const Index ld = n + 1 + i % 3;
      const std::vector<double> s = random_scores(n, ld, kind, rng);
      const BruteForce brute(s, n, ld);
      INFO("n = " << n << ", matrix " << i << " (" << kind_name(kind) << "), ld = " << ld);
      check_against(s, n, ld, brute.found ? brute.best : -kInf, ws);
      ++checked;
      infeasible += brute.found ? 0 : 1;
    }
  CHECK(checked == 2960);
  CHECK(infeasible > 10);  // the error path was exercised too
  CHECK(infeasible < 400);
}

TEST_CASE("float scores decode to the best tree, summed in double", "[parse]") {
  std::mt19937_64 rng(7);
  ArborescenceWorkspace ws;
  for (int n = 1; n <= 6; ++n)
    for (int i = 0; i < 60; ++i) {
      const Kind kind = static_cast<Kind>(i % static_cast<int>(Kind::count));
      const Index ld = n + 1;
      const std::vector<double> s = random_scores(n, ld, kind, rng);
      std::vector<float> f(s.size());
      std::vector<double> widened(s.size());
      for (std::size_t k = 0; k < s.size(); ++k) {
        f[k] = static_cast<float>(s[k]);
        widened[k] = static_cast<double>(f[k]);
      }
      const BruteForce brute(widened, n, ld);
      INFO("n = " << n << ", matrix " << i << " (" << kind_name(kind) << ")");
      check_against(f, n, ld, brute.found ? brute.best : -kInf, ws);
    }
}

TEST_CASE("longer sentences decode to the best of the per-root-word Chu-Liu/Edmonds runs", "[parse]") {
  std::mt19937_64 rng(99);
  ArborescenceWorkspace ws;
  for (int n : {8, 9, 10, 12, 15, 20, 25, 32, 40})
    for (int i = 0; i < 16; ++i) {
      const Kind kind = static_cast<Kind>(i % static_cast<int>(Kind::count));
      const Index ld = n + 1;
      const std::vector<double> s = random_scores(n, ld, kind, rng);
      INFO("n = " << n << ", matrix " << i << " (" << kind_name(kind) << ")");
      check_against(s, n, ld, single_root_reference(s, n, ld), ws);
    }
  // Parser-like scores where several words want the root.
  std::mt19937 tree_rng(5);
  for (int n : {30, 60, 100})
    for (int i = 0; i < 3; ++i) {
      const std::vector<double> s = planted_scores(n, 2 + n / 10, tree_rng, rng);
      INFO("n = " << n << ", planted matrix " << i);
      check_against(s, n, n + 1, single_root_reference(s, n, n + 1), ws);
    }
}

TEST_CASE("the single-root constraint moves a root word under another when that costs least", "[parse]") {
  // Words 1 and 2 both prefer the root (10 each); 3 prefers 1.
  const int n = 3;
  const Index ld = 4;
  std::vector<double> s(16, kNaN);
  const auto set = [&](int h, int d, double x) { s[at(ld, d, h)] = x; };
  set(0, 1, 10); set(2, 1, 1); set(3, 1, 0);
  set(0, 2, 10); set(1, 2, 3); set(3, 2, 0);
  set(0, 3, 1);  set(1, 3, 5); set(2, 3, 2);
  // The unconstrained optimum: each word's best head, which is already a
  // tree (so no tree does better), with two root children.
  const std::vector<int> unconstrained = {-1, 0, 0, 1};
  CHECK(tree_score(s, ld, unconstrained) == 25.0);
  // With one root child: 2 under 1 loses 7 (10 -> 3), 1 under 2 loses 9.
  ArborescenceWorkspace ws;
  std::vector<int> heads;
  const double score = max_spanning_tree(s.data(), n, ld, heads, ws);
  CHECK(heads == std::vector<int>{-1, 0, 1, 1});
  CHECK(score == 18.0);
  CHECK(BruteForce(s, n, ld).best == 18.0);
}

TEST_CASE("a non-projective best tree is found", "[parse]") {
  // 0 -> 2, 2 -> 1, 1 -> 3, 2 -> 4: the arcs 1 -> 3 and 2 -> 4 cross (and
  // 0 -> 2 crosses 1 -> 3). Every other arc scores 0, so this tree (40) is
  // the only one above 30; a projective decoder could not return it.
  const int n = 4;
  const Index ld = 5;
  std::vector<double> s(25, 0.0);
  const auto set = [&](int h, int d, double x) { s[at(ld, d, h)] = x; };
  set(0, 2, 10); set(2, 1, 10); set(1, 3, 10); set(2, 4, 10);
  ArborescenceWorkspace ws;
  std::vector<int> heads;
  const double score = max_spanning_tree(s.data(), n, ld, heads, ws);
  CHECK(heads == std::vector<int>{-1, 2, 0, 1, 2});
  CHECK(score == 40.0);
  // Crossing arcs in the result: spans (1, 3) and (2, 4) interleave.
  const auto crosses = [](int a, int b, int c, int d) {
    const int l1 = a < b ? a : b, r1 = a < b ? b : a, l2 = c < d ? c : d, r2 = c < d ? d : c;
    return (l1 < l2 && l2 < r1 && r1 < r2) || (l2 < l1 && l1 < r2 && r2 < r1);
  };
  bool non_projective = false;
  for (int d = 1; d <= n; ++d)
    for (int e = 1; e <= n; ++e)
      non_projective = non_projective || crosses(heads[static_cast<std::size_t>(d)], d, heads[static_cast<std::size_t>(e)], e);
  CHECK(non_projective);
}

TEST_CASE("an empty sentence gives just the root, and one word hangs from it", "[parse]") {
  ArborescenceWorkspace ws;
  std::vector<int> heads = {5, 5, 5};
  CHECK(max_spanning_tree<double>(nullptr, 0, 1, heads, ws) == 0.0);
  CHECK(heads == std::vector<int>{-1});
  const std::vector<float> s = {kNaN, kNaN, -3.5f, kNaN};
  CHECK(max_spanning_tree(s.data(), 1, 2, heads, ws) == -3.5);
  CHECK(heads == std::vector<int>{-1, 0});
}

TEST_CASE("bad input and sentences without a finite tree are Errors that say why", "[parse][errors]") {
  using Catch::Contains;
  ArborescenceWorkspace ws;
  std::vector<int> heads = {7, 7};
  const std::vector<int> untouched = heads;
  std::vector<double> s(16, 1.0);  // n = 3, ld = 4
  const auto set = [&](int h, int d, double x) { s[at(4, d, h)] = x; };

  SECTION("NaN") {
    set(1, 2, kNaN);
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), 3, 4, heads, ws),
                      Contains("max_spanning_tree") && Contains("scores[2 * ld + 1] (arc 1 -> 2) is NaN"));
  }
  SECTION("+infinity") {
    set(0, 3, kInf);
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), 3, 4, heads, ws),
                      Contains("scores[3 * ld + 0] (arc 0 -> 3) is +infinity"));
  }
  SECTION("a word whose every head is -inf") {
    for (int h = 0; h <= 3; ++h) set(h, 2, -kInf);
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), 3, 4, heads, ws),
                      Contains("word 2 has no possible head") && Contains("no tree with a finite score"));
  }
  SECTION("words that can only head each other") {
    set(0, 1, -kInf); set(0, 2, -kInf); set(3, 1, -kInf); set(3, 2, -kInf);
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), 3, 4, heads, ws),
                      Contains("words 1, 2 can take heads only from each other"));
  }
  SECTION("words that can only hang from the root") {
    for (int d = 1; d <= 3; ++d)
      for (int h = 1; h <= 3; ++h) set(h, d, -kInf);
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), 3, 4, heads, ws),
                      Contains("no tree with exactly one root child has a finite score") &&
                          Contains("at least 3 children (here words 1, 2, 3)"));
  }
  SECTION("negative n") {
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), -1, 4, heads, ws),
                      Contains("max_spanning_tree") && Contains("n = -1, expected n >= 0"));
  }
  SECTION("ld < n + 1") {
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), 3, 3, heads, ws),
                      Contains("ld = 3, expected ld >= n + 1 = 4"));
  }
  SECTION("no scores") {
    CHECK_THROWS_WITH(max_spanning_tree<float>(nullptr, 3, 4, heads, ws), Contains("scores is null"));
  }
  SECTION("too long") {
    CHECK_THROWS_WITH(max_spanning_tree(s.data(), synattn::parse::max_arborescence_words + 1, 1 << 16, heads, ws),
                      Contains("expected at most 32768 words"));
    CHECK_THROWS_WITH(ws.reserve(-2), Contains("ArborescenceWorkspace::reserve: n = -2"));
  }
  CHECK(heads == untouched);  // an Error leaves heads as it was
}

TEST_CASE("a warm workspace decodes without allocating", "[parse]") {
  std::mt19937_64 rng(3);
  const int n = 200;
  const std::vector<double> s = random_scores(n, n + 1, Kind::Real, rng);
  const std::vector<double> small = random_scores(50, 51, Kind::SmallInts, rng);
  ArborescenceWorkspace ws;
  std::vector<int> heads;
  const double first = max_spanning_tree(s.data(), n, n + 1, heads, ws);
  const std::size_t bytes = ws.capacity();
  CHECK(ws.max_words() == n);
  CHECK(bytes > 0);

  const long long before = g_allocations;
  const double second = max_spanning_tree(s.data(), n, n + 1, heads, ws);
  max_spanning_tree(small.data(), 50, 51, heads, ws);  // shorter: no allocation either
  max_spanning_tree(s.data(), n, n + 1, heads, ws);
  const long long allocations = g_allocations - before;
  CHECK(allocations == 0);
  CHECK(ws.capacity() == bytes);
  CHECK(second == first);

  // reserve() moves the allocation up front.
  ArborescenceWorkspace reserved(n);
  std::vector<int> heads2(static_cast<std::size_t>(n) + 1);
  const long long before2 = g_allocations;
  max_spanning_tree(s.data(), n, n + 1, heads2, reserved);
  CHECK(g_allocations - before2 == 0);
  CHECK(heads2 == heads);
}

TEST_CASE("200-word sentences decode to valid, deterministic trees no simple tree beats", "[parse]") {
  std::mt19937_64 rng(200);
  std::mt19937 tree_rng(200);
  const int n = 200;
  for (Kind kind : {Kind::Real, Kind::SmallInts, Kind::RealForbidden}) {
    INFO(kind_name(kind));
    const std::vector<double> s = random_scores(n, n + 1, kind, rng);
    ArborescenceWorkspace ws;
    std::vector<int> heads;
    const double score = max_spanning_tree(s.data(), n, n + 1, heads, ws);
    REQUIRE(tree_problem(heads, n) == "");
    CHECK(score == Approx(tree_score(s, n + 1, heads)).margin(1e-9));
    // The same heads again from the warm workspace and from a fresh one.
    std::vector<int> again, fresh_heads;
    CHECK(max_spanning_tree(s.data(), n, n + 1, again, ws) == score);
    ArborescenceWorkspace fresh;
    max_spanning_tree(s.data(), n, n + 1, fresh_heads, fresh);
    CHECK(again == heads);
    CHECK(fresh_heads == heads);
    // No star (one root word heading every other) and no random tree
    // (random recursive trees with one root word) scores more.
    for (int c = 1; c <= n; ++c) {
      std::vector<int> star(static_cast<std::size_t>(n) + 1, c);
      star[0] = -1;
      star[static_cast<std::size_t>(c)] = 0;
      CHECK(score >= tree_score(s, n + 1, star));
    }
    for (int t = 0; t < 200; ++t) {
      const std::vector<int> r = synattn_test::random_recursive_heads(n, tree_rng);
      std::vector<int> tree(static_cast<std::size_t>(n) + 1, -1);
      for (int w = 0; w < n; ++w) tree[static_cast<std::size_t>(w) + 1] = r[static_cast<std::size_t>(w)] + 1;
      REQUIRE(tree_problem(tree, n) == "");
      CHECK(score >= tree_score(s, n + 1, tree));
    }
  }
}

TEST_CASE("a clearly best 200-word tree is recovered exactly, crossing arcs and all", "[parse]") {
  // Scores as a trained parser gives them: the gold arc of each word well
  // above noise and above the root's arc, so each word's best head is the
  // gold tree (the decoder's shortcut). Random recursive trees in random
  // word order are almost all non-projective.
  std::mt19937 tree_rng(11);
  std::mt19937_64 rng(11);
  const int n = 200;
  for (int t = 0; t < 5; ++t) {
    std::vector<int> gold;
    const std::vector<double> s = planted_scores(n, 0, tree_rng, rng, &gold);
    std::vector<float> f(s.size());
    for (std::size_t k = 0; k < s.size(); ++k) f[k] = static_cast<float>(s[k]);
    ArborescenceWorkspace ws;
    std::vector<int> heads;
    max_spanning_tree(f.data(), n, n + 1, heads, ws);
    CHECK(heads == gold);
    max_spanning_tree(s.data(), n, n + 1, heads, ws);
    CHECK(heads == gold);
  }
}

TEST_CASE("200 parser-like words with many root candidates decode to one root word", "[parse]") {
  std::mt19937 tree_rng(12);
  std::mt19937_64 rng(12);
  const int n = 200;
  ArborescenceWorkspace ws;
  for (int t = 0; t < 3; ++t) {
    std::vector<int> gold;
    const std::vector<double> s = planted_scores(n, 20, tree_rng, rng, &gold);
    std::vector<int> heads;
    const double score = max_spanning_tree(s.data(), n, n + 1, heads, ws);
    REQUIRE(tree_problem(heads, n) == "");
    CHECK(score >= tree_score(s, n + 1, gold));
    // The gold tree has one root word, so the best tree scores at least as
    // much; a word moved off its gold arc to another word loses more than 1
    // (gold >= 2, others < 1) and the one root word can gain less than 1.5
    // (root < 3.5, gold >= 2), so at most two words differ from gold.
    int differ = 0;
    for (int d = 1; d <= n; ++d) differ += heads[static_cast<std::size_t>(d)] != gold[static_cast<std::size_t>(d)] ? 1 : 0;
    CHECK(differ <= 2);
  }
}

// Issue 44 §5: the reweighting subtracted scores near the double limit and
// overflowed to -inf, so "no tree with a finite score exists" was reported
// where a tree scoring 0 exists. Huge scores are now rescaled first.
TEST_CASE("scores near the double limit decode to the best tree, not to 'no finite tree'", "[parse][errors]") {
  ArborescenceWorkspace ws;
  const int n = 3;
  const Index ld = n + 1;
  std::vector<double> s(static_cast<std::size_t>((n + 1) * ld), -1e308);
  // The tree 0 -> 1 -> 2 -> 3 scores 0; every other arc -1e308 (the
  // old decoder computed -1e308 - 1e308 = -inf and found no finite tree).
  s[at(ld, 1, 0)] = 0;
  s[at(ld, 2, 1)] = 0;
  s[at(ld, 3, 2)] = 0;
  std::vector<int> heads;
  CHECK(max_spanning_tree<double>(s.data(), n, ld, heads, ws) == 0.0);
  CHECK(heads == std::vector<int>{-1, 0, 1, 2});
  // And a best tree of huge positive scores against huge negative ones.
  for (double& x : s) x = -1.7e308;
  // (The tree's score, 1.25e308, is finite: a sum past DBL_MAX would be
  // inf, and Approx of an out-of-range literal inf too, checking nothing.)
  s[at(ld, 1, 0)] = 3e307;
  s[at(ld, 2, 0)] = 5e307;
  s[at(ld, 2, 1)] = 5.5e307;
  s[at(ld, 3, 1)] = 3e307;
  s[at(ld, 3, 2)] = 4e307;
  const double total = max_spanning_tree<double>(s.data(), n, ld, heads, ws);
  CHECK(std::isfinite(total));
  CHECK(total == Approx(1.25e308));
  CHECK(heads == std::vector<int>{-1, 0, 1, 2});
}
