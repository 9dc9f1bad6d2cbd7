// synattn — nn.Embedding (token id -> row of a (vocab, d) table) and the
// fixed sinusoidal positional encoding of Vaswani et al. (2017).
//
// Conventions of the ids: 0 is padding (its row is zero and stays zero: it
// gets no gradient), and 1 is the unknown word by convention — it is an
// ordinary learnable row; the data layer maps out-of-vocabulary words to it.
//
// Embedding follows the layer contract (docs/guide.md): forward(ids, cache,
// out) keeps the ids, infer(ids, workspace, out) keeps nothing, and
// backward(cache, dout) adds the table's gradient (ids have none).
#ifndef SYNATTN_NN_EMBEDDING_HPP
#define SYNATTN_NN_EMBEDDING_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/init.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"
#include "common.hpp"

namespace synattn {
namespace nn {

// Token ids (and labels): one per token, in the row order of the token matrix.
using IdVector = Eigen::Matrix<std::int32_t, Eigen::Dynamic, 1>;

constexpr std::int32_t kPaddingId = 0;
constexpr std::int32_t kUnknownId = 1;

// What Embedding's backward needs: the ids it looked up.
struct EmbeddingCache {
  IdVector ids;     // (tokens)
  CacheStamp stamp; // which layer filled it (util/layer_identity.hpp)
};

template <class Scalar>
class Embedding : public LeafLayer<Scalar> {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = EmbeddingCache;

  // Parameter "weight" (vocab, d) ~ N(0, 1) from `init`, row 0 (padding) zero.
  Embedding(int vocab, int d, const RandomStream& init) : vocab_(vocab), d_(d) {
    if (vocab < 2 || d < 1)
      throw Error("Embedding: vocab must be >= 2 (padding and unknown) and d >= 1, got vocab " +
                  std::to_string(vocab) + ", d " + std::to_string(d));
    weight_ = this->store_.add("weight", vocab, d);
    reset_parameters(init);
  }

  void reset_parameters(const RandomStream& init) {
    init_normal(this->store_.value(weight_), init);  // util/init.hpp's normal rule
    this->store_.value(weight_).row(kPaddingId).setZero();
  }

  int vocab_size() const noexcept { return vocab_; }
  int dim() const noexcept { return d_; }

  // out (tokens, d): row t = weight[ids[t]]; the cache keeps the ids.
  // Throws naming the first position whose id is outside [0, vocab).
  void forward(const Eigen::Ref<const IdVector>& ids, Cache& cache, Eigen::Ref<Matrix> out) const {
    cache.stamp.clear();
    look_up("Embedding::forward", ids, out);
    cache.ids = ids;
    cache.stamp.stamp(this->identity_);
  }
  // The same rows, keeping nothing (`workspace` is only cleared).
  void infer(const Eigen::Ref<const IdVector>& ids, Cache& workspace, Eigen::Ref<Matrix> out) const {
    workspace.stamp.clear();
    look_up("Embedding::infer", ids, out);
  }

  // weight.grad[ids[t]] += dout[t] for every non-padding token, in token
  // order (a fixed order, so the sums do not depend on threads).
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dout) {
    const char* fn = "Embedding::backward";
    cache.stamp.check(fn, this->identity_);
    const IdVector& ids = cache.ids;
    if (dout.rows() != ids.size() || dout.cols() != d_)
      throw Error(std::string(fn) + ": dout is " + shape_text(dout.rows(), dout.cols()) +
                  ", expected " + shape_text(ids.size(), d_));
    cache.stamp.mark_used();
    auto g = this->store_.gradient(weight_);
    for (Index t = 0; t < ids.size(); ++t)
      if (ids[t] != kPaddingId) g.row(ids[t]) += dout.row(t);
  }

  Eigen::Map<Matrix> weight() { return this->store_.value(weight_); }
  Eigen::Map<Matrix> weight_gradient() { return this->store_.gradient(weight_); }

 private:
  void look_up(const char* fn, const Eigen::Ref<const IdVector>& ids, Eigen::Ref<Matrix> out) const {
    check_ids(fn, ids);
    if (out.rows() != ids.size() || out.cols() != d_)
      throw Error(std::string(fn) + ": out is " + shape_text(out.rows(), out.cols()) + ", expected " +
                  shape_text(ids.size(), d_));
    const auto w = this->store_.value(weight_);
    for (Index t = 0; t < ids.size(); ++t) out.row(t) = w.row(ids[t]);
  }
  void check_ids(const char* fn, const Eigen::Ref<const IdVector>& ids) const {
    for (Index t = 0; t < ids.size(); ++t)
      if (ids[t] < 0 || ids[t] >= vocab_)
        throw Error(std::string(fn) + ": ids[" + std::to_string(t) + "] = " + std::to_string(ids[t]) +
                    " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
  }

  int vocab_ = 0, d_ = 0;
  int weight_ = -1;
};

// PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)),
// added (unscaled) to token rows. The table is computed once, up to
// max_length positions; a longer sequence computes its extra rows on the fly,
// so a const forward never mutates shared state (thread-safe).
template <class Scalar>
class SinusoidalPositionalEncoding {
 public:
  using Matrix = RowMajorMatrix<Scalar>;

  explicit SinusoidalPositionalEncoding(int d, int max_length = 512) : d_(d) {
    if (d < 1 || max_length < 0)
      throw Error("SinusoidalPositionalEncoding: d must be >= 1 and max_length >= 0, got d " + std::to_string(d) +
                  ", max_length " + std::to_string(max_length));
    table_.resize(max_length, d);
    for (int pos = 0; pos < max_length; ++pos) fill_row(pos, table_.row(pos).data());
  }

  int dim() const noexcept { return d_; }
  int max_length() const noexcept { return static_cast<int>(table_.rows()); }

  // The encoding of one position (d values).
  void fill_row(int pos, Scalar* row) const {
    for (int c = 0; c < d_; ++c) {
      const int i2 = c - c % 2;  // 2i
      const double angle = pos / std::pow(10000.0, static_cast<double>(i2) / d_);
      row[c] = static_cast<Scalar>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }

  // x (batch * n, d) += PE[position of the row in its sequence].
  void add_to(Eigen::Ref<Matrix> x, Index n) const {
    if (x.cols() != d_ || n < 1 || x.rows() % n != 0)
      throw Error("SinusoidalPositionalEncoding::add_to: x is " + shape_text(x.rows(), x.cols()) +
                  ", expected (batch * " + std::to_string(n) + ") x " + std::to_string(d_));
    const Index cached = std::min<Index>(n, table_.rows());
    Eigen::Matrix<Scalar, 1, Eigen::Dynamic> extra(d_);
    for (Index pos = 0; pos < n; ++pos) {
      const Scalar* pe = extra.data();
      if (pos < cached)
        pe = table_.row(pos).data();
      else
        fill_row(static_cast<int>(pos), extra.data());
      for (Index r = pos; r < x.rows(); r += n)
        x.row(r) += Eigen::Map<const Eigen::Matrix<Scalar, 1, Eigen::Dynamic>>(pe, d_);
    }
  }

 private:
  int d_ = 0;
  Matrix table_;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_EMBEDDING_HPP
