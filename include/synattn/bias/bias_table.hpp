// synattn — the learnable syntax-bias table T and its strength s (docs/math.md §4.1):
// one scalar per distance bucket, shared by all heads or one row per head;
// the gather (bucket block -> s * T[bucket]) and its adjoint (score gradients
// summed per bucket, times s, and dL/ds).
//
// Tree fusion (docs/math.md §4.3a: the trees of several parsers): V trees
// of each sequence ("views", e.g. drawn by V parsers), each with its own
// int8 bucket block, give the bias
//
//   s * sum_v w[a?, v] T[v?, a?, bucket_v(i, j)],   w = softmax_v(view_logits[a?, :])
//
// with one table per view (or one shared by all views) and one weight vector
// per layer (or per head). The views of a sequence mask the same pairs.
//
// BiasTableRef is a non-owning view of a table, its scale and their gradients
// (the attention layer hands one out over its flat parameter buffer);
// BiasTable owns storage for standalone use. Both share every operation.
#ifndef SYNATTN_BIAS_BIAS_TABLE_HPP
#define SYNATTN_BIAS_BIAS_TABLE_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/parameters.hpp"
#include "bucketing.hpp"

namespace synattn {

// How a table starts. The decay initialisers are the "fixed decay function of
// tree distance" baselines (freeze the table to keep them fixed). Each bucket b
// stands for a distance d(b) (bucket_distances); the special-token bucket
// always starts at 0.
enum class TableInit {
  Zero,              // T = 0: a fresh layer is exactly plain attention
  LinearDecay,       // T[b] = -decay * d(b)   (decay = 1: T[b] = -b for linear buckets)
  ExponentialDecay,  // T[b] = exp(-decay * d(b)): +1 on the word itself, -> 0 far away
};

inline const char* table_init_name(TableInit init) {
  switch (init) {
    case TableInit::Zero:
      return "zero";
    case TableInit::LinearDecay:
      return "linear decay";
    case TableInit::ExponentialDecay:
      return "exponential decay";
  }
  return "?";
}

// Largest table the int8 bucket blocks can index (bucket values 0..127).
constexpr int kMaxTableBuckets = 128;

// Most tree views a fused bias takes.
constexpr int kMaxTreeViews = 8;

// How many trees the bias fuses and what their tables and weights share.
struct TreeFusion {
  int views = 1;                  // 1: one tree, no fusion (no view weights)
  bool shared_table = false;      // all views read one table instead of one table each
  bool per_head_weights = false;  // one weight vector per head instead of one per layer
  bool weights_learnable = true;  // false: the view weights stay softmax(0) = 1 / views

  // Tables stored: one per view, or one.
  int table_views() const noexcept { return shared_table ? 1 : views; }
};

struct BiasTableOptions {
  Bucketing bucketing = Bucketing::linear();  // gives the table size
  bool per_head = false;                      // one row per head instead of one shared row
  TableInit init = TableInit::Zero;
  double decay = 1.0;           // slope (LinearDecay) or rate (ExponentialDecay)
  bool table_learnable = true;  // false: frozen, takes no gradient
  double scale = 1.0;           // the strength s
  bool scale_learnable = true;  // false: s frozen, no dL/ds
  TreeFusion fusion;            // several trees per sequence (views > 1)

  int num_buckets() const noexcept { return bucketing.num_buckets(); }
  // Rows of the stored table: one per (table view, head row), view-major.
  int table_rows(int heads) const noexcept { return fusion.table_views() * (per_head ? heads : 1); }
  // Rows of view_logits (0 without fusion).
  int weight_rows(int heads) const noexcept { return fusion.views > 1 ? (fusion.per_head_weights ? heads : 1) : 0; }

