// synattn — the attention row kernels in portable C++: the reference every
// instruction-set version is tested against, and the path every compiler and
// CPU builds (Eigen vectorises its array expressions for whatever ISA the
// compiler targets; nothing here names an instruction set).
//
// The kernels work on a block of `rows` query rows of a row-major score
// matrix (leading dimension ld) and assume validated input; they never
// allocate. Conventions shared by every version (kernels/attention_rows.hpp
// explains the dispatch):
//
// Visible keys. Row i of a block sees keys [0, kend_i): kend_i = kend, or
// with a causal mask min(kend, causal_row0 + i + 1), causal_row0 being the
// block's first query position. Inside that prefix, a key whose bucket is -1
// is masked too: the gather adds shifted[bucket + 1], where shifted[0] = -inf
// and shifted[b + 1] = s * T[b], so the mask costs no branch. `slots` is the
// number of entries of `shifted` (num_buckets + 1).
//
// Numerics. The softmax subtracts the row maximum; a row whose maximum is -inf
// has no visible key and becomes zeros (docs/math.md §4.2), never NaN (unless a NaN
// hides in it: see the NaN policy below). Eigen's
// vectorised exp does not return exact zeros for -inf or for arguments below
// log(min normal) (it clamps, and returns tiny or subnormal values), so every
// exp result below the smallest normal number is flushed to exactly 0: right
// for masked keys, moves a visible key's probability by less than 1.2e-38
// (float) / 2.3e-308 (double), and keeps subnormals out of P V.
// Row sums are accumulated in the scalar type, in SIMD lanes (16-32 partial
// sums for float), far inside the 1e-4 float tolerance of docs/math.md §4.4. Every
// version gives the same bits wherever its rows lie in memory (so for every
// thread count: the layer's scratch blocks are per thread).
//
// NaN policy (PyTorch's, and every version's): NaN propagates. A NaN score
// of a visible key, masked or not (NaN + -inf is NaN), makes inv_sum and so
// every probability of its row NaN; a NaN entry of `shifted` (a NaN table
// entry, or s * T = inf * 0) is a NaN score, never a masked key. Only keys
// outside the visible prefix are never read. A row whose visible keys are all
// masked (-inf) and none NaN is a fully masked row: zeros.
#ifndef SYNATTN_KERNELS_ATTENTION_ROWS_PORTABLE_HPP
#define SYNATTN_KERNELS_ATTENTION_ROWS_PORTABLE_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "../config.hpp"
#include "../matrix.hpp"

namespace synattn {
namespace kernels {

// Number of interleaved histogram copies a bucket histogram may use (the
// caller's histogram holds kHistogramCopies * stride values and sums the
// copies afterwards). Interleaving matters for the portable scatter: a run of
// equal buckets (far keys all clamp to the last bucket) would otherwise chain
// every add through one memory cell, a store-to-load latency each (measured
// at n = 512: 2.6 ns per score with one copy on tree-like rows, 0.45 with 8).
constexpr int kHistogramCopies = 8;

// e^r = sum r^k / k!, k <= 12, in Horner order (1/12! first): the double exp
// of every vector version, on |r| <= ln 2 / 2 (truncation < 1.7e-16 relative).
constexpr double kExpTaylor[] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
                                 1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,     1.0 / 120.0,
                                 1.0 / 24.0,        1.0 / 6.0,        0.5,             1.0,
                                 1.0};

// Visible prefix of row i of a block (see the conventions above).
inline Index visible_keys(Index kend, Index causal_row0, Index i) noexcept {
  return causal_row0 < 0 ? kend : std::min(kend, causal_row0 + i + 1);
}

// A block of attention rows as every row kernel reads it, besides its
// arrays: `rows` query rows of `n` keys (the row length each kernel writes),
// row i seeing keys [0, visible(i)) (the conventions above: `kend`, and with
// a causal mask, causal_row0 >= 0, the block's first query position).
// `buckets` (row stride ldb) holds each key's bucket, null without a bias;
// `shifted` the `slots` entries of the slot table, null when no bias is added
// (the backward reads `slots` only, for its histogram).
template <class Scalar>
struct RowBlock {
  Index rows = 0;
  Index n = 0;
  Index kend = 0;
  Index causal_row0 = -1;
  const std::int8_t* buckets = nullptr;
  Index ldb = 0;
  const Scalar* shifted = nullptr;
  int slots = 0;

