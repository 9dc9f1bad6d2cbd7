// synattn — the steps of the attention layer's backward pass on one
// (sequence, head) block, reversing forward_steps.hpp, as functions of
// explicit arguments. With dctx = dL/dctx of head a:
//
//   dP~ = dctx V^T, dV = P~^T dctx               context_backward
//     [dropout] P' = P~ * mask/(1-p) redrawn: dV = P'^T dctx, dP~ = dP' * mask/(1-p)
//   <p_i, dp_i> = <dctx_i, ctx_i>                row_dots
//   [talking heads] dM += dY X^T, dX = M^T dY    mix_backward (per sequence)
//   dS = P * (dP - <p, dp>), bucket sums of dS   softmax_backward_block (kernel)
//   dQ = dS K / sqrt(dk), dK = dS^T Q / sqrt(dk) score_backward
//   per-task partials summed in task order       fold_histogram, reduce_table_gradient,
//                                                reduce_mix_gradient
//
// Each block step works on query rows [r0, r0 + m); padding rows get zero
// gradients. No step allocates.
#ifndef SYNATTN_ATTENTION_BACKWARD_STEPS_HPP
#define SYNATTN_ATTENTION_BACKWARD_STEPS_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>

#include "../bias/bias_table.hpp"
#include "../kernels/attention_rows.hpp"
#include "../kernels/dropout_rows.hpp"
#include "../matrix.hpp"
#include "blocks.hpp"
#include "forward_steps.hpp"

