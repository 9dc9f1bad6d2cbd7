// synattn — the biaffine scorers of Dozat & Manning (2017).
//
// ArcBiaffine scores every (dependent, head) pair of a sequence:
//   S[i, j] = d_i^T U h_j + u . h_j
// where d_i, h_j are the dependent and head representations (MLP outputs) of
// positions i and j. The u . h_j term is a prior of word j being a head at
// all; a term in d_i alone would be the same for every head of row i and
// cancel in the softmax over heads, so it is left out.
//
// LabelBiaffine scores every relation of a dependent given its head:
//   s[t, l] = [d_t; 1]^T W_l [h_t; 1]
// (bilinear, both linear terms and a bias, in one (d+1) x (d+1) matrix per
// label), where row t of the head input already holds the representation of
// dependent t's head (gold while training, predicted when parsing).
//
// Both start at zero, as in the reference implementation: a fresh parser's
// scores are uniform and the first gradients come from the MLPs' outputs.
// Products go through kernels::product in a fixed split (per sequence, or
// fixed row blocks), so results are bit-identical at any thread count.
//
// Both follow the layer contract (docs/guide.md): forward(input, cache, out)
// with input {dep, head} ({dep, head, m} for arcs) keeps its inputs in the
// cache (a caller that writes them into cache.dep / cache.head pays no
// copy; LabelBiaffine keeps them with a 1 appended), infer(input,
// workspace, out) keeps nothing, and backward(cache, dout, {ddep, dhead})
// writes caller-sized input gradients.
#ifndef SYNATTN_PARSE_BIAFFINE_HPP
#define SYNATTN_PARSE_BIAFFINE_HPP

#include <Eigen/Core>

#include <algorithm>
#include <string>

#include "../error.hpp"
#include "../kernels/product.hpp"
#include "../matrix.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parallel.hpp"
#include "../util/parameters.hpp"

namespace synattn {
namespace parse {

namespace detail {
inline void check_shape(const char* fn, const char* name, Index rows, Index cols, Index want_rows, Index want_cols) {
  if (rows != want_rows || cols != want_cols)
    throw Error(std::string(fn) + ": " + name + " is " + shape_text(rows, cols) +
                ", expected " + shape_text(want_rows, want_cols));
}
}  // namespace detail

// The arc scorer's input: dependent and head rows (B * m, d), m positions per sequence.
template <class Scalar>
struct ArcInput {
  Eigen::Ref<const RowMajorMatrix<Scalar>> dep;
  Eigen::Ref<const RowMajorMatrix<Scalar>> head;
  Index m;
};
// The relation scorer's input: row t of head holds dependent t's head (T, d).
template <class Scalar>
struct LabelInput {
  Eigen::Ref<const RowMajorMatrix<Scalar>> dep;
  Eigen::Ref<const RowMajorMatrix<Scalar>> head;
};
// What both backward passes overwrite: dL/ddep and dL/dhead, the inputs' shapes.
template <class Scalar>
struct BiaffineGradients {
  Eigen::Ref<RowMajorMatrix<Scalar>> ddep;
  Eigen::Ref<RowMajorMatrix<Scalar>> dhead;
};

template <class Scalar>
struct ArcBiaffineCache {
  RowMajorMatrix<Scalar> dep, head;  // (B * m, d): the inputs (dU needs D, and dD, dH each the other)
  RowMajorMatrix<Scalar> dep_u;  // (B * m, d): D U
  Eigen::Matrix<Scalar, Eigen::Dynamic, 1> head_prior;   // (B * m): H u^T
  RowMajorMatrix<Scalar> ddep_u;
  Eigen::Matrix<Scalar, Eigen::Dynamic, 1> column_sums;  // (B * m): sum_i dS[i, j] per sequence
  CacheStamp stamp;  // which layer filled it (util/layer_identity.hpp)
  Index rows = -1, m = -1;
};

template <class Scalar>
class ArcBiaffine {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = ArcBiaffineCache<Scalar>;

  // Parameters "weight" (d, d) = U and "head_bias" (1, d) = u, zero.
  explicit ArcBiaffine(int d) : d_(d) {
    if (d < 1) throw Error("ArcBiaffine: d must be >= 1, got " + std::to_string(d));
    weight_ = store_.add("weight", d, d);
    bias_ = store_.add("head_bias", 1, d);
  }

  int dim() const noexcept { return d_; }

  using Input = ArcInput<Scalar>;
  using Gradients = BiaffineGradients<Scalar>;

