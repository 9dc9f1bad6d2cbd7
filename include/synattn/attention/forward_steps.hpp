// synattn — the steps of the attention layer's forward pass on one (sequence,
// head) block, as functions of explicit arguments (docs/math.md §4):
//
//   S = Q K^T / sqrt(dk)                    attention_scores
//   e = exp(S + s T[bucket] - max), masked  softmax_numerators_block (kernel)
//   [talking heads] X_b <- M X_b            mix_heads
//   [dropout] P' = P * mask / (1 - p)       dropout_block (kernel)
//   ctx = P V                               context_forward
//
// Each works on query rows [r0, r0 + m) of block (b, a); only the valid
// (real-query) rows and the visible keys are computed (a packed sequence's
// row block: the keys of its range, BlockGeometry::key0), padding rows are
// written as zeros. No step allocates. The layer (syntax_attention_impl.hpp)
// calls them inside its parallel loops.
#ifndef SYNATTN_ATTENTION_FORWARD_STEPS_HPP
#define SYNATTN_ATTENTION_FORWARD_STEPS_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>

#include "../bias/bias_table.hpp"
#include "../kernels/attention_rows.hpp"
#include "../kernels/dropout_rows.hpp"
#include "../kernels/product.hpp"
#include "../matrix.hpp"
#include "../util/random.hpp"
#include "blocks.hpp"
#include "key_windows.hpp"

namespace synattn {
namespace detail {

// The dropout of one pass: element (b, a, i, j) of the probabilities' layout
// is kept iff stream.keep(((b * h + a) * n_q + i) * n_kv + j, threshold), and
// kept ones are multiplied by keep_scale = 1 / (1 - p).
template <class Scalar>
struct DropoutMask {
  const RandomStream* stream = nullptr;
  std::uint32_t threshold = 0;
  Scalar keep_scale = 1;
};

// S (m, ld) = Q[r0:r0+m] (v, dk) K^T (dk, lk) / sqrt(dk) on the valid
// (v, lk) corner (lk = g.keys(b) keys from g.key_row(b)); keys past the
// length are left to the softmax, which zeroes them, and padding rows to
// softmax_numerators_block.
template <class Scalar>
void attention_scores(Eigen::Map<RowMajorMatrix<Scalar>> S, const RowMajorMatrix<Scalar>& qsrc,
                      const RowMajorMatrix<Scalar>& kvsrc, const BlockGeometry& g, Index b, int a, Index r0,
                      Scalar inv_sqrt_dk) {
  const Index m = S.rows(), v = g.valid_rows(b, r0, m), lk = g.keys(b);
  // Blocks are formed only when non-empty: a block of an empty matrix at a
  // column offset is arithmetic on a null pointer (UBSan, found by fuzz_attention).
  if (v <= 0 || lk <= 0) return;
  const auto Q = qsrc.block(b * g.n_q + r0, a * g.dk, v, g.dk);            // (v, dk)
  const auto K = kvsrc.block(g.key_row(b), g.k_off + a * g.dk, lk, g.dk);  // (lk, dk)
  kernels::product<Scalar>(S.topLeftCorner(v, lk), Q, K, kernels::Transpose::rhs, kernels::Accumulate::overwrite,
                           inv_sqrt_dk);  // (v, lk)
}

// Tree fusion: S += s * w_v * T_v[a, bucket_v] for views v = 1.. on the
// valid rows of query rows [r0, r0 + m) of block (b, a) and keys < lk (view
// v's block starts at row v * batch * n_q of `buckets`). View 0 is added by
// the softmax kernel's gather, whose -inf also masks the pairs all views
// share: masked pairs add 0 here. One int8 gather pass per further view: no
// n x n float bias is formed.
template <class Scalar>
void add_view_biases(Eigen::Map<RowMajorMatrix<Scalar>> S, const std::int8_t* buckets, Index ldb,
                     const BiasTerms<Scalar>& table, const BlockGeometry& g, Index b, int a, Index r0) {
  const Index v = g.valid_rows(b, r0, S.rows()), lk = g.lk(b);
  Scalar shifted[kMaxTableBuckets + 1];
  for (int view = 1; view < table.views(); ++view) {
    table.shifted_row(a, shifted, view);
    shifted[0] = 0;
    for (Index i = 0; i < v; ++i) {
      const std::int8_t* row = buckets + ((view * g.batch + b) * g.n_q + r0 + i) * ldb;
      Scalar* s = S.data() + i * S.cols();
      for (Index j = 0; j < lk; ++j) s[j] += shifted[row[j] + 1];
    }
  }
}

// The bias of one row block as the softmax kernels take it: view 1..'s
// biases added to S (tree fusion), and view 0's slot table `shifted`
// (shifted[0] = -inf, bucket -1, the mask; shifted[k + 1] = s * T[a, k], with
// fusion view 0's s * w_0 * T_0[a, k]), its buckets and their leading
// dimension. All null / 0 without a syntax bias.
template <class Scalar>
struct RowBlockBias {
  Scalar shifted[kMaxTableBuckets + 1];
  int slots = 0;  // 0: no syntax bias
  const std::int8_t* rows = nullptr;
  Index ld = 0;