namespace synattn {
namespace detail {

// dst (cols) += sum of the rows of src (rows, cols), in row order: deterministic.
template <class Src, class Scalar>
void add_row_sums(const Src& src, Scalar* dst) {
  Eigen::Map<Eigen::Matrix<Scalar, 1, Eigen::Dynamic>> acc(dst, src.cols());
  for (Index r = 0; r < src.rows(); ++r) acc += src.row(r);
}

// dP~ rows [r0, r0 + m) (m, n_kv) = dctx (v, dv) V^T (dv, lk) on the valid
// corner (0 elsewhere); dV (n_kv, dv) = or += P~[r0:r0+m]^T (lk, v) dctx (v, dv)
// (`acc`: add for a later row block of the same task).
//
// With dropout (`dropped`: an (m, n_kv) scratch block, and `mask`; else both
// null) the forward used P' = P~ * mask / (1 - p), so dV uses P' (redrawn
// into `dropped`) and dP' = dctx V^T goes back through the mask:
// dP~ = dP' * mask / (1 - p), in place.
template <class Scalar>
void context_backward(Eigen::Map<RowMajorMatrix<Scalar>> dP, Eigen::Map<const RowMajorMatrix<Scalar>> P,
                      const RowMajorMatrix<Scalar>& dctx, const RowMajorMatrix<Scalar>& kvsrc,
                      RowMajorMatrix<Scalar>& dkvsrc, const BlockGeometry& g, Index b, int a, Index r0,
                      Accumulate acc, Scalar* dropped, const DropoutMask<Scalar>* mask) {
  // nkv: the block's score columns and dV rows (a packed row block: its key range).
  const Index m = dP.rows(), nkv = g.ld(), dv = g.dv, v = g.valid_rows(b, r0, m), lk = g.keys(b);
  const bool add = acc == Accumulate::add;
  // Blocks are formed only when non-empty (a block of an empty matrix at a
  // column offset is arithmetic on a null pointer; found by fuzz_attention).
  if (nkv == 0) {
    dP.bottomRows(m - v).setZero();
    return;
  }
  auto dV = dkvsrc.block(g.key_row(b), g.v_off + a * dv, nkv, dv);  // (n_kv, dv)
  if (m == 0) {
    if (!add) dV.setZero();
    return;
  }
  if (v > 0 && lk > 0) {
    const auto dC = dctx.block(b * g.n_q + r0, a * dv, v, dv);       // (v, dv)
    const auto V = kvsrc.block(g.key_row(b), g.v_off + a * dv, lk, dv);  // (lk, dv)
    kernels::product<Scalar>(dP.topLeftCorner(v, lk), dC, V,
                             kernels::Transpose::rhs);  // (v, lk): dP', or dP~ without dropout
    if (dropped) {
      // Element (r0 + i, j) of head a of sequence b: the forward's stream and
      // counters (dropout_block in forward_steps.hpp).
      const RandomStream seq = mask->stream->sequence(static_cast<std::uint64_t>(b));
      const std::uint64_t first = dropout_counter(g, b, a, r0), stride = static_cast<std::uint64_t>(g.lk(b));
      kernels::dropout_rows<Scalar>(dropped, nkv, P.data(), nkv, v, lk, seq, first, stride, mask->threshold,
                                    mask->keep_scale);  // P' (v, lk)
      kernels::dropout_rows<Scalar>(dP.data(), nkv, dP.data(), nkv, v, lk, seq, first, stride, mask->threshold,
                                    mask->keep_scale);  // dP~ (v, lk)
    }
    // (m, n_kv): the P that multiplied V.
    const Eigen::Map<const RowMajorMatrix<Scalar>> Pd(dropped ? dropped : P.data(), m, nkv);
    if (add)
      kernels::product<Scalar>(dV.topRows(lk), Pd.topLeftCorner(v, lk), dC, kernels::Transpose::lhs,
                               kernels::Accumulate::add);  // (lk, dv)
    else
      kernels::product<Scalar>(dV.topRows(lk), Pd.topLeftCorner(v, lk), dC, kernels::Transpose::lhs);  // (lk, dv)
  } else if (!add) {
    dV.topRows(lk).setZero();
  }
  dP.topRightCorner(v, nkv - lk).setZero();
  dP.bottomRows(m - v).setZero();
  if (!add) dV.bottomRows(nkv - lk).setZero();
}

// dots[i] (v) = <p_i, dp_i> = <dctx_i, ctx_i> (dv each) for the valid rows of
// [r0, r0 + m) of head a: since ctx_i = sum_j p_ij v_j and dp_ij = <dctx_i,
// v_j>, dv products per row instead of n_kv. Dropout keeps it: with m_ij =
// M_ij / (1 - p), dp_ij = m_ij <dctx_i, v_j> and sum_j p_ij m_ij v_j = ctx_i
// (= P' V), so sum_j p_ij dp_ij = <dctx_i, ctx_i> still.
template <class Scalar>
void row_dots(Scalar* dots, const RowMajorMatrix<Scalar>& dctx, const RowMajorMatrix<Scalar>& ctx,
              const BlockGeometry& g, Index b, int a, Index r0, Index m) {
  const Index v = g.valid_rows(b, r0, m), dv = g.dv;
  for (Index i = 0; i < v; ++i)
    dots[i] = dctx.row(b * g.n_q + r0 + i).segment(a * dv, dv).dot(ctx.row(b * g.n_q + r0 + i).segment(a * dv, dv));
}

// Tree fusion: the bucket sums of dS (m, n_kv; query rows [r0, r0 + m) of
// sequence b) for views 1.. of `buckets` (view v's block at row v * B * n_q,
// leading dimension n_kv), into hist + (kHistogramCopies + v - 1) * slots.
// Masked pairs have dS = 0 (and bucket -1, slot 0), so only the valid rows
// and keys are read.
template <class Scalar>
void add_view_histograms(Eigen::Map<RowMajorMatrix<Scalar>> dS, const std::int8_t* buckets, Scalar* hist, int slots,
                         int views, const BlockGeometry& g, Index b, Index r0) {
  const Index v = g.valid_rows(b, r0, dS.rows()), lk = g.lk(b), nkv = g.n_kv;
  for (int view = 1; view < views; ++view) {
    Scalar* h = hist + (kernels::kHistogramCopies + view - 1) * slots;
    for (Index i = 0; i < v; ++i) {
      const std::int8_t* row = buckets + ((view * g.batch + b) * g.n_q + r0 + i) * nkv;
      const Scalar* d = dS.data() + i * nkv;
      for (Index j = 0; j < lk; ++j) h[row[j] + 1] += d[j];
    }
  }
}

// dS (m, n_kv) = P * (dP - <p_i, dp_i>) for query rows [r0, r0 + m) of
// sequence b (of any head), in place of dP (the kernel computes <p_i, dp_i> itself unless
// `dots` (m) gives it); padding rows become 0. With `hist` (kHistogramCopies x
// slots, slot 0 the masked pairs') the bucket sums of dS are added to it.
// `P` is those rows' probabilities (m, n_kv), `buckets` the cache's
// (B * n_q, n_kv) block (null without a syntax bias).
//
// Tree fusion (`views` > 1, `buckets` (views * B * n_q, n_kv)): the kernel
// takes view 0's bucket sums; view v's follow at hist + (kHistogramCopies +
// v - 1) * slots, one copy each (add_view_histograms).
template <class Scalar>
void softmax_backward_block(Eigen::Map<RowMajorMatrix<Scalar>> dS, const Scalar* P, const std::int8_t* buckets,
                            Scalar* hist, int slots, int views, const BlockGeometry& g, Index b, Index r0,
                            const Scalar* dots) {
  const Index m = dS.rows(), ld = g.ld(), v = g.valid_rows(b, r0, m);
  const kernels::RowBlock<Scalar> block{
      v, ld, g.keys(b), g.causal_row0(r0), g.bucket_rows(buckets, g.n_kv, b, r0), g.bucket_ld(g.n_kv), nullptr, slots};
  kernels::softmax_backward<Scalar>(block, P, ld, dS.data(), ld, hist, slots, dots);
  dS.bottomRows(m - v).setZero();
  if (hist && views > 1) add_view_histograms<Scalar>(dS, buckets, hist, slots, views, g, b, r0);
}

// dQ rows [r0, r0 + m) (m, dk) = dR (v, lk) K (lk, dk) / sqrt(dk); dK (n_kv, dk)
// = or += dR^T (lk, v) Q[r0:r0+m] (v, dk) / sqrt(dk) (`acc`: add for a later
// row block of the same task). 0 on padding rows and keys.
template <class Scalar>
void score_backward(Eigen::Map<const RowMajorMatrix<Scalar>> dR, const RowMajorMatrix<Scalar>& qsrc,
                    const RowMajorMatrix<Scalar>& kvsrc, RowMajorMatrix<Scalar>& dqsrc, RowMajorMatrix<Scalar>& dkvsrc,
                    const BlockGeometry& g, Index b, int a, Index r0, Scalar inv_sqrt_dk, Accumulate acc) {
  // nkv: the block's score columns and dK rows (a packed row block: its key range).
  const Index m = dR.rows(), nkv = g.ld(), dk = g.dk, v = g.valid_rows(b, r0, m), lk = g.keys(b);
  const bool add = acc == Accumulate::add;
  // Blocks are formed only when non-empty (see context_backward).
  if (m == 0) {
    if (!add && nkv > 0) dkvsrc.block(g.key_row(b), g.k_off + a * dk, nkv, dk).setZero();
    return;
  }
  auto dQ = dqsrc.block(b * g.n_q + r0, a * dk, m, dk);            // (m, dk)
  if (nkv == 0) {
    dQ.setZero();
    return;
  }
  auto dK = dkvsrc.block(g.key_row(b), g.k_off + a * dk, nkv, dk);  // (n_kv, dk)
  if (v > 0 && lk > 0) {
    const auto Q = qsrc.block(b * g.n_q + r0, a * dk, v, dk);      // (v, dk)
    const auto K = kvsrc.block(g.key_row(b), g.k_off + a * dk, lk, dk);  // (lk, dk)
    kernels::product<Scalar>(dQ.topRows(v), dR.topLeftCorner(v, lk), K, kernels::Transpose::none,
                             kernels::Accumulate::overwrite, inv_sqrt_dk);  // (v, dk)
    if (add)
      kernels::product<Scalar>(dK.topRows(lk), dR.topLeftCorner(v, lk), Q, kernels::Transpose::lhs,
                               kernels::Accumulate::add, inv_sqrt_dk);  // (lk, dk)
    else
      kernels::product<Scalar>(dK.topRows(lk), dR.topLeftCorner(v, lk), Q, kernels::Transpose::lhs,
                               kernels::Accumulate::overwrite, inv_sqrt_dk);  // (lk, dk)
  } else {
    dQ.topRows(v).setZero();
    if (!add) dK.topRows(lk).setZero();
  }
  dQ.bottomRows(m - v).setZero();
  if (!add) dK.bottomRows(nkv - lk).setZero();
}

// Talking-heads adjoint for sequence b, for Y = M X: the partial dM (h, h) =
// dY_b (h, n_q*n_kv) X_b^T (n_q*n_kv, h), written to `dM` (summed over
// sequences later, in order), and dX_b (h, n_q*n_kv) = M^T (h, h) dY_b.
template <class Scalar>
void mix_backward(Eigen::Map<const RowMajorMatrix<Scalar>> M, const RowMajorMatrix<Scalar>& dy,
                  const RowMajorMatrix<Scalar>& xin, RowMajorMatrix<Scalar>& dx, Scalar* dM_partial,
                  const BlockGeometry& g, Index b) {
  const Index H = g.heads, len = g.block_size();
  Eigen::Map<const RowMajorMatrix<Scalar>> dY(dy.data() + b * H * len, H, len);  // (h, n_q*n_kv)
  Eigen::Map<const RowMajorMatrix<Scalar>> X(xin.data() + b * H * len, H, len);  // (h, n_q*n_kv)
  Eigen::Map<RowMajorMatrix<Scalar>> dX(dx.data() + b * H * len, H, len);        // (h, n_q*n_kv)
  Eigen::Map<RowMajorMatrix<Scalar>> dM(dM_partial, H, H);                       // (h, h)
  kernels::product<Scalar>(dM, dY, X, kernels::Transpose::rhs);
  kernels::product<Scalar>(dX, M, dY, kernels::Transpose::lhs);
}

// One task's histogram (kHistogramCopies interleaved copies of `slots`
// values, see kernels::softmax_backward): copy 0 (slots) += copies 1.. in a
// fixed order.
template <class Scalar>
void fold_histogram(Scalar* hist, Index slots) {
  for (int k = 1; k < kernels::kHistogramCopies; ++k)
    for (Index s = 0; s < slots; ++s) hist[s] += hist[k * slots + s];
}

// One task of the backward pass without talking heads: (sequence, head)
// block t, walking its valid query rows in blocks of `rows` in the calling
// thread's scratch block (dP, then dS): dV and dP from dctx, dS through the
// softmax (with the bucket histogram), then dQ and the block's share of dK
// (the first row block overwrites dK and dV, later ones add).
//
// Without `probs` (the fused path) each row block's P is recomputed first,
// into the thread's second scratch block, on the forward's row blocks: the
// forward's scores, then the bias, exp and normalisation in one pass with the
// row maxima and 1 / row sums the forward kept (recompute_probabilities_block):
// bit for bit the P the materialized path keeps.
template <class Scalar>
struct RowBlockBackwardTask {
  using Matrix = RowMajorMatrix<Scalar>;
  const BlockGeometry& g;
  Index rows;                       // query rows per block (score_block_rows)
  const Matrix* probs;              // P (B * h * n_q, n_kv); null: the fused path recomputes it
  const Matrix& ctx;                // (B * n_q, h * dv)
  const Matrix& dctx;               // (B * n_q, h * dv)
  const Matrix& qsrc;               // Q: qkv
  const Matrix& kvsrc;              // K and V: qkv (self) or kv (cross)
  Matrix& dqsrc;                    // dQ: dqkv, written
  Matrix& dkvsrc;                   // dK and dV: dqkv (self) or dkv (cross), written
  const std::int8_t* buckets;       // (views * B * n_q, n_kv); null without a syntax bias
  const BiasTerms<Scalar>* table;   // the bias as the forward read it (fused path); null without a syntax bias
  Matrix* hist;                     // per task: kHistogramCopies x slots; null: no table gradient
  Index slots;                      // histogram slots per copy
  int views;                        // tree views of the bias (1 without fusion)
  const DropoutMask<Scalar>* mask;  // null: no dropout
  Scalar inv_sqrt_dk;
  Scalar* scratch;                  // per thread: (rows, n_kv); fused path: (2 * rows, n_kv), dS then P
                                    // (packed: one or two of KeyWindows::max_tile)
  Scalar* dropped;                  // per thread: (rows, n_kv), with dropout
  Scalar* dots;                     // per thread: (rows)
  const Scalar* row_max;            // fused path: the forward's row maxima and 1 / row sums (B * h * n_q)
  const Scalar* row_inv;