  void validate(const char* where) const {
    const std::string w = std::string(where) + ": ";
    if (bucketing.num_buckets() > kMaxTableBuckets)
      throw Error(w + bucketing.describe() + " has more than " + std::to_string(kMaxTableBuckets) +
                  " buckets, which int8 bucket blocks cannot index");
    if (!std::isfinite(decay) || decay < 0)
      throw Error(w + "decay must be finite and >= 0, got " + std::to_string(decay));
    if (!std::isfinite(scale)) throw Error(w + "scale must be finite, got " + std::to_string(scale));
    if (fusion.views < 1 || fusion.views > kMaxTreeViews)
      throw Error(w + "fusion.views must be in [1, " + std::to_string(kMaxTreeViews) + "], got " +
                  std::to_string(fusion.views));
  }
};

// The distance each bucket stands for: linear b -> b (the last bucket: M);
// log -> the smallest distance that falls in it; directed (up, down) -> up +
// down. The special bucket, if any, gets -1 ("no distance").
inline std::vector<int> bucket_distances(const Bucketing& bucketing) {
  const int nb = bucketing.num_buckets();
  std::vector<int> d(static_cast<std::size_t>(nb), -1);
  const int m = bucketing.max_distance();
  switch (bucketing.kind()) {
    case BucketKind::Linear:
      for (int b = 0; b < bucketing.distance_buckets(); ++b) d[static_cast<std::size_t>(b)] = b;
      break;
    case BucketKind::Directed:
      for (int b = 0; b < bucketing.distance_buckets(); ++b) d[static_cast<std::size_t>(b)] = b / (m + 1) + b % (m + 1);
      break;
    case BucketKind::Log:
      for (int dist = bucketing.saturation_distance(); dist >= 0; --dist)
        d[static_cast<std::size_t>(bucketing.bucket_nonnegative(dist))] = dist;
      // A log bucket no distance reaches (possible when B - E exceeds the
      // number of distinct log steps) inherits its predecessor's distance.
      for (int b = 1; b < bucketing.distance_buckets(); ++b)
        if (d[static_cast<std::size_t>(b)] < 0) d[static_cast<std::size_t>(b)] = d[static_cast<std::size_t>(b - 1)];
      break;
  }
  return d;
}

// Writes the initial table of `options` into `table` (rows x num_buckets,
// every row the same).
template <class Scalar>
void initialise_table(const BiasTableOptions& options, Eigen::Ref<RowMajorMatrix<Scalar>> table) {
  const int nb = options.num_buckets();
  if (table.cols() != nb)
    throw Error("initialise_table: table has " + std::to_string(table.cols()) + " columns, " +
                options.bucketing.describe() + " needs " + std::to_string(nb));
  const std::vector<int> d = bucket_distances(options.bucketing);
  for (int b = 0; b < nb; ++b) {
    const int dist = d[static_cast<std::size_t>(b)];
    double v = 0.0;
    if (dist >= 0 && options.init == TableInit::LinearDecay) v = -options.decay * dist;
    if (dist >= 0 && options.init == TableInit::ExponentialDecay) v = std::exp(-options.decay * dist);
    table.col(b).setConstant(static_cast<Scalar>(v));
  }
}

// What the attention kernels read of a bias table and where they add its
// gradients: read-only values (table_rows x num_buckets, the scale s and,
// with fusion, the view logits) and, for a backward pass, the gradient
// storage (null in a forward pass). Cheap to copy; the storage and the
// options must outlive it.
template <class Scalar>
class BiasTerms {
 public:
  BiasTerms(const BiasTableOptions& options, int heads, const Scalar* table, const Scalar* scale,
            Scalar* table_gradient = nullptr, Scalar* scale_gradient = nullptr, const Scalar* view_logits = nullptr,
            Scalar* view_logit_gradient = nullptr) noexcept
      : options_(&options),
        heads_(heads),
        table_(table),
        scale_(scale),
        view_logits_(view_logits),
        table_gradient_(table_gradient),
        scale_gradient_(scale_gradient),
        view_logit_gradient_(view_logit_gradient) {}

