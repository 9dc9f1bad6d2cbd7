// synattn — character features of a word: a convolution over its characters
// followed by max-pooling over positions (the character CNN of Ma & Hovy,
// 2016, and of Kim et al., 2016).
//
//   chars of word t: c_0 .. c_{len-1}          (ids; 0 is padding)
//   e_p   = E[c_p]                             (char_dim)
//   x_p   = [e_{p-h}; ..; e_{p+h}]             (width * char_dim; zeros outside the word, h = width / 2)
//   z_p   = W x_p + b                          (filters)
//   out_t = relu(max_p z_p)                    (filters; a word of length 0 gives 0)
//
// Why a CNN and not hashed character n-grams: n-gram tables need tens of
// thousands of rows to avoid collisions (megabytes of parameters), while the
// CNN learns affixes and capitalisation from a few thousand character rows
// and one small filter bank, which keeps a shipped model small.
//
// The convolution is one product over the im2col rows of every character of
// the batch (nn::Linear, fixed row blocks: bit-identical at any thread
// count). The layer contract (docs/guide.md): forward({chars, lengths},
// cache, out) keeps the convolution's cache (its input is the im2col rows,
// written there directly), the window slots' char ids and the arg-max rows;
// infer(input, workspace, out) keeps nothing; backward(cache, dout) adds the
// parameter gradients (char ids have none).
#ifndef SYNATTN_PARSE_CHAR_CNN_HPP
#define SYNATTN_PARSE_CHAR_CNN_HPP

#include <Eigen/Core>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../nn/embedding.hpp"
#include "../nn/linear.hpp"
#include "../util/finite.hpp"
#include "../util/layer_identity.hpp"
#include "../util/random.hpp"

namespace synattn {
namespace parse {

// Character ids of T words, one row per word, padded with 0 (T x max_chars),
// and each word's length (number of leading non-padding ids).
using CharIdMatrix = Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct CharCnnOptions {
  int num_chars = 0;   // ids in [0, num_chars); 0 = padding
  int char_dim = 32;
  int filters = 128;
  int width = 3;       // odd
};

// The input: character ids of T words (T, C), and each word's length.
struct CharInput {
  Eigen::Ref<const CharIdMatrix> chars;
  const std::vector<int>& lengths;
};

template <class Scalar>
struct CharCnnCache {
  nn::LinearCache<Scalar> columns;       // the convolution's; its input: im2col rows (R, width * char_dim), R = sum of lengths
  RowMajorMatrix<Scalar> conv;           // (R, filters): z
  std::vector<std::int32_t> column_char; // (R * width): char id under each window slot, -1 outside the word
  Eigen::Matrix<std::int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>
      argmax;  // (T, filters): row of z, -1: none
  RowMajorMatrix<Scalar> dconv, dcolumns;
  CacheStamp stamp;                      // which layer filled it (util/layer_identity.hpp)
  Index words = -1;
};

template <class Scalar>
class CharCnn {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = CharCnnCache<Scalar>;

  CharCnn(const CharCnnOptions& o, const RandomStream& init)
      : o_(checked(o)), embedding_(o.num_chars, o.char_dim, init.derive(0)),
        conv_(o.width * o.char_dim, o.filters, init.derive(1)) {}

  const CharCnnOptions& options() const noexcept { return o_; }
  int output_dim() const noexcept { return o_.filters; }

  using Input = CharInput;

  // chars (T, C), lengths (T) in [0, C] -> out (T, filters).
  void forward(const Input& in, Cache& c, Eigen::Ref<Matrix> out) const {
    c.stamp.clear();
    run("CharCnn::forward", in, c, out, false);
    c.stamp.stamp(identity_);
  }
  // The same out, keeping nothing (the workspace lends its buffers).
  void infer(const Input& in, Cache& workspace, Eigen::Ref<Matrix> out) const {
    workspace.stamp.clear();
    run("CharCnn::infer", in, workspace, out, true);
  }

  // dout (T, filters) -> adds dE, dW, db.
  void backward(Cache& c, const Eigen::Ref<const Matrix>& dout) {
    const char* fn = "CharCnn::backward";
    c.stamp.check(fn, identity_);
    if (dout.rows() != c.words || dout.cols() != o_.filters)
      throw Error(std::string(fn) + ": dout is " + shape_text(dout.rows(), dout.cols()) +
                  ", expected " + shape_text(c.words, o_.filters));
    c.stamp.mark_used();
    const Index R = c.conv.rows();
    // dconv (R, filters): dout routed to each word's arg-max row (relu active only).
    c.dconv.setZero(R, o_.filters);
    for (Index t = 0; t < c.words; ++t)
      for (Index f = 0; f < o_.filters; ++f) {
        const std::int32_t r = c.argmax(t, f);
        if (r >= 0) c.dconv(r, f) += dout(t, f);
      }
    if (R == 0) return;
    // dW += dconv^T columns, db += colsum(dconv); dcolumns (R, w * dc) = dconv W
    c.dcolumns.resize(R, conv_.in_features());
    conv_.backward(c.columns, c.dconv, c.dcolumns);
    // dE[char] += the window slots it filled, in row order (fixed order).
    auto dE = embedding_.parameter_store().gradient(0);
    const int w = o_.width, dc = o_.char_dim;
    for (Index r = 0; r < R; ++r)
      for (int k = 0; k < w; ++k) {
        const std::int32_t id = c.column_char[static_cast<std::size_t>(r * w + k)];
        if (id >= 0) dE.row(id) += c.dcolumns.row(r).segment(Index(k) * dc, dc);
      }
  }

