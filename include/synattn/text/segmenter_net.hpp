// synattn — the tokenizer's network: for every character of a text, scores
// for five classes (text/segmenter_labels.hpp): inside a token, a token ends
// here, a token and a sentence end here, and the same two for a multiword
// token.
//
//   h_0     = E[c]                                        (char_dim; 0 outside the text)
//   z_l[p]  = sum_{k=0..2} h_{l-1}[p + (k - 1) d_l] W_l[k] + b_l    (channels)
//   h_l     = relu(z_l) (+ h_{l-1} for l >= 1: a residual)            (0 outside the text)
//   logits  = h_L W_out + b_out                           (classes)
//
// Width-3 convolutions with dilations d_l (default 1, 2, 4, 8, 16) see
// 1 + 2 (d_1 + ... + d_L) characters around each one (63 by default): enough
// for the abbreviation before a full stop and the capital after it, the
// evidence a sentence end has in edited text. Why convolutions, not a
// recurrent network: a character's scores depend on a fixed window only, so a
// text of any length is scored in pieces with that window's margin, in
// bounded memory and linear time, with the same result as in one piece;
// and every product is a dense GEMM over all characters of a batch
// (kernels::product in fixed row blocks: bit-identical at any thread count).
//
// Input: one sequence of character ids over several pieces of text, with at
// least max_dilation() rows of id 0 before, between and after them (see
// SegmenterInput). Rows of id 0 read as zeros and stay zero after every
// layer, so the pieces never see each other: the gaps are the convolution's
// padding. forward() keeps what backward() needs in a cache; infer() keeps
// nothing. Every parameter's gradient is checked by central differences in
// double (tests/text/test_segmenter.cpp).
#ifndef SYNATTN_TEXT_SEGMENTER_NET_HPP
#define SYNATTN_TEXT_SEGMENTER_NET_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../kernels/product.hpp"
#include "../matrix.hpp"
#include "../util/init.hpp"
#include "../util/parallel.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"

namespace synattn {
namespace text {

struct SegmenterNetOptions {
  int num_chars = 0;  // ids in [0, num_chars); 0 = outside the text
  int char_dim = 32;
  int channels = 64;
  std::vector<int> dilations{1, 2, 4, 8, 16};
  int classes = 5;

  void validate() const {
    if (num_chars < 2 || char_dim < 1 || channels < 1 || classes < 2 || dilations.empty())
      throw Error("SegmenterNetOptions: need num_chars >= 2, char_dim >= 1, channels >= 1, classes >= 2 and at "
                  "least one layer; got num_chars " + std::to_string(num_chars) + ", char_dim " +
                  std::to_string(char_dim) + ", channels " + std::to_string(channels) + ", classes " +
                  std::to_string(classes) + ", " + std::to_string(dilations.size()) + " layers");
    if (num_chars > (1 << 24) || char_dim > 4096 || channels > 4096 || classes > 64 || dilations.size() > 64)
      throw Error("SegmenterNetOptions: num_chars <= 2^24, char_dim and channels <= 4096, classes <= 64 and at "
                  "most 64 layers");
    for (int d : dilations)
      if (d < 1 || d > 4096) throw Error("SegmenterNetOptions: dilations must be in [1, 4096], got " + std::to_string(d));
  }
  int max_dilation() const { return *std::max_element(dilations.begin(), dilations.end()); }
  // Characters on each side that reach a character's scores.
  int context() const {
    int c = 0;
    for (int d : dilations) c += d;
    return c;
  }
};

// The softmax of one row of k scores into `out` (std::exp, not Eigen's
// vectorised exp: five classes gain nothing from it). Returns the sum of the
// exponentials before normalising.
template <class Scalar>
Scalar softmax_row(const Scalar* row, Index k, Scalar* out) {
  Scalar m = row[0];
  for (Index i = 1; i < k; ++i) m = std::max(m, row[i]);
  Scalar sum = 0;
  for (Index i = 0; i < k; ++i) sum += out[i] = std::exp(row[i] - m);
  for (Index i = 0; i < k; ++i) out[i] /= sum;
  return sum;
}

// ids (N): the packed sequence, 0 in the gaps. The first and last
// max_dilation() rows, and as many between any two pieces, must be 0
// (check_gaps() verifies the ends; between pieces it is the caller's layout).
using CharIds = std::vector<std::int32_t>;

template <class Scalar>
struct SegmenterCache {
  std::vector<RowMajorMatrix<Scalar>> h;  // h_0 .. h_L
  std::vector<RowMajorMatrix<Scalar>> a;  // relu(z_l) (l = 1..L), for the relu's gradient
  CharIds ids;
  std::uint64_t owner = 0;
};

template <class Scalar>
struct SegmenterWorkspace {
  RowMajorMatrix<Scalar> h, next;
};

template <class Scalar>
class SegmenterNet {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = SegmenterCache<Scalar>;