  const BiasTableOptions& options() const noexcept { return *options_; }
  int heads() const noexcept { return heads_; }
  // Rows of one view's table: 1 (shared by heads) or heads.
  Index rows() const noexcept { return options_->per_head ? heads_ : 1; }
  Index num_buckets() const noexcept { return options_->num_buckets(); }
  int views() const noexcept { return options_->fusion.views; }
  // The table row head `head` reads (0 when shared), within its view's table.
  Index row_of(int head) const noexcept { return options_->per_head ? head : 0; }
  // The stored row view `view` of head `head` reads.
  Index table_row(int view, int head) const noexcept {
    return (options_->fusion.shared_table ? 0 : view) * rows() + row_of(head);
  }
  // The whole stored table: (table_rows, num_buckets), view-major.
  Eigen::Map<const RowMajorMatrix<Scalar>> table() const noexcept {
    return Eigen::Map<const RowMajorMatrix<Scalar>>(table_, options_->table_rows(heads_), num_buckets());
  }
  Scalar scale() const noexcept { return *scale_; }
  // The row of view_logits head `head` reads (0 with one weight vector per layer).
  Index weight_row_of(int head) const noexcept { return options_->fusion.per_head_weights ? head : 0; }
  // w[head?, view] = softmax over views of view_logits[head?, :] (1 without
  // fusion), the max subtracted. Recomputed per call (views exps): the logits
  // may change between calls, and the kernels ask once per block.
  Scalar view_weight(int head, int view) const noexcept {
    const int nv = views();
    if (nv == 1) return Scalar(1);
    const Scalar* l = view_logits_ + weight_row_of(head) * nv;
    const Scalar m = *std::max_element(l, l + nv);
    Scalar sum = 0;
    for (int v = 0; v < nv; ++v) sum += std::exp(l[v] - m);
    return std::exp(l[view] - m) / sum;
  }

  // out[0] = -inf, out[b + 1] = s * w[head, view] * T[table_row(view, head), b]:
  // a gather table in which bucket -1 reads the mask. Without fusion (w = 1)
  // it is s * T exactly. `out` holds num_buckets() + 1 values.
  void shifted_row(int head, Scalar* out, int view = 0) const noexcept {
    const Scalar f = views() == 1 ? *scale_ : *scale_ * view_weight(head, view);
    const Scalar* t = table_ + table_row(view, head) * num_buckets();
    out[0] = -std::numeric_limits<Scalar>::infinity();
    for (Index b = 0; b < num_buckets(); ++b) out[b + 1] = f * t[b];
  }

  // Without fusion: hist[b + 1] = sum of dL/dscore over the pairs in bucket b
  // (slot 0 is the masked pairs' and ignored): dT[row_of(head)] += s *
  // hist[1:], dL/ds += <T[row_of(head)], hist[1:]>. Summing per bucket first
  // and weighting by T afterwards is the same sum as weighting every pair.
  // Needs the gradient storage of what is learnable.
  void apply_histogram(int head, const Scalar* hist) const noexcept {
    const Scalar s = *scale_;
    const Index nb = num_buckets();
    const Scalar* t = table_ + row_of(head) * nb;
    if (options_->table_learnable) {
      Scalar* g = table_gradient_ + row_of(head) * nb;
      for (Index b = 0; b < nb; ++b) g[b] += s * hist[b + 1];
    }
    if (options_->scale_learnable) {
      Scalar ds = 0;
      for (Index b = 0; b < nb; ++b) ds += t[b] * hist[b + 1];
      *scale_gradient_ += ds;
    }
  }

  // With fusion: hist + v * slots is head `head`'s histogram of view v (slot
  // 0 ignored), summed over its sequences. With g_v = s <T_v, hist_v>:
  // dT_v += s w_v hist_v, dL/ds += sum_v w_v <T_v, hist_v>, and through the
  // softmax dlogits += w * (g - <w, g>).
  void apply_view_histograms(int head, const Scalar* hist, Index slots) const noexcept {
    const Scalar s = *scale_;
    const Index nb = num_buckets();
    const int nv = views();
    Scalar w[kMaxTreeViews], g[kMaxTreeViews];
    Scalar ds = 0, wg = 0;
    for (int v = 0; v < nv; ++v) {
      w[v] = view_weight(head, v);
      const Scalar* h = hist + v * slots + 1;
      const Index row = table_row(v, head);
      const Scalar* t = table_ + row * nb;
      if (options_->table_learnable) {
        Scalar* dt = table_gradient_ + row * nb;
        for (Index b = 0; b < nb; ++b) dt[b] += s * w[v] * h[b];
      }
      Scalar dot = 0;
      for (Index b = 0; b < nb; ++b) dot += t[b] * h[b];
      ds += w[v] * dot;
      g[v] = s * dot;
      wg += w[v] * g[v];
    }
    if (options_->scale_learnable) *scale_gradient_ += ds;
    if (options_->fusion.weights_learnable) {
      Scalar* dl = view_logit_gradient_ + weight_row_of(head) * nv;
      for (int v = 0; v < nv; ++v) dl[v] += w[v] * (g[v] - wg);
    }
  }

