// synattn — the learnable syntax-bias table T and its strength s (SPEC §4):
// one scalar per distance bucket, shared by all heads or one row per head;
// the gather (bucket block -> s * T[bucket]) and its adjoint (score gradients
// summed per bucket, times s, and dL/ds).
//
// BiasTableRef is a non-owning view of a table, its scale and their gradients
// (the attention layer hands one out over its flat parameter buffer);
// BiasTable owns storage for standalone use. Both share every operation.
#ifndef SYNATTN_BIAS_BIAS_TABLE_HPP
#define SYNATTN_BIAS_BIAS_TABLE_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
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

struct BiasTableOptions {
  Bucketing bucketing = Bucketing::linear();  // gives the table size
  bool per_head = false;                      // one row per head instead of one shared row
  TableInit init = TableInit::Zero;
  double decay = 1.0;           // slope (LinearDecay) or rate (ExponentialDecay)
  bool table_learnable = true;  // false: frozen, takes no gradient
  double scale = 1.0;           // the strength s
  bool scale_learnable = true;  // false: s frozen, no dL/ds

  int num_buckets() const noexcept { return bucketing.num_buckets(); }

  void validate(const char* where) const {
    const std::string w = std::string(where) + ": ";
    if (bucketing.num_buckets() > kMaxTableBuckets)
      throw Error(w + bucketing.describe() + " has more than " + std::to_string(kMaxTableBuckets) +
                  " buckets, which int8 bucket blocks cannot index");
    if (!std::isfinite(decay) || decay < 0)
      throw Error(w + "decay must be finite and >= 0, got " + std::to_string(decay));
    if (!std::isfinite(scale)) throw Error(w + "scale must be finite, got " + std::to_string(scale));
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
// gradients: read-only values (rows x num_buckets and the scale s) and, for a
// backward pass, the gradient storage (null in a forward pass). Cheap to
// copy; the storage and the options must outlive it.
template <class Scalar>
class BiasTerms {
 public:
  BiasTerms(const BiasTableOptions& options, int heads, const Scalar* table, const Scalar* scale,
            Scalar* table_gradient = nullptr, Scalar* scale_gradient = nullptr) noexcept
      : options_(&options),
        heads_(heads),
        table_(table),
        scale_(scale),
        table_gradient_(table_gradient),
        scale_gradient_(scale_gradient) {}

  const BiasTableOptions& options() const noexcept { return *options_; }
  int heads() const noexcept { return heads_; }
  Index rows() const noexcept { return options_->per_head ? heads_ : 1; }
  Index num_buckets() const noexcept { return options_->num_buckets(); }
  // The table row head `head` reads (0 when shared).
  Index row_of(int head) const noexcept { return options_->per_head ? head : 0; }
  Eigen::Map<const RowMajorMatrix<Scalar>> table() const noexcept {
    return Eigen::Map<const RowMajorMatrix<Scalar>>(table_, rows(), num_buckets());
  }
  Scalar scale() const noexcept { return *scale_; }

  // out[0] = -inf, out[b + 1] = s * T[row_of(head), b]: a gather table in which
  // bucket -1 reads the mask. `out` holds num_buckets() + 1 values.
  void shifted_row(int head, Scalar* out) const noexcept {
    const Scalar s = *scale_;
    const Scalar* t = table_ + row_of(head) * num_buckets();
    out[0] = -std::numeric_limits<Scalar>::infinity();
    for (Index b = 0; b < num_buckets(); ++b) out[b + 1] = s * t[b];
  }

  // hist[b + 1] = sum of dL/dscore over the pairs in bucket b (slot 0 is the
  // masked pairs' and ignored): dT[row_of(head)] += s * hist[1:], dL/ds +=
  // <T[row_of(head)], hist[1:]>. Summing per bucket first and weighting by T
  // afterwards is the same sum as weighting every pair. Needs the gradient
  // storage of what is learnable.
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

 protected:
  const BiasTableOptions* options_;
  int heads_;
  const Scalar* table_;
  const Scalar* scale_;
  Scalar* table_gradient_;
  Scalar* scale_gradient_;
};

// A view of a bias table: `table` (rows x num_buckets, row-major; rows = 1
// shared or `heads` per head), the scale s, and their gradients. Cheap to copy;
// the storage and the options must outlive it.
template <class Scalar>
class BiasTableRef : public BiasTerms<Scalar> {
  using Terms = BiasTerms<Scalar>;

 public:
  using Matrix = RowMajorMatrix<Scalar>;

  BiasTableRef(const BiasTableOptions& options, int heads, Scalar* table, Scalar* scale, Scalar* table_gradient,
               Scalar* scale_gradient)
      : Terms(options, heads, table, scale, table_gradient, scale_gradient),
        mutable_table_(table),
        mutable_scale_(scale) {}

  // options(), heads(), rows(), num_buckets(), row_of(), shifted_row() and
  // apply_histogram() come from BiasTerms.
  bool table_learnable() const noexcept { return this->options_->table_learnable; }
  bool scale_learnable() const noexcept { return this->options_->scale_learnable; }

  Eigen::Map<Matrix> table() const { return Eigen::Map<Matrix>(mutable_table_, this->rows(), this->num_buckets()); }
  Eigen::Map<Matrix> table_gradient() const {
    return Eigen::Map<Matrix>(this->table_gradient_, this->rows(), this->num_buckets());
  }
  Scalar& scale() const noexcept { return *mutable_scale_; }
  Scalar& scale_gradient() const noexcept { return *this->scale_gradient_; }

  // Table and scale back to their initial values (options.init, options.scale).
  void initialise() const {
    initialise_table<Scalar>(*this->options_, table());
    *mutable_scale_ = static_cast<Scalar>(this->options_->scale);
  }
  void zero_grad() const {
    table_gradient().setZero();
    *this->scale_gradient_ = Scalar(0);
  }

  // bias(i, j) = s * T[row_of(head), buckets(i, j)], or -inf where the bucket
  // is -1 (a masked pair). `bias` must have the block's shape.
  void gather(int head, const Eigen::Ref<const BucketBlock>& buckets, Eigen::Ref<Matrix> bias) const {
    check_head("gather", head);
    check_block("gather", buckets);
    if (bias.rows() != buckets.rows() || bias.cols() != buckets.cols())
      throw Error("BiasTable::gather: bias is " + shape_text(bias.rows(), bias.cols()) + " but buckets are " +
                  shape_text(buckets.rows(), buckets.cols()));
    Scalar shifted[kMaxTableBuckets + 1];
    this->shifted_row(head, shifted);
    for (Index i = 0; i < buckets.rows(); ++i)
      for (Index j = 0; j < buckets.cols(); ++j) bias(i, j) = shifted[buckets(i, j) + 1];
  }

  // The adjoint of gather: with G = dL/dbias, adds s * (sum of G over the
  // pairs in bucket b) to dT[row_of(head), b] and sum(G * T[bucket]) to dL/ds,
  // skipping masked pairs (bucket -1). A frozen table or scale is left alone.
  void accumulate_gradient(int head, const Eigen::Ref<const BucketBlock>& buckets,
                           const Eigen::Ref<const Matrix>& dbias) const {
    check_head("accumulate_gradient", head);
    check_block("accumulate_gradient", buckets);
    if (dbias.rows() != buckets.rows() || dbias.cols() != buckets.cols())
      throw Error("BiasTable::accumulate_gradient: gradient is " + shape_text(dbias.rows(), dbias.cols()) +
                  " but buckets are " + shape_text(buckets.rows(), buckets.cols()));
    Scalar hist[kMaxTableBuckets + 1] = {};
    for (Index i = 0; i < buckets.rows(); ++i)
      for (Index j = 0; j < buckets.cols(); ++j) hist[buckets(i, j) + 1] += dbias(i, j);
    this->apply_histogram(head, hist);
  }

  // The kernels' read-only view of this table, with its gradient storage.
  BiasTerms<Scalar> terms() const noexcept { return *this; }

 private:
  void check_head(const char* fn, int head) const {
    if (head < 0 || head >= this->heads_)
      throw Error(std::string("BiasTable::") + fn + ": head " + std::to_string(head) + " out of range [0, " +
                  std::to_string(this->heads_) + ")");
  }
  void check_block(const char* fn, const Eigen::Ref<const BucketBlock>& buckets) const {
    const int nb = static_cast<int>(this->num_buckets());
    for (Index i = 0; i < buckets.rows(); ++i)
      for (Index j = 0; j < buckets.cols(); ++j) {
        const int v = buckets(i, j);
        if (v < -1 || v >= nb)
          throw Error(std::string("BiasTable::") + fn + ": buckets(" + std::to_string(i) + ", " + std::to_string(j) +
                      ") = " + std::to_string(v) + " is out of range [-1, " + std::to_string(nb) + ") for " +
                      this->options_->bucketing.describe());
      }
  }

  // The base's read-only storage, writable: a BiasTableRef is made from
  // mutable storage only.
  Scalar* mutable_table_;
  Scalar* mutable_scale_;
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
    table_id_ = store_.add("table", options_.per_head ? heads : 1, options_.num_buckets(), options_.table_learnable);
    scale_id_ = store_.add("scale", 1, 1, options_.scale_learnable);
    ref().initialise();
  }

  BiasTableRef<Scalar> ref() {
    return BiasTableRef<Scalar>(options_, heads_, store_.value(table_id_).data(), store_.value(scale_id_).data(),
                                store_.gradient(table_id_).data(), store_.gradient(scale_id_).data());
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
};

}  // namespace synattn

#endif  // SYNATTN_BIAS_BIAS_TABLE_HPP