  SegmenterNet(const SegmenterNetOptions& o, const RandomStream& init) : o_(o) {
    o_.validate();
    embedding_ = store_.add("embedding.weight", o_.num_chars, o_.char_dim);
    int in = o_.char_dim;
    for (std::size_t l = 0; l < o_.dilations.size(); ++l) {
      const std::string p = "conv" + std::to_string(l) + ".";
      weights_.push_back(store_.add(p + "weight", 3 * Index(in), o_.channels));
      biases_.push_back(store_.add(p + "bias", 1, o_.channels));
      in = o_.channels;
    }
    out_weight_ = store_.add("output.weight", o_.channels, o_.classes);
    out_bias_ = store_.add("output.bias", 1, o_.classes);
    reset_parameters(init);
  }

  // Embedding ~ N(0, 1); each map's weight and bias ~ U(+-1/sqrt(fan_in)).
  void reset_parameters(const RandomStream& init) {
    init_normal(store_.value(embedding_), init.derive(0));
    store_.value(embedding_).row(0).setZero();
    for (std::size_t l = 0; l < weights_.size(); ++l) {
      const double bound = linear_init_bound(store_.value(weights_[l]).rows());
      init_uniform(store_.value(weights_[l]), bound, init.derive(1 + 2 * l));
      init_uniform(store_.value(biases_[l]), bound, init.derive(2 + 2 * l));
    }
    const double bound = linear_init_bound(o_.channels);
    init_uniform(store_.value(out_weight_), bound, init.derive(1000));
    init_uniform(store_.value(out_bias_), bound, init.derive(1001));
  }

  const SegmenterNetOptions& options() const noexcept { return o_; }
  ParameterStore<Scalar>& parameter_store() noexcept { return store_; }
  const ParameterStore<Scalar>& parameter_store() const noexcept { return store_; }
  void zero_grad() { store_.zero_grad(); }

  // logits (N, classes) for ids (N); keeps what backward() needs.
  void forward(const CharIds& ids, Cache& c, Eigen::Ref<Matrix> logits) const {
    check_input("SegmenterNet::forward", ids, logits);
    const std::size_t L = weights_.size();
    c.h.resize(L + 1);
    c.a.resize(L + 1);
    embed(ids, c.h[0]);
    for (std::size_t l = 0; l < L; ++l) {
      layer(l, ids, c.h[l], c.a[l + 1]);
      c.h[l + 1] = c.a[l + 1];
      if (l > 0) c.h[l + 1] += c.h[l];
    }
    output(c.h[L], logits);
    c.ids = ids;
    c.owner = reinterpret_cast<std::uintptr_t>(this);
  }

  // The same logits, keeping nothing beyond two buffers of the workspace.
  void infer(const CharIds& ids, SegmenterWorkspace<Scalar>& ws, Eigen::Ref<Matrix> logits) const {
    check_input("SegmenterNet::infer", ids, logits);
    embed(ids, ws.h);
    for (std::size_t l = 0; l < weights_.size(); ++l) {
      layer(l, ids, ws.h, ws.next);
      if (l > 0) ws.next += ws.h;
      ws.h.swap(ws.next);
    }
    output(ws.h, logits);
  }

