// synattn — the decoder of the graph-based dependency parser: the maximum
// spanning arborescence rooted at node 0 with exactly one child of the root
// (Chu-Liu/Edmonds, non-projective).
//
// A biaffine parser scores every arc h -> d; the predicted tree is the
// highest-scoring head assignment that is a tree hung from the artificial
// root 0 with a single word under it, as in every UD treebank. The greedy
// argmax per word is not a tree (cycles, several root words); projective
// decoders (Eisner) would miss the crossing arcs real treebanks have.
//
// Single root, exactly and without a search over root words. Give every arc
// the weight (r, s): r = 1 for an arc from the root, else 0, and s its score,
// compared lexicographically as (-r, s): a non-root arc beats any root arc,
// and arcs of the same kind compare by score. These pairs form an ordered
// abelian group, and Edmonds' algorithm uses nothing else (additions,
// subtractions, comparisons), so it finds the maximum in that order: the
// fewest root children, then the best score among such trees. The fewest is
// one whenever a single-root tree with a finite score exists. It is the
// usual "subtract a huge constant M from every root arc" with M kept
// symbolic: no M to pick that could be too small or round the scores away.
// (Zmigrod, Vieira & Cotterell 2020, "Please Mind the Root", reach the same
// optimum by deleting root arcs one by one; Gabow & Tarjan 1984 treat a
// degree bound at the root in general.) A contraction never changes which
// arcs leave the root (the root is never on a cycle), so r is never stored:
// an arc is a root arc iff its head is slot 0.
//
// Cost: O(n^2) for the whole decode, not per contraction (Tarjan's dense
// variant). After a cycle C is contracted, the best incoming arc of every
// other node keeps its value (if it came from C, the merged arc from C is at
// least as good and no better), so only C's own best arc is searched for:
// O(n |C|) per contraction, the sizes of all cycles summing to < 2n. Finding
// the next cycle is an O(n) walk of the best-arc graph. All work is in
// double (float scores are widened once on load). Before any of it, the
// common case of a trained parser is tried: if every word's best head, the
// root competing as any other head, already makes a tree with one root
// child, that tree is the answer (no tree can beat each word's best arc).
//
// Contractions are kept as a forest (each cycle a new node whose members are
// the nodes it merged), every working arc remembering the original arc it
// stands for. Expansion walks the forest top-down: each cycle keeps all its
// arcs but the one into the member where the arc entering the cycle lands.
//
// Memory: the working copy of the scores ((n+1)^2 doubles and as many ints,
// 12 bytes an arc; 485 KB at 200 words) and O(n) index arrays, all in
// ArborescenceWorkspace. Buffers only grow, so after the first sentence of a
// given length, decoding that length or shorter allocates nothing.
#ifndef SYNATTN_PARSE_ARBORESCENCE_HPP
#define SYNATTN_PARSE_ARBORESCENCE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"

namespace synattn {
namespace parse {

// Longest sentence max_spanning_tree accepts: the working matrices of
// (n+1)^2 entries (12 bytes each) would pass 12 GiB beyond it, and every
// index, (n+1)^2 included, stays an int.
constexpr Index max_arborescence_words = Index(1) << 15;

namespace detail {
struct ArborescenceAccess;
}

// Reusable buffers: after the first call of a given size, decoding a sentence
// of that size or smaller allocates nothing. One workspace per thread.
class ArborescenceWorkspace {
 public:
  ArborescenceWorkspace() = default;
  explicit ArborescenceWorkspace(Index n) { reserve(n); }

  // Sizes the buffers for sentences of up to n words (they never shrink).
  // max_spanning_tree calls it itself; calling it first only moves the
  // allocation to a time of the caller's choosing.
  inline void reserve(Index n);

  // Longest sentence (in words) decoded without allocating.
  Index max_words() const noexcept { return nodes_ > 0 ? nodes_ - 1 : 0; }

  // Bytes held by the buffers; unchanged by a call that allocates nothing.
  inline std::size_t capacity() const noexcept;

 private:
  friend struct detail::ArborescenceAccess;