  const KeyWindows* windows = nullptr;  // packed input: its row blocks (then probs is null)
  const PackedBuckets* packed = nullptr;
  std::int8_t* tiles = nullptr;  // packed input: per thread one tile (KeyWindows::max_tile)

  void operator()(Index t, int thread) const {
    const Index nq = g.n_q, b = t / g.heads, lq = g.lq(b);
    const int a = static_cast<int>(t % g.heads);
    Scalar* task_hist = hist ? hist->data() + t * hist->cols() : nullptr;  // kHistogramCopies x slots
    if (hist) std::fill(task_hist, task_hist + hist->cols(), Scalar(0));
    if (windows) {
      // Row blocks' key ranges overlap, so every block adds its share of this
      // head's dK and dV, zeroed first.
      if (g.n_kv > 0) {
        dkvsrc.block(b * g.n_kv, g.k_off + a * g.dk, g.n_kv, g.dk).setZero();
        dkvsrc.block(b * g.n_kv, g.v_off + a * g.dv, g.n_kv, g.dv).setZero();
      }
      const std::size_t first = static_cast<std::size_t>(windows->first[static_cast<std::size_t>(b)]);
      const std::size_t last = static_cast<std::size_t>(windows->first[static_cast<std::size_t>(b) + 1]);
      for (std::size_t i = first; i < last; ++i) {
        const KeyWindow& k = windows->blocks[i];
        const BlockGeometry gk = window_geometry(g, k, *packed, tiles + Index(thread) * windows->max_tile);
        block(gk, b, a, k.r0, k.m, Accumulate::add, task_hist, thread);
      }
    } else {
      for (Index r0 = 0; r0 < std::max<Index>(lq, 1); r0 += rows)
        block(g, b, a, r0, std::min(rows, nq - r0), r0 > 0 ? Accumulate::add : Accumulate::overwrite, task_hist,
              thread);
      // Query rows past the last valid block are padding: dQ = 0 there.
      const Index done = std::min(nq, (std::max<Index>(lq, 1) + rows - 1) / rows * rows);
      if (nq > done) dqsrc.block(b * nq + done, a * g.dk, nq - done, g.dk).setZero();
    }
    if (hist) fold_histogram(task_hist, slots);
  }

