// synattn — distance bucketing (docs/math.md §3): linear clamp, log (T5-style) and
// directed 2-D buckets, from distance blocks to bucket blocks in one pass.
#ifndef SYNATTN_BIAS_BUCKETING_HPP
#define SYNATTN_BIAS_BUCKETING_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../special_values.hpp"

namespace synattn {

enum class BucketKind { Linear, Log, Directed };

inline const char* bucket_kind_name(BucketKind kind) {
  switch (kind) {
    case BucketKind::Linear: return "linear";
    case BucketKind::Log: return "log";
    case BucketKind::Directed: return "directed";
  }
  return "?";
}

// How distances map to bucket indices. Construct with linear(), log() or
// directed(); validate() runs in every factory, so a Bucketing is always sane.
class Bucketing {
 public:
  // bucket(d) = min(d, M); M + 1 buckets.
  static Bucketing linear(int max_distance = 10, bool special_bucket = false) {
    Bucketing b(BucketKind::Linear, max_distance, max_distance + 1, 0, special_bucket);
    return b;
  }
  // bucket(d) = d for d < E, else min(B-1, E + floor(ln(d/E) / ln(M/E) * (B-E))).
  // exact = -1 means the default B/2.
  static Bucketing log(int num_buckets, int max_distance, int exact = -1,
                       bool special_bucket = false) {
    return Bucketing(BucketKind::Log, max_distance, num_buckets,
                     exact == -1 ? num_buckets / 2 : exact, special_bucket);
  }
  // bucket(up, down) = min(up, M) * (M + 1) + min(down, M); (M + 1)^2 buckets.
  static Bucketing directed(int max_distance = 10, bool special_bucket = false) {
    return Bucketing(BucketKind::Directed, max_distance, (max_distance + 1) * (max_distance + 1), 0,
                     special_bucket);
  }

  BucketKind kind() const noexcept { return kind_; }
  int max_distance() const noexcept { return max_distance_; }
  int exact() const noexcept { return exact_; }
  bool special_bucket() const noexcept { return special_; }
  // Buckets that distances map to (excluding the special one).
  int distance_buckets() const noexcept { return buckets_; }
  // Size of the bias table: distance buckets plus the special bucket if enabled.
  int num_buckets() const noexcept { return buckets_ + (special_ ? 1 : 0); }
  // Index of the special-token bucket (only meaningful when enabled).
  int special_index() const noexcept { return buckets_; }
  // The largest distance this bucketing tells apart: every d >= it shares the
  // last bucket. Cross-tree pairs in a forest default to it (docs/math.md §2).
  int cross_distance() const noexcept { return max_distance_; }
  // The smallest distance from which every larger one shares the last bucket.
  int saturation_distance() const noexcept {
    if (kind_ == BucketKind::Log) return exact_ + static_cast<int>(log_table_.size()) - 1;
    return max_distance_;
  }

  // Bucket of an undirected distance d (Linear, Log). d = -1 -> -1 (masked);
  // d = -2 -> the special bucket (or an Error if it is disabled).
  int bucket(int d) const {
    if (kind_ != BucketKind::Directed && d >= 0) return bucket_nonnegative(d);
    const std::string reason = invalid_reason(d);
    if (!reason.empty()) throw Error("Bucketing::bucket: " + reason);
    return non_word_bucket(d);
  }
  // Bucket of a directed pair (Directed). A non-word pair has both parts
  // equal: (-1, -1) padding, (-2, -2) special.
  int bucket(int up, int down) const {
    if (kind_ == BucketKind::Directed && up >= 0 && down >= 0) return directed_bucket(up, down);
    const std::string reason = invalid_reason(up, down);
    if (!reason.empty()) throw Error("Bucketing::bucket: " + reason);
    return non_word_bucket(up);
  }

  // Why bucket(d) / bucket(up, down) would throw, or "" when it would not:
  // the reason alone, for callers that name the cell and their own function.
  std::string invalid_reason(int d) const {
    if (kind_ == BucketKind::Directed) return "a directed bucketing needs bucket(up, down)";
    return d >= 0 ? std::string() : negative_reason(d);
  }
  std::string invalid_reason(int up, int down) const {
    if (kind_ != BucketKind::Directed)
      return "bucket(up, down) needs a directed bucketing, this one is " + describe();
    if (up >= 0 && down >= 0) return {};
    if (up != down)
      return "directed pair (" + std::to_string(up) + ", " + std::to_string(down) +
             ") is invalid: a padding or special pair has up == down (-1 or -2)";
    return negative_reason(up);
  }

  // Buckets for d >= 0 (no checks; the hot loop calls this).
  int bucket_nonnegative(int d) const noexcept {
    if (kind_ == BucketKind::Linear) return d < max_distance_ ? d : max_distance_;
    return d < exact_ ? d : log_table_at(d);
  }
  int directed_bucket(int up, int down) const noexcept {
    const int u = up < max_distance_ ? up : max_distance_;
    const int w = down < max_distance_ ? down : max_distance_;
    return u * (max_distance_ + 1) + w;
  }