  // dep, head (B * m, d) -> scores (B * m, m): row b * m + i holds S_b[i, :].
  // The cache keeps dep and head (no copy of one that already is cache.dep
  // or cache.head).
  void forward(const Input& in, Cache& c, Eigen::Ref<Matrix> scores) const {
    c.stamp.clear();
    score("ArcBiaffine::forward", in, c, scores);
    keep(in.dep, c.dep);
    keep(in.head, c.head);
    c.rows = in.dep.rows();
    c.m = in.m;
    c.stamp.stamp(identity_);
  }
  // The same scores, keeping nothing (the workspace lends D U and H u).
  void infer(const Input& in, Cache& workspace, Eigen::Ref<Matrix> scores) const {
    workspace.stamp.clear();
    score("ArcBiaffine::infer", in, workspace, scores);
  }

  // dscores (B * m, m) -> ddep, dhead (B * m, d) (overwritten, caller-sized);
  // adds dU, du.
  void backward(Cache& c, const Eigen::Ref<const Matrix>& dscores, const Gradients& dinput) {
    const char* fn = "ArcBiaffine::backward";
    c.stamp.check(fn, identity_);
    const Index m = c.m, rows = c.rows;
    const Matrix& dep = c.dep;
    const Matrix& head = c.head;
    parse::detail::check_shape(fn, "dscores", dscores.rows(), dscores.cols(), rows, m);
    parse::detail::check_shape(fn, "ddep", dinput.ddep.rows(), dinput.ddep.cols(), rows, d_);
    parse::detail::check_shape(fn, "dhead", dinput.dhead.rows(), dinput.dhead.cols(), rows, d_);
    c.stamp.mark_used();
    const Index B = rows / m;
    const auto U = store_.value(weight_);
    const auto u = store_.value(bias_);
    c.ddep_u.resize(rows, d_);
    auto dhead = dinput.dhead;
    c.column_sums.resize(rows);
    parallel_for(B, double(m) * m * d_ * 2, [&](Index b) {
      const auto dS = dscores.middleRows(b * m, m);  // (m, m)
      const auto Hb = head.middleRows(b * m, m);     // (m, d)
      // d(dep_u)_b (m, d) = dS_b H_b
      kernels::product<Scalar>(c.ddep_u.middleRows(b * m, m), dS, Hb);
      // dH_b (m, d) = dS_b^T dep_u_b + colsum(dS_b)^T u
      kernels::product<Scalar>(dhead.middleRows(b * m, m), dS, c.dep_u.middleRows(b * m, m), kernels::Transpose::lhs);
      auto sums = c.column_sums.segment(b * m, m);
      sums = dS.colwise().sum().transpose();
      dhead.middleRows(b * m, m).noalias() += sums * u;
    });
    // dU (d, d) += D^T d(dep_u);  du (1, d) += colsum(dS)^T H
    auto dU = store_.gradient(weight_);
    kernels::product<Scalar>(dU, dep, c.ddep_u, kernels::Transpose::lhs, kernels::Accumulate::add);
    auto du = store_.gradient(bias_);
    du.noalias() += c.column_sums.transpose() * head;
    // dD (B * m, d) = d(dep_u) U^T
    auto ddep = dinput.ddep;
    parallel_chunks(rows, double(d_) * d_, [&](Index r0, Index n) {
      kernels::product<Scalar>(ddep.middleRows(r0, n), c.ddep_u.middleRows(r0, n), U, kernels::Transpose::rhs);
    });
  }

  ParameterStore<Scalar>& parameter_store() noexcept { return store_; }
  const ParameterStore<Scalar>& parameter_store() const noexcept { return store_; }
  void zero_grad() { store_.zero_grad(); }