 protected:
  const BiasTableOptions* options_;
  int heads_;
  const Scalar* table_;
  const Scalar* scale_;
  const Scalar* view_logits_;  // (weight_rows, views); null without fusion
  Scalar* table_gradient_;
  Scalar* scale_gradient_;
  Scalar* view_logit_gradient_;
};

// Tree fusion: the `views` blocks stacked in `buckets` (equal rows each)
// must mask the same pairs. The first pair at which a view v >= 1 and view
// 0 disagree (v, the row within a block, the column), or none.
struct ViewMaskMismatch {
  int view = 0;
  Index row = 0, col = 0;
};
inline std::optional<ViewMaskMismatch> first_view_mask_mismatch(const Eigen::Ref<const BucketBlock>& buckets,
                                                                int views) {
  const Index rows = buckets.rows() / views;
  for (int v = 1; v < views; ++v)
    for (Index r = 0; r < rows; ++r) {
      const std::int8_t* first = buckets.data() + r * buckets.outerStride();
      const std::int8_t* mine = buckets.data() + (v * rows + r) * buckets.outerStride();
      for (Index j = 0; j < buckets.cols(); ++j)
        if ((first[j] == -1) != (mine[j] == -1)) return ViewMaskMismatch{v, r, j};
    }
  return std::nullopt;
}

// w = softmax(view_logits) row by row: (weight_rows x views), or 1 x 1 = 1
// without fusion. (Row r is head r's weights with per-head weights: the row
// of head r is r.)
template <class Scalar>
RowMajorMatrix<Scalar> view_weight_matrix(const BiasTerms<Scalar>& terms) {
  const int nv = terms.views();
  RowMajorMatrix<Scalar> w(std::max(1, terms.options().weight_rows(terms.heads())), nv);
  for (Index r = 0; r < w.rows(); ++r)
    for (int v = 0; v < nv; ++v) w(r, v) = terms.view_weight(static_cast<int>(r), v);
  return w;
}

// A view of a bias table: `table` (table_rows x num_buckets, row-major: per
// view, 1 row shared or `heads` per head), the scale s, with fusion the view
// logits (weight_rows x views), and their gradients. Cheap to copy; the
// storage and the options must outlive it.
template <class Scalar>
class BiasTableRef : public BiasTerms<Scalar> {
  using Terms = BiasTerms<Scalar>;

 public:
  using Matrix = RowMajorMatrix<Scalar>;

  BiasTableRef(const BiasTableOptions& options, int heads, Scalar* table, Scalar* scale, Scalar* table_gradient,
               Scalar* scale_gradient, Scalar* view_logits = nullptr, Scalar* view_logit_gradient = nullptr)
      : Terms(options, heads, table, scale, table_gradient, scale_gradient, view_logits, view_logit_gradient),
        mutable_table_(table),
        mutable_scale_(scale),
        mutable_logits_(view_logits) {
    if (options.fusion.views > 1 && (view_logits == nullptr || view_logit_gradient == nullptr))
      throw Error("BiasTableRef: a table fusing " + std::to_string(options.fusion.views) +
                  " tree views needs view_logits and their gradient");
  }

  // options(), heads(), rows(), num_buckets(), views(), row_of(), table_row(),
  // view_weight(), shifted_row() and the histogram adjoints come from BiasTerms.
  bool table_learnable() const noexcept { return this->options_->table_learnable; }
  bool scale_learnable() const noexcept { return this->options_->scale_learnable; }

  Eigen::Map<Matrix> table() const {
    return Eigen::Map<Matrix>(mutable_table_, this->options_->table_rows(this->heads_), this->num_buckets());
  }
  Eigen::Map<Matrix> table_gradient() const {
    return Eigen::Map<Matrix>(this->table_gradient_, this->options_->table_rows(this->heads_), this->num_buckets());
  }
  Scalar& scale() const noexcept { return *mutable_scale_; }
  Scalar& scale_gradient() const noexcept { return *this->scale_gradient_; }
  // The view logits (weight_rows x views; 0 x 0 without fusion) and their gradient.
  Eigen::Map<Matrix> view_logits() const {
    return Eigen::Map<Matrix>(mutable_logits_, this->options_->weight_rows(this->heads_),
                              this->views() > 1 ? this->views() : 0);
  }
  Eigen::Map<Matrix> view_logit_gradient() const {
    return Eigen::Map<Matrix>(this->view_logit_gradient_, this->options_->weight_rows(this->heads_),
                              this->views() > 1 ? this->views() : 0);
  }
  // w = softmax(view_logits) row by row (weight_rows x views; 1 x 1 = 1 without fusion).
  Matrix view_weights() const { return view_weight_matrix(this->terms()); }