  Index visible(Index i) const noexcept { return visible_keys(kend, causal_row0, i); }
  // No bucket block without a bias (null): no row pointer into it either.
  const std::int8_t* bucket_row(Index i) const noexcept { return buckets != nullptr ? buckets + i * ldb : nullptr; }
  // row[j] += shifted[bucket + 1] for the first ke keys of row i, one add
  // each; nothing without a table.
  void add_bias(Scalar* row, Index i, Index ke) const noexcept {
    if (shifted == nullptr) return;
    const std::int8_t* b = buckets + i * ldb;
    for (Index j = 0; j < ke; ++j) row[j] += shifted[b[j] + 1];
  }
};

// The row after row i of a block (row i itself for the last row, so no
// pointer leaves the block); null stays null.
template <class T>
inline T* next_row(T* row, Index i, Index rows, Index ld) noexcept {
  return row == nullptr || i + 1 >= rows ? row : row + ld;
}

// The SIMD kernels pull the next row's lines into L1 while a row computes:
// its scores come from L2 and its buckets (and, in the backward, its
// probabilities) from memory, and the hardware prefetchers alone left the
// first pass stalled on those loads. Prefetches never fault; `buckets` may be
// null (no bias).
inline void prefetch_next_row(const void* a, const void* b, const std::int8_t* buckets) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(a);
  __builtin_prefetch(b);
  if (buckets != nullptr) __builtin_prefetch(buckets);
#else
  (void)a, (void)b, (void)buckets;
#endif
}

// The row of a block whose maximum is -inf: no visible key (zeros, inv_sum
// 0) unless a NaN hides among its scores (max instructions and Eigen's
// maxCoeff may drop NaN), which makes the row NaN (the NaN policy above).
template <class Scalar>
inline void no_visible_key_row(Scalar* row, Index ke, Scalar* inv_sum) noexcept {
  bool nan = false;
  for (Index j = 0; j < ke; ++j) nan = nan || std::isnan(row[j]);
  const Scalar fill = nan ? std::numeric_limits<Scalar>::quiet_NaN() : Scalar(0);
  std::fill(row, row + ke, fill);
  *inv_sum = fill;
}