  Index nodes_ = 0;  // n + 1 of the longest sentence reserved for
  // (n+1)^2, row-major with stride N = n + 1 of the current call: entry
  // d * N + h is the working arc h -> d (slots, not words, once nodes are
  // contracted), and the original arc it stands for, as dependent * N + head.
  std::vector<double> weight_;
  std::vector<int> orig_arc_;
  // Per slot: best incoming slot, node id held, the active slots in
  // increasing order, the current cycle, its arcs' weights, marks, walk stamps.
  std::vector<int> best_, slot_id_, active_, cycle_;
  std::vector<double> cycle_weight_;
  std::vector<unsigned char> on_cycle_;
  std::vector<long long> stamp_;
  // Contraction forest over node ids (words 0..n, then one id per cycle):
  // parent id, and per cycle the arc entering it (its original dependent),
  // where its members start, and each member's id and cycle arc (original).
  std::vector<int> parent_, enter_dep_, member_begin_;
  std::vector<int> member_id_, member_arc_;
};

// scores: a view of n+1 rows, each of length >= n+1, row stride `ld`
// (elements): scores[d * ld + h] = score of the arc h -> d (head h of
// dependent d). Node 0 is the artificial root; row 0 and the diagonal are
// ignored (never read), and so are the columns past n. Scores may be
// -infinity (arc forbidden); NaN and +infinity are Errors.
// Writes heads (size n+1): heads[0] = -1, heads[d] in [0, n] for d >= 1,
// exactly one d with heads[d] == 0, no cycle, maximising
// sum_d scores[d][heads[d]] among all such trees. Ties: one maximiser, the
// same one on every call (the result depends on the scores only).
// n = 0 (just the root) gives heads = {-1} and 0. If no such tree has a
// finite score (e.g. a word whose every head is -inf), throws Error. On any
// Error, heads is left as it was.
// Returns the score of the tree: the sum of its arcs' scores, in double.
template <class Scalar>
double max_spanning_tree(const Scalar* scores, Index n, Index ld, std::vector<int>& heads,
                         ArborescenceWorkspace& ws);

namespace detail {

inline constexpr const char* kMstName = "synattn::parse::max_spanning_tree: ";

// "1, 4, 7" for up to 12 words, then "1, 4, ..., 9 (40 words)".
inline std::string word_list_text(const std::vector<int>& words) {
  constexpr std::size_t kShown = 12;
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words.size() > kShown && i == kShown - 1) {
      out += "..., " + std::to_string(words.back()) + " (" + std::to_string(words.size()) + " words)";
      break;
    }
    if (i > 0) out += ", ";
    out += std::to_string(words[i]);
  }
  return out;
}

struct ArborescenceAccess {
  static std::size_t at(std::size_t nodes, int d, int h) {
    return static_cast<std::size_t>(d) * nodes + static_cast<std::size_t>(h);
  }

  // Widens the scores into the working matrix, checking each one read. The
  // row loop has no branch (it vectorises); a bad score is looked up after.
  template <class Scalar>
  static void load(ArborescenceWorkspace& ws, const Scalar* scores, int n, Index ld) {
    const std::size_t N = static_cast<std::size_t>(n) + 1;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    for (int d = 1; d <= n; ++d) {
      const Scalar* row = scores + static_cast<Index>(d) * ld;
      double* w = ws.weight_.data() + at(N, d, 0);
      int* arc = ws.orig_arc_.data() + at(N, d, 0);
      const int base = static_cast<int>(at(N, d, 0));
      int bad = 0;
      for (int h = 0; h <= n; ++h) {
        const double x = static_cast<double>(row[h]);
        w[h] = x;
        arc[h] = base + h;
        bad |= static_cast<int>(h != d) & static_cast<int>(!(x < kInf));  // NaN or +inf
      }
      w[d] = -kInf;  // the diagonal: never an arc (a slot is not its own head)
      if (bad == 0) continue;
      for (int h = 0; h <= n; ++h) {
        const double x = static_cast<double>(row[h]);
        if (h != d && !(x < kInf))
          throw Error(std::string(kMstName) + "scores[" + std::to_string(d) + " * ld + " +
                      std::to_string(h) + "] (arc " + std::to_string(h) + " -> " + std::to_string(d) +
                      ") is " + (std::isnan(x) ? "NaN" : "+infinity") +
                      "; expected a finite score or -infinity (a forbidden arc)");
      }
    }
    rescale_huge(ws, n);
  }

