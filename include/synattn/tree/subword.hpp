// synattn — word distances expanded to subword tokens (docs/math.md §2).
//
// A tokenizer splits words into tokens and adds special tokens ([CLS],
// [SEP], <s>) that belong to no word. The token-to-word map says which word
// each token came from, -1 for a special token. At token level:
//   dist(s, t) = dist(word(s), word(t))   for tokens of different words,
//   dist(s, t) = 0                        for tokens of the same word,
//   dist(s, t) = -2 (kSpecialDistance)    when s or t (or both) is special,
// so a special token is attended with its own learnable bucket, never
// masked. The directed form does the same to up and down separately.
//
// The map comes from the tokenizer (e.g. HuggingFace `word_ids()`, with None
// -> -1) or is derived from character spans with token_to_word_from_spans.
#ifndef SYNATTN_TREE_SUBWORD_HPP
#define SYNATTN_TREE_SUBWORD_HPP

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../special_values.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "batch.hpp"
#include "dependency_tree.hpp"
#include "distance.hpp"

namespace synattn {

// Entry of a token-to-word map for a token that belongs to no word.
constexpr int kSpecialToken = -1;

// A half-open character range [begin, end). Characters may be bytes or code
// points, as long as words and tokens use the same unit.
struct CharSpan {
  int begin = 0;
  int end = 0;
};

namespace detail {

inline std::string span_text(const CharSpan& s) {
  return "[" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ")";
}

inline std::string prefixed(const char* fn, const std::string& sentence) {
  std::string s = std::string(fn) + ": ";
  if (!sentence.empty()) s += sentence + ": ";
  return s;
}

// Rows of tokens of the same word are identical (same word row, same zero
// columns), so a run of a word's tokens costs one gather and some copies.
template <class T>
void expand_rows(const Eigen::Ref<const RowMajorMatrix<T>>& words, const std::vector<int>& map,
                 Eigen::Ref<RowMajorMatrix<T>> tokens) {
  const Index n = static_cast<Index>(map.size());
  const T special = static_cast<T>(kSpecialDistance);
  for (Index i = 0; i < n; ++i) {
    T* row = tokens.row(i).data();
    const int w = map[static_cast<std::size_t>(i)];
    if (i > 0 && map[static_cast<std::size_t>(i) - 1] == w) {
      const T* prev = tokens.row(i - 1).data();
      std::copy(prev, prev + n, row);
      continue;
    }
    if (w < 0) {
      std::fill(row, row + n, special);
      continue;
    }
    const T* src = words.row(w).data();
    for (Index j = 0; j < n; ++j) {
      const int wj = map[static_cast<std::size_t>(j)];
      row[j] = wj < 0 ? special : wj == w ? T(0) : src[wj];
    }
  }
}

inline void check_token_output(const char* fn, const char* name, Index rows, Index cols,
                               std::size_t tokens) {
  const auto n = static_cast<Index>(tokens);
  if (rows != n || cols != n)
    throw Error(std::string(fn) + ": output '" + name + "' is " + shape_text(rows, cols) + ", expected " +
                shape_text(n, n) + " (one row and column per token)");
}

inline void check_word_input(const char* fn, const char* name, Index rows, Index cols) {
  if (rows != cols)
    throw Error(std::string(fn) + ": word distances '" + name + "' are " + shape_text(rows, cols) +
                ", expected a square matrix");
}

}  // namespace detail

// Throws unless every entry of `token_to_word` is a word index in
// [0, num_words) or kSpecialToken (-1). The error names the token.
inline void validate_token_map(const std::vector<int>& token_to_word, int num_words,
                               const std::string& sentence = {}) {
  for (std::size_t t = 0; t < token_to_word.size(); ++t) {
    const int w = token_to_word[t];
    if (w < kSpecialToken || w >= num_words)
      throw Error(detail::prefixed("token map", sentence) + "token " + std::to_string(t) + ": word " +
                  std::to_string(w) + " out of range [0, " + std::to_string(num_words) +
                  ") (-1 = special token)");
  }
}

// The token-to-word map from character spans. Word spans must be valid
// (0 <= begin <= end), sorted and non-overlapping (word k ends at or before
// word k+1 begins); an empty word span is allowed and gets no token. A token
// belongs to the word whose span contains its span. A token is special (-1)
// when its span is empty (tokenizers give [CLS] (0, 0)) or overlaps no word
// (whitespace, or text the treebank leaves out). A token that overlaps a word
// without lying inside it — it straddles two words, or sticks out of one
// into the space around it — is an error naming the token and the spans:
// its distances would be ambiguous. Tokens may come in any order.
inline std::vector<int> token_to_word_from_spans(const std::vector<CharSpan>& words,
                                                 const std::vector<CharSpan>& tokens,
                                                 const std::string& sentence = {}) {
  const std::string where = detail::prefixed("token_to_word_from_spans", sentence);
  std::vector<int> nonempty;  // words that can hold a token: begins and ends strictly increase
  for (std::size_t k = 0; k < words.size(); ++k) {
    const CharSpan& s = words[k];
    if (s.begin < 0 || s.end < s.begin)
      throw Error(where + "word " + std::to_string(k) + " span " + detail::span_text(s) +
                  " is invalid: expected 0 <= begin <= end");
    if (k > 0 && s.begin < words[k - 1].end)
      throw Error(where + "word spans must be sorted and non-overlapping, but word " +
                  std::to_string(k - 1) + " " + detail::span_text(words[k - 1]) + " ends after word " +
                  std::to_string(k) + " " + detail::span_text(s) + " begins");
    if (s.end > s.begin) nonempty.push_back(static_cast<int>(k));
  }
  std::vector<int> map(tokens.size(), kSpecialToken);
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    const CharSpan& s = tokens[t];
    const std::string token = "token " + std::to_string(t) + " " + detail::span_text(s);
    if (s.begin < 0 || s.end < s.begin)
      throw Error(where + token + " is invalid: expected 0 <= begin <= end");
    if (s.begin == s.end) continue;
    // First word (by span) that ends after the token begins: the only one
    // that can contain it.
    const auto it = std::upper_bound(
        nonempty.begin(), nonempty.end(), s.begin,
        [&](int begin, int k) { return begin < words[static_cast<std::size_t>(k)].end; });
    if (it == nonempty.end()) continue;
    const int k = *it;
    const CharSpan& w = words[static_cast<std::size_t>(k)];
    if (w.begin >= s.end) continue;  // overlaps no word
    if (w.begin <= s.begin && s.end <= w.end) {
      map[t] = k;
      continue;
    }
    const auto next = it + 1;
    if (next != nonempty.end() && words[static_cast<std::size_t>(*next)].begin < s.end)
      throw Error(where + token + " straddles word " + std::to_string(k) + " " + detail::span_text(w) +
                  " and word " + std::to_string(*next) + " " +
                  detail::span_text(words[static_cast<std::size_t>(*next)]));
    throw Error(where + token + " lies partly outside word " + std::to_string(k) + " " +
                detail::span_text(w));
  }
  return map;
}