namespace portable {

// hist[c * stride + bucket[j] + 1] += ds[j] for j < ke, c = j % kHistogramCopies:
// the scatter every version uses when its buckets do not fit in registers.
template <class Scalar>
inline void scatter_histogram_row(const Scalar* ds, const std::int8_t* b, Index ke, Scalar* hist,
                                  Index stride) noexcept {
  Scalar* h = hist + 1;
  Index j = 0;
  for (; j + kHistogramCopies <= ke; j += kHistogramCopies)
    for (int c = 0; c < kHistogramCopies; ++c) h[c * stride + b[j + c]] += ds[j + c];
  for (Index c = 0; j + c < ke; ++c) h[c * stride + b[j + c]] += ds[j + c];
}

template <class Scalar>
using ArrayMap = Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>;
template <class Scalar>
using ConstArrayMap = Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>;

// Rows are processed in chunks of 128 bytes copied into a fixed-size Eigen
// array (aligned, a whole number of packets): Eigen's loops over a mapped row
// peel scalar iterations up to the packet alignment of its address, and the
// scalar exp and sum order differ from the packet ones in the last bits, so
// results would depend on where a row happens to lie (the layer's per-thread
// scratch blocks: different bits at 1 and 2 threads). A chunk has no such
// peel: every value takes the same path wherever the row is.
template <class Scalar>
using Chunk = Eigen::Array<Scalar, 128 / int(sizeof(Scalar)), 1>;

// c = src[0, len) followed by `pad` in the lanes past len (len <= C): a
// whole chunk through a fixed-size map, a partial one element by element.
// (head(len) with a run-time len made GCC 12 warn -Warray-bounds, wrongly,
// once inlined into a caller.)
template <class Scalar>
inline void load_chunk(Chunk<Scalar>& c, const Scalar* src, Index len, Scalar pad) noexcept {
  constexpr Index C = Chunk<Scalar>::SizeAtCompileTime;
  if (len == C) {
    c = Eigen::Map<const Chunk<Scalar>>(src);
    return;
  }
  c.setConstant(pad);
  for (Index t = 0; t < len; ++t) c[t] = src[t];
}

// Calls body(out, c, len) for each chunk of row [0, ke): c = exp(row - max),
// flushed below the smallest normal number, of which the first len values
// belong at out. The lanes past the row hold -inf, whose exp the flush makes
// 0. The flush loop vectorises (compare + blend; an Eigen select() around
// exp() cost 10x: it did not). Shared by softmax_numerators and
// probabilities, so both round every value alike.
template <class Scalar, class Body>
inline void for_each_exp_chunk(Scalar* row, Index ke, Scalar max, Body&& body) noexcept {
  const Scalar tiny = std::numeric_limits<Scalar>::min();
  constexpr Index C = Chunk<Scalar>::SizeAtCompileTime;
  Chunk<Scalar> c;
  for (Index j = 0; j < ke; j += C) {
    const Index len = std::min(C, ke - j);
    load_chunk(c, row + j, len, -std::numeric_limits<Scalar>::infinity());
    c = (c - max).exp();
    for (Index k = 0; k < C; ++k) c[k] = c[k] < tiny ? Scalar(0) : c[k];
    body(row + j, c, len);
  }
}

// Softmax numerators, in place. On entry z row i holds the scores of query i
// on [0, kend_i); if `shifted` is not null the bias shifted[bucket + 1] is
// added first. On exit the row holds exp(score - rowmax) (flushed, see above)
// on [0, kend_i) and 0 on [kend_i, n); inv_sum[i] = 1 / (row sum), or 0 for a
// row with no visible key (then all zeros). Normalising is left to the caller,
// which can apply inv_sum to the (rows, dv) context instead of the (rows, n)
// block, or while copying the probabilities out. With `row_max` (rows; may
// be null) each row's maximum is also written (-inf for a row with no
// visible key): with inv_sum, the row's log-sum-exp in two factors, from
// which `probabilities` recomputes the row without its two reductions.
template <class Scalar>
inline void softmax_numerators(const RowBlock<Scalar>& block, Scalar* z, Index ld, Scalar* inv_sum,
                               Scalar* row_max) noexcept {
  SYNATTN_ASSERT(0 <= block.kend && block.kend <= block.n);
  for (Index i = 0; i < block.rows; ++i) {
    Scalar* row = z + i * ld;
    const Index ke = block.visible(i);
    std::fill(row + ke, row + block.n, Scalar(0));
    inv_sum[i] = Scalar(0);
    if (row_max != nullptr) row_max[i] = -std::numeric_limits<Scalar>::infinity();
    if (ke == 0) continue;
    block.add_bias(row, i, ke);
    const Scalar max = ConstArrayMap<Scalar>(row, ke).maxCoeff();  // exact in any order
    if (row_max != nullptr) row_max[i] = max;
    if (max == -std::numeric_limits<Scalar>::infinity()) {
      no_visible_key_row(row, ke, inv_sum + i);
      continue;
    }
    // The chunk-wide accumulator keeps SIMD partial sums where a `sum +=`
    // would be one serial chain.
    Chunk<Scalar> acc = Chunk<Scalar>::Zero();
    for_each_exp_chunk<Scalar>(row, ke, max, [&](Scalar* out, const Chunk<Scalar>& c, Index len) {
      acc += c;
      ArrayMap<Scalar>(out, len) = c.head(len);
    });
    inv_sum[i] = Scalar(1) / acc.sum();  // the sum is >= 1: the maximum contributes exp(0)
  }
}

// The probabilities softmax_numerators and a normalisation by inv_sum give,
// bit for bit, recomputed in one pass from the scores and the row_max and
// inv_sum that softmax_numerators wrote for the same rows: z row i holds the
// scores on [0, kend_i) on entry (the bias not yet added) and exp(score +
// bias - row_max[i]) * inv_sum[i] (flushed as above) on exit, and 0 *
// inv_sum[i] on [kend_i, n) (0, or NaN on a NaN row: what scaling the
// numerators' zeros gives). A row whose maximum was -inf holds inv_sum[i]
// squared: the fill value of no_visible_key_row (0, or NaN), scaled by itself.
template <class Scalar>
inline void probabilities(const RowBlock<Scalar>& block, Scalar* z, Index ld, const Scalar* row_max,
                          const Scalar* inv_sum) noexcept {
  SYNATTN_ASSERT(0 <= block.kend && block.kend <= block.n);
  for (Index i = 0; i < block.rows; ++i) {
    Scalar* row = z + i * ld;
    const Index ke = block.visible(i);
    const Scalar inv = inv_sum[i], max = row_max[i];
    std::fill(row + ke, row + block.n, Scalar(0) * inv);
    if (ke == 0) continue;
    if (max == -std::numeric_limits<Scalar>::infinity()) {
      std::fill(row, row + ke, inv * inv);
      continue;
    }
    block.add_bias(row, i, ke);
    for_each_exp_chunk<Scalar>(row, ke, max, [&](Scalar* out, const Chunk<Scalar>& c, Index len) {
      ArrayMap<Scalar>(out, len) = c.head(len) * inv;
    });
  }
}

// Softmax backward and the bucket histogram of its result, in place: on entry
// dz row i holds dL/dp, on exit dL/dscore = p * (dp - <p, dp>) on [0, kend_i)
// and 0 on [kend_i, n). Masked keys have p = 0, hence dscore = 0. If `hist` is
// not null, each dscore is also added to its bucket's slot (bucket + 1) in one
// of the kHistogramCopies copies (hist[c * stride + slot]); slot 0 collects the
// masked keys' zeros and is ignored. If `dots` is not null, dots[i] is the
// row's <p, dp>, known to the caller more cheaply: for P V attention it is
// <dctx_i, ctx_i>, dv products instead of n (the kernel then reads each row
// once instead of twice).
template <class Scalar>
inline void softmax_backward(const RowBlock<Scalar>& block, const Scalar* p, Index ldp, Scalar* dz, Index ld,
                             Scalar* hist, Index stride, const Scalar* dots) noexcept {
  SYNATTN_ASSERT(0 <= block.kend && block.kend <= block.n);
  for (Index i = 0; i < block.rows; ++i) {
    const Scalar* prow = p + i * ldp;
    Scalar* row = dz + i * ld;
    const Index ke = block.visible(i);
    std::fill(row + ke, row + block.n, Scalar(0));
    if (ke == 0) continue;
    Scalar dot;
    if (dots != nullptr) {
      dot = dots[i];
    } else {  // <p, dp> chunk by chunk, in the same order wherever the rows lie (see Chunk)
      constexpr Index C = Chunk<Scalar>::SizeAtCompileTime;
      Chunk<Scalar> acc = Chunk<Scalar>::Zero(), a, g;
      for (Index j = 0; j < ke; j += C) {
        const Index len = std::min(C, ke - j);
        load_chunk(a, prow + j, len, Scalar(0));
        load_chunk(g, row + j, len, Scalar(0));
        acc += a * g;
      }
      dot = acc.sum();
    }
    // One rounding per value, the same in a packet or alone.
    ArrayMap<Scalar>(row, ke) = ConstArrayMap<Scalar>(prow, ke) * (ConstArrayMap<Scalar>(row, ke) - dot);
    if (hist != nullptr) scatter_histogram_row(row, block.buckets + i * block.ldb, ke, hist, stride);
  }
}

// dst row i = src row i * scale[i] (rows x cols, leading dimensions ldd and
// lds): normalising softmax numerators while copying them out. `stream` is a
// hint that dst need not stay in cache (versions with streaming stores use it).
template <class Scalar>
inline void scale_rows(Scalar* dst, Index ldd, const Scalar* src, Index lds, Index rows, Index cols,
                       const Scalar* scale, bool stream) noexcept {
  (void)stream;
  for (Index i = 0; i < rows; ++i) {
    const Scalar s = scale[i];
    const Scalar* in = src + i * lds;
    Scalar* out = dst + i * ldd;
    for (Index j = 0; j < cols; ++j) out[j] = in[j] * s;
  }
}

}  // namespace portable
}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_ATTENTION_ROWS_PORTABLE_HPP