 private:
  // scores = D U H^T + 1 (H u^T)^T per sequence, D U and H u^T in c.
  void score(const char* fn, const Input& in, Cache& c, Eigen::Ref<Matrix> scores) const {
    const Eigen::Ref<const Matrix>& dep = in.dep;
    const Eigen::Ref<const Matrix>& head = in.head;
    const Index m = in.m;
    check_inputs(fn, dep, head, m);
    parse::detail::check_shape(fn, "scores", scores.rows(), scores.cols(), dep.rows(), m);
    const Index B = dep.rows() / m;
    const auto U = store_.value(weight_);
    const auto u = store_.value(bias_);
    // dep_u (B * m, d) = D U
    c.dep_u.resize(dep.rows(), d_);
    parallel_chunks(dep.rows(), double(d_) * d_, [&](Index r0, Index n) {
      kernels::product<Scalar>(c.dep_u.middleRows(r0, n), dep.middleRows(r0, n), U);
    });
    // head_prior (B * m) = H u^T
    c.head_prior.resize(dep.rows());
    c.head_prior.noalias() = head * u.transpose();
    // S_b (m, m) = dep_u_b H_b^T + 1 head_prior_b^T
    parallel_for(B, double(m) * m * d_, [&](Index b) {
      auto S = scores.middleRows(b * m, m);
      kernels::product<Scalar>(S, c.dep_u.middleRows(b * m, m), head.middleRows(b * m, m), kernels::Transpose::rhs);
      S.rowwise() += c.head_prior.segment(b * m, m).transpose();
    });
  }
  static void keep(const Eigen::Ref<const Matrix>& x, Matrix& kept) {
    if (x.data() != kept.data() || x.rows() != kept.rows() || x.cols() != kept.cols()) kept = x;
  }
  void check_inputs(const char* fn, const Eigen::Ref<const Matrix>& dep, const Eigen::Ref<const Matrix>& head,
                    Index m) const {
    if (m < 1 || dep.rows() % m != 0)
      throw Error(std::string(fn) + ": m = " + std::to_string(m) + " must be >= 1 and divide the " +
                  std::to_string(dep.rows()) + " rows of dep");
    parse::detail::check_shape(fn, "dep", dep.rows(), dep.cols(), dep.rows(), d_);
    parse::detail::check_shape(fn, "head", head.rows(), head.cols(), dep.rows(), d_);
  }

  int d_ = 0;
  ParameterStore<Scalar> store_;
  int weight_ = -1, bias_ = -1;
  LayerIdentity identity_;
};

template <class Scalar>
struct LabelBiaffineCache {
  RowMajorMatrix<Scalar> dep1, head1;  // (T, d + 1): inputs with a 1 appended
  RowMajorMatrix<Scalar> projected;    // (T, L * (d + 1)): [d; 1]^T W_l for every l
  RowMajorMatrix<Scalar> dprojected, ddep1;
  CacheStamp stamp;  // which layer filled it; clear after infer(), which keeps nothing for backward
};

template <class Scalar>
class LabelBiaffine {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = LabelBiaffineCache<Scalar>;

  // Parameter "weight" (d + 1, L * (d + 1)), zero: column block l is W_l.
  LabelBiaffine(int d, int labels) : d_(d), labels_(labels) {
    if (d < 1 || labels < 1)
      throw Error("LabelBiaffine: d and labels must be >= 1, got d " + std::to_string(d) + ", labels " +
                  std::to_string(labels));
    weight_ = store_.add("weight", d + 1, Index(labels) * (d + 1));
  }

  static constexpr Index kInferRows = 256;

  int dim() const noexcept { return d_; }
  int num_labels() const noexcept { return labels_; }

  using Input = LabelInput<Scalar>;
  using Gradients = BiaffineGradients<Scalar>;

  // dep, head (T, d) -> logits (T, L); the cache keeps both with a 1 appended.
  void forward(const Input& in, Cache& c, Eigen::Ref<Matrix> logits) const {
    c.stamp.clear();
    const Index T = prepare("LabelBiaffine::forward", in.dep, in.head, logits, c);
    const auto W = store_.value(weight_);
    // projected (T, L * d1) = dep1 W
    c.projected.resize(T, Index(labels_) * (d_ + 1));
    parallel_chunks(T, double(d_ + 1) * (d_ + 1) * labels_, [&](Index r0, Index n) {
      kernels::product<Scalar>(c.projected.middleRows(r0, n), c.dep1.middleRows(r0, n), W);
    });
    contract_heads(c.projected, c.head1, 0, logits);
    c.stamp.stamp(identity_);
  }

  // The same logits without keeping what backward() needs: [d; 1]^T W is
  // computed for blocks of kInferRows rows at a time, so parsing holds
  // kInferRows x L(d+1) floats (3.4 MB for 51 relations at d = 64) instead
  // of T x L(d+1) (54 MB for a batch of 4,096 words).
  void infer(const Input& in, Cache& workspace, Eigen::Ref<Matrix> logits) const {
    Cache& c = workspace;
    c.stamp.clear();  // nothing for backward
    const Index T = prepare("LabelBiaffine::infer", in.dep, in.head, logits, c);
    const auto W = store_.value(weight_);
    c.projected.resize(std::min<Index>(T, kInferRows), Index(labels_) * (d_ + 1));
    for (Index r0 = 0; r0 < T; r0 += kInferRows) {
      const Index n = std::min<Index>(kInferRows, T - r0);
      kernels::product<Scalar>(c.projected.topRows(n), c.dep1.middleRows(r0, n), W);
      contract_heads(c.projected.topRows(n), c.head1, r0, logits);
    }
  }