  // Stores: "<prefix>embedding.", "<prefix>conv.".
  template <class F>
  void visit_stores(const std::string& prefix, F&& f) {
    f(prefix + "embedding.", embedding_.parameter_store(), std::string());
    f(prefix + "conv.", conv_.parameter_store(), std::string());
  }
  void zero_grad() {
    embedding_.zero_grad();
    conv_.zero_grad();
  }
  nn::Embedding<Scalar>& embedding() noexcept { return embedding_; }
  nn::Linear<Scalar>& conv() noexcept { return conv_; }

 private:
  void run(const char* fn, const Input& in, Cache& c, Eigen::Ref<Matrix> out, bool inference) const {
    const Eigen::Ref<const CharIdMatrix>& chars = in.chars;
    const std::vector<int>& lengths = in.lengths;
    const Index T = chars.rows();
    if (static_cast<Index>(lengths.size()) != T)
      throw Error(std::string(fn) + ": lengths has " + std::to_string(lengths.size()) +
                  " entries, expected one per word (" + std::to_string(T) + ")");
    if (out.rows() != T || out.cols() != o_.filters)
      throw Error(std::string(fn) + ": out is " + shape_text(out.rows(), out.cols()) +
                  ", expected " + shape_text(T, o_.filters));
    Index R = 0;
    for (Index t = 0; t < T; ++t) {
      const int len = lengths[static_cast<std::size_t>(t)];
      if (len < 0 || len > chars.cols())
        throw Error(std::string(fn) + ": lengths[" + std::to_string(t) + "] = " + std::to_string(len) +
                    " is outside [0, " + std::to_string(chars.cols()) + "]");
      for (int p = 0; p < len; ++p) {
        const std::int32_t id = chars(t, p);
        if (id < 1 || id >= o_.num_chars)
          throw Error(std::string(fn) + ": chars(" + std::to_string(t) + ", " + std::to_string(p) + ") = " +
                      std::to_string(id) + " is outside [1, " + std::to_string(o_.num_chars) + ") (0 is padding)");
      }
      R += len;
    }
    const int w = o_.width, dc = o_.char_dim, half = o_.width / 2;
    // columns (R, w * dc): row of (t, p) holds the embeddings of chars p-half .. p+half.
    Matrix& columns = c.columns.input;  // the convolution's cache keeps its input: written there
    columns.setZero(R, Index(w) * dc);
    c.column_char.assign(static_cast<std::size_t>(R * w), -1);
    const auto E = embedding_.parameter_store().value(0);
    Index row = 0;
    for (Index t = 0; t < T; ++t) {
      const int len = lengths[static_cast<std::size_t>(t)];
      for (int p = 0; p < len; ++p, ++row)
        for (int k = 0; k < w; ++k) {
          const int q = p + k - half;
          if (q < 0 || q >= len) continue;
          const std::int32_t id = chars(t, q);
          c.column_char[static_cast<std::size_t>(row * w + k)] = id;
          columns.row(row).segment(Index(k) * dc, dc) = E.row(id);
        }
    }
    // conv (R, filters) = columns W^T + b
    c.conv.resize(R, o_.filters);
    if (R > 0) {
      if (inference)
        conv_.infer(columns, c.columns, c.conv);
      else
        conv_.forward(columns, c.columns, c.conv);
    }
    // The library's non-finite policy (docs/errors.md): the max below picks a
    // row by comparisons, which are all false on NaN, so a NaN feature (huge
    // finite weights: inf - inf) would come out as 0 and every score after
    // it finite, the parse chosen in silence.
    if (!all_finite(c.conv)) {
      Index r = 0, t = 0, word_end = lengths.empty() ? 0 : lengths[0];
      while (r < R && c.conv.row(r).allFinite()) ++r;
      while (t + 1 < T && r >= word_end) word_end += lengths[static_cast<std::size_t>(++t)];
      throw Error(std::string(fn) + ": the character convolution of word " + std::to_string(t) +
                  " is not finite: the model's weights overflow");
    }
    // out (T, filters) = relu(max over each word's rows)
    c.argmax.resize(T, o_.filters);
    row = 0;
    for (Index t = 0; t < T; ++t) {
      const int len = lengths[static_cast<std::size_t>(t)];
      for (Index f = 0; f < o_.filters; ++f) {
        Index best = -1;
        Scalar v = 0;
        for (int p = 0; p < len; ++p)
          if (best < 0 || c.conv(row + p, f) > v) {
            best = row + p;
            v = c.conv(row + p, f);
          }
        const bool active = best >= 0 && v > Scalar(0);
        out(t, f) = active ? v : Scalar(0);
        c.argmax(t, f) = active ? static_cast<std::int32_t>(best) : -1;
      }
      row += len;
    }
    c.words = T;
  }

  static const CharCnnOptions& checked(const CharCnnOptions& o) {
    if (o.num_chars < 2 || o.char_dim < 1 || o.filters < 1 || o.width < 1 || o.width % 2 == 0)
      throw Error("CharCnn: need num_chars >= 2, char_dim >= 1, filters >= 1 and an odd width >= 1; got num_chars " +
                  std::to_string(o.num_chars) + ", char_dim " + std::to_string(o.char_dim) + ", filters " +
                  std::to_string(o.filters) + ", width " + std::to_string(o.width));
    return o;
  }

  CharCnnOptions o_;
  nn::Embedding<Scalar> embedding_;
  nn::Linear<Scalar> conv_;
  LayerIdentity identity_;
};

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_CHAR_CNN_HPP