  // The decoder subtracts each node's best incoming score from the others
  // (and again for every contracted cycle): near the double limit (scores of
  // +-1e308) that overflowed to -inf, and a tree scoring 0 was reported as
  // "no tree with a finite score exists". Scores beyond 2^900 in magnitude
  // are scaled down by a power of two (exact: the order of every sum is
  // kept, up to the underflow of scores below 2^-1000 beside them), so no
  // difference or sum of at most 2^100 of them can overflow. The returned
  // score is summed from the caller's scores, not these.
  static void rescale_huge(ArborescenceWorkspace& ws, int n) {
    const std::size_t N = static_cast<std::size_t>(n) + 1;
    double max_abs = 0;
    for (std::size_t k = N; k < N * N; ++k) {
      const double x = ws.weight_[k];
      if (x > -std::numeric_limits<double>::infinity()) max_abs = std::max(max_abs, std::abs(x));
    }
    constexpr double kSafe = 0x1p900;
    if (!(max_abs > kSafe)) return;
    int exponent = 0;
    (void)std::frexp(max_abs / kSafe, &exponent);
    for (std::size_t k = N; k < N * N; ++k) ws.weight_[k] = std::ldexp(ws.weight_[k], -exponent);
  }

  // The words (original nodes 1..n) inside node `id` of the forest.
  static std::vector<int> words_of(const ArborescenceWorkspace& ws, int nodes, int id) {
    std::vector<int> words;
    for (int x = 1; x < nodes; ++x) {
      int y = x;
      while (y != id && y >= 0) y = ws.parent_[static_cast<std::size_t>(y)];
      if (y == id) words.push_back(x);
    }
    return words;
  }

  [[noreturn]] static void fail_unreachable(const ArborescenceWorkspace& ws, int nodes, int id) {
    const int n = nodes - 1;
    if (id < nodes)
      throw Error(std::string(kMstName) + "word " + std::to_string(id) +
                  " has no possible head: every score scores[" + std::to_string(id) +
                  " * ld + h] (arc h -> " + std::to_string(id) + ", h in [0, " + std::to_string(n) +
                  "], h != " + std::to_string(id) + ") is -inf, so no tree with a finite score exists");
    throw Error(std::string(kMstName) + "words " + word_list_text(words_of(ws, nodes, id)) +
                " can take heads only from each other: every arc into them from the root or another "
                "word is -inf, so no tree with a finite score exists");
  }

  // Returns the best incoming slot of slot d among the m active slots: the
  // best finite non-root arc (the lowest slot on ties), else the root's arc
  // if finite (the (-r, s) order), else -1.
  static int best_head(const ArborescenceWorkspace& ws, std::size_t N, int m, int d) {
    const double* row = ws.weight_.data() + at(N, d, 0);
    const int* active = ws.active_.data();
    int best = -1;
    double best_w = -std::numeric_limits<double>::infinity();
    for (int i = 1; i < m; ++i) {
      const int h = active[i];
      if (h != d && row[h] > best_w) {
        best_w = row[h];
        best = h;
      }
    }
    if (best < 0 && row[0] > -std::numeric_limits<double>::infinity()) best = 0;
    return best;
  }

  // best_head before any contraction (every slot active): the row's maximum
  // (a vector reduction; the diagonal is -inf), then its first position.
  static int best_head_first(const ArborescenceWorkspace& ws, std::size_t N, int d) {
    const double* row = ws.weight_.data() + at(N, d, 0);
    const Index words = static_cast<Index>(N) - 1;
    const double top = Eigen::Map<const Eigen::ArrayXd>(row + 1, words).maxCoeff();
    if (top > -std::numeric_limits<double>::infinity()) {
      int h = 1;
      while (row[h] != top) ++h;
      return h;
    }
    return row[0] > -std::numeric_limits<double>::infinity() ? 0 : -1;
  }

  // One decode's state over the workspace, which the steps below share.
  struct Decoding {
    ArborescenceWorkspace& ws;
    int nodes;             // n + 1: the root and the words
    std::size_t N;         // the working matrix's row stride (nodes)
    int m = 0;             // active slots, active_[0..m), slot 0 (the root) first
    int next_id = 0;       // the node id the next contracted cycle gets
    int members = 0;       // cycle members recorded in member_id_ / member_arc_
    long long walks = 0;   // walk stamps handed out so far
    int dep_of(int arc) const { return arc / nodes; }  // arcs are dependent * N + head
    int head_of(int arc) const { return arc % nodes; }
    double& weight(int d, int h) { return ws.weight_[at(N, d, h)]; }
    int& arc(int d, int h) { return ws.orig_arc_[at(N, d, h)]; }
  };

