// synattn — the checks the attention layer runs at its public boundary:
// shapes, lengths, bucket values, finiteness of inputs and parameters, and
// options that must fit the layer's own number type. Each throws
// synattn::Error with a message naming the function, the argument, the index
// and what was expected. Pure functions of their arguments.
#ifndef SYNATTN_ATTENTION_VALIDATION_HPP
#define SYNATTN_ATTENTION_VALIDATION_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../bias/bias_table.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/parameters.hpp"
#include "options.hpp"

namespace synattn {
namespace attention_detail {

// "fn: ", the start of every message.
inline std::string error_prefix(const char* fn) { return std::string(fn) + ": "; }
// "RxC".
inline std::string shape_string(Index rows, Index cols) { return std::to_string(rows) + "x" + std::to_string(cols); }
// A number as printed in messages: shortest round-trip-ish (%g with enough digits).
inline std::string number_string(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// `name` must be (want_rows, want_cols).
inline void check_shape(const char* fn, const char* name, Index rows, Index cols, Index want_rows, Index want_cols) {
  if (rows != want_rows || cols != want_cols)
    throw Error(error_prefix(fn) + name + " is " + shape_string(rows, cols) + ", expected " +
                shape_string(want_rows, want_cols));
}

// A (batch * n, width) token matrix: returns n, the rows per sequence.
inline Index check_tokens(const char* fn, const char* name, Index rows, Index cols, Index batch, Index width) {
  if (cols != width)
    throw Error(error_prefix(fn) + name + " has " + std::to_string(cols) + " columns, expected " +
                std::to_string(width));
  if (batch == 0) {
    if (rows != 0)
      throw Error(error_prefix(fn) + name + " has " + std::to_string(rows) +
                  " rows but the batch is empty (no lengths)");
    return 0;
  }
  if (rows % batch != 0)
    throw Error(error_prefix(fn) + name + " has " + std::to_string(rows) + " rows, not a multiple of the batch size " +
                std::to_string(batch) + " (= number of lengths)");
  return rows / batch;
}

// Every length in [0, n].
inline void check_lengths(const char* fn, const char* name, const std::vector<int>& lengths, Index n) {
  for (std::size_t b = 0; b < lengths.size(); ++b)
    if (lengths[b] < 0 || lengths[b] > n)
      throw Error(error_prefix(fn) + name + "[" + std::to_string(b) + "] = " + std::to_string(lengths[b]) +
                  " is out of range [0, " + std::to_string(n) + "] (n = rows per sequence)");
}

// A (batch * n_q, n_kv) bucket block with values in [-1, num_buckets).
inline void check_buckets(const char* fn, const Eigen::Ref<const RowMajorMatrix<std::int8_t>>& buckets, Index batch,
                          Index n_q, Index n_kv, const BiasTableOptions& bias) {
  if (buckets.rows() != batch * n_q || buckets.cols() != n_kv)
    throw Error(error_prefix(fn) + "buckets is " + shape_string(buckets.rows(), buckets.cols()) + ", expected " +
                shape_string(batch * n_q, n_kv) + " (batch * n_q, n_kv)");
  const int nb = bias.num_buckets();
  // Byte-wide minimum and maximum (vpminsb / vpmaxsb, 64 keys per
  // instruction); widening each key to int made this 1% of inference at n = 1024.
  std::int8_t lo = -1, hi = -1;
  for (Index r = 0; r < buckets.rows(); ++r) {
    const std::int8_t* row = buckets.data() + r * buckets.outerStride();
    for (Index j = 0; j < n_kv; ++j) {
      lo = std::min(lo, row[j]);
      hi = std::max(hi, row[j]);
    }
  }
  if (lo >= -1 && hi < nb) return;
  for (Index r = 0; r < buckets.rows(); ++r)
    for (Index j = 0; j < n_kv; ++j) {
      const int v = buckets(r, j);
      if (v < -1 || v >= nb)
        throw Error(error_prefix(fn) + "buckets(" + std::to_string(r) + ", " + std::to_string(j) + ") = " +
                    std::to_string(v) + " (sequence " + std::to_string(r / n_q) + ", query " +
                    std::to_string(r % n_q) + ", key " + std::to_string(j) + ") is out of range [-1, " +
                    std::to_string(nb) + ") for " + bias.bucketing.describe());
    }
}

// True when every entry of m is finite. x * 0 is NaN exactly where x is NaN or
// infinite, and a sum with a NaN term is NaN: one vectorised pass (Eigen's
// allFinite() is ~30x slower).
template <class Derived>
bool all_finite(const Eigen::DenseBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  return std::isfinite((m.derived().array() * Scalar(0)).sum());
}

// Token rows (batch * n, width) of input or upstream gradient `name`: throws
// at the first non-finite element, naming its sequence and position.
template <class Scalar>
void check_finite_tokens(const char* fn, const char* name, const Eigen::Ref<const RowMajorMatrix<Scalar>>& m, Index n) {
  if (all_finite(m)) return;
  for (Index r = 0; r < m.rows(); ++r)
    for (Index c = 0; c < m.cols(); ++c)
      if (!std::isfinite(m(r, c)))
        throw Error(error_prefix(fn) + name + "(" + std::to_string(r) + ", " + std::to_string(c) + ") = " +
                    std::to_string(m(r, c)) + " is not finite (sequence " + std::to_string(n ? r / n : 0) +
                    ", position " + std::to_string(n ? r % n : r) + ")");
}

}  // namespace attention_detail
}  // namespace synattn

#endif  // SYNATTN_ATTENTION_VALIDATION_HPP