  // dlogits (T, L) -> ddep, dhead (T, d) (overwritten, caller-sized); adds dW.
  void backward(Cache& c, const Eigen::Ref<const Matrix>& dlogits, const Gradients& dinput) {
    const char* fn = "LabelBiaffine::backward";
    c.stamp.check(fn, identity_);
    const Index T = c.dep1.rows(), d1 = d_ + 1;
    parse::detail::check_shape(fn, "dlogits", dlogits.rows(), dlogits.cols(), T, labels_);
    parse::detail::check_shape(fn, "ddep", dinput.ddep.rows(), dinput.ddep.cols(), T, d_);
    parse::detail::check_shape(fn, "dhead", dinput.dhead.rows(), dinput.dhead.cols(), T, d_);
    c.stamp.mark_used();
    c.dprojected.resize(T, Index(labels_) * d1);
    auto dhead = dinput.dhead;
    for (Index t = 0; t < T; ++t) {
      const auto P = Eigen::Map<const Matrix>(c.projected.row(t).data(), labels_, d1);  // (L, d1)
      auto dP = Eigen::Map<Matrix>(c.dprojected.row(t).data(), labels_, d1);           // (L, d1)
      // dP (L, d1) = dlogits[t]^T head1[t];  dhead1[t] (d1) = dlogits[t] P
      dP.noalias() = dlogits.row(t).transpose() * c.head1.row(t);
      // dhead1[t] (d1) = dlogits[t] P; its last entry (the appended 1's) is dropped
      dhead.row(t).noalias() = dlogits.row(t) * P.leftCols(d_);
    }
    // dW (d1, L * d1) += dep1^T dprojected;  ddep1 (T, d1) = dprojected W^T
    auto dW = store_.gradient(weight_);
    kernels::product<Scalar>(dW, c.dep1, c.dprojected, kernels::Transpose::lhs, kernels::Accumulate::add);
    const auto W = store_.value(weight_);
    c.ddep1.resize(T, d1);
    parallel_chunks(T, double(d1) * d1 * labels_, [&](Index r0, Index n) {
      kernels::product<Scalar>(c.ddep1.middleRows(r0, n), c.dprojected.middleRows(r0, n), W, kernels::Transpose::rhs);
    });
    auto ddep = dinput.ddep;
    ddep = c.ddep1.leftCols(d_);
  }

  ParameterStore<Scalar>& parameter_store() noexcept { return store_; }
  const ParameterStore<Scalar>& parameter_store() const noexcept { return store_; }
  void zero_grad() { store_.zero_grad(); }

 private:
  // Checks the shapes and fills dep1, head1; returns T.
  Index prepare(const char* fn, const Eigen::Ref<const Matrix>& dep, const Eigen::Ref<const Matrix>& head,
                const Eigen::Ref<Matrix>& logits, Cache& c) const {
    const Index T = dep.rows();
    parse::detail::check_shape(fn, "dep", dep.rows(), dep.cols(), T, d_);
    parse::detail::check_shape(fn, "head", head.rows(), head.cols(), T, d_);
    parse::detail::check_shape(fn, "logits", logits.rows(), logits.cols(), T, labels_);
    append_one(dep, c.dep1);
    append_one(head, c.head1);
    return T;
  }

  // logits[r0 + t, l] = projected[t, l-block] . head1[r0 + t] for the rows of `projected`.
  void contract_heads(const Eigen::Ref<const Matrix>& projected, const Matrix& head1, Index r0,
                      Eigen::Ref<Matrix> logits) const {
    const Index d1 = d_ + 1;
    for (Index t = 0; t < projected.rows(); ++t) {
      const auto P = Eigen::Map<const Matrix>(projected.row(t).data(), labels_, d1);  // (L, d1)
      logits.row(r0 + t).transpose().noalias() = P * head1.row(r0 + t).transpose();
    }
  }

  void append_one(const Eigen::Ref<const Matrix>& x, Matrix& out) const {
    out.resize(x.rows(), d_ + 1);
    out.leftCols(d_) = x;
    out.col(d_).setOnes();
  }

  int d_ = 0, labels_ = 0;
  ParameterStore<Scalar> store_;
  int weight_ = -1;
  LayerIdentity identity_;
};

}  // namespace parse
}  // namespace synattn

#endif  // SYNATTN_PARSE_BIAFFINE_HPP