  // Every slot active, its own node, unmarked; each word's best head.
  static void start(Decoding& s) {
    ArborescenceWorkspace& ws = s.ws;
    s.m = s.nodes;
    for (int v = 0; v < s.nodes; ++v) {
      ws.active_[v] = v;
      ws.slot_id_[v] = v;
      ws.parent_[v] = -1;
      ws.stamp_[v] = 0;
      ws.on_cycle_[v] = 0;
    }
    for (int v = 1; v < s.nodes; ++v) {
      ws.best_[v] = best_head_first(ws, s.N, v);
      if (ws.best_[v] < 0) fail_unreachable(ws, s.nodes, v);
    }
  }

  // The shortcut: each word's best head, the root competing as any other
  // (winning ties, as the lowest index), bounds every tree's score from
  // above; when it is itself a tree with one root child it is the answer,
  // written to heads. A trained parser's scores are mostly like that.
  static bool plain_tree(Decoding& s, std::vector<int>& heads) {
    ArborescenceWorkspace& ws = s.ws;
    const auto plain = [&](int v) {
      const int b = ws.best_[v];
      return b == 0 || s.weight(v, 0) >= s.weight(v, b) ? 0 : b;
    };
    int root_children = 0;
    for (int v = 1; v < s.nodes; ++v) root_children += plain(v) == 0 ? 1 : 0;
    if (root_children != 1) return false;
    for (int start = 1; start < s.nodes; ++start) {  // find_cycle's search, on plain()
      if (ws.stamp_[start] > 0) continue;
      const long long walk = ++s.walks;
      int v = start;
      while (v != 0 && ws.stamp_[v] == 0) {
        ws.stamp_[v] = walk;
        v = plain(v);
      }
      if (v != 0 && ws.stamp_[v] == walk) return false;  // a cycle
    }
    heads.resize(s.N);
    heads[0] = -1;
    for (int v = 1; v < s.nodes; ++v) heads[static_cast<std::size_t>(v)] = plain(v);
    return true;
  }

  // A cycle of the best-arc graph, written to cycle_; returns its length (0:
  // none). Walks from each active slot not yet seen in this search until the
  // root, a slot an earlier walk saw (no cycle there), or one this walk saw
  // (a cycle through it).
  static int find_cycle(Decoding& s) {
    ArborescenceWorkspace& ws = s.ws;
    const long long base = s.walks;
    for (int i = 1; i < s.m; ++i) {
      int v = ws.active_[i];
      if (ws.stamp_[v] > base) continue;
      const long long walk = ++s.walks;
      while (v != 0 && ws.stamp_[v] <= base) {
        ws.stamp_[v] = walk;
        v = ws.best_[v];
      }
      if (v != 0 && ws.stamp_[v] == walk) {
        int len = 0, u = v;
        do {
          ws.cycle_[len++] = u;
          u = ws.best_[u];
        } while (u != v);
        return len;
      }
    }
    return 0;
  }