  // Adds view 1..'s biases to S (with tree fusion) and takes view 0's.
  RowBlockBias(Eigen::Map<RowMajorMatrix<Scalar>> S, const std::int8_t* buckets, Index ldb,
               const BiasTerms<Scalar>* table, const BlockGeometry& g, Index b, int a, Index r0) {
    if (!table) return;
    if (table->views() > 1) add_view_biases<Scalar>(S, buckets, ldb, *table, g, b, a, r0);
    table->shifted_row(a, shifted);
    slots = table->num_buckets() + 1;
    rows = g.bucket_rows(buckets, ldb, b, r0);
    ld = g.bucket_ld(ldb);
  }
  // The kernels' block of the v valid rows: the table null without a syntax bias.
  kernels::RowBlock<Scalar> block(Index v, const BlockGeometry& g, Index b, Index r0) const noexcept {
    return {v, g.ld(), g.keys(b), g.causal_row0(r0), rows, ld, slots > 0 ? shifted : nullptr, slots};
  }
};

// Bias, mask and softmax numerators of the valid rows of S (m, g.ld()), in
// place: e_ij = exp(S_ij + s T[a, bucket_ij] - max_i), 0 where masked; inv[i]
// (m) = 1 / sum_j e_ij, 0 on padding rows and rows with no visible key.
// `buckets` is the whole (B * n_q, n_kv) block (with fusion (V * B * n_q,
// n_kv)) with leading dimension ldb and `table` the layer's table, both null
// without a syntax bias. With `row_max` the valid rows' maxima are kept there
// (for recompute_probabilities_block).
template <class Scalar>
void softmax_numerators_block(Eigen::Map<RowMajorMatrix<Scalar>> S, const std::int8_t* buckets, Index ldb,
                              const BiasTerms<Scalar>* table, const BlockGeometry& g, Index b, int a, Index r0,
                              Scalar* inv, Scalar* row_max = nullptr) {
  const Index m = S.rows(), v = g.valid_rows(b, r0, m);
  const RowBlockBias<Scalar> bias(S, buckets, ldb, table, g, b, a, r0);
  kernels::softmax_numerators<Scalar>(bias.block(v, g, b, r0), S.data(), g.ld(), inv, row_max);
  std::fill(inv + v, inv + m, Scalar(0));
  S.bottomRows(m - v).setZero();
}

// P of a row block, from its scores S (m, g.ld()) and the row_max and inv
// that softmax_numerators_block kept for the same rows: in place, bit for
// bit softmax_numerators_block followed by a normalisation by inv, in one
// pass over S (the fused path's backward, attention/path.hpp).
template <class Scalar>
void recompute_probabilities_block(Eigen::Map<RowMajorMatrix<Scalar>> S, const std::int8_t* buckets, Index ldb,
                                   const BiasTerms<Scalar>* table, const BlockGeometry& g, Index b, int a, Index r0,
                                   const Scalar* row_max, const Scalar* inv) {
  const Index m = S.rows(), v = g.valid_rows(b, r0, m);
  const RowBlockBias<Scalar> bias(S, buckets, ldb, table, g, b, a, r0);
  kernels::probabilities<Scalar>(bias.block(v, g, b, r0), S.data(), g.ld(), row_max, inv);
  S.bottomRows(m - v).setZero();
}

// ctx rows [r0, r0 + m) of head a (m, dv) = P (v, lk) V (lk, dv) on the
// valid corner, 0 on padding rows. With `inv`, P holds numerators and each
// row of the (v, dv) result is scaled afterwards (m x dv multiplies instead of
// m x n_kv).
template <class Scalar>
void context_forward(RowMajorMatrix<Scalar>& ctx, Eigen::Map<const RowMajorMatrix<Scalar>> P,
                     const RowMajorMatrix<Scalar>& kvsrc, const BlockGeometry& g, Index b, int a, Index r0,
                     const Scalar* inv) {
  const Index m = P.rows(), v = g.valid_rows(b, r0, m), lk = g.keys(b), dv = g.dv;
  if (m == 0) return;                                 // (no rows: ctx may be empty)
  auto C = ctx.block(b * g.n_q + r0, a * dv, m, dv);  // (m, dv)
  if (v > 0 && lk > 0) {
    const auto V = kvsrc.block(g.key_row(b), g.v_off + a * dv, lk, dv);  // (lk, dv)
    kernels::product<Scalar>(C.topRows(v), P.topLeftCorner(v, lk), V);  // (v, dv)
    if (inv)
      for (Index i = 0; i < v; ++i) C.row(i) *= inv[i];
  } else {
    C.topRows(v).setZero();
  }
  C.bottomRows(m - v).setZero();
}

// Dropout of query rows [r0, r0 + m) of block `task` = (b, a): dst = src *
// mask / (1 - p) on the valid (v, g.keys(b)) corner, the only part
// context_forward reads (both (m, g.ld()); dst may be src). Element
// (i, j) of head a of sequence b is drawn from the sequence's stream
// (stream.sequence(b): global sequence first_sequence() + b) at counter
// (a * l_q + i) * l_kv + j with the sequence's own lengths, never the padded
// n_q, n_kv: the mask does not depend on how the global batch was split or
// padded (data-parallel ranks draw the one-process masks).
// The counter of element (r0, g.key0) of head a of sequence b; rows are lk apart.
inline std::uint64_t dropout_counter(const BlockGeometry& g, Index b, Index a, Index r0) noexcept {
  return static_cast<std::uint64_t>((a * g.lq(b) + r0) * g.lk(b) + g.key0);
}

template <class Scalar>
void dropout_block(Scalar* dst, const Scalar* src, const DropoutMask<Scalar>& mask, const BlockGeometry& g,
                   Index task, Index r0, Index m) {
  const Index b = task / g.heads, a = task % g.heads;
  kernels::dropout_rows<Scalar>(dst, g.ld(), src, g.ld(), g.valid_rows(b, r0, m), g.keys(b),
                                mask.stream->sequence(static_cast<std::uint64_t>(b)), dropout_counter(g, b, a, r0),
                                static_cast<std::uint64_t>(g.lk(b)), mask.threshold, mask.keep_scale);
}

// The geometry of packed row block k: g with k's key range, and k's bucket
// tile assembled into `tile` (KeyWindows::max_tile entries).
inline BlockGeometry window_geometry(const BlockGeometry& g, const KeyWindow& k, const PackedBuckets& packed,
                                     std::int8_t* tile) {
  BlockGeometry gk = g;
  gk.key0 = k.key0;
  gk.key_span = k.span;
  fill_bucket_tile(tile, packed, k);
  gk.tile = tile;
  return gk;
}

// One task of the forward pass without talking heads: query rows
// [r0, r0 + m) of (sequence, head) block `task` (t = task * row_blocks +
// row block), worked in the calling thread's scratch block so the scores stay
// in cache from QK^T to P V: scores, bias + mask + softmax numerators,
// ctx = P V, and for a training pass P copied out normalised.
//
// A packed input (`windows`) has its own row blocks instead: t = block *
// heads + head, each block's keys limited to its range and its buckets
// assembled into the thread's tile (attention/key_windows.hpp). It keeps no P.
template <class Scalar>
struct RowBlockForwardTask {
  using Matrix = RowMajorMatrix<Scalar>;
  const BlockGeometry& g;
  Index rows;                   // query rows per block (score_block_rows, or the windows' most)
  Index row_blocks;             // blocks per (sequence, head); dense input only
  const Matrix& qsrc;           // Q: qkv (self and cross)
  const Matrix& kvsrc;          // K and V: qkv (self) or kv (cross)
  const std::int8_t* buckets;   // (B * n_q, n_kv), leading dimension ldb; null without a syntax bias or packed
  Index ldb;
  const BiasTerms<Scalar>* table;  // null without a syntax bias
  Scalar inv_sqrt_dk;
  const DropoutMask<Scalar>* mask;  // null: no dropout
  Matrix* probs;                    // (B * h * n_q, n_kv); null: an inference pass (or the fused path) keeps no P
  bool stream_probs;            // P written with streaming stores (it outgrows the caches)
  Scalar* row_max;              // the fused path's training pass: each query row's maximum and 1 / row
  Scalar* row_inv;              // sum, (B * h * n_q) each, kept for backward(); null otherwise
  Scalar* scratch;              // per thread: (rows, n_kv), packed: KeyWindows::max_tile
  Scalar* inv_sum;              // per thread: (rows)
  Matrix& ctx;                  // (B * n_q, h * dv), written
  const KeyWindows* windows = nullptr;  // packed input: its row blocks
  const PackedBuckets* packed = nullptr;
  std::int8_t* tiles = nullptr;  // packed input: per thread one tile (KeyWindows::max_tile)