  // dlogits (N, classes) -> adds every parameter's gradient.
  void backward(const Cache& c, const Eigen::Ref<const Matrix>& dlogits) {
    const char* fn = "SegmenterNet::backward";
    if (c.owner != reinterpret_cast<std::uintptr_t>(this) || c.h.size() != weights_.size() + 1)
      throw Error(std::string(fn) + ": the cache was not filled by this network's forward()");
    const Index N = static_cast<Index>(c.ids.size());
    if (dlogits.rows() != N || dlogits.cols() != o_.classes)
      throw Error(std::string(fn) + ": dlogits is " + shape_text(dlogits.rows(), dlogits.cols()) + ", expected " +
                  shape_text(N, o_.classes));
    const std::size_t L = weights_.size();
    // Output map: dW_out += h_L^T dlogits, db_out += colsum, dh = dlogits W_out^T.
    Matrix dh(N, o_.channels);
    weight_gradient(store_.gradient(out_weight_), c.h[L], dlogits);
    add_column_sums(store_.gradient(out_bias_), dlogits);
    parallel_chunks(N, double(o_.channels) * o_.classes, [&](Index r0, Index m) {
      kernels::product<Scalar>(dh.middleRows(r0, m), dlogits.middleRows(r0, m), store_.value(out_weight_),
                               kernels::Transpose::rhs);
    });
    Matrix dz, dprev;
    for (std::size_t l = L; l-- > 0;) {
      const Matrix& in = c.h[l];
      const Index in_dim = in.cols();
      // dz = dh through the relu (a > 0; rows outside the text have a = 0).
      dz = (c.a[l + 1].array() > Scalar(0)).select(dh.array(), Scalar(0)).matrix();
      add_column_sums(store_.gradient(biases_[l]), dz);
      dprev.setZero(N, in_dim);
      const auto W = store_.value(weights_[l]);
      auto dW = store_.gradient(weights_[l]);
      for (int k = 0; k < 3; ++k) {
        const Index s = Index(k - 1) * o_.dilations[l];
        const Index r0 = std::max<Index>(0, -s), len = N - (s < 0 ? -s : s);
        if (len <= 0) continue;
        // z[p] += in[p + s] W_k for p in [r0, r0 + len).
        weight_gradient(dW.middleRows(Index(k) * in_dim, in_dim), in.middleRows(r0 + s, len), dz.middleRows(r0, len));
        auto Wk = W.middleRows(Index(k) * in_dim, in_dim);
        parallel_chunks(len, double(in_dim) * o_.channels, [&](Index q0, Index m) {
          kernels::product<Scalar>(dprev.middleRows(r0 + s + q0, m), dz.middleRows(r0 + q0, m), Wk,
                                   kernels::Transpose::rhs, kernels::Accumulate::add);
        });
      }
      // The residual passes dh straight to the layer below; rows outside the
      // text carry no gradient (their activations are constants).
      if (l > 0) dprev += dh;
      zero_gaps(c.ids, dprev);
      dh.swap(dprev);
    }
    // dE[c] += dh_0 rows, in row order (a fixed order: thread-count independent).
    auto dE = store_.gradient(embedding_);
    for (Index p = 0; p < N; ++p) {
      const std::int32_t id = c.ids[static_cast<std::size_t>(p)];
      if (id != 0) dE.row(id) += dh.row(p);
    }
  }