  // Contracts the cycle cycle_[0..len) into its lowest slot r, as a new node
  // of the forest: records its members and their cycle arcs, reweights the
  // arcs into and out of it, drops the other members from the active slots
  // and searches r's best head (every other best arc is unchanged).
  static void contract_cycle(Decoding& s, int len) {
    ArborescenceWorkspace& ws = s.ws;
    const int* cycle = ws.cycle_.data();
    int r = cycle[0];
    for (int k = 1; k < len; ++k) r = cycle[k] < r ? cycle[k] : r;
    const int id = s.next_id++;
    for (int k = 0; k < len; ++k) {
      const int v = cycle[k];
      ws.on_cycle_[v] = 1;
      ws.cycle_weight_[v] = s.weight(v, ws.best_[v]);
      ws.parent_[ws.slot_id_[v]] = id;
      ws.member_id_[s.members] = ws.slot_id_[v];
      ws.member_arc_[s.members] = s.arc(v, ws.best_[v]);
      ++s.members;
    }
    ws.member_begin_[id - s.nodes + 1] = s.members;
    ws.parent_[id] = -1;
    // The cycle member with the largest value(v), the first of equals, and
    // that value: the arc the merged node keeps, into it and out of it.
    const auto best_member = [&](auto value, double& best_value) {
      int best_v = cycle[0];
      best_value = value(best_v);
      for (int k = 1; k < len; ++k) {
        const int v = cycle[k];
        const double x = value(v);
        if (x > best_value) {
          best_value = x;
          best_v = v;
        }
      }
      return best_v;
    };
    for (int i = 0; i < s.m; ++i) {
      const int u = ws.active_[i];
      if (ws.on_cycle_[u]) continue;
      // u -> cycle: entering at v breaks v's cycle arc, so it is worth
      // w(u -> v) - w(cycle arc into v); the best entry point wins. Root
      // arcs stay root arcs (u == 0), and -inf stays -inf.
      double in_w = 0;
      const int in_v = best_member([&](int v) { return s.weight(v, u) - ws.cycle_weight_[v]; }, in_w);
      s.arc(r, u) = s.arc(in_v, u);
      s.weight(r, u) = in_w;
      if (u == 0) continue;  // the root has no incoming arcs
      // cycle -> u: the best arc from any member.
      double out_w = 0;
      const int out_v = best_member([&](int v) { return s.weight(u, v); }, out_w);
      s.arc(u, r) = s.arc(u, out_v);
      s.weight(u, r) = out_w;
      // u's best arc came from the cycle: the merged arc has the same
      // value (the best from the cycle is that one), so it stays best.
      if (ws.on_cycle_[ws.best_[u]]) ws.best_[u] = r;
    }
    ws.slot_id_[r] = id;
    int kept = 0;
    for (int i = 0; i < s.m; ++i)
      if (!ws.on_cycle_[ws.active_[i]] || ws.active_[i] == r) ws.active_[kept++] = ws.active_[i];
    s.m = kept;
    for (int k = 0; k < len; ++k) ws.on_cycle_[cycle[k]] = 0;
    ws.best_[r] = best_head(ws, s.N, s.m, r);
    if (ws.best_[r] < 0) fail_unreachable(ws, s.nodes, id);
  }

  // No cycle left: the best arcs form a tree of the contracted graph. Root
  // arcs are taken only when no other arc is finite, so several root
  // children here mean every finite-score tree has that many: refused.
  static void require_one_root_child(Decoding& s) {
    ArborescenceWorkspace& ws = s.ws;
    int root_children = 0;
    for (int i = 1; i < s.m; ++i) root_children += ws.best_[ws.active_[i]] == 0 ? 1 : 0;
    if (root_children <= 1) return;
    std::vector<int> words;
    for (int i = 1; i < s.m; ++i)
      if (ws.best_[ws.active_[i]] == 0) words.push_back(s.dep_of(s.arc(ws.active_[i], 0)));
    throw Error(std::string(kMstName) + "no tree with exactly one root child has a finite score: "
                "every finite-score tree gives the root at least " + std::to_string(root_children) +
                " children (here words " + word_list_text(words) + ")");
  }

  // Expansion into heads: the top-level arcs, then each cycle from the last
  // made to the first (a cycle's members were all made before it), keeping
  // every cycle arc but the one into the member the entering arc lands in.
  static void expand(Decoding& s, std::vector<int>& heads) {
    ArborescenceWorkspace& ws = s.ws;
    const int nodes = s.nodes;
    heads.resize(s.N);
    heads[0] = -1;
    for (int i = 1; i < s.m; ++i) {
      const int v = ws.active_[i];
      const int arc = s.arc(v, ws.best_[v]);
      heads[static_cast<std::size_t>(s.dep_of(arc))] = s.head_of(arc);
      if (ws.slot_id_[v] >= nodes) ws.enter_dep_[ws.slot_id_[v] - nodes] = s.dep_of(arc);
    }
    for (int c = s.next_id - 1; c >= nodes; --c) {
      const int x = ws.enter_dep_[c - nodes];
      int y = x;  // the member of c holding word x
      while (ws.parent_[y] != c) y = ws.parent_[y];
      for (int k = ws.member_begin_[c - nodes]; k < ws.member_begin_[c - nodes + 1]; ++k) {
        const int member = ws.member_id_[k];
        const int dep = s.dep_of(ws.member_arc_[k]);
        if (member != y) heads[static_cast<std::size_t>(dep)] = s.head_of(ws.member_arc_[k]);
        if (member >= nodes) ws.enter_dep_[member - nodes] = member == y ? x : dep;
      }
    }
  }