  // Table, scale and view logits back to their initial values (options.init,
  // options.scale, logits 0: equal weights).
  void initialise() const {
    initialise_table<Scalar>(*this->options_, table());
    *mutable_scale_ = static_cast<Scalar>(this->options_->scale);
    view_logits().setZero();
  }
  void zero_grad() const {
    table_gradient().setZero();
    *this->scale_gradient_ = Scalar(0);
    view_logit_gradient().setZero();
  }

  // bias(i, j) = s * sum_v w[head, v] T[table_row(v, head), buckets_v(i, j)],
  // or -inf where the bucket is -1 (a masked pair). `buckets` stacks the
  // views: (views * rows, cols), view v in rows [v * rows, (v + 1) * rows),
  // all masking the same pairs; `bias` is (rows, cols). Without fusion this
  // is s * T[row_of(head), buckets(i, j)].
  void gather(int head, const Eigen::Ref<const BucketBlock>& buckets, Eigen::Ref<Matrix> bias) const {
    check_head("gather", head);
    check_block("gather", buckets, bias.rows(), bias.cols(), "bias");
    Scalar shifted[kMaxTableBuckets + 1];
    this->shifted_row(head, shifted);
    const Index rows = bias.rows();
    for (Index i = 0; i < rows; ++i)
      for (Index j = 0; j < buckets.cols(); ++j) bias(i, j) = shifted[buckets(i, j) + 1];
    for (int v = 1; v < this->views(); ++v) {
      this->shifted_row(head, shifted, v);
      for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < buckets.cols(); ++j) bias(i, j) += shifted[buckets(v * rows + i, j) + 1];
    }
  }

  // The adjoint of gather: with G = dL/dbias (rows, cols), adds the table,
  // scale and view-logit gradients (skipping masked pairs, bucket -1). A
  // frozen table, scale or weight vector is left alone.
  void accumulate_gradient(int head, const Eigen::Ref<const BucketBlock>& buckets,
                           const Eigen::Ref<const Matrix>& dbias) const {
    check_head("accumulate_gradient", head);
    check_block("accumulate_gradient", buckets, dbias.rows(), dbias.cols(), "gradient");
    const Index slots = this->num_buckets() + 1, rows = dbias.rows();
    Scalar hist[kMaxTreeViews * (kMaxTableBuckets + 1)] = {};
    for (int v = 0; v < this->views(); ++v)
      for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < buckets.cols(); ++j) hist[v * slots + buckets(v * rows + i, j) + 1] += dbias(i, j);
    if (this->views() == 1)
      this->apply_histogram(head, hist);
    else
      this->apply_view_histograms(head, hist, slots);
  }

  // The kernels' read-only view of this table, with its gradient storage.
  BiasTerms<Scalar> terms() const noexcept { return *this; }

 private:
  void check_head(const char* fn, int head) const {
    if (head < 0 || head >= this->heads_)
      throw Error(std::string("BiasTable::") + fn + ": head " + std::to_string(head) + " out of range [0, " +
                  std::to_string(this->heads_) + ")");
  }
  // `buckets` must stack views() blocks of the shape of `what` (rows x cols),
  // with values in [-1, num_buckets) and one mask shared by the views.
  void check_block(const char* fn, const Eigen::Ref<const BucketBlock>& buckets, Index rows, Index cols,
                   const char* what) const {
    const int nv = this->views();
    if (buckets.rows() != nv * rows || buckets.cols() != cols)
      throw Error(
          std::string("BiasTable::") + fn + ": " + what + " is " + shape_text(rows, cols) + " but buckets are " +
          shape_text(buckets.rows(), buckets.cols()) +
          (nv > 1 ? " (expected " + std::to_string(nv) + " tree views stacked: " + shape_text(nv * rows, cols) + ")"
                  : std::string()));
    const int nb = static_cast<int>(this->num_buckets());
    for (Index i = 0; i < buckets.rows(); ++i)
      for (Index j = 0; j < buckets.cols(); ++j) {
        const int v = buckets(i, j);
        if (v < -1 || v >= nb)
          throw Error(std::string("BiasTable::") + fn + ": buckets(" + std::to_string(i) + ", " + std::to_string(j) +
                      ") = " + std::to_string(v) + " is out of range [-1, " + std::to_string(nb) + ") for " +
                      this->options_->bucketing.describe());
      }
    if (const auto m = first_view_mask_mismatch(buckets, nv))
      throw Error(std::string("BiasTable::") + fn + ": tree view " + std::to_string(m->view) + " has bucket " +
                  std::to_string(buckets(m->view * rows + m->row, m->col)) + " at (" + std::to_string(m->row) + ", " +
                  std::to_string(m->col) + ") where view 0 has " + std::to_string(buckets(m->row, m->col)) +
                  ": the views must mask the same pairs");
  }

  // The base's read-only storage, writable: a BiasTableRef is made from
  // mutable storage only.
  Scalar* mutable_table_;
  Scalar* mutable_scale_;
  Scalar* mutable_logits_;
};