  std::string describe() const {
    std::string s = bucket_kind_name(kind_);
    s += " (M=" + std::to_string(max_distance_);
    if (kind_ == BucketKind::Log) s += ", B=" + std::to_string(buckets_) + ", E=" + std::to_string(exact_);
    s += ", " + std::to_string(num_buckets()) + " buckets";
    if (special_) s += " incl. special";
    return s + ")";
  }

 private:
  Bucketing(BucketKind kind, int max_distance, int buckets, int exact, bool special)
      : kind_(kind), max_distance_(max_distance), buckets_(buckets), exact_(exact), special_(special) {
    validate();
    if (kind_ == BucketKind::Log) build_log_table();
  }

  void validate() const {
    const std::string what = std::string(bucket_kind_name(kind_)) + " bucketing: ";
    if (max_distance_ < 0)
      throw Error(what + "max_distance must be >= 0, got " + std::to_string(max_distance_));
    if (kind_ == BucketKind::Directed && max_distance_ > 10)
      throw Error(what + "max_distance must be <= 10 so that (M+1)^2 + 1 buckets fit int8, got " +
                  std::to_string(max_distance_));
    if (kind_ == BucketKind::Linear && max_distance_ > 126)
      throw Error(what + "max_distance must be <= 126 so that M + 2 buckets fit int8, got " +
                  std::to_string(max_distance_));
    if (kind_ == BucketKind::Log && max_distance_ > (1 << 20))
      throw Error(what + "max_distance must be <= 2^20, got " + std::to_string(max_distance_));
    if (kind_ == BucketKind::Log) {
      if (buckets_ < 2 || buckets_ > 127)
        throw Error(what + "num_buckets must be in [2, 127], got " + std::to_string(buckets_));
      if (exact_ < 1 || exact_ >= buckets_)
        throw Error(what + "exact must be in [1, num_buckets), got " + std::to_string(exact_));
      if (max_distance_ <= exact_)
        throw Error(what + "max_distance must be > exact (" + std::to_string(exact_) + "), got " +
                    std::to_string(max_distance_));
    }
  }

  // -1 (padding) or -2 (special) once invalid_reason has accepted it.
  int non_word_bucket(int d) const noexcept { return d == kPaddingDistance ? kPaddingBucket : buckets_; }
  std::string negative_reason(int d) const {
    if (d == kPaddingDistance) return {};
    if (d == kSpecialDistance)
      return special_ ? std::string()
                      : "distance -2 (special token) but the special bucket is not enabled in " + describe();
    return "distance " + std::to_string(d) + " is invalid: expected >= 0, -1 (padding) or -2 (special)";
  }

  // The log formula is evaluated once per distance up to the saturation point
  // and looked up afterwards: the hot loop then never calls std::log, and the
  // result is bit-for-bit the formula's (same double arithmetic as docs/math.md §3).
  void build_log_table() {
    log_table_.clear();
    const double e = exact_, span = std::log(static_cast<double>(max_distance_) / e);
    for (int d = exact_;; ++d) {
      const double v = e + std::floor(std::log(d / e) / span * (buckets_ - exact_));
      const int b = v >= buckets_ - 1 ? buckets_ - 1 : static_cast<int>(v);
      log_table_.push_back(static_cast<std::int8_t>(b));
      if (b == buckets_ - 1) break;
    }
  }
  int log_table_at(int d) const noexcept {
    const std::size_t k = static_cast<std::size_t>(d - exact_);
    return k < log_table_.size() ? log_table_[k] : buckets_ - 1;
  }