  void operator()(Index t, int thread) const {
    if (windows) {
      const KeyWindow& k = windows->blocks[static_cast<std::size_t>(t / g.heads)];
      const BlockGeometry gk = window_geometry(g, k, *packed, tiles + Index(thread) * windows->max_tile);
      block(gk, k.b * g.heads + t % g.heads, k.r0, k.m, thread);
      return;
    }
    const Index r0 = (t % row_blocks) * rows;
    block(g, t / row_blocks, r0, std::min(rows, g.n_q - r0), thread);
  }

  void block(const BlockGeometry& gb, Index task, Index r0, Index m, int thread) const {
    using BlockMap = Eigen::Map<Matrix>;
    using ConstBlockMap = Eigen::Map<const Matrix>;
    const Index ld = gb.ld(), b = task / gb.heads;
    const int a = static_cast<int>(task % gb.heads);
    const Index per_thread = windows ? windows->max_tile : rows * ld;
    BlockMap S(scratch + Index(thread) * per_thread, m, ld);  // (m, ld)
    Scalar* inv = inv_sum + Index(thread) * rows;             // (m)
    Scalar* max = nullptr;
    if (row_max) {  // kept for the backward pass: these rows' own slots
      max = row_max + task * gb.n_q + r0;
      inv = row_inv + task * gb.n_q + r0;
    }
    attention_scores<Scalar>(S, qsrc, kvsrc, gb, b, a, r0, inv_sqrt_dk);
    softmax_numerators_block<Scalar>(S, buckets, ldb, table, gb, b, a, r0, inv, max);
    // P rows [r0, r0 + m) of block `task`: (m, n_kv).
    Scalar* P = probs ? block_of(*probs, task, gb.n_q, ld).middleRows(r0, m).data() : nullptr;
    if (!mask) {
      context_forward<Scalar>(ctx, ConstBlockMap(S.data(), m, ld), kvsrc, gb, b, a, r0, inv);
      if (P) kernels::scale_rows<Scalar>(P, ld, S.data(), ld, m, ld, inv, stream_probs);
      return;
    }
    // P is kept before dropout (backward redraws the mask), so it is copied
    // out first; the mask then goes on the numerators in place and
    // ctx = (e * M / (1 - p)) V / rowsum(e) = P' V.
    if (P) kernels::scale_rows<Scalar>(P, ld, S.data(), ld, m, ld, inv, stream_probs);
    dropout_block<Scalar>(S.data(), S.data(), *mask, gb, task, r0, m);
    context_forward<Scalar>(ctx, ConstBlockMap(S.data(), m, ld), kvsrc, gb, b, a, r0, inv);
  }
};

// Talking heads: dst_b (h, n_q*n_kv) = M (h, h) src_b (h, n_q*n_kv), every
// head's block of sequence b mixed by M.
template <class Scalar>
void mix_heads(Eigen::Map<const RowMajorMatrix<Scalar>> M, const RowMajorMatrix<Scalar>& src,
               RowMajorMatrix<Scalar>& dst, const BlockGeometry& g, Index b) {
  const Index H = g.heads, len = g.block_size();
  Eigen::Map<const RowMajorMatrix<Scalar>> s(src.data() + b * H * len, H, len);  // (h, n_q*n_kv)
  Eigen::Map<RowMajorMatrix<Scalar>> d(dst.data() + b * H * len, H, len);        // (h, n_q*n_kv)
  kernels::product<Scalar>(d, M, s);
}

}  // namespace detail
}  // namespace synattn

#endif  // SYNATTN_ATTENTION_FORWARD_STEPS_HPP