// A standalone table that owns its parameters ("table" and "scale" in one
// flat store) and initialises them from the options.
template <class Scalar>
class BiasTable {
 public:
  using Matrix = RowMajorMatrix<Scalar>;

  explicit BiasTable(BiasTableOptions options = {}, int heads = 1) : options_(std::move(options)), heads_(heads) {
    if (heads < 1) throw Error("BiasTable: heads must be >= 1, got " + std::to_string(heads));
    options_.validate("BiasTable");
    table_id_ = store_.add("table", options_.table_rows(heads), options_.num_buckets(), options_.table_learnable);
    scale_id_ = store_.add("scale", 1, 1, options_.scale_learnable);
    if (options_.fusion.views > 1)
      logits_id_ = store_.add("view_logits", options_.weight_rows(heads), options_.fusion.views,
                              options_.fusion.weights_learnable);
    ref().initialise();
  }

  BiasTableRef<Scalar> ref() {
    return BiasTableRef<Scalar>(options_, heads_, store_.value(table_id_).data(), store_.value(scale_id_).data(),
                                store_.gradient(table_id_).data(), store_.gradient(scale_id_).data(),
                                logits_id_ >= 0 ? store_.value(logits_id_).data() : nullptr,
                                logits_id_ >= 0 ? store_.gradient(logits_id_).data() : nullptr);
  }
  // Read-only use: the view never writes through its pointers in const calls.
  BiasTableRef<Scalar> ref() const { return const_cast<BiasTable*>(this)->ref(); }

  const BiasTableOptions& options() const noexcept { return options_; }
  int heads() const noexcept { return heads_; }
  Eigen::Map<Matrix> table() { return store_.value(table_id_); }
  Eigen::Map<const Matrix> table() const { return store_.value(table_id_); }
  Eigen::Map<Matrix> table_gradient() { return store_.gradient(table_id_); }
  Scalar scale() const { return store_.value(scale_id_)(0, 0); }
  void set_scale(Scalar s) { store_.value(scale_id_)(0, 0) = s; }
  Scalar scale_gradient() const { return store_.gradient(scale_id_)(0, 0); }
  ParameterStore<Scalar>& parameters() noexcept { return store_; }
  const ParameterStore<Scalar>& parameters() const noexcept { return store_; }
  void zero_grad() { store_.zero_grad(); }

  void gather(int head, const Eigen::Ref<const BucketBlock>& buckets, Eigen::Ref<Matrix> bias) const {
    ref().gather(head, buckets, bias);
  }
  void accumulate_gradient(int head, const Eigen::Ref<const BucketBlock>& buckets,
                           const Eigen::Ref<const Matrix>& dbias) {
    ref().accumulate_gradient(head, buckets, dbias);
  }

 private:
  BiasTableOptions options_;
  int heads_;
  ParameterStore<Scalar> store_;
  int table_id_ = -1;
  int scale_id_ = -1;
  int logits_id_ = -1;  // view_logits, with fusion
};

}  // namespace synattn

#endif  // SYNATTN_BIAS_BIAS_TABLE_HPP