 private:
  void check_input(const char* fn, const CharIds& ids, const Eigen::Ref<Matrix>& logits) const {
    const Index N = static_cast<Index>(ids.size());
    if (logits.rows() != N || logits.cols() != o_.classes)
      throw Error(std::string(fn) + ": logits is " + shape_text(logits.rows(), logits.cols()) + ", expected " +
                  shape_text(N, o_.classes));
    const std::size_t gap = static_cast<std::size_t>(o_.max_dilation());
    for (std::size_t p = 0; p < ids.size(); ++p) {
      const std::int32_t id = ids[p];
      if (id < 0 || id >= o_.num_chars)
        throw Error(std::string(fn) + ": character id " + std::to_string(id) + " at position " + std::to_string(p) +
                    " is outside [0, " + std::to_string(o_.num_chars) + ")");
      if (id != 0 && (p < gap || p + gap >= ids.size()))
        throw Error(std::string(fn) + ": position " + std::to_string(p) + " holds a character, but the first and last " +
                    std::to_string(gap) + " positions must be gaps (id 0)");
    }
  }

  void embed(const CharIds& ids, Matrix& h) const {
    const auto E = store_.value(embedding_);
    h.resize(static_cast<Index>(ids.size()), o_.char_dim);
    for (std::size_t p = 0; p < ids.size(); ++p) {
      if (ids[p] == 0)
        h.row(static_cast<Index>(p)).setZero();
      else
        h.row(static_cast<Index>(p)) = E.row(ids[p]);
    }
  }

  // out = relu(conv_l(in)), zero in the gaps.
  void layer(std::size_t l, const CharIds& ids, const Matrix& in, Matrix& out) const {
    const Index N = in.rows(), in_dim = in.cols();
    const auto W = store_.value(weights_[l]);
    const auto b = store_.value(biases_[l]);
    out.resize(N, o_.channels);
    out.rowwise() = b.row(0);
    for (int k = 0; k < 3; ++k) {
      const Index s = Index(k - 1) * o_.dilations[l];
      const Index r0 = std::max<Index>(0, -s), len = N - (s < 0 ? -s : s);
      if (len <= 0) continue;
      auto Wk = W.middleRows(Index(k) * in_dim, in_dim);
      parallel_chunks(len, double(in_dim) * o_.channels, [&](Index q0, Index m) {
        kernels::product<Scalar>(out.middleRows(r0 + q0, m), in.middleRows(r0 + s + q0, m), Wk,
                                 kernels::Transpose::none, kernels::Accumulate::add);
      });
    }
    out = out.cwiseMax(Scalar(0));
    zero_gaps(ids, out);
  }

  void output(const Matrix& h, Eigen::Ref<Matrix> logits) const {
    const auto W = store_.value(out_weight_);
    const auto b = store_.value(out_bias_);
    parallel_chunks(h.rows(), double(o_.channels) * o_.classes, [&](Index r0, Index m) {
      kernels::product<Scalar>(logits.middleRows(r0, m), h.middleRows(r0, m), W);
      logits.middleRows(r0, m).rowwise() += b.row(0);
    });
  }

  static void zero_gaps(const CharIds& ids, Matrix& m) {
    for (std::size_t p = 0; p < ids.size(); ++p)
      if (ids[p] == 0) m.row(static_cast<Index>(p)).setZero();
  }

  // dW (in, out) += x^T (in, N) dy (N, out), split over dW's rows (x's
  // columns): each entry's sum over N keeps its order at any thread count.
  template <class Grad>
  static void weight_gradient(Grad&& dW, const Eigen::Ref<const Matrix>& x, const Eigen::Ref<const Matrix>& dy) {
    parallel_chunks(dW.rows(), double(x.rows()) * dW.cols(), [&](Index r0, Index m) {
      kernels::product<Scalar>(dW.middleRows(r0, m), x.middleCols(r0, m), dy, kernels::Transpose::lhs,
                               kernels::Accumulate::add);
    });
  }
  template <class Grad>
  static void add_column_sums(Grad&& db, const Matrix& dy) {
    for (Index r = 0; r < dy.rows(); ++r) db.row(0) += dy.row(r);
  }

  SegmenterNetOptions o_;
  ParameterStore<Scalar> store_;
  int embedding_ = -1, out_weight_ = -1, out_bias_ = -1;
  std::vector<int> weights_, biases_;
};

}  // namespace text
}  // namespace synattn

#endif  // SYNATTN_TEXT_SEGMENTER_NET_HPP
