// synattn — the checks the attention layer runs at its public boundary:
// shapes, lengths, bucket values, finiteness of inputs and parameters, and
// options that must fit the layer's own number type. Each throws
// synattn::Error with a message naming the function, the argument, the index
// and what was expected. Pure functions of their arguments.
#ifndef SYNATTN_ATTENTION_VALIDATION_HPP
#define SYNATTN_ATTENTION_VALIDATION_HPP

#include <Eigen/Core>

#include <algorithm>
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
#include "../util/finite.hpp"
#include "../util/parameters.hpp"
#include "blocks.hpp"
#include "options.hpp"

namespace synattn {
namespace detail {

// "fn: ", the start of every message.
inline std::string error_prefix(const char* fn) { return std::string(fn) + ": "; }
// "RxC", the library's one form for a matrix shape (error.hpp).
inline std::string shape_string(Index rows, Index cols) { return shape_text(rows, cols); }
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

// What a bucket value out of range most often means: distances where bucket
// indices belong (they agree only for a linear bucketing up to its maximum).
inline std::string bucket_hint(const BiasTableOptions& bias) {
  return " for " + bias.bucketing.describe() +
         " (buckets hold bucket indices: were tree distances passed without bucketize()?)";
}

// A (batch * n_q, n_kv) bucket block with values in [-1, num_buckets), whose
// padding agrees with the lengths: a pair beyond a sequence's lengths must be
// -1 (padding), as make_distance_batch and bucketize write it. A bucket there
// means the lengths belong to other sequences (two of them swapped, or
// another batch's), which the layer would otherwise mask silently. -1 inside
// the lengths is allowed: it masks that pair (docs/math.md, masking).
inline void check_buckets(const char* fn, const Eigen::Ref<const BucketBlock>& buckets,
                          const std::vector<int>& lengths_q, const std::vector<int>& lengths_kv, Index n_q,
                          Index n_kv, const BiasTableOptions& bias) {
  const Index batch = static_cast<Index>(lengths_q.size());
  if (buckets.rows() != batch * n_q || buckets.cols() != n_kv)
    throw Error(error_prefix(fn) + "buckets is " + shape_string(buckets.rows(), buckets.cols()) + ", expected " +
                shape_string(batch * n_q, n_kv) + " (batch * n_q, n_kv)");
  const int nb = bias.num_buckets();
  // Byte-wide minimum and maximum (vpminsb / vpmaxsb, 64 keys per
  // instruction); widening each key to int made this 1% of inference at
  // n = 1024. `pad_hi` is the largest value beyond the lengths (-1 if all
  // padding).
  std::int8_t lo = -1, hi = -1, pad_hi = -1;
  for (Index b = 0; b < batch; ++b) {
    const Index lq = lengths_q[static_cast<std::size_t>(b)], lkv = lengths_kv[static_cast<std::size_t>(b)];
    for (Index i = 0; i < n_q; ++i) {
      const std::int8_t* row = buckets.data() + (b * n_q + i) * buckets.outerStride();
      const Index live = i < lq ? lkv : 0;  // keys within the lengths on this row
      for (Index j = 0; j < live; ++j) {
        lo = std::min(lo, row[j]);
        hi = std::max(hi, row[j]);
      }
      for (Index j = live; j < n_kv; ++j) {
        lo = std::min(lo, row[j]);
        pad_hi = std::max(pad_hi, row[j]);
      }
    }
  }
  if (lo >= -1 && hi < nb && pad_hi == -1) return;
  for (Index r = 0; r < buckets.rows(); ++r)
    for (Index j = 0; j < n_kv; ++j) {
      const int v = buckets(r, j);
      const Index b = r / n_q, i = r % n_q;
      const std::string where = " (sequence " + std::to_string(b) + ", query " + std::to_string(i) + ", key " +
                                std::to_string(j) + ")";
      if (v < -1 || v >= nb)
        throw Error(error_prefix(fn) + "buckets(" + std::to_string(r) + ", " + std::to_string(j) + ") = " +
                    std::to_string(v) + where + " is out of range [-1, " + std::to_string(nb) + ")" +
                    bucket_hint(bias));
      const bool padding = i >= lengths_q[static_cast<std::size_t>(b)] || j >= lengths_kv[static_cast<std::size_t>(b)];
      if (padding && v != -1) {
        const bool self = &lengths_q == &lengths_kv;
        const std::string lengths = self ? "lengths[" + std::to_string(b) + "] = " +
                                               std::to_string(lengths_q[static_cast<std::size_t>(b)])
                                         : "lengths_q[" + std::to_string(b) + "] = " +
                                               std::to_string(lengths_q[static_cast<std::size_t>(b)]) +
                                               ", lengths_kv[" + std::to_string(b) + "] = " +
                                               std::to_string(lengths_kv[static_cast<std::size_t>(b)]);
        throw Error(error_prefix(fn) + "buckets(" + std::to_string(r) + ", " + std::to_string(j) + ") = " +
                    std::to_string(v) + where + " lies beyond " + lengths +
                    ", where only padding (-1) belongs: the lengths do not match the bucket block (two sequences' "
                    "lengths swapped, or another batch's lengths?)");
      }
    }
}

// Tree fusion (bias.fusion.views = V > 1): the bucket block stacks V views,
// ((V * batch * n_q, n_kv), view v in rows [v * batch * n_q, ...)), each a
// valid block as check_buckets has it, all masking the same pairs: the
// fused bias is one mask plus a weighted sum of the views' tables. Without
// fusion: check_buckets.
inline void check_bucket_views(const char* fn, const Eigen::Ref<const BucketBlock>& buckets,
                               const std::vector<int>& lengths_q, const std::vector<int>& lengths_kv, Index n_q,
                               Index n_kv, const BiasTableOptions& bias) {
  const int views = bias.fusion.views;
  if (views == 1) return check_buckets(fn, buckets, lengths_q, lengths_kv, n_q, n_kv, bias);
  const Index rows = static_cast<Index>(lengths_q.size()) * n_q;
  if (buckets.rows() != views * rows || buckets.cols() != n_kv)
    throw Error(error_prefix(fn) + "buckets is " + shape_string(buckets.rows(), buckets.cols()) + ", expected " +
                shape_string(views * rows, n_kv) + ": the layer fuses " + std::to_string(views) +
                " tree views, stacked as (views * batch * n_q, n_kv)");
  for (int v = 0; v < views; ++v) {
    const std::string where = std::string(fn) + ": tree view " + std::to_string(v);
    check_buckets(where.c_str(), buckets.middleRows(v * rows, rows), lengths_q, lengths_kv, n_q, n_kv, bias);
  }
  if (const auto m = first_view_mask_mismatch(buckets, views))
    throw Error(error_prefix(fn) + "tree view " + std::to_string(m->view) + " has bucket " +
                std::to_string(buckets(m->view * rows + m->row, m->col)) + " at (sequence " +
                std::to_string(m->row / n_q) + ", query " + std::to_string(m->row % n_q) + ", key " +
                std::to_string(m->col) + ") where view 0 has " + std::to_string(buckets(m->row, m->col)) +
                ": the views of a sequence must mask the same pairs");
}

// The lengths must give one length per sequence of the inputs: `rows` rows
// of `name` hold `rows / n` sequences of n positions (n from the bucket
// block). Checked before the shapes, so that a wrong count is reported as
// such, not as a shape error of whichever input comes next.
inline void check_length_count(const char* fn, const char* lengths_name, std::size_t count, const char* name,
                               Index rows, Index n) {
  if (n <= 0 || rows % n != 0) return;  // the shape checks report these
  if (static_cast<Index>(count) != rows / n)
    throw Error(error_prefix(fn) + lengths_name + " has " + std::to_string(count) + " entries, but " + name + " (" +
                std::to_string(rows) + " rows) and buckets (" + std::to_string(n) + " keys per row) hold " +
                std::to_string(rows / n) + " sequences of " + std::to_string(n) + " positions: " + lengths_name +
                " gives one length per sequence");
}

// The shared finiteness tests (util/finite.hpp), by their old names here.
using synattn::all_finite;
using synattn::all_finite_contiguous;

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

// "float" or "double", for messages.
template <class Scalar>
const char* scalar_name() noexcept {
  return sizeof(Scalar) == sizeof(float) ? "float" : "double";
}

// Every parameter of the store (weights, biases, table, scale, talking-heads
// matrices): throws at the first non-finite element, naming the parameter.
template <class Scalar>
void check_finite_parameters(const char* fn, const ParameterStore<Scalar>& store) {
  synattn::check_finite_parameters(fn, store,
                                   " (options.check_finite is on; with it off NaN propagates to the output)");
}

// The bias s * T[row, b] the kernels add, formed in Scalar like theirs: each
// must be finite (a table entry of -3e38 times s = 10 in float is -inf, which
// would mask every pair). Returns, per head, max_b |s * T[row_of(head), b]| (in
// `max_bias`, heads entries), over every view the head reads.
template <class Scalar>
void check_bias_products(const char* fn, const BiasTerms<Scalar>& t, double* max_bias) {
  const Scalar s = t.scale();
  const auto T = t.table();
  for (Index r = 0; r < T.rows(); ++r)
    for (Index b = 0; b < T.cols(); ++b) {
      const Scalar v = s * T(r, b);
      if (!std::isfinite(v))
        throw Error(error_prefix(fn) + "scale * table(" + std::to_string(r) + ", " + std::to_string(b) + ") = " +
                    number_string(double(s)) + " * " + number_string(double(T(r, b))) + " overflows " +
                    scalar_name<Scalar>() + " (|s * T| must stay below " +
                    number_string(double(std::numeric_limits<Scalar>::max())) + "; docs/math.md 4.5)");
    }
  // With fusion the bias is a convex combination of the views' s * T, so
  // the largest over the views bounds it.
  for (int a = 0; a < t.heads(); ++a) {
    double m = 0;
    for (int v = 0; v < t.views(); ++v)
      for (Index b = 0; b < T.cols(); ++b) m = std::max(m, std::abs(double(s * T(t.table_row(v, a), b))));
    max_bias[a] = m;
  }
}

// The safe input range (docs/math.md 4.5), per (sequence, head): the
// projections of the valid rows are finite and max |q_i| max |k_j| / sqrt(dk)
// + max |s T| <= max(Scalar) / 4, which bounds every score (Cauchy-Schwarz)
// and every difference of two scores the softmax forms. With pre-mixing
// talking heads (`mix_gain` = max_a sum_b |M_pre[a, b]| > 0) a head's mixed
// scores are bounded by mix_gain times the sequence's largest unmixed bound.
// Norms in double, so they do not overflow themselves. One pass over Q, K
// and V: cheap next to the score products.
template <class Scalar>
void check_score_range(const char* fn, const RowMajorMatrix<Scalar>& qsrc, const RowMajorMatrix<Scalar>& kvsrc,
                       const BlockGeometry& g, Scalar inv_sqrt_dk, const double* max_bias, double mix_gain) {
  const double limit = double(std::numeric_limits<Scalar>::max()) / 4;
  // Fast path, two vectorised passes per source: every score is at most
  // dk max|q| max|k| / sqrt(dk) with the maxima over whole sources (a looser
  // bound than the per-head one below, which it implies when it holds). The
  // exact per-row check runs only when this fails or something is not
  // finite (it then names the culprit).
  if (all_finite(qsrc) && (&kvsrc == &qsrc || all_finite(kvsrc)) && qsrc.size() > 0 && kvsrc.size() > 0) {
    const double mq = double(qsrc.cwiseAbs().maxCoeff()), mk = double(kvsrc.cwiseAbs().maxCoeff());
    const double head = double(g.dk) * mq * mk * double(inv_sqrt_dk);
    double bias = 0;
    if (max_bias)
      for (int a = 0; a < g.heads; ++a) bias = std::max(bias, max_bias[a]);
    if ((mix_gain > 0 ? mix_gain * head : head) + bias <= limit) return;
  }
  const auto not_finite = [&](const char* what, Index b, Index i, int a) {
    return Error(error_prefix(fn) + what + " of sequence " + std::to_string(b) + ", position " + std::to_string(i) +
                 ", head " + std::to_string(a) + " is not finite: the input projection overflowed " +
                 scalar_name<Scalar>() + " (inputs outside the safe range, docs/math.md 4.5)");
  };
  std::vector<double> head_bound(static_cast<std::size_t>(g.heads));  // per head: max|q_i| max|k_j| / sqrt(dk)
  for (Index b = 0; b < g.batch; ++b) {
    double largest = 0;  // over heads
    for (int a = 0; a < g.heads; ++a) {
      double mq = 0, mk = 0;
      for (Index i = 0; i < g.lq(b); ++i) {
        const double v = qsrc.row(b * g.n_q + i).segment(a * g.dk, g.dk).template cast<double>().norm();
        if (!std::isfinite(v)) throw not_finite("q", b, i, a);
        mq = std::max(mq, v);
      }
      for (Index j = 0; j < g.lk(b); ++j) {
        const double v = kvsrc.row(b * g.n_kv + j).segment(g.k_off + a * g.dk, g.dk).template cast<double>().norm();
        if (!std::isfinite(v)) throw not_finite("k", b, j, a);
        if (!all_finite(kvsrc.row(b * g.n_kv + j).segment(g.v_off + a * g.dv, g.dv))) throw not_finite("v", b, j, a);
        mk = std::max(mk, v);
      }
      head_bound[static_cast<std::size_t>(a)] = mq * mk * double(inv_sqrt_dk);
      largest = std::max(largest, head_bound[static_cast<std::size_t>(a)]);
    }
    for (int a = 0; a < g.heads; ++a) {
      const double scores = mix_gain > 0 ? mix_gain * largest : head_bound[static_cast<std::size_t>(a)];
      const double bound = scores + (max_bias ? max_bias[a] : 0.0);
      if (!(bound <= limit))
        throw Error(error_prefix(fn) + "the scores of sequence " + std::to_string(b) + ", head " + std::to_string(a) +
                    " may overflow " + scalar_name<Scalar>() + ": " +
                    (mix_gain > 0 ? "max_a sum_b |M_pre[a, b]| * " : "") +
                    "max |q_i| max |k_j| / sqrt(dk) + max |s T| = " + number_string(bound) +
                    " exceeds the safe bound " + number_string(limit) + " = max(" + scalar_name<Scalar>() +
                    ") / 4; scale the inputs down (docs/math.md 4.5)");
    }
  }
}

// The output of a forward pass whose inputs passed every check: a
// non-finite entry means the output projection overflowed.
template <class Scalar>
void check_finite_output(const char* fn, const Eigen::Ref<const RowMajorMatrix<Scalar>>& out) {
  if (all_finite(out)) return;
  for (Index r = 0; r < out.rows(); ++r)
    for (Index c = 0; c < out.cols(); ++c)
      if (!std::isfinite(out(r, c)))
        throw Error(error_prefix(fn) + "out(" + std::to_string(r) + ", " + std::to_string(c) + ") = " +
                    std::to_string(out(r, c)) + ": the output projection overflowed " + scalar_name<Scalar>() +
                    " (inputs outside the safe range, docs/math.md 4.5)");
}

// The options that feed arithmetic, checked against the layer's number type:
// validate() checks them in double, where 1e300 is fine, but a float layer
// would turn it into inf.
template <class Scalar>
void validate_options_for(const AttentionOptions& o, const char* type_name) {
  const double max = static_cast<double>(std::numeric_limits<Scalar>::max());
  const std::string w = std::string("SyntaxBiasedAttention<") + type_name + ">: options.";
  const auto too_big = [&](const char* what, double v) {
    return Error(w + what + " = " + number_string(v) + " is not representable in " + type_name + " (|value| <= " +
                 number_string(max) + ")");
  };
  // 1 / (1 - p): the factor kept probabilities are multiplied by.
  if (o.dropout > 0.0 && !(1.0 / (1.0 - o.dropout) <= max))
    throw too_big("dropout's keep scale 1 / (1 - dropout)", 1.0 / (1.0 - o.dropout));
  if (!o.syntax_bias) return;
  const BiasTableOptions& b = o.bias;
  if (!(std::abs(b.scale) <= max)) throw too_big("bias.scale", b.scale);
  if (!(b.decay <= max)) throw too_big("bias.decay", b.decay);
  // The initial table and its products with the scale (the bias the first
  // forward pass adds) must be finite in Scalar too.
  RowMajorMatrix<double> t(1, b.num_buckets());
  initialise_table<double>(b, t);
  for (Index k = 0; k < t.cols(); ++k) {
    if (!(std::abs(t(0, k)) <= max))
      throw Error(w + "bias.decay = " + number_string(b.decay) + " makes the initial table entry " + std::to_string(k) +
                  " = " + number_string(t(0, k)) + ", not representable in " + type_name);
    const double sb =
        static_cast<double>(static_cast<Scalar>(b.scale)) * static_cast<double>(static_cast<Scalar>(t(0, k)));
    if (!(std::abs(sb) <= max))
      throw Error(w + "bias.scale * table[" + std::to_string(k) + "] = " + number_string(b.scale) + " * " +
                  number_string(t(0, k)) + " overflows " + type_name + " (|s * T| <= " + number_string(max) + ")");
  }
}

}  // namespace detail
}  // namespace synattn

#endif  // SYNATTN_ATTENTION_VALIDATION_HPP