// Expands a word-level distance matrix (n_words x n_words; any values, they
// are copied) to token level: `token_distances` is n_tokens x n_tokens with
// n_tokens = token_to_word.size(), caller-provided, and must not alias the
// input. T is given explicitly: expand_to_tokens<std::int8_t>(...).
template <class T>
void expand_to_tokens(const Eigen::Ref<const RowMajorMatrix<T>>& word_distances,
                      const std::vector<int>& token_to_word,
                      Eigen::Ref<RowMajorMatrix<T>> token_distances) {
  detail::check_distance_type<T>();
  detail::check_word_input("expand_to_tokens", "word_distances", word_distances.rows(),
                           word_distances.cols());
  detail::check_token_output("expand_to_tokens", "token_distances", token_distances.rows(),
                             token_distances.cols(), token_to_word.size());
  validate_token_map(token_to_word, static_cast<int>(word_distances.rows()));
  detail::expand_rows<T>(word_distances, token_to_word, token_distances);
}

// Directed form: up and down expanded alike (same word: (0, 0); special: (-2, -2)).
template <class T>
void expand_directed_to_tokens(const Eigen::Ref<const RowMajorMatrix<T>>& word_up,
                               const Eigen::Ref<const RowMajorMatrix<T>>& word_down,
                               const std::vector<int>& token_to_word,
                               Eigen::Ref<RowMajorMatrix<T>> token_up,
                               Eigen::Ref<RowMajorMatrix<T>> token_down) {
  detail::check_distance_type<T>();
  const char* fn = "expand_directed_to_tokens";
  detail::check_word_input(fn, "word_up", word_up.rows(), word_up.cols());
  if (word_down.rows() != word_up.rows() || word_down.cols() != word_up.cols())
    throw Error(std::string(fn) + ": word_down is " + shape_text(word_down.rows(), word_down.cols()) +
                " but word_up is " + shape_text(word_up.rows(), word_up.cols()));
  detail::check_token_output(fn, "token_up", token_up.rows(), token_up.cols(), token_to_word.size());
  detail::check_token_output(fn, "token_down", token_down.rows(), token_down.cols(),
                             token_to_word.size());
  validate_token_map(token_to_word, static_cast<int>(word_up.rows()));
  detail::expand_rows<T>(word_up, token_to_word, token_up);
  detail::expand_rows<T>(word_down, token_to_word, token_down);
}

// Token-level distances of one tree. Allocates the word-level matrix
// (n_words^2 elements of T); batch_token_distances reuses one.
template <class T = std::int8_t>
void token_distances(const DependencyTree& tree, const std::vector<int>& token_to_word,
                     Eigen::Ref<RowMajorMatrix<T>> out,
                     long long cross_distance = std::numeric_limits<T>::max()) {
  detail::check_distance_type<T>();
  detail::check_token_output("token_distances", "out", out.rows(), out.cols(), token_to_word.size());
  validate_token_map(token_to_word, tree.size(), tree.sentence());
  RowMajorMatrix<T> words(tree.size(), tree.size());
  pairwise_distances<T>(tree, words, cross_distance);
  detail::expand_rows<T>(words, token_to_word, out);
}