  // Decodes the loaded matrix of `nodes` = n + 1 >= 2 nodes into heads.
  static void decode(ArborescenceWorkspace& ws, int nodes, std::vector<int>& heads) {
    Decoding s{ws, nodes, static_cast<std::size_t>(nodes)};
    start(s);
    if (plain_tree(s, heads)) return;
    s.next_id = nodes;  // ids of contracted cycles: nodes, nodes + 1, ...
    s.members = 0;
    ws.member_begin_[0] = 0;
    for (int len = find_cycle(s); len > 0; len = find_cycle(s)) contract_cycle(s, len);
    require_one_root_child(s);
    expand(s, heads);
  }
};

}  // namespace detail

inline void ArborescenceWorkspace::reserve(Index n) {
  if (n < 0 || n > max_arborescence_words)
    throw Error("synattn::parse::ArborescenceWorkspace::reserve: n = " + std::to_string(n) +
                ", expected 0 <= n <= " + std::to_string(max_arborescence_words) + " words");
  const Index nodes = n + 1;
  if (nodes <= nodes_) return;
  const std::size_t N = static_cast<std::size_t>(nodes);
  weight_.resize(N * N);
  orig_arc_.resize(N * N);
  best_.resize(N);
  slot_id_.resize(N);
  active_.resize(N);
  cycle_.resize(N);
  cycle_weight_.resize(N);
  on_cycle_.resize(N);
  stamp_.resize(N);
  // Fewer than N cycles (each removes a slot) and fewer than 2N ids.
  parent_.resize(2 * N);
  enter_dep_.resize(N);
  member_begin_.resize(N + 1);
  member_id_.resize(2 * N);
  member_arc_.resize(2 * N);
  nodes_ = nodes;
}

inline std::size_t ArborescenceWorkspace::capacity() const noexcept {
  const auto ints = [](const std::vector<int>& v) { return v.capacity() * sizeof(int); };
  return weight_.capacity() * sizeof(double) + cycle_weight_.capacity() * sizeof(double) +
         stamp_.capacity() * sizeof(long long) + on_cycle_.capacity() + ints(orig_arc_) + ints(best_) + ints(slot_id_) +
         ints(active_) + ints(cycle_) + ints(parent_) + ints(enter_dep_) + ints(member_begin_) + ints(member_id_) +
         ints(member_arc_);
}

template <class Scalar>
double max_spanning_tree(const Scalar* scores, Index n, Index ld, std::vector<int>& heads,
                         ArborescenceWorkspace& ws) {
  static_assert(std::is_floating_point<Scalar>::value,
                "max_spanning_tree: scores must be float, double or long double");
  // Messages are built only on the error paths: no allocation otherwise.
  const auto name = [] { return std::string(detail::kMstName); };
  if (n < 0)
    throw Error(name() + "n = " + std::to_string(n) + ", expected n >= 0 (the number of words, root excluded)");
  if (n > max_arborescence_words)
    throw Error(name() + "n = " + std::to_string(n) + ", expected at most " +
                std::to_string(max_arborescence_words) + " words");
  if (ld < n + 1)
    throw Error(name() + "ld = " + std::to_string(ld) + ", expected ld >= n + 1 = " + std::to_string(n + 1) +
                " (a row holds the root's score and one per word)");
  if (n == 0) {
    heads.assign(1, -1);
    return 0.0;
  }
  if (scores == nullptr)
    throw Error(name() + "scores is null, expected " + std::to_string(n + 1) + " rows of stride ld = " +
                std::to_string(ld));
  ws.reserve(n);
  const int words = static_cast<int>(n);
  detail::ArborescenceAccess::load(ws, scores, words, ld);
  detail::ArborescenceAccess::decode(ws, words + 1, heads);
  // The score from the caller's own numbers, not from the reweighted ones.
  double total = 0.0;
  for (int d = 1; d <= words; ++d)
    total += static_cast<double>(scores[static_cast<Index>(d) * ld + heads[static_cast<std::size_t>(d)]]);
  return total;
}

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_ARBORESCENCE_HPP