  // Query rows [r0, r0 + m) of head a of sequence b, on gb's keys.
  void block(const BlockGeometry& gb, Index b, int a, Index r0, Index m, Accumulate acc, Scalar* task_hist,
             int thread) const {
    using BlockMap = Eigen::Map<Matrix>;
    using ConstBlockMap = Eigen::Map<const Matrix>;
    const Index ld = gb.ld(), t = b * gb.heads + a;
    // One (rows, ld) scratch block; a thread has one (two on the fused path).
    const Index block_size = windows ? windows->max_tile : rows * ld;
    Scalar* own = scratch + Index(thread) * (probs ? 1 : 2) * block_size;
    BlockMap dS(own, m, ld);                       // (m, ld): dP, then dS
    Scalar* d = dots + Index(thread) * rows;       // (m)
    const Scalar* p = probs ? probs->data() + (t * gb.n_q + r0) * ld : own + block_size;
    if (!probs) {
      BlockMap S(own + block_size, m, ld);  // (m, ld): the forward's scores, then P
      const Index at = t * gb.n_q + r0;  // these rows' slots
      attention_scores<Scalar>(S, qsrc, kvsrc, gb, b, a, r0, inv_sqrt_dk);
      recompute_probabilities_block<Scalar>(S, buckets, gb.n_kv, table, gb, b, a, r0, row_max + at, row_inv + at);
    }
    const ConstBlockMap P(p, m, ld);  // (m, ld)
    context_backward<Scalar>(dS, P, dctx, kvsrc, dkvsrc, gb, b, a, r0, acc,
                             mask ? dropped + Index(thread) * block_size : nullptr, mask);
    row_dots<Scalar>(d, dctx, ctx, gb, b, a, r0, m);
    softmax_backward_block<Scalar>(dS, p, buckets, task_hist, static_cast<int>(slots), views, gb, b, r0, d);
    score_backward<Scalar>(ConstBlockMap(dS.data(), m, ld), qsrc, kvsrc, dqsrc, dkvsrc, gb, b, a, r0, inv_sqrt_dk, acc);
  }
};

// Table and scale gradients from the per-task histograms `hist` (B * h rows,
// copy 0 folded): for each table row r, acc (slots) = sum over tasks (b, a)
// whose head reads row r, in task order, then dT[r] += s acc[1:], ds += <T[r],
// acc[1:]> (BiasTerms::apply_histogram).
//
// With fusion each head's views are summed over its sequences (in order)
// and applied per head, head by head (BiasTerms::apply_view_histograms):
// the view weights make a head's share of a shared table its own.
template <class Scalar>
void reduce_table_gradient(const BiasTerms<Scalar>& table, const RowMajorMatrix<Scalar>& hist,
                           const BlockGeometry& g, Index slots) {
  if (table.views() > 1) {
    Scalar acc[kMaxTreeViews * (kMaxTableBuckets + 1)];
    for (int a = 0; a < g.heads; ++a) {
      std::fill(acc, acc + table.views() * slots, Scalar(0));
      for (Index b = 0; b < g.batch; ++b) {
        const Scalar* h = hist.data() + (b * g.heads + a) * hist.cols();
        for (Index s = 0; s < slots; ++s) acc[s] += h[s];  // view 0: copy 0, folded
        for (int v = 1; v < table.views(); ++v) {
          const Scalar* hv = h + (kernels::kHistogramCopies + v - 1) * slots;
          for (Index s = 0; s < slots; ++s) acc[v * slots + s] += hv[s];
        }
      }
      table.apply_view_histograms(a, acc, slots);
    }
    return;
  }
  Scalar acc[kMaxTableBuckets + 1];
  for (int r = 0; r < table.rows(); ++r) {
    std::fill(acc, acc + slots, Scalar(0));
    for (Index b = 0; b < g.batch; ++b)
      for (int a = 0; a < g.heads; ++a)
        if (table.row_of(a) == r) {
          const Scalar* h = hist.data() + (b * g.heads + a) * hist.cols();
          for (Index s = 0; s < slots; ++s) acc[s] += h[s];
        }
    table.apply_histogram(r, acc);  // head r reads row r (per head) or row 0 (shared)
  }
}

// dM (h, h) += sum over sequences b, in order, of the partials (h, h) at
// `partials` row b, offset `slot` * h * h.
template <class Scalar>
void reduce_mix_gradient(Eigen::Map<RowMajorMatrix<Scalar>> dM, const RowMajorMatrix<Scalar>& partials, int slot,
                         const BlockGeometry& g) {
  const Index H = g.heads;
  for (Index b = 0; b < g.batch; ++b)
    dM += Eigen::Map<const RowMajorMatrix<Scalar>>(partials.data() + b * partials.cols() + slot * H * H, H, H);
}

}  // namespace detail
}  // namespace synattn

#endif  // SYNATTN_ATTENTION_BACKWARD_STEPS_HPP