namespace detail {

// The checks of batch_token_distances and its directed form, before
// anything is written: one map per tree, each tree's tokens within n_max,
// valid maps, cross_distance >= 0.
inline void check_token_batch(const char* fn, const std::vector<DependencyTree>& trees,
                              const std::vector<std::vector<int>>& maps, Index n_max, long long cross_distance) {
  if (maps.size() != trees.size())
    throw Error(std::string(fn) + ": " + std::to_string(trees.size()) + " trees but " +
                std::to_string(maps.size()) + " token maps; expected one map per tree");
  for (std::size_t b = 0; b < trees.size(); ++b) {
    check_fits(fn, b, trees[b].sentence(), static_cast<long long>(maps[b].size()), n_max, "tokens");
    validate_token_map(maps[b], trees[b].size(), batch_item_name(b, trees[b].sentence()));
  }
  if (cross_distance < 0)
    throw Error(std::string(fn) + ": cross_distance must be >= 0, got " + std::to_string(cross_distance));
}

// The token-level batch of K word-level matrices per tree (distances: one;
// directed: up and down): word_matrices(tree, scratch, w) fills the w x w
// corner of each of the K scratch matrices, which are expanded to the
// tree's tokens in outs[k] (its padding -1). One word-level scratch per
// output serves the whole batch. Returns the token counts.
template <class T, std::size_t K, class WordMatrices>
std::vector<int> expand_token_batch(const std::vector<DependencyTree>& trees,
                                    const std::vector<std::vector<int>>& token_to_word,
                                    const std::array<Eigen::Ref<RowMajorMatrix<T>>*, K>& outs,
                                    WordMatrices&& word_matrices) {
  const Index n_max = outs[0]->cols();
  const int w_max = longest(trees);
  std::array<RowMajorMatrix<T>, K> scratch;
  for (auto& m : scratch) m.resize(w_max, w_max);
  std::vector<int> lengths(trees.size());
  for (std::size_t b = 0; b < trees.size(); ++b) {
    const Index w = trees[b].size();
    const Index t = static_cast<Index>(token_to_word[b].size());
    word_matrices(trees[b], scratch, w);
    for (std::size_t k = 0; k < K; ++k) {
      expand_rows<T>(scratch[k].topLeftCorner(w, w), token_to_word[b],
                     outs[k]->block(static_cast<Index>(b) * n_max, 0, t, t));
      fill_padding<T>(*outs[k], static_cast<Index>(b), t);
    }
    lengths[b] = static_cast<int>(t);
  }
  return lengths;
}

}  // namespace detail

// Token-level padded batch: `out` is (batch * n_max, n_max) with n_max =
// out.cols() counted in tokens; sentence b's n_tokens x n_tokens corner holds
// its expanded distances and every pair with a padding position is -1.
// Returns the token counts (the lengths the attention layer takes).
// Validates everything (shape, map sizes and entries, lengths) before
// writing. One word-level scratch matrix serves the whole batch.
template <class T = std::int8_t>
std::vector<int> batch_token_distances(const std::vector<DependencyTree>& trees,
                                       const std::vector<std::vector<int>>& token_to_word,
                                       Eigen::Ref<RowMajorMatrix<T>> out,
                                       long long cross_distance = std::numeric_limits<T>::max()) {
  detail::check_distance_type<T>();
  const char* fn = "batch_token_distances";
  detail::check_batch_shape(fn, "out", out.rows(), out.cols(), trees.size());
  detail::check_token_batch(fn, trees, token_to_word, out.cols(), cross_distance);
  return detail::expand_token_batch<T, 1>(
      trees, token_to_word, {&out}, [cross_distance](const DependencyTree& tree, auto& scratch, Index w) {
        pairwise_distances<T>(tree, scratch[0].topLeftCorner(w, w), cross_distance);
      });
}

// Directed form of batch_token_distances.
template <class T = std::int8_t>
std::vector<int> batch_token_directed_distances(const std::vector<DependencyTree>& trees,
                                                const std::vector<std::vector<int>>& token_to_word,
                                                Eigen::Ref<RowMajorMatrix<T>> up,
                                                Eigen::Ref<RowMajorMatrix<T>> down,
                                                long long cross_distance = std::numeric_limits<T>::max()) {
  detail::check_distance_type<T>();
  const char* fn = "batch_token_directed_distances";
  detail::check_batch_shape(fn, "up", up.rows(), up.cols(), trees.size());
  if (down.rows() != up.rows() || down.cols() != up.cols())
    throw Error(std::string(fn) + ": output 'down' is " + shape_text(down.rows(), down.cols()) + " but 'up' is " +
                shape_text(up.rows(), up.cols()) + "; they must match");
  detail::check_token_batch(fn, trees, token_to_word, up.cols(), cross_distance);
  return detail::expand_token_batch<T, 2>(
      trees, token_to_word, {&up, &down}, [cross_distance](const DependencyTree& tree, auto& scratch, Index w) {
        directed_distances<T>(tree, scratch[0].topLeftCorner(w, w), scratch[1].topLeftCorner(w, w), cross_distance);
      });
}

}  // namespace synattn

#endif  // SYNATTN_TREE_SUBWORD_HPP