  BucketKind kind_;
  int max_distance_;
  int buckets_;
  int exact_;
  bool special_;
  std::vector<std::int8_t> log_table_;
};

namespace detail {
template <class D, class B>
void check_block_shapes(const char* fn, const char* name, Eigen::Index rows, Eigen::Index cols,
                        Eigen::Index want_rows, Eigen::Index want_cols) {
  if (rows != want_rows || cols != want_cols)
    throw Error(std::string(fn) + ": '" + name + "' is " + shape_text(rows, cols) + ", expected " +
                shape_text(want_rows, want_cols) + " like the distances");
  static_assert(std::is_integral<D>::value && std::is_signed<D>::value, "distances are signed integers");
  static_assert(std::is_integral<B>::value && std::is_signed<B>::value, "buckets are signed integers");
}

// A per-value error of a block function: the caller's name, Bucketing's
// reason and the cell.
inline Error cell_error(const char* fn, const std::string& reason, Eigen::Index r, Eigen::Index c) {
  return Error(std::string(fn) + ": " + reason + " (at row " + std::to_string(r) + ", column " + std::to_string(c) +
               ")");
}

// A distance of any signed type as an int for Bucketing, saturated: a plain
// cast of a wider type could turn an invalid value into -1 (padding).
template <class D>
int saturated_distance(D d) noexcept {
  const long long v = static_cast<long long>(d);
  if (v < std::numeric_limits<int>::min()) return std::numeric_limits<int>::min();
  if (v > std::numeric_limits<int>::max()) return std::numeric_limits<int>::max();
  return static_cast<int>(v);
}
}  // namespace detail

// Maps a distance block (any shape; a batch is (batch*n, n)) to buckets with
// a Linear or Log bucketing. -1 stays -1; -2 goes to the special bucket.
// Throws on a Directed bucketing, on other negative values, and on bucket
// counts that do not fit the output type.
template <class D, class B>
void bucketize(const Bucketing& bucketing,
               const Eigen::Ref<const RowMajorMatrix<D>>& distances,
               Eigen::Ref<RowMajorMatrix<B>> buckets) {
  detail::check_block_shapes<D, B>("bucketize", "buckets", buckets.rows(), buckets.cols(),
                                   distances.rows(), distances.cols());
  if (bucketing.kind() == BucketKind::Directed)
    throw Error("bucketize: directed bucketing needs up and down distances (use bucketize_directed)");
  if (bucketing.num_buckets() - 1 > std::numeric_limits<B>::max())
    throw Error("bucketize: " + bucketing.describe() + " does not fit the output integer type");
  // A lookup table covers every non-negative value of small distance types,
  // so the inner loop is one load per cell with no branches on the kind.
  const int saturate = bucketing.saturation_distance();
  std::vector<B> table(static_cast<std::size_t>(saturate) + 1);
  for (int d = 0; d <= saturate; ++d)
    table[static_cast<std::size_t>(d)] = static_cast<B>(bucketing.bucket_nonnegative(d));
  const B last = table.back();
  const B special = static_cast<B>(bucketing.special_bucket() ? bucketing.special_index() : -3);
  for (Eigen::Index r = 0; r < distances.rows(); ++r) {
    const D* in = distances.row(r).data();
    B* out = buckets.row(r).data();
    for (Eigen::Index c = 0; c < distances.cols(); ++c) {
      const D d = in[c];
      if (d >= 0) {
        out[c] = static_cast<long long>(d) <= saturate ? table[static_cast<std::size_t>(d)] : last;
      } else if (d == kPaddingDistance) {
        out[c] = static_cast<B>(kPaddingBucket);
      } else if (d == kSpecialDistance && bucketing.special_bucket()) {
        out[c] = special;
      } else {
        throw detail::cell_error("bucketize", bucketing.invalid_reason(detail::saturated_distance(d)), r, c);
      }
    }
  }
}

// Directed buckets from up/down blocks of equal shape.
template <class D, class B>
void bucketize_directed(const Bucketing& bucketing,
                        const Eigen::Ref<const RowMajorMatrix<D>>& up,
                        const Eigen::Ref<const RowMajorMatrix<D>>& down,
                        Eigen::Ref<RowMajorMatrix<B>> buckets) {
  detail::check_block_shapes<D, B>("bucketize_directed", "down", down.rows(), down.cols(),
                                   up.rows(), up.cols());
  detail::check_block_shapes<D, B>("bucketize_directed", "buckets", buckets.rows(), buckets.cols(),
                                   up.rows(), up.cols());
  if (bucketing.kind() != BucketKind::Directed)
    throw Error("bucketize_directed: needs a directed bucketing, got " + bucketing.describe());
  if (bucketing.num_buckets() - 1 > std::numeric_limits<B>::max())
    throw Error("bucketize_directed: " + bucketing.describe() + " does not fit the output integer type");
  const int m = bucketing.max_distance();
  for (Eigen::Index r = 0; r < up.rows(); ++r) {
    const D* u = up.row(r).data();
    const D* w = down.row(r).data();
    B* out = buckets.row(r).data();
    for (Eigen::Index c = 0; c < up.cols(); ++c) {
      if (u[c] >= 0 && w[c] >= 0) {
        const int uu = u[c] < m ? static_cast<int>(u[c]) : m;
        const int ww = w[c] < m ? static_cast<int>(w[c]) : m;
        out[c] = static_cast<B>(uu * (m + 1) + ww);
      } else {
        const int uu = detail::saturated_distance(u[c]), ww = detail::saturated_distance(w[c]);
        const std::string reason = bucketing.invalid_reason(uu, ww);
        if (!reason.empty()) throw detail::cell_error("bucketize_directed", reason, r, c);
        out[c] = static_cast<B>(bucketing.bucket(uu, ww));  // a padding or special pair
      }
    }
  }
}

}  // namespace synattn

#endif  // SYNATTN_BIAS_BUCKETING_HPP
